"""Where a cluster's release and directories are: the config's tools cache, a directory of
its own on each host."""

from perfpost.clusters.base import ClusterSpec, fill_id
from perfpost.clusters.deployment import Deployment
from perfpost.plan.build import build_plan


def plan_with_cache(cache: str):
    return build_plan(
        {
            "hosts": {h: {"address": f"10.0.0.{i}"} for i, h in enumerate(["h1", "h2"], 1)},
            "tools": {"hadoop": {"cache": cache}},
            "clusters": {
                "hdfs2": {"kind": "hdfs", "roles": {"namenode": "h1", "datanode": ["h1", "h2"]}}
            },
            "experiments": {
                "e": {
                    "tool": "freon",
                    "cluster": "hdfs2",
                    "params": {
                        "subcommand": "dfsg",
                        "dir": "/tmp/x",
                        "options": {"path": "{cluster.fs}"},
                    },
                }
            },
        }
    )


def test_a_cluster_runs_from_the_tools_cache_which_does_not_change_its_identity():
    one, other = plan_with_cache("/srv/cache-a"), plan_with_cache("/srv/cache-b")
    (spec_a,) = next(iter(one.experiments["e"].cluster_specs.values()))
    (spec_b,) = next(iter(other.experiments["e"].cluster_specs.values()))
    assert (spec_a["cache"], spec_b["cache"]) == ("/srv/cache-a", "/srv/cache-b")
    # The provision step makes the release there, where the cell starting the cluster looks.
    assert one.cluster_markers("e")[0].startswith("/srv/cache-a/hdfs-")
    assert ClusterSpec.from_dict(spec_a).ident() == ClusterSpec.from_dict(spec_b).ident()


def test_hosts_that_share_the_cluster_dir_get_directories_of_their_own():
    spec = ClusterSpec(
        name="c", kind="hdfs", version="3.4.2", roles={"namenode": ["h1"], "datanode": ["h1", "h2"]}
    )
    dep = Deployment(spec, {"h1": {"name": "h1"}, "h2": {"name": "h2"}})
    roots = {h: dep.root(h) for h in ("h1", "h2")}
    assert roots["h1"] != roots["h2"]
    assert roots["h2"] == f"/var/tmp/perfpost/perfpost-cluster-{spec.ident()}-h2"


def test_two_checkouts_running_one_configuration_keep_their_own_directories():
    spec = ClusterSpec(
        name="c",
        kind="hdfs",
        version="3.4.2",
        roles={"namenode": ["h1"], "datanode": ["h1"]},
        site={"hdfs-site": {"dfs.datanode.data.dir": "/ssd/ratis-{id}"}},
    )
    mine = Deployment(spec, {"h1": {"name": "h1"}}, tag="aaaaaa")
    theirs = Deployment(spec, {"h1": {"name": "h1"}}, tag="bbbbbb")
    assert mine.ident == theirs.ident  # the same configuration...
    assert mine.root("h1") != theirs.root("h1")  # ...in directories of its own
    assert mine.root("h1").endswith(f"perfpost-cluster-{spec.ident()}-aaaaaa-h1")
    filled = fill_id(spec.site, mine.scope)["hdfs-site"]["dfs.datanode.data.dir"]
    assert filled == f"/ssd/ratis-{spec.ident()}-aaaaaa"


def test_a_stop_signals_every_daemon_before_waiting_for_any(tmp_path):
    """Each daemon's shutdown hooks take seconds; stopping role after role added them up.
    Here three stand-in daemons (own process groups, as perfpost starts them) take 1 s to
    exit after TERM: every one must have been signalled before the first has exited."""
    import subprocess
    import threading
    import time

    from perfpost.clusters.base import Daemon
    from perfpost.clusters.lifecycle import stop
    from perfpost.run.hosts import open_host

    spec = ClusterSpec(
        name="c",
        kind="ozone",
        version="2.2.0",
        roles={"scm": ["localhost"], "om": ["localhost"], "datanode": ["localhost"]},
    )
    dep = Deployment(spec, {"localhost": {"name": "localhost"}}, opener=open_host)
    procs = []
    for role in ("scm", "datanode", "om"):
        mark = tmp_path / role
        script = (
            f'trap "date +%s.%N > {mark}.term; sleep 1; date +%s.%N > {mark}.exit; exit 0" TERM;'
            " while :; do sleep 0.05; done"
        )
        p = subprocess.Popen(["sh", "-c", script], start_new_session=True)
        procs.append(p)
        # Reaped as soon as it exits, as init reaps real daemons: a zombie would still
        # count as a member of its process group.
        threading.Thread(target=p.wait, daemon=True).start()
        dep.daemons.append(Daemon(role, "localhost", 0, pid=p.pid))
    time.sleep(0.3)  # the traps are set
    try:
        said = stop(dep, ("scm", "datanode", "om"))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait()
    terms = [float((tmp_path / f"{r}.term").read_text()) for r in ("scm", "datanode", "om")]
    exits = [float((tmp_path / f"{r}.exit").read_text()) for r in ("scm", "datanode", "om")]
    assert max(terms) < min(exits)
    assert said == ["stopped om, datanode, scm on localhost"]


def test_a_daemon_label_names_its_role_back_whatever_its_index():
    # Labels as the datanodes of a three-datanode cluster carry them (datanode, datanode-1,
    # datanode-2), bare and with the cluster before them as the sampler's resources do.
    from perfpost.clusters.base import Daemon, role_of

    labels = [Daemon("datanode", f"h{i}", i).label for i in range(3)]
    assert labels == ["datanode", "datanode-1", "datanode-2"]
    assert {role_of(x) for x in labels} == {"datanode"}
    assert role_of("ozone:datanode-12") == "ozone:datanode"
    assert role_of("yarn:resourcemanager") == "yarn:resourcemanager"
