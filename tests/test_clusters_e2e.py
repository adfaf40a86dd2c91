"""A cluster perfpost deploys, over the life of real runs: a real HDFS 3.4.2 (NameNode and
DataNode on loopback ports) started by the first cell that needs it, shared one cell at a
time, stopped after the last; a cluster that cannot start fails its cells with the daemon's
own reason; a run killed, interrupted or terminated leaves no daemon behind.

Every cluster of these tests lives under the test's own directory (``dir:``), so its daemons
are found by that path in their command lines, and killed by it should a test fail.
"""

from __future__ import annotations

import fcntl
import hashlib
import itertools
import json
import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import FAULTS, env_with_venv, snakemake_bin
from tests.e2e import QUICK_DAEMONS, make_checkout, notebook_of, snakemake

pytestmark = pytest.mark.e2e

HDFS_VERSION = "3.4.2"
OZONE_VERSION = "2.2.0"  # freon's: the HDFS client of the cells
# Seconds one snakemake run may take: a cluster start is 15-50 s and a freon cell 15-40 s on
# two busy cores.
RUN_TIMEOUT = 1500.0


# --------------------------------------------------------------------------- helpers


def daemons(under: Path) -> dict[int, str]:
    """Every process whose command line names a directory under ``under``: the daemons of
    this test's clusters (and nothing of another test's or another run's)."""
    mark = str(under).encode()
    out = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            cmdline = Path(entry.path, "cmdline").read_bytes()
        except OSError:
            continue
        if mark in cmdline:
            out[int(entry.name)] = cmdline.replace(b"\0", b" ").decode(errors="replace")
    return out


def java_daemons(under: Path) -> dict[int, str]:
    """The NameNodes and DataNodes among :func:`daemons`."""
    return {
        pid: cmd
        for pid, cmd in daemons(under).items()
        if re.search(r"\.(NameNode|DataNode)\b", cmd)
    }


