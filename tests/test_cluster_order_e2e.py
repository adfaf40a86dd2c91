"""Interleaved runs against two real HDFS configurations (dfs.blocksize 64 MiB against
128 MiB), A B B A: `shared: true` clusters kept up side by side where this machine's memory
allows (each started once, both up while the other measured), or alternated with a restart
before every run (`fresh: cell`), and the post says which and what the restarts cost. (Not
shared, the default, they run one at a time: the default config's hcfs shows it, and so
do runs on one YARN and two Ozone configurations, the last test here, one of which asks
for a chunk layout Ozone 2.2.0 does not take.)

Expected values: the order from the runs' own start times in cells.csv; the starts and their
times from each cluster's state.json; the restarts' median from those times, by hand; the
layout the datanode used from its own log line.
"""

from __future__ import annotations

import json
import statistics

import pandas as pd
import pytest

from tests.e2e import QUICK_DAEMONS, make_checkout, notebook_of, snakemake
from tests.test_clusters_e2e import (
    HDFS_VERSION,
    OZONE_VERSION,
    RUN_TIMEOUT,
    cluster_dir,  # noqa: F401  (a fixture: kills whatever this test's clusters left)
    cluster_ids,
    java_daemons,
    starts,
    state,
)

pytestmark = pytest.mark.e2e

A, B = "blocksize=64m", "blocksize=128m"


def config(cache, clusters_at, scratch, fresh: str) -> dict:
    return {
        "tools": {
            "ozone": {"version": OZONE_VERSION, "cache": str(cache)},
            "hadoop": {"version": HDFS_VERSION, "cache": str(cache)},
        },
        "experiments": {
            "blocks": {
                # What the runs do is not what these tests check (the order of the runs and
                # the clusters' starts are), so a command, not a JVM of freon's, names the
                # cell's file system and sleeps a moment.
                "tool": "command",
                "cluster": "hdfs",
                "params": {"run": "echo {cluster.fs}; sleep 0.2", "dir": str(scratch)},
                "axes": {"blocksize": ["64m", "128m"]},
                "repeats": 2,
                "order": "interleaved",
            }
        },
        "clusters": {
            "hdfs": {
                "kind": "hdfs",
                "dir": str(clusters_at),
                "jvm": QUICK_DAEMONS,
                "fresh": fresh,
                # Up beside runs that do not use them: the side-by-side case asks for it.
                "shared": fresh == "configuration",
                "hdfs-site": {"dfs.blocksize": "{blocksize}"},
            }
        },
    }


def _t(text: str) -> pd.Timestamp:
    return pd.Timestamp(text)


@pytest.mark.parametrize("fresh", ["configuration", "cell"])
def test_interleaved_configurations_side_by_side_or_restarted(
    hdfs_cache,
    cluster_dir,  # noqa: F811
    tmp_path,
    fresh,
):
    work = make_checkout(
        tmp_path / "w", config(hdfs_cache, cluster_dir, tmp_path / "scratch", fresh)
    )
    done = snakemake(work, "--cores", "2", "report", timeout=RUN_TIMEOUT)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert not java_daemons(cluster_dir)
    cells = pd.read_csv(work / "results" / "blocks" / "cells.csv")
    assert set(cells["status"]) == {"done"}, cells[["cell", "status", "reason"]]
    made = cells.assign(t=pd.to_datetime(cells["start"], format="ISO8601")).sort_values("t")
    assert list(made["cell"]) == [A, B, B, A]  # A B B A, from the runs' own starts
    ids = cluster_ids(work)
    assert len(ids) == 2  # two configurations
    post = notebook_of(work / "reports" / "blocks" / "index.md")
    if fresh == "configuration":
        # Each started once, and both were up while the middle runs measured: the first
        # configuration stopped after the second was ready.
        assert all(starts(work, i) == ["start-1"] for i in ids)
        first, second = sorted((state(work, i, 1) for i in ids), key=lambda s: s["started"])
        assert _t(first["stopped"]) > _t(second["ready"])
        assert "The 2 cluster configurations were kept up side by side" in post
        assert "each started once and stopped after its last run" in post
    else:
        # A cluster of its own for every run: two starts of each configuration.
        assert all(starts(work, i) == ["start-1", "start-2"] for i in ids)
        took = [
            (_t(s["ready"]) - _t(s["started"])).total_seconds()
            for i in ids
            for s in (state(work, i, 1), state(work, i, 2))
        ]
        assert "The 2 cluster configurations were alternated with restarts" in post
        assert "(its clusters are `fresh: cell`)" in post
        mid = statistics.median(took)
        spread = (
            f"each {mid:.0f} s"
            if min(took) == max(took)
            else f"median {mid:.0f} s (from {min(took):.0f} to {max(took):.0f} s)"
        )
        assert f"Each restart cost a cluster start: 4 starts, {spread} from start to" in post
    assert "4 of the 4 runs came where the plan put them" in post


