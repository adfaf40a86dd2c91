"""freon's rate over its measured phase: the progress window, checked against numbers read by
hand from real logs and against the file system's own clock in a real run."""

from __future__ import annotations

import bisect
import datetime as dt
import os
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from perfpost.analysis import validity
from perfpost.tools import freon
from perfpost.tools.freon import parser

DATA = Path(__file__).parent / "data" / "freon"


def stamp(text: str) -> float:
    """A log4j stamp as epoch seconds, local time, as the log was written."""
    return dt.datetime.strptime(text, "%Y-%m-%d %H:%M:%S,%f").timestamp()


def metrics(name: str) -> dict[str, float]:
    text = (DATA / name).read_bytes().decode()
    return {m.name: m.value for m in freon.parse_text(text, name)}


def test_the_rate_is_over_the_window_between_two_progress_lines_read_by_hand():
    # dfsg-warmup.log, lines 1, 5 and 72:
    #   05:22:02,193 Executing test ... number-of-tests 4000
    #   05:22:03,287 Progress: 0.15 % (6 out of 4000)        the first that counts one
    #   05:23:11,641 Progress: 99.95 % (3998 out of 4000)    the last before 4000
    #   05:23:12,662 ... Total execution time (sec): 70
    m = metrics("dfsg-warmup.log")
    t_a, t_b = stamp("2026-11-23 05:22:03,287"), stamp("2026-11-23 05:23:11,641")
    assert t_b - t_a == pytest.approx(68.354, abs=1e-3)
    assert m["rate_time"] == pytest.approx(68.354, abs=1e-3)
    assert m["rate_operations"] == 3998 - 6
    assert m["rate"] == pytest.approx(3992 / 68.354, rel=1e-4)  # 58.40 ops/s
    assert m["startup"] == pytest.approx(1.094, abs=1e-3)  # 02,193 to 03,287
    assert m["rate_lag"] == 0
    assert m["rate_source_progress_window"] == 1
    # The whole run's rate, start to summary, read low: 4000 / 70.469 s = 56.76 ops/s.
    assert m["elapsed"] == pytest.approx(70.469, abs=1e-3)
    assert 4000 / m["elapsed"] < 0.975 * m["rate"]
    # The sync is added to the time the run's operations take at that rate.
    assert m["operations_time"] == pytest.approx(4000 / m["rate"])


def test_a_run_too_short_for_a_window_keeps_the_whole_run_rate_and_its_lag():
    # dfsg.log: 0 at 48,591, 150 at 49,591, 300 at 50,592: one progress line inside the run,
    # so no window; the rate is 300 over the test's start (48,551) to its summary (50,604).
    m = metrics("dfsg.log")
    assert m["rate_source_freon_timestamps"] == 1
    assert "rate_source_progress_window" not in m
    assert m["rate_time"] == pytest.approx(2.053, abs=1e-3)
    assert m["rate"] == pytest.approx(300 / 2.053, rel=1e-3)
    assert m["rate_lag"] == 1.0
    # The terminal form's bar counts whole seconds: no window either.
    tty = metrics("cmdw.tty.log")
    assert "rate_source_progress_window" not in tty


def test_a_duration_run_is_timed_from_its_operations_start_to_freons_deadline():
    # cmdw-duration.log (--duration=4s), lines 2, 9 and 17:
    #   22,257 Progress: 0.00 % (0 out of 4)         freon's start: the deadline is 26,257
    #   22,799 Running chunk write test: threads=2 ...  cmdw's set-up is done
    #   Successful executions: 2656
    # and the test began ("Executing test") at 22,210.
    m = metrics("cmdw-duration.log")
    assert m["rate_time"] == pytest.approx(26.257 - 22.799, abs=1e-3)
    assert m["rate_operations"] == 2656
    assert m["rate"] == pytest.approx(2656 / 3.458, rel=1e-4)  # 768 ops/s
    assert m["startup"] == pytest.approx(22.799 - 22.210, abs=1e-3)
    assert m["rate_lag"] == 0
    assert m["rate_source_progress_window"] == 1
    # Fewer operations than --number-of-tests is a duration run's outcome, not a failure.
    assert m["failures"] == 0


