"""teragen submitted to a real single-node YARN 3.4.2 by the workflow, and each run's record
read from the live ResourceManager: counters, the RM's record and the host's timing land in
one tidy row set and one post; a failed job and an unreadable record fail their cells."""

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from perfpost.clusters.yarn import get_json
from perfpost.tools.teragen import yarnapp
from tests.e2e import make_checkout, notebook_of, snakemake

pytestmark = pytest.mark.e2e


def records(work: Path, experiment: str) -> list[tuple[Path, dict]]:
    found = sorted((work / "results" / experiment).glob("cells/*/*/r*/attempt-*/record.json"))
    return [(p, json.loads(p.read_text())) for p in found]


@pytest.fixture(scope="module")
def yarn_run(single_yarn, tool_cache, tmp_path_factory):
    work = tmp_path_factory.mktemp("teragen-yarn")
    scratch = tmp_path_factory.mktemp("teragen-yarn-scratch")
    outputs = tmp_path_factory.mktemp("teragen-yarn-output")  # outside the scratch dirs
    on_yarn = {
        "size": "20M",
        "dir": str(scratch),
        "output": f"file://{outputs}",
        "resourcemanager": single_yarn.rm_url,
        "env": {"HADOOP_CONF_DIR": str(single_yarn.client_conf)},
    }
    config = {
        "tools": {"hadoop": {"cache": str(tool_cache)}, "byteman": {"cache": str(tool_cache)}},
        "experiments": {
            "teragen-yarn": {
                "title": "teragen of 20 MB on a single-node YARN",
                "tool": "teragen",
                "params": {
                    **on_yarn,
                    "defines": {"mapreduce.job.maps": "{maps}"},
                    "remove_output": True,
                },
                "axes": {"maps": [1, 2]},
                "repeats": 1,
            },
            # The map tasks' JVMs carry the Byteman agent too: 2 maps of 10,000 rows each.
            "teragen-instrumented": {
                "tool": "teragen",
                "params": {
                    **on_yarn,
                    "size": "2000000",
                    "defines": {"mapreduce.job.maps": 2},
                    "remove_output": True,
                },
                "instrument": {"rules": ["output"], "tasks": True},
                "repeats": 1,
            },
            # Every map JVM refuses its options: the job fails on YARN.
            "teragen-broken": {
                "tool": "teragen",
                "params": {
                    **on_yarn,
                    "defines": {
                        "mapreduce.map.maxattempts": 1,
                        "mapreduce.map.java.opts": "-XX:+PerfpostNoSuchOption",
                    },
                },
                "repeats": 1,
            },
            # The map JVM waits for a debugger forever: the client is killed at the timeout,
            # and the application with it, at the ResourceManager.
            "teragen-hung": {
                "tool": "teragen",
                "params": {
                    **on_yarn,
                    "defines": {
                        "mapreduce.map.maxattempts": 1,
                        "mapreduce.map.java.opts": "-agentlib:jdwp=transport=dt_socket,"
                        "server=y,suspend=y,address=127.0.0.1:0",
                    },
                },
                "timeout": 40,
                "repeats": 1,
            },
            # The job runs, but the record is asked of an address where no RM listens.
            "teragen-unread": {
                "tool": "teragen",
                "params": {
                    **on_yarn,
                    "resourcemanager": f"http://127.0.0.1:{free_port()}",
                    "app_record_timeout": 3,
                },
                "repeats": 1,
            },
        },
    }
    make_checkout(work, config)
    result = snakemake(work, "--cores", "2", "report", timeout=1800)
    assert result.returncode == 0, result.stderr[-4000:]
    return work, single_yarn, outputs


def test_counters_and_the_rm_record_are_one_tidy_row_set(yarn_run):
    work, _, _ = yarn_run
    df = pd.read_csv(work / "results" / "teragen-yarn" / "tidy.csv")
    assert set(df["status"]) == {"done"}
    for maps in (1, 2):
        rows = df[df["maps"] == maps]
        m = dict(zip(rows["metric"], rows["value"], strict=True))
        assert m["map_tasks"] == maps  # from the job's counters
        assert m["records"] == 200_000  # 20 MB in rows of 100 bytes
        assert m["bytes_written"] >= 20_000_000  # rows plus the files' own framing
        # The RM counts the application master's container too: more than the maps alone.
        assert m["app_vcore_seconds"] > m["map_vcore_seconds"] > 0
        assert 0 < m["app_elapsed"] < m["elapsed"]  # the host also timed JVM start and polling
        assert m["app_memory_seconds"] > 0


def test_the_record_is_the_rm_s_final_one_kept_raw(yarn_run):
    work, yarn, _ = yarn_run
    recs = records(work, "teragen-yarn")
    assert len(recs) == 2
    for path, rec in recs:
        raw = (path.parent / "raw" / "yarn-app.json").read_text()
        info = rec["service_records"]["yarn-app.json"]
        log = (path.parent / "raw" / "teragen.log").read_text()
        assert f"Submitted application {info['id']}" in log
        assert info["status"] == "FINISHED/SUCCEEDED"
        assert info["final"]
        # Asked again now, the live RM says what the cell kept: the record had settled.
        live = get_json(yarnapp.url(yarn.rm_url, info["id"]))["app"]
        kept = json.loads(raw)["app"]
        for key in ("vcoreSeconds", "memorySeconds", "elapsedTime", "finalStatus"):
            assert kept[key] == live[key], key
        metrics = {m["name"]: m["value"] for m in rec["metrics"]}
        assert metrics["app_vcore_seconds"] == live["vcoreSeconds"]
        assert metrics["app_elapsed"] == live["elapsedTime"] / 1000


