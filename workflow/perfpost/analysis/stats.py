"""Summary statistics over repeats, and the comparison behind every claim a post makes.

Medians, not means, lead: a storage benchmark's repeats often have one slow outlier (a
writeback storm, a cold cache), and the median is what a reader can expect. The spread is
shown as min..max and the coefficient of variation, so a shaky cell is visible.

A comparison claims a difference only when a two-sided Mann-Whitney test rejects at
:data:`ALPHA` after Holm's correction for the number of comparisons made together, and its
size is the Hodges-Lehmann estimate with the confidence interval that inverts the same test,
so the claim and the interval cannot disagree (see :func:`compare_all`).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from perfpost.analysis.tidy import results

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


# ----------------------------------------------------------------------------- precision


@dataclass(frozen=True)
class MedianInterval:
    """The median of a cell's runs and the distribution-free interval around it."""

    n: int
    median: float
    low: float | None  # None: too few runs for an interval at this confidence
    high: float | None
    level: float | None  # the interval's exact coverage, at least the one asked for

    @property
    def precision(self) -> float | None:
        """The interval's farther end from the median, relative to it (0.05: +-5%)."""
        if self.low is None or self.high is None or self.median == 0:
            return None
        return max(self.median - self.low, self.high - self.median) / abs(self.median)


def median_interval(values: Sequence[float], confidence: float = 0.95) -> MedianInterval:
    """The median and the order-statistic interval [x(k), x(n + 1 - k)] for it, k the
    largest with P(B <= k - 1) <= (1 - confidence) / 2, B ~ Binomial(n, 1/2): it holds its
    coverage for any continuous distribution at any n, and needs n >= 6 at 95%.

    No normal approximation: a cell with a slow outlier is exactly where one misleads."""
    x = np.sort(np.asarray(_finite(values), dtype=float))
    n = len(x)
    if n == 0:
        return MedianInterval(0, math.nan, None, None, None)
    median = float(np.median(x))
    half = (1 - confidence) / 2
    k, tail = 0, 0.0
    while k < n // 2:
        nxt = tail + math.comb(n, k) / 2**n
        if nxt > half:
            break
        tail, k = nxt, k + 1
    if k == 0:
        return MedianInterval(n, median, None, None, None)
    return MedianInterval(n, median, float(x[k - 1]), float(x[n - k]), 1 - 2 * tail)


# ----------------------------------------------------------------------------- comparisons

ALPHA = 0.05  # two-sided, after Holm's correction
CONFIDENCE = 1 - ALPHA
# Largest m * n whose exact null distribution of U is computed (100 runs a side); beyond it
# the normal approximation is as good and the exact one costs seconds.
EXACT_MAX_PAIRS = 10_000

TOO_FEW = "too few runs to say"
NO_DIFFERENCE = "no significant difference"
# A change inside an A/A control's 95% interval: the same configuration measured twice moved
# as much (perfpost.analysis.compare).
NOISE_FLOOR = "within the A/A noise floor"
IDENTICAL = "identical"  # every run of both sides had one and the same value: no test


@functools.lru_cache(maxsize=256)
def u_counts(m: int, n: int) -> tuple[int, ...]:
    """How many of the C(m + n, m) orderings of two samples of sizes m and n (no ties) give
    U = 0, 1, ..., m * n: the exact null distribution of the Mann-Whitney statistic.

    The counts are the coefficients of the Gaussian binomial [m + n, m]_q = prod over
    i = 1..m of (1 - q^(n + i)) / (1 - q^i), in exact integers."""
    size = m * n + 1
    c = [0] * size
    c[0] = 1
    for i in range(1, m + 1):
        k = n + i
        for u in range(size - 1, k - 1, -1):  # times (1 - q^k)
            c[u] -= c[u - k]
        for u in range(i, size):  # divided by (1 - q^i): a power series, exact in integers
            c[u] += c[u - i]
    return tuple(c)


def _norm_sf(z: float) -> float:
    return 0.5 * math.erfc(z / math.sqrt(2))


