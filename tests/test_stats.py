"""The statistics behind a comparison's claim, checked against numbers computed apart from
perfpost: scipy's Mann-Whitney test, brute-force enumeration of every split of the runs and
of every pairwise difference, R's documented wilcox.test example, and Holm's method by hand."""

import itertools
import math
import random
import statistics

import numpy as np
import pandas as pd
import pytest
from scipy.stats import mannwhitneyu

from perfpost.analysis import compare, report, stats

# Hollander & Wolfe's two-sample example, as in R's ?wilcox.test:
# wilcox.test(x, y, alternative = "g") prints W = 35, p-value = 0.1272.
X = [0.80, 0.83, 1.89, 1.04, 1.45, 1.38, 1.91, 1.64, 0.73, 1.46]
Y = [1.15, 0.88, 0.90, 0.74, 1.21]


def brute_u(base, cand):
    """Pairs where the candidate is above the baseline, ties one half, by two loops."""
    return sum((c > b) + 0.5 * (c == b) for b in base for c in cand)


def brute_null(m, n):
    """The null distribution of U: every way to pick which m of the m + n ranks are the
    baseline's, counted."""
    counts = [0] * (m * n + 1)
    for picked in itertools.combinations(range(m + n), m):
        base = set(picked)
        u = sum(1 for c in range(m + n) if c not in base for b in base if c > b)
        counts[u] += 1
    return counts


def brute_interval(base, cand, confidence=0.95):
    """Hodges-Lehmann estimate and interval by enumeration: the median of every pairwise
    difference, and the k-th smallest and largest of them, k the largest with
    P(U <= k - 1) <= (1 - confidence) / 2 under the enumerated null."""
    diffs = sorted(c - b for b in base for c in cand)
    counts = brute_null(len(base), len(cand))
    total = sum(counts)
    k = 0
    while sum(counts[: k + 1]) / total <= (1 - confidence) / 2:
        k += 1
    if k == 0:
        return statistics.median(diffs), None, None
    return statistics.median(diffs), diffs[k - 1], diffs[-k]


def samples(seed, m, n, shift=0.0):
    rng = random.Random(seed)
    base = [round(rng.lognormvariate(5, 0.2), 6) for _ in range(m)]
    cand = [round(rng.lognormvariate(5 + shift, 0.2), 6) for _ in range(n)]
    return base, cand


def row(base, cand, result, unit="B/s", group=""):
    return compare.Row(
        name="new vs old",
        group=group,
        metric="throughput",
        unit=unit,
        base_values=tuple(base),
        cand_values=tuple(cand),
        result=result,
    )


def test_four_runs_a_side_with_p_0_11_claim_nothing():
    # Bootstrapping the medians alone called this "6.9% faster" next to p = 0.11.
    base, cand = [100.0, 101.0, 103.0, 107.0], [105.0, 106.0, 112.0, 115.0]
    p = mannwhitneyu(cand, base, method="exact").pvalue
    assert p == pytest.approx(8 / 70)  # U = 2: 2 * P(U <= 2) = 2 * (1 + 1 + 2) / 70
    r = stats.compare(base, cand, higher_is_better=True)
    assert not r.significant
    assert r.verdict == "no significant difference"
    text = compare.sentence(row(base, cand, r))
    assert "faster" not in text
    assert "no significant difference" in text
    assert "p = 0.11" in text
    # The bounds each way: half the interval's log-width as a drop, and as a rise.
    half = (math.log1p(r.ci_high) - math.log1p(r.ci_low)) / 2
    assert f"a drop smaller than about {-math.expm1(-half):.1%}" in text
    assert f"or a rise smaller than about {math.expm1(half):.1%}" in text


def test_exact_p_equals_scipy():
    for seed in range(40):
        m, n = 2 + seed % 7, 2 + (seed * 5) % 9
        base, cand = samples(seed, m, n, shift=0.15 * (seed % 3))
        got = stats.mann_whitney(base, cand)
        assert got.exact
        assert got.u == brute_u(base, cand)
        assert got.p_value == pytest.approx(
            mannwhitneyu(cand, base, method="exact").pvalue, rel=1e-12
        )


