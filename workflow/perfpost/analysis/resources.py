"""Resource telemetry from cell records: tables, what bound each cell, and its validity check.

Each record's ``resources`` (:mod:`perfpost.instrument.resources`) holds, per host the run
involved (a ``node``: the cell's own host, and each host of its clusters), the measured
step's summary and the series of each sampling interval. Two tables come of them:

- ``resources.csv``: one row per run, node, resource, metric and interval (``t``: seconds
  since the measured step started, the interval's end), the value in base units;
- ``resources-window.csv``: one row per run, node, resource and metric over the measured
  step itself (rates over the samples that bracket it; ``busy_time_share``: the share of
  the step's time the resource was at least 90% busy), and the device under each directory
  that matters (``dir:<path>``, ``device`` in ``detail``).

From the window table, per cell (medians over its finished runs): which resource was
saturated (busy for at least half the measured step) on which node, in one sentence a
reader can check against the numbers beside it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from perfpost.clusters import metrics as daemon_metrics
from perfpost.instrument.sampler import BUSY, SATURATED_SHARE
from perfpost.plan.matrix import label
from perfpost.records import write_json_atomic, write_text_atomic
from perfpost.units import format_seconds, format_value, sig

SCHEMA_VERSION = 1
# A measured step shorter than this many sampling intervals is not resolved by the samples:
# the intervals around it are mostly time outside it (a 10 ms read in a 1 s interval).
RESOLVED_INTERVALS = 2.0
UNRESOLVED = "unresolved"  # the verdict of such a step

RUN_COLUMNS = ("experiment", "cell", "host", "repeat", "attempt", "status")
SERIES_COLUMNS = ("node", "resource", "metric", "t", "seconds", "value", "unit")
WINDOW_COLUMNS = ("node", "roles", "resource", "metric", "value", "unit", "detail")

UNITS = {
    "ratio": "a share of time or capacity, 0 to 1 (CPU busy of all cores, disk busy, PSI)",
    "cores": "CPU-seconds per second: how many cores a process kept busy",
}

DOCS = {
    "node": "the host this row was sampled on (the cell's own host, or a host of its cluster)",
    "roles": "what ran on the node: client (the cell's tool), or <cluster> <daemon>",
    "resource": "cpu, cpu<N>, disk:<name>, net:<interface>, memory, pressure (PSI), system, "
    "process:<cluster>:<daemon>, dir:<path> (the device under that directory)",
    "t": "seconds since the run's measured step started, at the end of the interval",
    "seconds": "the interval's length: the value is over (t - seconds, t]",
    "detail": "for dir:<path> rows, the block device under the directory (empty: none, "
    "as for a tmpfs)",
}


def _axis_values(r: Mapping[str, Any], axes: list[str]) -> dict[str, str | None]:
    labels = r.get("labels") or {}
    return {a: None if labels.get(a) is None else label(labels.get(a)) for a in axes}


def _run_key(r: Mapping[str, Any]) -> dict[str, Any]:
    return {k: r.get(k) for k in RUN_COLUMNS}


def series_table(records: Iterable[Mapping[str, Any]], axes: list[str]) -> pd.DataFrame:
    """resources.csv: every interval's value of every run, node, resource and metric."""
    axes = [a for a in axes if a not in (*RUN_COLUMNS, *SERIES_COLUMNS)]
    cols: dict[str, list[Any]] = {c: [] for c in (*RUN_COLUMNS, *axes, *SERIES_COLUMNS)}
    for r in records:
        hosts = (r.get("resources") or {}).get("hosts") or {}
        key, av = _run_key(r), _axis_values(r, axes)
        for node, entry in hosts.items():
            series = entry.get("series") or {}
            ts = series.get("t") or []
            host_lengths = series.get("seconds") or [None] * len(ts)
            for name, values in (series.get("values") or {}).items():
                resource, _, metric = name.rpartition("/")
                unit = (series.get("units") or {}).get(name, "")
                lengths = host_lengths
                if resource.startswith("daemon:") and series.get("daemon_seconds"):
                    lengths = series["daemon_seconds"]
                for t, dt, v in zip(ts, lengths, values, strict=False):
                    if v is None:
                        continue
                    for k, x in key.items():
                        cols[k].append(x)
                    for a in axes:
                        cols[a].append(av[a])
                    cols["node"].append(node)
                    cols["resource"].append(resource)
                    cols["metric"].append(metric)
                    cols["t"].append(t)
                    cols["seconds"].append(dt)
                    cols["value"].append(v)
                    cols["unit"].append(unit)
    return pd.DataFrame(cols)


