"""Clusters in the config: which configuration a cell runs on, its id, and mistakes named
with their key. No daemon starts here (see test_clusters_e2e.py for real ones)."""

import copy
import json
import re
from pathlib import Path

import pytest
import yaml

from perfpost import glue
from perfpost.clusters.base import ClusterSpec
from perfpost.errors import ConfigError
from perfpost.glue import attempts
from perfpost.plan.build import build_plan

ROOT = Path(__file__).resolve().parents[1]

BASE = {
    "experiments": {
        "e": {
            "tool": "freon",
            "cluster": "{storage}",
            "params": {
                "subcommand": "dfsg",
                "dir": "/var/tmp/p",
                "options": {"path": "{cluster.fs}/{run}", "n": 10, "copy-buffer": "{buffer}"},
            },
            "axes": {"storage": ["ozone", "hdfs"], "buffer": {"default": None, "one": 1}},
            "repeats": 2,
        }
    },
    "clusters": {
        "ozone": {"kind": "ozone", "buckets": ["vol1/bucket1"]},
        "hdfs": {"kind": "hdfs", "hdfs-site": {"dfs.blocksize": "{blocksize}"}},
    },
}


def plan_of(change=None):
    cfg = copy.deepcopy(BASE)
    if change:
        change(cfg)
    return build_plan(cfg)


def specs(plan, exp, cell):
    return [ClusterSpec.from_dict(c) for c in plan.experiments[exp].cluster_specs[cell]]


def test_an_axis_chooses_the_cluster_and_the_buffer_axis_shares_it():
    def hdfs_plain(cfg):
        del cfg["clusters"]["hdfs"]["hdfs-site"]

    plan = plan_of(hdfs_plain)
    ozone = specs(plan, "e", "storage=ozone,buffer=default")
    assert [(s.name, s.kind) for s in ozone] == [("ozone", "ozone")]
    # The client's buffer is no setting of the cluster: both buffers run on one cluster.
    assert ozone[0].ident() == specs(plan, "e", "storage=ozone,buffer=one")[0].ident()
    hdfs = specs(plan, "e", "storage=hdfs,buffer=default")[0]
    assert hdfs.ident().startswith("hdfs-")
    assert hdfs.ident() != ozone[0].ident()
    # Every role on localhost by default, one host each.
    assert hdfs.roles == {"namenode": ["localhost"], "datanode": ["localhost"]}


def test_the_id_follows_the_configuration_not_its_name():
    a = ClusterSpec(name="a", kind="hdfs", version="3.4.2", roles={"namenode": ["x"]})
    b = ClusterSpec(name="b", kind="hdfs", version="3.4.2", roles={"namenode": ["x"]})
    c = ClusterSpec(
        name="a",
        kind="hdfs",
        version="3.4.2",
        roles={"namenode": ["x"]},
        site={"hdfs-site": {"dfs.blocksize": "1m"}},
    )
    d = ClusterSpec(name="a", kind="hdfs", version="3.4.2", roles={"namenode": ["x"]}, fresh="cell")
    assert a.ident() == b.ident() == d.ident()  # the name and the sharing policy are no setting
    assert a.ident() != c.ident()
    assert re.fullmatch(r"hdfs-[0-9a-f]{10}", a.ident())


