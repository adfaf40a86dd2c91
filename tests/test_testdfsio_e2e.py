"""Hadoop's own I/O benchmark through a command tool, for real: config/examples/testdfsio.yaml
(TestDFSIO's write and read, from the MapReduce test jar of the YARN perfpost deploys, into the
HDFS it deploys beside), shrunk to 2 files of 4 MB and one run a cell, on YARN and in the local
runner. The metrics are read from the result file TestDFSIO appends to; each is checked here
against the summary TestDFSIO logs (its other copy of the same lines), read line by line, in
the MiB TestDFSIO counts in (its toMB divides by 1,048,576)."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from tests.e2e import make_checkout, records, shrunk_example, snakemake
from tests.test_clusters_e2e import cluster_dir, java_daemons  # noqa: F401 (a fixture)

pytestmark = pytest.mark.e2e

FILES, MB = 2, 4
MIB = 1024 * 1024


@pytest.fixture
def run(hdfs_cache, cluster_dir, tmp_path):  # noqa: F811 (the fixture)
    hadoop = {"hadoop": {"version": "3.4.2", "cache": str(hdfs_cache)}}
    edits = {"-nrFiles 4": f"-nrFiles {FILES}", "-size 64MB": f"-size {MB}MB"}
    config = shrunk_example(
        "testdfsio.yaml", "dfsio", tmp_path, cluster_dir, hadoop, 1, edits, quick_daemons=True
    )
    work = make_checkout(tmp_path / "w", config)
    done = snakemake(work, "--cores", "2", "report", timeout=1200)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert not java_daemons(cluster_dir)
    return work


def summaries(log: str) -> list[dict[str, str]]:
    """TestDFSIO's summaries as it logged them, in order: {label: value} each."""
    found: list[dict[str, str]] = []
    for line in log.splitlines():
        m = re.search(r"TestDFSIO: +([A-Za-z][^:]*?): (.+)$", line)
        if "----- TestDFSIO ----- : " in line:
            found.append({"test": line.rsplit(": ", 1)[1].strip()})
        elif m and found:
            found[-1][m[1].strip()] = m[2].strip()
    return found


def test_every_number_is_testdfsios_own_on_yarn_and_in_the_local_runner(run):
    tidy = pd.read_csv(run / "results" / "dfsio" / "tidy.csv")
    recs = records(run, "dfsio")
    assert sorted(r["cell"] for r in recs) == ["framework=local", "framework=yarn"]
    for rec in recs:
        assert rec["status"] == "done", rec["reason"]
        log = (rec["path"].parent / "raw" / "command.log").read_text()
        # Where the job ran: an application of the cell's YARN, or the local runner's job.
        if rec["cell"] == "framework=yarn":
            assert re.search(r"Submitted application application_\d+_\d+", log)
        else:
            assert re.search(r"Running job: job_local\d+_0001", log)
            assert "Submitted application" not in log
        write, read = summaries(log)
        assert (write["test"], read["test"]) == ("write", "read")
        for s in (write, read):
            assert int(s["Number of files"]) == FILES
            assert float(s["Total MBytes processed"]) == FILES * MB
        rows = tidy[tidy["cell"] == rec["cell"]]
        v = dict(zip(rows["metric"], rows["value"], strict=True))
        u = dict(zip(rows["metric"], rows["unit"], strict=True))
        for side, s in (("write", write), ("read", read)):
            assert u[f"{side}_throughput"] == "B/s"
            assert v[f"{side}_throughput"] == pytest.approx(
                float(s["Throughput mb/sec"]) * MIB, rel=1e-12
            )
            assert v[f"{side}_exec_time"] == pytest.approx(
                float(s["Test exec time sec"]), rel=1e-12
            )
        # Both jobs, their JVMs' starts and the clean-up are inside the run's wall time.
        assert v["write_exec_time"] + v["read_exec_time"] < v["wall_time"]
    post = (run / "reports" / "dfsio" / "index.md").read_text()
    # The listing as a person types it: the install's launcher on the PATH, no cache path
    # (read with its lines joined where it continues them).
    joined = " ".join(post.replace("\\\n", " ").split())
    assert "dfsio() { yarn org.apache.hadoop.fs.TestDFSIO -Dfs.defaultFS=hdfs://" in joined
    assert "/.cache/perfpost" not in post.split("## Results")[0]
    assert "HDFS 3.4.2 `hdfs`" in post
    assert "YARN 3.4.2 `yarn`" in post
