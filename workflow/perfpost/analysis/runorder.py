"""The order the runs were made in, as the post states it: the plan's (plan.order) and what
``cells.csv`` says happened, each host's runs sorted by their start."""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Mapping
from typing import Any

import pandas as pd

from perfpost.plan import order as plan_order


def made(cells: pd.DataFrame) -> dict[str, list[tuple[str, int]]]:
    """Each host's runs, (cell, repeat), in the order they started; a run retried keeps its
    place in the order of its first attempt."""
    timed = cells.dropna(subset=["start"])
    out: dict[str, list[tuple[str, int]]] = {}
    for host, rows in timed.groupby("host", sort=True):
        rows = rows.assign(t=pd.to_datetime(rows["start"], utc=True, format="ISO8601"))
        first = rows.sort_values("t", kind="stable").drop_duplicates(["cell", "repeat"])
        out[str(host)] = [
            (str(c), int(r)) for c, r in zip(first["cell"], first["repeat"], strict=True)
        ]
    return out


def _switches(seq: list[tuple[str, int]]) -> int:
    return sum(a[0] != b[0] for a, b in itertools.pairwise(seq))


def restart_cost(starts: list[Mapping[str, Any]]) -> str:
    """What the restarts cost: each cluster start's time from start to ready."""
    took = []
    for c in starts:
        try:
            a = pd.Timestamp(c["started"])
            b = pd.Timestamp(c["ready"])
        except (KeyError, TypeError, ValueError):
            continue
        took.append((b - a).total_seconds())
    if not took:
        return ""
    took.sort()
    mid = statistics.median(took)
    spread = (
        f"each {mid:.0f} s"
        if took[0] == took[-1]
        else f"median {mid:.0f} s (from {took[0]:.0f} to {took[-1]:.0f} s)"
    )
    return (
        f" Each restart cost a cluster start: {len(took)} starts, {spread} from start to"
        " ready (state.json's times, to the second), none of it inside a measured step."
    )


def sentence(
    experiment: Mapping[str, Any],
    cells: pd.DataFrame,
    starts: list[Mapping[str, Any]] | None = None,
) -> str:
    """What was planned, and how closely the runs kept to it; for clusters, how they were
    kept (``starts``: each cluster start's ``started`` and ``ready``)."""
    order = experiment.get("order")
    said = plan_order.describe(order)
    kept_how = experiment.get("cluster_order")
    if kept_how:
        said += " " + plan_order.describe_clusters(
            kept_how["mode"], kept_how["why"], kept_how["configs"]
        )
        if kept_how["mode"] == plan_order.RESTARTS:
            said += restart_cost(starts or [])
    by_host = made(cells)
    if not by_host:
        return said
    if order is None:
        runs = sum(len(s) for s in by_host.values())
        switches = sum(_switches(s) for s in by_host.values())
        fewest = sum(max(0, len({c for c, _ in s}) - 1) for s in by_host.values())
        return (
            f"{said} In the order they started, the {runs} runs moved from one cell to another "
            f"{switches} time(s) (cell after cell: {fewest}); `order: interleaved` "
            "alternates them."
        )
    precision = experiment.get("precision")
    most = int(precision["max"]) if precision else int(experiment["repeats"])
    planned = plan_order.sequence(order, experiment["order_cells"], most)
    kept = sum(plan_order.followed(planned, s) for s in by_host.values())
    runs = sum(len(s) for s in by_host.values())
    where = f" on each of {len(by_host)} hosts" if len(by_host) > 1 else ""
    return (
        f"{said} In the order they started{where}, {kept} of the {runs} runs came where the "
        "plan put them (`start` in the data)."
    )