def test_a_prefix_is_a_setting_of_the_daemons_it_starts_and_fills_its_log_directory():
    from perfpost.clusters.base import Daemon
    from perfpost.clusters.deployment import Deployment

    plain = ClusterSpec(name="a", kind="hdfs", version="3.4.2", roles={"namenode": ["x"]})
    # The id of a configuration without one is as it was before prefixes existed.
    assert "prefix" not in plain.identity()
    traced = ClusterSpec(
        name="a",
        kind="hdfs",
        version="3.4.2",
        roles={"namenode": ["x"], "datanode": ["x", "y"]},
        prefix={"datanode": "strace -f -c -o {logs}/{daemon}.strace", "all": "nice"},
    )
    assert traced.ident() != plain.ident()
    dep = Deployment(spec=traced, hosts={}, tag="t")
    dn = Daemon("datanode", "y", 1, log="/d/perfpost-cluster-x-y/logs/datanode-1.log")
    assert dep.prefix(dn) == "strace -f -c -o /d/perfpost-cluster-x-y/logs/datanode-1.strace"
    nn = Daemon("namenode", "x", 0, log="/d/logs/namenode-0.log")
    assert dep.prefix(nn) == "nice"  # a role not named gets `all`'s
    # A directory with a space stays one word.
    odd = Daemon("datanode", "y", 0, log="/my dir/logs/datanode-0.log")
    assert dep.prefix(odd) == "strace -f -c -o '/my dir/logs'/datanode.strace"
    # The post says what the daemons ran under.
    from perfpost.analysis.post import cluster_line

    line = cluster_line({**traced.to_dict(), "roles": traced.roles})
    assert "the datanodes started under `strace -f -c -o {logs}/{daemon}.strace`" in line
    assert "every daemon started under `nice`" in line
    # In a config, the daemon's own fields stay for its start; an axis fills its own.
    cfg = copy.deepcopy(BASE)
    cfg["experiments"]["e"]["axes"]["blocksize"] = ["1m"]
    cfg["clusters"]["hdfs"]["prefix"] = {"datanode": "strace -o {logs}/{daemon}-{blocksize}.txt"}
    plan = build_plan(cfg)
    specs = [s for ss in plan.experiments["e"].cluster_specs.values() for s in ss]
    (got,) = {s["prefix"]["datanode"] for s in specs if s["kind"] == "hdfs"}
    assert got == "strace -o {logs}/{daemon}-1m.txt"


def test_axis_values_fill_site_keys_and_id_stays_for_the_run():
    def with_axis(cfg):
        cfg["experiments"]["e"]["axes"]["blocksize"] = ["1m", "4m"]
        cfg["clusters"]["hdfs"]["hdfs-site"]["dfs.datanode.data.dir"] = "/d/{id}/{blocksize}"

    plan = plan_of(with_axis)
    one = specs(plan, "e", "storage=hdfs,buffer=default,blocksize=1m")[0]
    four = specs(plan, "e", "storage=hdfs,buffer=default,blocksize=4m")[0]
    assert one.site["hdfs-site"] == {"dfs.blocksize": "1m", "dfs.datanode.data.dir": "/d/{id}/1m"}
    assert four.site["hdfs-site"]["dfs.blocksize"] == "4m"
    assert one.ident() != four.ident()


def test_a_changed_cluster_setting_is_another_measurement():
    def block(size):
        def change(cfg):
            cfg["experiments"]["e"]["axes"]["blocksize"] = [size]

        return change

    cell = "storage=hdfs,buffer=default,blocksize=1m"
    m1 = plan_of(block("1m")).spec("e", cell, "localhost", 1).measurement_id()
    plan = plan_of(block("1m"))
    plan.experiments["e"].cluster_specs[cell][0]["site"]["hdfs-site"]["dfs.blocksize"] = "2m"
    assert plan.spec("e", cell, "localhost", 1).measurement_id() != m1


