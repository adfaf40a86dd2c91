"""The workflow over three real sshd hosts: parallel hosts, a host going down, re-running."""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import time
import uuid
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tests.conftest import env_with_venv, snakemake_bin
from tests.e2e import make_checkout, notebook_of, planned_records, sections, snakemake

pytestmark = pytest.mark.e2e
HOSTS = ["h1", "h2", "h3"]


def inventory(bed) -> dict:
    return yaml.safe_load(Path(bed.inventory).read_text())


def experiment(**over) -> dict:
    return {
        "tool": "dd",
        "hosts": HOSTS,
        # Small writes with fsync: CPU-bound enough to last a fraction of a second; the
        # count comes from the axis.
        "params": {
            "dir": f"/tmp/perfpost-e2e-{uuid.uuid4().hex[:6]}",
            "bs": "512",
            "conv": "fsync",
        },
        "after": ["sync"],
        **over,
    }


def records(work: Path, exp: str) -> list[dict]:
    return [
        json.loads(p.read_text()) | {"_path": str(p)}
        for p in sorted((work / "results" / exp).glob("cells/*/*/r*/attempt-*/record.json"))
    ]


@pytest.fixture(scope="module")
def parallel_run(testbed, tmp_path_factory):
    work = tmp_path_factory.mktemp("remote")
    cfg = {
        **inventory(testbed),
        "experiments": {"spread": experiment(axes={"count": [100000, 200000]}, repeats=2)},
    }
    make_checkout(work, cfg)
    result = snakemake(work, "--cores", "6", "report")
    return work, result


def test_cells_run_on_every_host_and_hosts_run_in_parallel(parallel_run):
    work, result = parallel_run
    assert result.returncode == 0, result.stderr[-4000:]
    recs = records(work, "spread")
    assert len(recs) == 2 * 2 * 3
    assert {r["status"] for r in recs} == {"done"}, [r["reason"] for r in recs]
    assert {r["host"] for r in recs} == set(HOSTS)
    spans = {
        h: sorted((r["start_epoch"], r["end_epoch"]) for r in recs if r["host"] == h) for h in HOSTS
    }
    for h, s in spans.items():  # one at a time on each host...
        assert all(a[1] <= b[0] for a, b in itertools.pairwise(s)), h
    overlapping = [
        (a, b)
        for a, b in itertools.combinations(HOSTS, 2)
        if any(x[0] < y[1] and y[0] < x[1] for x in spans[a] for y in spans[b])
    ]
    assert overlapping, spans  # ...and at the same time across hosts


def test_remote_scratch_is_removed_and_raw_logs_came_back(parallel_run, testbed):
    from perfpost.run.remote import RemoteHost
    from tests.conftest import host_spec

    work, _ = parallel_run
    recs = records(work, "spread")
    target = recs[0]["params"]["dir"]
    for h in HOSTS:
        host = RemoteHost(host_spec(testbed, h))
        try:
            left = host.run(f"ls -A {target}; ls -d /tmp/perfpost-*-logs 2>/dev/null; true", 30)
        finally:
            host.close()
        assert left.stdout.strip() == "", (h, left.stdout)
    for r in recs:
        log = Path(r["_path"]).parent / "raw" / "dd.log"
        assert "records out" in log.read_text()


