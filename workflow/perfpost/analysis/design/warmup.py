"""Warm-up after a cluster start: the runs measured on one start of a cluster, each cell's in
the order they started, tested together for a trend, exactly."""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from perfpost import units
from perfpost.analysis.design.finding import ALPHA, Finding, Untestable
from perfpost.analysis.stats import holm
from perfpost.analysis.tidy import results
from perfpost.units import format_value, metric_label

EXACT_LIMIT = 40_320  # per cell with ties: every order up to 8 runs
PERMUTATIONS = 9_999
SEED = 20261127


@functools.lru_cache(maxsize=64)
def _s_distribution(n: int) -> dict[int, float]:
    """P(S = s) for n runs with no ties and no trend: S = pairs - 2 x inversions, and the
    count of orders with each number of inversions is a Mahonian number."""
    counts = [1]
    for k in range(2, n + 1):
        nxt = [0] * (len(counts) + k - 1)
        for j in range(k):
            for i, c in enumerate(counts):
                nxt[i + j] += c
        counts = nxt
    pairs = n * (n - 1) // 2
    total = math.factorial(n)
    return {pairs - 2 * inv: c / total for inv, c in enumerate(counts)}


def _s(values: Sequence[float]) -> int:
    x = np.asarray(values, dtype=float)
    d = np.sign(x[None, :] - x[:, None])
    return int(np.triu(d, 1).sum())