@pytest.mark.parametrize(
    ("change", "where", "said"),
    [
        (
            lambda c: c["experiments"]["e"]["axes"].update(storage=["ozone", "s3"]),
            "experiments.e[storage=s3,buffer=default,blocksize=1m].cluster",
            "no cluster 's3'",
        ),
        (
            lambda c: c["clusters"]["ozone"].update(roles={"scm": ["localhost", "h2"]}),
            "clusters.ozone.roles.scm",
            "one SCM, or a ring of three or more (SCM HA); two cannot lose either",
        ),
        (
            lambda c: c["clusters"]["ozone"].update(roles={"gateway": "localhost"}),
            "clusters.ozone.roles.gateway",
            "ozone has no role 'gateway'",
        ),
        (
            lambda c: c["clusters"]["ozone"].update(roles={"datanode": ["nowhere"]}),
            "clusters.ozone.roles.datanode",
            "unknown host 'nowhere'",
        ),
        (
            lambda c: c["experiments"]["e"]["params"]["options"].update(path="{cluster.uri}"),
            "experiments.e[storage=ozone,buffer=default,blocksize=1m].params",
            "a ozone cluster has no field 'uri'",
        ),
        (
            lambda c: c["experiments"]["e"]["params"]["options"].update(path="{yarn.rm}"),
            "experiments.e[storage=ozone,buffer=default,blocksize=1m].params",
            "{yarn.rm} names no cluster of this cell",
        ),
        (
            lambda c: c["experiments"]["e"]["params"]["options"].update(path="{cluster.s3}"),
            "experiments.e[storage=ozone,buffer=default,blocksize=1m].params",
            "{cluster.s3}: needs 1 or more s3g host(s) in the cluster 'ozone', which has 0 "
            "(clusters.ozone.roles.s3g)",
        ),
        (
            lambda c: c["experiments"]["e"]["params"]["options"].update(
                path="{cluster.om_service}"
            ),
            "experiments.e[storage=ozone,buffer=default,blocksize=1m].params",
            "{cluster.om_service}: needs 3 or more om host(s) in the cluster 'ozone', which has 1",
        ),
        (
            lambda c: c["clusters"]["ozone"].update(roles={"om": ["localhost", "h2"]}),
            "clusters.ozone.roles.om",
            "one OM, or a ring of three or more (OM HA); two cannot lose either",
        ),
        (
            lambda c: c["clusters"]["ozone"].update(roles={"s3g": ["localhost", "h2"]}),
            "clusters.ozone.roles.s3g",
            "needs 0 to 1 host(s), got 2",
        ),
        (
            lambda c: c["clusters"]["hdfs"].update(buckets=["vol1/bucket1"]),
            "clusters.hdfs.buckets",
            "only Ozone has buckets",
        ),
        (
            lambda c: c["clusters"]["hdfs"].update(jvm={"scm": "-Xmx1g"}),
            "clusters.hdfs.jvm.scm",
            "hdfs has no role 'scm'",
        ),
        (
            lambda c: c["clusters"]["hdfs"].update(prefix={"om": "strace -f -c"}),
            "clusters.hdfs.prefix.om",
            "hdfs has no role 'om'",
        ),
    ],
)
def test_mistakes_name_their_key(change, where, said):
    def fix_blocksize(cfg):
        cfg["experiments"]["e"]["axes"]["blocksize"] = ["1m"]
        change(cfg)

    with pytest.raises(ConfigError) as e:
        plan_of(fix_blocksize)
    assert e.value.where == where
    assert said in str(e.value)


def test_an_s3_gateway_is_a_role_only_where_given_and_gives_its_fields():
    # An Ozone without one plans as before, its roles the three it always had; one with it
    # names the gateway's host, and {cluster.s3} plans.
    def ozone_only(cfg):
        del cfg["clusters"]["hdfs"]
        cfg["experiments"]["e"]["axes"]["storage"] = ["ozone"]

    def gateway(cfg):
        ozone_only(cfg)
        cfg["clusters"]["ozone"]["roles"] = {"s3g": "localhost"}
        cfg["experiments"]["e"]["params"]["options"].update(path="{cluster.s3}")

    cell = "storage=ozone,buffer=default"
    (before,) = specs(plan_of(ozone_only), "e", cell)
    assert sorted(before.roles) == ["datanode", "om", "scm"]
    (spec,) = specs(plan_of(gateway), "e", cell)
    assert spec.roles == {**before.roles, "s3g": ["localhost"]}
    assert spec.ident() != before.ident()  # another configuration: another cluster


