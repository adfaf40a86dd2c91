"""Where a cell's scripts run. ``localhost`` runs them with ``sh -c`` and no SSH.

A host runs a script with a timeout and returns its exit code and output; on timeout (or when
perfpost itself is interrupted) the whole process group is killed, so no tool process
outlives its cell. Remote hosts implement the same interface in :mod:`perfpost.run.remote`.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from perfpost import hostenv
from perfpost.errors import PerfpostError, unforeseen
from perfpost.hostenv import LOCALHOST
from perfpost.run import hostscript
from perfpost.run.hostscript import CommandResult

KILL_GRACE = 2.0


class Guard(Protocol):
    """A :func:`hostscript.scratch_guard` running on a host, until released."""

    def release(self) -> None: ...


class Host(Protocol):
    name: str

    def run(
        self,
        script: str,
        timeout: float,
        *,
        force: bool = False,
        abandon: str = "",
        on_stdout: Callable[[bytes], None] | None = None,
    ) -> CommandResult: ...

    def guard(self, abandon: str) -> Guard:
        """Start a guard that runs ``abandon`` on the host if perfpost dies (or lets go of
        the host) before :meth:`Guard.release`."""
        ...

    def read(self, remote_path: str) -> bytes | None: ...

    def close(self) -> None: ...


def _kill_group(proc: subprocess.Popen[str]) -> None:
    """TERM to the step's process group, then KILL to whatever of it is left after
    :data:`KILL_GRACE`. The grace is the group's, not the shell's: the shell dies at TERM at
    once, while a JVM under it runs its shutdown hooks (`hadoop jar` removes the jar it
    unpacked in /tmp) and a KILL right after the shell's end left their work undone."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + KILL_GRACE
    while time.monotonic() < deadline:
        if proc.poll() is not None and not _group_alive(proc.pid):
            return
        time.sleep(0.05)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # a member another user's: alive
    return True


class _Tee:
    """A script's standard output read as it comes, each chunk handed to ``fn``, all of it
    kept for the result."""

    def __init__(self, fd: int, fn: Callable[[bytes], None]) -> None:
        self.fd, self.fn = fd, fn
        self.chunks: list[bytes] = []
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        try:
            while data := os.read(self.fd, 1 << 16):
                self.chunks.append(data)
                try:
                    self.fn(data)
                except Exception:  # a watcher's fault never loses the output
                    traceback.print_exc()
        finally:
            os.close(self.fd)

    def text(self) -> str:
        # The group is dead by now: the pipe's last writer is gone, or soon.
        self.thread.join(KILL_GRACE)
        return b"".join(self.chunks).decode(errors="replace")


class LocalHost:
    """This machine, through ``sh -c`` in a new process group.

    A script starts from :func:`perfpost.hostenv.base` (PATH, HOME and the like, not the rest
    of perfpost's environment, which may hold a secret's source), and ``env`` is exported on
    top (read from a pipe, like on remote hosts); the same pipe is the script's lifeline: if
    perfpost dies, its watcher kills the process group.
    """

    name = LOCALHOST

    def __init__(self, env: dict[str, str] | None = None) -> None:
        self.env = dict(env or {})

    def run(
        self,
        script: str,
        timeout: float,
        *,
        force: bool = False,
        abandon: str = "",
        on_stdout: Callable[[bytes], None] | None = None,
    ) -> CommandResult:
        """``abandon`` runs if perfpost dies while the script does (to remove scratch);
        ``on_stdout`` gets the script's output as it comes."""
        lifeline_r, lifeline_w = os.pipe()
        out_r, out_w = os.pipe() if on_stdout is not None else (None, None)
        try:
            proc = subprocess.Popen(
                ["/bin/sh", "-c", hostscript.local_wrapper(), "perfpost", script, abandon],
                stdin=lifeline_r,
                stdout=subprocess.PIPE if out_w is None else out_w,
                stderr=subprocess.PIPE,
                text=True,
                errors="replace",
                start_new_session=True,
                env=hostenv.base(),
            )
        except BaseException:
            os.close(lifeline_w)
            if out_r is not None:
                os.close(out_r)
            raise
        finally:
            os.close(lifeline_r)
            if out_w is not None:
                os.close(out_w)
        tee = _Tee(out_r, on_stdout) if out_r is not None and on_stdout is not None else None
        try:
            os.write(lifeline_w, hostscript.env_block(self.env))
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            out, err = proc.communicate()
            return CommandResult(None, tee.text() if tee else out, err, timed_out=True)
        except BaseException:
            # Interrupted (SIGINT/SIGTERM turned into an exception): take the tools down too.
            _kill_group(proc)
            raise
        finally:
            # A tool that forked into the background must not outlive the step either.
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            os.close(lifeline_w)
        return CommandResult(proc.returncode, tee.text() if tee else out, err)

    def guard(self, abandon: str) -> LocalGuard:
        return LocalGuard(abandon)

    def read(self, remote_path: str) -> bytes | None:
        """A file's bytes, into memory (the caller masks secrets before any copy is
        written); None when it does not exist."""
        try:
            return Path(remote_path).read_bytes()
        except FileNotFoundError:
            return None

    def close(self) -> None:
        pass


