"""Steady state from a run's rate series: MSER-5's arithmetic by hand, synthetic series whose
answer is known by construction, and real freon series whose boundaries were marked by eye.

The real series (tests/data/freon/, captured as capture-steady.sh says, on this 2-core
machine while other jobs ran): ``dfsg-warmup.log`` starts with a peak; ``dfsg-step.log`` and
``dfsg-step-late.log`` had their JVM throttled to a quarter of the CPU time from a recorded
moment on.
"""

from __future__ import annotations

import datetime as dt
import functools
import itertools
import math
import re
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from perfpost.analysis import progress_plot, report, steady, tidy
from perfpost.tools import freon
from tests.e2e import experiment_dict

DATA = Path(__file__).parent / "data" / "freon"


def _series(rates, interval=1.0):
    """A progress series with one rate per interval: t from 0, completed summed up."""
    t = np.arange(len(rates) + 1) * interval
    completed = np.concatenate([[0.0], np.cumsum(np.asarray(rates) * interval)])
    return t, completed, np.concatenate([[np.nan], rates])


def _analyse(rates, interval=1.0):
    return steady.analyse(*_series(rates, interval))


def _log(name):
    rows = freon.parse_series({"freon.log": (DATA / name).read_text()})
    df = pd.DataFrame(rows)
    return steady.analyse(df["t"], df["completed"], df["rate"])


def _stamp(text):
    return dt.datetime.strptime(text, "%H:%M:%S.%f")


# --- MSER-5's arithmetic --------------------------------------------------------------------


def test_mser5_on_a_hand_computed_example():
    # Batches of 5 whose means are 10, 4, 2, 0 (the values vary inside each batch):
    x = [9, 11, 10, 12, 8, 4, 3, 5, 4, 4, 1, 3, 2, 2, 2, 0, 1, -1, 0, 0]
    assert steady.batch_means(np.array(x)).tolist() == [10, 4, 2, 0]
    # MSER(0): mean 4, squares 36 + 0 + 4 + 16 = 56, over 4^2: 3.5
    # MSER(1): rest 4, 2, 0, mean 2, squares 4 + 0 + 4 = 8, over 3^2: 0.889
    # MSER(2): rest 2, 0, mean 1, squares 1 + 1 = 2, over 2^2: 0.5
    # MSER(3): rest 0: 0 over 1: 0, but d = 3 is past the first half (k // 2 = 2).
    assert steady.mser(steady.batch_means(np.array(x))) == pytest.approx([3.5, 8 / 9, 0.5, 0])
    assert steady.mser5(np.array(x)) == 2


def test_a_partial_last_batch_is_left_out_of_the_batches():
    assert steady.batch_means(np.arange(12.0)).tolist() == [2.0, 7.0]  # 10, 11 left out


def test_the_tests_p_values_against_their_exact_distributions():
    # Pettitt, 10 values, the 5 highest first: U_5 = 2 (10+9+8+7+6) - 5 * 11 = 25 = K, and
    # only the 2 of C(10, 5) = 252 arrangements with the 5 highest all first or all last
    # reach it (|U_4| <= 24, |U_6| <= 24): p = 2/252 = 0.0079. The permutation estimate
    # from 9,999 draws is within 0.003 of it (3 standard errors).
    p, split = steady.pettitt(np.array([10, 9, 8, 7, 6, 5, 4, 3, 2, 1.0]))
    assert split == 5
    assert p == pytest.approx(2 / 252, abs=0.003)
    # Mann-Kendall, 6 values in order: only 2 of 6! = 720 orders are as extreme: p = 2/720.
    assert steady.mann_kendall(np.arange(6.0)) == pytest.approx(2 / 720)


def _pettitt_extreme_orders_by_enumeration(t_len: int) -> tuple[int, int]:
    """Every one of the T! orders of the ranks 1..T: (K's largest value, how many orders
    reach it), Pettitt's ``K = max_t |2 sum_{i<=t} r_i - t (T + 1)|`` computed directly."""
    t = np.arange(1, t_len)
    best, count = -1, 0
    orders = itertools.permutations(range(1, t_len + 1))
    while chunk := list(itertools.islice(orders, 400_000)):
        ranks = np.array(chunk, dtype=np.int32)
        k = np.abs(2 * np.cumsum(ranks, axis=1)[:, :-1] - t * (t_len + 1)).max(axis=1)
        top = int(k.max())
        if top > best:
            best, count = top, 0
        if top == best:
            count += int((k == top).sum())
    return best, count


