"""A cluster's life during a run (config/examples/cluster-life.yaml, one run a cell), on a
real single-host Ozone: its datanode killed, its data
directories deleted and started again one second into a run that only waits until the new
datanode JVM has been up two seconds; and the Ozone Manager's own key counter as a metric of a
freon run.

Expected values have reasons of their own: freon's own summary (the keys it created) for the
OM's counter; the datanode's own log (a second start-up banner, with the pid the step says it
started); the JVM's uptime, which cannot pass two seconds before three seconds into a run
whose datanode starts at one; and what the deleted directories held, listed here before the
run ends through the cluster state's pid and directories.
"""

from __future__ import annotations

import json
import re

import pytest
import yaml

from tests.conftest import FAULTS, ROOT
from tests.e2e import QUICK_DAEMONS, make_checkout, notebook_of, records, snakemake
from tests.test_clusters_e2e import (
    RUN_TIMEOUT,
    cluster_dir,  # noqa: F401  (a fixture: kills whatever this test's clusters left)
)

pytestmark = pytest.mark.e2e

EXAMPLE = ROOT / "config" / "examples" / "cluster-life.yaml"
TRACED = ROOT / "config" / "examples" / "strace-datanode.yaml"
CHUNKS = 20  # each chunk synced the Ratis log about once (108 fdatasync of 100 chunks)
KEYS = 12  # the example writes 60; a count of 12 proves the counter as well
START_AT = 1.0  # seconds into the wait when the datanode starts again
UP_FOR_MS = 2000  # the wait ends once the new datanode JVM has been up this long
EXPERIMENT_TIMEOUT = 300  # the example's own timeout for dn-back


@pytest.fixture(scope="module")
def run(ozone_cache, tmp_path_factory):
    cache, _ = ozone_cache
    work = tmp_path_factory.mktemp("life")
    config = yaml.safe_load(EXAMPLE.read_text())
    config["tools"]["ozone"]["cache"] = str(cache)
    config["clusters"]["ozone"].update(dir=str(work / "clusters"), jvm=QUICK_DAEMONS)
    # No bucket made at each of the three starts (an Ozone shell JVM each): freon ockg makes
    # its -v volume and -b bucket itself where they are missing (ensureVolumeAndBucketExist;
    # neither is a key commit), freon dcg writes chunks to the datanode with no bucket, and
    # no other run here uses one.
    assert config["clusters"]["ozone"].pop("buckets") == ["vol1/bucket1"]
    assert "-v vol1 -b bucket1" in config["experiments"]["om-commits"]["params"]["run"]
    for exp in config["experiments"].values():
        exp["repeats"] = 1
        exp["params"] = {**exp.get("params", {}), "dir": str(work / "scratch")}
    # The example's numbers, which the expected values below are made of (its key count
    # made smaller).
    commits = config["experiments"]["om-commits"]["params"]
    assert " -n 60 " in commits["run"]
    commits["run"] = commits["run"].replace(" -n 60 ", f" -n {KEYS} ")
    steps = config["experiments"]["dn-back"]["cluster_steps"]
    assert steps[-1] == {"do": "start", "role": "datanode", "at": START_AT}
    assert config["experiments"]["dn-back"]["until"]["above"] == UP_FOR_MS
    assert config["experiments"]["dn-back"]["timeout"] == EXPERIMENT_TIMEOUT
    # The datanode under strace (config/examples/strace-datanode.yaml) on the same Ozone
    # configuration as om-commits: one start serves both.
    traced = yaml.safe_load(TRACED.read_text())["experiments"]["dn-syscalls"]
    traced.update(repeats=1)
    traced["params"]["dir"] = str(work / "scratch")
    traced["params"]["options"]["n"] = CHUNKS
    config["experiments"]["dn-syscalls"] = traced
    # A step that cannot be done: the datanode is running, and a wipe needs it stopped. Its
    # cluster (a start of its own, as any cell with steps gets) has its datanode started
    # under strace for the cluster's whole life.
    config["clusters"]["traced"] = {
        **config["clusters"]["ozone"],
        "prefix": {"datanode": "strace -f -c -o {logs}/{daemon}.strace"},
    }
    config["experiments"]["bad-step"] = {
        "tool": "wait",
        "cluster": "traced",
        "params": {"dir": str(work / "scratch")},
        "cluster_steps": [{"do": "wipe", "role": "datanode"}],
        "daemon_metrics": config["experiments"]["dn-back"]["daemon_metrics"],
        "until": {"metric": "dn_uptime", "above": 10**9},
        "repeats": 1,
        "timeout": 600,
    }
    make_checkout(work, config)
    result = snakemake(work, "--cores", "2", "report", timeout=RUN_TIMEOUT)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return work


