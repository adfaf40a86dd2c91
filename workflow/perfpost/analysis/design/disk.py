"""Checks of the disk under the data: a "disk" faster than any spinning disk can be, and data
that never had to leave the page cache."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from perfpost import tools
from perfpost.analysis.design.finding import Finding
from perfpost.analysis.tidy import results
from perfpost.units import format_bytes, format_seconds, format_value

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
        got = seen.setdefault((host, name), {"disk": d, "what": {}, "cells": [], "used": []})
        got["what"].setdefault(what, []).append(v)
        beyond = v < SPINNING_SYNC_FLOOR if what == "sync" else v > SPINNING_CEILING
        if beyond and cell not in got["cells"]:
            got["cells"].append(cell)
        if cell not in got["used"]:
            got["used"].append(cell)

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
        probe = _fast_probe(envs.get(host), name)
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
        platter = f"under the {format_seconds(SPINNING_SYNC_FLOOR)} a platter takes"
        lead = said[0] if said else None  # the headline's reason, its bound with it
        if probe is not None:
            # The disk itself, timed after the runs: every cell whose number waited on it
            # (forced writes, reads past a dropped cache, a log's syncs) measured that cache.
            got["cells"] = list(dict.fromkeys([*got["cells"], *got["used"]]))
            timed = (
                f"{probe['writes']} writes of {_block(probe['block_bytes'])} synced to it "
                f"one by one (dd oflag=dsync, perfpost's probe after the runs, in "
                f"{probe['dir']}) took {format_seconds(probe['per_write'])} each"
            )
            if said and said[-1].endswith(f", {platter}"):  # the log's syncs: one bound, once
                said[-1] = said[-1].removesuffix(f", {platter}")
                said.append(f"{timed}: both {platter}")
            else:
                said.append(f"{timed}, {platter}")
        if not said:
            continue
        cells_named = ", ".join(f"`{c}`" for c in got["cells"])
        caveat = (
            f"`{name}` on {host} reports itself a spinning disk ({_kind_words(got['disk'])}), "
            f"yet {'; '.join(said)}. No spinning disk does that, so a cache below the page "
            "cache answered (the hypervisor's, for a virtual disk; a controller's): what these "
            f"runs call the disk ({cells_named}) is that cache, and what they show of it "
            "holds for that cache, not for a disk."
        )
        facts = [
            f"The bounds: {SPINNING_CEILING_SOURCE}; for a sync, {SPINNING_SYNC_SOURCE}.",
            f"`{name}` on {host}: {_kind_words(got['disk'])}; its model: "
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
                    f"`{name}` reports itself a spinning disk, yet {lead or said[0]}, so a cache "
                    "answered, not a disk"
                ),
                short=f"but what is called the disk here is `{name}`'s cache, not a disk",
                scope="one side",
                remedy=(
                    "a host whose disk is the device itself (a bare-metal machine, or a "
                    "virtual disk with its host's cache off; a spinning disk then takes "
                    f"{format_seconds(SPINNING_SYNC_FLOOR)} or more for each synced write, and "
                    f"stays under {format_value(SPINNING_CEILING, 'B/s')} for fsync'd streams)"
                ),
            )
        )
    return out


def _block(n: int) -> str:
    return f"{n // 1024} KiB" if n % 1024 == 0 else format_bytes(n)


def _fast_probe(env: Mapping[str, Any] | None, disk: str) -> dict[str, Any] | None:
    """The env step's probe of ``disk`` (:mod:`perfpost.run.diskprobe`) where its synced
    writes each took less than :data:`SPINNING_SYNC_FLOOR` (dd's own time over the writes)."""
    for p in (env or {}).get("sync_probe") or []:
        per = p.get("per_write")
        if p.get("disk") == disk and per is not None and per < SPINNING_SYNC_FLOOR:
            return dict(p)
    return None


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
