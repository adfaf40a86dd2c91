"""Instrumented clients for real: Byteman provisioned from Maven Central and attached by the
workflow to freon dfsg and to teragen in local mode; exact counts of calls, and the post.

The expected counts come from the workloads, not from perfpost:
- freon dfsg writes each file of ``-s`` bytes through its copy buffer (``--copy-buffer``,
  4096 by default), one write call per buffer, then closes it: ceil(s / buffer) writes and one
  close per file. On file:// the ChecksumFileSystem's .crc stream writes its header (the magic
  "crc\\0" and the bytes per checksum, an int) in two calls of its own: 2 writes and 8 bytes
  more per file. Its data and checksum streams' calls happen inside the outer ones.
- teragen writes each row as its key and its value (TeraOutputFormat): 2 writes per row of
  100 bytes, from the map task's thread, then one hsync and one close of its output.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tests.e2e import make_checkout, notebook_of, snakemake

pytestmark = pytest.mark.e2e

FILES, SIZE, BUFFER = 200, 10240, 4096  # dfsg -n, -s, freon's default --copy-buffer
CRC_HEADER_WRITES, CRC_HEADER_BYTES = 2, 8
ROWS = (10_000, 20_000)

# A rule whose action names a field an int does not have: Byteman's checker must say so.
BAD_RULE = """RULE perfpost test: a type error
CLASS org.apache.hadoop.fs.FSDataOutputStream$PositionCache
METHOD write(byte[],int,int)
AT EXIT
IF true
DO traceln("len " + $3.length)
ENDRULE
"""


@pytest.fixture(scope="module")
def run(ozone_cache, testbed, tmp_path_factory, host_dir):
    cache, _ = ozone_cache
    work = tmp_path_factory.mktemp("instrument")
    inventory = yaml.safe_load(Path(testbed.inventory).read_text())
    h1 = {**inventory["hosts"]["h1"], "ozone": "provisioned"}
    # A host whose Byteman directory does not exist: the JVM cannot load the agent.
    h2 = {**inventory["hosts"]["h2"], "ozone": "provisioned", "byteman": "/nonexistent/bm"}
    dfsg = {"subcommand": "dfsg", "dir": str(host_dir)}
    cfg = {
        **inventory,
        "hosts": {"h1": h1, "h2": h2},
        "tools": {k: {"cache": str(cache)} for k in ("ozone", "hadoop", "byteman")},
        "experiments": {
            "threads": {
                "tool": "freon",
                "repeats": 1,
                "params": {
                    **dfsg,
                    "options": {"path": "file://{work}/fs", "n": FILES, "s": SIZE, "t": "{t}"},
                },
                "axes": {"t": [1, 4, 10]},
                "instrument": ["output"],
            },
            "one-byte": {
                "tool": "freon",
                "repeats": 1,
                "params": {
                    **dfsg,
                    "options": {
                        "path": "file://{work}/fs",
                        "n": FILES,
                        "s": SIZE,
                        "t": 4,
                        "copy-buffer": 1,
                    },
                },
                "instrument": {"rules": ["output", "input"], "without": "every"},
            },
            "teragen": {
                "tool": "teragen",
                "repeats": 1,
                "params": {"local": True, "dir": str(host_dir)},
                "axes": {"size": [r * 100 for r in ROWS]},
                "instrument": ["output"],
            },
            "remote": {
                "tool": "freon",
                "hosts": ["h1"],
                "repeats": 1,
                "params": {**dfsg, "options": {"path": "file://{work}/fs", "n": 50, "s": SIZE}},
                "instrument": ["output"],
            },
            "bad-rule": {
                "tool": "freon",
                "repeats": 1,
                "params": {**dfsg, "options": {"path": "file://{work}/fs", "n": 5}},
                "instrument": ["bad.btm"],
            },
            "no-agent": {
                "tool": "freon",
                "hosts": ["h2"],
                "repeats": 1,
                "params": {**dfsg, "options": {"path": "file://{work}/fs", "n": 5}},
                "instrument": ["output"],
            },
        },
    }
    make_checkout(work, cfg)
    (work / "bad.btm").write_text(BAD_RULE)
    result = snakemake(work, "--cores", "2", "report", timeout=2700)
    return work, result


def records(work: Path, exp: str) -> dict[str, dict]:
    out = {}
    for p in (work / "results" / exp).glob("cells/*/*/r*/attempt-*/record.json"):
        rec = json.loads(p.read_text())
        rec["_dir"] = p.parent
        out[rec["cell"]] = rec
    return out


def metrics(rec: dict) -> dict[str, float]:
    return {m["name"]: m["value"] for m in rec["metrics"]}


def test_every_run_ends_and_the_snakemake_run_succeeds(run):
    work, result = run
    assert result.returncode == 0, result.stderr[-4000:]
    for exp, n in (("threads", 4), ("one-byte", 2), ("teragen", 3), ("remote", 2)):
        recs = records(work, exp)
        assert len(recs) == n, sorted(recs)
        assert {r["status"] for r in recs.values()} == {"done"}, [
            r["reason"] for r in recs.values()
        ]


def test_dfsg_counts_are_exact_at_1_4_and_10_threads(run):
    work, _ = run
    recs = records(work, "threads")
    writes = FILES * (math.ceil(SIZE / BUFFER) + CRC_HEADER_WRITES)  # 1,000
    for t in (1, 4, 10):
        rec = recs[f"t={t},instrument=on"]
        m = metrics(rec)
        assert m["write.call"] == writes
        assert m["close.call"] == FILES
        assert m["write.bytes"] == FILES * (SIZE + CRC_HEADER_BYTES)
        # Every worker thread of freon wrote and closed files, and only they did.
        assert m["write.threads"] == t
        assert m["close.threads"] == t
        assert 0 < m["write.time"]
        assert 0 < m["close.time"]
        assert "hsync.call" not in m
        assert "hflush.call" not in m
        # The helper's own record is kept as written, and agrees with the metrics.
        raw = json.loads((rec["_dir"] / "raw" / "instrument.json").read_text())
        assert raw["ops"]["write"]["calls"] == writes
        assert raw["unfinished"] == 0
        assert "-javaagent:" in rec["command"]
        assert rec["instrument"]["agent"] == "byteman 4.0.27"
    # The same cell without the agent: no agent in its command, no counts in its record.
    off = recs["t=1,instrument=off"]
    assert "-javaagent" not in off["command"]
    assert "instrument" not in off
    assert not any(k.endswith(".call") for k in metrics(off))
    # Runs with and without the agent are different measurements.
    assert off["measurement"] != recs["t=1,instrument=on"]["measurement"]


def test_single_byte_writes_are_counted_one_by_one(run):
    work, _ = run
    m = metrics(records(work, "one-byte")["instrument=on"])
    # --copy-buffer=1: one write call per byte of data, plus the .crc headers.
    assert m["write.call"] == FILES * SIZE + FILES * CRC_HEADER_WRITES  # 2,048,400
    assert m["close.call"] == FILES
    assert m["write.threads"] == 4


def test_teragen_local_counts_two_writes_per_row_in_its_map_task(run):
    work, _ = run
    recs = records(work, "teragen")
    for rows in ROWS:
        rec = recs[f"size={rows * 100},instrument=on"]
        by_thread = {t["name"]: t["ops"] for t in rec["instrument"]["threads"]}
        task = by_thread["LocalJobRunner Map Task Executor #0"]
        # Key and value of every row, and the part file's .crc header on file://.
        assert task["write"] == 2 * rows + CRC_HEADER_WRITES
        assert task["hsync"] == 1
        assert task["close"] == 1
        m = metrics(rec)
        assert m["hsync.call"] == 1
        # The job's own files (job.xml, splits) are written by the main thread besides.
        assert m["write.call"] == sum(ops.get("write", 0) for ops in by_thread.values())


def test_a_remote_host_runs_the_agent_too(run):
    work, _ = run
    rec = records(work, "remote")["instrument=on"]
    assert rec["host"] == "h1"
    m = metrics(rec)
    assert m["write.call"] == 50 * (math.ceil(SIZE / BUFFER) + CRC_HEADER_WRITES)
    assert m["close.call"] == 50


def test_a_rule_that_does_not_type_check_fails_the_cell_before_it_runs(run):
    work, _ = run
    rec = records(work, "bad-rule")["instrument=on"]
    assert rec["status"] == "failed"
    # Byteman's checker's own words, naming the rule and the file's line.
    assert "Byteman's rule checker" in rec["reason"]
    assert "invalid field reference" in rec["reason"]
    assert "line 6" in rec["reason"]
    assert rec["command"] is None  # freon never ran
    # The same experiment without the agent still measured.
    assert records(work, "bad-rule")["instrument=off"]["status"] == "done"


def test_an_agent_that_cannot_attach_fails_the_cell_with_the_jvm_s_words(run):
    work, _ = run
    rec = records(work, "no-agent")["instrument=on"]
    assert rec["status"] == "failed"
    assert (
        "Error opening zip file or JAR manifest missing : /nonexistent/bm/lib/byteman.jar"
        in (rec["reason"])
    )


def test_the_post_has_the_instrumented_table_and_the_agent_s_cost(run):
    work, _ = run
    post = notebook_of(work / "reports" / "threads" / "index.md")
    section = post.split("### Inside the client", 1)[1].split("Every run:", 1)[0]
    header = "| t | runs | write calls | write time | close calls | close time | wall time |"
    assert header in section
    tidy = pd.read_csv(work / "results" / "threads" / "tidy.csv")
    for t in (1, 4, 10):
        row = re.search(
            rf"^\| {t} \| 1 \| 1,000 \| [^|]+ \| 200 \| [^|]+ \| [^|]+ \|$", section, re.M
        )
        assert row, section
    # The cost row: the cell run both ways, its two wall times and their ratio, as in tidy.
    one = tidy[(tidy["metric"] == "wall_time") & (tidy["t"] == 1)]
    wall = one.set_index("instrument")["value"]
    ratio = wall["on"] / wall["off"]
    assert re.search(rf"^\| t=1 \| [^|]+ \| [^|]+ \| 1 vs 1 \| {ratio:.2f}x \|", section, re.M)
    summary = post.split("## Test method")[0]
    assert "- Inside the client, counted by a Byteman agent" in summary
    # Which op took the client's time, cell by cell, as the tidy table has it.
    on = tidy[tidy["instrument"] == "on"].groupby(["t", "metric"])["value"].median()
    top = {t: max(("write", "close"), key=lambda op: on[(t, f"{op}.time")]) for t in (1, 4, 10)}
    if len(set(top.values())) == 1:
        said = f"`{top[1]}` took the most time in every instrumented cell"
        assert said in summary
    else:
        for t, op in top.items():
            assert f"`{op}` in t={t} (" in summary
    assert re.search(rf"median wall time with it / without: {ratio:.2f}x \(t=1\)", summary)
    # Metrics in base units in the tidy table.
    units = tidy.drop_duplicates("metric").set_index("metric")["unit"]
    assert units["write.call"] == "count"
    assert units["write.time"] == "s"
    assert units["write.bytes"] == "B"


def test_input_rules_count_dfsv_s_reads_per_file(ozone_cache, tmp_path):
    """freon dfsv reads back what dfsg wrote, each file whole through commons-io's 8 KiB
    copy buffer: 8192 bytes, 2048, then end of file (3 read calls, 10240 bytes). On file://
    the checksummed stream's open reads the .crc header's magic with one readFully of 4
    bytes (its int is read byte by byte, through no instrumented method). Its main thread
    reads one more file first, for the digest the others are checked against."""
    import subprocess

    from perfpost import instrument, provision

    cache, launcher = ozone_cache
    provision.install(instrument.RUNTIME, None, str(cache))  # done already in a session
    home = provision.home(instrument.NAME, instrument.VERSION, str(cache))
    subprocess.run(
        [
            str(launcher),
            "freon",
            "dfsg",
            "-n",
            "20",
            "-t",
            "2",
            "-s",
            str(SIZE),
            "--path",
            f"file://{tmp_path}/fs",
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (prefix,) = [p.name for p in (tmp_path / "fs").iterdir()]
    out = tmp_path / "instrument.json"
    opts = instrument.java_options(str(home), [str(instrument.RULE_SETS["input"])], str(out))
    done = subprocess.run(
        [
            "env",
            f"OZONE_OPTS=-Xmx256m {opts}",
            str(launcher),
            "freon",
            "dfsv",
            "-n",
            "20",
            "-t",
            "2",
            "-p",
            prefix,
            "--path",
            f"file://{tmp_path}/fs",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Successful executions: 20" in done.stdout + done.stderr
    data = json.loads(out.read_text())
    workers = [t["ops"] for t in data["threads"] if t["name"] != "main"]
    assert sum(t["read"]["calls"] for t in workers) == 20 * (3 + 1)
    assert sum(t["read"]["bytes"] for t in workers) == 20 * (SIZE + 4)
    assert sum(t["input-close"]["calls"] for t in workers) == 20
    assert data["ops"]["input-close"]["calls"] == 21  # and main's reference file
    assert "pread" not in data["ops"]  # dfsv reads sequentially
    assert data["unfinished"] == 0