def test_tied_values_use_the_normal_approximation_with_tie_correction_as_scipy():
    base = [1.0, 2.0, 2.0, 3.0, 4.0, 4.0]
    cand = [2.0, 4.0, 5.0, 5.0, 6.0]
    got = stats.mann_whitney(base, cand)
    assert not got.exact
    assert got.u == brute_u(base, cand)
    want = mannwhitneyu(cand, base, method="asymptotic", use_continuity=True).pvalue
    assert got.p_value == pytest.approx(want, rel=1e-9)
    # A tie within one side too: the no-ties distribution is not the permutation one (R's
    # wilcox.test switches to the approximation for any tie among all runs).
    base, cand = [1.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0]
    got = stats.mann_whitney(base, cand)
    assert not got.exact
    want = mannwhitneyu(cand, base, method="asymptotic", use_continuity=True).pvalue
    assert got.p_value == pytest.approx(want, rel=1e-9)


def test_null_distribution_equals_enumeration():
    for m, n in [(1, 1), (2, 3), (4, 4), (3, 5), (5, 5), (6, 4)]:
        assert list(stats.u_counts(m, n)) == brute_null(m, n)


def test_r_wilcox_example():
    # U for x against y: W = 35, as R prints; two-sided p twice R's one-sided 0.1272.
    got = stats.mann_whitney(Y, X)
    assert got.u == 35 == brute_u(Y, X)
    assert got.p_value == pytest.approx(mannwhitneyu(X, Y, method="exact").pvalue, rel=1e-12)
    assert got.p_value == pytest.approx(2 * 0.1272, abs=2e-4)
    assert got.p_value == pytest.approx(0.2544, abs=1e-4)
    # wilcox.test(x, y, conf.int = TRUE): difference in location 0.305, 95% CI -0.15 .. 0.76
    # (-0.76 .. 0.15 for y - x); the same numbers by enumeration here.
    estimate, low, high = brute_interval(Y, X)
    assert (estimate, low, high) == pytest.approx((0.305, -0.15, 0.76))
    s = stats.hodges_lehmann(Y, X)
    assert (s.estimate, s.low, s.high) == pytest.approx((estimate, low, high))
    counts = brute_null(5, 10)
    k = 1 + next(i for i in range(len(counts)) if sum(counts[: i + 1]) / 3003 > 0.025) - 1
    assert s.level == pytest.approx(1 - 2 * sum(counts[:k]) / 3003)


def test_hodges_lehmann_equals_enumeration_of_pairwise_differences():
    for seed in range(25):
        m, n = 3 + seed % 4, 4 + seed % 3
        base, cand = samples(100 + seed, m, n, shift=0.1)
        estimate, low, high = brute_interval(base, cand)
        s = stats.hodges_lehmann(base, cand)
        assert s.estimate == pytest.approx(estimate)
        if low is None:
            assert s.low is None
            assert s.high is None
        else:
            assert (s.low, s.high) == pytest.approx((low, high))


def exact_null_by_recursion(m, n):
    """counts(i, j) = counts(i - 1, j) + counts(i, j - 1) shifted by i: the highest of the
    i + j runs is either a baseline run (every candidate run is below it: no pair counts) or
    a candidate run (above all i baseline runs: i pairs). In floats, for large m, n."""
    row = [np.ones(1) for _ in range(n + 1)]  # i = 0: U is 0
    for i in range(1, m + 1):
        new = [np.zeros(1)]
        new[0][0] = 1.0  # j = 0
        for j in range(1, n + 1):
            counts = np.zeros(i * j + 1)
            counts[: len(row[j])] += row[j]  # the last rank is a baseline run
            counts[i : i + len(new[j - 1])] += new[j - 1]  # ... or a candidate run
            new.append(counts)
        row = new
    return row[n]


def test_past_the_exact_limit_the_interval_is_the_normal_approximation_of_the_exact_one():
    assert list(exact_null_by_recursion(4, 3)) == brute_null(4, 3)
    m, n = 120, 100
    assert m * n > stats.EXACT_MAX_PAIRS
    null = exact_null_by_recursion(m, n)
    assert null.sum() == pytest.approx(math.comb(m + n, m), rel=1e-9)
    tail = np.cumsum(null) / null.sum()
    k_exact = int(np.searchsorted(tail, 0.025, side="right"))  # P(U <= k - 1) <= 0.025
    base, cand = samples(3, m, n, shift=0.05)
    diffs = sorted(c - b for b in base for c in cand)
    s = stats.hodges_lehmann(base, cand)
    assert s.estimate == pytest.approx(statistics.median(diffs))
    ks = [k for k in (k_exact - 1, k_exact, k_exact + 1) if diffs[k - 1] == s.low]
    assert ks, (s.low, diffs[k_exact - 2 : k_exact + 1])
    assert diffs[-ks[0]] == s.high
    assert s.level == pytest.approx(1 - 2 * tail[k_exact - 1], abs=0.002)
    got = stats.mann_whitney(base, cand)
    assert not got.exact
    assert got.p_value == pytest.approx(
        mannwhitneyu(cand, base, method="asymptotic").pvalue, rel=1e-9
    )


