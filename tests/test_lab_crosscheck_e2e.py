"""The reference topologies of the teragen crosscheck and the HCFS posts, from their config
example (config/examples/lab-teragen-crosscheck.yaml) at miniature size, on six testbed
hosts that share nothing with this machine: teragen as a MapReduce job on YARN (a
ResourceManager and three NodeManagers on h4, h5, h6) writing into a three-DataNode HDFS and
a three-datanode Ozone on h1, h2, h3; freon dfsg into that Ozone from h5, a host with no datanode.

Expected values: teragen's rows by hand (2 MB / 100 bytes), its own counters and the
ResourceManager's record as they came back; freon's own summary; the chunk files each Ozone
datanode held, by hand (one block per teragen map, one per freon file, RATIS/THREE puts one
replica on each of the three); the hosts of the example.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT
from tests.e2e import make_checkout, notebook_of, on_testbed, snakemake
from tests.test_clusters_remote import leftovers

pytestmark = pytest.mark.e2e

EXAMPLE = ROOT / "config" / "examples" / "lab-teragen-crosscheck.yaml"
SIZE = 2_000_000  # teragen's size in the miniature: 20,000 rows of 100 bytes
MAPS = 3
FILES = 50  # freon dfsg files a run
LOAD_LEAD = 2  # seconds of the load, from its first key, before teragen starts
_PROGRESS = re.compile(
    r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) .*Progress: [\d.]+ % \((\d+) out of \d+\)",
    re.M,
)


@pytest.fixture(scope="module")
def lab(tmp_path_factory, ozone_cache):
    from tests import testbed as tb

    # Ozone from the session's fixture, with its provisioning log, though the run would
    # provision it: the cache is the session's, and tests/test_freon_e2e.py reads that log.
    tool_cache, _ = ozone_cache
    if os.geteuid() != 0:
        pytest.skip("six hosts with their own filesystems need network namespaces, as root")
    example = yaml.safe_load(EXAMPLE.read_text())
    bed = tb.start(6, tmp_path_factory.mktemp("lab6x"), quick_java=True)
    try:
        cfg = on_testbed(example, bed.inventory, tool_cache)
        # Miniature: one run a cell, 2 MB in three maps, 50 files of 10 KB.
        tera = cfg["experiments"]["lab-teragen"]
        tera["repeats"] = 1
        tera["timeout"] = 600
        tera["params"]["size"] = "2M"
        tera["params"]["defines"]["mapreduce.job.maps"] = MAPS
        # The agent in every map task, on NodeManager hosts that are not the client's.
        tera["instrument"] = {"rules": ["output"], "tasks": True, "without": "none"}
        # freon ockg beside every teragen run, as the teragen post ran it: from h4 (freon
        # delivered there) into the Ozone on h1-h3. Keys of no bytes: the datanodes' block
        # files stay teragen's and freon dfsg's alone.
        cfg["hosts"]["h4"]["ozone"] = "provisioned"
        tera["background"] = {
            "tool": "freon",
            "params": {
                "subcommand": "ockg",
                "dir": "/var/tmp/perfpost",
                "env": {"HADOOP_USER_NAME": "perfpost"},
                "options": {"n": 10_000_000, "t": 1, "s": 0, "v": "vol1", "b": "bucket1"},
            },
            "lead": LOAD_LEAD,
        }
        hcfs = cfg["experiments"]["lab-hcfs"]
        hcfs["repeats"] = 1
        hcfs["timeout"] = 600
        hcfs["params"]["options"].update(n=FILES, s=10240)
        # Into Ozone alone: HDFS from a host with no DataNode is teragen's client on h4.
        hcfs["axes"]["fs"] = ["ozone"]
        work = tmp_path_factory.mktemp("lab-crosscheck")
        make_checkout(work, cfg)
        result = snakemake(work, "--cores", "6", "report", timeout=2700)
        assert result.returncode == 0, result.stderr[-5000:]
        yield work, example
    finally:
        bed.stop()


def records(work: Path, experiment: str) -> list[tuple[Path, dict]]:
    found = sorted((work / "results" / experiment).glob("cells/*/*/r*/attempt-*/record.json"))
    return [(p.parent, json.loads(p.read_text())) for p in found]


def test_teragen_ran_on_the_yarn_hosts_into_both_file_systems_on_the_others(lab):
    work, example = lab
    roles = example["clusters"]
    nodemanagers = set(roles["yarn"]["roles"]["nodemanager"])
    storage_hosts = {h for c in ("hdfs", "ozone") for h in roles[c]["roles"]["datanode"]}
    assert not nodemanagers & storage_hosts
    got = records(work, "lab-teragen")
    assert sorted(r["labels"]["storage"] for _, r in got) == ["hdfs", "ozone"]
    for where, rec in got:
        assert rec["status"] == "done", rec["reason"]
        assert rec["host"] == "h4"
        log = (where / "raw" / "teragen.log").read_text()
        # teragen's own counters: every row written, by the maps asked for.
        assert f"Bytes Written={SIZE}" in log
        assert f"number of splits:{MAPS}\n" in log
        app = json.loads((where / "raw" / "yarn-app.json").read_text())
        app = app.get("app", app)
        assert (app["state"], app["finalStatus"]) == ("FINISHED", "SUCCEEDED")
        # The job's ApplicationMaster ran on a NodeManager host, not on a storage host.
        assert app["amHostHttpAddress"].split(":")[0] in nodemanagers
        # The job's files went where every NodeManager reads them: the cell's HDFS.
        fs = rec["cluster_fields"]["hdfs.fs"]
        assert f"-Dyarn.app.mapreduce.am.staging-dir={fs}/tmp/perfpost-staging " in rec["command"]
        scheme = {"hdfs": "hdfs://", "ozone": "ofs://"}[rec["labels"]["storage"]]
        assert f" {SIZE // 100} {scheme}" in rec["command"]
        # The client came to h4 from this machine: delivered, not found there.
        clients = [d["host"] for d in rec["delivered"] if d["what"].startswith("hadoop-")]
        assert clients == ["h4"], rec["delivered"]


def test_each_ozone_datanode_held_one_replica_of_every_block_written(lab):
    work, _ = lab
    # teragen: one block per map (0.67 MB each, under a block) into Ozone, none from the HDFS
    # cell; freon: one block per file. RATIS/THREE: a replica on each datanode. The two
    # experiments' Ozone is one configuration: a start may serve cells of both, and its
    # datanodes hold the blocks of every cell it served when it stops.
    written = {("lab-teragen", "ozone"): MAPS, ("lab-hcfs", "ozone"): FILES}
    blocks: dict[int, int] = {}
    runs: dict[int, dict[str, int]] = {}  # start -> experiment -> runs it served
    for experiment in ("lab-teragen", "lab-hcfs"):
        for _, rec in records(work, experiment):
            (held,) = [c for c in rec["clusters"] if c["kind"] == "ozone"]
            label = rec["labels"].get("storage", rec["labels"].get("fs"))
            start = held["start"]
            blocks[start] = blocks.get(start, 0) + written.get((experiment, label), 0)
            served = runs.setdefault(start, {})
            served[experiment] = served.get(experiment, 0) + 1
    assert sum(blocks.values()) == MAPS + FILES
    # Each start's notes, in the posts whose cells it served (made after it stopped; a post
    # made while it served on has none), in the section of that start.
    notes: dict[int, set] = {}
    for experiment in ("lab-teragen", "lab-hcfs"):
        post = notebook_of(work / "reports" / experiment / "index.md")
        for section in post.split("\n### Ozone `ozone`")[1:]:
            section = section.split("\n## ", 1)[0].split("\n### ", 1)[0]
            start = int(re.search(r"/start-(\d+)/logs", section).group(1))
            # The post names the other experiment's runs on this start: its numbers, and
            # its datanodes' files, come from a cluster they wrote into too.
            # A post made while the start served on says so, and names the runs so far.
            (other,) = [(e, n) for e, n in runs[start].items() if e != experiment] or [None]
            said = re.search(r"it also served (\d+) runs? of `([\w-]+)`", section)
            up = "Still up when this post was made" in section
            if other is None:
                assert said is None
            elif said is not None:
                assert said.group(2) == other[0]
                assert int(said.group(1)) == other[1] or (up and int(said.group(1)) < other[1])
            else:
                assert up, section[:600]
            found = re.findall(
                r"datanode on (h\d), its own files when the cluster stopped .*?: "
                r"(\d+) per-block files .*?, (\d+) per-chunk files",
                section,
            )
            if found:
                assert not up
                notes.setdefault(start, set()).update(found)
    assert sorted(notes) == sorted(blocks), (notes, blocks)
    for start, found in notes.items():
        assert sorted(h for h, _, _ in found) == ["h1", "h2", "h3"], found
        assert {(int(b), int(c)) for _, b, c in found} == {(blocks[start], 0)}, (start, found)


def test_the_hcfs_client_ran_on_a_host_with_no_datanode(lab):
    work, example = lab
    datanodes = set(example["clusters"]["ozone"]["roles"]["datanode"])
    datanodes |= set(example["clusters"]["hdfs"]["roles"]["datanode"])
    got = records(work, "lab-hcfs")
    assert [r["labels"]["fs"] for _, r in got] == ["ozone"]
    for where, rec in got:
        assert rec["status"] == "done", rec["reason"]
        assert rec["host"] == "h5"
        assert rec["host"] not in datanodes
        log = (where / "raw" / "freon.log").read_text()
        assert f"Successful executions: {FILES}" in log
        assert re.search(r"Failures: 0\s*$", log, re.M)


def test_the_post_shows_each_cluster_on_its_hosts_and_no_daemon_is_left(lab):
    work, _ = lab
    post = notebook_of(work / "reports" / "lab-teragen" / "index.md")
    for heading, hosts in [
        ("### YARN `yarn`", "resourcemanager on h4; nodemanager on h4, h5, h6"),
        ("### HDFS `hdfs`", "namenode on h1; datanode on h1, h2, h3"),
        ("### Ozone `ozone`", "datanode on h1, h2, h3"),
    ]:
        section = post.split(heading, 1)[1].split("\n### ", 1)[0]
        assert hosts in section, (heading, section[:400])
    # Markdown: a line right after a list item continues the item; the version blocks'
    # headings stand apart from the section's list.
    assert not re.search(r"^- .*\n(Ozone|Hadoop) version:", post, re.M)
    assert re.search(r"\| hdfs \|( on \|)? 1 \|", post)
    assert re.search(r"\| ozone \|( on \|)? 1 \|", post)
    # No daemon of this run's clusters on any host (their directories name the cluster's id).
    idents = {
        c["id"]
        for e in ("lab-teragen", "lab-hcfs")
        for _, r in records(work, e)
        for c in r["clusters"]
    }
    assert len(idents) == 3
    for ident in idents:
        assert leftovers(f"perfpost-cluster-{ident}-") == {}, ident


def test_every_map_task_on_every_nodemanager_host_counted_its_writes(lab):
    """The Byteman agent reached the NodeManagers on h5 and h6 as well as the client's h4:
    every map task's counts came back, and together they made two output-stream writes per
    row teragen wrote (TeraOutputFormat writes a row's key, then its value), the rows from the
    job's own size."""
    work, _ = lab
    rows = SIZE // 100
    for _, rec in records(work, "lab-teragen"):
        assert rec["status"] == "done", rec["reason"]
        tasks = rec["instrument"]["tasks"]
        assert len(tasks) == MAPS, tasks
        metrics = {m["name"]: m["value"] for m in rec["metrics"]}
        assert 2 * rows <= metrics["map-write.call"] <= 2 * rows + 1000, metrics["map-write.call"]
        shipped = {d["host"] for d in rec["delivered"] if d["what"].startswith("byteman")}
        assert {"h5", "h6"} <= shipped <= {"h4", "h5", "h6"}, shipped


def test_freon_ockg_beside_teragen_did_what_its_own_progress_lines_say(lab):
    """The load's rate over each teragen job is its operations between the job's start and
    end as its own progress lines count them, read here with this file's regular expression
    and numpy's interpolation between the two lines around each moment."""
    import datetime as dt

    import numpy as np

    work, _ = lab
    for where, rec in records(work, "lab-teragen"):
        assert rec["status"] == "done", rec["reason"]
        info = rec["background"]
        assert (info["tool"], info["measured_by"]) == ("freon", "progress")
        assert "freon ockg" in info["command"]
        text = (where / "raw" / "background.log").read_text()
        pts = [
            (dt.datetime.strptime(t, "%Y-%m-%d %H:%M:%S,%f").timestamp(), int(c))
            for t, c in _PROGRESS.findall(text)
        ]
        t, c = np.array([x for x, _ in pts]), np.array([y for _, y in pts], dtype=float)
        start, end = rec["start_epoch"], rec["end_epoch"]
        assert t[0] <= start, "its lines bracket the job"
        assert t[-1] >= end, "its lines bracket the job"
        ops = np.interp(end, t, c) - np.interp(start, t, c)
        metrics = {m["name"]: m["value"] for m in rec["metrics"]}
        assert metrics["background.operations"] == pytest.approx(ops, rel=1e-9)
        assert metrics["background.rate"] == pytest.approx(ops / (end - start), rel=1e-9)
        assert metrics["background.rate"] > 0
        # The load came to h4 from this machine, as the client did.
        assert "h4" in {d["host"] for d in rec["delivered"] if d["what"].startswith("ozone-")}
    post = (work / "reports" / "lab-teragen" / "index.md").read_text()
    assert re.search(r"- Beside every run: freon as a background load, [\d.,]+ ops/s to", post)
