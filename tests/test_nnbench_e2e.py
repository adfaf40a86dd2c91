"""Hadoop's own NameNode benchmark through a command tool, for real: config/examples/
nnbench.yaml (NNThroughputBenchmark's create, from the HDFS install perfpost deploys, against
that HDFS), shrunk to 500 files and two runs a cell. Each number is the benchmark's own, read
here from its log line by line: "Ops per sec", "Elapsed Time" (ms) and "# operations"."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.e2e import make_checkout, records, shrunk_example, snakemake
from tests.test_clusters_e2e import cluster_dir, java_daemons  # noqa: F401 (a fixture)

pytestmark = pytest.mark.e2e

FILES = 500


@pytest.fixture
def run(hdfs_cache, cluster_dir, tmp_path):  # noqa: F811 (the fixture)
    hadoop = {"hadoop": {"version": "3.4.2", "cache": str(hdfs_cache)}}
    edits = {"-files 2000": f"-files {FILES}"}
    config = shrunk_example("nnbench.yaml", "nn-create", tmp_path, cluster_dir, hadoop, 2, edits)
    work = make_checkout(tmp_path / "w", config)
    done = snakemake(work, "--cores", "2", "report", timeout=1200)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert not java_daemons(cluster_dir)
    return work


def said(log: str, label: str) -> str:
    for line in log.splitlines():
        if f"{label}:" in line:
            return line.split(f"{label}:", 1)[1].strip()
    raise AssertionError(f"no {label!r} in the benchmark's log")


def test_every_rate_is_the_benchmarks_own(run):
    tidy = pd.read_csv(run / "results" / "nn-create" / "tidy.csv")
    recs = records(run, "nn-create")
    assert len(recs) == 4  # 2 thread counts x 2 runs
    for rec in recs:
        assert rec["status"] == "done", rec["reason"]
        log = (rec["path"].parent / "raw" / "command.log").read_text()
        assert int(said(log, "# operations")) == FILES
        rows = tidy[(tidy["cell"] == rec["cell"]) & (tidy["repeat"] == rec["repeat"])]
        v = dict(zip(rows["metric"], rows["value"], strict=True))
        assert v["creates_per_s"] == float(said(log, "Ops per sec"))
        assert v["elapsed"] == pytest.approx(int(said(log, "Elapsed Time")) / 1000, rel=1e-12)
        # The benchmark's own time is inside the run's: the JVM's start and stop besides.
        assert v["elapsed"] < v["wall_time"]
    post = (run / "reports" / "nn-create" / "index.md").read_text()
    assert "org.apache.hadoop.hdfs.server.namenode.NNThroughputBenchmark" in post
    assert "HDFS 3.4.2 `hdfs`" in post
