"""A run's metrics by its parts: each job, or each reporting group, of a fio job file.

A tool that runs several jobs in one run reports each one's metrics under a prefix
(``job.<name>.<k>.iops``, ``group.<name>.iops``). With ``plot: {by: job}`` the figures, the
results table and the comparisons take those rows instead of the run's totals: the prefix
becomes a column (``job``), and the metric its own name again (``iops``), so every part is
drawn, tabled and compared as the cells of an axis are.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import pandas as pd

from perfpost.columns import FIXED_COLUMNS

_JOB = re.compile(r"^job\.([^.]+)\.(\d+)\.(.+)$")
_GROUP = re.compile(r"^group\.([^.]+)\.(.+)$")


def _split(metric: str, by: str) -> tuple[str, int, str] | None:
    if by == "job":
        m = _JOB.match(metric)
        return (m.group(1), int(m.group(2)), m.group(3)) if m else None
    m = _GROUP.match(metric)
    return (m.group(1), 1, m.group(2)) if m else None


def view(experiment: dict[str, Any], df: pd.DataFrame) -> tuple[dict[str, Any], pd.DataFrame]:
    """The experiment and its tidy rows by ``plot.by``; both as given without it. A job name
    that several jobs share (fio's ``numjobs`` clones) is told apart as ``name#k``."""
    by = (experiment.get("plot") or {}).get("by")
    if not by:
        return experiment, df
    found = [(i, _split(str(m), by)) for i, m in zip(df.index, df["metric"], strict=True)]
    keep = [(i, got) for i, got in found if got is not None]
    counts: dict[str, set[int]] = {}
    for _, (name, k, _) in keep:
        counts.setdefault(name, set()).add(k)
    labels = [name if len(counts[name]) == 1 else f"{name}#{k}" for _, (name, k, _) in keep]
    out = df.loc[[i for i, _ in keep]].copy()
    out["metric"] = [rest for _, (_, _, rest) in keep]
    axes = list(experiment["axes"])
    at = len(FIXED_COLUMNS) + len([a for a in axes if a in out.columns])
    out.insert(at, by, labels)
    out = out.reset_index(drop=True)
    exp = copy.deepcopy(experiment)
    exp["axes"] = {**exp["axes"], by: list(dict.fromkeys(labels))}
    exp["parts_axis"] = by  # an axis of the view, not of the matrix
    return exp, out