def test_the_minimum_length_is_where_pettitt_can_first_reject():
    # Pettitt's smallest p is the share of the T! orders of T distinct values whose K is
    # K's largest value. Enumerating all of them for T = 3 .. 10 (10! = 3,628,800):
    found = {t_len: _pettitt_extreme_orders_by_enumeration(t_len) for t_len in range(3, 11)}
    smallest = {t_len: count / math.factorial(t_len) for t_len, (_, count) in found.items()}
    # 8 and 9 batches cannot reach 0.025 (2/70 = 0.0286 and 10,368/9! = 0.0286); 10 can
    # (2/252 = 0.0079), and Mann-Kendall's smallest, 2/10!, is far below it.
    assert smallest[8] == pytest.approx(2 / 70)
    assert smallest[9] == pytest.approx(0.02857, abs=5e-6)
    assert smallest[10] == pytest.approx(2 / 252)
    first = min(t for t, p in smallest.items() if p <= 0.025)
    assert first == 10
    assert steady.MIN_BATCHES == first
    assert steady.MIN_SAMPLES == first * steady.BATCH == 50
    # The code counts the extreme orders itself, for any number of batches.
    for t_len, (k_max, count) in found.items():
        assert k_max == t_len**2 // 4
        assert steady.pettitt_extreme_orders(t_len) == count
        assert steady.pettitt_min_p(t_len) == pytest.approx(smallest[t_len], rel=1e-12)


def test_nine_batches_cannot_show_a_step_and_ten_can():
    # Two levels 100 apart, each rising 10 over its length. At 45 rates (25 high, 20 low),
    # 9 batches: Pettitt cannot reject at 0.025, so the series is too short to say, not a
    # steady run at a rate (155.6) that is neither level. At 50 (25 and 25), 10 batches:
    # every high batch comes first, the one order in 126 halves (p = 2/252) that rejects.
    short = _analyse(np.r_[np.linspace(195, 205, 25), np.linspace(95, 105, 20)])
    assert short.verdict == steady.SHORT
    assert short.steady_rate is None
    step = _analyse(np.r_[np.linspace(195, 205, 25), np.linspace(95, 105, 25)])
    assert step.verdict == steady.STEP
    assert step.step_index == 25
    assert step.p_step == pytest.approx(2 / 252, abs=0.003)


# --- synthetic series with known answers ---------------------------------------------------


# Steady runs: rates drawn independently from N(100, 5), one series per seed. Each rate
# below is asserted to be at most its nominal level plus 3 binomial standard deviations at
# that many seeds, sqrt(level (1 - level) / seeds): a rate that high happens by chance with
# probability about 0.1% if the level holds.
IID_SEEDS = 2000
WARMUP_LEVEL = 0.05  # the warm-up test's level
TEST_LEVEL = 0.025  # trend and step, each (0.05 together)


def _bound(level: float, seeds: int) -> float:
    return level + 3 * math.sqrt(level * (1 - level) / seeds)


@functools.cache
def _iid_runs(n: int) -> tuple[steady.Steady, ...]:
    return tuple(
        _analyse(100 + np.random.default_rng(seed).normal(0, 5, n)) for seed in range(IID_SEEDS)
    )


@pytest.mark.parametrize("n", [60, 120])
def test_steady_runs_show_a_warmup_at_most_at_the_warmup_tests_level(n):
    # MSER-5 alone cuts something from most steady runs: its least MSER is rarely at d = 0.
    # 2,000 seeds: 0.05 + 3 sqrt(0.05 * 0.95 / 2000) = 0.05 + 0.0146 = 0.0646.
    found = _iid_runs(n)
    warm = sum((f.warmup_samples or 0) > 0 for f in found) / IID_SEEDS
    assert warm <= _bound(WARMUP_LEVEL, IID_SEEDS) == pytest.approx(0.0646, abs=1e-4)
    assert steady.WARMUP_ALPHA == WARMUP_LEVEL


