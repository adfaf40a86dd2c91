"""Tie every job to the Snakemake run that started it, and clean up after a run that was killed.

Snakemake killed with SIGKILL (or by the OOM killer) leaves its jobs running, as ordinary child
processes, and its locks on disk. Left alone, an orphaned cell would keep measuring while the
next run starts the same cell again on the same host, and the next run would refuse to start
until someone typed ``--unlock``. So, when a run starts executing (Snakemake's ``onstart``,
never while the Snakefile is merely read, so ``-n``, ``--lint`` and ``--report`` change
nothing):

- the run is marked (:func:`mark_run`); every perfpost job watches that process and
  interrupts itself when it dies (:func:`watch_run`): the tools are killed on every host and no
  record is written, so the next run tries the cell again in a new attempt;
- jobs of an earlier killed run that are still stopping are waited for (:func:`recover`);
- a watcher in a session of its own (:func:`janitor`) waits for the run to end and, if it
  died without removing its locks, removes them once no other Snakemake works in the
  directory; it exits with that, so nothing outlives the run.
"""

from __future__ import annotations

import os
import select
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

ENV = "PERFPOST_RUN"
# The run as records name it (its start, UTC, and pid): runs of a cell made by different
# runs (a re-run weeks later, a retried cell) are told apart, and tested before pooling.
SESSION_ENV = "PERFPOST_SESSION"
# The workflow's `retries` (profile or command line), set for the cell jobs when a run starts.
RETRIES_ENV = "PERFPOST_RETRIES"
ORPHAN_WAIT = 60.0  # seconds an orphan gets to kill its tools before it is stopped


def _stat(pid: int) -> list[bytes] | None:
    """The fields of /proc/PID/stat after the command's name (field 3, the state, first),
    or None when there is no such process. The name is in parentheses and may hold spaces
    and parentheses itself, so the fields start after its last ``)``."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    return stat.rsplit(b")", 1)[1].split()


def starttime(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (field 22): tells a pid from its
    reuse."""
    fields = _stat(pid)
    return None if fields is None else fields[19].decode()


def mark(pid: int, start: str | None = None) -> str:
    """The mark of process ``pid`` (``HOST:PID:START``) as runs, jobs and clusters' owners
    carry it: the host and start time tell it from another machine's and from its reuse."""
    return f"{socket.gethostname()}:{pid}:{starttime(pid) if start is None else start}"


def parse_mark(value: str) -> tuple[str, int, str] | None:
    try:
        host, pid, start = value.rsplit(":", 2)
        return host, int(pid), start
    except ValueError:
        return None


def mark_alive(value: str) -> bool:
    """Whether the process marked ``value`` still runs; one on another machine is not this
    machine's to judge, so it counts as running."""
    parsed = parse_mark(value)
    if parsed is None:
        return False
    host, pid, start = parsed
    return host != socket.gethostname() or alive(pid, start)


def mark_run() -> None:
    """Record this process (the Snakemake run) in the environment its jobs inherit."""
    pid = os.getpid()
    os.environ[ENV] = mark(pid)
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    os.environ[SESSION_ENV] = f"{now}/{pid}"


def alive(pid: int, start: str) -> bool:
    return starttime(pid) == start


def watch_run(on_death: Callable[[], None]) -> None:
    """Call ``on_death`` (from a daemon thread) when the run that started this job ends.

    Does nothing outside a run, or when the job runs on another machine than Snakemake.
    """
    marked = parse_mark(os.environ.get(ENV, ""))
    if marked is None or marked[0] != socket.gethostname():
        return
    _, pid, start = marked
    try:
        fd = os.pidfd_open(pid)
    except (ProcessLookupError, PermissionError, OSError):
        on_death()
        return
    if not alive(pid, start):  # the pid was reused: the run is gone already
        os.close(fd)
        on_death()
        return

    def wait() -> None:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        poller.poll()
        on_death()

    threading.Thread(target=wait, name="perfpost-lifeline", daemon=True).start()


def stop_when_run_dies() -> None:
    """For perfpost's workflow steps: turn the run's death into SIGTERM, which the command
    line turns into an interrupt that kills the tools on every host."""

    def on_death() -> None:
        print(
            "perfpost: the Snakemake run that started this job is gone; stopping it",
            file=sys.stderr,
            flush=True,
        )
        os.kill(os.getpid(), signal.SIGTERM)

    watch_run(on_death)


def _processes() -> Iterator[int]:
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            yield int(entry.name)


def _read(pid: int, name: str) -> bytes | None:
    try:
        return Path(f"/proc/{pid}/{name}").read_bytes()
    except OSError:
        return None


def _started_at(pid: int) -> float | None:
    """When the process started, in seconds since the epoch: its start since boot (to the
    clock tick) moved to the wall clock by how long ago that was (the boot time /proc/stat
    gives is whole seconds, and off by the clock's corrections since)."""
    ticks = starttime(pid)
    if ticks is None:
        return None
    ago = time.clock_gettime(time.CLOCK_BOOTTIME) - int(ticks) / os.sysconf("SC_CLK_TCK")
    return time.time() - ago


