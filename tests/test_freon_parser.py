"""The freon parser on real logs of real freon and vapor runs (tests/data/freon/capture.sh)."""

import itertools
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfpost.adapters import freon
from perfpost.errors import ParseError

DATA = Path(__file__).parent / "data" / "freon"


def read(name: str) -> str:
    return (DATA / name).read_bytes().decode()  # keep the terminal form's "\r"


def metrics(name: str, wall_time=None) -> dict[str, tuple[float, str]]:
    return {
        m.name: (m.value, m.unit) for m in freon.parse_cell({name: read(name)}, wall_time=wall_time)
    }


def timer_line(text: str) -> dict[str, str]:
    line = next(x for x in text.splitlines() if "type=TIMER" in x)
    return dict(re.findall(r"(\w+)=([^,]+)", line.split("type=TIMER, ")[1]))


@pytest.mark.parametrize(
    ("name", "timer"),
    [
        ("cmdw-perchunk.log", "chunk-write"),
        ("dfsg.log", "file-create"),
        ("dfsg-copybuffer1.log", "file-create"),
        ("cmdw-oldpattern.log", "chunk-write"),
    ],
)
def test_timer_summary_and_counts_from_log4j_logs(name, timer):
    text = read(name)
    m = metrics(name, wall_time=9.0)
    fields = timer_line(text)
    assert m[f"{timer}.count"] == (float(fields["count"]), "count")
    for f in ("min", "max", "mean", "stddev", "median", "p75", "p95", "p98", "p99", "p999"):
        assert m[f"{timer}.{f}"] == (pytest.approx(float(fields[f])), "ms")
    assert m[f"{timer}.mean_rate"] == (pytest.approx(float(fields["mean_rate"])), "1/s")
    total = int(re.search(r"Total execution time \(sec\): (\d+)", text).group(1))
    ok = int(re.search(r"Successful executions: (\d+)", text).group(1))
    assert m["total_execution_time"] == (total, "s")
    assert m["successful_executions"] == (ok, "count")
    assert m["operations"] == (ok, "count")
    assert m["failures"] == (0, "count")


def test_rate_uses_freon_millisecond_timestamps_not_the_rounded_total():
    text = read("cmdw-perchunk.log")
    stamps = re.findall(
        r"^\S+ (\d\d):(\d\d):(\d\d),(\d{3}) .*(?:Executing test|Total execution)", text, re.M
    )
    (h0, m0, s0, ms0), (h1, m1, s1, ms1) = stamps
    span = (int(h1) * 3600 + int(m1) * 60 + int(s1) + int(ms1) / 1000) - (
        int(h0) * 3600 + int(m0) * 60 + int(s0) + int(ms0) / 1000
    )
    m = metrics("cmdw-perchunk.log", wall_time=99.0)
    assert m["elapsed"][0] == pytest.approx(span, abs=1e-3)
    assert m["rate"][0] == pytest.approx(20000 / span, rel=1e-3)


def test_second_precision_logs_fall_back_to_the_cells_clock():
    m = metrics("cmdw-oldpattern.log", wall_time=2.5)
    assert m["elapsed"] == (2.5, "s")
    assert m["rate"][0] == pytest.approx(2000 / 2.5)
    assert "rate" not in metrics("cmdw-oldpattern.log")  # no clock at all: no rate invented


def test_terminal_form_bar_timers_block_and_bare_summary():
    text = read("cmdw.tty.log")
    assert "\r" in text
    assert "-- Timers --" in text
    m = metrics("cmdw.tty.log", wall_time=4.0)
    assert m["chunk-write.count"] == (30000, "count")
    assert m["chunk-write.mean_rate"] == (17914.97, "1/s")
    assert m["chunk-write.p999"] == (5.06, "ms")
    assert m["chunk-write.p75"] == (0.02, "ms")
    assert m["successful_executions"] == (30000, "count")
    assert m["total_execution_time"] == (2, "s")
    series = freon.parse_series({"t": text})
    assert [r["completed"] for r in series][-1] == 30000
    assert all(r["total"] == 30000 for r in series)