def test_the_change_is_the_hodges_lehmann_ratio_and_its_interval():
    base, cand = samples(7, 7, 5, shift=0.3)  # 35 pairs
    logs = brute_interval([math.log(v) for v in base], [math.log(v) for v in cand])
    r = stats.compare(base, cand)
    assert r.change == pytest.approx(math.exp(logs[0]) - 1)
    assert (r.ci_low, r.ci_high) == pytest.approx((math.exp(logs[1]) - 1, math.exp(logs[2]) - 1))
    assert r.detectable == pytest.approx(1 - math.exp(-(logs[2] - logs[1]) / 2))
    # With an odd number of pairs the estimate is one of the run ratios, their median.
    assert r.change == pytest.approx(statistics.median(c / b for b in base for c in cand) - 1)
    assert r.p_value == pytest.approx(mannwhitneyu(cand, base, method="exact").pvalue)
    assert "ratio" in r.method
    assert "exact" in r.method


def test_a_metric_with_zeros_is_compared_as_a_shift_of_the_baseline_median():
    base, cand = [0.0, 1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0, 9.0]
    r = stats.compare(base, cand)
    estimate, low, high = brute_interval(base, cand)
    assert r.change == pytest.approx(estimate / 2.0)  # baseline median 2
    assert (r.ci_low, r.ci_high) == pytest.approx((low / 2.0, high / 2.0))
    assert "shift" in r.method


def test_holm_by_hand():
    # Sorted: 0.005 * 4 = 0.02, 0.01 * 3 = 0.03, 0.03 * 2 = 0.06, 0.04 * 1 = 0.04 -> 0.06.
    assert stats.holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert stats.holm([0.5, 0.6]) == [1.0, 1.0]
    assert stats.holm([0.2]) == [0.2]
    assert stats.holm([]) == []


def test_too_few_runs_say_so_with_the_smallest_possible_p():
    for (m, n), smallest in {(2, 2): 1 / 3, (3, 3): 0.1, (3, 4): 2 / 35}.items():
        base, cand = list(range(1, m + 1)), list(range(10, 10 + n))  # fully separated
        assert mannwhitneyu(cand, base, method="exact").pvalue == pytest.approx(smallest)
        r = stats.compare(base, cand, higher_is_better=True)
        assert r.verdict == "too few runs to say"
        assert r.p_min == pytest.approx(smallest)
        text = compare.sentence(row(base, cand, r))
        assert f"(n = {n}/{m}: the smallest possible p-value is {smallest:.2g}, above" in text
    # 4 against 4 can: 2 / 70 = 0.029.
    r = stats.compare([1, 2, 3, 4], [10, 11, 12, 13], higher_is_better=True)
    assert r.verdict == "better"
    assert r.p_value == pytest.approx(2 / 70)