# Units of the window's fields, by resource kind.
_WINDOW_UNITS = {
    "cpu": {"cores": "count", "busiest_core": "ratio"},
    "disk": {
        "read_bytes": "B/s",
        "write_bytes": "B/s",
        "reads": "1/s",
        "writes": "1/s",
        "util": "ratio",
        "queue": "",
        "await": "s",
        "read_total": "B",
        "write_total": "B",
    },
    "net": {"rx_bytes": "B/s", "tx_bytes": "B/s", "rx_total": "B", "tx_total": "B"},
    "memory": {},
    "process": {"cpu": "cores", "rss": "B"},
}


def _unit(kind: str, metric: str) -> str:
    if metric == "busy_time_share":
        return "ratio"
    if kind == "memory":
        return "B"
    if kind in ("cpu", "pressure"):
        return _WINDOW_UNITS["cpu"].get(metric, "ratio")
    return _WINDOW_UNITS.get(kind, {}).get(metric, "")


def window_rows(
    node: str, entry: Mapping[str, Any], interval: float | None = None
) -> list[dict[str, Any]]:
    """One node's window summary as rows (node, roles, resource, metric, value, unit)."""
    w = entry.get("window") or {}
    roles = ", ".join(entry.get("roles") or [])
    rows: list[dict[str, Any]] = []

    def add(resource: str, metric: str, value: Any, unit: str, detail: Any = None) -> None:
        rows.append(
            {
                "node": node,
                "roles": roles,
                "resource": resource,
                "metric": metric,
                "value": np.nan if value is None else float(value),
                "unit": unit,
                "detail": detail,
            }
        )

    if entry.get("cores"):
        add("cpu", "cores", entry["cores"], "count")
    if "seconds" in w:
        add("window", "seconds", w["seconds"], "s")
    if interval:
        add("window", "interval", interval, "s")
    for m, v in (w.get("cpu") or {}).items():
        add("cpu", m, v, _unit("cpu", m))
    for name, vals in (w.get("disks") or {}).items():
        for m, v in vals.items():
            add(f"disk:{name}", m, v, _unit("disk", m))
    for name, vals in (w.get("nets") or {}).items():
        for m, v in vals.items():
            add(f"net:{name}", m, v, _unit("net", m))
    for m, v in (w.get("pressure") or {}).items():
        add("pressure", m, v, "ratio")
    for m, v in (w.get("memory") or {}).items():
        add("memory", m, v, "B")
    for name, vals in (w.get("processes") or {}).items():
        for m, v in vals.items():
            add(f"process:{name}", m, v, _unit("process", m))
    for daemon, vals in (w.get("daemons") or {}).items():
        for m, v in vals.items():
            add(f"daemon:{daemon}", m, v, daemon_metrics.UNITS.get(m, ""))
    for d, device in (entry.get("dirs") or {}).items():
        add(f"dir:{d}", "device", None, "", device or "")
    return rows


def window_table(records: Iterable[Mapping[str, Any]], axes: list[str]) -> pd.DataFrame:
    """resources-window.csv: the measured step of every run, per node."""
    axes = [a for a in axes if a not in (*RUN_COLUMNS, *WINDOW_COLUMNS)]
    rows = []
    for r in records:
        res = r.get("resources") or {}
        key, av = _run_key(r), _axis_values(r, axes)
        for node, entry in (res.get("hosts") or {}).items():
            for row in window_rows(node, entry, res.get("interval")):
                rows.append({**key, **av, **row})
    return pd.DataFrame(rows, columns=[*RUN_COLUMNS, *axes, *WINDOW_COLUMNS])


def schema_doc(axes: list[str], kind: str) -> dict[str, Any]:
    from perfpost.units import BASE_UNITS

    tail = SERIES_COLUMNS if kind == "series" else WINDOW_COLUMNS
    return {
        "schema_version": SCHEMA_VERSION,
        "columns": [*RUN_COLUMNS, *axes, *tail],
        "axes": axes,
        "docs": DOCS,
        "units": {**BASE_UNITS, **UNITS},
    }


