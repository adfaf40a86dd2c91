"""A network baseline between two testbed hosts, from its config example
(config/examples/testbed-iperf3.yaml): the iperf3 server made ready on h1 by a set-up step with
`host: h1` and stopped by its teardown, the client run as the cell on h2, its numbers read
from iperf3's JSON. Expected values are iperf3's own: each run's report, read here with json.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT, host_spec
from tests.e2e import make_checkout, records, snakemake

pytestmark = pytest.mark.e2e

EXAMPLE = ROOT / "config" / "examples" / "testbed-iperf3.yaml"


@pytest.fixture(scope="module")
def run(testbed, tmp_path_factory):
    if os.geteuid() != 0:
        pytest.skip("hosts that reach each other by name need network namespaces, as root")
    if not Path("/usr/bin/iperf3").exists():
        pytest.fail("iperf3 is not installed: run scripts/setup --test")
    inventory = yaml.safe_load(Path(testbed.inventory).read_text())
    example = yaml.safe_load(EXAMPLE.read_text())
    work = tmp_path_factory.mktemp("iperf3")
    make_checkout(work, {**inventory, "experiments": example["experiments"]})
    result = snakemake(work, "--cores", "2", "report", timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
    return work


def test_each_runs_numbers_are_iperf3s_own(run):
    recs = records(run, "network")
    assert len(recs) == 4
    for r in recs:
        assert r["status"] == "done", r["reason"]
        assert r["host"] == "h2"
        report = json.loads((r["path"].parent / "raw" / "command.log").read_text())
        assert report["start"]["connecting_to"]["host"] == "h1"
        assert report["start"]["test_start"]["num_streams"] == int(r["labels"]["streams"])
        m = {x["name"]: x["value"] for x in r["metrics"]}
        # bit/s as iperf3 printed them, stored as bytes a second.
        assert m["sent"] == pytest.approx(report["end"]["sum_sent"]["bits_per_second"] / 8)
        assert m["received"] == pytest.approx(report["end"]["sum_received"]["bits_per_second"] / 8)
        assert m["retransmits"] == report["end"]["sum_sent"]["retransmits"]
        assert m["received"] > 0


def test_the_server_ran_on_h1_only_while_the_cells_needed_it(run, testbed):
    from perfpost.run.remote import RemoteHost

    (state_file,) = (run / "results" / "clusters").glob("setup-*/start-*/state.json")
    state = json.loads(state_file.read_text())
    assert state["deployment"]["spec"]["roles"]["host"] == ["h1"]
    assert state["status"] == "stopped"
    assert [d["exit"] for d in state["setup"]] == [0]
    assert [d["exit"] for d in state["teardown"]] == [0]
    # No iperf3 left on h1 (its own process table, asked over SSH).
    host = RemoteHost(host_spec(testbed, "h1"))
    try:
        got = host.run("pgrep -x iperf3 || true", 30)
    finally:
        host.close()
    assert got.stdout.strip() == ""
    post = (run / "reports" / "network" / "index.md").read_text()
    assert "`h1` was set up by perfpost before the runs with `iperf3 -s -D" in post