def _cwd(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return None


def _ppid(pid: int) -> int | None:
    fields = _stat(pid)
    return None if fields is None else int(fields[1])


def _ancestors() -> set[int]:
    out, pid = set(), os.getpid()
    while pid > 1 and pid not in out:
        out.add(pid)
        parent = _ppid(pid)
        if parent is None:
            break
        pid = parent
    return out


JANITOR = "perfpost.cli.janitor"  # the module the run's watcher runs as (python -m)


def watcher_argv(pid: int, start: str, workdir: str, sock: str | None = None) -> list[str]:
    """The command line of the watcher of run ``pid``; :func:`watcher_args` reads it back."""
    return [sys.executable, "-m", JANITOR, str(pid), start, workdir, *([sock] if sock else [])]


def watcher_args(args: list[str]) -> tuple[int, str, str, str | None]:
    """(run pid, its start time, workdir, socket or None) from the watcher's arguments, those
    after the module's name. ValueError if they are not a watcher's."""
    if len(args) not in (3, 4) or not args[0].isdigit():
        raise ValueError(f"a watcher takes PID START WORKDIR [SOCKET], not {args!r}")
    return int(args[0]), args[1], args[2], args[3] if len(args) == 4 else None


def _served_run(pid: int) -> tuple[int, str] | None:
    """(run pid, its start time) of the run whose watcher forked ``pid``, a served cell: its
    environment in /proc is the watcher's, which carries no run mark, so the watcher's own
    arguments (:func:`watcher_argv`) say whose cell it is."""
    parent = _ppid(pid)
    if parent is None:
        return None
    argv = (_read(parent, "cmdline") or b"").decode(errors="replace").split("\0")
    if JANITOR not in argv:
        return None
    try:
        run, start, _, _ = watcher_args(argv[argv.index(JANITOR) + 1 :][:4])
    except ValueError:
        return None
    return run, start


def orphans(workdir: str) -> list[tuple[int, str]]:
    """perfpost jobs in ``workdir`` whose Snakemake run is gone: jobs marked with it, and
    cells its watcher forked. Each as (pid, start time), the start read before anything else
    of the process: what :func:`recover` signals later is held to that process
    (:class:`_Held`), never another one given its pid meanwhile."""
    found = []
    mine = _ancestors()
    for pid in _processes():
        if pid in mine:
            continue
        start = starttime(pid)
        if start is None or _cwd(pid) != workdir:
            continue
        served = _served_run(pid)
        if served:
            if not alive(*served):
                found.append((pid, start))
            continue
        environ = _read(pid, "environ") or b""
        for item in environ.split(b"\0"):
            if item.startswith(ENV.encode() + b"="):
                marked = parse_mark(item.split(b"=", 1)[1].decode(errors="replace"))
                if marked and marked[0] == socket.gethostname() and not alive(marked[1], marked[2]):
                    found.append((pid, start))
                break
    return found


class _Held:
    """A process held from the moment it was found, so that a signal meant for it reaches
    no other process that was given its pid since: through a pidfd where the kernel has them
    (Linux 5.3), otherwise by its start time, compared again before each signal (a pid
    reused between that comparison and the signal is the one case left)."""

    def __init__(self, pid: int, start: str, fd: int | None) -> None:
        self.pid, self.start, self.fd = pid, start, fd

    @classmethod
    def hold(cls, pid: int, start: str) -> _Held | None:
        """The process ``pid`` if it is still the one that started at ``start``."""
        fd = None
        if hasattr(os, "pidfd_open") and hasattr(signal, "pidfd_send_signal"):
            try:
                fd = os.pidfd_open(pid)
            except ProcessLookupError:
                return None
            except OSError:  # no pidfds in this kernel: the start time alone
                fd = None
        # Opened, the pidfd is that process's for good; it is the process found if it
        # started when the scan saw it start.
        if starttime(pid) != start:
            if fd is not None:
                os.close(fd)
            return None
        return cls(pid, start, fd)

    def running(self) -> bool:
        if self.fd is not None:
            poller = select.poll()
            poller.register(self.fd, select.POLLIN)
            return not poller.poll(0)  # a pidfd is readable once its process has exited
        fields = _stat(self.pid)
        # A zombie has stopped: only its parent's wait is left.
        return fields is not None and fields[19].decode() == self.start and fields[0] != b"Z"

    def send(self, sig: signal.Signals) -> None:
        try:
            if self.fd is not None:
                signal.pidfd_send_signal(self.fd, sig)
            elif self.running():
                os.kill(self.pid, sig)
        except ProcessLookupError:
            pass

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def _wait_for(held: list[_Held], seconds: float) -> list[_Held]:
    """Those of ``held`` still running after up to ``seconds``."""
    deadline = time.monotonic() + seconds
    left = [h for h in held if h.running()]
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = [h for h in left if h.running()]
    return left


def other_snakemakes(workdir: str) -> list[int]:
    """Snakemake processes other than this one (and its parents) working in ``workdir``."""
    mine = _ancestors()
    out = []
    for pid in _processes():
        if pid in mine or _cwd(pid) != workdir:
            continue
        argv = (_read(pid, "cmdline") or b"").split(b"\0")
        if any(Path(a.decode(errors="replace")).name.startswith("snakemake") for a in argv[:3]):
            out.append(pid)
    return out


def recover(workdir: str | None = None, wait: float = ORPHAN_WAIT, locks: bool = True) -> list[str]:
    """Undo what a killed run left behind; returns what was done, one line each.

    Orphaned jobs get ``wait`` seconds to stop by themselves (they watch their run and kill
    their tools), then SIGTERM, then SIGKILL, each signal to the process found and to no
    other that took its pid since (:class:`_Held`). With ``locks``, Snakemake's locks are removed
    only when no other Snakemake works in this directory: they belong to a run that no
    longer exists (never pass it from inside a running Snakemake: the locks are its own).
    """
    workdir = os.path.realpath(workdir or os.getcwd())
    said = []
    held = [h for h in (_Held.hold(pid, start) for pid, start in orphans(workdir)) if h]
    try:
        if held:
            said.append(f"waiting for {len(held)} job(s) of a killed run to stop their tools")
            left = _wait_for(held, wait)
            for sig, grace in ((signal.SIGTERM, 15.0), (signal.SIGKILL, 5.0)):
                if not left:
                    break
                said.append(f"sending {sig.name} to {len(left)} job(s) of a killed run")
                for h in left:
                    h.send(sig)
                left = _wait_for(left, grace)
    finally:
        for h in held:
            h.close()
    return said + (remove_stale_locks(workdir) if locks else [])


def remove_stale_locks(workdir: str) -> list[str]:
    """Remove Snakemake's locks in ``workdir`` when no Snakemake works there: they belong to
    a run that no longer exists. Returns what was done."""
    lockdir = Path(workdir, ".snakemake", "locks")
    stale = sorted(lockdir.glob("*.lock")) if lockdir.is_dir() else []
    if not stale:
        return []
    try:
        made = max(f.stat().st_mtime for f in stale)
    except OSError:
        return []
    # A Snakemake that started after the locks were made does not hold them (it locks once
    # it has started): the next run, started before this watcher woke. Counting it left the
    # killed run's locks in place, and that next run failed on them.
    if any((_started_at(pid) or 0.0) <= made for pid in other_snakemakes(workdir)):
        return []
    for f in stale:
        f.unlink(missing_ok=True)
    return [f"removed {len(stale)} lock(s) of a Snakemake run that is no longer running"]


def start_janitor(workdir: str | None = None) -> None:
    """Start :func:`janitor` for this run (the calling Snakemake process), detached in a
    session of its own so that killing the run's process group does not take it along. It
    serves the run's cells (:mod:`perfpost.run.cellserver`) until the run ends; the jobs find
    it through the environment they inherit."""
    import subprocess
    import tempfile

    from perfpost.run import cellclient, cellserver

    workdir = os.path.realpath(workdir or os.getcwd())
    pid = os.getpid()
    # The cell server's socket, in a directory of mode 0700 (the janitor removes both),
    # listening from here on: the jobs Snakemake starts next queue on it while the janitor
    # starts, and it gets the socket as its standard input.
    sock = os.path.join(tempfile.mkdtemp(prefix="perfpost-cells-"), "socket")
    listener = cellserver.listen(sock)
    os.environ.update(cellclient.server_env(sock))  # the janitor runs in sys.executable
    try:
        subprocess.Popen(
            watcher_argv(pid, str(starttime(pid)), workdir, sock),
            stdin=listener.fileno() if listener else subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
            # Not a job of the run: a later run must not take it for an orphan to wait for.
            env={k: v for k, v in os.environ.items() if k != ENV},
        )
    finally:
        if listener:
            listener.close()  # the janitor's now; the jobs must not inherit it


def run_pidfd(pid: int, start: str) -> int | None:
    """A pidfd of the run ``pid`` (readable once it ends), or None if it is gone already."""
    try:
        fd = os.pidfd_open(pid)
    except OSError:
        return None
    if not alive(pid, start):  # the pid was reused
        os.close(fd)
        return None
    return fd


def janitor(pid: int, start: str, workdir: str) -> list[str]:
    """Wait for the run ``pid`` to end; then clean up what it left: its locks, if it was
    killed before removing them (at once, so the next run can start), then its jobs, which
    stop by themselves and are stopped if they do not. Returns what was done."""
    fd = run_pidfd(pid, start)
    if fd is not None:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        poller.poll()
        os.close(fd)
    said = remove_stale_locks(workdir)
    return said + recover(workdir, locks=False)
