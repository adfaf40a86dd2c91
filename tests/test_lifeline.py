"""Reading the Snakefile changes nothing; a run that executes cleans up after a killed one,
and a killed run's locks are removed by the watcher that outlives it by moments only."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import env_with_venv
from tests.e2e import make_checkout, snakemake

CONFIG = {
    "experiments": {
        "w": {"tool": "dd", "params": {"dir": "/dev/shm", "bs": "4k", "count": 8}, "repeats": 1}
    }
}


def orphan(work: Path) -> subprocess.Popen:
    """A process that looks like a job of a killed run: in the directory, marked with a run
    that no longer exists, and one that does not stop by itself."""
    gone = subprocess.Popen(["true"])
    gone.wait()
    env = {**os.environ, "PERFPOST_RUN": f"{os.uname().nodename}:{gone.pid}:1"}
    return subprocess.Popen(["sleep", "300"], cwd=work, env=env)


def test_a_cell_its_watcher_forked_counts_as_an_orphan_once_the_run_is_gone(tmp_path):
    # A served cell's environment in /proc is its watcher's, which carries no run mark: the
    # watcher's arguments say whose cell it is. A bash stands in for the watcher (its
    # arguments as the run starts it) and its `sleep` for the cell it forked.
    from perfpost.run import lifeline

    gone = subprocess.Popen(["true"])
    gone.wait()
    live = subprocess.Popen(["sleep", "300"])
    watchers = []
    cells: dict[int, int] = {}  # watcher pid -> its cell's
    try:
        for run, start in ((gone.pid, "1"), (live.pid, lifeline.starttime(live.pid))):
            # $0 is the module, as in python -m; exec: the watcher's child is the `sleep`
            # itself, not a subshell whose kill left the sleep running for 300 s.
            script = 'cd "$3" && exec sleep 300 & wait'
            argv = ["bash", "-c", script, "perfpost.cli.janitor", str(run), start, str(tmp_path)]
            watchers.append(subprocess.Popen([*argv, "/nonexistent/socket"]))
        deadline = time.monotonic() + 10
        while len(cells) < 2 and time.monotonic() < deadline:
            for w in watchers:
                kids = Path(f"/proc/{w.pid}/task/{w.pid}/children").read_text().split()
                if kids and os.path.realpath(f"/proc/{kids[0]}/cwd") == os.path.realpath(tmp_path):
                    cells[w.pid] = int(kids[0])
            time.sleep(0.05)
        assert len(cells) == 2
        found = [pid for pid, _ in lifeline.orphans(os.path.realpath(tmp_path))]
        assert cells[watchers[0].pid] in found  # its run is gone
        assert cells[watchers[1].pid] not in found  # its run is alive
        assert not {w.pid for w in watchers} & set(found)  # watchers sit elsewhere
    finally:
        for pid in cells.values():
            os.kill(pid, signal.SIGKILL)
        for p in (*watchers, live):
            p.kill()
            p.wait()


def test_a_mark_is_alive_only_while_its_process_is_and_another_hosts_is_not_judged():
    from perfpost.run import lifeline

    gone = subprocess.Popen(["true"])
    gone.wait()
    me = os.getpid()
    host = os.uname().nodename
    start = Path(f"/proc/{me}/stat").read_text().rsplit(")", 1)[1].split()[19]  # field 22
    assert lifeline.mark(me) == f"{host}:{me}:{start}"
    assert lifeline.mark_alive(f"{host}:{me}:{start}")
    assert not lifeline.mark_alive(f"{host}:{me}:{int(start) + 1}")  # the pid reused
    assert not lifeline.mark_alive(f"{host}:{gone.pid}:1")
    assert lifeline.mark_alive(f"not-{host}:{gone.pid}:1")  # not this machine's to judge
    assert not lifeline.mark_alive("garbage")


def _found_earlier(monkeypatch, lifeline, job: subprocess.Popen) -> None:
    """Make the orphan scan meet ``job`` as the process its pid belonged to before: the same
    pid with an earlier start time. Whatever recover signals afterwards under that pid is
    another process, as after a pid was reused."""
    real_starttime, real_orphans = lifeline.starttime, lifeline.orphans

    def earlier(pid: int) -> str | None:
        start = real_starttime(pid)
        return str(int(start) - 1) if pid == job.pid and start else start

    def scan(workdir: str):
        with monkeypatch.context() as m:
            m.setattr(lifeline, "starttime", earlier)
            return real_orphans(workdir)

    monkeypatch.setattr(lifeline, "orphans", scan)


def _seen(pid: int) -> dict:
    """What the orphan scan reads of ``pid``, for a failure's message: it passed alone every
    time and failed in two whole suites in a row, with recover having found nothing."""
    from perfpost.run import lifeline

    env = lifeline._read(pid, "environ") or b""
    cwd = lifeline._cwd(pid)
    return {
        "start": lifeline.starttime(pid),
        "cwd": cwd,
        "ppid": lifeline._ppid(pid),
        "mark": [e for e in env.split(b"\0") if e.startswith(b"PERFPOST_RUN=")],
        "host": socket.gethostname(),  # what the scan holds the mark's host to
        "listed": pid in set(lifeline._processes()),
        "ancestor": pid in lifeline._ancestors(),
        "served": lifeline._served_run(pid),
        "found": lifeline.orphans(cwd) if cwd else None,
    }


def _without_pidfd(monkeypatch) -> None:
    """A kernel (or Python) without pidfds: the start time is compared before each signal."""
    monkeypatch.delattr(os, "pidfd_open", raising=False)
    monkeypatch.delattr(signal, "pidfd_send_signal", raising=False)


@pytest.mark.parametrize("pidfd", [True, False], ids=["pidfd", "proc-stat"])
def test_a_process_that_took_an_orphans_pid_gets_no_signal(tmp_path, monkeypatch, pidfd):
    from perfpost.run import lifeline

    if not pidfd:
        _without_pidfd(monkeypatch)
    job = orphan(tmp_path)
    try:
        _found_earlier(monkeypatch, lifeline, job)
        said = lifeline.recover(str(tmp_path), wait=0.5, locks=False)
        time.sleep(0.3)  # a signal sent is delivered by now
        assert job.poll() is None, (
            f"the process now under the orphan's pid was stopped (exit {job.returncode}); "
            f"recover said {said}"
        )
        assert not any("sending" in line for line in said), said
    finally:
        job.kill()
        job.wait()


@pytest.mark.parametrize("pidfd", [True, False], ids=["pidfd", "proc-stat"])
def test_an_orphan_that_does_not_stop_by_itself_gets_sigterm(tmp_path, monkeypatch, pidfd):
    from perfpost.run import lifeline

    if not pidfd:
        _without_pidfd(monkeypatch)
    job = orphan(tmp_path)
    try:
        t0 = time.monotonic()
        said = lifeline.recover(str(tmp_path), wait=0.5, locks=False)
        # `sleep` dies of the first signal recover sends after its wait: SIGTERM, at once,
        # not SIGKILL after the 15 s SIGTERM's grace. A failure says what recover did and what
        # the scan reads of the process (in two whole suites, the sleep was left running).
        try:
            code = job.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        assert code == -signal.SIGTERM, (code, time.monotonic() - t0, said, _seen(job.pid))
        assert time.monotonic() - t0 < 10, said
        assert said[-1] == "sending SIGTERM to 1 job(s) of a killed run", said
    finally:
        if job.poll() is None:
            job.kill()
            job.wait()


def test_the_watchers_arguments_read_back_and_others_are_refused():
    from perfpost.run import lifeline

    argv = lifeline.watcher_argv(12, "345", "/w d", "/s/socket")
    assert argv[1:3] == ["-m", "perfpost.cli.janitor"]  # the module the orphan scan looks for
    assert lifeline.watcher_args(argv[3:]) == (12, "345", "/w d", "/s/socket")
    assert lifeline.watcher_args(["12", "345", "/w"]) == (12, "345", "/w", None)
    for bad in (["12", "345"], ["x", "345", "/w"], ["12", "345", "/w", "/s", "extra"]):
        with pytest.raises(ValueError, match=r"PID START WORKDIR \[SOCKET\]"):
            lifeline.watcher_args(bad)


def test_reading_the_snakefile_kills_nothing_and_keeps_locks(tmp_path):
    work = make_checkout(tmp_path / "w", CONFIG)
    locks = work / ".snakemake" / "locks"
    locks.mkdir(parents=True)
    (locks / "0.input.lock").write_text("results/w/tidy.csv\n")
    job = orphan(work)
    try:
        for args in (["-n", "--cores", "1", "report"], ["--lint"], ["--list-rules"]):
            t0 = time.monotonic()
            done = snakemake(work, *args, timeout=40)
            assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
            assert time.monotonic() - t0 < 30, f"snakemake {args} waited"
            assert (locks / "0.input.lock").read_text() == "results/w/tidy.csv\n", args
            assert job.poll() is None, f"snakemake {args} stopped a process"
            # Not even the config's passed checks are kept: only a run that starts does.
            assert not (work / "results").exists(), sorted((work / "results").rglob("*"))
    finally:
        job.kill()
        job.wait()


def test_a_killed_runs_locks_are_removed_by_its_watcher(tmp_path):
    """The janitor waits for its run; once the run dies, its locks go and so does it."""
    work = tmp_path / "w"
    locks = work / ".snakemake" / "locks"
    locks.mkdir(parents=True)
    run = subprocess.Popen(["sleep", "300"], cwd=work)
    start = Path(f"/proc/{run.pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    janitor = subprocess.Popen(
        [sys.executable, "-m", "perfpost.cli.janitor", str(run.pid), start, str(work)],
        env=env_with_venv(),
    )
    try:
        (locks / "0.output.lock").write_text("results/w/tidy.csv\n")
        time.sleep(1.0)
        assert janitor.poll() is None, "the watcher left while its run was alive"
        assert (locks / "0.output.lock").exists()
        run.kill()
        run.wait()
        assert janitor.wait(timeout=20) == 0
        assert not list(locks.iterdir())
    finally:
        for p in (run, janitor):
            if p.poll() is None:
                p.kill()
                p.wait()


def test_locks_older_than_every_snakemake_here_are_removed_and_a_live_runs_are_kept(tmp_path):
    """The next run, started at once after a run was killed, can be working in the directory
    before the killed run's watcher wakes: it started after those locks were made, so they
    are not its own (a CI run saw them kept, and that run fail: "Directory cannot be
    locked"). A Snakemake that started before them may hold them: they stay."""
    from perfpost.run import lifeline

    work = tmp_path / "w"
    locks = work / ".snakemake" / "locks"
    locks.mkdir(parents=True)
    fake = tmp_path / "snakemake"  # a process named as Snakemake is, working in `work`
    fake.symlink_to(shutil.which("sleep"))

    def snakemake_here() -> subprocess.Popen:
        proc = subprocess.Popen([str(fake), "300"], cwd=work)
        time.sleep(0.2)  # past a clock tick of its start
        return proc

    (locks / "0.output.lock").write_text("results/w/tidy.csv\n")
    time.sleep(0.2)
    later = snakemake_here()
    try:
        assert lifeline.other_snakemakes(str(work)) == [later.pid]
        assert lifeline.remove_stale_locks(str(work))
        assert not list(locks.iterdir())
        (locks / "0.output.lock").write_text("results/w/tidy.csv\n")  # `later`'s own
        assert lifeline.remove_stale_locks(str(work)) == []
        assert (locks / "0.output.lock").exists()
    finally:
        later.kill()
        later.wait()


@pytest.mark.e2e
def test_a_run_leaves_no_watcher_behind(tmp_path):
    work = make_checkout(tmp_path / "w", CONFIG)
    # A temporary directory of its own: the suite's other runs make and remove theirs in
    # the machine's at the same time. Short: a Unix socket's path has 107 bytes at most.
    tmp = Path(tempfile.mkdtemp(prefix="pp-"))
    seen: set[bytes] = set()  # the run's watchers, as they ran

    def watch() -> None:
        while not stop.is_set():
            seen.update(c for c in map(_cmdline, _janitors(work)) if c)
            time.sleep(0.05)

    stop = threading.Event()
    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        done = snakemake(work, "--cores", "1", "report", env={"TMPDIR": str(tmp)})
        stop.set()
        watcher.join()
        # Its socket was in the run's own temporary directory, so what is left there is its.
        assert any(str(tmp).encode() + b"/perfpost-cells-" in c for c in seen), seen
        _no_watcher_left(work, done, tmp)
    finally:
        stop.set()
        shutil.rmtree(tmp, ignore_errors=True)


def _janitors(work: Path) -> list[int]:
    return [
        int(p)
        for p in os.listdir("/proc")
        if p.isdigit()
        and b"perfpost.cli.janitor" in _cmdline(int(p))
        and str(work).encode() in _cmdline(int(p))
    ]


def _no_watcher_left(work: Path, done, tmp: Path) -> None:
    assert done.returncode == 0, done.stderr[-3000:]
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        left = _janitors(work)
        if not left:
            break
        time.sleep(0.1)
    assert not left, "a watcher outlived its run"
    # Nor the directory of the socket its cells were handed over on.
    assert list(tmp.glob("perfpost-cells-*")) == []


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""