def test_progress_lines_become_a_time_series():
    text = read("cmdw-perchunk.log")
    lines = re.findall(r"Progress: [\d.]+ % \((\d+) out of (\d+)\)", text)
    series = freon.parse_series({"x": text})
    assert [(r["completed"], r["total"]) for r in series] == [(int(a), int(b)) for a, b in lines]
    assert series[0]["rate"] is None
    t = [r["t"] for r in series]
    assert t == sorted(t)
    assert t[0] >= 0
    for prev, cur in itertools.pairwise(series):
        assert cur["rate"] == pytest.approx(
            (cur["completed"] - prev["completed"]) / (cur["t"] - prev["t"])
        )


def test_a_failed_task_fails_with_the_first_error_and_its_exception():
    with pytest.raises(ParseError) as e:
        freon.parse_text(read("dfsg-failed.log"), "dfsg-failed.log")
    assert e.value.line == 5
    assert "Error on executing task 0: java.io.IOException: Mkdirs failed" in str(e.value)
    assert "executed 0 of 20" in str(e.value)
    reason = freon.error_reason({"freon.log": read("dfsg-failed.log")})
    assert reason.startswith("freon.log:5: Error on executing task 0: java.io.IOException")


def test_a_run_that_did_nothing_fails_with_its_bare_message():
    with pytest.raises(ParseError, match=r"executed 0 of 100 operations.*dbParentDir == null"):
        freon.parse_text(read("cmdw-failed.log"), "cmdw-failed.log")


def test_a_killed_run_is_an_error_not_a_result():
    with pytest.raises(ParseError) as e:
        freon.parse_text(read("cmdw-killed.log"), "cmdw-killed.log")
    assert "log ends before freon's summary" in str(e.value)
    assert e.value.line == len(read("cmdw-killed.log").rstrip("\n").split("\n"))


def test_instrumented_client_blocks_are_kept_under_their_own_names():
    # The summary lines are a real run's; the block is the form an instrumented FileSystem
    # client prints after it (call counts and total times per method).
    text = read("dfsg.log") + "write.call: 300\nwrite.allTime: 1234.5\nclose.allTime: 88\n"
    m = {x.name: x.value for x in freon.parse_text(text, "x")}
    assert (m["write.call"], m["write.allTime"], m["close.allTime"]) == (300, 1234.5, 88)


def test_empty_and_foreign_logs_are_errors():
    with pytest.raises(ParseError, match="empty"):
        freon.parse_text("", "e.log")
    with pytest.raises(ParseError, match="summary"):
        freon.parse_text(read("../dd/write-fsync.log"), "dd.log")


@settings(max_examples=200, deadline=None)
@given(cut=st.integers(min_value=0, max_value=2400))
def test_every_prefix_of_a_real_log_parses_fully_or_fails(cut):
    text = read("cmdw-perchunk.log")
    try:
        m = {x.name: x.value for x in freon.parse_text(text[:cut], "x")}
    except ParseError:
        return
    assert m["successful_executions"] == 20000  # only a prefix holding the summary parses


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_parser_never_crashes_on_garbage(text):
    try:
        freon.parse_text(text, "g")
        freon.parse_series({"g": text})
    except ParseError:
        pass


def test_an_error_logged_by_a_library_does_not_fail_a_successful_run():
    text = read("cmdw-unresolved-hostname.log")
    assert " ERROR " in text
    m = metrics("cmdw-unresolved-hostname.log", wall_time=5.0)
    assert m["successful_executions"] == (3000, "count")
    assert m["log_errors"] == (1, "count")


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(
    name=st.sampled_from(["cmdw-perchunk.log", "cmdw.tty.log", "cmdw-killed.log"]),
    back=st.one_of(st.integers(0, 400), st.integers(0, 4000)),
)
def test_a_cut_logs_series_is_the_start_of_the_whole_logs(name, back):
    # A progress line cut short must not become a point (e.g. "(1410" of "(14100 out of").
    text = read(name)
    full = freon.parse_series({"x": text})
    cut = freon.parse_series({"x": text[: max(len(text) - back, 0)]})
    assert cut == full[: len(cut)]
