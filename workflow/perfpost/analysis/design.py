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
  head (:data:`SPINNING_SYNC_FLOOR`): a cache below the page cache (a virtual disk's host,
  a controller) answered, and a comparison against that "disk" measures that cache.
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

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from perfpost import tools
from perfpost.analysis.stats import holm
from perfpost.analysis.tidy import results
from perfpost.units import format_bytes, format_seconds, format_value, metric_label

ALPHA = 0.05
# The fastest spinning disk rated: Seagate's dual-actuator Exos 2X18 (MACH.2), 554 MB/s
# sustained at the outer diameter; single-actuator disks stay under 300 MB/s.
SPINNING_CEILING = 554e6
SPINNING_CEILING_SOURCE = (
    "the fastest spinning disk rated (Seagate's dual-actuator Exos 2X18, 554 MB/s sustained)"
)
# Half a revolution at 15,000 rpm, the fastest spinning disks made: a write forced to the
# platter waits that long on average for its sector to come under the head.
SPINNING_SYNC_FLOOR = 0.002
SPINNING_SYNC_SOURCE = (
    "half a revolution of a 15,000 rpm disk, the fastest spinning disks made: on average a "
    "sector forced to the platter waits 2 ms to come under the head"
)
# A run that writes less than this share of the kernel's background writeback threshold
# stays in the page cache even where the memory the kernel may dirty is a tenth of the total.
MEMORY_SHARE_OF_BACKGROUND = 0.1
# A third of a kind's runs beyond a spinning disk's bound is no chance overshoot of a clock:
# the device answered faster than a disk can.
BEYOND_SHARE = 3
MEMORY_MIN_BYTES = 1 << 20  # a run that wrote less is too small to judge
CLOCK_SHARE = 0.05  # one tick of the clock over the run's time
EXACT_LIMIT = 40_320  # per cell with ties: every order up to 8 runs
PERMUTATIONS = 9_999
SEED = 20261127


@dataclass(frozen=True)
class Finding:
    """One design check that fired: the caveat a reader of the post gets, the facts the
    notebook gives, and what it does to the post's cells and comparisons."""

    check: str
    caveat: str
    facts: tuple[str, ...] = ()
    cells: tuple[str, ...] = ()  # the cells whose results it concerns
    # Comparisons resting on these cells are not claimed (the cells did not differ as their
    # labels say, or one side is not what its name says).
    undermines: bool = False
    ran: Mapping[str, str] = field(default_factory=dict)  # cell -> what ran, for its label
    # Why this machine cannot answer the question, for the answer's first line; the clause a
    # claim resting on these cells carries; what set-up would answer it.
    headline: str = ""
    short: str = ""
    remedy: str = ""
    # Which comparisons it undermines: "any" that rests on its cells, or "placement": only
    # those whose two sides put their data in different places (memory against a disk),
    # the question a run that never reached its disk cannot answer.
    scope: str = "any"


@dataclass(frozen=True)
class Untestable:
    """A check that could not fire at these numbers of runs, and why."""

    check: str
    why: str


# -- settings that did not take effect ------------------------------------------------------


def settings_not_applied(clusters: Sequence[Mapping[str, Any]]) -> list[Finding]:
    """Cells that ran on a cluster whose daemons used another value than the config set
    (``overridden`` in the cluster's state: the key, the value asked, the value that ran)."""
    out = []
    for c in clusters:
        for o in c.get("overridden") or []:
            cells = tuple(c.get("cells") or [])
            if not cells:
                continue
            ran = f"ran {o['ran']}, not {o['asked']}"
            where = f"{o.get('daemon', 'a daemon')} on {o['host']}" if o.get("host") else "it"
            names = ", ".join(f"`{x}`" for x in cells)
            out.append(
                Finding(
                    check="A setting that did not take effect",
                    caveat=(
                        f"{names} asked `{o['key']}` = `{o['asked']}`, but {where} used "
                        f"`{o['ran']}` ({o.get('why') or 'the release does not support it'}): "
                        f"{'these cells ran' if len(cells) > 1 else 'this cell ran'} "
                        f"{o['ran']}, are labelled so, and are compared with nothing as if "
                        "they differed."
                    ),
                    facts=(
                        f"Cluster `{c.get('name')}` ({c.get('id')}): `{o['key']}` was set to "
                        f"`{o['asked']}`; {where} said it used `{o['ran']}`"
                        + (f": `{o['evidence']}`" if o.get("evidence") else "")
                        + ".",
                    ),
                    cells=cells,
                    undermines=True,
                    ran=dict.fromkeys(cells, ran),
                    headline=(
                        f"`{o['key']}` = `{o['asked']}` did not take effect here: {where} "
                        f"used `{o['ran']}`, so {names} measured {o['ran']}"
                    ),
                    short=f"not a comparison of {o['asked']}: {names} ran {o['ran']}",
                    remedy=f"a release whose daemons take `{o['key']}` = `{o['asked']}`",
                )
            )
    return out