def wait_for(check, timeout: float, what: str, every: float = 0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(every)
    pytest.fail(f"{what} did not happen within {timeout:g} s")


@pytest.fixture
def cluster_dir(tmp_path):
    """Where this test's clusters live; whatever still runs there at the end is killed."""
    d = tmp_path / "clusters"
    d.mkdir()
    yield d
    left = daemons(d)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert not left, f"daemons left (now killed): {left}"


def hdfs_config(cache: Path, cluster_dir: Path, scratch: Path) -> dict:
    """The issue's example: freon dfsg against a perfpost HDFS, two buffers, two repeats."""
    return {
        # Two cells could run at once on this host; only the cluster keeps them apart.
        "hosts": {"localhost": {"max_parallel_cells": 2}},
        "tools": {
            "ozone": {"version": OZONE_VERSION, "cache": str(cache)},
            "hadoop": {"version": HDFS_VERSION, "cache": str(cache)},
        },
        "experiments": {
            "hcfs": {
                "tool": "freon",
                "cluster": "{storage}",
                "params": {
                    "subcommand": "dfsg",
                    "dir": str(scratch),
                    "env": {"HADOOP_USER_NAME": "perfpost"},
                    "options": {
                        "path": "{cluster.fs}/{run}",
                        "n": 20,
                        "s": 10240,
                        "t": 2,
                        "copy-buffer": "{buffer}",
                    },
                },
                "axes": {"storage": ["hdfs"], "buffer": {"default": None, "one-byte": 1}},
                "repeats": 2,
            }
        },
        "clusters": {
            "hdfs": {
                "kind": "hdfs",
                "dir": str(cluster_dir),
                "jvm": QUICK_DAEMONS,
                # Read by the HDFS client, not the daemons: it must reach the client.
                "hdfs-site": {"dfs.checksum.type": "NULL"},
                # One key for each side alone.
                "daemons_only": {"hdfs-site": {"dfs.datanode.handler.count": "7"}},
                "clients_only": {"hdfs-site": {"dfs.client.socket-timeout": "45000"}},
            }
        },
    }


def records(work: Path, experiment: str = "*") -> dict[str, dict]:
    return {
        str(p.relative_to(work)): json.loads(p.read_text())
        for p in sorted(work.glob(f"results/{experiment}/cells/*/*/r*/attempt-*/record.json"))
    }


def digests(work: Path) -> dict[str, str]:
    return {
        str(p.relative_to(work)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(work.glob("results/*/cells/*/*/r*/attempt-*/**/*"))
        if p.is_file()
    }


def cluster_ids(work: Path) -> list[str]:
    base = work / "results" / "clusters"
    return sorted(p.name for p in base.iterdir() if p.is_dir()) if base.is_dir() else []


def starts(work: Path, ident: str) -> list[str]:
    return sorted(p.name for p in (work / "results" / "clusters" / ident).glob("start-*"))


def state(work: Path, ident: str, start: int) -> dict:
    path = work / "results" / "clusters" / ident / f"start-{start}" / "state.json"
    return json.loads(path.read_text())


def cluster_log(work: Path, ident: str, start: int) -> str:
    return (work / "results" / "clusters" / ident / f"start-{start}" / "cluster.log").read_text()


def up_state(work: Path) -> dict | None:
    for path in work.glob("results/clusters/*/start-1/state.json"):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if data.get("status") == "up":
            return data
    return None


def running_cells(work: Path) -> dict[int, str]:
    """`perfpost run-cell` jobs working in ``work``: pid -> the record it makes."""
    out = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            cwd = os.readlink(f"/proc/{entry.name}/cwd")
            argv = Path(entry.path, "cmdline").read_bytes().decode().split("\0")
        except (OSError, UnicodeDecodeError):
            continue
        if cwd == str(work) and "run-cell" in argv and "--out" in argv:
            out[int(entry.name)] = argv[argv.index("--out") + 1]
    return out


def finishing(work: Path) -> list[str]:
    """Records already written whose job still runs (it releases its cluster): for
    Snakemake, cells that have not ended yet."""
    return [r for r in running_cells(work).values() if (work / r).exists()]


def start_run(work: Path) -> subprocess.Popen:
    """snakemake in a session of its own (its process group is what Ctrl-C reaches), its
    output in a file beside the checkout: a pipe nobody reads would stall it."""
    n = len(list(work.parent.glob("snakemake-*.out"))) + 1
    with open(work.parent / f"snakemake-{n}.out", "w") as out:
        proc = subprocess.Popen(
            [snakemake_bin(), "--cores", "2", "report"],
            cwd=work,
            env=env_with_venv(),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    proc.out = Path(out.name)  # type: ignore[attr-defined]
    return proc


def output(proc: subprocess.Popen) -> str:
    return proc.out.read_text()[-4000:]  # type: ignore[attr-defined]


def stop_run(proc: subprocess.Popen) -> None:
    """Kill what is left of a run a test started (its process group), should it fail."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


# ------------------------------------------------------------------------- lifecycle


def test_one_cluster_serves_every_cell_one_at_a_time_and_stops_with_the_last(
    hdfs_cache, cluster_dir, tmp_path
):
    scratch = tmp_path / "scratch"
    config = hdfs_config(hdfs_cache, cluster_dir, scratch)
    # One run of each buffer: two cells already share the one start, one at a time, where
    # the host allows two at once. A second repeat added two freon JVMs (3.6 CPU-seconds by
    # their own accounting) that no assertion here needs.
    config["experiments"]["hcfs"]["repeats"] = 1
    work = make_checkout(tmp_path / "w", config)
    done = snakemake(work, "--cores", "2", "report", timeout=RUN_TIMEOUT)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    # Nothing of the cluster outlives the run: snakemake returned after the last cell.
    assert not java_daemons(cluster_dir)

    # One configuration, one start: start-1, started and stopped once.
    (ident,) = cluster_ids(work)
    assert ident.startswith("hdfs-")
    assert starts(work, ident) == ["start-1"]
    log = cluster_log(work, ident, 1)
    assert log.count(f"starting hdfs {HDFS_VERSION} for hdfs") == 1, log
    assert log.count(" up\n") == 1, log
    assert len(re.findall(r"stopping \(", log)) == 1, log
    assert "stopping (no other cell of this run needs it)" in log
    st = state(work, ident, 1)
    assert st["status"] == "stopped"
    # From the install of the cache the config names, not the default one: the directory its
    # symlink named when the cluster started, which the daemons keep whatever is installed.
    home = os.path.realpath(hdfs_cache / f"hdfs-{HDFS_VERSION}")
    assert st["deployment"]["home"] == {"localhost": home}

    # 2 buffers x 1 repeat, every one on that start of that cluster.
    recs = records(work, "hcfs")
    assert len(recs) == 2
    for rec in recs.values():
        assert rec["status"] == "done", rec["reason"]
        (c,) = rec["clusters"]
        assert (c["name"], c["kind"], c["id"], c["start"]) == ("hdfs", "hdfs", ident, 1)
        assert c["version"] == HDFS_VERSION
        m = {x["name"]: x["value"] for x in rec["metrics"]}
        assert m["successful_executions"] == 20  # n: 20 of the config
        # The client's configuration the cell was given holds the config's client-side key,
        # and its clients-only key, not the daemons-only one.
        client = rec["client_conf"]["hdfs-site"]
        assert client["dfs.checksum.type"] == "NULL"
        assert client["dfs.client.socket-timeout"] == "45000"
        assert "dfs.datanode.handler.count" not in client
    # The daemons' hdfs-site as perfpost wrote it: the daemons-only key, not the clients'.
    daemons = st["deployment"]["site"]["hdfs-site"]
    assert daemons["dfs.datanode.handler.count"] == "7"
    assert daemons["dfs.checksum.type"] == "NULL"
    assert "dfs.client.socket-timeout" not in daemons
    # One at a time: the measured windows do not overlap, though the host allowed two.
    windows = sorted((r["start_epoch"], r["end_epoch"]) for r in recs.values())
    for (_, end), (start, _) in itertools.pairwise(windows):
        assert end <= start, windows

    # The post describes the system under test: its version output, what it changed.
    post = notebook_of(work / "reports" / "hcfs" / "index.md")
    version_block = post.split("Hadoop version:", 1)[1].split("```")[1]
    assert f"Hadoop {HDFS_VERSION}" in version_block
    table = post.split("not at the release's default", 1)[1].split("\n\n", 2)[1]
    # One DataNode: replication 1, where Hadoop's own default is 3.
    assert "| hdfs-site | `dfs.replication` | `1` | `3` |" in table, table
    # Hadoop's default checksum is CRC32C; the post says the key went to clients too.
    assert "| hdfs-site | `dfs.checksum.type` | `NULL` | `CRC32C` |" in table, table
    # Each key for one side says which, with Hadoop's own defaults (hdfs-default.xml).
    assert "| hdfs-site (daemons only) | `dfs.datanode.handler.count` | `7` | `10` |" in table
    assert "| hdfs-site (clients only) | `dfs.client.socket-timeout` | `45000` | `60000` |" in table
    own = (work / "reports" / "hcfs" / "index.md").read_text()
    line = next(ln for ln in own.splitlines() if ln.startswith("- Settings changed"))
    assert line.startswith(
        "- Settings changed from the defaults, for the daemons and their clients alike unless "
        "one says otherwise: "
    ), line
    assert "`dfs.checksum.type=NULL` (`hdfs`)" in line
    assert "`dfs.datanode.handler.count=7` (`hdfs`, daemons only)" in line
    assert "`dfs.client.socket-timeout=45000` (`hdfs`, clients only)" in line

    # The daemons' own logs, kept after their directories went.
    logs = work / "results" / "clusters" / ident / "start-1" / "logs" / "localhost"
    nn, dn = (logs / "namenode-0.log").read_text(), (logs / "datanode-0.log").read_text()
    assert "STARTUP_MSG: Starting NameNode" in nn
    assert "STARTUP_MSG: Starting DataNode" in dn
    assert not list(cluster_dir.iterdir()), "the cluster's directories were not removed"

    # A second run has nothing to do: no cell, no cluster.
    before = digests(work)
    again = snakemake(work, "--cores", "2", "report", timeout=RUN_TIMEOUT)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert "Nothing to be done" in again.stdout + again.stderr
    assert starts(work, ident) == ["start-1"]
    assert digests(work) == before
    assert not java_daemons(cluster_dir)


def test_a_precision_target_keeps_its_cluster_up_across_rounds_and_stops_it_when_decided(
    hdfs_cache, cluster_dir, tmp_path
):
    """Rounds of runs are planned one after the other, but the cluster is not stopped
    between them: its cell may still need it until its rounds decide, and then it stops."""
    scratch = tmp_path / "scratch"
    config = hdfs_config(hdfs_cache, cluster_dir, scratch)
    exp = config["experiments"]["hcfs"]
    exp["axes"] = {"storage": ["hdfs"]}
    # What the runs measure is not what this test checks (the rounds and the cluster's one
    # start are): a command that names the cell's file system and prints a rate stands in
    # for freon, which started a JVM for each of the six runs.
    exp["tool"] = "command"
    exp["params"] = {
        "run": "echo {cluster.fs}; echo rate 1; sleep 0.2",
        "dir": str(scratch),
        "metrics": {"rate": {"regex": r"rate (?P<value>[\d.]+)", "unit": "1/s"}},
    }
    # The round after 5 runs cannot stop it (a 95% interval needs 6); 6 is max.
    exp["repeats"] = {"min": 5, "max": 6, "precision": "50%", "metric": "rate"}
    work = make_checkout(tmp_path / "w", config)
    done = snakemake(work, "--cores", "2", "report", timeout=RUN_TIMEOUT)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert not java_daemons(cluster_dir)
    decisions = sorted(
        (work / "results/hcfs/cells/storage=hdfs/localhost/precision").glob("*.json")
    )
    assert [p.name for p in decisions] == ["after-5.json", "after-6.json"]
    assert len(records(work, "hcfs")) == 6
    (ident,) = cluster_ids(work)
    assert starts(work, ident) == ["start-1"]  # one start for both rounds
    log = cluster_log(work, ident, 1)
    assert len(re.findall(r"stopping \(", log)) == 1, log
    assert "stopping (no other cell of this run needs it)" in log


# ------------------------------------------------------------ a cluster that cannot start


def dd_beside(scratch: Path) -> dict:
    """An experiment without a cluster, in the same run."""
    return {
        "tool": "dd",
        "params": {"dir": str(scratch), "bs": "4k", "count": 16},
        "repeats": 2,
    }


def test_a_cluster_that_cannot_start_fails_its_cells_with_the_daemons_reason(
    hdfs_cache, cluster_dir, tmp_path
):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    cfg = hdfs_config(hdfs_cache, cluster_dir, scratch)
    hcfs = cfg["experiments"].pop("hcfs")
    one = {**hcfs, "axes": {"storage": ["hdfs"], "buffer": {"default": None}}}
    cfg["experiments"] = {
        "banana": {**one, "cluster": "banana"},
        "taken": {**one, "cluster": "taken"},
        "plain": dd_beside(scratch),
    }
    cfg["clusters"] = {
        # Not a size: Hadoop refuses it.
        "banana": {
            "kind": "hdfs",
            "dir": str(cluster_dir),
            "hdfs-site": {"dfs.blocksize": "banana"},
            "jvm": QUICK_DAEMONS,
        },
        # The NameNode's RPC port is this test's.
        "taken": {
            "kind": "hdfs",
            "dir": str(cluster_dir),
            "hdfs-site": {"dfs.namenode.rpc-address": f"127.0.0.1:{port}"},
            "jvm": QUICK_DAEMONS,
        },
    }
    work = make_checkout(tmp_path / "w", cfg)
    try:
        done = snakemake(work, "--cores", "2", "report", timeout=RUN_TIMEOUT)
    finally:
        taken.close()
    out = done.stdout[-3000:] + done.stderr[-3000:]
    assert not java_daemons(cluster_dir), out

    plain = records(work, "plain")
    assert len(plain) == 2
    assert {r["status"] for r in plain.values()} == {"done"}, out

    causes = {"banana": "Invalid size prefix", "taken": "Address already in use"}
    for name, cause in causes.items():
        recs = records(work, name)
        assert len(recs) == 2, (name, out)
        (c,) = [ident for ident in cluster_ids(work) if state(work, ident, 1)["name"] == name]
        # Tried twice (a start may lose a race of its own), failed twice, for the same cause.
        assert starts(work, c) == ["start-1", "start-2"], name
        for n in (1, 2):
            st = state(work, c, n)
            assert st["status"] == "failed"
            assert cause in st["reason"], st["reason"]
        assert "trying once more, as start-2" in cluster_log(work, c, 1)
        for rec in recs.values():
            assert rec["status"] == "failed"
            reason = rec["reason"]
            assert reason.startswith("cluster: "), reason
            assert cause in reason, reason
            assert re.search(r"\bnamenode\b", reason), reason  # the daemon, by its role
            # The daemon's own lines: its error, as log4j wrote it; not its exit banner.
            assert re.search(r"^\d{4}-\d\d-\d\d [\d:,]+ \[main\] ERROR ", reason, re.M), reason
            assert "SHUTDOWN_MSG" not in reason, reason
        log = cluster_log(work, c, 2)
        assert log.count("starting hdfs") == 1, log
        # One cell tried the start; the other was told it had failed in this run.
        told = [r for r in recs.values() if "could not be started in this run" in r["reason"]]
        assert len(told) == 1, [r["reason"] for r in recs.values()]


# ------------------------------------------------------------------ a run that is stopped


def dd_on_hdfs(cache: Path, cluster_dir: Path, scratch: Path) -> dict:
    """dd cells of a second or so each that hold an HDFS cluster (they do not use it: these
    tests are about the daemons' lives, not about a client)."""
    return {
        "tools": {"hadoop": {"version": HDFS_VERSION, "cache": str(cache)}},
        "experiments": {
            "k": {
                "tool": "dd",
                "cluster": "hdfs",
                "params": {"dir": str(scratch), "bs": "4k", "oflag": ["dsync"]},
                "axes": {"count": [2000, 2001, 2002]},
                "repeats": 2,
            }
        },
        "clusters": {"hdfs": {"kind": "hdfs", "dir": str(cluster_dir), "jvm": QUICK_DAEMONS}},
    }


DD_CELLS = 3 * 2  # counts x repeats of dd_on_hdfs


def hold_a_finishing_cell(work: Path) -> tuple[dict, list[str], int]:
    """The cluster's state while up, and the cells that wrote their record on it and have not
    ended, kept so by holding the cluster's ``start.lock`` (a cell takes it to release the
    cluster, after its record): their window is otherwise a few milliseconds. Held only
    while at least two cells are to come, so the caught one is not the last (whose job stops
    the cluster). Returns the lock's descriptor too; the caller closes it."""
    deadline = time.monotonic() + RUN_TIMEOUT
    while time.monotonic() < deadline:
        up = up_state(work)
        if up and running_cells(work):
            (ident,) = cluster_ids(work)
            fd = os.open(work / "results/clusters" / ident / "start.lock", os.O_RDWR)
            fcntl.flock(fd, fcntl.LOCK_EX)
            if len(records(work)) <= DD_CELLS - 2:
                # A running cell may be waiting for the lock to start: give up after a while.
                until = time.monotonic() + 10
                while time.monotonic() < until:
                    if caught := finishing(work):
                        return up, caught, fd
                    time.sleep(0.05)
            os.close(fd)
        time.sleep(0.05)
    pytest.fail(f"no cell was caught finishing on the cluster within {RUN_TIMEOUT:g} s")


def test_kill_9_of_the_run_leaves_no_daemon_and_the_next_run_starts_its_own(
    hdfs_cache, cluster_dir, tmp_path
):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    work = make_checkout(tmp_path / "w", dd_on_hdfs(hdfs_cache, cluster_dir, scratch))
    proc = start_run(work)
    fd = None
    try:
        # The harshest moment: a cell wrote its record, its job has not ended yet.
        first, caught, fd = hold_a_finishing_cell(work)
        os.kill(proc.pid, signal.SIGKILL)  # snakemake alone: its jobs and daemons stay
        before = {k: v for k, v in digests(work).items() if k.endswith("record.json")}
        proc.wait(timeout=30)
    finally:
        if fd is not None:
            os.close(fd)
        stop_run(proc)
    (ident,) = cluster_ids(work)
    pids = {d["pid"] for d in first["deployment"]["daemons"]}
    assert len(pids) == 2  # a NameNode and a DataNode

    # The next run, at once: by the time it starts a cluster, the killed run's is gone.
    again = start_run(work)
    left_at_start_2 = None
    try:
        deadline = time.monotonic() + RUN_TIMEOUT
        while again.poll() is None and time.monotonic() < deadline:
            if left_at_start_2 is None and starts(work, ident) == ["start-1", "start-2"]:
                left_at_start_2 = pids & set(java_daemons(cluster_dir))
            time.sleep(0.1)
        again.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        stop_run(again)
    assert again.returncode == 0, output(again)
    assert left_at_start_2 == set(), (
        f"the killed run's daemons ran beside start-2: {left_at_start_2}"
    )
    assert not java_daemons(cluster_dir)

    # The killed run's start was stopped for that reason, before the next one started.
    log1 = cluster_log(work, ident, 1)
    why = re.findall(r"stopping \((.*)\)", log1)
    assert why in (["its run was killed"], ["left by a run that is gone"]), log1
    s1, s2 = state(work, ident, 1), state(work, ident, 2)
    assert s1["status"] == "stopped"
    assert s2["status"] == "stopped"
    assert s1["stopped"] <= s2["started"]
    assert s1["owner"] != s2["owner"]

    # Every cell done; those finished before the kill untouched, the rest on start-2.
    recs = records(work)
    done = {k: r for k, r in recs.items() if r["status"] == "done"}
    assert len(done) == DD_CELLS, {k: r["reason"] for k, r in recs.items()}
    after = digests(work)
    assert before
    assert {k: after.get(k) for k in before} == before
    for path, rec in done.items():
        assert [c["start"] for c in rec["clusters"]] == [1 if path in before else 2], path
    # The cell caught finishing ran again for Snakemake, which never saw it end: it kept
    # its record rather than measuring again.
    for path in caught:
        log = (work / path).with_name("perfpost.log").read_text()
        assert "is finished already; kept as it is" in log, log
    FAULTS.append(
        (
            "HDFS up, run killed",
            "kill -9 of snakemake alone, a cell on the cluster finishing",
            f"daemons stopped ({why[0]}) before start-2; {len(before)} finished record(s) "
            f"untouched ({len(caught)} caught finishing, kept); resume ran the rest on start-2",
        )
    )


@pytest.mark.parametrize(
    ("how", "sig", "group"),
    [
        ("Ctrl-C (SIGINT to the process group)", signal.SIGINT, True),
        ("SIGTERM to snakemake", signal.SIGTERM, False),
    ],
)
def test_an_interrupted_run_leaves_no_daemon(hdfs_cache, cluster_dir, tmp_path, how, sig, group):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    work = make_checkout(tmp_path / "w", dd_on_hdfs(hdfs_cache, cluster_dir, scratch))
    proc = start_run(work)
    try:
        wait_for(lambda: up_state(work) and running_cells(work), RUN_TIMEOUT, "the cluster up")
        assert java_daemons(cluster_dir)
        (os.killpg if group else os.kill)(proc.pid, sig)
        proc.wait(timeout=RUN_TIMEOUT)
    finally:
        stop_run(proc)
    t0 = time.monotonic()
    wait_for(lambda: not java_daemons(cluster_dir), 60, f"the daemons to stop after {how}")
    gone_after = time.monotonic() - t0
    (ident,) = cluster_ids(work)
    log = cluster_log(work, ident, 1)
    why = re.findall(r"stopping \((.+)\)", log)
    assert len(why) == 1, log
    assert state(work, ident, 1)["status"] == "stopped", output(proc)
    FAULTS.append(
        (
            "HDFS up, run stopped",
            how,
            f"daemons gone {gone_after:.1f} s after snakemake exited (stopping: {why[0]})",
        )
    )