def test_groups_of_one_comparison_are_one_holm_family():
    sep = ([100.0, 101, 102, 103, 104], [110.0, 111, 112, 113, 114])  # U = 25
    near = ([100.0, 101, 102, 103, 105.5], [104.0, 105, 106, 107, 108])  # U = 23
    same = ([100.0, 102, 104, 106, 108], [101.0, 103, 105, 107, 109])  # U = 15
    few = ([100.0, 101], [110.0, 111])
    rows = []
    for group, (b, c) in {"sep": sep, "near": near, "same": same, "few": few}.items():
        for side, values in (("old", b), ("new", c)):
            for i, v in enumerate(values):
                rows.append(
                    {"cell": f"v={side},g={group}", "host": "h", "repeat": i + 1, "v": side,
                     "g": group, "metric": "throughput", "value": v, "unit": "B/s",
                     "status": "done"}
                )  # fmt: skip
    experiment = {
        "axes": {"v": ["old", "new"], "g": ["sep", "near", "same", "few"]},
        "compare": [{"baseline": {"v": "old"}, "candidate": {"v": "new"}, "metric": "throughput"}],
    }
    got = {r.group: r for r in compare.experiment_comparisons(pd.DataFrame(rows), experiment, [])}
    p = {g: mannwhitneyu(c, b, method="exact").pvalue for g, (b, c) in
         {"sep": sep, "near": near, "same": same}.items()}  # fmt: skip
    assert p["sep"] == pytest.approx(2 / 252)
    assert p["near"] == pytest.approx(2 * 4 / 252)  # 0.032: below 0.05 on its own
    # Holm over the three testable groups by hand: 3 * p_sep, 2 * p_near, p_same.
    assert p["same"] > 2 * p["near"]
    adjusted = {"sep": 3 * p["sep"], "near": 2 * p["near"], "same": p["same"]}
    for g, want in adjusted.items():
        assert got[f"g={g}"].result.p_adjusted == pytest.approx(want)
        assert got[f"g={g}"].result.tests == 3
    assert got["g=sep"].result.verdict == "better"
    assert got["g=near"].result.verdict == "no significant difference"
    assert got["g=near"].result.ci_low > 0  # the unadjusted interval alone would claim
    assert got["g=same"].result.verdict == "no significant difference"
    assert got["g=few"].result.verdict == "too few runs to say"
    text = compare.sentence(got["g=near"])
    assert "not after Holm's correction" in text
    assert f"Holm-adjusted over 3 comparisons p = {2 * p['near']:.2g}" in text
    assert "faster" not in text


def test_a_claim_always_agrees_with_its_interval_and_its_adjusted_p():
    claimed = 0
    for seed in range(60):
        pairs = []
        for g in range(3):
            base, cand = samples(1000 * seed + g, 3 + (seed + g) % 5, 4 + g % 3, 0.3 * (g % 2))
            if seed % 3 == 0:  # coarse values: ties, so the normal approximation
                base, cand = [round(v, -1) for v in base], [round(v, -1) for v in cand]
            pairs.append((base, cand, True))
        for r in stats.compare_all(pairs):
            if r.significant:
                claimed += 1
                assert r.p_adjusted <= 0.05
                assert r.ci_low > 0 or r.ci_high < 0
                assert (r.change > 0) == (r.verdict == "better")
                assert r.ci_low <= r.change <= r.ci_high
    assert claimed > 5  # the loop did exercise claims


def test_comparisons_csv_columns_are_the_records():
    r = stats.compare([1.0, 2, 3, 4, 5], [2.0, 3, 4, 5, 6])
    (rec,) = compare.as_records([row([1.0], [2.0], r)])
    assert list(rec) == report.COMPARISON_COLUMNS
    assert rec["p_adjusted"] == rec["p_value"]  # a family of one
    assert rec["tests"] == 1
    assert np.isfinite(rec["detectable"])


def test_with_tied_values_a_claim_also_needs_the_interval_to_exclude_zero():
    base, cand = [1.0, 3, 3, 4, 5, 5], [3.0, 5, 5, 6, 6, 7, 8]
    p = mannwhitneyu(cand, base, method="asymptotic").pvalue
    assert p < 0.05  # the tie-corrected approximation alone would claim
    _, low, _ = brute_interval([math.log(v) for v in base], [math.log(v) for v in cand])
    assert low == 0  # but a ratio of 1 (two equal runs) is inside the interval
    r = stats.compare(base, cand, higher_is_better=True)
    assert r.p_value == pytest.approx(p)
    assert r.ci_low == pytest.approx(0, abs=1e-12)
    assert r.verdict == "no significant difference"
    assert "spans zero" in compare.sentence(row(base, cand, r))


def test_a_family_whose_best_possible_p_fails_holm_claims_nothing_and_says_why():
    """4 runs a side, fully separated, in two groups: each exact two-sided p is 2 / C(8, 4)
    = 2/70 = 0.0286, but Holm multiplies the smallest by 2: 0.057 > 0.05. No outcome of 4
    runs could be claimed, so neither 'faster' nor 'no significant difference' is said."""
    from math import comb

    from perfpost.analysis import stats as st

    base, cand = [1.0, 1.1, 1.2, 1.3], [3.0, 3.1, 3.2, 3.3]
    assert mannwhitneyu(cand, base, method="exact").pvalue == pytest.approx(2 / 70)
    found = st.compare_all([(base, cand, True), (base, cand, True)])
    assert [r.verdict for r in found] == [st.TOO_FEW, st.TOO_FEW]
    assert found[0].p_min == pytest.approx(2 / comb(8, 4))
    assert found[0].tests == 2
    # 5 a side: 2 / C(10, 5) = 2/252 = 0.0079; times 2 = 0.016 <= 0.05: claimed.
    base5, cand5 = [*base, 1.4], [*cand, 3.4]
    claimed = st.compare_all([(base5, cand5, True), (base5, cand5, True)])
    assert [r.verdict for r in claimed] == ["better", "better"]
    assert claimed[0].p_adjusted == pytest.approx(2 * 2 / 252)


