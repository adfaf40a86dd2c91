"""A runtime perfpost cannot provision fails exactly the cells that need it, each with a
record and Maven's reason, while the other build's cells run and the post is written; the
next run tries the provisioning again and re-runs only those cells.

The build is an axis: HDFS 3.4.2 (in the session's tool cache) against 3.4.99, a release
Maven Central does not have (as Ozone 1.4.1's freon, which 1.x shipped elsewhere)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e import QUICK_DAEMONS, make_checkout, notebook_of, planned_records, snakemake

pytestmark = pytest.mark.e2e

GOOD, BAD = "3.4.2", "3.4.99"


def records(work: Path) -> dict[str, dict]:
    out = {}
    for path in sorted((work / "results" / "k" / "cells").glob("*/*/r*/attempt-*/record.json")):
        out[str(path.relative_to(work))] = json.loads(path.read_text())
    return out


def test_a_build_that_cannot_be_provisioned_fails_its_cells_only(hdfs_cache, tmp_path):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    cfg = {
        "tools": {"hadoop": {"version": GOOD, "cache": str(hdfs_cache)}},
        "clusters": {
            "hdfs": {
                "kind": "hdfs",
                "version": "{build}",
                "dir": str(tmp_path / "clusters"),
                "jvm": QUICK_DAEMONS,
            }
        },
        "experiments": {
            "k": {
                "tool": "dd",
                "cluster": "hdfs",
                "params": {"dir": str(scratch), "bs": "4k", "count": 256},
                "axes": {"build": [GOOD, BAD]},
                "repeats": 2,
            }
        },
    }
    work = make_checkout(tmp_path / "w", cfg)
    first = snakemake(work, "--cores", "2", "report", timeout=900)
    assert first.returncode == 0, first.stderr[-4000:]
    got = records(work)
    assert len(got) == 4, sorted(got)
    for path, rec in got.items():
        if f"build={GOOD}" in path:
            assert rec["status"] == "done", rec["reason"]
        else:
            assert rec["status"] == "failed"
            # Maven's own words: the artifact it could not find.
            assert rec["reason"].startswith(f"provisioning hdfs {BAD} failed: mvn "), rec["reason"]
            assert f"org.apache.hadoop:hadoop-hdfs:jar:{BAD}" in rec["reason"]
    post = notebook_of(work / "reports" / "k" / "index.md")
    failed = post.split("## Failed cells", 1)[1].split("\n## ", 1)[0]
    assert f"provisioning hdfs {BAD} failed" in failed
    assert "2 of 4 runs finished" in post

    # The next run provisions the missing build again and re-runs only its cells.
    assert planned_records(work) == [
        f"results/k/cells/build={BAD}/localhost/r1/attempt-2/record.json",
        f"results/k/cells/build={BAD}/localhost/r2/attempt-2/record.json",
    ]
    (failed_outcome,) = (work / "results" / "tools").glob(f"hdfs-{BAD}-*.json")
    failed_at = failed_outcome.stat().st_mtime_ns
    again = snakemake(work, "--cores", "2", "report", timeout=900)
    assert again.returncode == 0, again.stderr[-4000:]
    tried = work / "results" / "tools"
    # Tried again (Maven asked again), not the first run's outcome read a second time.
    assert failed_outcome.stat().st_mtime_ns > failed_at
    assert len(list(tried.glob(f"hdfs-{BAD}-*.log"))) == 1
    after = records(work)
    assert {p: r["status"] for p, r in after.items() if p in got} == {
        p: r["status"] for p, r in got.items()
    }
    second = [r for p, r in after.items() if "attempt-2" in p]
    assert len(second) == 2
    assert {r["status"] for r in second} == {"failed"}
    assert "provisioning hdfs 3.4.99 failed" in (tried.parent / "k" / "cells.csv").read_text()
