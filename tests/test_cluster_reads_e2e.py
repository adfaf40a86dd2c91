"""The cluster-read post's example (config/examples/cluster-reads.yaml) through the whole
workflow, for real, shrunk to seconds: 1 and 10 concurrent readers of freon dfsv reading
files an unmeasured dfsg wrote, from the local disk and from a single-node HDFS perfpost
deploys, the page cache dropped and hot, with fio writing 10 MB/s beside every run. Sizes
and counts are checked against freon's own summary lines in the kept logs and the example's
own numbers, not against perfpost's."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT
from tests.e2e import make_checkout, notebook_of, quick, snakemake

pytestmark = pytest.mark.e2e

CONFIG = ROOT / "config" / "examples" / "cluster-reads.yaml"
SIZE = 4 * 1024 * 1024  # "4MB" to freon: sizes in powers of 2, as its --help says
RATE = 10_000_000
TOLERANCE = 0.6


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    work = tmp_path_factory.mktemp("clusterreads")
    config = yaml.safe_load(CONFIG.read_text())
    exp = config["experiments"]["cluster-reads"]
    exp["params"]["dir"] = str(work / "scratch")
    exp["params"]["prepare"]["options"]["s"] = "4MB"
    exp["params"]["java_opts"] = "-Xmx256m"
    exp["axes"]["readers"] = [1, 10]
    exp["axes"]["files"] = [2, 20]
    exp["background"]["params"]["dir"] = str(work / "writer")
    # Steps of a second or two here, on a machine the suite keeps busy: 1 MiB blocks are a
    # tenth of a second's target each, and fio, starved of the CPU, fell 17% short once;
    # with 64 KiB blocks it still fell 33% short over one step in a later suite. What this
    # file checks of the load is perfpost's account of it (its bytes over its seconds, the
    # post's sentence); how close fio's limiter holds over a second on two shared cores is
    # fio's. Smaller blocks, and the load held to 60% of its rate, not the post's 10%.
    exp["background"]["params"]["bs"] = "64k"
    exp["background"]["tolerance"] = TOLERANCE
    exp["repeats"] = 1
    config["clusters"] = quick(config["clusters"])
    config["clusters"]["hdfs"]["dir"] = str(work / "clusters")
    make_checkout(work, config)
    result = snakemake(work, "--cores", "2", "report", timeout=1800)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return work


def records(work: Path) -> list[dict]:
    paths = sorted(
        (work / "results" / "cluster-reads" / "cells").glob("*/*/r*/attempt-*/record.json")
    )
    return [{**json.loads(p.read_text()), "path": p} for p in paths]


def _summary(log: str) -> dict[str, int]:
    """freon's own closing lines: 'Successful executions: N', 'Failures: N'."""
    return {
        k: int(re.search(rf"{k}: (\d+)", log).group(1))
        for k in ("Successful executions", "Failures")
    }


def test_every_path_readers_and_cache_state_ran_and_read_every_file(run):
    got = records(run)
    assert len(got) == 2 * 2 * 2
    seen = set()
    for r in got:
        assert r["status"] == "done", r["reason"]
        cell = dict(kv.split("=") for kv in r["cell"].split(","))
        seen.add((cell["access"], cell["readers"], cell["cache"]))
        files = {"1": 2, "10": 20}[cell["readers"]]
        log = (r["path"].parent / "raw" / "freon.log").read_text()
        assert _summary(log) == {"Successful executions": files, "Failures": 0}
        m = {x["name"]: x["value"] for x in r["metrics"]}
        # Every read is one whole file of the size dfsg wrote it with.
        assert m["bytes"] == files * SIZE
        # The readers' aggregate rate while reading: each of the readers reads one file in
        # the mean time of freon's own file-read timer (its TIMER line, in milliseconds).
        timer = re.search(r"name=file-read, count=(\d+), min=([0-9.]+),.*? mean=([0-9.]+),", log)
        assert int(timer.group(1)) == files
        fastest, mean = float(timer.group(2)) / 1000, float(timer.group(3)) / 1000
        if cell["cache"] == "dropped":
            # dfsv read its first file before its timer, after the drop: that warm read,
            # the fastest, is left out.
            mean = (files * mean - fastest) / (files - 1)
        assert m["throughput"] == pytest.approx(int(cell["readers"]) * SIZE / mean)
        # The files were written by an unmeasured dfsg of the same prefix, count and
        # threads, on the path the reads came from.
        (prep,) = r["prepare_commands"]
        assert " dfsg " in prep
        assert "--size=4MB" in prep
        assert "--prefix=files" in prep
        assert f"--number-of-tests={files}" in prep
        assert f"--threads={cell['readers']}" in prep
        scheme = "hdfs://" if cell["access"] == "hdfs" else "file://"
        assert f"--path={scheme}" in prep
        assert f"--path={scheme}" in r["command"]
        assert " dfsv " in r["command"]
        assert f"-t {cell['readers']}" in r["command"]
        # Dropped where asked, with its evidence; hot cells were not dropped.
        assert ("cache_drop" in r) == (cell["cache"] == "dropped")
        # The writer beside the run: fio's rate limiter, measured by perfpost.
        assert m["background.rate"] == pytest.approx(RATE, rel=TOLERANCE)
        assert m["background.rate"] == pytest.approx(
            m["background.write_bytes"] / m["background.seconds"], rel=1e-9
        )
    assert seen == {
        (a, n, c) for a in ("local-disk", "hdfs") for n in ("1", "10") for c in ("dropped", "hot")
    }


def test_the_post_has_throughput_by_readers_one_line_per_path_and_states_the_writer(run):
    report = run / "reports" / "cluster-reads"
    figures = json.loads((report / "figures" / "figures.json").read_text())
    (fig,) = [f for f in figures if f["metric"] == "throughput"]
    svg = (report / "figures" / fig["svg"]).read_text()
    texts = set(re.findall(r"<!-- (.*?) -->", svg))
    # One line per access path, readers on the x axis, a panel per cache state.
    want = {"access=local-disk", "access=hdfs", "readers", "cache=dropped", "cache=hot"}
    assert want <= texts, texts
    post = notebook_of(report / "index.md")
    assert "unmeasured `ozone freon dfsg`" in post
    assert "C API (libhdfs)" in post
    assert "FUSE" in post
    # Every run's own row leads with its throughput too: its columns, in order, across the
    # tables a narrow column splits it into (each after the first numbered by `#`).
    every = post.split("Every run:", 1)[1].split("\n### ", 1)[0]
    lines = every.splitlines()
    heads = [a for a, b in itertools.pairwise(lines) if b.startswith("| ---")]
    columns = [c.strip() for h in heads for c in h.strip("|").split("|") if c.strip() != "#"]
    assert columns[:4] == ["test", "host", "repeat", "Throughput (MB/s)"], columns
    line = next(ln for ln in post.splitlines() if ln.startswith("- A background load ran"))
    assert "at a target of 10 MB/s" in line
    assert "missed the target by more than 60% failed" in line
