"""Drift: whether a cell's results move with the order its runs were made in.

A cell's runs are repeats of one measurement; if their results rise or fall with run order
(a disk filling, a cache warming, a neighbour arriving), the median hides a trend, and two
cells measured one after the other differ by the drift as well as by what the axes changed.

The test is Mann-Kendall's: S, the number of run pairs whose later run measured more, less
the number whose later run measured less, against its distribution when every order of the
runs is as likely (no trend). Its p is exact: without ties, from the count of orders of n
runs with each number of inversions (Mahonian numbers, one table row a run); with ties, by
trying every order up to :data:`EXACT_ORDERS`, else :data:`PERMUTATIONS` seeded random ones.
A post's tested cells are one family (Holm's correction), as for the sessions' check.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from perfpost.analysis.stats import holm
from perfpost.analysis.tidy import cell_name, results
from perfpost.units import counted, format_value, metric_label

ALPHA = 0.05  # the family's, after Holm's correction
# Fewer runs cannot show a trend at ALPHA: with 4, the two most extreme of 24 orders are 1/12.
MIN_RUNS = 5
EXACT_ORDERS = 40_320  # 8 runs: with ties, every order is tried up to this many
PERMUTATIONS = 9_999  # beyond, random orders: p resolves to 1 / 10,000
SEED = 20261127  # the same runs give the same p in every post


class Trend(NamedTuple):
    s: int  # Mann-Kendall's S: later-higher pairs less later-lower pairs
    pairs: int  # n (n - 1) / 2, the most |S| can be
    p: float  # two-sided: P(|S| >= |s|) over the orders of the runs
    slope: float  # Theil-Sen: the median of the pairs' change per run


def _s(values: np.ndarray) -> int:
    """S of ``values`` in the order given."""
    d = np.sign(values[None, :] - values[:, None])
    return int(np.triu(d, 1).sum())


@functools.lru_cache(maxsize=64)
def _inversions(n: int) -> tuple[int, ...]:
    """How many of the n! orders have each number of inversions (0 .. n(n-1)/2)."""
    counts = np.array([1], dtype=object)  # exact integers: 20! overflows int64
    for k in range(2, n + 1):
        nxt = np.zeros(len(counts) + k - 1, dtype=object)
        for j in range(k):  # the k-th run placed with j of the others after it
            nxt[j : j + len(counts)] += counts
        counts = nxt
    return tuple(int(c) for c in counts)


def _slope(values: np.ndarray) -> float:
    i, j = np.triu_indices(len(values), 1)
    return float(np.median((values[j] - values[i]) / (j - i)))


def mann_kendall(values: Sequence[float]) -> Trend:
    """The trend test of ``values`` taken in run order (see the module's text)."""
    x = np.asarray(values, dtype=float)
    n = len(x)
    pairs = n * (n - 1) // 2
    if n < 2:
        return Trend(0, 0, 1.0, 0.0)
    s = _s(x)
    if len(np.unique(x)) == n:
        # S = pairs - 2 x inversions, so |S| >= |s| is inversions <= (pairs - |s|) / 2 or
        # at least (pairs + |s|) / 2; the distribution is symmetric.
        counts = _inversions(n)
        low = (pairs - abs(s)) // 2
        tail = sum(counts[: low + 1])
        p = min(1.0, float(2 * tail / math.factorial(n)) if s else 1.0)
    elif math.factorial(n) <= EXACT_ORDERS:
        orders = np.array(list(itertools.permutations(x)))
        p = _as_far(orders, s) / len(orders)
    else:
        rng = np.random.default_rng(SEED)
        apart = 0
        for done in range(0, PERMUTATIONS, 1000):  # 1,000 orders at a time
            apart += _as_far(
                rng.permuted(np.tile(x, (min(1000, PERMUTATIONS - done), 1)), axis=1), s
            )
        p = (1 + apart) / (PERMUTATIONS + 1)
    return Trend(s, pairs, p, _slope(x))


def _as_far(orders: np.ndarray, s: int) -> int:
    """How many rows of ``orders`` (each an order of the runs) have |S| at least ``|s|``."""
    i, j = np.triu_indices(orders.shape[1], 1)
    return int((np.abs(np.sign(orders[:, j] - orders[:, i]).sum(axis=1)) >= abs(s)).sum())


def _ordered(tidy_df: pd.DataFrame, cells: pd.DataFrame, metric: str) -> pd.DataFrame:
    """The finished runs' values of ``metric``, with when each run started."""
    done = results(tidy_df)
    runs = done[done["metric"] == metric]
    if runs.empty or "start" not in cells:
        return runs.iloc[0:0]
    starts = cells[cells["status"] == "done"][["cell", "host", "repeat", "start"]]
    runs = runs.merge(starts, on=["cell", "host", "repeat"], how="inner")
    runs["start"] = pd.to_datetime(runs["start"], utc=True, format="ISO8601", errors="coerce")
    return runs.dropna(subset=["start"]).sort_values("start", kind="stable")


def check(
    tidy_df: pd.DataFrame, cells: pd.DataFrame, axes: list[str], metric: str | None
) -> dict[str, Any] | None:
    """The Validity section's drift check: each cell's runs, in the order they started,
    tested for a trend; flagged where Holm's adjusted p is at most :data:`ALPHA`."""
    if metric is None:
        return None
    runs = _ordered(tidy_df, cells, metric)
    if runs.empty:
        return None
    tested: list[tuple[str, int, Trend, pd.Series]] = []
    few = 0
    for (_, host), sub in runs.groupby(["cell", "host"], sort=False):
        if len(sub) < MIN_RUNS:
            few += 1
            continue
        row = SimpleNamespace(**{a: sub[a].iloc[0] for a in [*axes, "cell"]})
        name = cell_name(row, axes)
        values = sub["value"]
        tested.append((f"`{name}` on {host}", len(sub), mann_kendall(values.tolist()), values))
    label = metric_label(metric).lower()
    facts = [
        f"Each cell's runs were tested for a trend in {label} against the order they started "
        f"in (Mann-Kendall, exact p; Holm's correction over the cells tested; flagged at "
        f"p <= {ALPHA:g})."
    ]
    if few:
        facts.append(
            f"{counted(few, 'cell')} with fewer than {MIN_RUNS} finished runs "
            f"{'is' if few == 1 else 'are'} not tested: no order "
            f"of so few can show a trend at {ALPHA:g}."
        )
    if not tested:
        return {
            "title": "Drift",
            "facts": facts,
            "flags": [],
            "untestable": f"no cell has {MIN_RUNS} or more finished runs",
        }
    # The smallest p each cell's runs could give (every run above the last, or below it:
    # 2 / n!), through Holm's correction: above ALPHA, no outcome of these runs could flag.
    floors = holm([min(1.0, 2 / math.factorial(n)) for _, n, _, _ in tested])
    if min(floors) > ALPHA:
        sizes = sorted({n for _, n, _, _ in tested})
        runs_said = " or ".join(str(n) for n in sizes)
        return {
            "title": "Drift",
            "facts": facts,
            "flags": [],
            "untestable": (
                f"with {runs_said} runs a cell and Holm's correction over {len(tested)} "
                f"cells, no order of the runs could give an adjusted p of {ALPHA:g} or less "
                f"(the smallest is {min(floors):.3g})"
            ),
        }
    adjusted = holm([t.p for _, _, t, _ in tested])
    unit = str(runs["unit"].iloc[0]) if "unit" in runs else ""
    flags = []
    for (where, n, t, values), adj in zip(tested, adjusted, strict=True):
        if adj > ALPHA:
            continue
        way = "rose" if t.s > 0 else "fell"
        share = t.slope / float(values.median()) if values.median() else float("nan")
        flags.append(
            f"{where}: its {n} runs' {label} {way} with run order (S = {t.s:+d} of at most "
            f"{t.pairs}, p = {t.p:.3g}; {adj:.3g} after Holm's correction over {len(tested)} "
            f"cells), from {format_value(values.iloc[0], unit)} in the first to "
            f"{format_value(values.iloc[-1], unit)} in the last, {share:+.1%} of the median a "
            "run of the cell (Theil-Sen): the median is of a moving target, and cells whose "
            "runs were not interleaved (`order:`) differ by the drift as well as by their axes."
        )
    where, _, least, _ = min(tested, key=lambda x: x[2].p)
    facts.append(
        f"{counted(len(tested), 'cell')} tested; the smallest p is {least.p:.3g} ({where}, "
        f"S = {least.s:+d} of at most {least.pairs})."
    )
    return {"title": "Drift", "facts": facts, "flags": flags}
