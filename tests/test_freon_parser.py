"""The freon parser on real logs of real freon and vapor runs (tests/data/freon/capture.sh)."""

import itertools
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfpost.errors import ParseError
from perfpost.tools import freon

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
    assert fields["duration_unit"] == "milliseconds"
    assert m[f"{timer}.count"] == (float(fields["count"]), "count")
    for f in ("min", "max", "mean", "stddev", "median", "p75", "p95", "p98", "p99", "p999"):
        assert m[f"{timer}.{f}"] == (pytest.approx(float(fields[f]) / 1000), "s")
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
    # "99.9% <= 5.06 milliseconds", "75% <= 0.02 milliseconds" in the block above
    assert m["chunk-write.p999"] == (0.00506, "s")
    assert m["chunk-write.p75"] == (0.00002, "s")
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


def test_cmdw_out_of_open_files_says_why_with_the_logs_own_numbers():
    # A real run under `ulimit -n 512` (capture.sh): cmdw keeps every FILE_PER_BLOCK block's
    # file open, so it failed once its blocks and the JVM's own files filled the limit.
    text = read("cmdw-nofile.log")
    with pytest.raises(ParseError) as e:
        freon.parse_text(text, "cmdw-nofile.log")
    assert "executed 4432 of 20000" in str(e.value)  # the log's own summary line
    reason = freon.error_reason({"freon.log": text})
    assert reason.startswith("freon.log:10: Error on executing task 4321:")
    assert "151.block (Too many open files)" in reason
    # 4432 chunks written ("Successful executions"), 16 a block ("chunksPerBlock=16"):
    # ceil(4432 / 16) = 277 block files, and 512 - 277 = 235 left for the JVM's own.
    assert "4432 chunks at 16 a block (-c) held about 277 files open" in reason
    assert "ulimit -n" in reason


def test_out_of_open_files_elsewhere_names_the_limit_but_not_cmdw():
    text = re.sub(
        r"java.io.IOException: Mkdirs failed.*",
        "java.io.FileNotFoundException: /tmp/x/part-0 (Too many open files)",
        read("dfsg-failed.log"),
    )
    reason = freon.error_reason({"freon.log": text})
    assert reason.endswith(
        "part-0 (Too many open files); the tool ran out of open files (its `ulimit -n`)"
    )
    assert "FILE_PER_BLOCK" not in reason


def test_a_run_that_did_nothing_fails_with_its_bare_message():
    with pytest.raises(ParseError, match=r"executed 0 of 100 operations.*dbParentDir == null"):
        freon.parse_text(read("cmdw-failed.log"), "cmdw-failed.log")


GC_WARNING = (
    "[0.007s][warning][gc] -Xloggc is deprecated. Will use -Xlog:gc:/tmp/perfpost-1c21cd7b60d7-"
    "logs/gc.log instead.\n"
)  # the first line of every freon log perfpost's GC log option makes on Java 17


def test_the_jvms_own_warning_is_never_why_a_run_failed():
    # A run of the suite failed with the reason "freon.log:1: [0.007s][warning][gc] -Xloggc
    # is deprecated...": the JVM's line came first, and whatever freon said was left out.
    text = GC_WARNING + read("cmdw-failed.log")
    with pytest.raises(ParseError, match=r"executed 0 of 100 operations.*dbParentDir == null"):
        freon.parse_text(text, "freon.log")
    died = GC_WARNING + 'Exception in thread "main" java.lang.OutOfMemoryError: Java heap space\n'
    assert freon.error_reason({"freon.log": died}) == (
        'freon.log:2: Exception in thread "main" java.lang.OutOfMemoryError: Java heap space'
    )
    # Nothing but the JVM's warning: no reason from the log (the run says its exit code).
    assert freon.error_reason({"freon.log": GC_WARNING}) is None


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


# ---------------------------------------------------------------------------- units by meaning

REAL_TIMER = (
    "type=TIMER, name=chunk-write, count=20000, min=0.028633, max=9.34011, "
    "mean=0.09449854474708165, stddev=0.4741752491083686, median=0.04052, p75=0.051857, "
    "p95=0.085247, p98=0.164034, p99=2.554076, p999=4.127715, mean_rate=12472.57758045686, "
    "m1=0.0, m5=0.0, m15=0.0, rate_unit=events/second, duration_unit=milliseconds"
)


