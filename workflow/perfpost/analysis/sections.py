"""The pieces of a post and its notebook, each from the tidy table, the cells' records and
the clusters' state: the results and every-run tables, the hosts' environments, the systems
under test, the commands as perfpost ran them, the logs' tails, precision and resources.
Every number comes from the tables; nothing here re-reads formatted text."""

from __future__ import annotations

import math
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from perfpost import paths, records
from perfpost.analysis import commands, precision, resources, stats
from perfpost.instrument import load
from perfpost.units import (
    format_seconds,
    format_value,
    metric_label,
    rate_scale,
    seconds_scale,
    sig,
)

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
    command, progress = None, False
    for row in cell_rows.itertuples(index=False):
        rec = records.read_record(row.record)
        command = (rec.get("background") or {}).get("command")
        progress = (rec.get("background") or {}).get("measured_by") == "progress"
        if command:
            break
    rates = tidy_df[(tidy_df["status"] == records.DONE) & (tidy_df["metric"] == "background.rate")]
    per_cell = [
        (str(cell), float(v.median()), len(v))
        for cell, v in rates.groupby("cell", sort=False)["value"]
    ]
    target = raw.get("rate")
    # Bytes a second from its I/O counters, or operations a second from its progress lines.
    unit = str(rates["unit"].iloc[0]) if len(rates) else "B/s"
    return {
        "tool": raw.get("tool"),
        "command": command,
        "progress": progress,
        "lead": raw.get("lead", 1),
        "tolerance": f"{float(raw.get('tolerance', load.TOLERANCE)):.0%}",
        "target": format_value(load.parse_rate(target, "background.rate"), "B/s")
        if target is not None
        else None,
        "cells": [
            f"`{c}` {format_value(m, unit)} (median of {n} run{'s' if n != 1 else ''})"
            for c, m, n in per_cell
        ],
        "low": format_value(float(rates["value"].min()), unit) if len(rates) else None,
        "high": format_value(float(rates["value"].max()), unit) if len(rates) else None,
    }


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