def test_the_oms_own_counter_counted_every_key_freon_created(run):
    (rec,) = records(run, "om-commits")
    assert rec["status"] == "done", rec["reason"]
    text = "\n".join(p.read_text() for p in (rec["path"].parent / "raw").glob("*.log"))
    # freon's own summary: "Successful executions: 60"
    (done,) = re.findall(r"Successful executions: (\d+)", text)
    assert int(done) == KEYS
    metrics = {m["name"]: m for m in rec["metrics"]}
    assert metrics["key_commits"]["value"] == KEYS
    assert metrics["key_commits"]["unit"] == "count"
    # The rate is the same counter's change (Prometheus' name for it) over the readings' span.
    seconds = rec["daemon_metrics"]["seconds"]
    assert metrics["commit_rate"]["value"] == pytest.approx(KEYS / seconds, rel=1e-9)


def test_the_datanode_was_killed_wiped_and_started_at_its_moment(run):
    (rec,) = records(run, "dn-back")
    # A cluster of its own: started for this cell, and no other cell's record names it. A
    # start is its cluster's id and its number: bad-step's cluster ("traced") counts its
    # starts from 1 too.
    (held,) = rec["clusters"]
    others = [
        r for e in ("om-commits", "dn-syscalls", "bad-step") for r in records(run, e)
        if r["clusters"] and (r["clusters"][0]["id"], r["clusters"][0]["start"])
        == (held["id"], held["start"])
    ]  # fmt: skip
    assert others == []
    assert rec["status"] == "done", rec["reason"]
    steps = rec["cluster_steps"]
    assert [s["do"] for s in steps] == ["kill", "wipe", "start"]
    assert all(s["status"] == "done" for s in steps), steps
    # Before the measurement, in order; the start a second into it (the watcher's clock).
    assert steps[0]["offset"] < steps[1]["offset"] <= 0.5
    # Timed from the host's line that its tools started, which reaches perfpost after the
    # host's own start time (one clock here): never early, however late the launch was.
    assert START_AT <= steps[2]["offset"] < START_AT + 5
    killed = int(re.search(r"pid (\d+)", steps[0]["did"]).group(1))
    started = int(re.search(r"pid (\d+)", steps[2]["did"]).group(1))
    assert killed != started
    # The datanode's own log: two start-up banners, the second after the kill.
    (held,) = rec["clusters"]
    sdir = run / "results" / "clusters" / held["id"] / f"start-{held['start']}"
    state = json.loads((sdir / "state.json").read_text())
    (dn,) = [d for d in state["deployment"]["daemons"] if d["role"] == "datanode"]
    assert dn["pid"] == started  # the state the run's stop read names the new daemon
    logs = list((sdir / "logs").rglob("datanode*.log"))
    assert logs, list(sdir.rglob("*"))
    text = "\n".join(p.read_text(errors="replace") for p in logs)
    assert text.count("STARTUP_MSG: Starting HddsDatanodeService") == 2
    # The deleted directories were the datanode's own (its data and Ratis log), with files.
    assert "/data/dn/data" in steps[1]["did"]
    assert "/data/dn/ratis" in steps[1]["did"]


def test_the_wait_ended_when_the_new_datanode_had_been_up_two_seconds(run):
    (rec,) = records(run, "dn-back")
    metrics = {m["name"]: m["value"] for m in rec["metrics"]}
    until = metrics["until_time"]
    # The JVM started no earlier than the step (its offset), so its uptime passes 2 s no
    # earlier than that + 2. How soon after it was read is the machine's, not perfpost's:
    # the reading needs the new datanode's HTTP server, which took 30 s to answer on a
    # loaded two-core CI machine; the bound, not the run's timeout, ended the wait.
    started = rec["cluster_steps"][2]["offset"]
    assert started + UP_FOR_MS / 1000 <= until < EXPERIMENT_TIMEOUT
    assert rec["until"]["met"] is True
    assert metrics["dn_uptime"] > UP_FOR_MS / 1000  # in seconds, perfpost's base unit
    # The wait tool ended on perfpost's signal, after the reading that met the bound.
    assert "the bound was met" in (rec["path"].parent / "raw" / "wait.log").read_text()
    assert metrics["wall_time"] >= until