# -- a disk faster than its kind -------------------------------------------------------------


def _disks(envs: Mapping[str, Mapping[str, Any]]) -> dict[tuple[str, str], Mapping[str, Any]]:
    """(host, disk name) -> what the host's environment says of that disk."""
    out = {}
    for host, env in envs.items():
        for d in env.get("disks") or []:
            out[(str(host), str(d.get("name")))] = d
    return out


def _kind_words(d: Mapping[str, Any]) -> str:
    how = d.get("transport") or ("virtio" if str(d.get("name", "")).startswith("vd") else None)
    return f"lsblk ROTA=1{', ' + how if how else ''}"


def _run_devices(window: pd.DataFrame | None) -> dict[tuple[str, str, int], dict[str, str]]:
    """(cell, host, repeat) -> {directory: device} on the cell's own host, from the window."""
    if window is None or window.empty or "detail" not in window:
        return {}
    done = window[(window["status"] == "done") & window["resource"].str.startswith("dir:")]
    out: dict[tuple[str, str, int], dict[str, str]] = {}
    for r in done.itertuples(index=False):
        if r.node != r.host or not isinstance(r.detail, str) or not r.detail:
            continue
        out.setdefault((str(r.cell), str(r.host), int(r.repeat)), {})[r.resource[4:]] = r.detail
    return out


def _disk_of(device: str, names: set[str]) -> str | None:
    """The whole disk a device is on (``vda1`` is on ``vda``), among the known disks."""
    if device in names:
        return device
    for n in sorted(names, key=len, reverse=True):
        if device.startswith(n):
            return n
    return None


def _spinning(
    host: str, device: str | None, disks: Mapping[tuple[str, str], Mapping[str, Any]]
) -> tuple[str, Mapping[str, Any]] | None:
    if not device:
        return None
    name = _disk_of(device, {n for h, n in disks if h == host})
    d = disks.get((host, name)) if name else None
    if d is None or not d.get("rotational"):
        return None
    return str(name), d


