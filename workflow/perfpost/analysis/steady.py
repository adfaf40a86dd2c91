"""Steady state from a run's rate series: how long the warm-up lasted, and whether the rest held.

A benchmark's mean rate is only a property of the system when the rate was steady; a run that
started in a page cache and ended on the disk, or slowed half-way because something else took
the device, has a mean that belongs to neither part. For each run's rate series (freon's
progress, one rate per interval between two progress lines, see
:func:`perfpost.analysis.tidy.series_table`) this module decides, in this order:

1. **Warm-up: MSER-5** (White 1997, "An effective truncation heuristic for bias reduction in
   simulation output", Simulation 69(6); White, Cobb & Spratt 2000, "A comparison of five
   steady-state truncation heuristics for simulation", Proc. Winter Simulation Conference).
   The observations are averaged in non-overlapping batches of :data:`BATCH` = 5 (a last,
   partial batch is left out of the batches); with ``k`` batch means ``Z_1..Z_k``, the
   truncation ``d`` minimises ``MSER(d) = sum_{j>d} (Z_j - mean_{j>d} Z)^2 / (k - d)^2`` over
   ``d = 0 .. k // 2`` (the first half, as White restricts it; ties go to the smaller ``d``).
   The first ``5 d`` observations are the warm-up.
   A drop longer than :data:`WARMUP_MAX_FRACTION` of the batches is not taken as a warm-up:
   MSER truncates at any early level change, and a level held for a third of the run and then
   left is a step (found by 3), not a start-up transient. The truncation is then the least
   MSER within the first third, when that is a minimum inside it (a transient before the
   step, as a cache's peak before a throttle), else none.
   MSER cuts something from most steady runs too (its least value is seldom at ``d = 0``:
   this rule cut 5 to 40 rates from a third of steady series of 60 and of 120 rates), so the
   cut is kept only when the data show it, by a permutation test of its statistic
   ``MSER(0) / MSER(d)``: the same statistic, ``d`` chosen again by the same rule (the first
   third included), on :data:`WARMUP_PERMUTATIONS` seeded random orders of the batch means;
   ``p = (1 + orders at least as extreme) / (1 + orders)``, and the cut is kept at ``p <=``
   :data:`WARMUP_ALPHA` = 0.05. In a steady run the batch means are exchangeable, so it
   shows a warm-up with probability at most 0.05, whichever ``d`` MSER chose. (The orders
   are compared 250 at a time, and no more once so many reach the statistic that p must
   exceed 0.05: the answer is the one all of them give.)
2. **Too short**: the tests below need at least :func:`min_batches` batch means after the
   warm-up (10 at 0.025 a test: the fewest at which Pettitt's test can reject at all; its
   smallest exact p, the share of orders that reach ``K``'s largest value, is 2/252 = 0.0079
   at 10 batches but 0.029 at 8 and at 9, see :func:`pettitt_min_p`); a shorter series, or
   a shorter rest, is "too short to say", never steady.
3. **Stationarity of the rest**, on the kept batch means (batching reduces the dependence
   between neighbouring 1 s rates), with family-wise :data:`ALPHA` = 0.05 split equally
   between two tests (Bonferroni, 0.025 each), so a steady run is called unsteady with
   probability at most 0.05:

   - trend: Mann-Kendall (Kendall's tau between batch number and batch mean; scipy's exact
     distribution for short series without ties, its normal approximation otherwise);
   - step: Pettitt (1979, "A non-parametric approach to the change-point problem", Applied
     Statistics 28(2)): ``K = max_t |U_t|`` with ``U_t = 2 sum_{i<=t} r_i - t (T + 1)`` over
     the ranks ``r``; p from :data:`PERMUTATIONS` random permutations of the ranks (seeded,
     so a table is reproducible; Pettitt's own approximation is far too conservative at ten
     batches), or from that approximation past :data:`PERMUTATION_MAX_BATCHES` batches.

   When either rejects, the shape is the one with the smaller squared error on the batch
   means: two levels (the best single split) or a line (least squares). A step is
   then placed to the observation inside the batches either side of that split (the split of
   the observations with the least squared error), and reported at the time between the two
   observations it separates.

Verdicts (:data:`VERDICTS`): ``steady``, ``warm-up then steady``, ``trend``, ``step``,
``too short``. Rates are time-weighted (operations over seconds) like the run's own rate.

Limits: one change is looked for, so a rate that falls and comes back (a U) can pass both
tests; a warm-up followed by a step inside the first third is one level change to MSER. Batch
means of 5 one-second rates still carry load that lasts longer than 5 s (other jobs on a
shared host), which makes the tests reject somewhat more often than alpha says. 50 rates is
the least that allows a verdict, not one with much power: a step near an end of a short rest
can go unseen. A warm-up of one batch is seldom shown: in a steady run the most extreme batch
comes first one time in ``k``, and the statistic barely tells first from among the first few
(5 rates at half the level were shown in 17% to 28% of runs of 60 to 150 rates, 300 each).
MSER often cuts past a real warm-up's end: of 1,000 runs of 10 rates at half the level and
then 110 steady, 316 lost 5 to 30 rates more, which can leave a short run too short to say.
"""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from perfpost.records import write_text_atomic