def _norm_isf(p: float) -> float:
    """The z with P(Z > z) = p, by bisection (p in (0, 0.5])."""
    lo, hi = 0.0, 40.0
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _norm_sf(mid) > p else (lo, mid)
    return (lo + hi) / 2


@dataclass(frozen=True)
class MannWhitney:
    """U counts the pairs where the candidate is above the baseline (ties count one half)."""

    u: float
    p_value: float
    exact: bool


def mann_whitney(base: Sequence[float], cand: Sequence[float]) -> MannWhitney:
    """Two-sided Mann-Whitney U test of cand against base.

    Exact (from :func:`u_counts`) when no two runs have the same value and m * n is at most
    :data:`EXACT_MAX_PAIRS`; otherwise the normal approximation with tie and continuity
    correction, as R's wilcox.test does."""
    b = np.asarray(base, dtype=float)
    c = np.asarray(cand, dtype=float)
    m, n = len(b), len(c)
    diffs = np.subtract.outer(c, b)
    u = float((diffs > 0).sum() + 0.5 * (diffs == 0).sum())
    pooled = np.concatenate([b, c])
    _, t = np.unique(pooled, return_counts=True)
    if len(t) == m + n and m * n <= EXACT_MAX_PAIRS:
        counts = u_counts(m, n)
        total = math.comb(m + n, m)
        k = int(u)
        lower = sum(counts[: k + 1]) / total
        upper = sum(counts[k:]) / total
        return MannWhitney(u, min(1.0, 2 * min(lower, upper)), True)
    big = m + n
    var = m * n / 12 * ((big + 1) - float((t**3 - t).sum()) / (big * (big - 1)))
    if var <= 0:  # every value equal: nothing tells the sides apart
        return MannWhitney(u, 1.0, False)
    z = (abs(u - m * n / 2) - 0.5) / math.sqrt(var)
    return MannWhitney(u, min(1.0, 2 * _norm_sf(z)), False)


def smallest_p(m: int, n: int) -> float:
    """The smallest two-sided p-value m and n runs can give: every candidate run above (or
    below) every baseline run, 2 / C(m + n, m)."""
    return min(1.0, 2 / math.comb(m + n, m))


@dataclass(frozen=True)
class Shift:
    """Hodges-Lehmann estimate of cand - base and its distribution-free interval; the
    interval is None when no interval at the asked confidence exists at these n."""

    estimate: float
    low: float | None
    high: float | None
    level: float | None  # the interval's exact coverage (at least the one asked for)


def _cut(m: int, n: int, confidence: float) -> tuple[int, float]:
    """How many of the sorted pairwise differences the interval leaves out at each end, k,
    and its coverage: the largest k with P(U <= k - 1) <= (1 - confidence) / 2 under the
    null (Hollander & Wolfe, the two-sample location interval)."""
    half = (1 - confidence) / 2
    if m * n <= EXACT_MAX_PAIRS:
        counts = u_counts(m, n)
        total = math.comb(m + n, m)
        k, tail = 0, 0
        while tail + counts[k] <= half * total:
            tail += counts[k]
            k += 1
        return k, 1 - 2 * tail / total
    sd = math.sqrt(m * n * (m + n + 1) / 12)
    k = max(0, math.floor(m * n / 2 - _norm_isf(half) * sd))
    return k, 1 - 2 * _norm_sf((m * n / 2 - k + 0.5) / sd)


