"""Checks that judge an experiment's design: whether its runs measured what its title says.

The validity checks (:mod:`perfpost.analysis.validity`) ask whether a run's number is worth
quoting; these ask whether the experiment, as it ran here, could answer its question at all.
Each one that fires is a caveat in the post, with the numbers it rests on, and a result it
undermines is never the post's headline:

- **A setting that did not take effect** (a cluster's daemon fell back to another value than
  the one the config set): the cells that ran on it are labelled by what ran, and a
  comparison that rests on them is not made.
- **A "disk" faster than its kind of device**: a device that reports itself a spinning disk
  (lsblk ROTA=1) yet took writes that were forced to it, or served reads after the page cache
  was dropped, faster than any spinning disk can (:data:`SPINNING_CEILING`), or completed a
  log's syncs in less time than a spinning disk's platter takes to bring a sector under its
  head (:data:`SPINNING_SYNC_FLOOR`), or whose synced writes, timed by the env step's probe
  (:mod:`perfpost.run.diskprobe`), did: a cache below the page cache (a virtual disk's
  host, a controller) answered, and a comparison of that "disk" with anything else measures
  that cache.
- **Data that never left memory**: runs whose data went to a directory on a block device,
  unsynced (not by the writes, not by a sync counted in the metric), and were smaller and
  shorter than anything that makes the kernel write dirty pages back (its background
  threshold, the age a dirty page may reach): the page cache held it, and the run measured
  memory. (The device's own counters cannot tell: every writer on the host adds to them.)
- **Warm-up after a cluster start**: the runs measured on one start of a cluster, each cell's
  in the order they started, tested together for a trend (Mann-Kendall's S summed over the
  cells, its exact distribution the convolution of theirs): a cluster that speeds up over its
  first runs makes cells measured one after another differ by that too.
- **A run shorter than its clock resolves** (a tool's declared clock, such as a count of
  whole seconds): flagged where one tick is over :data:`CLOCK_SHARE` of the run.

A check that cannot fire at the runs it has (too few for any outcome to pass at
:data:`ALPHA`) says so, with the smallest p it could reach; it never reads as "nothing found".
"""

from perfpost.analysis.design.disk import (
    SPINNING_CEILING,
    SPINNING_SYNC_FLOOR,
    fast_disk,
    in_memory,
    writeback,
)
from perfpost.analysis.design.finding import ALPHA, Finding, Untestable, as_label, renamed
from perfpost.analysis.design.setup import (
    busy_host,
    coarse_clock,
    ran_by_axis,
    settings_not_applied,
)
from perfpost.analysis.design.warmup import summed_trend, warmup

__all__ = [
    "ALPHA",
    "SPINNING_CEILING",
    "SPINNING_SYNC_FLOOR",
    "Finding",
    "Untestable",
    "as_label",
    "busy_host",
    "coarse_clock",
    "fast_disk",
    "in_memory",
    "ran_by_axis",
    "renamed",
    "settings_not_applied",
    "summed_trend",
    "warmup",
    "writeback",
]