def test_a_constant_rate_with_noise_is_steady_at_the_promised_rates():
    # 2,000 steady runs of 60 rates. Mann-Kendall and Pettitt each reject at most at
    # 0.025 + 3 sqrt(0.025 * 0.975 / 2000) = 0.0355; a run is called unsteady (trend or step,
    # whichever shape fits the better) at most at 0.0646, and shows a warm-up at most at
    # 0.0646 too. A run becomes too short to say only when a warm-up was cut from it.
    found = _iid_runs(60)
    warm = sum((f.warmup_samples or 0) > 0 for f in found) / IID_SEEDS
    assert warm <= _bound(WARMUP_LEVEL, IID_SEEDS)
    trend = sum(f.p_trend is not None and f.p_trend <= TEST_LEVEL for f in found) / IID_SEEDS
    step = sum(f.p_step is not None and f.p_step <= TEST_LEVEL for f in found) / IID_SEEDS
    assert trend <= _bound(TEST_LEVEL, IID_SEEDS) == pytest.approx(0.0355, abs=1e-4)
    assert step <= _bound(TEST_LEVEL, IID_SEEDS)
    unsteady = sum(f.verdict in (steady.TREND, steady.STEP) for f in found) / IID_SEEDS
    assert unsteady <= _bound(2 * TEST_LEVEL, IID_SEEDS)
    assert all(f.warmup_samples > 0 for f in found if f.verdict == steady.SHORT)
    # A steady run without a warm-up has the whole run's rate.
    assert all(
        f.steady_rate == pytest.approx(f.whole_rate) for f in found if f.verdict == steady.STEADY
    )


def test_a_clear_warmup_is_found_in_nearly_every_run():
    # 10 rates at half the level, then 110 steady: the first 2 of 24 batches. A warm-up that
    # covers them is cut in at least 95% of 1,000 seeds. (Only 1 order in C(24, 2) = 276
    # puts the two low batches first, and few more put them among the first few, so the
    # permutation p stays below 0.05.)
    found = [
        _analyse(np.r_[np.full(10, 50.0), np.full(110, 100.0)] + rng.normal(0, 5, 120))
        for rng in map(np.random.default_rng, range(1000))
    ]
    assert sum(f.warmup_samples >= 10 for f in found) >= 950


def test_an_initial_peak_of_known_length_is_cut_as_warmup():
    rng = np.random.default_rng(1)
    rates = np.concatenate([np.full(10, 200.0), np.full(50, 100.0)]) + rng.normal(0, 3, 60)
    found = _analyse(rates)
    assert found.verdict == steady.WARMUP
    assert found.warmup_samples == 10  # two batches of 5, exactly the peak
    assert found.warmup_end_t == 10.0
    # The steady rate: the last 50 rates, completed over their 50 s.
    assert found.steady_rate == pytest.approx(rates[10:].mean())
    assert found.whole_rate == pytest.approx(rates.mean())
    # A peak that ends inside a batch is cut at that batch's end or the one before.
    found = _analyse(
        np.concatenate([np.full(12, 200.0), np.full(48, 100.0)]) + rng.normal(0, 3, 60)
    )
    assert found.warmup_samples in (10, 15)


def test_a_step_at_a_known_index_is_found_there():
    rng = np.random.default_rng(2)
    # 40 rates at 100, then 40 at 50: half-way, so no warm-up (it would be half the run).
    rates = np.concatenate([np.full(40, 100.0), np.full(40, 50.0)]) + rng.normal(0, 4, 80)
    found = _analyse(rates)
    assert found.verdict == steady.STEP
    assert found.warmup_samples == 0
    assert found.step_index == 40
    assert found.step_t == 40.0  # between the 40th rate's interval and the 41st's
    assert found.step_before == pytest.approx(rates[:40].mean())
    assert found.step_after == pytest.approx(rates[40:].mean())
    assert found.steady_rate is None
    assert steady.describe(pd.Series(found.__dict__).to_dict()).startswith("step at t=40 s (")


def test_a_warmup_and_a_later_step_are_both_found():
    rng = np.random.default_rng(3)
    rates = np.concatenate([np.full(10, 300.0), np.full(40, 100.0), np.full(40, 60.0)])
    found = _analyse(rates + rng.normal(0, 3, 90))
    assert found.warmup_samples == 10
    assert found.verdict == steady.STEP
    assert found.step_index == 50


