"""Repeats with a precision target: the median's interval, the round's decision, the config.

The interval's expected ends come from scipy's binomial distribution, not from perfpost."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from perfpost.analysis import precision
from perfpost.analysis.stats import median_interval
from perfpost.errors import ConfigError
from perfpost.plan.build import build_plan


def scipy_interval(values: list[float]) -> tuple[float, float, float] | None:
    """The order statistics x(k), x(n+1-k) with k the largest where P(B <= k-1) <= 2.5%."""
    x = sorted(values)
    n = len(x)
    ks = [k for k in range(1, n // 2 + 1) if sps.binom.cdf(k - 1, n, 0.5) <= 0.025]
    if not ks:
        return None
    k = max(ks)
    return x[k - 1], x[n - k], 1 - 2 * sps.binom.cdf(k - 1, n, 0.5)


@pytest.mark.parametrize("n", [1, 5, 6, 7, 9, 12, 20, 41])
def test_the_median_interval_is_the_binomial_order_statistics(n):
    values = list(np.random.default_rng(n).lognormal(0, 0.3, n))
    got = median_interval(values)
    want = scipy_interval(values)
    assert got.median == pytest.approx(float(np.median(values)))
    if want is None:  # fewer than 6 runs: no 95% interval exists
        assert n < 6
        assert got.low is None
        assert got.precision is None
    else:
        assert (got.low, got.high) == (want[0], want[1])
        assert got.level == pytest.approx(want[2])
        assert got.level >= 0.95


def test_nine_runs_leave_out_one_at_each_end():
    # By hand: P(B <= 0) = 1/512 and P(B <= 1) = 10/512 are at most 2.5%, P(B <= 2) = 46/512
    # is not, so k = 2: the 2nd smallest and the 2nd largest, coverage 1 - 20/512.
    got = median_interval([9, 1, 8, 2, 7, 3, 6, 4, 5])
    assert (got.low, got.median, got.high) == (2, 5, 8)
    assert got.level == pytest.approx(1 - 20 / 512)
    assert got.precision == pytest.approx(3 / 5)


def record(value: float | None, status: str = "done") -> dict:
    metrics = [] if value is None else [{"name": "rate", "value": value, "unit": "1/s"}]
    return {"status": status, "metrics": metrics}


SETTINGS = {"min": 3, "max": 8, "precision": 0.05, "metric": "rate", "step": 2}


def test_a_round_asks_for_more_until_the_interval_is_narrow_enough():
    # 5 runs: no interval yet, so 2 more (step 2).
    wide = precision.decide([record(v) for v in (100, 101, 99, 100, 102)], SETTINGS, 3)
    assert (wide["more"], wide["next"], wide["precision"]) == (True, 7, None)
    # 7 runs within 98..102 of a median of 100: +-2% <= 5%, enough.
    narrow = [record(v) for v in (100, 101, 99, 100, 102, 98, 100)]
    done = precision.decide(narrow, SETTINGS, 5)
    assert (done["more"], done["why"], done["precision"]) == (False, "reached", 0.02)
    # 7 runs spread by 20%: one more, not two (max is 8), then stop at max.
    spread = [record(v) for v in (100, 120, 80, 100, 110, 90, 100)]
    assert precision.decide(spread, SETTINGS, 5)["next"] == 8
    at_max = precision.decide([*spread, record(100)], SETTINGS, 7)
    assert (at_max["more"], at_max["why"]) == (False, "max")


def test_a_round_whose_runs_all_failed_ends_the_cell():
    runs = [record(100), record(101), record(99), record(None, "failed"), record(None, "failed")]
    decision = precision.decide(runs, SETTINGS, 3)
    got = (decision["more"], decision["why"], decision["finished"])
    assert got == (False, "no finished run", 3)


def plan(repeats, **extra) -> object:
    params = {"dir": "/tmp/x", "bs": "4k", "count": 1}
    exp = {"tool": "dd", "params": params, "repeats": repeats, **extra}
    return build_plan({"experiments": {"e": exp}})


def test_the_config_takes_a_percentage_or_a_fraction():
    p = plan({"min": 4, "max": 20, "precision": "2.5%"})
    exp = p.experiments["e"]
    assert (exp.repeats, exp.max_repeats) == (4, 20)
    assert exp.precision == {
        "min": 4,
        "max": 20,
        "precision": 0.025,
        "metric": "throughput",
        "step": 1,
    }
    assert plan({"max": 6, "precision": 0.1}).experiments["e"].precision["precision"] == 0.1


@pytest.mark.parametrize(
    ("repeats", "extra", "where", "words"),
    [
        ({"min": 9, "max": 8, "precision": "5%"}, {}, "experiments.e.repeats", "min (9)"),
        ({"max": 5, "precision": "5%"}, {}, "experiments.e.repeats", "6"),
        ({"max": 10, "precision": "five"}, {}, "experiments.e.repeats", ""),
        ({"max": 10, "precision": "150%"}, {}, "experiments.e.repeats.precision", "100%"),
        (5000, {}, "experiments.e.repeats", "maximum of 1000"),
        (
            {"max": 10, "precision": "5%"},
            {"start_together": True, "hosts": ["localhost"]},
            "experiments.e.repeats",
            "start_together",
        ),
    ],
)
def test_a_bad_precision_target_is_named(repeats, extra, where, words):
    with pytest.raises(ConfigError) as e:
        plan(repeats, **extra)
    assert where in str(e.value)
    assert words in str(e.value)