def test_two_ozone_configurations_beside_one_yarn_are_up_one_after_the_other(
    hdfs_cache,
    cluster_dir,  # noqa: F811
    tmp_path,
):
    """Runs that use a YARN and an Ozone whose configuration is an axis (the chunk layout):
    YARN is every cell's first cluster, yet one Ozone serves all its runs and stops before
    the other starts, with no order asked for. (Both Ozones were up at once, the runs
    alternating between them, when a cell's place went by its first cluster alone.)

    Ozone 2.2.0's datanode does not take FILE_PER_CHUNK (it says so in its log and uses
    FILE_PER_BLOCK): the post names that cell by what ran and does not compare the layouts
    as if they differed."""
    scratch = tmp_path / "scratch"
    quick = {"dir": str(cluster_dir), "jvm": QUICK_DAEMONS}
    cfg = {
        "tools": {
            "ozone": {"version": OZONE_VERSION, "cache": str(hdfs_cache)},
            "hadoop": {"version": HDFS_VERSION, "cache": str(hdfs_cache)},
        },
        "experiments": {
            "both": {
                # The order of the runs and the clusters' starts is what this test checks, and
                # it goes by the cells' clusters, not their tool: a command that names both
                # clusters stands in for teragen, whose MapReduce jobs on YARN (checked in
                # tests/test_yarn_e2e.py) cost four JVMs a run. It names the Ozone by its OM
                # ({ozone.ofs}), not a bucket: no bucket is made at either Ozone's start (an
                # Ozone shell JVM each) for a command that writes nothing.
                "tool": "command",
                "cluster": ["yarn", "ozone"],
                "params": {"run": "echo {ozone.ofs} {yarn.web}; sleep 0.2", "dir": str(scratch)},
                "axes": {"layout": ["FILE_PER_BLOCK", "FILE_PER_CHUNK"]},
                "repeats": 2,
                "timeout": 600,
                "compare": [
                    {
                        "name": "FILE_PER_CHUNK vs FILE_PER_BLOCK",
                        "baseline": {"layout": "FILE_PER_BLOCK"},
                        "candidate": {"layout": "FILE_PER_CHUNK"},
                        "metric": "wall_time",
                    }
                ],
            }
        },
        "clusters": {
            "yarn": {"kind": "yarn", **quick},
            "ozone": {
                "kind": "ozone",
                **quick,
                "ozone-site": {"ozone.scm.container.layout": "{layout}"},
            },
        },
    }
    work = make_checkout(tmp_path / "w", cfg)
    done = snakemake(work, "--cores", "2", "report", timeout=RUN_TIMEOUT)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert not java_daemons(cluster_dir)
    cells = pd.read_csv(work / "results" / "both" / "cells.csv")
    assert set(cells["status"]) == {"done"}, cells[["cell", "status", "reason"]]
    # Three configurations: the YARN and two Ozones, each started once.
    ids = cluster_ids(work)
    assert len(ids) == 3
    assert all(starts(work, i) == ["start-1"] for i in ids)
    ozones = sorted(
        (state(work, i, 1) for i in ids if i.startswith("ozone")), key=lambda s: s["started"]
    )
    assert len(ozones) == 2
    first, second = ozones
    # One Ozone up at a time: the first stopped before the second began to start.
    assert _t(first["stopped"]) <= _t(second["started"])
    # The runs, by their own start times, are all of one configuration, then all of the
    # other's: two of a cell, then two of the other.
    made = cells.assign(t=pd.to_datetime(cells["start"], format="ISO8601")).sort_values("t")
    order = list(made["cell"])
    assert order == [order[0], order[0], order[2], order[2]], order
    assert order[0] != order[2]
    post = notebook_of(work / "reports" / "both" / "index.md")
    assert "no other cluster was starting, up or stopping on its host while a run measured" in post
    # The layout the datanode used, from its own log, not the one asked.
    (said,) = [o for i in ids for o in state(work, i, 1)["deployment"].get("overridden", [])]
    assert (said["key"], said["asked"], said["ran"]) == (
        "ozone.scm.container.layout",
        "FILE_PER_CHUNK",
        "FILE_PER_BLOCK",
    ), said
    assert "FILE_PER_CHUNK layout is not supported" in said["evidence"]  # the datanode's line
    assert "FILE_PER_CHUNK is not supported by this release" in post
    index = (work / "reports" / "both" / "index.md").read_text()
    assert "| `layout=FILE_PER_CHUNK (ran FILE_PER_BLOCK, not FILE_PER_CHUNK)` |" in index
    assert "FILE_PER_CHUNK against FILE_PER_BLOCK: not compared, `layout=FILE_PER_CHUNK` ran" in (
        index
    )
    # Nor described as "no difference shown" where a link preview reads the page alone.
    assert (
        'description: "FILE_PER_CHUNK against FILE_PER_BLOCK: not compared, layout=FILE_PER_CHUNK'
        ' ran FILE_PER_BLOCK."\n' in index
    )
    # Nor drawn as a comparison.
    drawn = json.loads((work / "reports" / "both" / "figures" / "figures.json").read_text())
    assert not [f for f in drawn if f.get("comparison")], drawn