def test_a_sentence_states_both_medians_with_one_prefix():
    # 2.41 GB/s against 827 MB/s read as "2.41 GB/s vs 0.827 GB/s", as the summary's
    # highest and lowest lines beside it read them.
    base = [0.8e9, 0.827e9, 0.85e9, 0.9e9, 0.7e9]
    cand = [2.41e9, 2.7e9, 1.9e9, 2.14e9, 2.6e9]
    text = compare.sentence(row(base, cand, stats.compare(base, cand, higher_is_better=True)))
    assert "median 2.41 GB/s vs 0.827 GB/s" in text


def test_a_small_group_beside_a_large_one_follows_holms_step_down():
    """A 10-vs-10 pair and a fully separated 4-vs-4 pair in one family. Holm by hand: the
    10-vs-10 p (2 / C(20, 10) = 1.08e-5) is multiplied by 2, the 4-vs-4 p (2 / C(8, 4) =
    2/70 = 0.0286) by 1, and the adjusted p never decreases: 0.0286 <= 0.05, so the 4-vs-4
    pair is claimed (its interval excludes zero), whatever a bound on the family's smallest
    possible p would say (2/70 x 2 = 0.057)."""
    big_b, big_c = [100.0 + i for i in range(10)], [200.0 + i for i in range(10)]
    small_b, small_c = [100.0, 101, 102, 103], [110.0, 111, 112, 113]
    p_big = mannwhitneyu(big_c, big_b, method="exact").pvalue
    p_small = mannwhitneyu(small_c, small_b, method="exact").pvalue
    assert p_big == pytest.approx(2 / math.comb(20, 10))
    assert p_small == pytest.approx(2 / 70)
    big, small = stats.compare_all([(big_b, big_c, True), (small_b, small_c, True)])
    assert big.p_adjusted == pytest.approx(2 * p_big)
    assert small.p_adjusted == pytest.approx(max(2 * p_big, p_small))
    assert small.tests == 2
    assert small.ci_low > 0
    assert small.verdict == "better"
    assert big.verdict == "better"
    text = compare.sentence(row(small_b, small_c, small))
    assert "too few runs" not in text
    assert f"Holm-adjusted over 2 comparisons p = {p_small:.2g}" in text


def test_unequal_families_say_too_few_only_where_no_outcome_could_pass_holm():
    """Which groups can never be claimed depends on the runs' numbers alone: the best any
    outcome can do is every group fully separated, each at its smallest p, 2 / C(m + n, m)
    (scipy's exact p of such runs, below), and Holm's step-down of those by hand."""

    def separated(m, n):
        return [float(i) for i in range(m)], [100.0 + i for i in range(n)]

    sizes = [(5, 5), (4, 4), (4, 4), (3, 3)]
    best = [
        mannwhitneyu(c, b, method="exact").pvalue for b, c in map(lambda s: separated(*s), sizes)
    ]
    assert best == pytest.approx([2 / 252, 2 / 70, 2 / 70, 0.1])
    # 3-vs-3 has no 95% interval: outside the family of three. Holm over the three, sorted:
    # 2/252 x 3 = 0.024; 2/70 x 2 = 0.057; then 0.057 (kept from decreasing).
    pairs = [(*separated(m, n), True) for m, n in sizes]
    found = stats.compare_all(pairs)
    assert [r.verdict for r in found] == ["better", stats.TOO_FEW, stats.TOO_FEW, stats.TOO_FEW]
    assert [r.tests for r in found[:3]] == [3, 3, 3]
    assert found[0].p_adjusted == pytest.approx(3 * 2 / 252)
    assert found[1].p_min_adjusted == pytest.approx(2 * 2 / 70)
    text = compare.sentence(row(*separated(4, 4), found[1]))
    assert f"is {2 * 2 / 70:.2g} at best after Holm's correction over 3 comparisons" in text
    # The same 4-vs-4 groups beside a 10-vs-10 one: 2 x 1.08e-5, then 2/70 x 2, then 2/70 x 1
    # kept from decreasing: the first 4-vs-4 group's best is 0.057, too few; with one 4-vs-4
    # group only, 0.0286: it can be claimed, and is.
    b10, c10 = separated(10, 10)
    two = stats.compare_all([(b10, c10, True), *pairs[1:3]])
    assert [r.verdict for r in two] == ["better", stats.TOO_FEW, stats.TOO_FEW]
    one = stats.compare_all([(b10, c10, True), pairs[1]])
    assert [r.verdict for r in one] == ["better", "better"]