def test_a_commands_own_braces_beside_cluster_fields_plan_and_stay_one_brace():
    # A shell function in a command (f() {{ ...; }}): rendering the axes makes each {{ the
    # command's own brace; the cluster fields beside it are still found and checked.
    def command(c):
        c["experiments"]["e"] = {
            "tool": "command",
            "cluster": "hdfs",
            "params": {"run": "f() {{ ls {hdfs.fs}/{files}; }}; f", "dir": "/var/tmp/p"},
            "axes": {"files": [1]},
        }
        c["clusters"]["hdfs"].pop("hdfs-site")

    plan = plan_of(command)
    (cell,) = plan.experiments["e"].resolved
    assert plan.experiments["e"].resolved[cell]["run"] == "f() { ls {hdfs.fs}/1; }; f"
    assert [s.kind for s in specs(plan, "e", cell)] == ["hdfs"]
    with pytest.raises(ConfigError, match="a hdfs cluster has no field 'nope'"):
        plan_of(
            lambda c: (
                command(c),
                c["experiments"]["e"]["params"].update(run="f() {{ ls {hdfs.nope}; }}; f"),
            )
        )


def test_an_unknown_kind_is_refused_by_the_schema():
    def bad(cfg):
        cfg["clusters"]["hdfs"] = {"kind": "cassandra"}

    with pytest.raises(ConfigError) as e:
        plan_of(bad)
    assert "clusters.hdfs.kind" in str(e.value)


def test_cells_of_one_configuration_come_before_the_next_ones():
    def plain(cfg):
        del cfg["clusters"]["hdfs"]["hdfs-site"]

    plan = plan_of(plain)
    priority = glue.cell_priority(plan)

    class W:
        def __init__(self, cell, experiment="e"):
            self.experiment, self.cell, self.repeat = experiment, cell, "1"

    # ozone is the first configuration of the plan, hdfs the second (of 2): every ozone cell
    # before every hdfs cell.
    ozone = priority(W("storage=ozone,buffer=one"))
    hdfs = priority(W("storage=hdfs,buffer=one"))
    assert ozone > hdfs
    assert ozone == priority(W("storage=ozone,buffer=default"))


def test_every_cell_against_a_cluster_comes_before_any_cell_without_one():
    # An interleaved dd experiment beside one on clusters: while a cluster is up its cells
    # are the highest ready jobs, so no dd run measures beside it (the quiet host).
    def both(cfg):
        del cfg["clusters"]["hdfs"]["hdfs-site"]
        cfg["experiments"]["d"] = {
            "tool": "dd",
            "params": {"dir": "/var/tmp/p", "bs": "{bs}", "count": 1},
            "axes": {"bs": ["4k", "1M"]},
            "repeats": 3,
            "order": "interleaved",
        }

    plan = plan_of(both)
    priority = glue.cell_priority(plan)

    class W:
        def __init__(self, experiment, cell, repeat):
            self.experiment, self.cell, self.repeat = experiment, cell, str(repeat)

    lowest_cluster = min(
        priority(W("e", c.id, r)) for c in plan.experiments["e"].cells for r in (1, 2)
    )
    highest_plain = max(
        priority(W("d", c.id, r)) for c in plan.experiments["d"].cells for r in (1, 2, 3)
    )
    assert lowest_cluster > highest_plain


def _interleaved(cfg):
    del cfg["clusters"]["hdfs"]["hdfs-site"]
    cfg["experiments"]["e"]["order"] = "interleaved"


def _daemons(plan):
    """Every daemon of every configuration the experiment compares, counted by hand."""
    seen = {}
    for cell_specs in plan.experiments["e"].cluster_specs.values():
        for c in cell_specs:
            seen[ClusterSpec.from_dict(c).ident()] = c
    return sum(len(hosts) for c in seen.values() for hosts in c["roles"].values())


def _shared(cfg):
    _interleaved(cfg)
    for c in cfg["clusters"].values():
        c["shared"] = True