def fast_disk(
    experiment: Mapping[str, Any],
    tidy_df: pd.DataFrame,
    cells: pd.DataFrame,
    envs: Mapping[str, Mapping[str, Any]],
    window: pd.DataFrame | None,
    where: Mapping[str, Mapping[str, Any]],
) -> list[Finding]:
    """A device that reports itself a spinning disk but did what no spinning disk can:
    took writes forced to it (the tool's ``forced_rates(metrics, params)``: rates of data
    its run waited to reach the device) or served reads after a dropped cache faster than
    :data:`SPINNING_CEILING`, or had a daemon's log syncs on it complete faster than
    :data:`SPINNING_SYNC_FLOOR`. ``where``: per cell, its ``params``."""
    disks = _disks(envs)
    if not disks:
        return []
    devices = _run_devices(window)
    done = results(tidy_df)
    seen: dict[tuple[str, str], dict[str, Any]] = {}  # (host, disk) -> what was found

    def note(host: str, name: str, d: Mapping[str, Any], what: str, cell: str, v: float) -> None:
        """Every run of a spinning disk's kind of use; the cells of those beyond its bound."""
        got = seen.setdefault((host, name), {"disk": d, "what": {}, "cells": []})
        got["what"].setdefault(what, []).append(v)
        beyond = v < SPINNING_SYNC_FLOOR if what == "sync" else v > SPINNING_CEILING
        if beyond and cell not in got["cells"]:
            got["cells"].append(cell)

    dropped = cells.dropna(subset=["cache_disk"]) if "cache_disk" in cells else cells.iloc[0:0]
    drop_disk = {
        (str(r.cell), str(r.host), int(r.repeat)): str(r.cache_disk)
        for r in dropped.itertuples(index=False)
    }
    forced = getattr(tools.get(experiment["tool"]), "forced_rates", None)
    if forced is not None and not done.empty:
        wide = done.pivot_table(
            index=["cell", "host", "repeat"], columns="metric", values="value", aggfunc="first"
        )
        for (cell, host, repeat), row in wide.iterrows():
            metrics = {k: float(v) for k, v in row.items() if v == v}
            params = (where.get(str(cell)) or {}).get("params") or {}
            key = (str(cell), str(host), int(repeat))
            for metric, rate in forced(metrics, params).items():
                for device in (devices.get(key) or {}).values():
                    spin = _spinning(str(host), device, disks)
                    if spin:
                        note(str(host), spin[0], spin[1], f"forced:{metric}", str(cell), rate)
    for metric in ("throughput", "aggregate_throughput"):
        rows = done[(done["metric"] == metric) & (done["unit"] == "B/s")]
        for r in rows.itertuples(index=False):
            key = (str(r.cell), str(r.host), int(r.repeat))
            spin = _spinning(str(r.host), drop_disk.get(key), disks)
            if spin:
                note(str(r.host), spin[0], spin[1], f"read:{metric}", str(r.cell), r.value)
    for host, name, cell, value in _log_syncs(window, disks):
        note(host, name, disks[(host, name)], "sync", cell, value)
    out = []
    for (host, name), got in seen.items():
        said = []
        what = got["what"]
        forced = [k for k in what if k.startswith("forced:")]
        # One account of the writes: those the run waited on itself, else those timed to
        # the end of the sync after it.
        plain = [k for k in forced if not k.endswith("_adjusted")]
        for kind in (plain or forced)[:1]:
            values = what[kind]
            over = [v for v in values if v > SPINNING_CEILING]
            if len(over) * BEYOND_SHARE < len(values) or not over:
                continue
            how = (
                "writes the run waited on to reach it"
                if kind in plain
                else "writes timed to the end of the `sync` after each run"
            )
            said.append(
                f"it took {how} at {format_value(float(np.median(values)), 'B/s')} (median of "
                f"{len(values)} runs; {len(over)} over, up to {format_value(max(over), 'B/s')}), "
                f"beyond the {format_value(SPINNING_CEILING, 'B/s')} of the fastest spinning disk"
            )
        for kind, values in what.items():
            med = float(np.median(values))
            if kind == "sync":
                said.append(
                    f"a datanode's Ratis log on it synced in {format_seconds(med)} ("
                    + (f"median of {len(values)} cells' medians" if len(values) > 1 else "median")
                    + f"), under the {format_seconds(SPINNING_SYNC_FLOOR)} a platter takes"
                )
            elif kind.startswith("read:"):
                over = [v for v in values if v > SPINNING_CEILING]
                if len(over) * BEYOND_SHARE < len(values) or not over:
                    continue
                said.append(
                    f"it served reads with the page cache dropped at {format_value(med, 'B/s')} "
                    f"(median of {len(values)} runs; {len(over)} over, up to "
                    f"{format_value(max(over), 'B/s')}), beyond the "
                    f"{format_value(SPINNING_CEILING, 'B/s')} of the fastest spinning disk"
                )
        if not said:
            continue
        cells_named = ", ".join(f"`{c}`" for c in got["cells"])
        caveat = (
            f"`{name}` on {host} reports itself a spinning disk ({_kind_words(got['disk'])}), "
            f"yet {'; '.join(said)}. No spinning disk does that, so a cache below the page "
            "cache answered (the hypervisor's, for a virtual disk; a controller's): what these "
            f"runs call the disk ({cells_named}) is that cache, and a comparison with it "
            "measures that cache, not a disk."
        )
        facts = [
            f"The bounds: {SPINNING_CEILING_SOURCE}; for a sync, {SPINNING_SYNC_SOURCE}.",
            f"`{name}` on {host}: {_kind_words(got['disk'])}, model "
            f"{got['disk'].get('model') or 'not reported'}.",
        ]
        out.append(
            Finding(
                check="A disk faster than a disk",
                caveat=caveat,
                facts=tuple(facts),
                cells=tuple(got["cells"]),
                undermines=True,
                headline=(
                    f"this machine's disk is not behaving as a disk: `{name}` reports itself a "
                    f"spinning disk, yet {said[0]}, so its host's cache answered"
                ),
                short=f"but what is called the disk here is `{name}`'s cache, not a disk",
                remedy=(
                    "a host whose disk is the device itself (a bare-metal machine, or a "
                    "virtual disk with its host's cache off, whose fsync'd writes stay under "
                    f"{format_value(SPINNING_CEILING, 'B/s')} on a spinning disk)"
                ),
            )
        )
    return out


