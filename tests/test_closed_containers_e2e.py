"""Closed containers made offline, from config/examples/testbed-closed-containers.yaml at
miniature size, on three testbed hosts that share nothing with this machine: with every
daemon stopped, vapor cgscm, cgom and cgdn write closed containers into the SCM's and the
OM's databases and onto each datanode; the cluster starts again; each run restarts the SCM
and waits until it counts the containers again.

Expected values come from the daemons and the generators themselves: vapor's own summary of
each generator ("Successful executions: N"), the SCM's own count of closed containers and
of its time in safe mode, and its log's start-up banners.
"""

from __future__ import annotations

import re

import pytest

from tests.e2e import notebook_of, records, run_on_testbed

pytestmark = pytest.mark.e2e

CONTAINERS = 4  # not 3, the datanodes' count: the SCM counts containers, not their replicas


@pytest.fixture(scope="module")
def run(testbed, ozone_cache, tmp_path_factory):

    def shrink(cfg: dict) -> None:
        exp = cfg["experiments"]["closed-containers"]
        exp["repeats"] = 1
        for step in exp["cluster_steps"]:
            if "command" in step:
                assert " -n 40 " in step["command"]
                step["command"] = step["command"].replace(" -n 40 ", f" -n {CONTAINERS} ")
        assert exp["until"]["above"] == 39
        exp["until"]["above"] = CONTAINERS - 1
        # No bucket made at the cluster's start (an Ozone shell JVM): cgom writes its volume
        # and bucket (vol1, bucket1) into the OM's database itself, over the shell's, and
        # nothing here reads a key through the OM.
        assert cfg["clusters"]["ozone"].pop("buckets") == ["vol1/bucket1"]

    work = tmp_path_factory.mktemp("closedcontainers")
    return run_on_testbed(
        "testbed-closed-containers.yaml", testbed, ozone_cache, work, shrink, "three datanodes"
    )


def _start_dir(run, rec):
    (held,) = rec["clusters"]
    return run / "results" / "clusters" / held["id"] / f"start-{held['start']}"


def test_the_generators_ran_with_the_cluster_stopped_and_it_started_again(run):
    (rec,) = records(run, "closed-containers")
    assert rec["status"] == "done", rec["reason"]
    steps = rec["cluster_steps"]
    assert [(s["do"], s["role"], s["at"]) for s in steps] == [
        ("stop", "cluster", "offline"),
        ("run", "scm", "offline"),
        ("run", "om", "offline"),
        ("run", "datanode", "offline"),
        ("run", "datanode", "offline"),
        ("run", "datanode", "offline"),
        ("start", "cluster", "offline"),
        ("restart", "scm", 0.0),
    ]
    assert all(s["status"] == "done" for s in steps), steps
    # Each datanode's generator was told its own number and the role's count.
    for i, s in enumerate(steps[3:6], start=1):
        assert s["instance"] == i - 1
        assert f"--index {i} --datanodes 3" in s["did"]
    # In order on the clock: stopped, generated, started again, then the run's own step.
    epochs = [s["epoch"] for s in steps]
    assert epochs == sorted(epochs)
    # Every daemon was down while the generators wrote: the stop named all five, and the
    # start started all five again (new pids).
    assert steps[0]["did"].count(" (pid ") == 5
    assert steps[6]["did"].count(" (pid ") == 5
    # vapor's own summary of each generator: every container it was asked for.
    logs = _start_dir(run, rec) / "logs"
    said = {}
    for log in logs.glob("h*/step-*.log"):
        text = log.read_text(errors="replace")
        (n,) = re.findall(r"Successful executions: (\d+)", text)
        said[log.name.rsplit("-", 1)[0]] = int(n)
    assert sorted(said) == ["step-datanode", "step-datanode-1", "step-datanode-2", "step-om",
                            "step-scm"]  # fmt: skip
    assert set(said.values()) == {CONTAINERS}


def test_the_restarted_scm_counted_every_generated_container(run):
    (rec,) = records(run, "closed-containers")
    assert rec["status"] == "done", rec["reason"]
    metrics = {m["name"]: m["value"] for m in rec["metrics"]}
    # The SCM's own count: every container the generators made, closed.
    assert metrics["closed"] == CONTAINERS
    until = rec["until"]
    assert until["met"] is True
    # The SCM restarted a moment into the run: it left safe mode (its own clock, from its
    # start) before the run's clock saw it count the containers.
    assert 0 < metrics["safe_mode_exit"] < metrics["until_time"]
    # Its log: started by the cluster's start, again after the generators, and by the run.
    logs = [_start_dir(run, rec) / "logs" / "h1" / "scm-0.log"]  # the daemon's own, not its init's
    text = "\n".join(p.read_text(errors="replace") for p in logs)
    assert text.count("STARTUP_MSG: Starting StorageContainerManager") == 3, logs


def test_the_post_lists_the_offline_steps_and_says_the_cluster_was_stopped(run):
    post = notebook_of(run / "reports" / "closed-containers" / "index.md")
    assert "with every daemon of its cluster stopped" in post
    assert "# stopped every daemon: " in post
    # Each generator as typed on its host: the install's bin/ on the PATH.
    assert f"# on h1, for the scm:\nozone vapor cgscm -n {CONTAINERS} --from 0" in post
    assert "# on h3, for the datanode-2:\nozone vapor -D " in post
    assert "# started every daemon again" in post
    assert "0 s into it: stopped the scm on h1 (pid " in post
