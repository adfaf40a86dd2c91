"""A 3-datanode Ozone (RATIS/THREE) and a 3-DataNode HDFS that perfpost deploys across three
real hosts of the testbed (network namespaces, each its own address), as the posts' "3 nodes
are used for HDFS/Ozone", with a freon test against each, all through the workflow.

Each cluster is started once on h1, h2 and h3 by the first (only) cell that needs it and
stopped after it; no daemon is left on any host and the daemons' logs come back. While the
clusters are up, the cell's own `ozone` command (a wrapper around the provisioned one) asks
the live cluster, with the client configuration perfpost gave the cell, what it holds: the
SCM's datanodes and a key's replicas for Ozone, the NameNode's live DataNodes and the
files' replication for HDFS. Those answers come from the systems themselves, not from
perfpost's readiness checks.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
import yaml

from tests.e2e import make_checkout, notebook_of, quick, snakemake

pytestmark = pytest.mark.e2e

HOSTS = ["h1", "h2", "h3"]
N = 100  # objects each freon run writes

# The provisioned `ozone` launcher; after a freon run, what the live cluster says of what it
# wrote, asked with the client configuration perfpost wrote for the cell ($OZONE_CONF_DIR,
# $HADOOP_CONF_DIR). Its answers go to $CHECK_DIR on the host, not into freon's log. The
# wrapper is a build of the user's (a directory perfpost delivers to the host that runs it);
# the installs it calls reach it as $OZONE and $HDFS, paths here that perfpost delivers too.
WRAPPER = """#!/bin/sh
real=$OZONE/bin/ozone
[ "${1:-}" = freon ] || exec "$real" "$@"
"$real" "$@"; rc=$?
out=$CHECK_DIR; mkdir -p "$out"
ask() { java -Xmx256m -cp "$OZONE_CONF_DIR:$OZONE/lib/*" "$@"; }
case "$CHECK_KIND" in
ozone)
  ask org.apache.hadoop.ozone.shell.OzoneShell key info "$CHECK_KEY" \\
    >"$out/key.json" 2>"$out/key.err"
  c=$(sed -n 's/.*"containerID" : \\([0-9]*\\).*/\\1/p' "$out/key.json" | head -n 1)
  ask org.apache.hadoop.ozone.admin.OzoneAdmin container info "$c" --json \\
    >"$out/container.json" 2>"$out/container.err"
  ask org.apache.hadoop.ozone.admin.OzoneAdmin datanode list --json \\
    >"$out/datanodes.json" 2>"$out/datanodes.err"
  ;;
hdfs)
  $HDFS/bin/hdfs dfs -fs "$CHECK_FS" -ls -R "$CHECK_FS/$CHECK_PATH" >"$out/ls.txt" 2>"$out/ls.err"
  $HDFS/bin/hdfs dfsadmin -fs "$CHECK_FS" -report >"$out/report.txt" 2>"$out/report.err"
  ;;