def write(records: list[Mapping[str, Any]], axes: list[str], out: Path) -> None:
    """Both tables and their schema, in ``out`` (the experiment's results directory)."""
    from perfpost import paths

    series = series_table(records, axes)
    window = window_table(records, axes)
    write_text_atomic(out / Path(paths.RESOURCES_CSV).name, series.to_csv(index=False))
    write_text_atomic(out / Path(paths.RESOURCES_WINDOW_CSV).name, window.to_csv(index=False))
    write_json_atomic(
        out / Path(paths.RESOURCES_SCHEMA).name,
        {"series": schema_doc(axes, "series"), "window": schema_doc(axes, "window")},
    )


def read_window(path: str | Path) -> pd.DataFrame:
    """resources-window.csv with axis labels and cell ids kept as text."""
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    for col in ("value",):
        df[col] = pd.to_numeric(df[col].replace("", np.nan))
    for col in ("repeat", "attempt"):
        df[col] = pd.to_numeric(df[col], errors="coerce")
    return df


# -- what bound each cell -------------------------------------------------------------------


def _median(df: pd.DataFrame, resource: str, metric: str) -> float | None:
    v = df[(df["resource"] == resource) & (df["metric"] == metric)]["value"].dropna()
    return float(v.median()) if len(v) else None


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.0%}"


def _medians(df: pd.DataFrame) -> dict[tuple[str, str], float]:
    """Every (resource, metric)'s median over ``df``'s values, in one pass: a post of 1,000
    cells asks for nine of them a node, each a filter of the whole table otherwise."""
    v = df[df["value"].notna()]
    if v.empty:
        return {}
    got = v.groupby(["resource", "metric"], sort=False)
    return {k: float(x) for k, x in got["value"].median().items()}


def node_profile(d: pd.DataFrame, node: str) -> dict[str, Any]:
    """One node's medians over a cell's finished runs (``d``: the node's window rows)."""
    medians = _medians(d)
    med = lambda resource, metric: medians.get((resource, metric))  # noqa: E731

    roles = next((r for r in d["roles"] if r), "")
    cores = med("cpu", "cores")
    out: dict[str, Any] = {
        "node": node,
        "roles": roles,
        "cores": int(cores) if cores else None,
        "busy": med("cpu", "busy"),
        "busy_share": med("cpu", "busy_time_share"),
        "iowait": med("cpu", "iowait"),
        "steal": med("cpu", "steal"),
        "cpu_pressure": med("pressure", "cpu_some"),
        "io_pressure": med("pressure", "io_some"),
        "runs": int(d[["cell", "host", "repeat"]].drop_duplicates().shape[0]),
        "step": med("window", "seconds"),
        "interval": med("window", "interval"),
    }
    disks = []
    for res in sorted({r for r in d["resource"] if r.startswith("disk:")}):
        disks.append(
            {
                "name": res[5:],
                "util": med(res, "util"),
                "busy_share": med(res, "busy_time_share"),
                "write": med(res, "write_bytes"),
                "read": med(res, "read_bytes"),
                "await": med(res, "await"),
                "written": med(res, "write_total"),
            }
        )
    disks.sort(key=lambda x: -(x["util"] or 0.0))
    out["disks"] = disks
    out["disk"] = disks[0] if disks else None
    procs = {}
    for res in sorted({r for r in d["resource"] if r.startswith("process:")}):
        procs[res[8:]] = med(res, "cpu")
    out["processes"] = procs
    daemons: dict[str, dict[str, float]] = {}
    for res, metric in medians:  # in the rows' order, as each daemon's metrics came
        if res.startswith("daemon:"):
            daemons.setdefault(res[7:], {})[metric] = medians[(res, metric)]
    daemons = {k: daemons[k] for k in sorted(daemons)}
    out["daemons"] = daemons
    dirs = {}
    for row in d[d["resource"].str.startswith("dir:")].itertuples(index=False):
        dirs[row.resource[4:]] = row.detail or None
    out["dirs"] = dirs
    out["cpu_saturated"] = (out["busy_share"] or 0.0) >= SATURATED_SHARE
    out["disks_saturated"] = [x for x in disks if (x["busy_share"] or 0.0) >= SATURATED_SHARE]
    return out


