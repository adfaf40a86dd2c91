"""Re-replication from config/examples/testbed-rereplication.yaml at miniature size, on three
testbed hosts that share nothing with this machine: keys written with replication THREE, the
datanode on h3 killed, its directories deleted and started again, and a run that waits until
the SCM counts nothing under-replicated.

Expected values come from the daemons themselves: the SCM's own count of under-replicated
containers (it rose above 0, then fell to 0 when the run ended), and the datanodes' own logs
of each container they sent, whose sizes add up to the bytes their metrics say they copied.
"""

from __future__ import annotations

import re

import pytest

from tests.e2e import notebook_of, records, run_on_testbed

pytestmark = pytest.mark.e2e

KEYS = 12
HOLD = 5  # seconds the count must stay at 0 (the example's 20: the worker waits, idle)


@pytest.fixture(scope="module")
def rerun(testbed, ozone_cache, tmp_path_factory):

    def shrink(cfg: dict) -> None:
        exp = cfg["experiments"]["rereplication"]
        exp["repeats"] = 1
        assert "-n 40 " in exp["params"]["before"]
        exp["params"]["before"] = exp["params"]["before"].replace("-n 40 ", f"-n {KEYS} ")
        assert exp["until"]["hold"] == 20
        exp["until"]["hold"] = HOLD

    work = tmp_path_factory.mktemp("rereplication")
    return run_on_testbed(
        "testbed-rereplication.yaml", testbed, ozone_cache, work, shrink, "three datanodes"
    )


def test_the_run_ended_when_the_scm_counted_nothing_under_replicated(rerun):
    (rec,) = records(rerun, "rereplication")
    assert rec["status"] == "done", rec["reason"]
    assert [s["do"] for s in rec["cluster_steps"]] == ["kill", "wipe", "start"]
    assert all(s["status"] == "done" for s in rec["cluster_steps"])
    assert "on h3" in rec["cluster_steps"][1]["did"]
    until = rec["until"]
    assert until["met"] is True
    # The SCM saw the loss (its count rose above 0) before it counted none, and it still
    # counted none HOLD seconds later, when the run ended.
    assert until["hold"] == HOLD
    assert 0 <= until["armed_at"] <= until["at"]
    assert rec["end_epoch"] - rec["start_epoch"] >= until["at"] + until["hold"]
    metrics = {m["name"]: m["value"] for m in rec["metrics"]}
    assert metrics["under_replicated"] == 0
    assert metrics["copied_bytes"] > 0
    # The copy rate is over the time to the bound, not the 20 s hold after it.
    assert rec["daemon_metrics"]["seconds"] == until["at"]
    assert metrics["copied"] == pytest.approx(metrics["copied_bytes"] / until["at"], rel=1e-9)
    # Every byte the datanodes' metric counted is one their own logs say they sent, container
    # by container ("Sent 3168256 bytes for container 3").
    # The start the run held (a first start that lost a port race is tried once more).
    (held,) = rec["clusters"]
    start = rerun / "results" / "clusters" / held["id"] / f"start-{held['start']}"
    sent = [
        int(n)
        for log in (start / "logs").glob("h*/datanode-*.log")
        for n in re.findall(r"Sent (\d+) bytes for container \d+", log.read_text())
    ]
    assert len(sent) >= 2, sent  # containers of two pipelines at least
    assert sum(sent) == metrics["copied_bytes"]
    # They are the keys' bytes, and no more than the keys' and their metadata's.
    assert KEYS * 2**20 <= sum(sent) < KEYS * 2**20 * 1.1
    post = notebook_of(rerun / "reports" / "rereplication" / "index.md")
    assert "# killed the datanode-2 on h3 (pid " in post
    assert "# wait until under_replicated < 1" in post
