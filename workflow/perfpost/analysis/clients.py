"""Several clients in one run (``clients: N``), as the post says it: how the run's number was
made of the clients' (their sum over the window all were measuring, or over each one's own
run), how closely they started, and a table of each client's number beside the sum and the
spread between them, so a reader sees whether one client carried the others.

It reads the runs' records (:mod:`perfpost.run.cell.clients` wrote what each client did).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from perfpost import records
from perfpost.units import format_seconds, format_value, metric_label, rate_scale

# A post lists every run's clients up to this many rows; the notebook has them all.
POST_ROWS = 12


def _records(cells: pd.DataFrame) -> list[dict[str, Any]]:
    out = []
    for row in cells.itertuples(index=False):
        if row.status != records.DONE or not isinstance(row.record, str):
            continue
        try:
            rec = records.read_record(row.record)
        except (OSError, ValueError):
            continue
        if (rec.get("clients") or {}).get("count", 1) > 1:
            out.append(rec)
    return out


def _value(client: Mapping[str, Any], metric: str, window: Mapping[str, Any] | None) -> float:
    """A client's share of the run's ``metric``: its rate over the common window where the
    run's rate is summed over one, else its own number."""
    if window and window.get("metric") == metric and "window_rate" in client:
        return float(client["window_rate"])
    for m in client.get("metrics") or []:
        if m["name"] == metric:
            return float(m["value"])
    return math.nan


def section(
    cells: pd.DataFrame, metric: str | None, names: Mapping[str, str]
) -> dict[str, Any] | None:
    """The post's words and table for the runs with several clients (None when none had)."""
    recs = _records(cells)
    if not recs or not metric:
        return None
    ns = sorted({int(r["clients"]["count"]) for r in recs})
    windowed = [r for r in recs if (r["clients"].get("window") or {}).get("metric") == metric]
    spreads = [r["clients"]["overlap"]["start_spread"] for r in recs if r["clients"].get("overlap")]
    label = metric_label(metric).lower()
    lines = []
    howmany = " or ".join(str(n) for n in ns)
    lines.append(
        f"In the runs with several clients ({howmany} per host), one shell started them all "
        "at the same moment"
        + (f" (their starts within {format_seconds(max(spreads))})" if spreads else "")
        + ", each in a scratch directory of its own with its own log"
    )
    if windowed:
        secs = [r["clients"]["window"]["seconds"] for r in windowed]
        long = (
            f"{format_seconds(min(secs))} to {format_seconds(max(secs))}"
            if len(secs) > 1
            else format_seconds(secs[0])
        )
        lines.append(
            f"A run's {label} is the clients' sum over the window all of them were measuring, "
            "from the latest start of a client's measured phase to the earliest end of one "
            f"(each client's count at both ends read from its own progress lines), {long} long"
        )
    own = [r for r in recs if r not in windowed]
    if own:
        shares = [
            r["clients"]["overlap"]["all_running"] / r["clients"]["overlap"]["longest"]
            for r in own
            if (r["clients"].get("overlap") or {}).get("longest")
        ]
        lines.append(
            ("Where a run had no such window, its " if windowed else "A run's ")
            + f"{label} is the sum of each client's own, each over its own run (the tool "
            "reports no progress over time to find a window all were measuring in)"
            + (
                f"; all of a run's clients were running together for at least "
                f"{min(shares):.0%} of its slowest one's time"
                if shares
                else ""
            )
        )
    lines.append("A run's times are its slowest client's, its counts and bytes the clients' sum")
    n_max = max(ns)
    units = {
        m["unit"]
        for r in recs
        for c in r["clients"]["each"]
        for m in c.get("metrics") or []
        if m["name"] == metric
    }
    unit = next(iter(units), "")
    values = [
        _value(c, metric, r["clients"].get("window")) for r in recs for c in r["clients"]["each"]
    ]
    scale = rate_scale([v for v in values if math.isfinite(v)]) if unit == "B/s" else None
    shown = scale[0] if scale else {"1/s": "ops/s", "s": "s"}.get(unit, unit)
    header = [
        "cell",
        "run",
        *(f"client {i}" for i in range(1, n_max + 1)),
        f"sum ({shown})" if unit != "s" else "slowest (s)",
        "spread",
    ]
    rows = []
    for r in recs:
        each = r["clients"]["each"]
        window = r["clients"].get("window")
        vals = [_value(c, metric, window) for c in each]
        run_value = next((m["value"] for m in r["metrics"] if m["name"] == metric), math.nan)
        finite = [v for v in vals if math.isfinite(v)]
        mean = sum(finite) / len(finite) if finite else math.nan
        spread = f"{(max(finite) - min(finite)) / mean:.0%}" if finite and mean > 0 else "n/a"

        def fmt(v: float) -> str:
            return format_value(v, unit, scale, cell=True) if math.isfinite(v) else "n/a"

        rows.append(
            [
                f"`{names.get(r['cell'], r['cell'])}`",
                str(r["repeat"]),
                *(fmt(v) for v in vals),
                *([""] * (n_max - len(vals))),
                fmt(float(run_value)),
                spread,
            ]
        )
    return {
        "lines": lines,
        "header": header,
        "rows": rows,
        "post_rows": rows[:POST_ROWS],
        "more": max(len(rows) - POST_ROWS, 0),
        "metric": label,
        "spread_note": "spread: (largest - smallest) / mean of the clients' shares",
    }
