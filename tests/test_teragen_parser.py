"""The teragen parser on real console logs of real Hadoop 3.4.2 runs
(tests/data/teragen/capture.sh)."""

import re
from pathlib import Path

import pytest

from perfpost.adapters import teragen
from perfpost.errors import ParseError

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
