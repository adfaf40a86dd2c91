"""The drift check: Mann-Kendall's exact p against scipy's exact Kendall tau and against every
order enumerated here, its false-alarm rate and power over many seeds, and the Validity
paragraph on runs whose order is known only from their start times."""

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import kendalltau

from perfpost.analysis import drift
from perfpost.analysis.stats import holm


def every_order_p(values: list[float]) -> float:
    """Two-sided P(|S| >= |s|) by trying every order of the runs: the definition itself."""
    x = np.asarray(values, dtype=float)
    i, j = np.triu_indices(len(x), 1)

    def s(v):
        return int(np.sign(v[j] - v[i]).sum())

    observed = abs(s(x))
    orders = list(itertools.permutations(range(len(x))))
    return sum(abs(s(x[list(o)])) >= observed for o in orders) / len(orders)


@pytest.mark.parametrize("n", range(2, 15))
def test_without_ties_p_is_scipys_exact_kendall_tau(n):
    # Kendall's tau between run order and value is S over n(n-1)/2; scipy's exact method
    # counts the same orders, so the p's are equal, not close.
    rng = np.random.default_rng(n)
    for _ in range(10):
        x = rng.normal(size=n)
        trend = drift.mann_kendall(x.tolist())
        tau = kendalltau(np.arange(n), x, method="exact")
        assert trend.p == pytest.approx(tau.pvalue, abs=1e-12)
        assert trend.s == round(tau.statistic * n * (n - 1) / 2)


@pytest.mark.parametrize(
    "values",
    [
        [1, 1, 2, 3, 4, 5],
        [3, 3, 3, 2, 1, 1, 0],
        [5, 4, 4, 4, 1, 2, 2, 0],
        [1, 2, 1, 2, 1, 2],
    ],
)
def test_with_ties_p_is_every_order_counted(values):
    assert drift.mann_kendall(values).p == pytest.approx(every_order_p(values), abs=1e-12)


def test_with_ties_and_many_runs_the_random_orders_come_near_every_order():
    # 9 runs: 362,880 orders, beyond the exact limit; 9,999 random ones are within three
    # standard errors of the count of every one.
    values = [10, 10, 11, 12, 12, 13, 12, 14, 14]
    exact = every_order_p(values)
    got = drift.mann_kendall(values).p
    assert abs(got - exact) <= 3 * math.sqrt(exact * (1 - exact) / drift.PERMUTATIONS) + 1e-4


def test_a_straight_line_has_every_pair_in_order_and_its_slope():
    t = drift.mann_kendall([100 - i for i in range(10)])
    assert (t.s, t.pairs) == (-45, 45)
    assert t.p == pytest.approx(2 / math.factorial(10))  # the one order, and its reverse
    assert t.slope == pytest.approx(-1.0)


@pytest.mark.parametrize("n", [5, 10])
def test_false_alarms_stay_at_the_level_over_4000_seeds(n):
    # No trend: runs drawn independently. An exact test flags at most 5% of such cells; over
    # 4,000 seeds the observed share is within 3 standard errors of that (1.1 points at 5%).
    flagged = sum(
        drift.mann_kendall(np.random.default_rng(seed).normal(size=n).tolist()).p <= 0.05
        for seed in range(4000)
    )
    assert flagged / 4000 <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 4000)


def test_a_post_of_six_steady_cells_is_flagged_in_at_most_5_percent_of_1000_seeds():
    # Holm's correction keeps the family's rate: any flag among six cells of 10 runs each.
    posts = 0
    for seed in range(1000):
        rng = np.random.default_rng(10_000 + seed)
        ps = [drift.mann_kendall(rng.normal(size=10).tolist()).p for _ in range(6)]
        posts += min(holm(ps)) <= 0.05
    assert posts / 1000 <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 1000)


def test_a_one_percent_a_run_slowdown_is_found_in_nearly_every_seed():
    # 10 runs, each 1% slower than the one before, with 0.5% noise: the trend (9% over the
    # runs) is 18 noise widths; found in at least 95% of 500 seeds.
    found = sum(
        drift.mann_kendall(
            (
                100 * 0.99 ** np.arange(10) * (1 + 0.005 * np.random.default_rng(s).normal(size=10))
            ).tolist()
        ).p
        <= 0.05
        for s in range(500)
    )
    assert found >= 475