def _sps() -> Any:
    """scipy.stats, imported when a test needs it: the import costs 1.5 s, and most tables
    and posts have no series long enough (or no second session) to test."""
    from scipy import stats

    return stats


STEADY_SCHEMA_VERSION = 1
BATCH = 5
ALPHA = 0.05
TESTS = 2  # trend and step share ALPHA (Bonferroni)
WARMUP_MAX_FRACTION = 1 / 3
WARMUP_ALPHA = 0.05
WARMUP_PERMUTATIONS = 1999
_WARMUP_CHUNK = 250  # permutations drawn at a time, until p's side of alpha is settled
PERMUTATIONS = 9999
PERMUTATION_MAX_BATCHES = 60
SEED = 20001  # any fixed number: the same series always gets the same p

STEADY, WARMUP, TREND, STEP, SHORT = (
    "steady",
    "warm-up then steady",
    "trend",
    "step",
    "too short",
)
VERDICTS = (STEADY, WARMUP, TREND, STEP, SHORT)
STEADY_VERDICTS = (STEADY, WARMUP)

RUN_KEYS = ("experiment", "cell", "host", "repeat", "series")
COLUMNS = (
    "schema_version",
    *RUN_KEYS,
    "samples",
    "warmup_samples",
    "warmup_end_t",
    "whole_rate",
    "steady_rate",
    "verdict",
    "step_index",
    "step_t",
    "step_before",
    "step_after",
    "trend_slope",
    "p_trend",
    "p_step",
    "min_samples",
)
COLUMN_DOCS = {
    "samples": "rate observations in the series (intervals between two progress lines)",
    "warmup_samples": "observations MSER-5 dropped as warm-up, where its test showed one (0: none)",
    "warmup_end_t": "s since the run started where the kept part begins",
    "whole_rate": "operations/s over the whole series",
    "steady_rate": "operations/s over the kept part; empty unless the verdict is steady",
    "verdict": ", ".join(VERDICTS),
    "step_index": "for a step: the first observation after it (0-based)",
    "step_t": "for a step: s since the run started where it falls",
    "step_before": "for a step: operations/s from the warm-up's end to the step",
    "step_after": "for a step: operations/s after the step",
    "trend_slope": "Sen's slope of the kept batch means, operations/s per s",
    "p_trend": "Mann-Kendall p on the kept batch means",
    "p_step": "Pettitt p on the kept batch means",
    "min_samples": "the fewest observations after the warm-up a verdict needs",
}