def _log_syncs(
    window: pd.DataFrame | None, disks: Mapping[tuple[str, str], Mapping[str, Any]]
) -> list[tuple[str, str, str, float]]:
    """(host, disk, cell, median sync time) of each cell whose datanode's Ratis log sat on a
    spinning disk and synced faster than :data:`SPINNING_SYNC_FLOOR` (a run's median of the
    daemon's sync quantile over the measured step; an interval with no sync is not a value)."""
    if window is None or window.empty:
        return []
    done = window[window["status"] == "done"]
    syncs = done[
        done["resource"].str.startswith("daemon:")
        & done["resource"].str.contains("datanode")
        & (done["metric"] == "ratis_sync_p50")
    ]
    if syncs.empty:
        return []
    ratis_dirs = done[
        done["resource"].str.startswith("dir:") & done["resource"].str.contains("ratis")
    ]
    out = []
    for cell, sub in syncs.groupby("cell", sort=False):
        dirs = ratis_dirs[ratis_dirs["cell"] == cell]
        if dirs.empty:
            continue
        d = dirs.iloc[0]
        spin = _spinning(
            str(d["node"]), d["detail"] if isinstance(d["detail"], str) else None, disks
        )
        if not spin:
            continue
        med = float(sub["value"].median())
        if med < SPINNING_SYNC_FLOOR:
            out.append((str(d["node"]), spin[0], str(cell), med))
    return out


# -- data that never left memory -------------------------------------------------------------


def writeback(env: Mapping[str, Any] | None) -> tuple[float, float, str] | None:
    """The host's page-cache writeback as its sysctls set it: the dirty bytes the kernel
    lets sit before it starts writing any back (``vm.dirty_background_bytes``, else
    ``vm.dirty_background_ratio`` of its memory: an upper bound, the kernel takes the ratio
    of the memory it can dirty), the age at which it writes a dirty page back whatever the
    amount (``vm.dirty_expire_centisecs``), and the words saying so."""
    if not env:
        return None
    sysctl = env.get("sysctl") or {}
    try:
        background = float(sysctl.get("vm.dirty_background_bytes") or 0)
        ratio = float(sysctl.get("vm.dirty_background_ratio") or 0)
        expire = float(sysctl.get("vm.dirty_expire_centisecs") or 0) / 100
    except (TypeError, ValueError):
        return None
    memory = float(env.get("memory_bytes") or 0)
    if not background and ratio and memory:
        background = ratio / 100 * memory
        said = f"vm.dirty_background_ratio {ratio:g}% of {memory / 2**30:.0f} GiB"
    else:
        said = "vm.dirty_background_bytes"
    if not background or not expire:
        return None
    return background, expire, said