def test_interleaved_clusters_run_one_at_a_time_unless_shared(monkeypatch):
    from perfpost.plan import clusters as pconfig

    monkeypatch.setattr(pconfig, "_memory_here", lambda: 64 * 2**30)
    exp = plan_of(_interleaved).experiments["e"]
    assert exp.cluster_order["mode"] == "one at a time"
    assert "`shared: true`" in exp.cluster_order["why"]
    assert {c["fresh"] for s in exp.cluster_specs.values() for c in s} == {"configuration"}
    priority = glue.cell_priority(plan_of(_interleaved))

    class W:
        def __init__(self, cell, repeat):
            self.experiment, self.cell, self.repeat = "e", cell, str(repeat)

    # Every run of the first configuration before any of the second; within each, A B B A.
    runs = [(c.id, r) for c in exp.cells for r in (1, 2)]
    made = sorted(runs, key=lambda x: -priority(W(*x)))
    ozone = [x for x in made if x[0].startswith("storage=ozone")]
    assert made[: len(ozone)] == ozone
    assert [c for c, _ in ozone] == [
        "storage=ozone,buffer=default",
        "storage=ozone,buffer=one",
        "storage=ozone,buffer=one",
        "storage=ozone,buffer=default",
    ]


@pytest.mark.parametrize(("gib", "mode"), [(64, "side by side"), (2, "restarts")])
def test_interleaved_shared_clusters_are_up_side_by_side_where_memory_allows(
    monkeypatch, gib, mode
):
    from perfpost.plan import clusters as pconfig

    monkeypatch.setattr(pconfig, "_memory_here", lambda: gib * 2**30)
    plan = plan_of(_shared)
    exp = plan.experiments["e"]
    daemons = _daemons(plan)
    # 512 MiB of heap and 256 MiB beside it per daemon, all on localhost, against half of it.
    need = daemons * (512 + 256) * 2**20
    assert (need > gib * 2**30 / 2) == (mode == "restarts")
    assert exp.cluster_order["mode"] == mode
    assert exp.cluster_order["configs"] == 2
    assert f"{need / 2**30:.1f} GiB" in exp.cluster_order["why"]
    fresh = {c["fresh"] for s in exp.cluster_specs.values() for c in s}
    assert fresh == ({"cell"} if mode == "restarts" else {"configuration"})
    # Either way a cluster's id is its configuration's: restarts change when, not what.
    other = plan_of(_shared_plain)
    ids = {ClusterSpec.from_dict(c).ident() for s in exp.cluster_specs.values() for c in s}
    assert ids == {
        ClusterSpec.from_dict(c).ident()
        for s in other.experiments["e"].cluster_specs.values()
        for c in s
    }
    assert json.loads(glue.experiment_json(plan, "e"))["cluster_order"]["mode"] == mode


def _shared_plain(cfg):
    cfg["clusters"]["hdfs"].pop("hdfs-site")
    for c in cfg["clusters"].values():
        c["shared"] = True


def test_clusters_fresh_for_every_cell_are_alternated_with_restarts():
    def fresh(cfg):
        _interleaved(cfg)
        for c in cfg["clusters"].values():
            c["fresh"] = "cell"

    exp = plan_of(fresh).experiments["e"]
    assert exp.cluster_order == {
        "mode": "restarts",
        "why": "its clusters are `fresh: cell`",
        "configs": 2,
    }


def test_a_remote_host_s_memory_is_said_to_be_unknown():
    from perfpost.plan import order

    spec = {"roles": {"namenode": ["h1"], "datanode": ["h1", "h2"]}, "jvm": {"all": "-Xmx1g"}}
    mode, why = order.cluster_mode([spec], lambda h: None)
    assert mode == "side by side"
    # h1: two daemons of 1 GiB heap (the config's -Xmx wins) and 256 MiB beside each.
    assert why.startswith("their daemons take about 2.5 GiB on h1")
    assert "the memory of h1, h2 was not known" in why


def test_cells_without_clusters_have_no_priority_function():
    plan = build_plan(
        {
            "experiments": {
                "d": {"tool": "dd", "params": {"dir": "/var/tmp/p", "bs": "4k", "count": 1}}
            }
        }
    )
    assert glue.cell_priority(plan) == 0
    assert plan.experiments["d"].cluster_specs == {}