def test_a_linear_trend_is_a_trend_with_its_slope():
    rng = np.random.default_rng(4)
    # From 100 down to 40 over 60 s, 0.5 s apart: -1 op/s per s, i.e. -60 per minute.
    t = np.arange(120) * 0.5
    found = _analyse(100 - t + rng.normal(0, 3, 120), interval=0.5)
    assert found.verdict == steady.TREND
    assert found.trend_slope == pytest.approx(-1.0, rel=0.1)
    assert found.steady_rate is None
    said = steady.describe(pd.Series(found.__dict__).to_dict())
    m = re.fullmatch(r"trend, falling ([0-9.]+) ops/s per minute", said)
    assert m
    assert float(m.group(1)) == pytest.approx(60, rel=0.1)


def test_too_short_series_get_no_verdict():
    rng = np.random.default_rng(5)
    found = _analyse(100 + rng.normal(0, 3, 49))  # one rate short of 50
    assert found.verdict == steady.SHORT
    assert found.warmup_samples is None
    assert found.steady_rate is None
    assert _analyse(100 + rng.normal(0, 3, 50)).verdict == steady.STEADY
    # Long enough, but not after its 15-rate warm-up: 50 - 15 = 35 left.
    peak = np.concatenate([np.full(15, 300.0), np.full(35, 100.0)]) + rng.normal(0, 3, 50)
    found = _analyse(peak)
    assert (found.verdict, found.warmup_samples) == (steady.SHORT, 15)
    assert steady.describe(pd.Series(found.__dict__).to_dict()) == (
        "too short to say (35 rates after the warm-up, 50 needed)"
    )
    assert _analyse([]).verdict == steady.SHORT
    # One rate is one rate.
    one = {"verdict": steady.SHORT, "samples": 1, "warmup_samples": None, "min_samples": 50}
    assert steady.describe(one) == "too short to say (1 rate, 50 needed)"


# --- real freon series, boundaries marked by eye -------------------------------------------


def test_real_warmup_peak_is_cut_within_a_batch_of_the_hand_mark():
    found = _log("dfsg-warmup.log")
    # By eye (rates per second, from 0): 6, 78, 107, 102, 120, 114, 93, 118, then 70, 62,
    # 66, 58, 72, 58, 69, then 48, 49, 47, 50, 65, 55 ... : the peak is rates 1-7, a
    # middle level 8-14, and from rate 15 on the rate stays around 50-55 (t = 15.1 s).
    # Hand mark: the warm-up ends between rate 8 and rate 15; tolerance one batch (5).
    assert 8 - 5 <= found.warmup_samples <= 15 + 5
    assert found.verdict == steady.WARMUP
    # The rates from 15 on read 45-65 by eye; the whole run, with its peak, is higher.
    assert 45 <= found.steady_rate <= 65
    assert found.steady_rate < found.whole_rate
    # freon's own summary: 4000 files in 70 s; the series' whole-run rate is close to it.
    assert found.whole_rate == pytest.approx(4000 / 70, rel=0.05)


@pytest.mark.parametrize(
    ("log", "executing", "throttled", "before", "after"),
    [
        # freon's "Executing test" line; the throttle's start, as the capture recorded it.
        ("dfsg-step.log", "05:35:38.755", "05:36:05.911", (70, 100), (25, 40)),
        ("dfsg-step-late.log", "05:37:18.838", "05:37:57.131", (85, 120), (25, 40)),
    ],
)
def test_real_step_is_found_within_5_s_of_the_throttle(log, executing, throttled, before, after):
    found = _log(log)
    at = (_stamp(throttled) - _stamp(executing)).total_seconds()  # 27.2 s and 38.3 s
    assert found.verdict == steady.STEP
    assert abs(found.step_t - at) <= 5
    # By eye, the rates before the throttle read 70-130 and after it 20-45.
    assert before[0] <= found.step_before <= before[1]
    assert after[0] <= found.step_after <= after[1]
    assert found.steady_rate is None


# --- the table, the figure, the post --------------------------------------------------------


def _real_table():
    rows = []
    for cell, name in (
        ("case=warmup", "dfsg-warmup.log"),
        ("case=step", "dfsg-step.log"),
        ("case=short", "dfsg.log"),
    ):
        for p in freon.parse_series({"freon.log": (DATA / name).read_text()}):
            rows.append(
                {"experiment": "e", "cell": cell, "host": "h1", "repeat": 1, "series": "progress"}
                | p
            )
    series = pd.DataFrame(rows, columns=[*tidy.SERIES_COLUMNS])
    return series, steady.table(series)


