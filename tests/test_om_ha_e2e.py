"""Ozone Manager HA from config/examples/testbed-om-ha.yaml at miniature size: freon omkg from
h1 into an Ozone whose three OMs perfpost deploys on h1, h2 and h3 of the testbed (hosts that
share nothing with this machine), with the service id its clients find the ring by.

Expected values come from the daemons and freon themselves: freon's own summary of the keys it
created, and each OM's own log, kept with the cluster's: the Ratis group it started with (the
three peers, each on the host the config named) and the leader it followed.
"""

from __future__ import annotations

import re

import pytest

from tests.e2e import records, run_on_testbed

pytestmark = pytest.mark.e2e

KEYS = 300
OMS = {"om1": "h1", "om2": "h2", "om3": "h3"}  # node id -> host, in roles.om's order
_PEERS = re.compile(r"cur=peers:\[([^\]]*)\]")
_LEADER = re.compile(r": change Leader from \S+ to (om\d+) at term (\d+) for (\w+)")


@pytest.fixture(scope="module")
def ring(testbed, ozone_cache, tmp_path_factory):

    def shrink(cfg: dict) -> None:
        omkg = cfg["experiments"]["omkg"]
        omkg.update(repeats=1, axes={"om": {"ring": "ozone-ha"}})
        omkg.pop("compare")
        omkg["params"]["options"]["n"] = KEYS
        del cfg["clusters"]["ozone"]

    work = tmp_path_factory.mktemp("om-ha")
    return run_on_testbed("testbed-om-ha.yaml", testbed, ozone_cache, work, shrink, "three OMs")


def test_freon_created_every_key_in_a_ring_of_three_oms_that_agreed_on_its_leader(ring):
    (rec,) = records(ring, "omkg")
    assert rec["status"] == "done", rec["reason"]
    assert rec["host"] == "h1"
    log = (rec["path"].parent / "raw" / "freon.log").read_text()
    assert f"Successful executions: {KEYS}\n" in log
    assert "Failures: 0\n" in log
    # The start the run held (a first start that lost a port race is tried once more).
    (held,) = rec["clusters"]
    start = ring / "results" / "clusters" / held["id"] / f"start-{held['start']}"
    leaders = {}
    for i, (node, host) in enumerate(OMS.items()):
        text = (start / "logs" / host / f"om-{i}.log").read_text()
        # The group each OM started with: the three of them, each at its configured host.
        peers = sorted(p.split("|")[0:2] for p in _PEERS.findall(text)[-1].split(", "))
        assert [(n, h.split(":")[0]) for n, h in peers] == sorted(OMS.items())
        assert f"{node}@group-" in text  # its own node id, found by its host's address
        leaders[node] = _LEADER.findall(text)[-1]
    # One leader at one term, as every OM of the ring saw it; the followers learned it from
    # the leader's entries (APPEND_ENTRIES), so they were replicating from it.
    ((leader, term),) = {(who, at) for who, at, _ in leaders.values()}
    assert {why for node, (_, _, why) in leaders.items() if node != leader} == {"APPEND_ENTRIES"}
    lead_log = (start / "logs" / OMS[leader] / f"om-{list(OMS).index(leader)}.log").read_text()
    assert f"{leader}@group-" in lead_log
    assert "changes role from CANDIDATE to LEADER at term " + term in lead_log
    post = (ring / "reports" / "omkg" / "index.md").read_text()
    assert "om on h1, h2, h3 (OM HA, service id `omservice`)" in post
    # The hosts of the OMs alone are part of the set-up, described like the client's.
    for host in ("h2", "h3"):
        (line,) = [ln for ln in post.splitlines() if ln.startswith(f"- `{host}` (")]
        assert "not described" not in line
        assert " cores; " in line
    assert "ozone freon omkg -b bucket1 -n 300 -t 8 -v vol1" in post
