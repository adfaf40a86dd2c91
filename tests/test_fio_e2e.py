"""fio through the whole workflow, for real: the example config (config/examples/fio.yaml),
shrunk to one short run per cell, and a cell whose engine fio does not have, from the
snakemake command to the post."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest
import yaml

from tests.conftest import ROOT
from tests.e2e import front_matter, image_links, make_checkout, notebook_of, snakemake

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    if not shutil.which("fio"):
        pytest.fail("fio is not installed: run scripts/setup")
    work = tmp_path_factory.mktemp("fio")
    target = work / "target"
    config = yaml.safe_load((ROOT / "config" / "examples" / "fio.yaml").read_text())
    exp = config["experiments"]["fio-randio"]
    exp["params"].update(dir=str(target), size="16M", runtime=1)
    exp["repeats"] = 1
    config["experiments"]["fio-broken"] = {
        "tool": "fio",
        "params": {"dir": str(target), "size": "1M", "ioengine": "nosuchengine"},
        "repeats": 1,
    }
    make_checkout(work, config)
    result = snakemake(work, "--cores", "2", "report", timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return work


def records(work, experiment: str) -> list[dict]:
    paths = sorted((work / "results" / experiment / "cells").glob("*/*/r*/attempt-*/record.json"))
    return [{**json.loads(p.read_text()), "path": p} for p in paths]


def test_every_cell_ran_fio_and_kept_its_json_report(run):
    got = records(run, "fio-randio")
    assert sorted(r["cell"] for r in got) == [
        "rw=randread,iodepth=1",
        "rw=randread,iodepth=16",
        "rw=randwrite,iodepth=1",
        "rw=randwrite,iodepth=16",
    ]
    tidy = pd.read_csv(run / "results" / "fio-randio" / "tidy.csv")
    for r in got:
        assert r["status"] == "done", r["reason"]
        assert r["tool_version"] == "fio-3.33"
        assert r["command"].startswith("fio --output-format=json --name=randio --directory=")
        report = json.loads((r["path"].parent / "raw" / "fio.log").read_text())
        job = report["jobs"][0]
        direction = "read" if "randread" in r["cell"] else "write"
        assert job["job options"]["iodepth"] == r["cell"].rpartition("=")[2]
        rows = tidy[(tidy["cell"] == r["cell"]) & (tidy["status"] == "done")]
        value = dict(zip(rows["metric"], rows["value"], strict=True))
        assert value["iops"] == pytest.approx(job[direction]["iops"], rel=1e-12)
        p99 = job[direction]["clat_ns"]["percentile"]["99.000000"]
        assert value["clat_p99"] == pytest.approx(p99 / 1e9, rel=1e-12)
    # The scratch directories are gone, fio's files with them.
    assert list((run / "target").iterdir()) == []


def test_a_cell_fio_refuses_fails_with_fios_message(run):
    (r,) = records(run, "fio-broken")
    assert r["status"] == "failed"
    assert "fio: engine nosuchengine not loadable" in r["reason"]


def test_the_post_has_the_figures_the_comparison_and_the_method(run):
    post = notebook_of(run / "reports" / "fio-randio" / "index.md")
    own = (run / "reports" / "fio-randio" / "index.md").read_text()
    assert front_matter(own)["title"].startswith("4 KiB random I/O")
    links = image_links(post)
    for metric in ("iops", "throughput", "clat_p99", "lat_mean", "compare-1"):
        assert f"figures/{metric}.png" in links
        assert (run / "reports" / "fio-randio" / "figures" / f"{metric}.png").stat().st_size
    assert "iodepth 16 vs 1 (rw=randread)" in post
    assert "`libaio` with `1` or `16` (the `iodepth` axis) I/Os in flight" in post
    assert "Tool: `fio-3.33`" in post
