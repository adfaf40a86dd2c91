"""A command as the tool (perfpost.tools.command): its declared metrics read from output the
tools themselves printed, and the declarations' mistakes refused with the key. Expected
values are read off the sample texts here by hand (strace's table, iperf3's JSON, a CSV)."""

from __future__ import annotations

import pytest

from perfpost.errors import ConfigError, ParseError
from perfpost.tools import command
from perfpost.tools.command import metrics as declared

# strace -f -c -o FILE dd if=/dev/zero of=out bs=4k count=64 conv=fsync (strace 6.1, here).
STRACE = """\
% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 43.70    0.000340           5        67           write
 37.53    0.000292         292         1           fsync
 15.94    0.000124           1        65           read
  0.00    0.000000           0         1         1 access
------ ----------- ----------- --------- --------- ----------------
100.00    0.000778           4       177         1 total
"""
ROW = r"^\s*[\d.]+\s+[\d.]+\s+\d+\s+(?P<value>\d+)\s+(?:\d+\s+)?{}\s*$"

# iperf3 --json's end block, trimmed, after a warning line on stderr (one log, both streams).
IPERF = """\
iperf3: warning - this system does not seem to support IPv6
{
  "end": {
    "sum_sent": {"bytes": 1175977984, "bits_per_second": 9406894467.1},
    "sum_received": {"bytes": 1175060480, "bits_per_second": 9398920016.4}
  },
  "intervals": [{"sum": {"bits_per_second": 9.1e9}}, {"sum": {"bits_per_second": 9.7e9}}]
}
"""


def params(**metrics):
    return {"run": "true", "metrics": metrics}


def run(p, **logs):
    return {m.name: (m.value, m.unit) for m in declared.parse_run(p, logs)}


def test_a_regex_reads_straces_own_table():
    p = params(
        fsync_calls={"regex": ROW.format("fsync"), "unit": "count", "file": "{work}/s.txt"},
        write_calls={"regex": ROW.format("write"), "unit": "count", "file": "{work}/s.txt"},
        in_calls={"regex": r"^\s*\S+\s+(?P<value>[\d.]+)\s.*total$", "unit": "s",
                  "file": "{work}/s.txt"},
    )  # fmt: skip
    ((name, path),) = declared.sources(p)
    assert path == "{work}/s.txt"
    assert run(p, **{name: STRACE}) == {
        "fsync_calls": (1.0, "count"),
        "write_calls": (67.0, "count"),
        "in_calls": (0.000778, "s"),
    }
    # A call strace never saw is no row: absent, unless the declaration says what that means.
    p = params(fdatasync={"regex": ROW.format("fdatasync"), "unit": "count"})
    with pytest.raises(ParseError, match=r"fdatasync: /.*/ matched no line; it ends: .*total"):
        declared.parse_run(p, {"command.log": STRACE})
    p["metrics"]["fdatasync"]["absent"] = 0
    assert run(p, **{"command.log": STRACE}) == {"fdatasync": (0.0, "count")}


def test_a_json_path_reads_iperf3s_report_past_a_warning_in_units_perfpost_keeps():
    p = params(
        received={"json": "end.sum_received.bits_per_second", "unit": "bit/s"},
        sent_bytes={"json": "end.sum_sent.bytes", "unit": "B"},
        best={"json": "intervals[1].sum.bits_per_second", "unit": "Gbit/s"},
    )
    got = run(p, **{"command.log": IPERF})
    # bits over 8: bytes a second; 9.7e9 "Gbit/s" as printed would be 9.7e9 x 1e9 / 8.
    assert got["received"] == (pytest.approx(9398920016.4 / 8), "B/s")
    assert got["sent_bytes"] == (1175977984.0, "B")
    assert got["best"] == (pytest.approx(9.7e9 * 1e9 / 8), "B/s")
    with pytest.raises(ParseError, match=r"the JSON has no end.sum_lost .*'sum_lost'"):
        declared.parse_run(params(x={"json": "end.sum_lost"}), {"command.log": IPERF})


def test_a_csv_column_and_a_pick_over_its_rows():
    text = "op,latency_ms\nwrite,2.0\nwrite,4.0\nread,9.0\n"
    got = run(
        params(
            mean_ms={"csv": "latency_ms", "pick": "mean", "unit": "ms", "file": "/tmp/t.csv"},
            worst={"csv": "latency_ms", "pick": "max", "unit": "ms", "file": "/tmp/t.csv"},
        ),
        **{"output-1-t.csv": text},
    )
    assert got == {"mean_ms": (pytest.approx(0.005), "s"), "worst": (pytest.approx(0.009), "s")}
    with pytest.raises(ParseError, match=r"no CSV column 'lat' \(columns: op, latency_ms\)"):
        declared.parse_run(params(x={"csv": "lat"}), {"command.log": text})


