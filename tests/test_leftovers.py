"""A test session killed before its end leaves its tool cache and quick JDK in /var/tmp; the
next session removes them, and never those of a session still running beside it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from perfpost.run import lifeline
from tests.conftest import LEFTOVERS, reap_leftovers, release_group, remove_stale_groups

CACHE, JDK = (p.rsplit("/", 1)[1] for p in LEFTOVERS)


def _sleeper(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", *args])


def test_what_a_gone_session_left_goes_and_a_running_one_s_stays(tmp_path):
    running = _sleeper("pytest")  # a pytest still running: its cmdline names it
    other = _sleeper()  # a pid of a gone pytest taken since by another program
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    try:
        keep = [
            tmp_path / f"{CACHE}{running.pid}-0123456789ab",
            tmp_path / f"{JDK}{running.pid}-0123456789ab",
            tmp_path / f"{CACHE}0123456789ab",  # an older name, made an hour ago
            tmp_path / f"{CACHE}notasession",  # not a name the suite makes
            tmp_path / "perfpost-test-abc",  # a module's host dir
        ]
        go = [
            tmp_path / f"{CACHE}{dead.pid}-0123456789ab",
            tmp_path / f"{JDK}{dead.pid}-ba9876543210",
            tmp_path / f"{CACHE}{other.pid}-0123456789ab",
            tmp_path / f"{JDK}ba9876543210",  # an older name, two days old
        ]
        for d in keep + go:
            (d / "bin").mkdir(parents=True)
            (d / "bin" / "java").write_text("x")
        hour, days = time.time() - 3600, time.time() - 2 * 86400
        os.utime(keep[2], (hour, hour))
        os.utime(go[3], (days, days))
        assert sorted(reap_leftovers(tmp_path)) == sorted(go)
        assert all(d.is_dir() for d in keep)
        assert not any(d.exists() for d in go)
    finally:
        for p in (running, other):
            p.kill()
            p.wait()


def test_a_gone_sessions_empty_cpu_groups_go_and_others_stay(tmp_path):
    """PERFPOST_TEST_CPU's groups, here as plain directories: rmdir removes an empty one, as
    the kernel removes a group that holds no process, and refuses one that holds something."""
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    live = os.getpid()
    keep = [
        tmp_path / f"perfpost-test-gw0-{live}",  # its worker still runs
        tmp_path / f"perfpost-test-gw1-{dead.pid}",  # gone, but a process is still in it
        tmp_path / "perfpost-test-gw2-x",  # not a name the suite makes
        tmp_path / f"other-gw0-{dead.pid}",
    ]
    go = [
        tmp_path / f"perfpost-test-gw2-{dead.pid}",
        tmp_path / f"perfpost-test-controller-{dead.pid}",
    ]
    for d in keep + go:
        d.mkdir()
    (keep[1] / "cgroup.procs").write_text("123\n")
    assert sorted(remove_stale_groups(tmp_path)) == sorted(go)
    assert all(d.is_dir() for d in keep)
    assert not any(d.exists() for d in go)


def test_a_worker_still_exiting_is_waited_for_and_a_zombie_holds_no_group(tmp_path):
    """The controller ends as its workers exit: a child of this process that ends within the
    wait loses its group, and so does one that has ended but is not yet reaped (a zombie, as
    an exited worker is until its parent waits for it); a process not ours is not waited for."""
    ending = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.5)"])
    zombie = subprocess.Popen([sys.executable, "-c", "pass"])
    while lifeline._stat(zombie.pid)[0] != b"Z":
        time.sleep(0.05)
    for pid in (ending.pid, zombie.pid):
        (tmp_path / f"perfpost-test-gw0-{pid}").mkdir()
    try:
        got = remove_stale_groups(tmp_path, wait=30.0)
    finally:
        ending.wait()
        zombie.wait()
    assert sorted(p.name for p in got) == sorted(
        f"perfpost-test-gw0-{pid}" for pid in (ending.pid, zombie.pid)
    )


def test_a_group_a_straggler_leaves_within_the_wait_goes_and_one_it_keeps_stays(tmp_path):
    """A worker's group still holding a process of its tests (here a file, as rmdir refuses a
    non-empty directory) goes once that process leaves within the wait, not after it."""
    import threading

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    leaves, stays = (tmp_path / f"perfpost-test-gw{i}-{dead.pid}" for i in (0, 1))
    for d in (leaves, stays):
        d.mkdir()
        (d / "cgroup.procs").write_text("123\n")
    threading.Timer(0.5, (leaves / "cgroup.procs").unlink).start()
    began = time.monotonic()
    assert remove_stale_groups(tmp_path, wait=3.0) == [leaves]
    assert time.monotonic() - began >= 3.0  # the one that stays was tried until the end
    assert stays.is_dir()
    assert not leaves.exists()


CPUACCT = Path("/sys/fs/cgroup/cpuacct")


@pytest.mark.skipif(
    os.geteuid() != 0 or not CPUACCT.is_dir(), reason="a cpuacct group of its own needs root"
)
def test_a_worker_ending_takes_what_its_tests_left_out_of_its_group_and_removes_it(tmp_path):
    """A process a test left in a worker's group (a real cpuacct group here) is moved to the
    root group with the worker, named in the note, and keeps running; the group goes."""
    group = CPUACCT / f"perfpost-test-unit-{os.getpid()}"
    group.mkdir()
    left = _sleeper("straggler")
    try:
        (group / "cgroup.procs").write_text(str(os.getpid()))
        (group / "cgroup.procs").write_text(str(left.pid))
        note = tmp_path / "note"
        got = release_group(group, CPUACCT, note)
        assert not group.exists()
        assert left.poll() is None  # still running: moved, not killed
        assert f"{left.pid}\t" in note.read_text()
        assert "straggler" in note.read_text()
        assert [line.split("\t")[0] for line in got] == [str(left.pid)]
        for pid in (os.getpid(), left.pid):  # both in the root group again
            lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
            assert any("cpuacct" in ln and ln.endswith(":/") for ln in lines), lines
    finally:
        left.kill()
        left.wait()
        (CPUACCT / "cgroup.procs").write_text(str(os.getpid()))
        if group.exists():
            group.rmdir()
