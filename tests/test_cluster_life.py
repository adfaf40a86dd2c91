"""An experiment's cluster steps, daemon metrics and ``until`` bound: checked against its
clusters before anything runs, and daemons' answers read as Ozone 2.2.0 serves them.

The Prometheus page below is an excerpt of a real Ozone 2.2.0 OM's ``/prom`` (its
``ratisevents`` label holds newlines) and datanode's; the sums are by hand.
"""

from __future__ import annotations

import copy

import pytest

from perfpost.errors import ConfigError
from perfpost.instrument.clustersteps import jmx_sum, met, prometheus_sum
from perfpost.plan.build import build_plan

PROM = """\
# TYPE om_metrics_num_key_commits counter
om_metrics_num_key_commits{context="dfs",ratisevents="2026-11-29 07:16:07,625+0000|Leader changed to om1
2026-11-29 07:16:07,665+0000|New peers [om1] added at term index (1, 0)
2026-11-29 07:16:07,666+0000|Ready to serve requests as the leader",hostname="vm"} 60
# TYPE om_metrics_num_key_commit_fails counter
om_metrics_num_key_commit_fails{context="dfs",hostname="vm"} 2
# TYPE csm_metrics_num_bytes_written_count counter
csm_metrics_num_bytes_written_count{context="dfs",raftgroupid="group-07A84797CFBD",hostname="vm"} 1024
csm_metrics_num_bytes_written_count{context="dfs",raftgroupid="group-11B00000CFBD",hostname="vm"} 3072
"""  # noqa: E501  (the daemon's own lines, as it served them)


def test_a_prometheus_sample_is_found_whatever_its_labels_hold():
    assert prometheus_sum(PROM, "om_metrics_num_key_commits") == 60
    assert prometheus_sum(PROM, "om_metrics_num_key_commit_fails") == 2
    # Summed over the samples, or the one whose labels are named.
    assert prometheus_sum(PROM, "csm_metrics_num_bytes_written_count") == 1024 + 3072
    got = prometheus_sum(
        PROM, 'csm_metrics_num_bytes_written_count{raftgroupid="group-11B00000CFBD"}'
    )
    assert got == 3072
    assert prometheus_sum(PROM, 'om_metrics_num_key_commits{context="other"}') is None
    assert prometheus_sum(PROM, "om_metrics_num_keys") is None


def test_a_jmx_attribute_is_summed_over_the_beans_its_pattern_names():
    beans = [
        {"name": "Hadoop:service=HddsDatanode,name=CSMMetrics-group-1", "NumWriteChunkOps": 3},
        {"name": "Hadoop:service=HddsDatanode,name=CSMMetrics-group-2", "NumWriteChunkOps": 4},
        {"name": "Hadoop:service=HddsDatanode,name=Other", "NumWriteChunkOps": 100},
        {"name": "Hadoop:service=HddsDatanode,name=CSMMetrics-group-3", "Flag": True},
    ]
    assert jmx_sum(beans, "Hadoop:service=HddsDatanode,name=CSMMetrics*", "NumWriteChunkOps") == 7
    assert jmx_sum(beans, "Hadoop:service=HddsDatanode,name=CSMMetrics*", "Flag") is None


@pytest.mark.parametrize(
    ("bound", "value", "expected"),
    [
        ({"below": 1}, 0, True),
        ({"below": 1}, 1, False),
        ({"above": 2000}, 2000, False),
        ({"above": 2000}, 2001, True),
        ({"equals": 0}, 0, True),
        ({"equals": 0}, 0.5, False),
    ],
)
def test_a_bound_is_met_strictly(bound, value, expected):
    assert met(bound, value) is expected


BASE = {
    "hosts": {"localhost": {}, "h2": {"address": "10.0.0.2"}},
    "clusters": {"oz": {"kind": "ozone", "roles": {"datanode": ["localhost", "h2"]}}},
    "experiments": {
        "e": {
            "tool": "wait",
            "cluster": "oz",
            "cluster_steps": [
                {"do": "kill", "role": "datanode", "instance": 1},
                {"do": "start", "role": "datanode", "instance": 1, "at": 2},
            ],
            "daemon_metrics": {
                "under": {
                    "role": "scm",
                    "jmx": "Hadoop:service=StorageContainerManager,name=ReplicationManagerMetrics",
                    "attribute": "UnderReplicatedContainers",
                    "as": "value",
                    "unit": "count",
                },
                "copied": {
                    "role": "datanode",
                    "prometheus": "measured_replicator_transferred_bytes",
                    "as": "rate",
                    "unit": "MB/s",
                },
            },
            "until": {"metric": "under", "below": 1},
        }
    },
}