def test_a_file_the_command_did_not_write_fails_the_run():
    p = params(x={"regex": "(\\d+)", "file": "{work}/out.txt"})
    with pytest.raises(ParseError, match=r"the command wrote no \{work\}/out\.txt"):
        declared.parse_run(p, {"command.log": "done"})


@pytest.mark.parametrize(
    ("metrics", "key", "message"),
    [
        ({"x": {"regex": "no group"}}, "x.regex", "has no group"),
        ({"x": {"regex": "(a)(b)"}}, "x.regex", "name the number's"),
        ({"x": {"regex": "(a"}}, "x.regex", "not a regular expression"),
        ({"x": {"regex": "(a)", "json": "a"}}, "x", "give one of regex, json or csv"),
        ({"wall_time": {"regex": "(a)"}}, "wall_time", "every run's own"),
        ({"x": {"json": "a..b["}}, "x.json", "cannot read the path"),
        ({"x": {"regex": "(a)", "unit": "MB/s", "better": "lower"}}, "x.better", "higher"),
    ],
)
def test_a_declaration_that_cannot_work_is_refused_with_its_key(metrics, key, message):
    with pytest.raises(ConfigError) as e:
        command.check_params({"run": "true", "metrics": metrics}, "experiments.e.params")
    assert e.value.where == f"experiments.e.params.metrics.{key}"
    assert message in str(e.value)


def test_the_plan_runs_a_string_in_a_shell_and_fetches_the_declared_files():
    p = {
        "run": "strace -c -o {work}/s.txt dd bs={bs}",
        "metrics": {"n": {"regex": "(\\d+)", "file": "{work}/s.txt"}},
        "env": {"LC_ALL": "C"},
    }
    plan = command.plan(p, "/data/perfpost-abc")
    assert plan.measure[0].argv == (
        "env", "LC_ALL=C", "sh", "-c", "strace -c -o /data/perfpost-abc/s.txt dd bs={bs}"
    )  # fmt: skip
    assert plan.outputs == (("output-1-s.txt", "/data/perfpost-abc/s.txt"),)
    listed = command.plan({"run": ["iperf3", "-c", "{work}"]}, "/w")
    assert listed.measure[0].argv == ("iperf3", "-c", "/w")
    # The declared metrics are the post's, the primary first; a count's direction is declared.
    q = {"run": "x", "primary": "b", "metrics": {
        "a": {"regex": "(1)", "unit": "MB/s"}, "b": {"regex": "(1)", "unit": "count",
                                                    "better": "lower"}}}  # fmt: skip
    assert command.plot_metrics(q) == ("b", "a", "wall_time")
    assert command.better(q) == {"a": True, "b": False}


def test_the_method_names_the_command_and_each_declaration():
    exp = {"params": {"run": "strace -c -o {work}/s.txt dd", "metrics": {
        "n": {"regex": "(?P<value>\\d+) total", "unit": "count", "file": "{work}/s.txt",
              "absent": 0}}}}  # fmt: skip
    text = " ".join(command.describe(exp))
    assert "Each run runs `strace -c -o {work}/s.txt dd` on the cell's host" in text
    assert (
        "`n` (count) by the regular expression `(?P<value>\\d+) total` in the file "
        "`{work}/s.txt` (last match), 0 where it is absent"
    ) in text
    # A script of several lines is not put in one line of code: the listing has it.
    script = {"params": {"run": "a\nb", "metrics": {}}}
    assert "a shell script of its own" in command.describe(script)[0]


def test_a_failed_runs_reason_is_the_line_that_names_the_error():
    # NNThroughputBenchmark without hadoop-common's test jar, as its log ended here.
    trace = """log4j:WARN No appenders could be found for logger (org.apache.hadoop.util.Shell).
Exception in thread "main" java.lang.NoClassDefFoundError: org/apache/hadoop/test/GenericTestUtils
\tat org.apache.hadoop.hdfs.DFSTestUtil.setNameNodeLogLevel(DFSTestUtil.java:2021)
Caused by: java.lang.ClassNotFoundException: org.apache.hadoop.test.GenericTestUtils
\tat java.base/java.lang.ClassLoader.loadClass(ClassLoader.java:525)
\t... 8 more
"""
    assert command.error_reason({"command.log": trace}) == (
        "command.log: Caused by: java.lang.ClassNotFoundException: "
        "org.apache.hadoop.test.GenericTestUtils"
    )
    assert command.error_reason({"command.log": "one\nlast words\n"}) == "command.log: last words"
    assert command.error_reason({"command.log": ""}) is None