def test_the_pending_cells_of_each_cluster_are_its_missing_records(tmp_path, monkeypatch):
    def plain(cfg):
        del cfg["clusters"]["hdfs"]["hdfs-site"]

    monkeypatch.chdir(tmp_path)
    plan = plan_of(plain)
    pending = attempts.cluster_pending(plan)
    ozone = specs(plan, "e", "storage=ozone,buffer=one")[0].ident()
    hdfs = specs(plan, "e", "storage=hdfs,buffer=one")[0].ident()
    # 2 buffers x 2 repeats on each cluster, none run yet.
    assert len(pending[ozone]) == len(pending[hdfs]) == 4
    assert all("/storage=ozone," in p for p in pending[ozone])


def test_the_documented_cluster_example_is_a_valid_config():
    text = (ROOT / "docs" / "clusters.md").read_text()
    section = text.split("## Clusters perfpost deploys", 1)[1]
    block = section.split("```yaml", 1)[1].split("```", 1)[0]
    assert len(block.strip().splitlines()) < 30  # the "under 30 lines"
    cfg = yaml.safe_load(block)
    cfg["hosts"] = {
        h: {"address": f"10.0.0.{i}"} for i, h in enumerate(["nn1", "dn1", "dn2", "dn3"])
    }
    plan = build_plan(cfg)
    cells = plan.experiments["teragen"].cluster_specs
    kinds = {c[0]["name"]: c[0]["kind"] for c in cells.values()}
    assert kinds == {"hdfs": "hdfs", "ozone": "ozone", "ozone-hdd": "ozone"}
    hdfs = next(c[0] for c in cells.values() if c[0]["name"] == "hdfs")
    assert hdfs["roles"] == {"namenode": ["nn1"], "datanode": ["dn1", "dn2", "dn3"]}


def _lab_crosscheck(change=None):
    cfg = yaml.safe_load((ROOT / "config/examples/lab-teragen-crosscheck.yaml").read_text())
    cfg["hosts"] = {
        h: {"address": f"10.0.0.{i}", **cfg["hosts"].get(h, {})}
        for i, h in enumerate(["h1", "h2", "h3", "h4", "h5", "h6"], start=1)
    }
    if change:
        change(cfg)
    plan = build_plan(cfg)
    cell = "storage=ozone"
    return plan.spec("lab-teragen", cell, "h4", 1).params["defines"]


def test_a_job_on_nodemanagers_of_other_hosts_stages_on_the_cells_hdfs():
    # YARN's default staging directory is on the client's own disk, which the NodeManagers
    # on h5 and h6 cannot read: the job's files go to the cell's HDFS (named `hdfs`).
    defines = _lab_crosscheck()
    assert defines["fs.defaultFS"] == "{hdfs.fs}"
    assert defines["yarn.app.mapreduce.am.staging-dir"] == "{hdfs.fs}/tmp/perfpost-staging"
    assert defines["mapreduce.job.maps"] == 6


@pytest.mark.parametrize(
    ("change", "why"),
    [
        # The user's own choice wins.
        (
            lambda c: c["experiments"]["lab-teragen"]["params"]["defines"].update(
                {"yarn.app.mapreduce.am.staging-dir": "hdfs://nn:8020/staging"}
            ),
            "given",
        ),
        # No HDFS in the cell: nothing perfpost could choose.
        (
            lambda c: c["experiments"]["lab-teragen"].update(
                cluster=["yarn", "ozone"], axes={"storage": {"ozone": "{ozone.fs}/bench"}}
            ),
            "no hdfs",
        ),
    ],
)
def test_the_staging_rule_leaves_other_jobs_alone(change, why):
    defines = _lab_crosscheck(change)
    assert "fs.defaultFS" not in defines, why
    if why != "given":
        assert "yarn.app.mapreduce.am.staging-dir" not in defines, why