def test_a_duration_run_whose_progress_bar_read_no_start_time_keeps_its_deadline():
    """freon starts its progress bar before it sets its start time, so the bar's first line
    can count the JVM's uptime ("Progress: 351000.00 % (10530 out of 3)") and the bar then
    stops. Its stamp is still freon's start: cmdw-duration-race.log (--duration=3s, from a
    default run): the line at 56,641, cmdw's start of operations at 57,232, 2,272 chunks."""
    m = metrics("cmdw-duration-race.log")
    assert m["rate_time"] == pytest.approx(56.641 + 3 - 57.232, abs=1e-3)
    assert m["rate"] == pytest.approx(2272 / 2.409, rel=1e-4)
    assert m["rate_lag"] == 0


def test_progress_that_counts_seconds_is_no_window():
    """With --duration, freon's progress counts seconds, not operations ("3 out of 45"): the
    lines say nothing of the operations' rate."""
    lines = ["2026-11-23 05:00:00,000 [main] INFO freon.BaseFreonGenerator: Executing test "
             "with prefix abc and number-of-tests 100000000"]  # fmt: skip
    for s in range(0, 46):
        lines.append(
            f"2026-11-23 05:00:{s:02d},{5 + s:03d} [Thread-3] INFO freon.ProgressBar: "
            f"Progress: {100 * s / 45:.2f} % ({s} out of 45)"
        )
    lines += [
        "2026-11-23 05:00:45,900 [main] INFO freon.BaseFreonGenerator: Total execution time "
        "(sec): 46",
        "2026-11-23 05:00:45,900 [main] INFO freon.BaseFreonGenerator: Failures: 0",
        "2026-11-23 05:00:45,900 [main] INFO freon.BaseFreonGenerator: Successful executions: 5000",
    ]
    log = parser._Log("\n".join(lines) + "\n", "d")
    # No generator said when its operations began: its set-up would be in any phase.
    assert parser.window(log) is None
    # Nor are they a rate over time: the default run's onefile figure drew "1 operation/s"
    # for every duration run, and the steady-state check read them as its rates.
    assert freon.parse_series({"d": "\n".join(lines) + "\n"}) == []


def test_a_duration_runs_progress_is_no_series_and_a_counted_runs_is():
    """cmdw-duration.log: 4 lines "n out of 4" (seconds) over 100,000,000 tests: no series.
    dfsg-warmup.log counts its files: every one of its stamped progress lines is a point."""
    assert freon.parse_series({"x": (DATA / "cmdw-duration.log").read_text()}) == []
    text = (DATA / "dfsg-warmup.log").read_text()
    stamped = [ln for ln in text.splitlines() if "freon.ProgressBar: Progress:" in ln]
    assert len(freon.parse_series({"x": text})) == len(stamped) > 0


def lagged(rows):
    out = []
    for cell, repeat, metric, value in rows:
        out.append(
            {"experiment": "e", "cell": cell, "host": "h", "repeat": repeat,
             "size": cell.split("=")[1], "tool": "freon", "status": "done", "attempt": 1,
             "metric": metric, "value": float(value), "unit": "s"}
        )  # fmt: skip
    return pd.DataFrame(out)


def test_rates_over_their_window_carry_no_lag_and_are_not_flagged():
    df = lagged(
        [
            ("size=1", 1, "elapsed", 4.0), ("size=1", 1, "rate_time", 2.0),
            ("size=1", 1, "rate_lag", 0.0),
            ("size=1", 2, "elapsed", 4.2), ("size=1", 2, "rate_time", 2.1),
            ("size=1", 2, "rate_lag", 0.0),
        ]
    )  # fmt: skip
    check = validity.lag_check(df, ["size"], freon.TIME_LAG)
    assert check["flags"] == []
    assert check["facts"][0].startswith("Every rate (2 runs) is over its run's measured phase")


