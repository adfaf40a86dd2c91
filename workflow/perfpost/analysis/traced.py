"""The post's table of what a tracer attached to the daemons counted (an experiment's
``daemon_trace``, :mod:`perfpost.instrument.daemontrace`): the system calls made most, each
cell's median count per run, from the tidy table's ``<role>.<syscall>`` metrics."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

SHOWN = 8  # system calls in the post's table; every one is in the tidy table and the record


def section(
    experiment: Mapping[str, Any], tidy_df: pd.DataFrame, names: Mapping[str, str]
) -> dict[str, Any] | None:
    """Header and rows: one row per system call (the most called first, ``total`` last),
    one column per cell (its median over runs); None without a trace or a count."""
    trace = experiment.get("daemon_trace")
    if not trace:
        return None
    role = trace["role"]
    done = tidy_df[(tidy_df["status"] == "done") & tidy_df["metric"].str.startswith(f"{role}.")]
    done = done[done["unit"] == "count"]
    if done.empty:
        return None
    medians = done.pivot_table(index="metric", columns="cell", values="value", aggfunc="median")
    medians = medians.fillna(0.0)  # a call a cell's strace did not list, it did not make
    cells = [str(c) for c in medians.columns]
    total = f"{role}.total"
    order = medians.drop(index=[total], errors="ignore").max(axis=1).sort_values(ascending=False)
    shown = [*order.index[:SHOWN], *([total] if total in medians.index else [])]
    rows = [
        [f"`{m.removeprefix(role + '.')}`", *(f"{medians.loc[m, c]:,.0f}" for c in medians.columns)]
        for m in shown
    ]
    return {
        "command": trace.get("command", "strace -f -c"),
        "role": role,
        "header": ["system call", *(f"`{names.get(c, c)}`" for c in cells)],
        "rows": rows,
        "more": max(len(order) - SHOWN, 0),
    }