def test_the_table_has_a_row_per_run_and_refuses_another_schema(tmp_path):
    series, table = _real_table()
    assert list(table["cell"]) == ["case=warmup", "case=step", "case=short"]
    assert list(table["verdict"]) == [steady.WARMUP, steady.STEP, steady.SHORT]
    assert set(table["schema_version"]) == {steady.STEADY_SCHEMA_VERSION}
    path = tmp_path / "steady.csv"
    steady.write(table, path)
    back = steady.read(path)
    assert list(back["verdict"]) == list(table["verdict"])
    assert back["step_t"].iloc[1] == pytest.approx(table["step_t"].iloc[1])
    path.write_text(path.read_text().replace("\n1,e,", "\n9,e,", 1))
    with pytest.raises(ValueError, match=r"steady.csv: steady-state schema version \[1, 9\]"):
        steady.read(path)
    assert steady.table(series.iloc[0:0]).empty


def test_the_figure_marks_the_boundaries_at_their_times_with_a_legend_inside(tmp_path):
    series, table = _real_table()
    fig, drawn = progress_plot.series_figure(series, "dfsg: rate over time", table)
    ax = fig.axes[0]
    warm = [ln.get_xdata()[0] for ln in ax.get_lines() if ln.get_gid() == "warmup"]
    steps = [ln.get_xdata()[0] for ln in ax.get_lines() if ln.get_gid() == "step"]
    assert warm == [pytest.approx(table["warmup_end_t"].iloc[0])]
    assert steps == [pytest.approx(table["step_t"].iloc[1])]
    (legend,) = fig.legends
    texts = [t.get_text() for t in legend.get_texts()]
    assert "warm-up end (MSER-5)" in texts
    assert "step (Pettitt)" in texts
    fig.savefig(tmp_path / "f.png")
    box = legend.get_window_extent()
    assert box.x0 >= 0
    assert box.y0 >= 0
    assert box.x1 <= fig.bbox.width
    assert box.y1 <= fig.bbox.height
    # The caption names the marks it drew, and only those.
    assert drawn == {"warmup": True, "step": True}
    said = progress_plot.caption(drawn)
    assert "MSER-5" in said
    assert "Pettitt" in said
    # Without the table there is nothing to mark, no legend entry and no caption for it.
    fig, drawn = progress_plot.series_figure(series, "t")
    assert not [ln for ln in fig.axes[0].get_lines() if ln.get_gid() in ("warmup", "step")]
    assert "step (Pettitt)" not in [t.get_text() for t in fig.legends[0].get_texts()]
    assert "MSER" not in progress_plot.caption(drawn)
    assert "Pettitt" not in progress_plot.caption(drawn)


def test_a_run_that_starts_at_zero_is_said_with_how_long_it_waited():
    # Ozone's dfsg runs in the default hcfs experiment read 0 ops/s for their first 4 s:
    # the caption says why a line sits at 0, with the longest such wait (3 s below: run 1's
    # progress reads 0 at 1, 2 and 3 s, its first operations done by 4 s; run 2 moved at once;
    # run 3's 0 at 5 s, after it had moved, is no wait).
    rows = [
        {"cell": "c", "host": "h", "repeat": r, "t": float(t), "rate": float(v)}
        for r, vals in ((1, (0, 0, 0, 10, 12)), (2, (8, 9, 9)), (3, (5, 6, 6, 6, 0)))
        for t, v in enumerate(vals, start=1)
    ]
    fig, drawn = progress_plot.series_figure(pd.DataFrame(rows), "t")
    assert list(fig.axes[0].get_lines()[0].get_ydata()[:3]) == [0, 0, 0]  # drawn as read
    said = progress_plot.caption(drawn)
    assert "A line that starts at 0 is a run that had finished no operation yet" in said
    assert "(up to 3 s into a run, here)" in said
    steady_rows = [r for r in rows if r["repeat"] != 1]
    _, drawn = progress_plot.series_figure(pd.DataFrame(steady_rows), "t")
    assert "starts at 0" not in progress_plot.caption(drawn)
    # Rows that come out of time order (tables concatenated, a reader's sort) say the same,
    # and each line is drawn left to right: run 1's wait is still 3 s, not run 3's last 0.
    fig, drawn = progress_plot.series_figure(pd.DataFrame(rows[::-1]), "t")
    assert "(up to 3 s into a run, here)" in progress_plot.caption(drawn)
    for line in fig.axes[0].get_lines():
        xs = list(line.get_xdata())
        assert xs == sorted(xs)