def test_a_metric_with_one_value_on_both_sides_is_no_test_and_not_in_the_family():
    """bytes and exit_code are the same in every run of both sides: no test can reject, and
    counting them would only raise every other row's adjusted p."""
    base, cand = [1.0, 1.1, 1.2, 1.3, 1.4], [3.0, 3.1, 3.2, 3.3, 3.4]
    same = [7.0] * 5
    found = stats.compare_all([(base, cand, True), (same, same, None), (same, same, None)])
    assert found[0].tests == 1
    assert found[0].p_adjusted == pytest.approx(2 / 252)  # scipy: exact p of 5 vs 5 apart
    assert found[0].verdict == "better"
    assert [r.verdict for r in found[1:]] == [stats.IDENTICAL, stats.IDENTICAL]
    assert found[1].p_value is None
    assert found[1].tests == 0
    assert "identical" in compare.sentence(row(same, same, found[1]))


def _tidy(values_by_cell_metric):
    rows = []
    for (cell, metric, unit), values in values_by_cell_metric.items():
        for i, v in enumerate(values):
            rows.append(
                {"experiment": "dd", "cell": cell, "host": "h", "repeat": i + 1,
                 "metric": metric, "value": v, "unit": unit, "status": "done"}
            )  # fmt: skip
    return pd.DataFrame(rows)


def test_perfpost_compare_tests_each_metric_as_its_own_family():
    """Two cells x six dd metrics, 5 runs a side, throughput doubled (elapsed halved), bytes
    and exit_code unchanged, and two metrics that do not move. Each metric's rows are one
    family: Holm over the 2 cells of throughput by hand is 2 x 2/252 = 0.016, a claim, the
    same as asking for throughput alone; constant metrics are in no family."""
    rng = random.Random(7)
    base, cand = {}, {}
    for cell in ("bs=4k", "bs=1M"):
        tput = [1e8 * (1 + 0.01 * rng.random()) for _ in range(5)]
        other = [rng.random() for _ in range(10)]
        base[(cell, "throughput", "B/s")] = tput
        cand[(cell, "throughput", "B/s")] = [2 * v for v in tput]
        base[(cell, "elapsed", "s")] = [1 / v for v in tput]
        cand[(cell, "elapsed", "s")] = [0.5 / v for v in tput]
        for metric in ("bytes", "exit_code"):
            base[(cell, metric, "B" if metric == "bytes" else "count")] = [1e8] * 5
            cand[(cell, metric, "B" if metric == "bytes" else "count")] = [1e8] * 5
        base[(cell, "sync_time", "s")], cand[(cell, "sync_time", "s")] = other[:5], other[5:]
        base[(cell, "records", "count")], cand[(cell, "records", "count")] = other[5:], other[:5]
    rows = compare.compare_tables(_tidy(base), _tidy(cand))
    by = {(r.group, r.metric): r.result for r in rows}
    for cell in ("bs=4k", "bs=1M"):
        assert by[(cell, "throughput")].verdict == "better"
        assert by[(cell, "throughput")].tests == 2
        assert by[(cell, "throughput")].p_adjusted == pytest.approx(2 * 2 / 252)
        assert by[(cell, "elapsed")].verdict == "better"
        assert by[(cell, "bytes")].verdict == stats.IDENTICAL
        assert by[(cell, "sync_time")].tests == 2
    only = compare.compare_tables(_tidy(base), _tidy(cand), ["throughput"])
    assert [r.result.verdict for r in only] == ["better", "better"]
    text = compare.markdown(rows, "old", "new")
    assert "Holm's correction over the rows of each metric" in text
    assert "in no family: bytes, exit code (4 cell" in text  # named once, not as rows