def _cpu_text(p: dict[str, Any]) -> str:
    text = f"CPU {_pct(p['busy'])} of {p['cores']} cores busy"
    if p["busy_share"]:
        text += f", at least {BUSY:.0%} busy for {_pct(p['busy_share'])} of the run"
    ours = [
        f"the tool {p['tool_cores']:.2g}" if p.get("tool_cores") is not None else None,
        *(f"{k.split(':', 1)[-1]} {v:.2g}" for k, v in p["processes"].items() if v is not None),
    ]
    ours = [x for x in ours if x]
    if ours:
        text += f" ({', '.join(ours)} cores"
        if _mostly_others(p):
            text += "; the rest was other work on the host"
        text += ")"
    return text


def _unresolved(step: float | None, interval: float | None) -> bool:
    """Whether a step is too short for the samples to tell what happened during it."""
    return bool(step is not None and interval and step < RESOLVED_INTERVALS * interval)


def _mostly_others(p: dict[str, Any]) -> bool:
    """Whether the cell's own processes (the tool, the daemons followed) account for less
    than half the busy CPU of the node, when they are known at all."""
    known = p.get("tool_cores") is not None or any(v is not None for v in p["processes"].values())
    if not known or not p["busy"] or not p["cores"]:
        return False
    ours = (p.get("tool_cores") or 0.0) + sum(v for v in p["processes"].values() if v is not None)
    return ours < 0.5 * p["busy"] * p["cores"]


def _disk_text(x: dict[str, Any]) -> str:
    text = f"disk {x['name']} {_pct(x['util'])} utilised"
    if x["busy_share"]:
        text += f", at least {BUSY:.0%} for {_pct(x['busy_share'])} of the run"
    return text


def bound(profiles: list[dict[str, Any]]) -> dict[str, Any]:
    """What bound a cell, from its nodes' profiles: the saturated resources, and a sentence
    saying so with the numbers it rests on."""
    short = [p for p in profiles if _unresolved(p.get("step"), p.get("interval"))]
    if short:
        p = short[0]
        return {
            "verdict": UNRESOLVED,
            "what": [],
            "sentence": f"the measured step took {format_seconds(p['step'])} (median), shorter "
            f"than {RESOLVED_INTERVALS:g} sampling intervals of {format_seconds(p['interval'])}: "
            "the samples around it are mostly time outside it, so they cannot say what bound it",
        }
    saturated = []
    for p in profiles:
        if p["cpu_saturated"]:
            saturated.append(("CPU", p))
        for x in p["disks_saturated"]:
            saturated.append((f"disk {x['name']}", p))
    multi = len(profiles) > 1
    where = (lambda p: f" on {p['node']}") if multi else (lambda p: "")
    if not saturated:
        busiest = max(profiles, key=lambda p: p["busy"] or 0.0)
        parts = [f"{_cpu_text(busiest)}{where(busiest)}"]
        disked = [p for p in profiles if p["disk"]]
        if disked:
            top = max(disked, key=lambda p: p["disk"]["util"] or 0.0)
            parts.append(f"{_disk_text(top['disk'])}{where(top)}")
        return {
            "verdict": "none",
            "what": [],
            "sentence": "no single resource saturated: " + "; ".join(parts),
        }
    said = []
    for what, p in saturated:
        if what == "CPU":
            text = f"{_cpu_text(p)}{where(p)}"
            if p["disk"]:
                text += f"; {_disk_text(p['disk'])}"
        else:
            x = next(d for d in p["disks_saturated"] if f"disk {d['name']}" == what)
            text = f"{_disk_text(x)}{where(p)}; {_cpu_text(p)}"
        said.append(text)
    kinds = sorted({"the CPU" if w == "CPU" else "the disk" for w, _ in saturated})
    measured = " and ".join(kinds)
    others = [p for w, p in saturated if w == "CPU" and _mostly_others(p)]
    if others and len(kinds) == 1:
        return {
            "verdict": "CPU (others)",
            "what": [(w, p["node"]) for w, p in saturated],
            "sentence": "; ".join(said) + ": the CPU was saturated mostly by other work on "
            "the host, so these runs competed for it",
        }
    return {
        "verdict": "+".join(sorted({w for w, _ in saturated})),
        "what": [(w, p["node"]) for w, p in saturated],
        "sentence": "; ".join(said) + f": this cell measured {measured}",
    }


