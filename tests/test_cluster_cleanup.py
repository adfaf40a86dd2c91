"""What a cluster's clean-up removes: its root on each host, and of the directories its site
values name only those whose own name holds the cluster's id; never a path that merely
contains the id on its way elsewhere (``..``), another scheme's, or a relative one."""

from __future__ import annotations

import json

import pytest

from perfpost.clusters.base import ClusterSpec
from perfpost.clusters.deployment import Deployment
from perfpost.run import teardown

ID = "ozone-0123456789-abcdef"  # a cluster's id with its checkout's tag, as deploy makes it


@pytest.mark.parametrize(
    ("value", "removed"),
    [
        # Its own directory, and everything under it: the directory whose name holds the id.
        (f"/ssd/perfpost/ratis-{ID}", [f"/ssd/perfpost/ratis-{ID}"]),
        (f"/data/{ID}/dn/current", [f"/data/{ID}"]),
        (f"/data/ozone-{ID}-meta", [f"/data/ozone-{ID}-meta"]),
        (f"/data/{ID}.d", [f"/data/{ID}.d"]),
        # `..` is resolved before anything is judged: these leave the id's directory.
        (f"/data/ozone-{ID}/../../etc", []),
        (f"/data/ozone-{ID}/..", []),
        (f"/data/ozone-{ID}/../ratis-{ID}", [f"/data/ratis-{ID}"]),
        (f"//data/./ratis-{ID}//", [f"/data/ratis-{ID}"]),
        # A file: URI is a local path.
        (f"file:///x/ratis-{ID}", [f"/x/ratis-{ID}"]),
        (f"file:/x/ratis-{ID}", [f"/x/ratis-{ID}"]),
        (f"file://localhost/x/ratis-{ID}", [f"/x/ratis-{ID}"]),
        (f"file:///x/ratis-{ID}/../../etc", []),
        # Comma lists, spaces after the commas as Hadoop allows them.
        (
            f"/a/dn-{ID}/d1, /b/dn-{ID},file:///c/dn-{ID}",
            [f"/a/dn-{ID}", f"/b/dn-{ID}", f"/c/dn-{ID}"],
        ),
        (f"/a/dn-{ID}/d1,/a/dn-{ID}/d2", [f"/a/dn-{ID}"]),
        # Not local paths of this host: another file system, another host's file: URI.
        (f"hdfs://nn:9000/bench/{ID}", []),
        (f"ofs://om:9862/vol1/bucket-{ID}", []),
        (f"file://otherhost/x/ratis-{ID}", []),
        # Relative to a daemon's working directory, the cluster's root, which goes anyway.
        (f"ratis-{ID}", []),
        (f"./data/{ID}", []),
        # The id glued to a letter or digit is part of another name, not this cluster's.
        (f"/data/x{ID}", []),
        (f"/data/{ID}0", []),
        (f"/data/{ID}ff/x", []),
        # No id at all.
        ("/etc", []),
        ("", []),
        ("true", []),
    ],
)
def test_the_directories_a_site_value_gives_the_cluster(value, removed):
    assert teardown.own_directories(value, ID) == removed


def test_clean_up_removes_the_clusters_directories_and_nothing_a_value_only_passes_through(
    tmp_path,
):
    """A real teardown on localhost: the site values of a cluster that is gone already."""
    spec = ClusterSpec(
        name="ozone",
        kind="ozone",
        version="2.2.0",
        roles={"scm": ["localhost"], "om": ["localhost"], "datanode": ["localhost"]},
        dir=str(tmp_path / "dir"),
    )
    dep = Deployment(spec, {"localhost": {"name": "localhost"}}, tag="abcdef")
    scope = dep.scope
    root = tmp_path / "dir" / f"perfpost-cluster-{scope}-localhost"
    own = tmp_path / "data" / f"ozone-{scope}"
    ratis = tmp_path / f"ratis-{scope}"
    listed = [tmp_path / f"a-{scope}", tmp_path / f"b-{scope}"]
    keep = tmp_path / "keep"
    glued = tmp_path / f"x{scope}0"
    for d in (root / "logs", own / "meta", ratis / "log", *listed, keep, glued):
        d.mkdir(parents=True)
    (keep / "precious").write_text("not the cluster's")
    dep.site = {
        "ozone-site": {
            "ozone.metadata.dirs": f"{own}/meta",
            "ozone.om.db.dirs": f"{own}/../../keep",  # holds the id, but names keep/
            "hdds.container.ratis.datanode.storage.dir": f"file://{ratis}",
            "hdds.datanode.dir": f"{listed[0]}/d1, {listed[1]}",
            "ozone.scm.db.dirs": str(glued),
            "ozone.om.address": "127.0.0.1:9862",
        }
    }
    sdir = tmp_path / "results" / "start-1"
    sdir.mkdir(parents=True)
    state = {"status": "up", "deployment": dep.to_state()}
    teardown.teardown(sdir, state, "the test ends")
    assert (keep / "precious").read_text() == "not the cluster's"
    assert glued.is_dir()
    for gone in (root, own, ratis, *listed):
        assert not gone.exists(), gone
    assert json.loads((sdir / "state.json").read_text())["status"] == "stopped"