def test_the_post_shows_each_application_with_its_yarn_numbers(yarn_run):
    work, _, _ = yarn_run
    post = notebook_of(work / "reports" / "teragen-yarn" / "index.md")
    cells = pd.read_csv(work / "results" / "teragen-yarn" / "cells.csv")
    assert "vcore-seconds (YARN)" in post
    assert "Elapsed time (YARN)" in post
    assert "ResourceManager REST API" in post
    # Each run's application and its final state, in the rows of its test (a wide table
    # continues in others, each row led by its test).
    for cell, job in zip(cells["cell"], cells["job_id"], strict=True):
        lead = rf"^\| `{re.escape(cell)}` \|(?:.*\|)?"
        assert re.search(rf"{lead} `{job}` \|", post, re.M), job
        assert re.search(rf"{lead} FINISHED/SUCCEEDED \|", post, re.M), cell


def test_a_job_that_fails_on_yarn_fails_its_cell_with_yarn_s_diagnostics(yarn_run):
    work, _, _ = yarn_run
    ((path, rec),) = records(work, "teragen-broken")
    assert rec["status"] == "failed"
    # The console's reason, and the ResourceManager's final state of the application.
    assert "FAILED: Task failed task_" in rec["reason"]
    assert rec["reason"].endswith("(FINISHED/FAILED)")
    assert (path.parent / "raw" / "teragen.log").exists()
    assert yarnapp.parse((path.parent / "raw" / "yarn-app.json").read_text(), "x").final
    post = notebook_of(work / "reports" / "teragen-broken" / "index.md")
    assert "FINISHED/FAILED" in post


def test_a_job_hung_past_its_timeout_is_killed_on_yarn_too(yarn_run):
    work, yarn, _ = yarn_run
    ((_, rec),) = records(work, "teragen-hung")
    assert rec["status"] == "failed"
    app = next(a for a in rec["reason"].split() if a.startswith("application_"))
    assert rec["reason"].startswith("timed out after 40 s; YARN application application_")
    assert f"{app} killed (HTTP 20" in rec["reason"]
    assert rec["cancelled"][-1]["url"].endswith(f"/apps/{app}/state")
    # The ResourceManager agrees: the application was killed, not left running.
    live = get_json(f"{yarn.rm_url}/ws/v1/cluster/apps/{app}")["app"]
    assert live["state"] == "KILLED", live["state"]


def test_a_run_whose_record_cannot_be_read_is_not_a_result(yarn_run):
    work, _, _ = yarn_run
    ((path, rec),) = records(work, "teragen-unread")
    assert rec["status"] == "failed"
    assert "ResourceManager's record of application_" in rec["reason"]
    assert "not read" in rec["reason"]
    assert "gave up after 3 s" in rec["reason"]
    # The job itself succeeded: its log and counters are kept, marked failed, not lost.
    assert "completed successfully" in (path.parent / "raw" / "teragen.log").read_text()
    df = pd.read_csv(work / "results" / "teragen-unread" / "tidy.csv")
    assert set(df["status"]) == {"failed"}
    assert "map_tasks" in set(df["metric"])


def test_outputs_are_removed_when_asked_and_kept_otherwise(yarn_run):
    work, _, outputs = yarn_run
    for _, rec in records(work, "teragen-yarn") + records(work, "teragen-instrumented"):
        steps = {s["step"]: s["exit_code"] for s in rec["steps"]}
        assert steps["remove-1"] == 0
        assert "org.apache.hadoop.fs.FsShell" in rec["remove_commands"][0]
        assert "warnings" not in rec
    kept = [
        r for e in ("teragen-broken", "teragen-unread", "teragen-hung") for _, r in records(work, e)
    ]
    # Only the cells without remove_output left their directories (a failed job's too).
    assert sorted(p.name for p in outputs.iterdir()) == sorted(
        f"teragen-{r['workdir'].rsplit('/', 1)[1]}" for r in kept
    )


def free_port() -> int:
    """A loopback port nothing listens on now."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_map_tasks_on_yarn_carry_the_agent_and_count_two_writes_per_row(yarn_run):
    work, _, _ = yarn_run
    recs = {r["cell"]: r for _, r in records(work, "teragen-instrumented")}
    on, off = recs["instrument=on"], recs["instrument=off"]
    assert on["status"] == "done", on["reason"]
    assert off["status"] == "done", off["reason"]
    m = {x["name"]: x["value"] for x in on["metrics"]}
    tasks = on["instrument"]["tasks"]
    assert len(tasks) == m["map_tasks"] == 2  # one file per map task JVM, as launched
    # TeraOutputFormat writes each row's key and value: 2 calls per row of 100 bytes, and
    # each part file's .crc header (2 calls, 8 bytes) on file://, then one hsync per task.
    # A task JVM also writes its localized job.xml (its size varies with the job's ids), so
    # the rows give a floor here; local mode, where the map runs in a thread of its own,
    # checks them exactly (test_instrument_e2e).
    assert m["map-hsync.call"] == len(tasks)
    assert m["map-write.call"] >= 2 * 20_000 + 2 * len(tasks)
    assert m["map-write.bytes"] >= 2_000_000 + 8 * len(tasks)
    assert sum(t["ops"]["write"] for t in tasks) == m["map-write.call"]
    assert "mapreduce.map.java.opts=" in on["command"]
    assert "@taskid@" in on["command"]
    assert "map-write.call" not in {x["name"] for x in off["metrics"]}
