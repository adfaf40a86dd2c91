"""Change points in a series over builds, and whether the newest build is worse.

A nightly history answers "when did it get slower": which build a metric stepped at. Each
build contributes its runs; the series is the builds' medians, in the order the builds were
first measured, on the log scale where every value is positive (a step is then a ratio).

Change points are found by PELT (Killick, Fearnhead & Eckley, "Optimal detection of
changepoints with a linear computational cost", JASA 2012): the segmentation minimising the
segments' squared deviations from their own mean, over sigma squared, plus a penalty beta a
change. PELT finds the exact optimum of that cost (as optimal partitioning does) while
pruning start points that can no longer win.

sigma is build-to-build noise, not the runs' spread: consecutive builds are measured in
different sessions, and a session's own offset (the machine's state that night) moves a
build's median by more than its runs vary. It is estimated from the builds themselves,
robustly, as 1.4826 * median |m[i+1] - m[i]| / sqrt(2) (a step moves one difference only),
and never below the spread of one build's median from its own runs
(pi / 2 * variance / runs, the large-sample variance of a median). That needs
:data:`MIN_BUILDS` builds.

beta is set so that a series of builds with no change shows a change point in at most
:data:`FALSE_ALARM` of histories: the estimate of sigma from a few differences is itself
noisy, and a textbook penalty (BIC, 2 log n) then finds a change in a quarter of short
stationary histories. :data:`PENALTIES` holds the penalty for each number of builds, from
:func:`calibrate` (the 95th percentile of the smallest penalty at which a stationary
Gaussian history shows no change, over 20,000 seeded histories); the tests check the
false-alarm rate by simulating PELT itself. With fewer builds than :data:`MIN_BUILDS` there
is no build-to-build noise to read, and no PELT: each step between neighbouring builds is
the exact Mann-Whitney test of their runs, at 5% over the B - 1 steps (Bonferroni).

The noise floor is the smallest step at the newest build that this history would flag: a
newest build alone is split off when (B - 1) / B * delta^2 / sigma^2 exceeds beta, so
delta = sigma * sqrt(beta * B / (B - 1)) (as a ratio, exp of that, less one). A change point
is beyond the noise by construction; the floor says how small a regression the next build
could show and still be caught. With fewer than :data:`MIN_BUILDS` builds there is none.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from perfpost.analysis.stats import mann_whitney
from perfpost.units import HIGHER_IS_BETTER

FALSE_ALARM = 0.05
MIN_BUILDS = 4  # three differences, the fewest a robust build-to-build scale is read from
SEED = 20261127

# Builds -> beta, from calibrate(builds, 20_000): kept here so every history gets the same
# penalty without simulating. Between listed sizes beta is interpolated in log(builds);
# beyond the last it grows as 2 log(builds) from there.
# (Odd and even numbers of builds differ: the median of an even number of differences is
# the mean of two, a steadier estimate.)
PENALTIES: dict[int, float] = {
    4: 19.37,
    5: 11.94,
    6: 16.55,
    7: 13.45,
    8: 16.1,
    9: 13.33,
    10: 14.57,
    11: 13.68,
    12: 14.08,
    13: 13.12,
    14: 13.47,
    15: 13.2,
    16: 13.39,
    17: 12.65,
    18: 13.26,
    19: 12.58,
    20: 12.83,
    21: 12.39,
    22: 12.37,
    23: 12.27,
    24: 12.35,
    25: 12.33,
    26: 12.23,
    27: 11.81,
    28: 12.17,
    29: 12.04,
    30: 12.24,
    31: 11.9,
    32: 11.83,
    33: 11.67,
    34: 12.01,
    35: 11.85,
    36: 11.81,
    37: 11.87,
    38: 11.61,
    39: 11.63,
    40: 11.76,
    48: 11.79,
    56: 11.42,
    64: 11.44,
    80: 11.27,
    100: 11.3,
    128: 11.3,
    160: 11.33,
    200: 11.29,
    256: 11.39,
}


@dataclass(frozen=True)
class Change:
    """A change point: the series steps at ``index`` (the first build of a new segment)."""

    index: int
    build: str
    before: float  # the preceding segment's mean of build medians, in the metric's units
    after: float
    change: float  # after / before - 1 (a shift over |before| where values are not positive)
    direction: str  # better, worse, higher or lower
    runs_p: float | None  # Mann-Whitney p of the runs of the builds either side of the step


@dataclass(frozen=True)
class Analysis:
    """What a series over builds shows."""

    builds: list[str]
    medians: list[float]  # per build, in the metric's units
    runs: list[int]
    changes: list[Change]
    segments: list[tuple[int, int]]  # [start, end) build indices
    sigma: float | None  # build-to-build noise on the analysed scale (log, or the units)
    sigma_from: str  # "builds" or "runs": where the noise was read from
    floor: float | None  # the smallest step at the newest build it would flag, relative
    penalty: float | None  # beta; None where the builds were too few for PELT
    log_scale: bool
    higher_is_better: bool | None
    newest_worse: bool = False
    note: str = ""
    segment_means: list[float] = field(default_factory=list)  # in the metric's units


def _costs(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return np.concatenate([[0.0], np.cumsum(y)]), np.concatenate([[0.0], np.cumsum(y * y)])


def pelt(y: Sequence[float], sigma: float, penalty: float) -> list[int]:
    """The start index of every segment after the first, for the segmentation of ``y``
    minimising sum((y - segment mean)^2) / sigma^2 + penalty * changes (PELT, with its
    pruning: a start s is dropped once F(s) + C(s, t) exceeds F(t), which for this cost can
    never win again)."""
    y = np.asarray(y, dtype=float)
    n = len(y)
    if n < 2 or sigma <= 0:
        return []
    cs, cs2 = _costs(y)
    scale = sigma * sigma
    best = np.full(n + 1, np.inf)
    best[0] = -penalty
    last = np.zeros(n + 1, dtype=int)
    alive = np.array([0])
    for t in range(1, n + 1):
        k = t - alive
        sums = cs[t] - cs[alive]
        cost = np.maximum(cs2[t] - cs2[alive] - sums * sums / k, 0.0) / scale
        total = best[alive] + cost
        i = int(np.argmin(total))
        best[t] = total[i] + penalty
        last[t] = alive[i]
        alive = np.append(alive[total <= best[t]], t)
    out, t = [], n
    while t > 0:
        s = int(last[t])
        if s > 0:
            out.append(s)
        t = s
    return sorted(out)


def _robust_sigma(medians: np.ndarray) -> float:
    d = np.abs(np.diff(medians))
    return float(1.4826 * np.median(d) / math.sqrt(2)) if len(d) else 0.0


def _critical_penalty(y: np.ndarray, sigma: float, most: int = 6) -> float:
    """The smallest penalty at which the optimal segmentation of ``y`` has no change:
    max over k of (cost with no change - least cost with k changes) / k, k up to ``most``
    (a stationary series whose best split needs more changes than that is vanishingly rare,
    and the tests check the rate with PELT itself)."""
    n = len(y)
    cs, cs2 = _costs(y)
    s = np.arange(n + 1)
    k = s[None, :] - s[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        sums = cs[None, :] - cs[:, None]
        cost = (cs2[None, :] - cs2[:, None] - sums * sums / k) / (sigma * sigma)
    cost = np.where(k > 0, np.maximum(cost, 0.0), np.inf)
    whole = float(cost[0, n])
    layer = cost[0].copy()  # least cost of y[:t] in one segment
    out = 0.0
    for changes in range(1, min(most, n - 1) + 1):
        layer = np.min(layer[:, None] + cost, axis=0)
        out = max(out, (whole - float(layer[n])) / changes)
    return out


def calibrate(builds: int, histories: int = 20_000, seed: int = SEED) -> float:
    """The penalty that keeps false change points in stationary Gaussian histories of
    ``builds`` builds to :data:`FALSE_ALARM`, with sigma estimated as :func:`analyse` does
    (the scale-free problem: the rate does not depend on the noise's size)."""
    rng = np.random.default_rng(seed + builds)
    crit = []
    for _ in range(histories):
        y = rng.standard_normal(builds)
        sigma = _robust_sigma(y)
        crit.append(_critical_penalty(y, sigma) if sigma > 0 else math.inf)
    return float(np.quantile(crit, 1 - FALSE_ALARM))


def penalty(builds: int) -> float:
    """beta for a history of ``builds`` builds, :data:`MIN_BUILDS` or more (see the
    module's docstring)."""
    if builds < MIN_BUILDS:
        raise ValueError(f"no PELT penalty for {builds} builds: fewer than {MIN_BUILDS}")
    sizes = sorted(PENALTIES)
    if builds in PENALTIES:
        return PENALTIES[builds]
    if builds > sizes[-1]:
        return PENALTIES[sizes[-1]] + 2 * math.log(builds / sizes[-1])
    hi = next(s for s in sizes if s > builds)
    lo = max(s for s in sizes if s < builds)
    w = (math.log(builds) - math.log(lo)) / (math.log(hi) - math.log(lo))
    return PENALTIES[lo] + w * (PENALTIES[hi] - PENALTIES[lo])


def _median_variance(runs: np.ndarray) -> float | None:
    if len(runs) < 2:
        return None
    return math.pi / 2 * float(np.var(runs, ddof=1)) / len(runs)


def analyse(builds: Sequence[str], runs: Sequence[Sequence[float]], unit: str = "") -> Analysis:
    """Change points over ``builds`` (in order), each with its runs' values, and whether
    the newest build is worse than the segment before its own, beyond the noise floor."""
    values = [np.asarray([v for v in r if math.isfinite(v)], dtype=float) for r in runs]
    keep = [i for i, v in enumerate(values) if len(v)]
    builds = [builds[i] for i in keep]
    values = [values[i] for i in keep]
    hib = HIGHER_IS_BETTER.get(unit)
    log_scale = bool(values) and all(float(v.min()) > 0 for v in values)
    ys = [np.log(v) if log_scale else v for v in values]
    medians = np.array([float(np.median(y)) for y in ys])
    raw_medians = [float(np.median(v)) for v in values]
    base = {
        "builds": list(builds),
        "medians": raw_medians,
        "runs": [len(v) for v in values],
        "log_scale": log_scale,
        "higher_is_better": hib,
    }
    if len(builds) < 2:
        return Analysis(
            **base,
            changes=[],
            segments=[(0, len(builds))],
            sigma=None,
            sigma_from="",
            floor=None,
            penalty=None,
            note="one build: nothing to compare yet",
            segment_means=raw_medians[:1],
        )
    within = [w for w in (_median_variance(y) for y in ys) if w is not None]
    sigma_runs = math.sqrt(float(np.median(within))) if within else 0.0
    if len(builds) >= MIN_BUILDS:
        sigma = max(_robust_sigma(medians), sigma_runs)
        sigma_from = "builds"
        note = ""
    else:
        sigma = sigma_runs
        sigma_from = "runs"
        note = (
            f"{len(builds)} builds: build-to-build noise is read from {MIN_BUILDS} builds"
            " on; until then each step is the exact Mann-Whitney test of the runs either"
            f" side (Bonferroni over {len(builds) - 1}), which a session's own offset can"
            " pass"
        )
    if len(builds) < MIN_BUILDS:
        # Too few builds to know their noise: each boundary is the exact Mann-Whitney test
        # of the runs either side, Bonferroni over the boundaries.
        beta = None
        cut = FALSE_ALARM / (len(builds) - 1)
        starts = [
            i
            for i in range(1, len(builds))
            if mann_whitney(values[i - 1], values[i]).p_value <= cut
            and medians[i] != medians[i - 1]
        ]
    else:
        beta = penalty(len(builds))
        if sigma <= 0:  # no spread at all: every difference is a change
            starts = [i for i in range(1, len(builds)) if medians[i] != medians[i - 1]]
        else:
            starts = pelt(medians, sigma, beta)
    bounds = [0, *starts, len(builds)]
    segments = list(itertools.pairwise(bounds))
    means = [float(np.mean(medians[a:b])) for a, b in segments]

    def back(x: float) -> float:
        return math.exp(x) if log_scale else x

    floor = None
    if beta is not None and sigma > 0:
        n = len(builds)
        step = sigma * math.sqrt(beta * n / (n - 1))
        middle = max(abs(float(np.median(medians))), 1e-300)
        floor = math.expm1(step) if log_scale else step / middle
    changes = []
    for j, start in enumerate(starts):
        before, after = means[j], means[j + 1]
        if log_scale:
            rel = math.expm1(after - before)
        else:
            rel = (after - before) / abs(before) if before else math.nan
        up = after > before
        if hib is None:
            direction = "higher" if up else "lower"
        else:
            direction = "better" if up == hib else "worse"
        p = mann_whitney(values[start - 1], values[start]).p_value
        changes.append(
            Change(
                index=start,
                build=builds[start],
                before=back(before),
                after=back(after),
                change=rel,
                direction=direction,
                runs_p=p,
            )
        )
    # The newest build lies in a segment worse than the one before it: a regression that
    # has not been undone (found beyond the noise, by PELT's penalty or the exact test).
    newest_worse = bool(changes) and changes[-1].direction == "worse"
    return Analysis(
        **base,
        changes=changes,
        segments=segments,
        sigma=sigma if sigma > 0 else None,
        sigma_from=sigma_from,
        floor=floor,
        penalty=beta,
        newest_worse=newest_worse,
        note=note,
        segment_means=[back(m) for m in means],
    )