def tool_cores(tidy_df: pd.DataFrame | None) -> dict[str, float]:
    """Per cell, the median over its finished runs of the cores the tool's own processes
    kept busy (their CPU time over the measured step's wall time)."""
    by_cell: dict[str, list[float]] = {}
    for (cell, _, _), cores in _run_tool_cores(tidy_df).items():
        by_cell.setdefault(cell, []).append(cores)
    return {cell: float(np.median(v)) for cell, v in by_cell.items()}


def tool_gc(tidy_df: pd.DataFrame | None) -> dict[str, dict[str, float]]:
    """Per cell, medians over its finished runs of the tool's JVM's GC: its pauses, their
    share of the measured step, and the heap's peak before a collection."""
    if tidy_df is None or tidy_df.empty:
        return {}
    done = tidy_df[tidy_df["status"] == "done"]
    keys = ["cell", "host", "repeat"]
    wide = done[
        done["metric"].isin(["jvm_gc_pauses", "jvm_gc_pause_time", "jvm_heap_peak", "wall_time"])
    ].pivot_table(index=keys, columns="metric", values="value", aggfunc="first")
    if "jvm_gc_pauses" not in wide:
        return {}
    wide = wide[wide["jvm_gc_pauses"].notna()]
    out: dict[str, dict[str, float]] = {}
    for cell, d in wide.groupby(level="cell"):
        time = d["jvm_gc_pause_time"] if "jvm_gc_pause_time" in d else pd.Series(0.0, d.index)
        share = (time.fillna(0.0) / d["wall_time"]).median()
        got = {"pauses": float(d["jvm_gc_pauses"].median()), "share": float(share)}
        if "jvm_heap_peak" in d and d["jvm_heap_peak"].notna().any():
            got["heap_peak"] = float(d["jvm_heap_peak"].median())
        out[str(cell)] = got
    return out


def cell_profiles(
    window: pd.DataFrame,
    axes: list[str],
    tools: Mapping[str, float] | None = None,
    gc: Mapping[str, Mapping[str, float]] | None = None,
) -> list[dict[str, Any]]:
    """Per cell (in the table's order): its nodes' profiles over its finished runs and what
    bound it. ``tools``: :func:`tool_cores`, shown on the cell's own host."""
    if window is None or window.empty:
        return []
    done = window[window["status"] == "done"]
    # Plain Python strings (pandas' Arrow-backed ones cost a take per filter) and grouped
    # once: a post of 1,000 cells filtered the whole table twice a cell otherwise.
    used = ["cell", "host", "repeat", "node", "roles", "resource", "metric", "value", "detail"]
    done = done[[c for c in used if c in done]]
    done = done.astype({c: object for c in done.columns if c != "value"})
    out = []
    for cell, d in done.groupby("cell", sort=False):
        by_node = dict(list(d.groupby("node", sort=False)))
        # The cell's own host first, then its clusters' hosts.
        nodes = sorted(by_node, key=lambda n: 0 if "client" in by_node[n]["roles"].iloc[0] else 1)
        profiles = [node_profile(by_node[n], n) for n in nodes]
        for p in profiles:
            if "client" in r_split(p["roles"]):
                p["tool_cores"] = (tools or {}).get(cell)
                p["tool_gc"] = (gc or {}).get(cell)
        out.append({"cell": cell, "nodes": profiles, "bound": bound(profiles)})
    return out


# The daemon metrics the post's table shows, in this order (GC first, heap left out).
DAEMON_COLUMNS = (
    "gc_time",
    "ratis_syncs",
    "ratis_sync_p50",
    "ratis_sync_p99",
    "write_chunks",
    "write_chunk_time",
    "chunk_bytes",
    "bytes_written",
    "fsyncs",
    "fsync_time",
    "flush_time",
    "rpc_calls",
    "rpc_queue_time",
    "rpc_processing_time",
    "rpc_call_queue",
    "containers_running",
    "apps_running",
)


