"""Summary statistics over repeats: what a results table shows for each cell.

Medians, not means, lead: a storage benchmark's repeats often have one slow outlier (a
writeback storm, a cold cache), and the median is what a reader can expect. The spread is
shown as min..max and the coefficient of variation, so a shaky cell is visible.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from perfpost.tidy import results

CV_WARN = 0.10


def summarize(df: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Per ``by`` + metric: n, median, mean, min, max, std and CV of finished cells' values.

    std and CV need two runs: with one they are NaN (shown as n/a), never 0, which would read
    as "perfectly repeatable"."""
    done = results(df)
    keys = [*by, "metric", "unit"]
    if done.empty:
        return pd.DataFrame(columns=[*keys, "n", "median", "mean", "min", "max", "std", "cv"])
    g = done.groupby(keys, sort=False, dropna=False)["value"]
    out = g.agg(n="count", median="median", mean="mean", min="min", max="max", std="std")
    out = out.reset_index()
    out["cv"] = (out["std"] / out["mean"]).where((out["mean"] != 0) & (out["n"] > 1))
    return out


# ----------------------------------------------------------------------------- comparisons

MIN_RUNS = 4  # below this many runs a side, a comparison says "too few runs to say"
CONFIDENCE = 0.95
RESAMPLES = 10_000
SEED = 20200310  # fixed: the same runs give the same interval, so a post can be rebuilt
HIGHER_IS_BETTER = {"B/s": True, "1/s": True, "s": False, "ms": False}


@dataclass(frozen=True)
class Comparison:
    """Candidate against baseline on one metric: relative difference of medians
    (candidate / baseline - 1), its bootstrap confidence interval, and a Mann-Whitney p."""

    n_base: int
    n_cand: int
    median_base: float
    median_cand: float
    diff: float
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    verdict: str  # "better", "worse", "higher", "lower", "no significant difference", "too few"

    @property
    def significant(self) -> bool:
        return self.verdict not in ("no significant difference", "too few runs to say")


MIN_TUKEY = 4  # runs a cell needs before any of them can lie outside the quartile fences


def tukey_outliers(values: Sequence[float]) -> list[bool]:
    """Which values lie outside Tukey's fences (1.5 IQR beyond the quartiles): flagged in
    tables, never dropped from the statistics."""
    arr = np.asarray(values, dtype=float)
    if len(arr) < MIN_TUKEY:
        return [False] * len(arr)
    q1, q3 = np.percentile(arr, [25, 75])
    fence = 1.5 * (q3 - q1)
    return [bool(v < q1 - fence or v > q3 + fence) for v in arr]


def bootstrap_ratio_ci(
    base: Sequence[float], cand: Sequence[float], confidence: float = CONFIDENCE
) -> tuple[float, float]:
    """Percentile bootstrap interval of median(cand) / median(base) - 1, resampling each side
    on its own (the runs are independent, not paired)."""
    rng = np.random.default_rng(SEED)
    b = np.asarray(base, dtype=float)
    c = np.asarray(cand, dtype=float)
    mb = np.median(b[rng.integers(0, len(b), (RESAMPLES, len(b)))], axis=1)
    mc = np.median(c[rng.integers(0, len(c), (RESAMPLES, len(c)))], axis=1)
    ok = mb != 0
    ratios = mc[ok] / mb[ok] - 1
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(ratios, [tail, 100 - tail])
    return float(low), float(high)


def compare(
    base: Sequence[float], cand: Sequence[float], higher_is_better: bool | None = None
) -> Comparison:
    """The comparison of two sets of runs; see :class:`Comparison`."""
    from scipy.stats import mannwhitneyu

    b = [float(v) for v in base if math.isfinite(v)]
    c = [float(v) for v in cand if math.isfinite(v)]
    mb = float(np.median(b)) if b else math.nan
    mc = float(np.median(c)) if c else math.nan
    diff = mc / mb - 1 if b and c and mb != 0 else math.nan
    if len(b) < MIN_RUNS or len(c) < MIN_RUNS or math.isnan(diff):
        return Comparison(len(b), len(c), mb, mc, diff, None, None, None, "too few runs to say")
    low, high = bootstrap_ratio_ci(b, c)
    p = float(mannwhitneyu(b, c, alternative="two-sided").pvalue)
    if low <= 0 <= high:
        verdict = "no significant difference"
    elif higher_is_better is None:
        verdict = "higher" if diff > 0 else "lower"
    else:
        verdict = "better" if (diff > 0) == higher_is_better else "worse"
    return Comparison(len(b), len(c), mb, mc, diff, low, high, p, verdict)