def frames(series: dict[str, list[float]], starts: dict[str, list[int]]):
    """tidy.csv and cells.csv rows of one experiment: ``series[cell]`` by repeat 1, 2, ...,
    ``starts[cell]`` the second each repeat started at."""
    tidy, cells = [], []
    for cell, values in series.items():
        for r, (v, t) in enumerate(zip(values, starts[cell], strict=True), start=1):
            tidy.append(
                {
                    "experiment": "e",
                    "cell": cell,
                    "host": "h1",
                    "repeat": r,
                    "storage": cell.split("=")[1],
                    "tool": "dd",
                    "metric": "throughput",
                    "value": v,
                    "unit": "B/s",
                    "status": "done",
                    "attempt": 1,
                }
            )
            start = pd.Timestamp("2026-11-27T00:00:00Z") + pd.Timedelta(seconds=t)
            cells.append(
                {"cell": cell, "host": "h1", "repeat": r, "status": "done", "start": start}
            )
    return pd.DataFrame(tidy), pd.DataFrame(cells).assign(start=lambda d: d["start"].astype(str))


def test_the_check_orders_runs_by_their_start_and_flags_only_the_drifting_cell():
    # storage=disk's runs, by repeat, are 1.00 .. 0.91 GB/s, but they started in the reverse
    # order of their repeat numbers (retried, or run on several hosts at once): in the order
    # they ran the disk got faster, 10 MB/s a run. storage=mem is ten values in no order.
    disk = [1.00e9 - 0.01e9 * r for r in range(10)]
    mem = [2.0e9 + d for d in (3, -1, 4, -1, 5, -9, 2, -6, 5, -3)]
    tidy, cells = frames(
        {"storage=disk": disk, "storage=mem": [m * 1e6 for m in mem]},
        {"storage=disk": list(range(20, 10, -1)), "storage=mem": list(range(30, 40))},
    )
    got = drift.check(tidy, cells, ["storage"], "throughput")
    assert got["title"] == "Drift"
    assert len(got["flags"]) == 1
    flag = got["flags"][0]
    assert flag.startswith("`storage=disk` on h1: its 10 runs' throughput rose with run order")
    # S = +45 of 45; p = 2 / 10!; Holm over two cells doubles it (mem's own p is larger).
    p = 2 / math.factorial(10)
    assert f"S = +45 of at most 45, p = {p:.3g}; {2 * p:.3g} after Holm" in flag
    assert "from 910 MB/s in the first to 1 GB/s in the last" in flag
    # Theil-Sen: +10 MB/s a run over the median 955 MB/s is +1.05%, shown as +1.0%.
    assert "+1.0% of the median a run of the cell" in flag
    assert "2 cells tested" in " ".join(got["facts"])


def test_too_few_runs_are_said_and_not_tested():
    tidy, cells = frames({"storage=disk": [3.0, 2.0, 1.0, 0.5]}, {"storage=disk": [1, 2, 3, 4]})
    got = drift.check(tidy, cells, ["storage"], "throughput")
    assert got["flags"] == []
    assert "1 cell with fewer than 5 finished runs is not tested" in " ".join(got["facts"])
    assert got["untestable"] == "no cell has 5 or more finished runs"


def test_a_family_no_order_could_flag_is_said_untestable_not_nothing_flagged():
    # hcfs's four cells of five runs: the most extreme order of five is 2/120 = 0.0167, and
    # Holm's correction over four makes it 4 x 0.0167 = 0.0667: no outcome can reach 0.05,
    # however far the runs rose (here every cell in perfect order).
    series = {f"storage=s{i}": [1.0, 2.0, 3.0, 4.0, 5.0] for i in range(4)}
    tidy, cells = frames(series, {c: [1, 2, 3, 4, 5] for c in series})
    got = drift.check(tidy, cells, ["storage"], "throughput")
    assert got["flags"] == []
    assert got["untestable"] == (
        "with 5 runs a cell and Holm's correction over 4 cells, no order of the runs could "
        f"give an adjusted p of 0.05 or less (the smallest is {4 * 2 / 120:.3g})"
    )
    # Three cells: 3 x 2/120 = 0.05, which can: tested, and these runs are flagged.
    three = {c: v for c, v in list(series.items())[:3]}
    tidy, cells = frames(three, {c: [1, 2, 3, 4, 5] for c in three})
    got = drift.check(tidy, cells, ["storage"], "throughput")
    assert got.get("untestable") is None
    assert len(got["flags"]) == 3