def test_each_host_environment_and_results_reach_the_table_and_post(parallel_run, testbed):
    work, _ = parallel_run
    for h in HOSTS:
        env = json.loads((work / "results" / "spread" / "env" / f"{h}.json").read_text())
        assert env["complete"]
        if testbed.mode == "netns":
            assert env["hostname"] == h
    tidy = (work / "results" / "spread" / "tidy.csv").read_text()
    for h in HOSTS:
        assert f",{h}," in tidy
    post = notebook_of(work / "reports" / "spread" / "index.md")
    envs = post.split("## Environment")[1].split("## Results")[0]
    # Identical hosts share one block, titled with every host's name.
    titles = [line for line in envs.splitlines() if line.startswith("### ")]
    for h in HOSTS:
        assert any(h in t for t in titles), titles
    results = post.split("## Results")[1].split("## Failed cells")[0]
    header = next(line for line in results.splitlines() if line.startswith("| count |"))
    assert header.startswith("| count | host | n |")
    for h in HOSTS:
        assert f"| 100000 | {h} | 2 |" in results
    # The table with the bytes column (a wide results table continues in another, keyed by
    # count and host): every host's row says 100000 x 512 B, from the axis.
    tables = [t for t in results.split("\n\n") if t.startswith("| ")]
    (with_bytes,) = [t for t in tables if "bytes median" in t.split("\n")[0]]
    rows = [r for r in with_bytes.splitlines() if r.startswith("| 100000 |")]
    assert len(rows) == len(HOSTS), with_bytes
    assert all("| 51.2 MB |" in r for r in rows), rows
    assert "each of the hosts `h1`, `h2`, `h3`" in post
    assert "hosts ran in parallel" in post