def hodges_lehmann(
    base: Sequence[float], cand: Sequence[float], confidence: float = CONFIDENCE
) -> Shift:
    """The median of all m * n differences cand_j - base_i, and the interval between their
    k-th smallest and k-th largest (:func:`_cut`): the values of the shift the Mann-Whitney
    test would not reject, so it holds its coverage at any n, for any continuous
    distribution, as R's ``wilcox.test(cand, base, conf.int = TRUE)``."""
    d = np.sort(np.subtract.outer(np.asarray(cand, float), np.asarray(base, float)).ravel())
    estimate = float(np.median(d))
    k, level = _cut(len(base), len(cand), confidence)
    if k == 0:
        return Shift(estimate, None, None, None)
    return Shift(estimate, float(d[k - 1]), float(d[len(d) - k]), level)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values: the i-th smallest of m is multiplied by m - i + 1,
    kept from decreasing, capped at 1. Rejecting where the adjusted p <= alpha keeps the
    chance of any false claim among the m at most alpha."""
    m = len(p_values)
    adjusted = [1.0] * m
    running = 0.0
    for rank, i in enumerate(sorted(range(m), key=lambda j: p_values[j])):
        running = max(running, (m - rank) * p_values[i])
        adjusted[i] = min(1.0, running)
    return adjusted


@dataclass(frozen=True)
class Comparison:
    """Candidate against baseline on one metric, within a family of ``tests`` comparisons.

    ``change`` is the relative difference, candidate / baseline - 1, as a Hodges-Lehmann
    estimate on the log scale: exp(median of all log(cand_j) - log(base_i)) - 1, with the
    interval from the same differences (``method`` says "ratio"). The log does not change
    the ranks, so when the test is exact the interval excludes 0 exactly when it rejects at
    alpha (before the correction). Where a
    value is 0 or negative there is no ratio: then the shift cand - base (``method`` "shift")
    is divided by the baseline median.

    ``detectable`` is half the interval's width as a relative change, downwards: for a ratio,
    half the width on the log scale as the decrease it means, 1 - exp(-half); ``detectable_up``
    the same half-width as the increase it means, exp(half) - 1, which is larger (a 37% drop
    is a 59% rise the other way round). Runs shifted by less than that would still give an
    interval spanning zero, so a "no significant difference" cannot rule such a difference
    out, and a sentence about a rise must use the rise's bound. For a shift both are the
    half-width over the baseline median."""

    n_base: int
    n_cand: int
    median_base: float
    median_cand: float
    change: float
    ci_low: float | None
    ci_high: float | None
    ci_level: float | None
    p_value: float | None
    p_adjusted: float | None
    tests: int  # comparisons in the family Holm's correction counted
    p_min: float | None  # the smallest p-value n_base and n_cand runs can give
    detectable: float | None
    method: str
    # better, worse, higher, lower, no significant difference, too few runs to say, identical
    verdict: str
    alpha: float = ALPHA
    # The smallest adjusted p any outcome of runs of these numbers could reach in this
    # family: Holm's step-down of every member's smallest possible p.
    p_min_adjusted: float | None = None
    detectable_up: float | None = None

    @property
    def significant(self) -> bool:
        return self.verdict not in (NO_DIFFERENCE, TOO_FEW, IDENTICAL, NOISE_FLOOR)


def _finite(values: Sequence[float]) -> list[float]:
    return [float(v) for v in values if math.isfinite(float(v))]


def _one(base: Sequence[float], cand: Sequence[float], alpha: float) -> Comparison:
    """A comparison before its family is known: adjusted p and the claim still open."""
    b, c = _finite(base), _finite(cand)
    mb = float(np.median(b)) if b else math.nan
    mc = float(np.median(c)) if c else math.nan
    common = {"n_base": len(b), "n_cand": len(c), "median_base": mb, "median_cand": mc}
    nothing = {"ci_low": None, "ci_high": None, "ci_level": None, "p_adjusted": None}
    if not (b and c):
        return Comparison(
            **common,
            **nothing,
            change=math.nan,
            p_value=None,
            tests=0,
            p_min=None,
            detectable=None,
            method="",
            verdict=TOO_FEW,
            alpha=alpha,
        )
    if len(set(b) | set(c)) == 1:
        # One value in every run of both sides (bytes written, an exit code): no test can
        # tell the sides apart, and counting it in a family would only dilute the others.
        return Comparison(
            **common,
            **nothing,
            change=0.0,
            p_value=None,
            tests=0,
            p_min=None,
            detectable=None,
            method="every run the same",
            verdict=IDENTICAL,
            alpha=alpha,
        )
    test = mann_whitney(b, c)
    if min(b) > 0 and min(c) > 0:
        s = hodges_lehmann(np.log(b), np.log(c), 1 - alpha)
        kind = "ratio"

        def rel(x: float) -> float:
            return math.expm1(x)

    else:
        s = hodges_lehmann(b, c, 1 - alpha)
        kind = "shift"

        def rel(x: float) -> float:
            return x / abs(mb) if mb else math.nan

    method = (
        f"Mann-Whitney {'exact' if test.exact else 'normal approximation'}, Hodges-Lehmann {kind}"
    )
    p_min = smallest_p(len(b), len(c))
    if s.low is None or s.high is None:
        return Comparison(
            **common,
            **nothing,
            change=rel(s.estimate),
            p_value=test.p_value,
            tests=0,
            p_min=p_min,
            detectable=None,
            method=method,
            verdict=TOO_FEW,
            alpha=alpha,
        )
    half = (s.high - s.low) / 2
    detectable = -math.expm1(-half) if kind == "ratio" else rel(half)
    return Comparison(
        **common,
        detectable_up=rel(half),
        change=rel(s.estimate),
        ci_low=rel(s.low),
        ci_high=rel(s.high),
        ci_level=s.level,
        p_value=test.p_value,
        p_adjusted=None,
        tests=0,
        p_min=p_min,
        detectable=detectable,
        method=method,
        verdict="",
        alpha=alpha,
    )


def compare_all(
    pairs: Sequence[tuple[Sequence[float], Sequence[float], bool | None]], alpha: float = ALPHA
) -> list[Comparison]:
    """Comparisons made together, each (baseline runs, candidate runs, higher is better?).

    A difference is claimed only when Holm's adjusted two-sided Mann-Whitney p is at most
    ``alpha`` over the family and the interval excludes zero (implied by the p-value when the
    test is exact; a safeguard where ties or many runs call for the normal approximation).
    A baseline median of 0 with the shift method gives no relative change, and no claim.

    The family is every pair with enough runs that a 1 - alpha interval exists (which pairs
    count depends on n alone, never on the values), less those whose runs all have one value
    on both sides (no test). The others say "too few runs to say", and so does a member that
    no outcome of its runs could claim: Holm's step-down is monotone in every p, so the best
    adjusted p a member can reach is its entry in Holm's adjustment of every member's
    smallest possible p (every pair fully separated). A member below that bound follows
    Holm's own verdict, whatever its n."""
    out = [_one(b, c, alpha) for b, c, _ in pairs]
    tested = [i for i, r in enumerate(out) if r.verdict == ""]
    adjusted = holm([out[i].p_value for i in tested])  # type: ignore[misc]
    best = holm([out[i].p_min for i in tested])  # type: ignore[misc]
    for i, p_adj, p_best in zip(tested, adjusted, best, strict=True):
        r = out[i]
        excludes = r.ci_low > 0 or r.ci_high < 0  # type: ignore[operator]
        if p_best > alpha:
            # At these n no value of the runs could be claimed in this family, so "no
            # difference" would say more than they can.
            verdict = TOO_FEW
        elif p_adj <= alpha and excludes:
            hib = pairs[i][2]
            up = r.change > 0
            if hib is None:
                verdict = "higher" if up else "lower"
            else:
                verdict = "better" if up == hib else "worse"
        else:
            verdict = NO_DIFFERENCE
        out[i] = dataclasses.replace(
            r,
            p_adjusted=p_adj,
            p_min_adjusted=p_best,
            tests=len(tested),
            verdict=verdict,
            method=f"{r.method}, Holm over {len(tested)}",
        )
    return out


def compare(
    base: Sequence[float],
    cand: Sequence[float],
    higher_is_better: bool | None = None,
    alpha: float = ALPHA,
) -> Comparison:
    """One comparison on its own (a family of one); see :func:`compare_all`."""
    return compare_all([(base, cand, higher_is_better)], alpha)[0]