def in_memory(
    experiment: Mapping[str, Any],
    tidy_df: pd.DataFrame,
    envs: Mapping[str, Mapping[str, Any]],
    metric: str | None,
    where: Mapping[str, Mapping[str, Any]],
) -> list[Finding]:
    """Cells whose data went to a block device but never needed to leave the page cache:
    each run wrote (the tool's ``written_bytes(metrics, params)``) less than a tenth of what
    the kernel lets sit dirty before it starts writing back, in less time than a dirty page
    may wait (:func:`writeback`), and nothing synced it (the tool's ``data_synced(params,
    site)``, False: not the writes themselves, nor a sync after the run counted in the
    metric, ``*_adjusted``). ``where``: per cell, its ``params``, its ``cluster`` (kind and
    site settings) and whether its data's directories are on a block device (``on_disk``)."""
    if metric is None or metric.endswith("_adjusted"):
        return []
    adapter = tools.get(experiment["tool"])
    written = getattr(adapter, "written_bytes", None)
    synced = getattr(adapter, "data_synced", None)
    if written is None or synced is None:
        return []
    done = results(tidy_df)
    if done.empty:
        return []
    wide = done.pivot_table(
        index=["cell", "host", "repeat"], columns="metric", values="value", aggfunc="first"
    )
    per_cell: dict[str, list[tuple[float, float]]] = {}
    limits: dict[str, tuple[float, float, str]] = {}
    for (cell, host, _), row in wide.iterrows():
        info = where.get(str(cell)) or {}
        if not info.get("on_disk") or synced(info.get("params") or {}, info.get("cluster")) in (
            True,
            None,
        ):
            continue
        limit = writeback(envs.get(str(host)))
        metrics = {k: float(v) for k, v in row.items() if v == v}
        wrote = written(metrics, info.get("params") or {})
        # The time the data were written in: the operations' own where the tool has it (a
        # JVM's start-up writes none), else the run's.
        took = metrics.get("operations_time") or metrics.get("elapsed") or metrics.get("wall_time")
        if limit is None or not wrote or wrote < MEMORY_MIN_BYTES or not took:
            continue
        limits[str(cell)] = limit
        per_cell.setdefault(str(cell), []).append((wrote, took))
    hit: list[tuple[str, float, float, int, int]] = []
    for cell, runs in per_cell.items():
        background, expire, said = limits[cell]
        fits = [r for r in runs if r[0] < MEMORY_SHARE_OF_BACKGROUND * background and r[1] < expire]
        if len(fits) * 2 <= len(runs):
            continue
        hit.append(
            (
                cell,
                float(np.median([r[0] for r in fits])),
                float(np.median([r[1] for r in fits])),
                len(fits),
                len(runs),
            )
        )
    if not hit:
        return []
    background, expire, said = limits[hit[0][0]]
    cells = tuple(h[0] for h in hit)
    names = ", ".join(f"`{c}`" for c in cells)
    wrote = max(h[1] for h in hit)
    took = max(h[2] for h in hit)
    each = "; ".join(
        f"`{c}` {format_bytes(w)} in {format_seconds(t)} ({k} of {n} runs)" for c, w, t, k, n in hit
    )
    return [
        Finding(
            check="Data that never left memory",
            caveat=(
                f"The data of {names} never had to leave the page cache: each run wrote at "
                f"most {format_bytes(wrote)} in at most {format_seconds(took)} (medians), "
                f"unsynced, while this host's kernel starts writing dirty pages back only past "
                f"{format_bytes(background)} ({said}) or once they are "
                f"{format_seconds(expire)} old (vm.dirty_expire_centisecs). These runs "
                "measured the write path into the page cache, not the disk under it."
            ),
            facts=(f"Per cell, the data a run wrote and the time it wrote them in: {each}.",),
            cells=cells,
            undermines=True,
            scope="placement",
            headline=(
                f"the data of {names} never had to leave the page cache "
                f"({format_bytes(wrote)} a run at most, unsynced, against the "
                f"{format_bytes(background)} the kernel lets sit dirty), so memory was compared "
                "with memory"
            ),
            short="but the data on the disk side never had to leave the page cache",
            remedy=(
                "runs long enough to write more than the page cache holds (the reference ran "
                "for 15 to 30 minutes), or its writes synced to the device as they are made"
            ),
        )
    ]


# -- warm-up after a cluster start -----------------------------------------------------------


@functools.lru_cache(maxsize=64)
def _s_distribution(n: int) -> dict[int, float]:
    """P(S = s) for n runs with no ties and no trend: S = pairs - 2 x inversions, and the
    count of orders with each number of inversions is a Mahonian number."""
    counts = [1]
    for k in range(2, n + 1):
        nxt = [0] * (len(counts) + k - 1)
        for j in range(k):
            for i, c in enumerate(counts):
                nxt[i + j] += c
        counts = nxt
    pairs = n * (n - 1) // 2
    total = math.factorial(n)
    return {pairs - 2 * inv: c / total for inv, c in enumerate(counts)}


def _s(values: Sequence[float]) -> int:
    x = np.asarray(values, dtype=float)
    d = np.sign(x[None, :] - x[:, None])
    return int(np.triu(d, 1).sum())