def _mser_head(head: np.ndarray, k: int, total: float, total_sq: float) -> np.ndarray:
    """``MSER(d)`` for ``d = 0 .. m``, along the last axis of ``head``: rows whose first ``m``
    batch means are ``head`` and whose ``k`` means sum to ``total`` (their squares to
    ``total_sq``). The rest after ``d`` is the whole less the first ``d``, so a permuted row
    needs only its first ``m`` values: thousands of permutations cost one pass."""
    m = head.shape[-1]
    zero = np.zeros((*head.shape[:-1], 1))
    before = np.concatenate([zero, np.cumsum(head, axis=-1)], axis=-1)
    before_sq = np.concatenate([zero, np.cumsum(head * head, axis=-1)], axis=-1)
    left = k - np.arange(m + 1)
    rest = total - before
    return np.maximum(total_sq - before_sq - rest * rest / left, 0.0) / left**2


def mser(z: np.ndarray) -> np.ndarray:
    """``MSER(d)`` for ``d = 0 .. len(z) - 1``: the squared deviations of the batch means
    after ``d`` from their own mean, over ``(k - d)^2``."""
    z = np.asarray(z, dtype=float)
    zc = z - z.mean()  # centred: the sums of squares lose no precision to the level
    return _mser_head(zc[:-1], len(z), float(zc.sum()), float((zc * zc).sum()))


def batch_means(x: np.ndarray, size: int = BATCH) -> np.ndarray:
    """Means of consecutive non-overlapping batches of ``size``; a partial last one is left
    out, as MSER-5 does."""
    k = len(x) // size
    return np.asarray(x[: k * size], dtype=float).reshape(k, size).mean(axis=1)


