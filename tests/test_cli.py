"""`perfpost parse` and `perfpost cells` as a user runs them."""

import csv
import io
import subprocess
import sys

from tests.conftest import DD_LOGS, ROOT

PERFPOST = [sys.executable, "-m", "perfpost"]


def run(*args, cwd=ROOT):
    return subprocess.run([*PERFPOST, *args], capture_output=True, text=True, cwd=cwd, timeout=120)


def test_parse_prints_tidy_rows_for_every_log():
    logs = [str(DD_LOGS / "write-fsync.log"), str(DD_LOGS / "read.log")]
    result = run("parse", "dd", *logs)
    assert result.returncode == 0, result.stderr
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert list(rows[0]) == ["source", "tool", "id", "status", "metric", "value", "unit"]
    by = {(r["source"], r["metric"]): r for r in rows}
    assert by[(logs[0], "bytes")]["value"] == "102400000.0"
    assert by[(logs[0], "elapsed")]["unit"] == "s"
    secs = float((DD_LOGS / "read.log").read_text().split(" copied, ")[1].split(" s,")[0])
    assert float(by[(logs[1], "throughput")]["value"]) == 102400000 / secs
    assert by[(logs[1], "throughput")]["unit"] == "B/s"


def test_parse_of_a_bad_log_exits_2_naming_file_and_line():
    bad = str(DD_LOGS / "truncated.log")
    result = run("parse", "dd", str(DD_LOGS / "read.log"), bad)
    assert result.returncode == 2
    assert f"{bad}:2: no dd summary line" in result.stderr


def test_parse_of_an_unknown_tool_or_missing_file_is_a_clear_error():
    assert "unknown tool 'iozone'" in run("parse", "iozone", "x.log").stderr
    result = run("parse", "dd", "/nonexistent/x.log")
    assert result.returncode == 2
    assert "/nonexistent/x.log: cannot read" in result.stderr


def test_cells_lists_every_cell_of_the_default_config_as_missing(tmp_path):
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.yaml").write_text((ROOT / "config" / "config.yaml").read_text())
    result = run("cells", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    # dd-fsync 3 cells (disk, disk-again, memdisk: 5 runs each before its precision target
    # asks for more), local-reads 12 x 5, onefile 2 layouts x 2 sizes x 5, hcfs 2 storages x
    # 2 buffers x 5 (all with the agent), ratis-placement 3 placements x 4, teragen 3 x 4.
    assert len(rows) == 3 * 5 + 12 * 5 + 4 * 5 + 4 * 5 + 3 * 4 + 3 * 4
    assert {r["status"] for r in rows} == {"missing"}


def test_parse_freon_prints_timer_and_summary_rows():
    from tests.conftest import ROOT

    log = str(ROOT / "tests" / "data" / "freon" / "dfsg.log")
    result = run("parse", "freon", log)
    assert result.returncode == 0, result.stderr
    rows = {r["metric"]: r for r in csv.DictReader(io.StringIO(result.stdout))}
    assert rows["file-create.mean"]["unit"] == "s"
    assert rows["successful_executions"]["value"] == "300.0"
    assert rows["rate"]["unit"] == "1/s"
    killed = str(ROOT / "tests" / "data" / "freon" / "cmdw-killed.log")
    bad = run("parse", "freon", killed)
    assert bad.returncode == 2
    assert f"{killed}:14: log ends before freon's summary" in bad.stderr


# A TestDFSIO result file as published (two writes), in its own words.
DFSIO_RESULTS = """\
----- TestDFSIO ----- : write
            Date & time: Fri Sep 27 13:01:56 CEST 2019
        Number of files: 10
 Total MBytes processed: 20480
      Throughput mb/sec: 102.13
 Average IO rate mb/sec: 131.86
  IO rate std deviation: 112.7
     Test exec time sec: 56.09

----- TestDFSIO ----- : write
            Date & time: Fri Sep 27 13:04:01 CEST 2019
        Number of files: 20
 Total MBytes processed: 40960
      Throughput mb/sec: 84.02
 Average IO rate mb/sec: 87.96
  IO rate std deviation: 26.31
     Test exec time sec: 94.96
"""


def test_parse_command_reads_the_numbers_declared_on_the_command_line(tmp_path):
    log = tmp_path / "TestDFSIO_results.log"
    log.write_text(DFSIO_RESULTS)
    declared = (
        "{first: {regex: 'Throughput mb/sec: (?P<value>[0-9.]+)', pick: first, unit: MiB/s},"
        " exec: {regex: 'Test exec time sec: (?P<value>[0-9.]+)', pick: sum, unit: s}}"
    )
    result = run("parse", "command", str(log), "--metrics", declared)
    assert result.returncode == 0, result.stderr
    rows = {r["metric"]: r for r in csv.DictReader(io.StringIO(result.stdout))}
    # TestDFSIO's mb is a MiB; perfpost keeps bytes a second. Both runs' exec times summed.
    assert float(rows["first"]["value"]) == 102.13 * 1048576
    assert rows["first"]["unit"] == "B/s"
    assert float(rows["exec"]["value"]) == 56.09 + 94.96
    # Without declarations a command's log says nothing; a unit perfpost does not know, a
    # file to read and a pattern that matches nothing are each named.
    said = run("parse", "command", str(log))
    assert said.returncode == 2
    assert "give them with --metrics" in said.stderr
    bad = run("parse", "command", str(log), "--metrics", "{x: {regex: '(\\d+)', unit: furlongs}}")
    assert "--metrics.x.unit: 'furlongs' is not one of" in bad.stderr
    bad = run("parse", "command", str(log), "--metrics", "{x: {regex: '(\\d+)', file: a.log}}")
    assert "--metrics.x: reads a.log; give that file as a log" in bad.stderr
    bad = run("parse", "command", str(log), "--metrics", "{x: {regex: 'speed (\\d+)'}}")
    assert bad.returncode == 2
    assert "metric x: /speed (\\d+)/ matched no line" in bad.stderr
