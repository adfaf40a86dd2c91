"""What else was up on a host while a run measured (perfpost.run.quiet at the run, and
perfpost.analysis.runorder for the post), from cluster states laid out as perfpost keeps
them; and the job inputs that let the order keep a host quiet."""

import json

import pandas as pd

from perfpost.analysis import runorder
from perfpost.run import quiet


def _state(root, ident, name, status, started, stopped=None, shared=False, hosts=("localhost",)):
    d = root / "results" / "clusters" / ident / "start-1"
    d.mkdir(parents=True)
    state = {
        "status": status,
        "started": started,
        "deployment": {
            "spec": {"name": name, "shared": shared, "roles": {"datanode": list(hosts)}}
        },
    }
    if stopped:
        state["stopped"] = stopped
    (d / "state.json").write_text(json.dumps(state))


def test_a_run_finds_the_clusters_up_on_its_host_it_does_not_use(tmp_path):
    _state(tmp_path, "ozone-aaa", "ozone", "up", "2026-11-27T21:21:53+0000")
    _state(tmp_path, "hdfs-bbb", "hdfs", "up", "2026-11-27T21:30:00+0000")
    _state(tmp_path, "ratis-ccc", "ratis", "stopped", "2026-11-27T21:00:00+0000")
    _state(tmp_path, "yarn-ddd", "yarn", "up", "2026-11-27T21:00:00+0000", shared=True)
    _state(tmp_path, "far-eee", "far", "up", "2026-11-27T21:00:00+0000", hosts=("h9",))
    # The hdfs run: the ozone start is the one it does not use; stopped, shared and other
    # hosts' clusters are not counted.
    assert quiet.clusters_up("localhost", ["hdfs-bbb"], tmp_path) == ["ozone (ozone-aaa/start-1)"]
    assert quiet.clusters_up("localhost", ["hdfs-bbb", "ozone-aaa"], tmp_path) == []


def test_the_post_names_runs_measured_while_another_cluster_was_up(tmp_path):
    # The default run's hcfs: HDFS runs at 21:31 while the ozone start (up from 21:21:53 to
    # 21:59:47, for teragen) was up; a dd run after it stopped is quiet.
    _state(
        tmp_path,
        "ozone-aaa",
        "ozone",
        "stopped",
        "2026-11-27T21:21:53+0000",
        "2026-11-27T21:59:47+0000",
    )
    cells = pd.DataFrame(
        [
            {
                "cell": "storage=hdfs",
                "host": "localhost",
                "repeat": 1,
                "status": "done",
                "start": "2026-11-27T21:31:33.93+00:00",
                "end": "2026-11-27T21:31:52.10+00:00",
                "clusters": "hdfs-bbb/start-1",
            },
            {
                "cell": "storage=disk",
                "host": "localhost",
                "repeat": 1,
                "status": "done",
                "start": "2026-11-27T22:00:10+00:00",
                "end": "2026-11-27T22:00:11+00:00",
                "clusters": None,
            },
        ]
    )
    up = runorder.others_up(cells, runorder.cluster_lifetimes(tmp_path))
    assert up == {("storage=hdfs", "localhost", 1): ["ozone"]}
    said = runorder.design_sentence({"order": None}, cells, up, 1)
    assert "1 of 2 runs measured while a cluster they did not use was up" in said
    # Each of the two cells ran once: one run, not "1 runs".
    assert said.startswith("Each of the 2 cells ran 1 run, in the workflow's own order")


def test_a_run_begun_just_after_a_stop_noted_to_the_millisecond_is_quiet(tmp_path):
    # The default run's dd-fsync: a run at 00:51:43.34 after Ozone's stop was noted at
    # 00:51:43 in whole seconds (it may have ended at 43.99: beside it, to be safe); noted
    # to the millisecond, at 43.120, the run came 0.22 s after it.
    run = {
        "cell": "storage=disk",
        "host": "localhost",
        "repeat": 1,
        "status": "done",
        "start": "2026-11-28T00:51:43.34+00:00",
        "end": "2026-11-28T00:51:43.76+00:00",
        "clusters": None,
    }
    for stopped, beside in (
        ("2026-11-28T00:51:43+0000", True),
        ("2026-11-28T00:51:43.120+00:00", False),
    ):
        root = tmp_path / str(beside)
        _state(root, "ozone-aaa", "ozone", "stopped", "2026-11-28T00:49:36+00:00", stopped)
        up = runorder.others_up(pd.DataFrame([run]), runorder.cluster_lifetimes(root))
        assert bool(up) is beside, (stopped, up)


def test_every_cluster_cell_waits_for_every_cluster_cells_tools():
    # hcfs (freon against ozone and hdfs) and teragen (a Hadoop client against the same
    # ozone): a teragen cell waiting for its Hadoop client alone let hcfs's hdfs cells run
    # while their shared ozone stayed up for it.
    from perfpost.glue.provisioning import cell_needs, cell_tools, provision_outcome
    from perfpost.plan.build import build_plan

    plan = build_plan(
        {
            "experiments": {
                "hcfs": {
                    "tool": "freon",
                    "cluster": "{storage}",
                    "params": {
                        "subcommand": "dfsg",
                        "dir": "/tmp",
                        "options": {"path": "{cluster.fs}"},
                    },
                    "axes": {"storage": ["ozone", "hdfs"]},
                },
                "teragen": {
                    "tool": "teragen",
                    "cluster": "ozone",
                    "params": {
                        "size": "1M",
                        "local": True,
                        "dir": "/tmp",
                        "output": "{cluster.fs}",
                    },
                },
                "plain": {"tool": "dd", "params": {"dir": "/tmp", "bs": "4k", "count": 1}},
            },
            "clusters": {
                "ozone": {"kind": "ozone", "buckets": ["vol1/bucket1"]},
                "hdfs": {"kind": "hdfs"},
            },
        }
    )
    hcfs = {str(x) for x in cell_tools(plan, "hcfs", ["localhost"], "storage=hdfs")}
    teragen = {str(x) for x in cell_tools(plan, "teragen", ["localhost"], "default")}
    assert hcfs == teragen  # both wait for the Hadoop client and for freon
    assert any("hadoop" in x for x in hcfs)
    assert any("ozone" in x for x in hcfs)
    assert cell_tools(plan, "plain", ["localhost"], "default") == []
    # ...but each needs only its own: teragen no freon, an hdfs cell no Ozone cluster. A
    # failed provisioning of one fails only the cells that need it.
    # (A cell is handed the installs it needs by their markers; their outcomes are these.)
    teragen_needs = {
        provision_outcome(m) for m in cell_needs(plan, "teragen", ["localhost"], "default")
    }
    hdfs_needs = {
        provision_outcome(m) for m in cell_needs(plan, "hcfs", ["localhost"], "storage=hdfs")
    }
    assert teragen_needs < teragen
    assert hdfs_needs < hcfs
    kinds = {
        n: {x.split("/")[-1].split("-")[0] for x in v}
        for n, v in {"teragen": teragen_needs, "hdfs": hdfs_needs}.items()
    }
    assert kinds == {"teragen": {"hadoop", "ozone"}, "hdfs": {"hdfs", "ozone"}}