class LocalGuard:
    """A scratch guard on this machine: its standard input is a pipe only perfpost holds, and
    it is in a session of its own, so a signal to perfpost's process group (kill -9 of a
    Snakemake run and its jobs) leaves it to do its work."""

    def __init__(self, abandon: str) -> None:
        self.proc = subprocess.Popen(
            ["/bin/sh", "-c", hostscript.scratch_guard(), "perfpost", abandon],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            bufsize=0,
            start_new_session=True,
            env=hostenv.base(),
            cwd="/",
        )

    def release(self) -> None:
        stdin = self.proc.stdin
        assert stdin is not None
        try:
            stdin.write(f"{hostscript.RELEASE}\n".encode())
        except OSError:  # it ended already
            pass
        finally:
            stdin.close()
        try:
            self.proc.wait(hostscript.RELEASE_WAIT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class UnusableHost:
    """A host that could not even be opened (its spec or SSH config is unusable): every
    command fails with ``reason``, so the cell still ends with a failed record saying why."""

    def __init__(self, name: str, reason: str) -> None:
        self.name = name
        self.where = name
        self.reason = reason

    def run(
        self,
        script: str,
        timeout: float,
        *,
        force: bool = False,
        abandon: str = "",
        on_stdout: Callable[[bytes], None] | None = None,
    ) -> CommandResult:
        raise PerfpostError(self.reason)

    def guard(self, abandon: str) -> Guard:
        raise PerfpostError(self.reason)

    def read(self, remote_path: str) -> bytes | None:
        raise PerfpostError(self.reason)

    def close(self) -> None:
        pass


def open_host(spec: dict, env: dict[str, str] | None = None) -> Host:
    """The host a spec names: this machine for ``localhost``, else an SSH host. ``env`` is
    exported for every script run there."""
    if spec["name"] == LOCALHOST:
        return LocalHost(env)
    from perfpost.run.remote import RemoteHost  # paramiko only when a remote host is used

    return RemoteHost(spec, env)


def open_hosts(specs: list[Any], envs: list[dict[str, str]]) -> list[Host]:
    """The hosts of cells (``CellSpec``), each with its env. A host that cannot even be
    opened (an unreadable ssh_config, a bug) becomes an :class:`UnusableHost` saying why, so
    its cell still ends with a failed record, and the other cells still run."""
    hosts: list[Host] = []
    for spec, env in zip(specs, envs, strict=True):
        try:
            hosts.append(open_host(spec.host, env))
        except Exception as e:
            traceback.print_exc()
            reason = f"cannot open host {spec.host['name']}: {unforeseen(e)}"
            hosts.append(UnusableHost(spec.host["name"], reason))
    return hosts


def close_all(hosts: list[Host]) -> None:
    """Close every host. A failure here comes after the records are written and must not
    fail the job: Snakemake would delete its records."""
    for h in hosts:
        try:
            h.close()
        except Exception:
            traceback.print_exc()