def _post(tmp_path, **kw):
    exp = experiment_dict(
        tool="freon",
        params={"subcommand": "dfsg"},
        axes={"case": ["warmup", "step", "short"]},
        hosts=["h1"],
    )
    cells = pd.DataFrame(columns=list(tidy.CELL_COLUMNS))
    tidy_df = tidy.from_records([], ["case"])
    report.render(exp, tidy_df, cells, {}, [], tmp_path / "index.md", tmp_path / "d.csv", **kw)
    return (tmp_path / "notebook.md").read_text()


def test_a_post_without_series_has_no_steady_state_but_writes_the_declared_table(tmp_path):
    # The workflow declares the bundle's steady.csv for every post: dd's too, header alone.
    post = _post(tmp_path, steady_df=None, steady_csv=tmp_path / "s.csv")
    assert "Steady state" not in post
    assert (tmp_path / "s.csv").read_text().startswith("schema_version,experiment,cell,")
    assert steady.read(tmp_path / "s.csv").empty


def _table_rows(section: str) -> dict[str, dict[str, str]]:
    """Every row of the section's tables, by its first column (the test), each column by its
    header: a table continued in others (their rows repeat the test) is one again."""
    rows: dict[str, dict[str, str]] = {}
    for block in section.split("\n\n"):
        lines = [ln for ln in block.strip().splitlines() if ln.startswith("|")]
        if len(lines) < 3:
            continue
        head = [c.strip() for c in lines[0].strip("|").split("|")]
        for ln in lines[2:]:
            cells = [c.strip() for c in ln.strip("|").split("|")]
            rows.setdefault(cells[0], {}).update(zip(head, cells, strict=True))
    return rows


def test_the_post_gives_both_rates_names_the_unsteady_runs_and_the_method(tmp_path):
    _, table = _real_table()
    post = _post(tmp_path, steady_df=table)
    summary = post.split("## Summary")[1].split("## ")[0]
    (line,) = [ln for ln in summary.splitlines() if "Steady state" in ln]
    step = table.iloc[1]
    assert "1 of 3 runs with a progress series reached one" in line
    assert (
        f"this run never did: `case=step` on h1, repeat 1: step at t={step['step_t']:.0f} s" in line
    )
    assert "too short to say: `case=short` on h1, repeat 1 (2 rates, 50 needed)." in line
    method = post.split("## Test method")[1].split("## ")[0]
    assert "MSER-5 (White 1997" in method
    assert "at 0.025 each" in method
    assert "fewer than 50 rates" in method
    section = post.split("### Steady state")[1].split("\n## ")[0]
    runs = _table_rows(section)  # a wide table continues in others: joined by the run
    warm = table.iloc[0]
    row = runs["`case=warmup`"]
    assert float(row["whole-run rate (ops/s)"]) == pytest.approx(warm["whole_rate"], rel=5e-3)
    assert float(row["steady-state rate (ops/s)"]) == pytest.approx(warm["steady_rate"], rel=5e-3)
    assert row["warm-up"] == f"{warm['warmup_end_t']:.0f} s ({warm['warmup_samples']} rates)"
    assert row["verdict"] == "warm-up then steady"
    assert runs["`case=step`"]["steady-state rate (ops/s)"] == "not steady"
    # The bundle's own copy of the table, linked relative to the post.
    assert "[steady.csv](steady.csv)" in post.split("### Steady state")[1]
    assert list(steady.read(tmp_path / "steady.csv")["verdict"]) == list(table["verdict"])
    assert not math.isnan(warm["steady_rate"])


def test_many_runs_too_short_to_say_are_counted_not_listed_in_the_summary():
    # Five freon runs of 3 to 6 progress rates each: every one too short for a verdict.
    rows = []
    for repeat, n in enumerate([3, 4, 6, 5, 4], 1):
        t = np.arange(n + 1, dtype=float)
        rows.append(
            {"experiment": "e", "cell": "c", "host": "h", "repeat": repeat, "series": "progress"}
            | {"found": steady.analyse(t, t * 10, np.r_[np.nan, np.full(n, 10.0)])}
        )
    df = pd.DataFrame(
        [
            {"schema_version": 1, **{k: r[k] for k in steady.RUN_KEYS}, **asdict(r["found"])}
            for r in rows
        ]
    )
    said = steady.section(df)
    assert said["n_steady"] == 0
    assert said["short_said"] == "all 5 runs too short to say (at most 6 rates; 50 needed)"