def test_whole_run_rates_are_flagged_by_their_lag_and_old_records_by_their_elapsed():
    # A 4 s whole-run rate: 1 s of lag is 25%, flagged; a window of 2 s: none. A record made
    # before rate_lag was kept (elapsed 5 s, no rate_time): freon's 1 s, 20%, flagged.
    df = lagged(
        [
            ("size=1", 1, "elapsed", 4.0), ("size=1", 1, "rate_time", 4.0),
            ("size=1", 1, "rate_lag", 1.0),
            ("size=1", 2, "elapsed", 4.0), ("size=1", 2, "rate_time", 2.0),
            ("size=1", 2, "rate_lag", 0.0),
            ("size=2", 1, "elapsed", 5.0),
        ]
    )  # fmt: skip
    check = validity.lag_check(df, ["size"], freon.TIME_LAG)
    assert check["facts"][0].startswith("2 of 3 runs' rates are over the whole run: freon")
    assert check["facts"][0].endswith("up to 25% of the shortest of them (4 s).")
    assert check["flags"] == [
        "`size=1` on h, run 1: took 4 s: its rate may read low by up to 25% (above 10%).",
        "`size=2` on h, run 1: took 5 s: its rate may read low by up to 20% (above 10%).",
    ]


def test_the_method_says_which_clock_the_rates_used():
    def rows(sources):
        return pd.DataFrame(
            [
                {"cell": c, "host": "h", "repeat": r, "metric": m, "value": v, "unit": "s",
                 "status": "done"}
                for c, r, m, v in sources
            ]
        )  # fmt: skip

    window = rows([("a", 1, "rate_source_progress_window", 1), ("a", 1, "startup", 1.3),
                   ("a", 1, "rate_lag", 0)])  # fmt: skip
    text = " ".join(freon.describe({"params": {"subcommand": "dfsg"}}, window))
    assert "over each run's measured phase" in text
    assert "began 1.3 s after the test started" in text
    assert "reads low" not in text  # no run's rate has the lag
    whole = rows([("a", 1, "rate_source_freon_timestamps", 1), ("a", 1, "rate_lag", 1.0),
                  ("a", 1, "rate_time", 2.5)])  # fmt: skip
    text = " ".join(freon.describe({"params": {"subcommand": "dfsg"}}, whole))
    assert "No run was long enough for a measured phase" in text
    assert "up to 40% here (the shortest run took 2.5 s" in text
    timed = {"params": {"subcommand": "cmdw", "options": {"duration": "3s"}}}
    text = " ".join(freon.describe(timed, window))
    assert "ran for a set time (`--duration`)" in text
    assert "to freon's deadline" in text
    assert "the generator's start-up)" in text