def test_the_steps_make_every_cell_a_cluster_of_its_own_and_travel_in_its_spec():
    plan = build_plan(copy.deepcopy(BASE))
    exp = plan.experiments["e"]
    (cell,) = exp.cells
    (spec,) = exp.cluster_specs[cell.id]
    assert spec["fresh"] == "cell"  # what a step changed reaches no other cell
    life = plan.spec("e", cell.id, "localhost", 1).life
    assert [s["at"] for s in life["steps"]] == ["before", 2.0]
    assert life["metrics"]["copied"]["unit"] == "B/s"
    assert life["metrics"]["copied"]["factor"] == 1e6  # MB: 10^6 bytes
    assert life["until"] == {"metric": "under", "below": 1.0, "every": 1.0}


def test_offline_steps_travel_in_the_spec_each_instance_in_turn_and_the_method_says_so():
    cgscm = "{home}/bin/ozone vapor cgscm -n 4"
    cgdn = "{home}/bin/ozone vapor cgdn -n 4 --index {n} --datanodes {instances}"
    steps = [
        {"do": "run", "role": "scm", "at": "offline", "command": cgscm},
        {"do": "run", "role": "datanode", "instance": "all", "at": "offline", "command": cgdn},
    ]
    cfg = _with(cluster_steps=steps, tool="command", params={"run": "true"}, until="drop")
    del cfg["experiments"]["e"]["daemon_metrics"]
    plan = build_plan(cfg)
    (cell,) = plan.experiments["e"].cells
    life = plan.spec("e", cell.id, "localhost", 1).life
    assert [(s["do"], s["instance"], s["at"]) for s in life["steps"]] == [
        ("run", 0, "offline"),
        ("run", "all", "offline"),
    ]
    # The placeholders are the step's own, filled on the host, not the plan's.
    assert life["steps"][1]["command"] == steps[1]["command"]
    from perfpost.instrument.clustermethod import describe

    (said,) = describe(cfg["experiments"]["e"])
    assert said.startswith("Before each run, with every daemon of its cluster stopped")
    assert "scm 0 ran `{home}/bin/ozone vapor cgscm -n 4`; each datanode ran" in said


def _with(**changes) -> dict:
    cfg = copy.deepcopy(BASE)
    cfg["experiments"]["e"].update(changes)
    if cfg["experiments"]["e"].get("until") == "drop":
        del cfg["experiments"]["e"]["until"]
    return cfg


@pytest.mark.parametrize(
    ("changes", "key", "says"),
    [
        (
            {"cluster_steps": [{"do": "kill", "role": "namenode"}]},
            "experiments.e.cluster_steps[0].role",
            "has no role 'namenode'",
        ),
        (
            {"cluster_steps": [{"do": "kill", "role": "datanode", "instance": 2}]},
            "experiments.e.cluster_steps[0].instance",
            "has 2 datanode instance(s)",
        ),
        (
            {"cluster_steps": [{"do": "run", "role": "datanode"}]},
            "experiments.e.cluster_steps[0].command",
            "a run step names its command",
        ),
        (
            {"cluster_steps": [{"do": "kill", "role": "datanode", "command": "true"}]},
            "experiments.e.cluster_steps[0].command",
            "only a run step has a command (this one does kill)",
        ),
        (
            {"cluster_steps": [{"do": "kill", "role": "datanode", "at": "offline"}]},
            "experiments.e.cluster_steps[0].do",
            "with the cluster stopped a step can run or wipe, not kill",
        ),
        (
            {"cluster_steps": [{"do": "wipe", "role": "datanode", "instance": "each"}]},
            "experiments.e.cluster_steps[0].instance",
            "",
        ),
        ({"until": "drop"}, "experiments.e.until", "waits for an `until` bound"),
        ({"tool": "command", "params": {"run": "true"}}, "experiments.e.until", "is `wait`"),
        (
            {"until": {"metric": "nothing", "below": 1}},
            "experiments.e.until.metric",
            "not one of daemon_metrics",
        ),
        (
            {"until": {"metric": "under", "below": 1, "above": 3}},
            "experiments.e.until",
            "give one bound",
        ),
        (
            {
                "daemon_metrics": {
                    "under": {"role": "scm", "prometheus": "x", "as": "rate", "unit": "count"}
                },
            },
            "experiments.e.daemon_metrics.under.unit",
            "a rate's unit is a rate",
        ),
    ],
)
def test_a_mistake_is_named_by_its_key_before_anything_runs(changes, key, says):
    with pytest.raises(ConfigError) as got:
        build_plan(_with(**changes))
    assert key in str(got.value)
    assert says in str(got.value)