def test_the_post_lists_the_steps_and_the_daemon_metrics(run):
    post = notebook_of(run / "reports" / "dn-back" / "index.md")
    assert "before it measured, datanode 0 killed with kill -9" in post
    assert f"{START_AT:g} s into it, datanode 0 started again" in post
    assert "dn_uptime" in post
    # The listing: what was done, as the record says, and what the run waited for.
    assert "# killed the datanode on localhost (pid " in post
    assert "# wait until dn_uptime > 2000 (read every 0.2 s)" in post
    assert "#   1 s into it: started the datanode on localhost (pid " in post
    # The headline is how long it took, not the metric it waited on.
    assert "Median time to the bound: " in post
    assert "`NumKeyCommits` of `Hadoop:service=OzoneManager,name=OMMetrics`" in notebook_of(
        run / "reports" / "om-commits" / "index.md"
    )


def strace_rows(text: str) -> dict[str, int]:
    """strace -c's table as strace wrote it: the last column names the call; the calls are
    the fourth number of a row (after % time, seconds and usecs/call)."""
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 5 and parts[0].replace(".", "").isdigit() and parts[3].isdigit():
            out[parts[-1]] = int(parts[3])
    return out


def test_the_datanodes_system_calls_are_stracess_own_counts(run):
    recs = records(run, "dn-syscalls")
    assert len(recs) == 2
    for rec in recs:
        assert rec["status"] == "done", rec["reason"]
        traced = rec["daemon_trace"]["datanode"]
        own = strace_rows((rec["path"].parent / traced["raw"]).read_text())
        # The chunks went to the datanode: it wrote (pwrite64 or write) and synced its
        # Ratis log (fdatasync) while the run measured.
        assert own.get("fdatasync", 0) > 0, own
        table = {r["syscall"]: r["calls"] for r in traced["table"]}
        assert table == own
        metrics = {m["name"]: m["value"] for m in rec["metrics"]}
        assert metrics["datanode.fdatasync"] == own["fdatasync"]
        assert metrics["datanode.total"] == own["total"]
    post = (run / "reports" / "dn-syscalls" / "index.md").read_text()
    assert "System calls of each datanode while the runs measured (`strace -f -c`" in post
    # The table's last row is strace's own total of each run (one run a cell here).
    totals = [
        f"{int(m['value']):,}" for r in recs for m in r["metrics"] if m["name"] == "datanode.total"
    ]
    (row,) = [ln for ln in post.splitlines() if ln.startswith("| `total` |")]
    assert sorted(row.strip("| ").split(" | ")[1:]) == sorted(totals)


def test_a_step_that_cannot_be_done_fails_its_run_at_once_with_why(run):
    (rec,) = records(run, "bad-step")
    assert rec["status"] == "failed"
    assert "cluster step wipe datanode 0 (traced) failed" in rec["reason"]
    assert "a wipe needs it stopped first" in rec["reason"]
    # The wait ended when the step failed, not at its 600 s timeout.
    assert rec["end_epoch"] - rec["start_epoch"] < 60
    (step,) = rec["cluster_steps"]
    assert step["status"] == "failed"
    FAULTS.append(
        (
            "a cluster step that cannot be done",
            "cluster_steps: wipe of a datanode that is running",
            f"the run failed in {rec['end_epoch'] - rec['start_epoch']:.1f} s, not at its "
            "600 s timeout, with the step's reason; nothing of it reached another run",
        )
    )


def test_a_daemon_started_under_a_prefix_ran_under_it_for_the_clusters_life(run):
    (rec,) = records(run, "bad-step")
    (held,) = rec["clusters"]
    sdir = run / "results" / "clusters" / held["id"] / f"start-{held['start']}"
    # strace's own summary, written when the cluster's stop ended the datanode: its table of
    # system calls, ending in a total row, and the calls a JVM cannot start without.
    (out,) = (sdir / "logs").rglob("datanode.strace")
    text = out.read_text()
    assert re.search(r"^-+ -+ ", text, re.M), text[:500]
    assert re.search(r"^100\.00\s.*\stotal$", text, re.M), text[-500:]
    assert re.search(r"\sfutex$", text, re.M)
    assert re.search(r"\sclone3?$", text, re.M)
    # The datanode itself ran: its own start-up banner, under strace.
    (log,) = (sdir / "logs").rglob("datanode-0.log")
    assert "STARTUP_MSG: Starting HddsDatanodeService" in log.read_text(errors="replace")
    # The post's set-up and its notebook say what the datanode ran under.
    post = (run / "reports" / "bad-step" / "index.md").read_text()
    assert "the datanodes started under `strace -f -c -o {logs}/{daemon}.strace`" in post
    notebook = notebook_of(run / "reports" / "bad-step" / "index.md")
    assert (
        "Started under a command, for the cluster's whole life: "
        "`strace -f -c -o {logs}/{daemon}.strace` (datanode)"
    ) in notebook