def test_a_host_going_down_fails_only_its_cells_and_comes_back(testbed, tmp_path):
    work = tmp_path / "down"
    work.mkdir()
    cfg = {
        **inventory(testbed),
        "experiments": {"down": experiment(axes={"count": [150000, 200000, 250000]}, repeats=3)},
    }
    make_checkout(work, cfg)
    proc = subprocess.Popen(
        [snakemake_bin(), "--cores", "6", "report"],
        cwd=work,
        env=env_with_venv(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            done_h2 = [r for r in records(work, "down") if r["host"] == "h2"]
            if done_h2:
                break
            time.sleep(0.1)
        else:
            pytest.fail("h2 never finished a cell")
        testbed.stop_host("h2")
        _, err = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
        testbed.start_host("h2")  # the other tests need it back
    assert proc.returncode == 0, err[-4000:]
    recs = records(work, "down")
    by_host = {h: [r for r in recs if r["host"] == h] for h in HOSTS}
    for h in ("h1", "h3"):
        assert len(by_host[h]) == 9
        assert {r["status"] for r in by_host[h]} == {"done"}
    failed = [r for r in by_host["h2"] if r["status"] == "failed"]
    done = [r for r in by_host["h2"] if r["status"] == "done"]
    assert done
    assert failed
    assert len(done) + len(failed) == 9
    for r in failed:
        assert r["reason"].startswith(("unreachable:", "connection to")), r["reason"]
        assert "h2" in r["reason"] or testbed.host("h2").address in r["reason"]
    post = notebook_of(work / "reports" / "down" / "index.md")
    assert sections(post)[:2] == ["Summary of the runs", "Test method"]
    failed_section = post.split("## Failed cells")[1].split("## Detailed")[0]
    # One row per failed run (in the first table: a wide one continues in others).
    first = next(t for t in failed_section.split("\n\n") if t.startswith("| "))
    assert first.count("| h2 |") == len(failed)
    assert "| h1 |" not in failed_section

    # h2 is back: the next run runs exactly its failed cells, in new attempts.
    want = sorted(
        str(Path(r["_path"]).relative_to(work)).replace("attempt-1", "attempt-2") for r in failed
    )
    assert planned_records(work) == want
    again = snakemake(work, "--cores", "6", "report")
    assert again.returncode == 0, again.stderr[-4000:]
    latest = {}
    for r in records(work, "down"):
        key = (r["cell"], r["host"], r["repeat"])
        if r["attempt"] >= latest.get(key, {"attempt": 0})["attempt"]:
            latest[key] = r
    assert len(latest) == 27
    assert {r["status"] for r in latest.values()} == {"done"}
    assert "None: every run finished." in notebook_of(work / "reports" / "down" / "index.md")


def test_start_together_runs_each_cell_on_all_hosts_at_one_moment(testbed, tmp_path):
    work = tmp_path / "together"
    work.mkdir()
    cfg = {
        **inventory(testbed),
        "experiments": {
            "together": experiment(axes={"count": [50000, 100000]}, repeats=2, start_together=True)
        },
    }
    make_checkout(work, cfg)
    result = snakemake(work, "--cores", "6", "report")
    assert result.returncode == 0, result.stderr[-4000:]
    ran = [line for line in result.stderr.splitlines() if "rule cell_together_together:" in line]
    assert len(ran) == 2 * 2  # one job per cell and repeat, not per host
    recs = records(work, "together")
    assert len(recs) == 2 * 2 * 3
    assert {r["status"] for r in recs} == {"done"}
    groups: dict = {}
    for r in recs:
        groups.setdefault((r["cell"], r["repeat"]), []).append(r)
    for group in groups.values():
        assert sorted(r["host"] for r in group) == HOSTS
        planned = {r["planned_start"] for r in group}
        assert len(planned) == 1
        starts = [r["start_epoch"] for r in group]
        for r in group:
            assert r["start_skew"] == pytest.approx(max(starts) - min(starts))
            assert r["start_epoch"] >= r["planned_start"] - 0.001  # nobody starts early
            assert r["start_offset"] == pytest.approx(r["start_epoch"] - r["planned_start"])
            # Waiting before the start, which was set 1 s (START_MARGIN) after the last host
            # was prepared: three hosts are ready well within it.
            assert 0 < r["start_ready_ahead"] < 1.0
        # Started together: every pair of the group's measurements overlaps in time.
        for a, b in itertools.combinations(group, 2):
            assert a["start_epoch"] < b["end_epoch"]
            assert b["start_epoch"] < a["end_epoch"]
    tidy = (work / "results" / "together" / "tidy.csv").read_text()
    assert ",start_skew," in tidy


def test_several_clients_on_every_host_start_together_across_hosts(testbed, tmp_path):
    # "3 clients on each of 3 hosts at one moment": 9 dd processes of one cell, each in a
    # directory of its own, started by each host's shell at the group's common start.
    work = tmp_path / "clients"
    work.mkdir()
    exp = experiment(axes={"count": [100000]}, repeats=1, start_together=True)
    exp["params"]["clients"] = 3
    make_checkout(work, {**inventory(testbed), "experiments": {"clients": exp}})
    result = snakemake(work, "--cores", "6", "report")
    assert result.returncode == 0, result.stderr[-4000:]
    recs = records(work, "clients")
    assert sorted(r["host"] for r in recs) == HOSTS
    assert {r["status"] for r in recs} == {"done"}
    (planned,) = {r["planned_start"] for r in recs}
    starts, ends = [], []
    for r in recs:
        each = r["clients"]["each"]
        assert len(each) == 3
        assert len({c["workdir"] for c in each}) == 3  # a directory a client
        raw = Path(r["_path"]).parent / "raw"
        copied = []
        for i, c in enumerate(each, start=1):
            # Each process's own start, on its host, is at or after the common start.
            assert c["start_epoch"] >= planned - 0.001
            starts.append(c["start_epoch"])
            ends.append(c["end_epoch"])
            said = (raw / f"client-{i}.dd.log").read_text()
            copied.append(int(re.search(r"^(\d+) bytes .* copied", said, re.M)[1]))
        assert copied == [100000 * 512] * 3  # dd's own count, each client's
        tidy = pd.read_csv(work / "results" / "clients" / "tidy.csv")
        mine = tidy[(tidy["host"] == r["host"]) & (tidy["metric"] == "bytes")]
        assert mine["value"].tolist() == [sum(copied)]  # the run's bytes: the clients' sum
    # All nine processes on the three hosts started within a fraction of a second of each
    # other, each writing 51 MB with an fsync: the start spread is well inside any one's run.
    assert max(starts) - min(starts) < 0.5
    assert max(starts) < min(ends)