def summed_trend(groups: Sequence[Sequence[float]]) -> tuple[int, int, float, float]:
    """Mann-Kendall's S summed over ``groups`` (each a cell's runs in the order they
    started), the most it could be, its exact two-sided p where no group has ties (the
    convolution of the groups' own distributions), else a seeded permutation p; and the
    smallest p any outcome of runs of these numbers can give."""
    groups = [list(g) for g in groups if len(g) >= 2]
    s = sum(_s(g) for g in groups)
    most = sum(len(g) * (len(g) - 1) // 2 for g in groups)
    smallest = (
        min(1.0, 2 * math.prod(1 / math.factorial(len(g)) for g in groups)) if groups else 1.0
    )
    if not groups:
        return 0, 0, 1.0, 1.0
    if all(len(set(g)) == len(g) for g in groups):
        dist = {0: 1.0}
        for g in groups:
            one = _s_distribution(len(g))
            nxt: dict[int, float] = {}
            for a, pa in dist.items():
                for b, pb in one.items():
                    nxt[a + b] = nxt.get(a + b, 0.0) + pa * pb
            dist = nxt
        p = sum(pr for v, pr in dist.items() if abs(v) >= abs(s) - 1e-9) if s else 1.0
        return s, most, min(1.0, p), smallest
    rng = np.random.default_rng(SEED)
    apart = 0
    for _ in range(PERMUTATIONS):
        if abs(sum(_s(rng.permutation(g)) for g in groups)) >= abs(s):
            apart += 1
    return s, most, (1 + apart) / (PERMUTATIONS + 1), smallest


def warmup(
    tidy_df: pd.DataFrame,
    cells: pd.DataFrame,
    clusters: Sequence[Mapping[str, Any]],
    metric: str | None,
) -> tuple[list[Finding], list[Untestable], list[str]]:
    """The runs of each cluster start, each cell's in the order they started, tested for a
    common trend (:func:`summed_trend`); Holm's correction over the starts tested. Returns
    the findings, the starts too small to test, and the facts for the notebook."""
    if metric is None or "clusters" not in cells or not clusters:
        return [], [], []
    done = results(tidy_df)
    runs = done[done["metric"] == metric][["cell", "host", "repeat", "value", "unit"]]
    timed = cells[cells["status"] == "done"][["cell", "host", "repeat", "start", "clusters"]]
    runs = runs.merge(timed, on=["cell", "host", "repeat"])
    if runs.empty:
        return [], [], []
    runs = runs.assign(t=pd.to_datetime(runs["start"], utc=True, format="ISO8601"))
    names = {c["ref"]: c.get("name") or c["ref"] for c in clusters if "ref" in c}
    tested = []
    for ref in dict.fromkeys(x for refs in runs["clusters"].dropna() for x in str(refs).split()):
        on = runs[runs["clusters"].fillna("").str.split().map(lambda xs, r=ref: r in xs)]
        groups = [
            sub.sort_values("t", kind="stable")["value"].tolist()
            for _, sub in on.groupby(["cell", "host"], sort=False)
        ]
        s, most, p, smallest = summed_trend(groups)
        tested.append((ref, len(on), len(groups), s, most, p, smallest, on))
    if not tested:
        return [], [], []
    unit = str(runs["unit"].iloc[0])
    higher_better = unit in ("B/s", "1/s")
    label = metric_label(metric).lower()
    adjusted = holm([t[5] for t in tested])
    best = holm([t[6] for t in tested])
    findings, untestable = [], []
    facts = [
        f"Each cluster start's runs were tested for a common trend in {label} with their order "
        "since the cluster started (Mann-Kendall's S summed over its cells, exact p; Holm's "
        f"correction over {len(tested)} start(s))."
    ]
    for (ref, n, k, s, most, p, _smallest, on), adj, floor in zip(
        tested, adjusted, best, strict=True
    ):
        name = names.get(ref, ref)
        facts.append(
            f"`{name}` ({ref}): {n} runs in {k} cell(s), S = {s:+d} of at most {most}, "
            f"p = {p:.3g} ({adj:.3g} after Holm)."
        )
        if floor > ALPHA:
            untestable.append(
                Untestable(
                    "Warm-up after a cluster start",
                    f"not testable on `{name}` with {n} runs in {k} cell(s) a start: the "
                    f"smallest p they could give is {floor:.3g} after Holm's correction",
                )
            )
            continue
        if adj > ALPHA:
            continue
        better = (s > 0) == higher_better
        first = on.sort_values("t").groupby(["cell", "host"], sort=False)["value"]
        a = float(first.first().median())
        b = float(first.last().median())
        way = "faster" if better else "slower"
        findings.append(
            Finding(
                check="Warm-up after a cluster start",
                caveat=(
                    f"On `{name}`, runs got {way} with their order since the cluster started "
                    f"(S = {s:+d} of at most {most}, p = {adj:.2g} after Holm's correction; "
                    f"{label} from {format_value(a, unit)} in each cell's first run to "
                    f"{format_value(b, unit)} in its last, medians): "
                    + (
                        "a cluster warming up (JIT compilation, caches, connections), so its "
                        "first runs measured a cold cluster, and cells measured one after "
                        "another differ by this as well as by their settings."
                        if better
                        else "the cluster slowed down as it filled, so cells measured one "
                        "after another differ by this as well as by their settings."
                    )
                ),
                cells=tuple(dict.fromkeys(str(c) for c in on["cell"])),
            )
        )
    return findings, untestable, facts


# -- a clock too coarse for the run ------------------------------------------------------------


def coarse_clock(
    experiment: Mapping[str, Any], tidy_df: pd.DataFrame, metric: str | None
) -> list[Finding]:
    """Runs whose ``metric`` comes from a clock (the tool's ``CLOCKS``: metric -> (the metric
    that holds the time it was measured over, the clock's tick, what the clock is)) whose
    tick is more than :data:`CLOCK_SHARE` of that time."""
    if metric is None:
        return []
    clocks = getattr(tools.get(experiment["tool"]), "CLOCKS", {})
    if metric not in clocks:
        return []
    over, tick, what = clocks[metric]
    done = results(tidy_df)
    times = done[done["metric"] == over]
    short = times[times["value"] < tick / CLOCK_SHARE]
    if short.empty:
        return []
    cells_hit = tuple(dict.fromkeys(str(c) for c in short["cell"]))
    return [
        Finding(
            check="A run shorter than its clock resolves",
            caveat=(
                f"{len(short)} of {len(times)} runs measured {metric_label(metric).lower()} "
                f"over less than {format_seconds(tick / CLOCK_SHARE)} ("
                f"{format_seconds(float(short['value'].min()))} at the least) on {what}, "
                f"whose tick is {format_seconds(tick)}: one tick is over "
                f"{CLOCK_SHARE:.0%} of such a run, so its number is coarse by that much."
            ),
            cells=cells_hit,
        )
    ]


def as_label(cell: str, findings: Sequence[Finding]) -> str:
    """A cell's name as the post writes it: what ran, where a setting did not take effect."""
    for f in findings:
        if cell in f.ran:
            return f"{cell} ({f.ran[cell]})"
    return cell


def busy_host(up: Mapping[tuple[str, str, int], Sequence[str]]) -> list[Finding]:
    """Runs that measured while a cluster they did not use was starting, up or stopping on
    their host (:func:`perfpost.analysis.runorder.others_up`): its daemons took CPU, memory
    and disk beside the run."""
    if not up:
        return []
    by_cell: dict[str, list[str]] = {}
    for (cell, host, repeat), names in up.items():
        by_cell.setdefault(cell, []).append(f"r{repeat} on {host} ({', '.join(names)})")
    said = "; ".join(f"`{c}` {', '.join(v)}" for c, v in by_cell.items())
    return [
        Finding(
            check="A host that was not quiet",
            caveat=(
                f"{len(up)} run(s) measured while a cluster they did not use was starting, up "
                f"or stopping on their host: {said}. Its daemons shared the host with the run."
            ),
            cells=tuple(by_cell),
        )
    ]


def renamed(f: Finding, names: Mapping[str, str]) -> Finding:
    """``f`` with each cell named as the post names it (``names``: cell id -> name) in its
    sentences; every cell of the experiment named at once reads "every cell"."""
    from dataclasses import replace

    def text(s: str) -> str:
        listed = ", ".join(f"`{c}`" for c in f.cells)
        if len(f.cells) > 1 and set(f.cells) == set(names) and listed in s:
            s = s.replace(f"The data of {listed}", "The data of every cell").replace(
                listed, "every cell"
            )
        for cell in sorted(names, key=len, reverse=True):
            s = s.replace(f"`{cell}`", f"`{names[cell]}`")
        return s

    return replace(
        f,
        caveat=text(f.caveat),
        facts=tuple(text(x) for x in f.facts),
        headline=text(f.headline),
        short=text(f.short),
    )