def test_two_ozones_beside_one_yarn_run_one_after_the_other():
    # teragen on one YARN into two Ozone configurations chosen by an axis: the YARN is both
    # cells' first cluster, yet the cells of one Ozone all come before any of the other's,
    # so the first Ozone is stopped (after its last cell) before the second starts.
    def yarn_and_two_ozones(cfg):
        cfg["experiments"] = {
            "t": {
                "tool": "teragen",
                "cluster": ["yarn", "{layout}"],
                "params": {
                    "size": "1M",
                    "output": "ofs://om/vol1/bucket1",
                    "resourcemanager": "http://{yarn.web}",
                    "dir": "/var/tmp/p",
                },
                "axes": {"layout": {"block": "ozone", "chunk": "ozone-chunk"}},
                "repeats": 3,
            }
        }
        cfg["clusters"] = {
            "yarn": {"kind": "yarn"},
            "ozone": {"kind": "ozone", "buckets": ["vol1/bucket1"]},
            "ozone-chunk": {
                "kind": "ozone",
                "buckets": ["vol1/bucket1"],
                "ozone-site": {"ozone.scm.container.layout": "FILE_PER_CHUNK"},
            },
        }

    plan = plan_of(yarn_and_two_ozones)
    priority = glue.cell_priority(plan)

    class W:
        def __init__(self, cell, repeat):
            self.experiment, self.cell, self.repeat = "t", cell, str(repeat)

    block = [priority(W("layout=block", r)) for r in (1, 2, 3)]
    chunk = [priority(W("layout=chunk", r)) for r in (1, 2, 3)]
    assert min(block) > max(chunk), (block, chunk)


def test_a_key_for_one_side_alone_reaches_that_side_and_a_client_key_for_daemons_is_refused():
    def sided(cfg):
        hdfs = cfg["clusters"]["hdfs"]
        hdfs["hdfs-site"] = {"dfs.checksum.type": "NULL"}
        hdfs["daemons_only"] = {"hdfs-site": {"dfs.datanode.handler.count": 7}}
        hdfs["clients_only"] = {"hdfs-site": {"dfs.client.socket-timeout": 45000}}

    (spec,) = specs(plan_of(sided), "e", "storage=hdfs,buffer=default")
    assert spec.side_site("daemons") == {
        "hdfs-site": {"dfs.checksum.type": "NULL", "dfs.datanode.handler.count": "7"}
    }
    assert spec.side_site("clients") == {
        "hdfs-site": {"dfs.checksum.type": "NULL", "dfs.client.socket-timeout": "45000"}
    }

    # A side's key is part of what the configuration is.
    def both(cfg):
        cfg["clusters"]["hdfs"]["hdfs-site"] = {"dfs.checksum.type": "NULL"}

    (plain,) = specs(plan_of(both), "e", "storage=hdfs,buffer=default")
    assert spec.ident() != plain.ident()

    for key in ("dfs.checksum.type", "dfs.client.read.shortcircuit", "fs.trash.interval"):

        def to_daemons(cfg, key=key):
            del cfg["clusters"]["hdfs"]["hdfs-site"]
            cfg["clusters"]["hdfs"]["daemons_only"] = {"hdfs-site": {key: "x"}}

        with pytest.raises(ConfigError, match=rf"clusters\.hdfs\.daemons_only\.hdfs-site\.{key}"):
            plan_of(to_daemons)


def test_the_changed_keys_say_the_side_each_reached():
    from perfpost.clusters.base import changed_keys

    site = {"hdfs-site": {"dfs.checksum.type": "NULL", "dfs.datanode.handler.count": "7"}}
    sides = {
        "daemons": {"hdfs-site": {"dfs.datanode.handler.count": "7"}},
        "clients": {"hdfs-site": {"dfs.client.socket-timeout": "45000"}},
    }
    defaults = {
        "dfs.checksum.type": "CRC32C",
        "dfs.datanode.handler.count": "10",
        "dfs.client.socket-timeout": "60000",
    }
    got = {(k["key"], k.get("side")) for k in changed_keys(site, defaults, sides)}
    assert got == {
        ("dfs.checksum.type", None),
        ("dfs.datanode.handler.count", "daemons"),
        ("dfs.client.socket-timeout", "clients"),
    }