esac
exit $rc
"""


def _cmdline(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def leftovers(marker: str) -> dict[int, str]:
    """Processes, on this machine or in any namespace, whose command line names ``marker``
    (every daemon's does: its configuration and temporary directories are under it)."""
    me = os.getpid()
    return {
        int(p): cmd
        for p in os.listdir("/proc")
        if p.isdigit() and int(p) != me and marker in (cmd := _cmdline(p))
    }


@pytest.fixture(scope="module")
def shared(testbed):
    """A path for the clusters' and the checks' directories: the same name on every host
    and here, each host's own (/var/tmp is private to a testbed host), made on the host."""
    if testbed.mode != "netns":
        pytest.skip("needs hosts with addresses of their own: network namespaces, as root")
    d = Path(tempfile.mkdtemp(prefix="perfpost-clusters-", dir="/var/tmp"))
    d.chmod(0o1777)
    yield d
    for pid in leftovers(str(d)):  # only if the run itself failed to stop them
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    shutil.rmtree(d, ignore_errors=True)


def on_host(testbed, host: str, script: str) -> str:
    """``script``'s output on a testbed host, over SSH."""
    from perfpost.run.remote import RemoteHost
    from tests.conftest import host_spec

    h = RemoteHost(host_spec(testbed, host))
    try:
        got = h.run(script, 60)
    finally:
        h.close()
    assert got.exit_code == 0, got.stderr
    return got.stdout


def host_file(testbed, host: str, path: Path) -> str:
    """A file's text on a host (over SSH), or here for localhost."""
    if host == "localhost":
        return path.read_text()
    return on_host(testbed, host, f"cat {path}")


@pytest.fixture(scope="module")
def cluster_run(testbed, ozone_cache, shared, tmp_path_factory):
    from perfpost.run import deploy

    cache, launcher = ozone_cache
    work = tmp_path_factory.mktemp("clusters-remote")
    ozone_home = launcher.resolve().parents[1]
    build = work / "ozone-checked"
    (build / "bin").mkdir(parents=True)
    (build / ".perfpost-build").write_text("the test's wrapper\n")
    wrapper = build / "bin" / "ozone"
    wrapper.write_text(WRAPPER)
    wrapper.chmod(0o755)
    installs = {"OZONE": str(ozone_home), "HDFS": str(cache / "hdfs-3.4.2")}
    inventory = yaml.safe_load(Path(testbed.inventory).read_text())
    common = {"tool": "freon", "repeats": 1, "timeout": 300}
    cfg = {
        **inventory,
        "tools": {
            "ozone": {"version": "2.2.0", "cache": str(cache)},
            "hadoop": {"cache": str(cache)},
        },
        "clusters": quick(
            {
                "ozone3": {
                    "kind": "ozone",
                    "roles": {"scm": "h1", "om": "h1", "datanode": HOSTS},
                    "dir": str(shared / "clusters"),
                    "buckets": ["vol1/bucket1"],
                },
                "hdfs3": {
                    "kind": "hdfs",
                    "roles": {"namenode": "h1", "datanode": HOSTS},
                    "dir": str(shared / "clusters"),
                },
            }
        ),
        "experiments": {
            # The client on a host of the cluster...
            "ozone-keys": {
                **common,
                "cluster": "ozone3",
                "hosts": ["h1"],
                "params": {
                    "subcommand": "ockg",
                    "dir": str(shared / "freon"),
                    "launcher": str(wrapper),
                    "options": {
                        "n": N,
                        "s": 4096,
                        "t": 4,
                        "v": "{cluster.volume}",
                        "b": "{cluster.bucket}",
                        "p": "{run}",
                    },
                    "env": {
                        **installs,
                        "CHECK_KIND": "ozone",
                        "CHECK_DIR": str(shared / "checks" / "ozone"),
                        "CHECK_KEY": "/{cluster.volume}/{cluster.bucket}/{run}/0",
                    },
                },
            },
            # ...and on this machine, outside it.
            "hdfs-files": {
                **common,
                "cluster": "hdfs3",
                "hosts": ["localhost"],
                "params": {
                    "subcommand": "dfsg",
                    "dir": str(shared / "freon"),
                    "launcher": str(wrapper),
                    "options": {"n": N, "s": 4096, "t": 4, "path": "{cluster.fs}/{run}"},
                    "env": {
                        **installs,
                        "CHECK_KIND": "hdfs",
                        "CHECK_DIR": str(shared / "checks" / "hdfs"),
                        "CHECK_FS": "{cluster.fs}",
                        "CHECK_PATH": "{run}",
                    },
                },
            },
        },
    }
    make_checkout(work, cfg)
    t0 = time.monotonic()
    try:
        result = snakemake(work, "--cores", "2", "report", timeout=1800)
    finally:
        # Should the run have left one up (it must not), it goes now, by perfpost's own way.
        left = deploy.stop_owned(work, why="the test ended")
    print(f"snakemake ran {time.monotonic() - t0:.0f} s")
    assert result.returncode == 0, result.stderr[-6000:]
    assert left == [], left
    return work, shared


def record(work: Path, experiment: str) -> tuple[Path, dict]:
    (path,) = sorted((work / "results" / experiment).glob("cells/*/*/r*/attempt-*/record.json"))
    return path, json.loads(path.read_text())


def starts(work: Path, name: str) -> list[Path]:
    """The starts of the cluster named ``name`` in the config."""
    found = []
    for state in sorted((work / "results" / "clusters").glob("*/start-*/state.json")):
        if json.loads(state.read_text())["name"] == name:
            found.append(state.parent)
    return found


def addresses(testbed) -> set[str]:
    return {testbed.host(h).address for h in HOSTS}


@pytest.mark.parametrize(
    ("experiment", "host", "field"),
    [("ozone-keys", "h1", "cluster.om"), ("hdfs-files", "localhost", "cluster.nn")],
)
def test_freon_wrote_every_object_into_the_cluster(cluster_run, testbed, experiment, host, field):
    work, _ = cluster_run
    path, rec = record(work, experiment)
    assert rec["status"] == "done", rec["reason"]
    assert rec["host"] == host
    # freon's own count, from its log as it came back from the host.
    log = (path.parent / "raw" / "freon.log").read_text()
    assert f"Successful executions: {N}" in log
    assert re.search(r"Failures: 0\s*$", log, re.M)
    metrics = {m["name"]: m["value"] for m in rec["metrics"]}
    assert metrics["successful_executions"] == N
    (held,) = rec["clusters"]
    assert held["start"] == 1
    # The client reached the cluster at h1's own address, not at loopback.
    assert rec["cluster_fields"][field].split(":")[0] == testbed.host("h1").address


def test_the_scm_has_three_healthy_datanodes_and_a_key_has_three_replicas(cluster_run, testbed):
    _, shared = cluster_run
    out = shared / "checks" / "ozone"  # on h1, which ran the cell

    def read(name: str) -> str:
        return host_file(testbed, "h1", out / name)

    nodes = json.loads(read("datanodes.json"))
    assert sorted(n["ipAddress"] for n in nodes) == sorted(addresses(testbed))
    assert {n["healthState"] for n in nodes} == {"HEALTHY"}
    key = json.loads(read("key.json"))
    assert key["dataSize"] == 4096
    repl = key["replicationConfig"]
    assert (repl["replicationType"], repl["replicationFactor"]) == ("RATIS", "THREE")
    # Its container: a replica on each host, as the SCM knows them from the datanodes.
    container = json.loads(read("container.json"))
    held = {r["datanodeDetails"]["ipAddress"] for r in container["replicas"]}
    assert held == addresses(testbed)
    assert container["pipeline"]["replicationConfig"]["replicationFactor"] == "THREE"


def test_the_namenode_has_three_live_datanodes_and_files_have_replication_3(cluster_run, testbed):
    _, shared = cluster_run
    out = shared / "checks" / "hdfs"  # here: the cell ran on localhost
    report = (out / "report.txt").read_text()
    assert "Live datanodes (3):" in report, report + (out / "report.err").read_text()
    names = re.findall(r"^Name: ([\d.]+):\d+", report, re.M)
    assert sorted(names) == sorted(addresses(testbed))
    # `-ls` lines: permissions, replication, owner, group, size, date, time, path.
    files = [line.split() for line in (out / "ls.txt").read_text().splitlines()]
    files = [f for f in files if f and f[0].startswith("-")]
    listing = (out / "ls.txt").read_text()[-2000:] + (out / "ls.err").read_text()[-3000:]
    assert len(files) == N, listing
    assert {f[1] for f in files} == {"3"}
    assert {f[4] for f in files} == {"4096"}


@pytest.mark.parametrize(
    ("name", "experiment", "roles"),
    [
        (
            "ozone3",
            "ozone-keys",
            {"h1": {"scm", "om", "datanode"}, "h2": {"datanode"}, "h3": {"datanode"}},
        ),
        (
            "hdfs3",
            "hdfs-files",
            {"h1": {"namenode", "datanode"}, "h2": {"datanode"}, "h3": {"datanode"}},
        ),
    ],
)
def test_each_cluster_ran_once_on_its_hosts_and_left_nothing_behind(
    cluster_run, testbed, name, experiment, roles
):
    work, shared = cluster_run
    (sdir,) = starts(work, name)  # started once, by its cell
    assert sdir.name == "start-1"
    state = json.loads((sdir / "state.json").read_text())
    assert state["status"] == "stopped"
    daemons = state["deployment"]["daemons"]
    got: dict[str, set[str]] = {}
    for d in daemons:
        got.setdefault(d["host"], set()).add(d["role"])
    assert got == roles
    # The post says where its system under test ran: three datanodes, one per host.
    post = notebook_of(work / "reports" / experiment / "index.md")
    assert "datanode on h1, h2, h3" in post
    # Each host ran the daemons from its own copy of the install, which perfpost delivered
    # (now or for an earlier test of this session), never from this machine's path.
    local = state["deployment"]["spec"].get("cache") or ""
    for h in HOSTS:
        home = state["deployment"]["home"][h]
        assert "/.cache/perfpost/" in home, home
        assert not local or not home.startswith(local), home
        on_host(testbed, h, f"test -f {home}/.perfpost-delivered && test -d {home}/lib")
    if experiment == "ozone-keys":  # the cell on h1 got the wrapper (a build) delivered
        (_, rec) = record(work, experiment)
        assert "ozone-checked" in {d["what"] for d in rec["delivered"]}
        assert "Delivered by perfpost over SSH" in post
        assert re.search(r"`ozone-checked-[0-9a-f]{12}` (to|on) h1", post), post
    if name == "ozone3":
        # The layout, from each datanode's own files: freon wrote N keys of 4 KiB, one block
        # each, and RATIS/THREE put a replica of every block on every datanode.
        for h in HOSTS:
            said = (
                f"datanode on {h}, its own files when the cluster stopped (after every cell it "
                f"served): {N} per-block files "
                "(`<id>.block`), 0 per-chunk files (`<id>_chunk_<n>`): FILE_PER_BLOCK"
            )
            assert said in state["deployment"]["notes"], state["deployment"]["notes"]
            assert said in post
    log = (sdir / "cluster.log").read_text()
    assert "ready after" in log
    assert "no other cell of this run needs it" in log
    # Every daemon's own log came back, per host, and says it started on that host.
    for d in daemons:
        copied = sdir / "logs" / d["host"] / Path(d["log"]).name
        assert copied.is_file(), copied
        assert re.search(
            r"STARTUP_MSG:\s+host = " + re.escape(d["host"]) + r"/", copied.read_text()
        )
    # No daemon left, here or in any host's namespaces, and no directory left on the hosts.
    assert leftovers(str(shared)) == {}
    for h in testbed.hosts:
        pids = subprocess.run(
            ["ip", "netns", "pids", h.netns], capture_output=True, text=True, check=True
        ).stdout.split()
        java = [p for p in pids if "java" in _cmdline(p)]
        assert java == [], (h.name, [_cmdline(p) for p in java])
    for h in HOSTS:  # each host's own directory for the clusters, now empty
        assert on_host(testbed, h, f"ls -A {shared}/clusters") == "", h


@pytest.mark.parametrize("experiment", ["ozone-keys", "hdfs-files"])
def test_every_datanode_host_was_sampled_while_freon_wrote(cluster_run, experiment):
    """Telemetry from the three datanodes' hosts, each its own network namespace: every host
    of the cluster was sampled during the run, its datanode followed by pid, and the hosts
    took in over their own interfaces at least the bytes freon wrote, as many times as the
    write waits for copies of them (a bound from the test's own numbers, read from each host's
    own /proc/net/dev): HDFS closes a file once one DataNode has it (under load a pipeline
    can lose one; a CI run's had), Ozone's Ratis once a majority, two of three, has it."""
    work, _ = cluster_run
    _, rec = record(work, experiment)
    hosts = rec["resources"]["hosts"]
    assert set(HOSTS) <= set(hosts), sorted(hosts)
    cluster = "ozone3" if experiment == "ozone-keys" else "hdfs3"
    copies = 2 if experiment == "ozone-keys" else 1
    received = 0.0
    for h in HOSTS:
        entry = hosts[h]
        assert f"{cluster} datanode" in " ".join(entry["roles"])
        procs = entry["window"]["processes"]
        (dn,) = [k for k in procs if k.startswith(f"{cluster}:datanode")]
        assert procs[dn]["cpu"] > 0
        assert procs[dn]["rss"] > 50 * (1 << 20)  # a JVM, not a shell
        nets = entry["window"]["nets"]
        # Every datanode took part: bytes came in over the host's own interface.
        assert sum(v.get("rx_total", 0.0) for n, v in nets.items() if n != "lo") > 0, (h, nets)
        # A client on the host itself (h1) reaches it over loopback.
        received += sum(v.get("rx_total", 0.0) for v in nets.values())
    assert received >= 0.9 * copies * N * 4096, received
    # The cell's own host comes first, as the client.
    own = rec["host"]
    assert hosts[own]["own"] is True
    assert "client" in hosts[own]["roles"]
