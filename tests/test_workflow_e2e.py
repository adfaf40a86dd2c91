"""The whole workflow on a tiny config, run for real with snakemake in a temporary directory.

It checks the table and the post against the raw logs, then the promises about re-running:
failed cells run again (and only they), finished cells never do, and deleting one cell's
output re-runs just that cell and what depends on it.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import re
import shutil
import statistics
import uuid
from pathlib import Path

import pandas as pd
import pytest

from perfpost.units import rate_scale, sig
from tests.e2e import (
    front_matter,
    image_links,
    make_checkout,
    notebook_of,
    planned_records,
    sections,
    snakemake,
)

pytestmark = pytest.mark.e2e

# The notebook's sections, then the post's (the full record is read notebook first).
SECTIONS = [
    "Summary of the runs",
    "Test method",
    "Test commands",
    "Environment",
    "Results",
    "Resources",
    "Design checks",
    "Validity",
    "Failed cells",
    "Detailed results",
    "Provenance",
    "How it was run",
    "Results",
    "Caveats",
    "Conclusion",
]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    work = tmp_path_factory.mktemp("checkout")
    disk = work / "disk"
    disk.mkdir()
    flaky = work / "flaky"
    flaky.write_text("a file where a directory should be: the cell cannot prepare\n")
    shm = Path(f"/dev/shm/perfpost-e2e-{uuid.uuid4().hex[:8]}")
    config = {
        "experiments": {
            "writes": {
                "title": "Tiny writes",
                "tags": ["dd", "test"],
                "tool": "dd",
                "params": {"dir": "{storage}", "bs": "4k", "count": 256, "conv": "fsync"},
                "axes": {"storage": {"disk": str(disk), "memdisk": str(shm), "flaky": str(flaky)}},
                "repeats": 2,
                "after": ["sync"],
            },
            "reads": {
                "tool": "dd",
                "params": {"mode": "read", "dir": str(disk), "file_size": "512k"},
                "axes": {"readers": [1, 2], "bs": ["4k", "64k"]},
                "exclude": [{"readers": 2, "bs": "4k"}],
                "repeats": 2,
            },
        }
    }
    make_checkout(work, config)
    first = snakemake(work, "--cores", "6", "report")
    yield {"work": work, "first": first, "flaky": flaky}
    for p in shm.glob("*"):
        p.rmdir()
    shm.rmdir() if shm.exists() else None


def records(work: Path, experiment: str) -> list[dict]:
    return [
        json.loads(p.read_text()) | {"_path": str(p)}
        for p in sorted((work / "results" / experiment).glob("cells/*/*/r*/attempt-*/record.json"))
    ]


def test_the_workflow_completes_and_lists_failures(run):
    first = run["first"]
    assert first.returncode == 0, first.stderr[-3000:]
    work = run["work"]
    recs = records(work, "writes")
    assert len(recs) == 3 * 2
    status = {(r["labels"]["storage"], r["repeat"]): r["status"] for r in recs}
    assert status == {
        ("disk", 1): "done",
        ("disk", 2): "done",
        ("memdisk", 1): "done",
        ("memdisk", 2): "done",
        ("flaky", 1): "failed",
        ("flaky", 2): "failed",
    }
    reasons = {r["reason"] for r in recs if r["status"] == "failed"}
    assert all("preparing the cell failed" in x for x in reasons), reasons
    # The run kept its config's passed schema checks for the next one (one config, one file).
    assert len(list((work / "results" / ".config-cache").glob("config-*.json"))) == 1


def test_tidy_table_matches_the_raw_logs(run):
    work = run["work"]
    df = pd.read_csv(work / "results" / "writes" / "tidy.csv")
    assert list(df.columns[:5]) == ["experiment", "cell", "host", "repeat", "storage"]
    for rec in records(work, "writes"):
        if rec["status"] != "done":
            continue
        raw = (Path(rec["_path"]).parent / "raw" / "dd.log").read_text()
        nbytes = int(re.search(r"^(\d+) bytes", raw, re.M).group(1))
        secs = float(re.search(r"copied, ([\d.e-]+) s,", raw).group(1))
        rows = df[(df["cell"] == rec["cell"]) & (df["repeat"] == rec["repeat"])]
        got = dict(zip(rows["metric"], rows["value"], strict=True))
        assert got["bytes"] == nbytes == 256 * 4096
        assert got["elapsed"] == pytest.approx(secs)
        assert got["throughput"] == pytest.approx(nbytes / secs)
    failed = df[df["storage"] == "flaky"]
    assert set(failed["status"]) == {"failed"}


def test_post_has_every_section_and_numbers_from_the_logs(run):
    work = run["work"]
    post = notebook_of(work / "reports" / "writes" / "index.md")
    meta = front_matter((work / "reports" / "writes" / "index.md").read_text())
    assert meta["title"] == "Tiny writes"
    assert meta["tags"] == ["dd", "test"]
    # A time with its offset (UTC), as Hugo and Jekyll read it; made today.
    assert meta["date"].utcoffset() == dt.timedelta(0)
    assert meta["date"].date() == pd.Timestamp.now("UTC").date()
    assert sections(post) == SECTIONS
    links = image_links(post)
    assert len(links) >= 1
    for link in links:
        assert not link.startswith("/")
        assert (work / "reports" / "writes" / link).is_file(), link
    assert (work / "reports" / "writes" / "data.csv").is_file()

    # Median throughput per storage, computed here from the raw dd logs alone.
    medians = {}
    for rec in records(work, "writes"):
        if rec["status"] == "done":
            raw = (Path(rec["_path"]).parent / "raw" / "dd.log").read_text()
            secs = float(re.search(r"copied, ([\d.e-]+) s,", raw).group(1))
            medians.setdefault(rec["labels"]["storage"], []).append(256 * 4096 / secs)
    medians = {k: statistics.median(v) for k, v in medians.items()}
    unit, factor = rate_scale(list(medians.values()))
    assert f"Throughput median ({unit})" in post
    for storage, value in medians.items():
        row = next(line for line in post.splitlines() if line.startswith(f"| {storage} |"))
        assert row.split(" | ")[2] == sig(value / factor), row
    hi = max(medians, key=medians.get)
    assert f"{sig(medians[hi] / factor)} {unit} (storage={hi})" in post

    failed = post.split("## Failed cells")[1].split("## ")[0]
    assert "`storage=flaky`" in failed
    assert "preparing the cell failed" in failed
    assert "4 of 6 runs finished; 2 did not" in post
    assert "bs=4k count=256 conv=fsync" in post.split("## Test commands")[1]
    assert "time sync" in post


def test_reads_post_sums_readers(run):
    work = run["work"]
    post = notebook_of(work / "reports" / "reads" / "index.md")
    assert sections(post) == SECTIONS
    assert "None: every run finished." in post
    df = pd.read_csv(work / "results" / "reads" / "tidy.csv")
    two = df[(df["readers"] == 2) & (df["metric"] == "bytes")]
    assert set(two["value"]) == {2 * 512 * 1024}
    assert len(df["cell"].unique()) == 3  # the excluded combination is not there


def test_rerun_runs_only_failed_cells_and_never_finished_ones(run):
    work = run["work"]
    done_before = {
        r["_path"]: Path(r["_path"]).stat().st_mtime_ns
        for r in records(work, "writes") + records(work, "reads")
        if r["status"] == "done"
    }
    planned = planned_records(work)
    assert planned == [
        "results/writes/cells/storage=flaky/localhost/r1/attempt-2/record.json",
        "results/writes/cells/storage=flaky/localhost/r2/attempt-2/record.json",
    ]
    run["flaky"].unlink()  # the fault is fixed: the directory can now be made
    again = snakemake(work, "--cores", "6", "report")
    assert again.returncode == 0, again.stderr[-3000:]
    after = {r["_path"]: r for r in records(work, "writes")}
    for path, mtime in done_before.items():
        assert Path(path).stat().st_mtime_ns == mtime, f"{path} was run again"
    flaky = {p: r for p, r in after.items() if "storage=flaky" in p}
    assert sorted(r["attempt"] for r in flaky.values()) == [1, 1, 2, 2]
    assert {r["status"] for r in flaky.values() if r["attempt"] == 2} == {"done"}
    assert {r["status"] for r in flaky.values() if r["attempt"] == 1} == {"failed"}
    post = notebook_of(work / "reports" / "writes" / "index.md")
    assert "None: every run finished." in post
    assert "6 of 6 runs finished" in post
    # The flaky cell's runs came from this second run of perfpost, the others from the first:
    # the post says so, and no cell mixes the two (the failed attempts are no results).
    sessions = {r["session"] for r in after.values() if r["status"] == "done"}
    assert len(sessions) == 2
    assert "**Sessions.** The runs came from 2 runs of perfpost (started " in post
    assert "No cell has runs from more than one." in post
    assert planned_records(work) == []


def test_deleting_one_cell_reruns_only_that_cell(run):
    work = run["work"]
    gone = work / "results/writes/cells/storage=disk/localhost/r2"
    shutil.rmtree(gone)
    assert planned_records(work) == [
        "results/writes/cells/storage=disk/localhost/r2/attempt-1/record.json"
    ]
    result = snakemake(work, "--cores", "6", "report")
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads((gone / "attempt-1" / "record.json").read_text())["status"] == "done"
    ran = re.findall(r"^(?:local)?rule (\w+):", result.stderr, re.M)
    assert ran.count("cell") == 1
    # Only this experiment's environment, tables, figures and post are made again.
    assert ran.count("tables") == 1
    assert ran.count("figures") == 1
    assert ran.count("env") == 1
    assert ran.count("post") == 1


def test_cells_on_one_host_ran_one_at_a_time(run):
    """With --cores 6 Snakemake could run six cells at once; the host resource must not."""
    work = run["work"]
    spans = sorted(
        (r["start_epoch"], r["end_epoch"], r["_path"])
        for r in records(work, "writes") + records(work, "reads")
        if r["start_epoch"] is not None
    )
    assert len(spans) >= 10
    for (_, end, path), (start, _, nxt) in itertools.pairwise(spans):
        assert end <= start, f"{path} overlaps {nxt}"