def summed_trend(groups: Sequence[Sequence[float]]) -> tuple[int, int, float, float]:
    """Mann-Kendall's S summed over ``groups`` (each a cell's runs in the order they
    started), the most it could be, its exact two-sided p where no group has ties (the
    convolution of the groups' own distributions), else a seeded permutation p; and the
    smallest p any outcome of runs of these numbers can give."""
    groups = [list(g) for g in groups if len(g) >= 2]
    s = sum(_s(g) for g in groups)
    most = sum(len(g) * (len(g) - 1) // 2 for g in groups)
    smallest = (
        min(1.0, 2 * math.prod(1 / math.factorial(len(g)) for g in groups)) if groups else 1.0
    )
    if not groups:
        return 0, 0, 1.0, 1.0
    if all(len(set(g)) == len(g) for g in groups):
        dist = {0: 1.0}
        for g in groups:
            one = _s_distribution(len(g))
            nxt: dict[int, float] = {}
            for a, pa in dist.items():
                for b, pb in one.items():
                    nxt[a + b] = nxt.get(a + b, 0.0) + pa * pb
            dist = nxt
        p = sum(pr for v, pr in dist.items() if abs(v) >= abs(s) - 1e-9) if s else 1.0
        return s, most, min(1.0, p), smallest
    rng = np.random.default_rng(SEED)
    apart = 0
    for _ in range(PERMUTATIONS):
        if abs(sum(_s(rng.permutation(g)) for g in groups)) >= abs(s):
            apart += 1
    return s, most, (1 + apart) / (PERMUTATIONS + 1), smallest


def warmup(
    tidy_df: pd.DataFrame,
    cells: pd.DataFrame,
    clusters: Sequence[Mapping[str, Any]],
    metric: str | None,
) -> tuple[list[Finding], list[Untestable], list[str]]:
    """The runs of each cluster start, each cell's in the order they started, tested for a
    common trend (:func:`summed_trend`); Holm's correction over the starts tested. Returns
    the findings, the starts too small to test, and the facts for the notebook."""
    if metric is None or "clusters" not in cells or not clusters:
        return [], [], []
    done = results(tidy_df)
    runs = done[done["metric"] == metric][["cell", "host", "repeat", "value", "unit"]]
    timed = cells[cells["status"] == "done"][["cell", "host", "repeat", "start", "clusters"]]
    runs = runs.merge(timed, on=["cell", "host", "repeat"])
    if runs.empty:
        return [], [], []
    runs = runs.assign(t=pd.to_datetime(runs["start"], utc=True, format="ISO8601"))
    names = {c["ref"]: c.get("name") or c["ref"] for c in clusters if "ref" in c}
    tested = []
    for ref in dict.fromkeys(x for refs in runs["clusters"].dropna() for x in str(refs).split()):
        on = runs[runs["clusters"].fillna("").str.split().map(lambda xs, r=ref: r in xs)]
        groups = [
            sub.sort_values("t", kind="stable")["value"].tolist()
            for _, sub in on.groupby(["cell", "host"], sort=False)
        ]
        s, most, p, smallest = summed_trend(groups)
        tested.append((ref, len(on), len(groups), s, most, p, smallest, on))
    if not tested:
        return [], [], []
    unit = str(runs["unit"].iloc[0])
    higher_better = unit in ("B/s", "1/s")
    label = metric_label(metric).lower()
    adjusted = holm([t[5] for t in tested])
    best = holm([t[6] for t in tested])
    findings, untestable = [], []
    untested: dict[tuple[int, int, str], list[str]] = {}
    # faster (or not) -> each start's name, S and p, first and last medians, cells
    fired: dict[bool, list[tuple[str, str, tuple[str, str], tuple[str, ...]]]] = {}
    facts = [
        f"Each cluster start's runs were tested for a common trend in {label} with their order "
        "since the cluster started (Mann-Kendall's S summed over its cells, exact p; Holm's "
        f"correction over {len(tested)} start(s))."
    ]
    for (ref, n, k, s, most, p, _smallest, on), adj, floor in zip(
        tested, adjusted, best, strict=True
    ):
        name = names.get(ref, ref)
        facts.append(
            f"`{name}` ({ref}): {n} runs in {units.counted(k, 'cell')}, S = {s:+d} "
            f"of at most {most}, "
            f"p = {p:.3g} ({adj:.3g} after Holm)."
        )
        if floor > ALPHA:
            untested.setdefault((n, k, f"{floor:.3g}"), []).append(f"`{name}`")
            continue
        if adj > ALPHA:
            continue
        better = (s > 0) == higher_better
        first = on.sort_values("t").groupby(["cell", "host"], sort=False)["value"]
        a = float(first.first().median())
        b = float(first.last().median())
        fired.setdefault(better, []).append(
            (
                name,
                f"S = {s:+d} of at most {most}, p = {adj:.2g}",
                (format_value(a, unit), format_value(b, unit)),
                tuple(dict.fromkeys(str(c) for c in on["cell"])),
            )
        )
    # One caveat a direction, however many cluster starts it fired on.
    for better, starts in fired.items():
        way = "faster" if better else "slower"
        why = (
            "a cluster warming up (JIT compilation, caches, connections), so its first runs "
            "measured a cold cluster, and cells measured one after another differ by this as "
            "well as by their settings."
            if better
            else "the cluster slowed down as it filled, so cells measured one after another "
            "differ by this as well as by their settings."
        )
        if len(starts) == 1:
            name, stat, (a_, b_), on_cells = starts[0]
            where = f"`{name}`"
            numbers = (
                f"{stat} after Holm's correction; {label} from {a_} in each cell's first run "
                f"to {b_} in its last, medians"
            )
        else:
            names_of = [f"`{x[0]}`" for x in starts]
            # A cluster started twice (a failed start tried again) is named once.
            once = [
                f"{n_} ({names_of.count(n_)} starts)" if names_of.count(n_) > 1 else n_
                for n_ in dict.fromkeys(names_of)
            ]
            where = units.listed(once)
            numbers = (
                "; ".join(
                    f"{n_}: {x[1]}, {label} {x[2][0]} to {x[2][1]}"
                    for n_, x in zip(names_of, starts, strict=True)
                )
                + "; p after Holm's correction, each cell's first run to its last, medians"
            )
            on_cells = tuple(dict.fromkeys(c for x in starts for c in x[3]))
        findings.append(
            Finding(
                check="Warm-up after a cluster start",
                caveat=(
                    f"On {where}, runs got {way} with their order since the cluster started "
                    f"({numbers}): {why}"
                ),
                cells=on_cells,
            )
        )
    for (n, k, floor), names in untested.items():
        counted = [
            f"{name} ({names.count(name)} starts)" if names.count(name) > 1 else name
            for name in dict.fromkeys(names)
        ]
        untestable.append(
            Untestable(
                "Warm-up after a cluster start",
                f"not testable on {', '.join(counted)}, with {units.counted(n, 'run')} in "
                f"{units.counted(k, 'cell')} a start: "
                f"the smallest p they could give is {floor} after Holm's correction",
            )
        )
    return findings, untestable, facts
