"""fio's constants: what it is called, where its report goes, the metrics a post shows."""

from __future__ import annotations

NAME = "fio"
RUNTIME = None  # the host's own fio (Debian's package): nothing to fetch
HOST_KEY = None  # and no inventory key naming its command
LOG = "fio.log"
# The first plotted metric leads the summary and is what a comparison compares by default.
# Figures are named after their metric, so plotted names have no dots.
PLOT_METRICS = ("iops", "throughput", "clat_p99", "lat_mean")
# What its runs measure, for the post's sentences (a command's is its own).
SUBJECT = "the storage"
TABLE_METRICS = (
    "iops",
    "throughput",
    "lat_mean",
    "clat_p50",
    "clat_p99",
    "clat_p99.9",
    "sync_time",
)
# What a run's metrics can be broken down by (plot: {by: ...}): job.<name>.<k>.<metric> and
# group.<first job's name>.<metric> (perfpost.analysis.parts).
PARTS = ("job", "group")
# One row per run; the post's run table takes names without dots (it reads them as fields).
RUN_TABLE = ("iops", "throughput", "runtime")
# A buffered write's time with a slow `sync` after it (after: [sync]) as dd's.
SYNC_ADJUST = (("write.bytes", "write.runtime", "write.bandwidth"),)

# rw values fio 3.x knows; an optional ":<n>" suffix skips n blocks between I/Os.
RW_MODES = (
    "read",
    "write",
    "trim",
    "randread",
    "randwrite",
    "randtrim",
    "rw",
    "readwrite",
    "randrw",
    "trimwrite",
    "randtrimwrite",
)
WRITING = frozenset(
    {"write", "randwrite", "rw", "readwrite", "randrw", "trimwrite", "randtrimwrite"}
)
