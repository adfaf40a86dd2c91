"""The order an experiment's runs are made in.

Unset (None): the runs come in the workflow's own order, mostly a cell's runs together.
Back to back: every run of a cell, then the next cell's. Anything that drifts over the
session (a disk filling, a cache warming, a neighbour arriving) then differs between cells as
if their axes had made it. Interleaved: round k makes one run of every cell, in the
declared order in odd rounds and the reverse in even ones, so two cells go A B B A A B ...
(ABBA): a drift linear in time adds the same to both. Random: each round in a seeded shuffle.

The order is a plan for each host: a host makes its runs one at a time, in this order (the
cell jobs' priorities); hosts run side by side. What was made when is in ``cells.csv``
(``start``), and the post compares it with the plan.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from typing import Any

from perfpost.errors import ConfigError

BACK_TO_BACK = "back-to-back"
INTERLEAVED = "interleaved"


def settings(raw: Any, where: str, *, clusters: bool, together: bool, compares: bool) -> Any:
    """``order:`` as given (the schema checked its form), refused where perfpost cannot keep
    it: the runs of a cluster's cells are grouped so one cluster is up at a time, and
    start_together runs are one job for every host. Unset, an experiment that compares its
    cells is interleaved where it can be (it costs nothing there), and any other keeps the
    workflow's order. With a precision target the plan covers every run a cell may get; a
    cell that stops early leaves its place in later rounds to the others."""
    if raw is None:
        return INTERLEAVED if compares and not (clusters or together) else None
    why = (
        "cells against clusters run grouped by cluster, so that one is up at a time"
        if clusters
        else "start_together runs are planned per cell for every host at once"
        if together
        else None
    )
    if why:
        raise ConfigError(f"{where}.order", f"runs cannot be reordered here: {why}")
    return raw


def sequence(order: Any, cells: Iterable[str], repeats: int) -> list[tuple[str, int]]:
    """(cell id, repeat) in the order a host makes them."""
    cells = list(cells)
    if order == BACK_TO_BACK:
        return [(c, r) for c in cells for r in range(1, repeats + 1)]
    out: list[tuple[str, int]] = []
    rng = random.Random(order["random"]) if isinstance(order, Mapping) else None
    for r in range(1, repeats + 1):
        if rng is not None:
            round_ = cells[:]
            rng.shuffle(round_)
        else:
            round_ = cells if r % 2 else cells[::-1]
        out += [(c, r) for c in round_]
    return out


def describe(order: Any) -> str:
    """The post's sentence on the order."""
    if order is None:
        return (
            "No order was asked for (`order:`): the runs came in the workflow's own order, so "
            "a drift over the session may differ between cells as if their axes had made it."
        )
    if order == BACK_TO_BACK:
        return (
            "Each cell's runs were made back to back, one cell after another, so a drift over "
            "the session differs between cells as if their axes had made it."
        )
    if isinstance(order, Mapping):
        return (
            "The runs were interleaved: each round made one run of every cell, in an order "
            f"shuffled with the seed {order['random']}, so a drift over the session falls on "
            "every cell alike."
        )
    return (
        "The runs were interleaved: each round made one run of every cell, in the declared "
        "order in odd rounds and the reverse in even ones (A B B A ...), so a drift linear in "
        "time adds the same to every cell."
    )


def followed(planned: list[tuple[str, int]], made: list[tuple[str, int]]) -> int:
    """How many of ``made`` (a host's runs as they started) came where the plan put them,
    among the planned runs that were made."""
    made_set, planned_set = set(made), set(planned)
    kept = [x for x in planned if x in made_set]
    came = [x for x in made if x in planned_set]
    return sum(a == b for a, b in zip(kept, came, strict=True))