def with_timer(line: str) -> str:
    """cmdw-perchunk.log, a real run, with its TIMER message replaced by ``line``."""
    text = read("cmdw-perchunk.log")
    assert REAL_TIMER in text
    return text.replace(REAL_TIMER, line)


def timer_metrics(line: str) -> dict[str, tuple[float, str]]:
    return {m.name: (m.value, m.unit) for m in freon.parse_text(with_timer(line), "x.log")}


def test_a_timer_in_microseconds_and_events_per_millisecond_is_read_in_s_and_1_per_s():
    # Read by substring, "microseconds" contained "seconds" (0.708 us became 708 ms) and
    # "events/millisecond" was taken per second.
    line = (
        "type=TIMER, name=chunk-write, count=20000, min=0.25, max=1500.0, mean=0.708, "
        "stddev=0.5, median=0.5, p75=0.75, p95=1.0, p98=2.0, p99=4.0, p999=8.0, "
        "mean_rate=12.5, m1=0.0, m5=0.0, m15=0.0, rate_unit=events/millisecond, "
        "duration_unit=microseconds"
    )
    m = timer_metrics(line)
    # 0.708 us = 0.708 / 1,000,000 s; 1500 us = 1.5 ms = 0.0015 s; 12.5 per ms = 12,500 per s
    assert m["chunk-write.mean"] == (pytest.approx(7.08e-7, rel=1e-15), "s")
    assert m["chunk-write.max"] == (0.0015, "s")
    assert m["chunk-write.min"] == (2.5e-7, "s")
    assert m["chunk-write.mean_rate"] == (12500.0, "1/s")
    assert m["chunk-write.m1"] == (0.0, "1/s")
    assert m["chunk-write.count"] == (20000, "count")


# 2.5 of each unit, in seconds, worked out by hand: exact, since each conversion rounds once.
DURATIONS = [
    ("nanoseconds", 2.5e-9),
    ("microseconds", 2.5e-6),
    ("milliseconds", 0.0025),
    ("seconds", 2.5),
    ("minutes", 150.0),
    ("hours", 9000.0),
]
# 2.5 events per each unit, per second.
RATES = [
    ("nanosecond", 2.5e9),
    ("microsecond", 2.5e6),
    ("millisecond", 2500.0),
    ("second", 2.5),
    ("minute", 2.5 / 60),
    ("hour", 2.5 / 3600),
]


@pytest.mark.parametrize(("unit", "seconds"), DURATIONS)
def test_every_duration_unit_a_timer_line_can_name_converts_exactly(unit, seconds):
    line = REAL_TIMER.replace("mean=0.09449854474708165", "mean=2.5").replace(
        "duration_unit=milliseconds", f"duration_unit={unit}"
    )
    assert timer_metrics(line)["chunk-write.mean"] == (seconds, "s")


@pytest.mark.parametrize(("unit", "per_second"), RATES)
def test_every_rate_unit_a_timer_line_can_name_converts_exactly(unit, per_second):
    line = REAL_TIMER.replace("mean_rate=12472.57758045686", "mean_rate=2.5").replace(
        "rate_unit=events/second", f"rate_unit=events/{unit}"
    )
    assert timer_metrics(line)["chunk-write.mean_rate"] == (per_second, "1/s")


@pytest.mark.parametrize(("duration", "rate"), list(zip(DURATIONS, RATES, strict=True)))
def test_the_terminal_timers_block_converts_every_unit_too(duration, rate):
    (dunit, seconds), (runit, per_second) = duration, rate
    text = read("cmdw.tty.log")
    old_mean, old_rate = "mean = 0.04 milliseconds", "mean rate = 17914.97 calls/second"
    assert old_mean in text
    assert old_rate in text
    text = text.replace(old_mean, f"mean = 2.5 {dunit}")
    text = text.replace(old_rate, f"mean rate = 2.5 calls/{runit}")
    m = {x.name: (x.value, x.unit) for x in freon.parse_cell({"t": text}, wall_time=4.0)}
    assert m["chunk-write.mean"] == (seconds, "s")
    assert m["chunk-write.mean_rate"] == (per_second, "1/s")


