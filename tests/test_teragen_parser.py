"""The teragen parser on real console logs of real Hadoop 3.4.2 runs
(tests/data/teragen/capture.sh)."""

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfpost.errors import ParseError
from perfpost.tools import teragen

DATA = Path(__file__).parent / "data" / "teragen"


def read(name: str) -> str:
    return (DATA / name).read_text()


def test_a_finished_job_gives_its_id_and_counters_by_meaning():
    text = read("local-100MB.log")
    log = teragen.JobLog(text, "x")
    assert log.job_id == re.search(r"Running job: (job_\w+)", text).group(1)
    assert log.application_id is None  # a local job has no YARN application
    written = int(
        re.search(r"Bytes Written=(\d+)", text.split("completed successfully")[1]).group(1)
    )
    m = {x.name: (x.value, x.unit) for x in teragen.parse_cell({"x": text}, wall_time=2.5)}
    assert m["bytes_written"] == (written, "B")
    assert m["records"] == (1000000, "count")
    assert m["elapsed"] == (2.5, "s")
    assert m["throughput"] == (pytest.approx(written / 2.5), "B/s")
    assert m["counters"] == (16, "count")  # "Counters: 16", not a task attempt's copy
    assert 0 < m["job_time"][0] < 10


def test_a_speculative_attempt_the_job_killed_is_counted_apart():
    # A YARN run whose job launched a speculative copy of a map and killed it before its
    # JVM started: the job's own counters say "Launched map tasks=4", "Killed map tasks=1".
    text = read("speculative.log")
    counters = text.split("completed successfully")[1]
    launched = int(re.search(r"Launched map tasks=(\d+)", counters).group(1))
    killed = int(re.search(r"Killed map tasks=(\d+)", counters).group(1))
    assert (launched, killed) == (4, 1)
    m = {x.name: x.value for x in teragen.parse_cell({"x": text}, wall_time=30.0)}
    assert (m["map_tasks"], m["map_tasks_killed"]) == (launched, killed)


def test_yarn_job_ids_map_to_application_ids():
    log = teragen.JobLog(
        "2026-01-01 00:00:00,000 [main] INFO mapreduce.Job: Running job: job_1700000000000_0007\n",
        "x",
    )
    assert log.application_id == "application_1700000000000_0007"


def test_an_existing_output_fails_with_the_exception():
    with pytest.raises(ParseError) as e:
        teragen.parse_text(read("output-exists.log"), "output-exists.log")
    assert "FileAlreadyExistsException: Output directory" in str(e.value)
    assert e.value.line is not None
    assert "FileAlreadyExistsException" in teragen.error_reason({"t": read("output-exists.log")})


def test_a_killed_run_is_an_error_not_a_result():
    with pytest.raises(ParseError, match="log ends before the job completed"):
        teragen.parse_text(read("killed.log"), "killed.log")


@pytest.mark.parametrize(
    ("size", "rows"), [("100M", 10**6), ("100G", 10**9), ("1T", 10**10), (12345600, 123456)]
)
def test_sizes_are_decimal_as_teragen_counts_them(size, rows):
    assert teragen.rows({"size": size}) == rows


def test_local_runs_keep_their_temporary_files_in_the_run_directory():
    argv = teragen.argv(
        {
            "size": "1M",
            "local": True,
            "launcher": "yarn",
            "jar": "ex.jar",
            "output": "file://{work}",
        },
        "/d/perfpost-abc",
    )
    assert argv[:4] == ["yarn", "jar", "ex.jar", "teragen"]
    assert "-Dhadoop.tmp.dir=/d/perfpost-abc/tmp" in argv
    assert "-Dmapreduce.framework.name=local" in argv
    assert argv[-2:] == ["10000", "file:///d/perfpost-abc/teragen-perfpost-abc"]


def test_a_log_cut_before_the_jobs_counters_is_not_read_from_a_task_attempts_copy():
    # Local jobs print each task attempt's counters before the job's; with several maps an
    # attempt's Bytes Written is only its share. Made different here so a mix-up shows.
    text = read("local-100MB.log")
    job_block = text.index("INFO mapreduce.Job: Counters: 16")
    cut = text[: text.rindex("\n", 0, job_block) + 1]
    cut = cut.replace("Bytes Written=100781260", "Bytes Written=50390630", 1)
    assert "completed successfully" in cut
    with pytest.raises(ParseError, match="log ends before the job completed") as e:
        teragen.parse_text(cut, "cut.log")
    assert e.value.line == len(cut.splitlines())


@pytest.mark.parametrize("back", [1, 3, len("100781260\n")])
def test_a_counters_block_cut_in_its_last_value_is_refused(back):
    text = read("local-100MB.log")
    with pytest.raises(ParseError, match="holds 15 of the 16 counters") as e:
        teragen.parse_text(text[:-back], "cut.log")
    assert e.value.source == "cut.log"


def test_a_job_id_that_is_not_yarns_has_no_record_to_fetch():
    log = "2026-01-01 00:00:00,000 [main] INFO mapreduce.Job: Running job: job_NaN_0002\n"
    assert teragen.JobLog(log, "x").application_id is None
    assert teragen.fetches({"resourcemanager": "http://rm:8088"}, {"t.log": log}) == ()


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(st.text(max_size=400))
def test_parser_never_crashes_on_garbage(text):
    try:
        teragen.parse_text(text, "g.log")
    except ParseError as e:
        failed = e.source
    else:
        return
    assert failed == "g.log"


UNITS = {"": 1, "k": 10**3, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15}


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(n=st.integers(0, 10**30), unit=st.sampled_from(sorted(UNITS)), b=st.sampled_from(["", "B"]))
def test_sizes_are_read_exactly_however_large(n, unit, b):
    # Exactly: through a float, 99999999999999999999 bytes would be 10^20.
    assert teragen.parse_decimal_size(f"{n}{unit}{b}") == n * UNITS[unit]


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(
    st.one_of(
        st.text(max_size=30),
        st.from_regex(r"\A\s?\d{1,400}(\.\d{1,30})?\s?[kKMGTPx]?B?\Z"),
        st.just("9" * 5000),
    )
)
def test_a_size_is_a_whole_number_of_bytes_or_a_value_error(text):
    # A config value: ValueError is what check_params turns into a ConfigError.
    try:
        size = teragen.parse_decimal_size(text)
    except ValueError as e:
        message = str(e)
    else:
        assert isinstance(size, int)
        assert size >= 0
        return
    assert message.startswith("bad size")