def mser5(x: np.ndarray) -> int:
    """The MSER-5 truncation in batches: ``d`` in ``0 .. k // 2`` with the least MSER."""
    z = batch_means(np.asarray(x, dtype=float))
    if len(z) < 2:
        return 0
    return int(np.argmin(mser(z)[: len(z) // 2 + 1]))


def _truncation(m: np.ndarray, k: int) -> np.ndarray:
    """The truncation for each row of ``MSER(0 .. k // 2)``: the least, unless it lies past
    the first third; then the least within the first third if that is not at the third's
    end, else none."""
    cap = int(k * WARMUP_MAX_FRACTION)
    d = m.argmin(axis=-1)
    inside = m[..., : cap + 1].argmin(axis=-1)
    return np.where(d > cap, np.where(inside < cap, inside, 0), d)


@functools.lru_cache(maxsize=16)
def _orders(k: int, n: int, cols: int) -> np.ndarray:
    """The first ``cols`` places of ``n`` seeded random orders of ``range(k)``, one a row: the
    same for every series of ``k`` values, so that a table is reproducible, and drawn once
    for a table's many runs of one length."""
    rng = np.random.default_rng(SEED)
    rows = rng.permuted(np.tile(np.arange(k, dtype=np.min_scalar_type(k)), (n, 1)), axis=1)
    rows = rows[:, :cols].copy()
    rows.flags.writeable = False
    return rows


def warmup(x: np.ndarray) -> tuple[int, float]:
    """The warm-up of a rate series, in batches, and the p that the data show it: (MSER-5's
    truncation under the first-third rule, permutation p), ``(0, 1.0)`` when none is cut.

    MSER cuts something from most steady series (its least value is rarely at ``d = 0``),
    so the cut is tested: its statistic ``MSER(d*) / MSER(0)`` is compared with the same
    statistic, ``d*`` chosen again by the same rule, on :data:`WARMUP_PERMUTATIONS` seeded
    random orders of the batch means. As ``MSER(0)`` is the same in every order, ``MSER(d*)``
    alone is compared. Once so many orders reach the observed statistic that p must exceed
    :data:`WARMUP_ALPHA`, the rest are not compared; the p returned is then the share so far
    (above alpha, as the full count's would be)."""
    z = batch_means(np.asarray(x, dtype=float))
    k = len(z)
    if k < 3:
        return 0, 1.0
    zc = z - z.mean()
    total, total_sq, half = float(zc.sum()), float((zc * zc).sum()), k // 2
    m = _mser_head(zc[:half], k, total, total_sq)
    d = int(_truncation(m, k))
    if d == 0:
        return 0, 1.0
    observed = m[d] * (1 + 1e-9)  # an order within rounding of the series' own reaches it
    orders = _orders(k, WARMUP_PERMUTATIONS, half)
    enough = math.floor(WARMUP_ALPHA * (WARMUP_PERMUTATIONS + 1))  # as many: p > alpha
    reached = drawn = 0
    while drawn < WARMUP_PERMUTATIONS and reached < enough:
        head = zc[orders[drawn : drawn + _WARMUP_CHUNK]]
        mp = _mser_head(head, k, total, total_sq)
        dp = _truncation(mp, k)
        reached += int((np.take_along_axis(mp, dp[:, None], axis=1)[:, 0] <= observed).sum())
        drawn += len(head)
    return d, (1 + reached) / (1 + drawn)


def _pettitt_k(ranks: np.ndarray) -> np.ndarray:
    """Pettitt's ``|U_t|`` for t = 1 .. T-1, along the last axis of ``ranks``."""
    t_len = ranks.shape[-1]
    t = np.arange(1, t_len)
    return np.abs(2 * np.cumsum(ranks, axis=-1)[..., :-1] - t * (t_len + 1))


def pettitt(z: np.ndarray) -> tuple[float, int]:
    """Pettitt's test: (p, split) where ``split`` is the number of values before the change."""
    z = np.asarray(z, dtype=float)
    t_len = len(z)
    ranks = _sps().rankdata(z)
    u = _pettitt_k(ranks)
    k_obs = float(u.max())
    split = int(np.argmax(u)) + 1
    if t_len > PERMUTATION_MAX_BATCHES:
        p = min(1.0, 2 * math.exp(-6 * k_obs**2 / (t_len**3 + t_len**2)))
        return p, split
    k_perm = _pettitt_k(ranks[_orders(t_len, PERMUTATIONS, t_len)]).max(axis=1)
    # A permutation's K within rounding of the observed one counts as reaching it.
    p = (1 + int((k_perm >= k_obs - 1e-9).sum())) / (PERMUTATIONS + 1)
    return p, split


def mann_kendall(z: np.ndarray) -> float:
    """Mann-Kendall's two-sided p: Kendall's tau of the values against their order."""
    res = _sps().kendalltau(np.arange(len(z)), np.asarray(z, dtype=float))
    return float(res.pvalue) if not math.isnan(res.pvalue) else 1.0


def pettitt_extreme_orders(t_len: int) -> int:
    """How many of the ``T!`` orders of ``T`` distinct values reach Pettitt's largest ``K``:
    the numerator of its smallest p, which decides how short a series it can judge.

    ``|U_t| <= t (T - t)``, with equality only when the first ``t`` values are the ``t``
    highest or the ``t`` lowest; so ``K`` is at most ``floor(T^2 / 4)``, reached at
    ``t = floor(T / 2)`` or ``ceil(T / 2)`` and at no other ``t``. Counted by
    inclusion-exclusion over those one or two splits, for the highest values first and for
    the lowest (they exclude each other). For even ``T`` this is ``2 (T/2)!^2``, so that the
    smallest p is ``2 / C(T, T/2)``; for odd ``T`` either split reaches it, and the smallest p
    is larger than that formula says (``0.0286`` at 9, not ``2/126``)."""
    lo, hi = t_len // 2, (t_len + 1) // 2
    one_split = math.factorial(lo) * math.factorial(t_len - lo)
    if lo == hi:
        return 2 * one_split
    # Both splits: the lo highest first, then the next highest, then the rest in any order.
    both = math.factorial(lo) * math.factorial(t_len - hi)
    return 2 * (2 * one_split - both)


def pettitt_min_p(t_len: int) -> float:
    """Pettitt's smallest exact p with ``T`` distinct values: the share of orders that
    reach ``K``'s largest value (see :func:`pettitt_extreme_orders`)."""
    return pettitt_extreme_orders(t_len) / math.factorial(t_len)


def min_batches(alpha: float = ALPHA / TESTS) -> int:
    """The fewest batch means at which both tests can reject at ``alpha``: Pettitt's
    smallest p (:func:`pettitt_min_p`) and Mann-Kendall's, ``2 / T!``, at most ``alpha``."""
    t = 3
    while pettitt_min_p(t) > alpha or 2 / math.factorial(t) > alpha:
        t += 1
    return t


MIN_BATCHES = min_batches()
MIN_SAMPLES = MIN_BATCHES * BATCH


def _sse(x: np.ndarray) -> float:
    return float(((x - x.mean()) ** 2).sum()) if len(x) else 0.0


def _best_split(x: np.ndarray, lo: int, hi: int) -> tuple[int, float]:
    """The split ``s`` in ``lo..hi`` (values before it: ``x[:s]``) with the least squared
    error of two levels."""
    best = (lo, math.inf)
    for s in range(max(lo, 1), min(hi, len(x) - 1) + 1):
        err = _sse(x[:s]) + _sse(x[s:])
        if err < best[1]:
            best = (s, err)
    return best


@dataclass(frozen=True)
class Steady:
    """One run's answer; the table has one row of these per run (see :data:`COLUMN_DOCS`)."""

    samples: int
    warmup_samples: int | None
    warmup_end_t: float | None
    whole_rate: float
    steady_rate: float | None
    verdict: str
    step_index: int | None = None
    step_t: float | None = None
    step_before: float | None = None
    step_after: float | None = None
    trend_slope: float | None = None
    p_trend: float | None = None
    p_step: float | None = None
    min_samples: int = MIN_SAMPLES


def _rate(c0: float, c1: float, t0: float, t1: float) -> float:
    return (c1 - c0) / (t1 - t0) if t1 > t0 else math.nan


def analyse(t: Any, completed: Any, rate: Any) -> Steady:
    """The steady state of one run's series: ``t`` (s since the start), ``completed`` and
    ``rate`` per progress point, in time order; a point's rate covers the interval since the
    point before it (the first has none)."""
    t = np.asarray(t, dtype=float)
    c = np.asarray(completed, dtype=float)
    r = np.asarray(rate, dtype=float)
    obs = [i for i in range(1, len(t)) if math.isfinite(r[i])]
    n = len(obs)
    whole = _rate(c[0], c[-1], t[0], t[-1]) if len(t) > 1 else math.nan
    if n < MIN_SAMPLES:
        return Steady(n, None, None, whole, None, SHORT)
    x = r[obs]
    start_t = t[[i - 1 for i in obs]]  # where each observation's interval begins
    start_c = c[[i - 1 for i in obs]]
    d, p_warmup = warmup(x)
    drop = d * BATCH if p_warmup <= WARMUP_ALPHA else 0
    kept = x[drop:]
    base = Steady(n, drop, float(start_t[drop]), whole, None, SHORT)
    if len(kept) < MIN_SAMPLES:
        return base
    z = batch_means(kept)
    p_trend = mann_kendall(z)
    p_step, _ = pettitt(z)
    tail_rate = _rate(start_c[drop], c[-1], start_t[drop], t[-1])
    slope = float(_sps().theilslopes(z, np.arange(len(z)) * BATCH).slope)
    # Slope per observation, in s: observations are the progress interval apart.
    interval = float(np.median(np.diff(t[obs]))) if n > 1 else 1.0
    found = {"p_trend": p_trend, "p_step": p_step, "trend_slope": slope / interval}
    each = ALPHA / TESTS
    if p_trend > each and p_step > each:
        verdict = WARMUP if drop else STEADY
        return Steady(**{**asdict(base), **found, "verdict": verdict, "steady_rate": tail_rate})
    split, step_err = _best_split(z, 1, len(z) - 1)
    line = np.polyfit(np.arange(len(z)), z, 1)
    line_err = float(((np.polyval(line, np.arange(len(z))) - z) ** 2).sum())
    if line_err <= step_err:
        return Steady(**{**asdict(base), **found, "verdict": TREND})
    s, _ = _best_split(kept, (split - 1) * BATCH + 1, (split + 1) * BATCH - 1)
    at = drop + s  # the first observation after the step
    return Steady(
        **{
            **asdict(base),
            **found,
            "verdict": STEP,
            "step_index": at,
            "step_t": float(start_t[at]),
            "step_before": _rate(start_c[drop], start_c[at], start_t[drop], start_t[at]),
            "step_after": _rate(start_c[at], c[-1], start_t[at], t[-1]),
        }
    )


def table(series: pd.DataFrame | None) -> pd.DataFrame:
    """One row per run of a series table (``series.csv``), in its order: see
    :data:`COLUMN_DOCS`. No series (None or no rows): the header alone."""
    rows = []
    if series is not None and not series.empty:
        for key, run in series.groupby(list(RUN_KEYS), sort=False):
            run = run.sort_values("t", kind="stable")
            found = analyse(run["t"], run["completed"], run["rate"])
            rows.append(
                {
                    "schema_version": STEADY_SCHEMA_VERSION,
                    **dict(zip(RUN_KEYS, key, strict=True)),
                    **asdict(found),
                }
            )
    df = pd.DataFrame(rows, columns=list(COLUMNS))
    for col in ("warmup_samples", "step_index"):
        df[col] = df[col].astype("Int64")
    return df


def write(df: pd.DataFrame, path: str | Path) -> None:
    write_text_atomic(Path(path), df.to_csv(index=False))


def read(path: str | Path) -> pd.DataFrame:
    """A steady-state table written by :func:`write`, refusing other schema versions."""
    df = pd.read_csv(path, dtype={"cell": str, "host": str, "series": str})
    if "schema_version" not in df.columns:
        raise ValueError(f"{path}: no schema_version column; not a steady-state table")
    versions = set(df["schema_version"].dropna().astype(int))
    if versions - {STEADY_SCHEMA_VERSION}:
        raise ValueError(
            f"{path}: steady-state schema version {sorted(versions)}, "
            f"expected {STEADY_SCHEMA_VERSION}"
        )
    return df


METHOD = (
    "Steady state, per run, from its progress series (one rate per interval between two "
    "progress lines): the warm-up is cut by MSER-5 (White 1997; White, Cobb & Spratt 2000): "
    "the rates are averaged in batches of 5 and the first d batches dropped, d (within the "
    "first half) minimising the squared deviations of the rest over (batches left)^2; a drop "
    "longer than a third of the run is not taken as warm-up (a shorter MSER minimum inside "
    "the first third then is), and a drop is kept only when a permutation test of "
    "MSER(0)/MSER(d), d chosen again the same way in each of {warm_perms:,} random orders of "
    "the batch means, rejects at {warm_alpha:g}. The rest is steady unless a "
    "Mann-Kendall test (trend) or Pettitt's test (step, p from {perms:,} permutations) on its "
    "batch means rejects at {each:g} each ({alpha:g} for the two together, Bonferroni); a "
    "run with fewer than {min} rates after its warm-up ({min} s at a progress line a second) is "
    "too short to say. Rates are "
    "operations over seconds of the series; the whole-run rate is over the whole series."
)


def _num(value: float) -> str:
    return f"{value:.3g}" if abs(value) < 100 else f"{value:,.0f}"


def describe(row: dict[str, Any]) -> str:
    """A run's verdict as the post says it, from its row of the table."""
    verdict = row["verdict"]
    if verdict == SHORT:
        warm = row.get("warmup_samples")
        left = int(row["samples"]) - (0 if pd.isna(warm) else int(warm))
        after = "" if pd.isna(warm) or not warm else " after the warm-up"
        rates = "rate" if left == 1 else "rates"
        return f"too short to say ({left} {rates}{after}, {int(row['min_samples'])} needed)"
    if verdict == STEP:
        return (
            f"step at t={row['step_t']:.0f} s ({_num(row['step_before'])} to "
            f"{_num(row['step_after'])} ops/s)"
        )
    if verdict == TREND:
        per_min = row["trend_slope"] * 60
        way = "rising" if per_min > 0 else "falling"
        return f"trend, {way} {_num(abs(per_min))} ops/s per minute"
    return verdict


def _short_said(df: pd.DataFrame, short: list[str]) -> str:
    """The runs too short to say, for the summary: named when few, counted when many (the
    table names each)."""
    if len(short) <= 3:
        return "too short to say: " + "; ".join(short)
    rows = df[df["verdict"] == SHORT]
    longest = int(rows["samples"].max())
    need = int(rows["min_samples"].max())
    every = "all" if len(short) == len(df) else ""
    return (
        f"{every + ' ' if every else ''}{len(short)} runs too short to say (at most {longest} "
        f"{'rate' if longest == 1 else 'rates'}; {need} needed)"
    )


def section(df: pd.DataFrame | None) -> dict[str, Any] | None:
    """What the post says of the steady state: a row per run, the runs that never reached a
    steady state and those too short to say, and the method; None without series."""
    if df is None or df.empty:
        return None
    rows, never, short = [], [], []
    for r in df.to_dict("records"):
        name = f"`{r['cell']}` on {r['host']}, repeat {r['repeat']}"
        if str(r.get("series", "")).startswith("client-"):  # one of a run's several clients
            name += f", client {str(r['series']).split('-', 1)[1]}"
        said = describe(r)
        warm = r.get("warmup_samples")
        if pd.isna(warm):
            warmup = "n/a"
        elif warm:
            warmup = f"{r['warmup_end_t']:.0f} s ({int(warm)} rates)"
        else:
            warmup = "none"
        steady_rate = _num(r["steady_rate"]) if pd.notna(r["steady_rate"]) else "not steady"
        if r["verdict"] == SHORT:
            steady_rate = "n/a"
            short.append(f"{name} {said.removeprefix('too short to say ')}")
        elif r["verdict"] not in STEADY_VERDICTS:
            never.append(f"{name}: {said}")
        rows.append(
            [
                f"`{r['cell']}`",
                str(r["host"]),
                str(r["repeat"]),
                _num(r["whole_rate"]) if pd.notna(r["whole_rate"]) else "n/a",
                steady_rate,
                warmup,
                said,
            ]
        )
    return {
        "header": [
            "test",
            "host",
            "repeat",
            "whole-run rate (ops/s)",
            "steady-state rate (ops/s)",
            "warm-up",
            "verdict",
        ],
        "rows": rows,
        "n": len(rows),
        # Runs of several clients have a series each client: then the count is of series.
        "noun": "progress series"
        if "series" in df and df["series"].astype(str).str.startswith("client-").any()
        else "runs with a progress series",
        "n_steady": sum(v in STEADY_VERDICTS for v in df["verdict"]),
        "never": never,
        "short": short,
        "short_said": _short_said(df, short),
        "method": METHOD.format(
            perms=PERMUTATIONS,
            each=ALPHA / TESTS,
            alpha=ALPHA,
            min=MIN_SAMPLES,
            warm_perms=WARMUP_PERMUTATIONS,
            warm_alpha=WARMUP_ALPHA,
        ),
    }