def test_the_terminal_forms_mean_of_28_51_milliseconds_is_0_02851_s():
    text = read("cmdw.tty.log").replace("mean = 0.04 milliseconds", "mean = 28.51 milliseconds")
    m = {x.name: (x.value, x.unit) for x in freon.parse_cell({"t": text}, wall_time=4.0)}
    assert m["chunk-write.mean"] == (pytest.approx(0.02851, rel=1e-15), "s")
    assert m["chunk-write.m5"] == (0.0, "1/s")  # "5-minute rate = 0.00 calls/second"


def test_a_real_timer_line_in_ms_is_stored_in_seconds():
    # dfsg.log, line 7, as freon printed it (duration_unit=milliseconds,
    # rate_unit=events/second): mean=9.699696631494367, p99=22.536881, max=43.896784,
    # mean_rate=163.58154338650726, count=300. Divided by 1000 by hand:
    m = metrics("dfsg.log")
    assert m["file-create.mean"] == (pytest.approx(0.009699696631494367, rel=1e-15), "s")
    assert m["file-create.p99"] == (pytest.approx(0.022536881, rel=1e-15), "s")
    assert m["file-create.max"] == (pytest.approx(0.043896784, rel=1e-15), "s")
    assert m["file-create.mean_rate"] == (pytest.approx(163.58154338650726, rel=1e-15), "1/s")
    assert m["file-create.count"] == (300, "count")


@pytest.mark.parametrize(
    ("old", "new", "named"),
    [
        ("duration_unit=milliseconds", "duration_unit=fortnights", "'fortnights'"),
        ("duration_unit=milliseconds", "duration_unit=millis", "'millis'"),
        ("rate_unit=events/second", "rate_unit=events/sec", "'sec'"),
        ("rate_unit=events/second", "rate_unit=bytes/second", "'bytes/second'"),
        (", duration_unit=milliseconds", "", "names no duration_unit"),
    ],
)
def test_a_unit_perfpost_does_not_know_is_an_error_naming_it_and_its_line(old, new, named):
    text = with_timer(REAL_TIMER.replace(old, new))
    with pytest.raises(ParseError) as e:
        freon.parse_text(text, "x.log")
    assert named in str(e.value)
    assert e.value.line == 12  # the TIMER line of cmdw-perchunk.log
    assert e.value.source == "x.log"


def test_a_terminal_timer_value_in_an_unknown_unit_is_an_error():
    text = read("cmdw.tty.log").replace("mean = 0.04 milliseconds", "mean = 0.04 jiffies")
    with pytest.raises(ParseError, match="'jiffies'"):
        freon.parse_cell({"t": text}, wall_time=4.0)


def test_histogram_values_are_plain_numbers_not_durations():
    # Slf4jReporter prints a HISTOGRAM's snapshot as it is (sizes, counts): no unit to convert.
    extra = (
        "2026-11-22 05:04:47,659 [shutdown-hook-0] INFO metrics: type=HISTOGRAM, "
        "name=batch-size, count=3, min=10, max=30, mean=20.0, stddev=8.16, median=20.0, "
        "p75=30.0, p95=30.0, p98=30.0, p99=30.0, p999=30.0\n"
    )
    text = read("cmdw-perchunk.log")
    at = text.index("2026-11-22 05:04:47,660")
    m = {x.name: (x.value, x.unit) for x in freon.parse_text(text[:at] + extra + text[at:], "x")}
    assert m["batch-size.min"] == (10.0, "")
    assert m["batch-size.mean"] == (20.0, "")
    assert m["batch-size.count"] == (3, "count")


# ---------------------------------------------------------------------------- rate's clock


def test_a_log_with_whole_second_stamps_names_host_wall_time_as_the_rates_clock():
    m = metrics("cmdw-oldpattern.log", wall_time=2.5)
    assert m["rate_source_host_wall_time"] == (1, "count")
    assert "rate_source_freon_timestamps" not in m
    assert m["rate"] == (pytest.approx(2000 / 2.5), "1/s")


def test_a_log_with_millisecond_stamps_names_freons_timestamps_as_the_rates_clock():
    m = metrics("cmdw-perchunk.log", wall_time=99.0)
    assert m["rate_source_freon_timestamps"] == (1, "count")
    assert "rate_source_host_wall_time" not in m