def test_two_ozones_beside_one_yarn_are_up_one_after_the_other_across_experiments():
    # Teragen-like cells on YARN with Ozone A or B (an axis), and an experiment on Ozone A
    # alone declared after them: every run on A, in either experiment, before any on B.
    dfsg = {"subcommand": "dfsg", "dir": "/var/tmp/p", "options": {"n": 10}}
    cfg = {
        "experiments": {
            "t": {"tool": "freon", "cluster": ["yarn", "{storage}"], "params": dfsg,
                  "axes": {"storage": ["oza", "ozb"]}, "repeats": 2},
            "h": {"tool": "freon", "cluster": "oza", "params": dfsg, "repeats": 2},
        },
        "clusters": {
            "oza": {"kind": "ozone"},
            "ozb": {"kind": "ozone", "ozone-site": {"ozone.scm.container.size": "1GB"}},
            "yarn": {"kind": "yarn"},
        },
    }  # fmt: skip
    plan = build_plan(cfg)
    priority = glue.cell_priority(plan)

    class W:
        def __init__(self, experiment, cell, repeat):
            self.experiment, self.cell, self.repeat = experiment, cell, str(repeat)

    runs = [(e, c.id, r) for e, x in plan.experiments.items() for c in x.cells for r in (1, 2)]
    made = sorted(runs, key=lambda x: -priority(W(*x)))
    on_b = [i for i, (e, c, _) in enumerate(made) if c == "storage=ozb"]
    assert on_b == [4, 5]  # the last two of six
    # Ozone A alone first, then YARN with A: YARN, which B needs next, is not up idle.
    assert [(e, c) for e, c, _ in made[:4]] == [("h", "default")] * 2 + [("t", "storage=oza")] * 2


def test_a_rounds_decision_comes_before_any_cell_of_the_next_configuration():
    # With a precision target, configuration A's later runs exist only once its round is
    # decided: a decision below the cells' priorities waited behind B's ready cells, and A
    # stayed up (its undecided runs pending) while B started. Every cell of a plan of two
    # configurations, up to its largest number of runs, is below the steps' priority.
    def precise(cfg):
        del cfg["clusters"]["hdfs"]["hdfs-site"]
        cfg["experiments"]["e"]["repeats"] = {"min": 3, "max": 20, "precision": "5%"}

    plan = plan_of(precise)
    priority = glue.cell_priority(plan)

    class W:
        def __init__(self, cell, repeat):
            self.experiment, self.cell, self.repeat = "e", cell, str(repeat)

    cells = [c.id for c in plan.experiments["e"].cells]
    highest = max(priority(W(c, r)) for c in cells for r in range(1, 21))
    assert highest > glue.CLUSTER_PRIORITY  # cells on clusters, ranked by configuration
    assert glue.STEP_PRIORITY > highest
    rules = (ROOT / "workflow" / "rules" / "cells.smk").read_text()
    assert rules.count("priority: glue.STEP_PRIORITY") == 2  # the round and provisioning


def test_a_job_on_nodemanagers_of_its_own_host_stages_in_the_runs_own_directory():
    # Every NodeManager on the client's host: its own disk will do, but a directory of the
    # run's own. Hadoop's JobSubmissionFiles refuses a staging directory an earlier job left
    # that is owned by another name than the submitter's ("The ownership on the staging
    # directory ... is not as expected"), which a local disk's is whenever HADOOP_USER_NAME
    # is not the login: the second teragen on a single-host YARN failed so.
    defines = _lab_crosscheck(lambda c: c["clusters"]["yarn"]["roles"].update(nodemanager=["h4"]))
    assert "fs.defaultFS" not in defines
    assert defines["yarn.app.mapreduce.am.staging-dir"] == "{work}/staging"
