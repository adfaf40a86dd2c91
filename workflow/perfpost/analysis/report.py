"""The post: a blog-ready markdown page per experiment, rendered with jinja2.

It has what the reference posts have: how the test was run (from the config), the exact
commands, the environment of every host, a results table, the figures, the failed cells with
their reasons, the tail of every log, and provenance. Every number comes from the tidy table;
nothing here re-reads formatted text.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import math
import re
import subprocess
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jinja2
import pandas as pd

from perfpost import __version__, paths, records
from perfpost import tools as adapters
from perfpost.analysis import (
    commands,
    compare,
    instrumented,
    narrow,
    precision,
    profiles,
    resources,
    runorder,
    stats,
    steady,
    validity,
)
from perfpost.instrument import load
from perfpost.records import write_text_atomic
from perfpost.units import (
    format_bytes,
    format_seconds,
    format_value,
    metric_label,
    rate_scale,
    seconds_scale,
    sig,
)

TEMPLATES = Path(__file__).parent / "templates"
LOG_TAIL_LINES = 4
DISPLAY_UNITS = {"1/s": "ops/s", "count": "", "B/s": "B/s", "vcore*s": "", "B*s": ""}


def git_revision() -> str | None:
    """The perfpost checkout's commit (with ``-dirty`` when it has local changes)."""
    root = Path(__file__).resolve().parents[3]  # workflow/perfpost/analysis/report.py
    try:
        rev = subprocess.run(
            ["git", "-C", str(root), "describe", "--always", "--dirty", "--abbrev=12"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return rev.stdout.strip() or None


def results_table(
    summary: pd.DataFrame, axes: list[str], hosts: list[str], metrics: Sequence[str]
) -> dict[str, Any]:
    """Header and rows for the results table: per cell (and host when there are several)."""
    by = [*axes, "host"] if len(hosts) > 1 else list(axes)
    present = [m for m in metrics if m in set(summary["metric"])]
    header = [*by, "n"]
    units: dict[str, tuple[str, float] | None] = {}
    for m in present:
        sub = summary[summary["metric"] == m]
        unit = str(sub["unit"].iloc[0])
        units[m] = rate_scale(sub["median"].tolist()) if unit == "B/s" else None
        shown = (
            units[m][0]
            if units[m]
            else ("" if unit in ("B", "s") else DISPLAY_UNITS.get(unit, unit))
        )
        header.append(f"{metric_label(m)} median" + (f" ({shown})" if shown else ""))
        if m == present[0]:
            header += ["min .. max", "CV"]
    rows = []
    shaky = []  # the cells marked (!), named in the summary's "read with care" line
    # One pass over the summary, then lookups: a mask per row and metric was quadratic
    # (4 s for a 1,000-cell matrix).
    cells: dict[tuple[Any, ...], dict[str, dict[str, Any]]] = {}
    for rec in summary.to_dict("records"):
        cells.setdefault(tuple(rec[c] for c in by), {})[rec["metric"]] = rec
    keys = summary[by].drop_duplicates().itertuples(index=False) if by else [()]
    for key in keys:
        key = tuple(key)
        got = cells.get(key, {})
        row = [str(v) for v in key]
        first = got.get(present[0]) if present else None
        row.append(str(int(first["n"])) if first is not None else "0")
        for m in present:
            s = got.get(m)
            if s is None:
                row.append("n/a")
                if m == present[0]:
                    row += ["", ""]
                continue
            row.append(format_value(s["median"], s["unit"], units[m], cell=True))
            if m == present[0]:
                row.append(
                    f"{format_value(s['min'], s['unit'], units[m], cell=True)} .. "
                    f"{format_value(s['max'], s['unit'], units[m], cell=True)}"
                )
                # CV needs two runs (summarize leaves it NaN with one): n/a, never 0.0%.
                cv = s["cv"]
                if cv is None or math.isnan(cv):
                    row.append("n/a")
                elif cv > stats.CV_WARN:
                    row.append(f"{cv:.1%} (!)")
                    name = ", ".join(f"{a}={v}" for a, v in zip(by, key, strict=True))
                    shaky.append(f"{name or 'all runs'} (CV {cv:.1%})")
                else:
                    row.append(f"{cv:.1%}")
        rows.append(row)
    return {
        "header": header,
        "rows": rows,
        "shaky": shaky,
        "cv_metric": metric_label(present[0]).lower() if present else "",
    }


def run_table(
    tidy_df: pd.DataFrame,
    metrics: Sequence[str],
    cells: pd.DataFrame | None = None,
    part: str | None = None,
) -> dict[str, Any]:
    """Every finished run on its own row, as the onefile post's table: test, rate, ...;
    with ``cells``, each run's job id and status too (the teragen post's application id,
    state and final status); with ``part`` (a fio job file's `job` or `group`), a row per
    run and part."""
    done = tidy_df[tidy_df["status"] == records.DONE]
    done = done[done["metric"].isin(metrics)]
    if done.empty:
        return {"header": [], "rows": []}
    parts = [part] if part and part in done.columns else []
    wide = done.pivot_table(
        index=["cell", "host", "repeat", *parts],
        columns="metric",
        values="value",
        aggfunc="first",
        sort=False,
    ).reset_index()
    units = dict(zip(done["metric"], done["unit"], strict=False))
    present = [m for m in metrics if m in wide.columns]
    # Times and byte rates read in one unit per column (700 us, not 0.001 s; 336 MB/s, not
    # 336,040,473 B/s): the column's own scale.
    scales = {m: seconds_scale(list(wide[m])) for m in present if units[m] == "s"}
    scales |= {m: rate_scale(list(wide[m])) for m in present if units[m] == "B/s"}
    shown = {
        m: scales[m][0] if m in scales else DISPLAY_UNITS.get(units[m], units[m]) for m in present
    }
    header = [
        "test",
        *parts,
        "host",
        "repeat",
        *(f"{metric_label(m)}" + (f" ({shown[m]})" if shown[m] else "") for m in present),
    ]
    jobs: dict[tuple[str, str, int], tuple[str, str]] = {}
    if cells is not None and cells["job_id"].notna().any():
        header[3:3] = ["job", "status"]
        for c in cells[cells["status"] == records.DONE].itertuples(index=False):
            jobs[(c.cell, c.host, int(c.repeat))] = (str(c.job_id), str(c.job_status))
    rows = []
    # Records, not itertuples: a metric's name may hold a dot or a dash (chunk-write.mean),
    # which named tuples rename.
    for d in wide.to_dict("records"):
        job = jobs.get((d["cell"], d["host"], int(d["repeat"])))
        rows.append(
            [
                f"`{d['cell']}`",
                *(str(d[x]) for x in parts),
                d["host"],
                str(d["repeat"]),
                *([f"`{job[0]}`", job[1]] if jobs else []),
                *(sig(d[m] / scales[m][1], 4) if m in scales else sig(d[m], 4) for m in present),
            ]
        )
    return {"header": header, "rows": rows}


def _host_env(env: dict[str, Any]) -> dict[str, Any]:
    if env.get("error"):
        return {"hostname": None, "error": env["error"]}
    cpu = env.get("cpu", {})
    topo = []
    if "sockets" in cpu:
        topo.append(f"{cpu['sockets']} socket(s)")
    if "cores" in cpu:
        topo.append(f"{cpu['cores']} cores")
    if "threads" in cpu:
        topo.append(f"{cpu['threads']} threads")
    disks = [
        f"{d['name']}: {d['model']}, {format_bytes(d['size_bytes'])}, "
        f"{'rotational' if d['rotational'] else 'non-rotational'}"
        for d in env.get("disks", [])
    ]
    return {
        "hostname": env.get("hostname"),
        "vendor": env.get("vendor"),
        "cpu": f"{cpu.get('model', 'unknown')} ({', '.join(topo)})"
        if topo
        else cpu.get("model", "unknown"),
        "memory": f"{env['memory_bytes'] / 2**30:.1f} GiB"
        if env.get("memory_bytes")
        else "unknown",
        "disks": disks or ["none reported"],
        "kernel": env.get("kernel") or "unknown",
        "os": env.get("os") or "unknown",
        "sysctl": env.get("sysctl", {}),
        "java": env.get("java"),
        "ozone": env.get("ozone_version"),
        "hadoop": env.get("hadoop_version"),
        "error": None,
    }


def _env_groups(envs: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Hosts with the same environment (all but the hostname) share one block in the post."""
    groups: list[dict[str, Any]] = []
    for host, raw in envs.items():
        env = _host_env(raw)
        key = json.dumps(
            {k: v for k, v in env.items() if k != "hostname"}, sort_keys=True, default=str
        )
        group = next((g for g in groups if g["key"] == key and not env["error"]), None)
        if group is None:
            groups.append({"key": key, "hosts": [host], "hostnames": [env["hostname"]], **env})
        else:
            group["hosts"].append(host)
            group["hostnames"].append(env["hostname"])
    for g in groups:
        shown = [n for h, n in zip(g["hosts"], g["hostnames"], strict=True) if n and n != h]
        g["title"] = ", ".join(g["hosts"]) + (f" (hostname {', '.join(shown)})" if shown else "")
    return groups


def _env_differences(envs: dict[str, dict[str, Any]]) -> list[str]:
    if len(envs) < 2:
        return []
    diffs = []
    envs = {h: e for h, e in envs.items() if not e.get("error")}
    if len(envs) < 2:
        return []
    for key in ("vendor", "cpu", "memory", "disks", "kernel", "os", "sysctl", "java"):
        values = {h: str(e.get(key)) for h, e in envs.items()}
        if len(set(values.values())) > 1:
            diffs.append(key)
    return diffs


_PLACEMENT = re.compile(
    r"(address|\.port|bind\.host|bind-host|hostname|\.names|\.dirs?|dir\.\w+|tmp\.dir|"
    r"staging-dir|local-dirs|log-dirs|classpath|fs\.defaultFS)$"
)


def _split_changed(
    changed: list[dict[str, Any]], configured: set[str]
) -> tuple[list[dict[str, Any]], int]:
    """The keys that change how the system behaves, and how many of perfpost's own only
    place it (addresses, ports, directories, class paths: in the cluster's state.json). A
    key the config set is always shown: it is what the experiment chose."""
    settings = [k for k in changed if k["key"] in configured or not _PLACEMENT.search(k["key"])]
    return settings, len(changed) - len(settings)


def _role_order(kind: str, roles: dict[str, Any]) -> list[str]:
    """Roles in the order the kind starts them (SCM, datanodes, OM), not alphabetically."""
    from perfpost import clusters

    try:
        order = list(clusters.get(kind).START_ORDER)
    except KeyError:
        order = []
    return [r for r in order if r in roles] + [r for r in roles if r not in order]


# A served run's record path names its experiment: results/<experiment>/cells/...
_SERVED = re.compile(r"(?:^|/)" + re.escape(paths.RESULTS) + r"/([^/]+)/cells/")


def clusters_of(cells: pd.DataFrame, root: Path = Path()) -> list[dict[str, Any]]:
    """The systems under test the cells ran on, one entry per cluster start: its
    configuration, hosts per role, JVM options, version output and the keys that differ
    from the release's defaults, from the state perfpost kept of it."""
    if "clusters" not in cells:
        return []
    out = []
    seen: dict[str, list[str]] = {}
    for r in cells.itertuples(index=False):
        for ref in str(r.clusters or "").split():
            if ref == "nan":
                continue
            seen.setdefault(ref, [])
            if r.cell not in seen[ref]:
                seen[ref].append(r.cell)
    for ref, cell_ids in seen.items():
        ident, _, start = ref.partition("/")
        sdir = root / paths.fill(paths.CLUSTER_DIR, cluster=ident) / start
        try:
            state = json.loads((sdir / "state.json").read_text())
        except (OSError, ValueError):
            out.append({"ref": ref, "error": f"no state in {sdir}", "cells": cell_ids})
            continue
        dep = state["deployment"]
        spec = dep["spec"]
        # Runs of other experiments on the same start (one configuration serves them all).
        mine = set(cells["experiment"]) if "experiment" in cells else set()
        others = Counter(
            m.group(1)
            for p in state.get("served", [])
            if (m := _SERVED.search(str(p))) and m.group(1) not in mine
        )
        configured = {k for keys in spec.get("site", {}).values() for k in keys}
        settings, placement = _split_changed(dep.get("changed", []), configured)
        out.append(
            {
                "ref": ref,
                "name": spec["name"],
                "kind": spec["kind"],
                "id": ident,
                "cells": cell_ids,
                "others": [{"experiment": e, "runs": n} for e, n in sorted(others.items())],
                "roles": {
                    role: ", ".join(spec["roles"][role])
                    for role in _role_order(spec["kind"], spec["roles"])
                },
                "jvm": spec.get("jvm", {}),
                "env": spec.get("env", {}),
                "version": dep.get("version", ""),
                "build": spec.get("build"),
                "changed": settings,
                "placement": placement,
                "dir": spec.get("dir", ""),
                "notes": dep.get("notes", []),
                "state": str(sdir / "state.json"),
                "started": state.get("started"),
                "ready": state.get("ready"),
                "logs": str(sdir / "logs"),
                "status": state.get("status"),
                "delivered": dep.get("delivered", []),
            }
        )
    return out


def deliveries(cells: pd.DataFrame, clusters: list[dict[str, Any]]) -> dict[str, list[str]]:
    """What perfpost shipped to hosts (run.deliver), for the method: per host and install,
    the bytes, files and seconds it took; and which hosts had what they needed already."""
    shipped: dict[tuple[str, str], dict[str, Any]] = {}
    had: set[tuple[str, str]] = set()
    entries: list[dict[str, Any]] = [d for c in clusters for d in c.get("delivered", [])]
    if "delivered" in cells:
        for text in cells["delivered"].dropna():
            with contextlib.suppress(ValueError, TypeError):
                entries += json.loads(text)
    for d in entries:
        k = (str(d["host"]), str(d["key"]))
        if d.get("files"):
            shipped.setdefault(k, d)
        else:
            had.add(k)
    return {
        "shipped": [
            f"`{key}` to {host} ({d['bytes'] / 1e6:.1f} MB in {d['files']} files, "
            f"{d['seconds']:.1f} s)"
            for (host, key), d in sorted(shipped.items())
        ],
        "had": [f"`{key}` on {host}" for host, key in sorted(had - set(shipped))],
    }


def overlap(cell_rows: pd.DataFrame) -> dict[str, Any]:
    """How many runs measured at once on one host, from the records' own start and end
    times: the post states what happened, not what was configured."""
    most, where = 0, []
    timed = cell_rows.dropna(subset=["start", "end"])
    for host, rows in timed.groupby("host", sort=True):
        events = []
        for r in rows.itertuples(index=False):
            t0 = pd.Timestamp(r.start).timestamp()
            t1 = pd.Timestamp(r.end).timestamp()
            events += [(t0, 1), (t1, -1)]  # an end sorts before a start at the same time
        level = peak = 0
        for _, step in sorted(events, key=lambda e: (e[0], e[1])):
            level += step
            peak = max(peak, level)
        if peak > most:
            most, where = peak, [str(host)]
        elif peak == most:
            where.append(str(host))
    return {"most": most, "where": where if most > 1 else []}


def _log_tails(cell_rows: pd.DataFrame) -> list[dict[str, Any]]:
    tails = []
    for row in cell_rows.itertuples(index=False):
        record_path = Path(row.record)
        rec = records.read_record(record_path)
        logs = []
        for rel in rec.get("logs", []):
            if rel.endswith(".json"):
                continue  # a service's record (YARN's): data in the tables, not a log
            p = record_path.parent / rel
            text = p.read_text(errors="replace") if p.exists() else ""
            lines = text.replace("\r", "\n").strip().splitlines()[-LOG_TAIL_LINES:]
            logs.append({"name": Path(rel).name, "tail": "\n".join(lines)})
        tails.append(
            {
                "cell": row.cell,
                "host": row.host,
                "repeat": row.repeat,
                "attempt": row.attempt,
                "status": row.status,
                "logs": logs,
                "path": str(record_path.parent),
            }
        )
    return tails


def _commands(cell_rows: pd.DataFrame, experiment: dict[str, Any]) -> list[dict[str, Any]]:
    """One runnable listing per cell, from its first repeat's record."""
    out = []
    seen = set()
    for row in cell_rows.sort_values(["repeat"]).itertuples(index=False):
        if row.cell in seen:
            continue
        seen.add(row.cell)
        rec = records.read_record(row.record)
        workdir = rec.get("workdir")
        lines = []
        if workdir:
            parent, _, _ = workdir.rpartition("/")
            lines.append(f"WORK=$(mktemp -d {parent}/perfpost-XXXXXXXXXXXX)")
        for name in rec.get("files", []):  # as it ran, from the record (a fio job file)
            kept = Path(row.record).parent / paths.RAW / name
            text = kept.read_text(errors="replace") if kept.is_file() else None
            if text is None:
                lines.append(f"# {name}: not kept with the record")
                continue
            # An unquoted here-document, so that $WORK is this run's; the file's own $, ` and
            # \ are escaped, reaching fio as they were.
            for c in "\\$`":
                text = text.replace(c, "\\" + c)
            text = text.replace(workdir, "$WORK") if workdir else text
            end = "EOF" if "\nEOF\n" not in f"\n{text}\n" else "PERFPOST_EOF"
            lines += [f'cat > "$WORK/{name}" <<{end}', *text.rstrip("\n").split("\n"), end]
        lines += commands.readable(rec.get("prepare_commands", []), workdir)
        if rec.get("params", {}).get("drop_cache"):
            lines.append("sync; echo 3 > /proc/sys/vm/drop_caches")
        lines += [
            f"{b} &   # background writer, stopped after the measurement"
            for b in commands.readable(rec.get("background_commands", []), workdir)
        ]
        lines += commands.readable((rec.get("command") or "").splitlines(), workdir)
        if "sync" in experiment["after"]:
            lines.append("time sync")
        if workdir:
            lines.append('rm -rf "$WORK"')
        out.append({"cell": row.cell, "lines": lines})
    return out


def background_load(
    experiment: dict[str, Any], tidy_df: pd.DataFrame, cell_rows: pd.DataFrame
) -> dict[str, Any] | None:
    """What the experiment's background load did over the measured steps: its command (from
    a record), its target, and the rate each run measured (medians per cell, the range)."""
    raw = experiment.get("background")
    if not raw:
        return None
    command = None
    for row in cell_rows.itertuples(index=False):
        rec = records.read_record(row.record)
        command = (rec.get("background") or {}).get("command")
        if command:
            break
    rates = tidy_df[(tidy_df["status"] == records.DONE) & (tidy_df["metric"] == "background.rate")]
    per_cell = [
        (str(cell), float(v.median()), len(v))
        for cell, v in rates.groupby("cell", sort=False)["value"]
    ]
    target = raw.get("rate")
    return {
        "tool": raw.get("tool"),
        "command": command,
        "lead": raw.get("lead", 1),
        "target": format_value(load.parse_rate(target, "background.rate"), "B/s")
        if target is not None
        else None,
        "cells": [
            f"`{c}` {format_value(m, 'B/s')} (median of {n} run{'s' if n != 1 else ''})"
            for c, m, n in per_cell
        ],
        "low": format_value(float(rates["value"].min()), "B/s") if len(rates) else None,
        "high": format_value(float(rates["value"].max()), "B/s") if len(rates) else None,
    }


# comparisons.csv: the comparisons' own record columns, in their order.
COMPARISON_COLUMNS = compare.RECORD_COLUMNS


def _outliers(tidy_df: pd.DataFrame, by: list[str], metric: str) -> list[str]:
    """Runs outside Tukey's fences within their cell: named in the post, kept in every
    statistic (a slow run is a result too; the reader decides)."""
    done = tidy_df[(tidy_df["status"] == records.DONE) & (tidy_df["metric"] == metric)]
    out = []
    groups = done.groupby(by, sort=False, dropna=False) if by else [((), done)]
    for _, sub in groups:
        if len(sub) < stats.MIN_TUKEY:
            continue  # too few runs to have fences; cheap to skip at 1,000 cells
        for flag, row in zip(
            stats.tukey_outliers(sub["value"].tolist()), sub.itertuples(index=False), strict=True
        ):
            if flag:
                out.append(
                    f"`{row.cell}` on {row.host}, repeat {row.repeat}: "
                    f"{format_value(row.value, row.unit)} ({metric_label(metric).lower()})"
                )
    return out


def _summary(summary: pd.DataFrame, axes: list[str], metric: str) -> list[str]:
    sub = summary[summary["metric"] == metric]
    if sub.empty:
        return []
    unit = str(sub["unit"].iloc[0])
    label = metric_label(metric).lower()
    if not axes:
        r = sub.iloc[0]
        scale = rate_scale([r["median"]]) if unit == "B/s" else None
        return [
            f"Median {label}: {format_value(r['median'], unit, scale)} over {int(r['n'])} runs."
        ]
    med = sub.groupby(axes, sort=False)["median"].median()
    scale = rate_scale(med.tolist()) if unit == "B/s" else None
    hi, lo = med.idxmax(), med.idxmin()

    def name(key: Any) -> str:
        key = key if isinstance(key, tuple) else (key,)
        return ", ".join(f"{a}={v}" for a, v in zip(axes, key, strict=True))

    return [
        f"Highest median {label}: {format_value(med[hi], unit, scale)} ({name(hi)}).",
        f"Lowest median {label}: {format_value(med[lo], unit, scale)} ({name(lo)}).",
    ]


def precision_section(tidy_df: pd.DataFrame, experiment: dict[str, Any]) -> dict[str, Any] | None:
    """The post's *Precision* table: per cell and host, the runs it got and how close the
    95% interval came to its median (repeats with a precision target only)."""
    settings = experiment.get("precision")
    if not settings:
        return None
    rows = precision.table(tidy_df, settings, list(experiment["axes"]))
    hosts = len(experiment["hosts"]) > 1
    body = []
    for r in rows:
        interval = (
            f"{format_value(r['low'], r['unit'])} .. {format_value(r['high'], r['unit'])}"
            if r["low"] is not None
            else "none (fewer than 6 finished runs)"
        )
        body.append(
            [
                r["cell"],
                *([r["host"]] if hosts else []),
                str(r["runs"]),
                format_value(r["median"], r["unit"]),
                interval,
                "n/a" if r["precision"] is None else f"+-{r['precision']:.1%}",
                r["verdict"],
            ]
        )
    header = ["cell", *(["host"] if hosts else []), "runs", "median", "95% interval"]
    return {
        "header": [*header, "precision", "target"],
        "rows": body,
        "metric": metric_label(settings["metric"]).lower(),
        "settings": settings,
        "short": [
            r["cell"] + (f" on {r['host']}" if hosts else "") for r in rows if not r["reached"]
        ],
        "all_reached": all(r["reached"] for r in rows),
    }


def resource_section(
    tidy_df: pd.DataFrame,
    window: pd.DataFrame | None,
    axes: list[str],
    figures: list[dict[str, Any]],
    csv: Path | None,
) -> dict[str, Any] | None:
    """The Resources section: what bound each cell, the table of its hosts, the figures."""
    if window is None or window.empty:
        return None
    profiles = resources.cell_profiles(
        window, axes, resources.tool_cores(tidy_df), resources.tool_gc(tidy_df)
    )
    if not profiles:
        return None
    done = window[window["status"] == records.DONE]
    nodes = sorted(set(done["node"]))
    intervals = sorted(
        set(done[(done["resource"] == "window") & (done["metric"] == "interval")]["value"])
    )
    bound = [c for c in profiles if c["bound"]["what"]]
    return {
        "cells": profiles,
        "table": resources.table(profiles),
        "daemons": resources.daemon_table(profiles),
        "nodes": nodes,
        "interval": " or ".join(format_seconds(v) for v in intervals) or "interval",
        "n_bound": len(bound),
        "kinds": sorted({w for c in bound for w, _ in c["bound"]["what"]}),
        "figures": [f for f in figures if f.get("section") == "resources"],
        "csv": csv.name if csv is not None else None,
    }


def render(
    experiment: dict[str, Any],
    tidy_df: pd.DataFrame,
    cells: pd.DataFrame,
    envs: dict[str, dict[str, Any]],
    figures: list[dict[str, str]],
    out: Path,
    data_csv: Path,
    now: dt.datetime | None = None,
    comparisons_csv: Path | None = None,
    steady_df: pd.DataFrame | None = None,
    steady_csv: Path | None = None,
    resources_df: pd.DataFrame | None = None,
    resources_csv: Path | None = None,
    profile_df: pd.DataFrame | None = None,
) -> str:
    """Write the post to ``out`` (and the tidy data beside it); returns the markdown.
    ``steady_df``: the steady-state table (:mod:`perfpost.analysis.steady`), where the tool
    reported a series; copied to ``steady_csv`` (default: beside ``data_csv``), so the
    bundle links to its own copy."""
    adapter = adapters.get(experiment["tool"])
    axes = list(experiment["axes"])
    hosts = list(experiment["hosts"])
    by = [*axes, "host"] if len(hosts) > 1 else list(axes)
    summary = stats.summarize(tidy_df, by)
    plot_metrics = [m for m in adapter.PLOT_METRICS if m in set(summary["metric"])]
    table = results_table(summary, axes, hosts, adapter.TABLE_METRICS)
    comparisons = compare.experiment_comparisons(tidy_df, experiment, adapter.PLOT_METRICS)
    outliers = _outliers(tidy_df, by, plot_metrics[0]) if plot_metrics else []
    failed = cells[cells["status"] != records.DONE]
    failed_list = [
        {
            "cell": r.cell,
            "host": r.host,
            "repeat": r.repeat,
            "attempt": r.attempt,
            "status": r.status,
            "reason": r.reason,
        }
        for r in failed.itertuples(index=False)
    ]
    starts = pd.to_datetime(cells["start"].dropna(), utc=True, format="ISO8601")
    ends = pd.to_datetime(cells["end"].dropna(), utc=True, format="ISO8601")
    now = now or dt.datetime.now(dt.UTC)
    # Written whenever there is a table or a place was asked for (the workflow declares it):
    # a tool without series gets the header alone.
    write_steady = steady_df is not None or steady_csv is not None
    steady_csv = steady_csv or data_csv.with_name(Path(paths.POST_STEADY).name)
    versions = sorted({v for v in cells["tool_version"].dropna()})
    cluster_starts = clusters_of(cells)
    context = {
        "exp": experiment,
        # A full time with its offset, not a day: Hugo skips a page dated in the future, and
        # a bare day is midnight in the site's time zone, hours ahead of UTC west of it.
        "date": (now if now.tzinfo else now.replace(tzinfo=dt.UTC)).isoformat(timespec="seconds"),
        "axes": axes,
        "axis_values": {a: list(experiment["axes"][a]) for a in axes},
        # The matrix the cells came from: not a run's parts (a job file's jobs or groups).
        "matrix_axes": [a for a in axes if a != experiment.get("parts_axis")],
        "n_cells": cells["cell"].nunique(),
        "n_runs": len(cells),
        "n_done": int((cells["status"] == records.DONE).sum()),
        "overlap": overlap(cells),
        "run_order": runorder.sentence(experiment, cells, cluster_starts),
        "summary": _summary(summary, axes, plot_metrics[0]) if plot_metrics else [],
        "table": table,
        "runs": run_table(
            tidy_df, getattr(adapter, "RUN_TABLE", ()), cells, experiment.get("parts_axis")
        ),
        "comparisons": [compare.sentence(r) for r in comparisons],
        "comparison_table": {
            "header": compare.TABLE_HEADER,
            "rows": [compare.table_row(r) for r in comparisons],
        },
        "outliers": outliers,
        "instrumented": instrumented.section(tidy_df, experiment),
        "precision": precision_section(tidy_df, experiment),
        "validity": validity.checks(
            tidy_df, cells, experiment, plot_metrics[0] if plot_metrics else None, resources_df
        ),
        "resources": resource_section(tidy_df, resources_df, axes, figures, resources_csv),
        "profiles": profiles.section(profile_df),
        "steady": steady.section(steady_df),
        "steady_csv": steady_csv.name,
        "figures": [
            {
                **f,
                "caption": f"{experiment['title']}: "
                + (f["comparison"] if "comparison" in f else metric_label(f["metric"])),
            }
            for f in figures
            if f.get("section") != "resources"
        ],
        "failed": failed_list,
        "commands": _commands(cells, experiment),
        "envs": _env_groups(envs),
        "clusters": cluster_starts,
        "deliveries": deliveries(cells, cluster_starts),
        "background": background_load(experiment, tidy_df, cells),
        "env_diffs": _env_differences({h: _host_env(e) for h, e in envs.items()}),
        "tails": _log_tails(cells),
        "tool_versions": versions,
        "provenance": {
            "perfpost": __version__,
            "git": git_revision() or "unknown",
            "config_hash": experiment.get("config_hash", ""),
            "generated": now.isoformat(timespec="seconds"),
            "first_start": starts.min().isoformat() if len(starts) else "n/a",
            "last_end": ends.max().isoformat() if len(ends) else "n/a",
            "duration": format_seconds((ends.max() - starts.min()).total_seconds())
            if len(starts) and len(ends)
            else "n/a",
        },
        "data_csv": data_csv.name,
        "comparisons_csv": comparisons_csv.name if comparisons_csv else None,
    }
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["yaml_str"] = lambda s: '"' + str(s).replace("\\", "\\\\").replace('"', '\\"') + '"'
    # Every table fits a blog's column: a wide one continues in the tables after it.
    text = narrow.fit(env.get_template("post.md.j2").render(**context))
    out.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(data_csv, tidy_df.to_csv(index=False))
    if write_steady:
        steady.write(steady_df if steady_df is not None else steady.table(None), steady_csv)
    if resources_csv is not None:
        window = resources_df if resources_df is not None else pd.DataFrame()
        write_text_atomic(resources_csv, window.to_csv(index=False))
    if comparisons_csv is not None:
        table = pd.DataFrame(compare.as_records(comparisons), columns=COMPARISON_COLUMNS)
        write_text_atomic(comparisons_csv, table.to_csv(index=False))
    write_text_atomic(out, text)
    return text