def _daemon_value(name: str, v: float) -> str:
    unit = daemon_metrics.UNITS.get(name, "")
    if unit == "ratio":
        return f"{v:.1%}"
    if unit == "count":
        return sig(v, 2)
    return format_value(v, unit)


def daemon_table(profiles: list[dict[str, Any]]) -> dict[str, Any]:
    """One row per cell and daemon: what the daemon's own metrics said of the step; and
    what each metric shown means."""
    rows, shown = [], set()
    for c in profiles:
        for p in c["nodes"]:
            for daemon, vals in p.get("daemons", {}).items():
                names = [n for n in DAEMON_COLUMNS if n in vals]
                if not names:
                    continue
                shown.update(names)
                said = [f"{n.replace('_', ' ')} {_daemon_value(n, vals[n])}" for n in names]
                rows.append(
                    {
                        "cell": c["cell"],
                        "daemon": daemon,
                        "node": p["node"],
                        "said": "; ".join(said),
                    }
                )
    meanings = [
        f"{n.replace('_', ' ')}: {daemon_metrics.MEANINGS[n]}" for n in DAEMON_COLUMNS if n in shown
    ]
    return {"rows": rows, "meanings": meanings}


def _gc_text(gc: Mapping[str, float] | None) -> str:
    if not gc:
        return "-"
    text = f"{gc['share']:.1%} ({gc['pauses']:g} pauses"
    if gc.get("heap_peak"):
        text += f", heap {format_value(gc['heap_peak'], 'B')}"
    return text + ")"


def table(profiles: list[dict[str, Any]]) -> dict[str, Any]:
    """The post's Resources table: one row per cell and node."""
    rows = []
    for c in profiles:
        for p in c["nodes"]:
            disk = p["disk"]
            if c["bound"]["verdict"] == UNRESOLVED:  # no share of the step's own to show
                rows.append(
                    {
                        "cell": c["cell"],
                        "node": p["node"],
                        "roles": p["roles"],
                        "cpu": "step too short",
                        **dict.fromkeys(("cpu_busy", "iowait", "disk", "util", "write"), "-"),
                        **dict.fromkeys(("await", "psi", "tool_gc", "daemons"), "-"),
                    }
                )
                continue
            rows.append(
                {
                    "cell": c["cell"],
                    "node": p["node"],
                    "roles": p["roles"],
                    "cpu": f"{_pct(p['busy'])} of {p['cores']}" if p["cores"] else _pct(p["busy"]),
                    "cpu_busy": _pct(p["busy_share"]),
                    "iowait": _pct(p["iowait"]),
                    "disk": disk["name"] if disk else "-",
                    "util": _pct(disk["util"]) if disk else "-",
                    "write": format_value(disk["write"], "B/s") if disk and disk["write"] else "-",
                    "await": format_value(disk["await"], "s") if disk and disk["await"] else "-",
                    "psi": f"{_pct(p['cpu_pressure'])} / {_pct(p['io_pressure'])}",
                    "tool_gc": _gc_text(p.get("tool_gc")),
                    "daemons": ", ".join(
                        f"{k.split(':', 1)[-1]} {v:.2g}"
                        for k, v in p["processes"].items()
                        if v is not None
                    ),
                }
            )
    return {"rows": rows}


def r_split(roles: str) -> list[str]:
    return [x.strip() for x in str(roles).split(",") if x.strip()]


def _run_tool_cores(tidy_df: pd.DataFrame | None) -> dict[tuple[str, str, int], float]:
    """(cell, host, repeat) -> cores the tool's own processes kept busy in that run."""
    if tidy_df is None or tidy_df.empty:
        return {}
    done = tidy_df[tidy_df["status"] == "done"]
    keys = ["cell", "host", "repeat"]
    cpu = done[done["metric"] == "tool_cpu_time"].set_index(keys)["value"]
    wall = done[done["metric"] == "wall_time"].set_index(keys)["value"]
    both = pd.concat([cpu.rename("cpu"), wall.rename("wall")], axis=1).dropna()
    both = both[both["wall"] > 0]
    return {
        (str(c), str(h), int(r)): float(v) for (c, h, r), v in (both["cpu"] / both["wall"]).items()
    }
