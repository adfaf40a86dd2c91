"""Storage Container Manager HA from config/examples/testbed-scm-ha.yaml at miniature size:
freon ockg from h1 into an Ozone whose three SCMs perfpost deploys on h1, h2 and h3 of the
testbed (hosts that share nothing with this machine), the first initialised, the others
bootstrapped from it.

Expected values come from the daemons and freon themselves: freon's own summary of the keys it
wrote, and each SCM's own log, kept with the cluster's: the Ratis group it ran with (the three
peers, each on the host the config named) and the one leader they agreed on.
"""

from __future__ import annotations

import re

import pytest
import yaml

from tests.conftest import ROOT
from tests.e2e import records, run_on_testbed

pytestmark = pytest.mark.e2e

KEYS = 100
SCMS = ["h1", "h2", "h3"]  # in roles.scm's order: scm1 (primordial), scm2, scm3
_PEERS = re.compile(r"(?:cur|new)=peers:\[([^\]]*)\]")


@pytest.fixture(scope="module")
def ring(testbed, ozone_cache, tmp_path_factory):

    def shrink(cfg: dict) -> None:
        ockg = cfg["experiments"]["ockg"]
        ockg.update(repeats=1, axes={"scm": {"ring": "ozone-scm-ha"}})
        ockg.pop("compare")
        ockg["params"]["options"]["n"] = KEYS
        del cfg["clusters"]["ozone"]

    work = tmp_path_factory.mktemp("scm-ha")
    return run_on_testbed("testbed-scm-ha.yaml", testbed, ozone_cache, work, shrink, "three SCMs")


def test_freon_wrote_every_key_through_a_ring_of_three_scms(ring):
    (rec,) = records(ring, "ockg")
    assert rec["status"] == "done", rec["reason"]
    log = (rec["path"].parent / "raw" / "freon.log").read_text()
    assert f"Successful executions: {KEYS}\n" in log
    assert "Failures: 0\n" in log
    # The start the run held (a first start that lost a port race is tried once more).
    (held,) = rec["clusters"]
    start = ring / "results" / "clusters" / held["id"] / f"start-{held['start']}"
    addresses = set()
    for i, host in enumerate(SCMS):
        text = (start / "logs" / host / f"scm-{i}.log").read_text()
        # The ring each SCM ran with at the end: three peers, one on each SCM host.
        peers = _PEERS.findall(text)[-1].split(", ")
        assert len(peers) == 3, peers
        addresses |= {p.split("|")[1].split(":")[0] for p in peers if "|" in p}
    inventory = yaml.safe_load((ROOT / "config" / "examples" / "testbed-scm-ha.yaml").read_text())[
        "clusters"
    ]["ozone-scm-ha"]["roles"]["scm"]
    assert len(addresses) == len(inventory) == 3
    post = (ring / "reports" / "ockg" / "index.md").read_text()
    assert "scm on h1, h2, h3 (SCM HA, service id `scmservice`)" in post
