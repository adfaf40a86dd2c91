"""Enough runs, decided by the data: repeats with a precision target.

After each round of a cell's runs on a host, :func:`decide` looks at the median of the
finished runs' metric and its distribution-free 95% interval (:func:`stats.median_interval`):
the cell gets more runs until both ends of the interval lie within the target of the median,
or it has run ``max`` times, or its newest round finished no run (more runs of a cell that
fails or is skipped would say nothing new). The decision is a file, so an interrupted run
resumes at the round it reached; the post computes the same interval again from the tidy
table, the data every other number of the post comes from.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from perfpost.analysis import stats
from perfpost.analysis.tidy import results

ROUND_SCHEMA_VERSION = 1
REACHED, AT_MAX, NO_FINISHED, MORE = "reached", "max", "no finished run", "more runs"


def _value(record: Mapping[str, Any], metric: str) -> tuple[float, str] | None:
    if record.get("status") != "done":
        return None
    for m in record.get("metrics", []):
        if m["name"] == metric:
            return float(m["value"]), str(m["unit"])
    return None


def verdict(precision: float | None, runs: int, settings: Mapping[str, Any]) -> str:
    """Why a cell's runs stop (or do not): the target reached, ``max`` runs, or more."""
    if precision is not None and precision <= settings["precision"]:
        return REACHED
    if runs >= settings["max"]:
        return AT_MAX
    return MORE


def decide(
    records: Sequence[Mapping[str, Any]], settings: Mapping[str, Any], previous: int = 0
) -> dict[str, Any]:
    """Whether a cell whose runs 1..n left ``records`` needs more: one round's decision.

    ``previous`` is how many runs the round before had: when none of the runs after them
    finished with the metric, the cell gets no more."""
    runs = len(records)
    found = [v for v in (_value(r, settings["metric"]) for r in records) if v is not None]
    values = [v for v, _ in found]
    interval = stats.median_interval(values)
    why = verdict(interval.precision, runs, settings)
    if why == MORE and all(_value(r, settings["metric"]) is None for r in records[previous:]):
        why = NO_FINISHED
    more = why == MORE
    return {
        "schema_version": ROUND_SCHEMA_VERSION,
        "runs": runs,
        "finished": len(values),
        "metric": settings["metric"],
        "unit": found[0][1] if found else None,
        "median": interval.median if values else None,
        "low": interval.low,
        "high": interval.high,
        "level": interval.level,
        "precision": interval.precision,
        "target": settings["precision"],
        "more": more,
        "next": min(runs + int(settings["step"]), int(settings["max"])) if more else runs,
        "why": why,
    }


def table(
    tidy_df: pd.DataFrame, settings: Mapping[str, Any], axes: list[str]
) -> list[dict[str, Any]]:
    """Per cell and host, for the post: runs, the median and its interval, the precision
    reached, and whether that meets the target."""
    metric = settings["metric"]
    runs = tidy_df[tidy_df["metric"] == "exit_code"].groupby(["cell", "host"], sort=False).size()
    done = results(tidy_df)
    done = done[done["metric"] == metric]
    out = []
    for (cell, host), n in runs.items():
        rows = done[(done["cell"] == cell) & (done["host"] == host)]
        interval = stats.median_interval(rows["value"].tolist())
        first = tidy_df[tidy_df["cell"] == cell].iloc[0]
        why = verdict(interval.precision, int(n), settings)
        text = {
            REACHED: "reached",
            AT_MAX: f"not reached in {settings['max']} runs (the most allowed)",
            MORE: "not reached (no run finished in its last round)"
            if rows.empty or interval.precision is None
            else "not reached",
        }[why]
        out.append(
            {
                "cell": ", ".join(f"{a}={first[a]}" for a in axes) or cell,
                "host": host,
                "runs": int(n),
                "finished": len(rows),
                "median": interval.median if len(rows) else None,
                "low": interval.low,
                "high": interval.high,
                "unit": str(rows["unit"].iloc[0]) if len(rows) else "",
                "precision": interval.precision,
                "reached": why == REACHED,
                "verdict": text,
            }
        )
    return out