def _real_run(argv: list[str], name: str):
    """A real freon or vapor run (256 MiB heap): the finished process, its log read as
    perfpost reads it, and the measured phase perfpost finds in it."""
    run = subprocess.run(
        argv, capture_output=True, text=True, timeout=300,
        env={**os.environ, "OZONE_OPTS": "-Xmx256m"},
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    log = parser._Log(run.stderr, name)
    phase = parser.window(log)
    assert phase is not None
    return run, log, phase


@pytest.mark.e2e  # a real freon, provisioned from Maven Central
def test_the_window_agrees_with_the_file_systems_clock_in_a_real_run(ozone_cache, tmp_path):
    """freon dfsg writes 1,500 files of 10 KB to file://; each file's mtime is the file
    system's own record of when its last byte was written. At each end of the window, the
    files written by then are freon's count, give or take the 2 threads' files in flight;
    and the files of the window's operations were written over the window's time, to within
    1% of it (here about 10 s: 0.1 s)."""
    _, launcher = ozone_cache
    out = tmp_path / "out"
    run, log, phase = _real_run(
        [str(launcher), "freon", "dfsg", "-n", "1500", "-s", "10240", "-t", "2",
         "--path", f"file://{out}"], "dfsg",
    )  # fmt: skip
    points = [(t, done) for t, done, total in log.progress if 0 < done < total]
    (t_a, c_a), (t_b, c_b) = points[0], points[-1]
    written = sorted(
        p.stat().st_mtime_ns / 1e9 for p in out.rglob("*") if p.is_file() and p.name[0] != "."
    )
    assert len(written) == 1500
    threads = 2
    assert 0 <= bisect.bisect_right(written, t_a) - c_a <= threads
    assert 0 <= bisect.bisect_right(written, t_b) - c_b <= threads
    # The window's own operations, by the file system: the (c_a + 1)-th file to the c_b-th.
    span = written[c_b - 1] - written[c_a]
    assert phase.seconds == pytest.approx(t_b - t_a)
    assert abs(span - phase.seconds) <= 0.01 * phase.seconds
    # The whole run's time (test start to summary) holds every operation the files timed,
    # the generator's start-up before the first and the progress reporter's wait after the
    # last (under its 1 s check interval): more than the files' span, by a few seconds at most
    # (1.2 s here on a quiet machine, 1.8 s with the suite's load; a fixed share of the span
    # is not a bound: the span grows under load, the start-up does not).
    whole = {m.name: m.value for m in freon.parse_text(run.stderr, "dfsg")}["elapsed"]
    assert 0 < whole - (written[-1] - written[0]) < 5


DURATION = 6  # seconds of cmdw in the test below


@pytest.mark.e2e  # a real freon, provisioned from Maven Central
def test_a_duration_runs_phase_agrees_with_its_chunk_files(ozone_cache, tmp_path):
    """vapor cmdw --duration=6s with one file per chunk of 1 MiB: each chunk file's mtime is
    the file system's record of its write. The run wrote one file per operation it counted,
    the first after cmdw said its operations began, the last within 1% of the phase and one
    write of freon's deadline, and their span with the first (cold) write is the phase's time
    to 1% and one write: a file's mtime is its write's end, so the first file is stamped one
    write after the phase began. Six seconds, not three: freon's
    clock starts before cmdw's set-up, which took all of a 3 s run on two cores busy with
    other runs, and that run did no operation at all."""
    _, launcher = ozone_cache
    data = tmp_path / "dn"
    _, log, phase = _real_run(
        [str(launcher), "vapor", "-D", f"hdds.datanode.dir={data}",
         "-D", f"ozone.metadata.dirs={tmp_path / 'meta'}",
         "-D", "hdds.datanode.container.schema.v3.enabled=false",
         "-D", "hdds.datanode.volume.min.free.space=1MB",
         "-D", "hdds.datanode.volume.min.free.space.percent=0",
         "-D", "hdds.datanode.volume.min.free.space.hard.limit.percent=0",
         "cmdw", "-n", "100000000", "-s", "1048576", "-t", "2", "-l", "FILE_PER_CHUNK",
         f"--duration={DURATION}s"], "cmdw",
    )  # fmt: skip
    chunks = sorted(
        p.stat().st_mtime_ns / 1e9
        for p in data.rglob("*")
        if p.is_file() and p.parent.name == "chunks"
    )
    assert len(chunks) == log.success == phase.operations
    deadline = log.progress[0][0] + DURATION
    assert chunks[0] >= log.ops_ts
    # The last write ends at the deadline to within 1% of the phase and the time of one
    # write (a thread's mean, 2 threads): one begun just before it ends after it. A suite
    # with two other runs on two cores saw a phase of 0.244 s, 53 writes, the last 2.8 ms off.
    one_write = 2 * phase.seconds / phase.operations
    assert abs(chunks[-1] - deadline) <= 0.01 * phase.seconds + one_write
    span = chunks[-1] - chunks[0]
    # No file is written outside the phase; the span falls short of it by the first, cold
    # write, which the files time themselves: from cmdw's "operations begin" to the first
    # file (21 ms of 1.99 s in a quiet CI run, 114 ms of 3.0 s in a suite on two busy cores,
    # so no fixed allowance holds). With it, the files cover the phase to 1% and one write at
    # its end: a phase taken from freon's clock, set-up included (3 s more here), fails this.
    assert span <= 1.01 * phase.seconds
    first_write = chunks[0] - log.ops_ts
    assert phase.seconds - span <= first_write + 0.01 * phase.seconds + one_write