def test_no_clock_no_rate_and_no_clock_named():
    m = metrics("cmdw-oldpattern.log")
    assert "rate" not in m
    assert not {"rate_source_host_wall_time", "rate_source_freon_timestamps"} & set(m)


EXPERIMENT = {"params": {"subcommand": "cmdw", "program": "vapor", "dir": "/tmp"}, "axes": {}}


def tidy_rows(*runs: tuple[str, str, float]):
    """The tidy table of real runs: (cell, log in tests/data/freon, host wall time)."""
    from perfpost.analysis import tidy

    records = []
    for repeat, (cell, name, wall) in enumerate(runs, start=1):
        parsed = freon.parse_cell({name: read(name)}, wall_time=wall)
        records.append(
            {
                "experiment": "e",
                "cell": cell,
                "host": "h",
                "repeat": repeat,
                "labels": {},
                "tool": "freon",
                "status": "done",
                "attempt": 1,
                "exit_code": 0,
                "metrics": [m.__dict__ for m in parsed],
            }
        )
    return tidy.from_records(records)


def test_the_method_names_host_wall_time_when_the_runs_used_it():
    method = " ".join(freon.describe(EXPERIMENT, tidy_rows(("a", "cmdw-oldpattern.log", 2.5))))
    assert "wall time on the host, JVM start included" in method
    assert "millisecond log timestamps (start" not in method


def test_the_method_names_freons_timestamps_when_the_runs_used_them():
    method = " ".join(freon.describe(EXPERIMENT, tidy_rows(("a", "cmdw-perchunk.log", 9.0))))
    assert "taken from freon's millisecond log timestamps" in method
    assert "wall time" not in method


def test_the_method_names_each_cells_clock_when_they_differ():
    df = tidy_rows(
        ("new", "cmdw-perchunk.log", 9.0),
        ("old", "cmdw-oldpattern.log", 2.5),
        ("old", "cmdw-perchunk.log", 9.0),
    )
    method = " ".join(freon.describe(EXPERIMENT, df))
    stamps = "freon's millisecond log timestamps (start of the test to its summary) in `new`, "
    assert stamps + "`old` (1 of 2 runs)" in method
    assert "JVM start included (the log did not stamp" in method
    assert "to the millisecond) in `old` (1 of 2 runs)." in method


def test_the_method_says_how_late_freons_summary_can_be():
    # cmdw-perchunk.log: "Executing test" at 05:04:45,600, progress 70.50 % at 46,645 and
    # 100.00 % at 47,646 (ProgressBar checks once a second), the summary at 47,660: the run
    # took 2.060 s by freon's stamps, yet every operation was done somewhere in the second
    # before 47,646. Up to 1 s of 2.06 s: the rate reads low by up to 49%.
    method = " ".join(freon.describe(EXPERIMENT, tidy_rows(("a", "cmdw-perchunk.log", 9.0))))
    assert "next once-a-second check after the last operation" in method
    assert "up to 49% here (the shortest run took 2.1 s; Validity names the runs" in method
    assert freon.describe(EXPERIMENT)[-1].endswith("reads low by up to 1 s over the run's time.")


def test_a_duration_run_whose_set_up_outlasted_it_measured_nothing():
    """A real log (six hosts on two cores, --duration=2s): freon exited 0 with no operation
    done; that is no result of 0 ops/s but a run that measured nothing."""
    text = read("cmdw-duration-no-operation.log")
    assert "Successful executions: 0" in text  # freon's own count
    assert re.search(r"--duration|out of 2\)", text)
    with pytest.raises(ParseError, match="did no operation before its --duration ran out"):
        freon.parse_cell({"freon.log": text})


def test_a_summary_line_cut_before_its_end_is_no_result():
    """A --duration run has no expected count to check the summary against: a log cut inside
    its last line ("Successful executions: 227" of a real 2272) must be refused, not read.
    The property test in test_parser_properties.py drew this cut in a CI run."""
    text = read("cmdw-duration-race.log")
    assert text.endswith("Successful executions: 2272\n")  # freon's own count
    whole = {m.name: m.value for m in freon.parse_cell({"freon.log": text})}
    assert whole["successful_executions"] == 2272
    with pytest.raises(ParseError, match="cut"):
        freon.parse_cell({"freon.log": text[:-2]})
