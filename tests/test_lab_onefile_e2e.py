"""The reference topology of the onefile post, from its config example
(config/examples/lab-onefile.yaml) at miniature size: vapor cmdw on six testbed hosts that
share nothing with this machine, every cell started on all six at one moment, one result per
host. perfpost delivers the Ozone runtime to each host once.

Expected values: the hosts of the example, freon's own summaries in each host's log, and the
post's results table read back per host.
"""

from __future__ import annotations

import json
import os

import pandas as pd
import pytest
import yaml

from tests.conftest import ROOT
from tests.e2e import make_checkout, notebook_of, on_testbed, snakemake

pytestmark = pytest.mark.e2e

EXAMPLE = ROOT / "config" / "examples" / "lab-onefile.yaml"


@pytest.fixture(scope="module")
def lab(tmp_path_factory, ozone_cache):
    from tests import testbed as tb

    if os.geteuid() != 0:
        pytest.skip("six hosts with their own filesystems need network namespaces, as root")
    bed = tb.start(6, tmp_path_factory.mktemp("lab6"), quick_java=True)
    try:
        cache, _ = ozone_cache
        example = yaml.safe_load(EXAMPLE.read_text())
        cfg = on_testbed(example, bed.inventory, cache)
        exp = cfg["experiments"]["lab-onefile"]
        # Miniature: one run a cell, of a bounded count of chunks. A duration counts freon's
        # set-up too: six JVMs starting at once on this machine's two cores, beside the
        # suite's other work, took all of 10 s on one host (it measured nothing). 600 chunks
        # a host: one file per chunk wrote 23/s under that load, one file per block 890/s.
        exp["repeats"] = 1
        options = exp["params"]["options"]
        del options["duration"]
        options["n"] = 600
        work = tmp_path_factory.mktemp("lab-onefile")
        make_checkout(work, cfg)
        result = snakemake(work, "--cores", "6", "report", timeout=1800)
        assert result.returncode == 0, result.stderr[-5000:]
        yield work, example
    finally:
        bed.stop()


def test_every_cell_ran_on_all_six_hosts_at_one_moment_each_with_its_own_copy(lab):
    work, example = lab
    hosts = example["experiments"]["lab-onefile"]["hosts"]
    assert len(hosts) == 6
    recs = [
        json.loads(p.read_text())
        for p in (work / "results" / "lab-onefile").glob("cells/*/*/r*/attempt-*/record.json")
    ]
    assert len(recs) == 2 * 6
    for rec in recs:
        assert rec["status"] == "done", (rec["host"], rec["reason"])
        assert {m["name"] for m in rec["metrics"]} >= {"rate"}
        (d,) = rec["delivered"]
        assert d["host"] == rec["host"]
        assert d["path"] + "/bin/ozone vapor " in rec["command"]
    # Each host got the runtime once: shipped for one of its two cells, there for the other.
    for h in hosts:
        shipped = sorted(r["delivered"][0]["files"] > 0 for r in recs if r["host"] == h)
        assert shipped == [False, True], h
    # One moment: the planned start is the same on all six hosts for each cell.
    by_cell: dict[str, set] = {}
    for rec in recs:
        by_cell.setdefault(rec["cell"], set()).add(rec["planned_start"])
    assert all(len(v) == 1 for v in by_cell.values()), by_cell


def test_the_post_has_one_result_per_host(lab):
    work, example = lab
    tidy = pd.read_csv(work / "results" / "lab-onefile" / "tidy.csv")
    done = tidy[(tidy["metric"] == "rate") & (tidy["status"] == "done")]
    assert sorted(done["host"].unique()) == sorted(example["hosts"])
    post = notebook_of(work / "reports" / "lab-onefile" / "index.md")
    # The results table (a wide one continues in others: its first one has every row once).
    results = post.split("## Results", 1)[1]
    first = next(t for t in results.split("\n\n") if t.startswith("| "))
    table = [ln for ln in first.splitlines() if ln.startswith("| FILE_PER_")]
    for h in example["hosts"]:
        assert sum(f"| {h} |" in ln for ln in table) == 2, (h, table)
    assert "every cell started on all hosts at one moment" in post