def test_a_waits_time_comes_first_then_the_daemons_metrics():
    from perfpost import tools
    from perfpost.tools.base import better, plot_metrics

    daemon = {"under": {"as": "value"}, "copied": {"as": "rate", "better": "higher"}}
    assert plot_metrics(tools.get("wait"), {}, daemon) == (
        "until_time",
        "under",
        "copied",
        "wall_time",
    )
    # Any other tool's own metrics first: a command's declared one, its wall time, then these.
    params = {"run": "x", "metrics": {"n": {"regex": "(?P<value>\\d+)", "unit": "count"}}}
    assert plot_metrics(tools.get("command"), params, daemon) == (
        "n",
        "wall_time",
        "under",
        "copied",
    )
    assert better(tools.get("wait"), {}, daemon) == {"copied": True}


class _Cell:
    """The part of a cell a timed step sees: its record and the moment its tools start."""

    def __init__(self) -> None:
        self.record: dict = {}
        self.began: list = []

    def when_measuring(self, fn) -> None:
        self.began.append(fn)

    def cluster_kind(self, name):
        return name


def test_a_timed_step_counts_its_seconds_from_the_hosts_start_not_perfposts_launch(
    monkeypatch,
):
    """The host's tools start 0.6 s after the companions did (a slow launch): a step `at`
    0.3 s runs 0.3 s after the host's line, not 0.3 s after the companions started."""
    import threading
    import time

    import perfpost.clusters.actions as actions
    from perfpost.instrument.clustersteps import ClusterLife

    done = []
    monkeypatch.setattr(
        actions, "act", lambda *a, **k: done.append(time.time()) or {"did": "killed"}
    )
    step = {"do": "kill", "role": "datanode", "instance": 0, "cluster": "ozone", "at": 0.3}
    life = ClusterLife({"steps": [step]})
    cell = _Cell()
    life.start(cell)
    time.sleep(0.6)
    line = time.time()
    for fn in cell.began:
        fn(line)
    time.sleep(0.6)
    life.stop(cell)
    (when,) = done
    assert 0.3 <= when - line < 0.5
    (entry,) = cell.record["cluster_steps"]
    assert entry["status"] == "done"
    # A step whose measured step never started is never done.
    life = ClusterLife({"steps": [step]})
    cell = _Cell()
    life.start(cell)
    threading.Timer(0.1, life.stop, args=(cell,)).start()
    time.sleep(0.6)
    assert len(done) == 1


@pytest.mark.parametrize(("until", "want"), [(None, 300 / 30), ("bound", 300 / 10)])
def test_a_rate_is_over_the_time_to_the_bound_in_a_run_that_waits_for_one(until, want):
    """300 bytes copied in a run of 30 s whose bound was met 10 s in (the 20 s after it a
    hold): 30 B/s over the work, not 10 over the wait."""
    from perfpost.instrument.clustersteps import ClusterLife

    metric = {"role": "datanode", "prometheus": "x", "as": "rate", "unit": "B/s", "factor": 1}
    life = ClusterLife(
        {
            "metrics": {"copied": metric},
            "until": {"metric": "copied", "above": 0, "every": 1.0} if until else {},
        }
    )
    cell = _Cell()
    cell.record = {"start_epoch": 100.0, "end_epoch": 130.0, "until": {}}
    life.first, life.last = {"copied": 0.0}, (131.5, {"copied": 300.0})
    life.reached = 110.0 if until else None
    metrics, why = life.collect(cell, {}, [])
    assert why is None
    assert {m.name: m.value for m in metrics}["copied"] == pytest.approx(want)
