"""Remote hosts over SSH, through Fabric (:mod:`perfpost.run.connection`).

Fabric reaches the host (the inventory entry and ssh_config: HostName, User, Port,
IdentityFile, ProxyJump) and runs each command through its runner, on an exec channel of the
host's one connection. What perfpost adds is here: every command runs under the host's
``timeout`` in a process group of its own, and on a timeout or an interrupt perfpost kills
that group, so no tool outlives its cell; the cell's variables (secrets among them) are read
by the command from its standard input, never put on its command line or in a file on the
host, and that input stays open as the command's lifeline; files come back with ``cat`` on an
exec channel, not SFTP, which a host may not offer. Host-side timing is the scripts' own
(:mod:`perfpost.run.hostscript`). A host that cannot be used becomes :class:`HostError`, one
that stopped answering :class:`~perfpost.errors.HostSilent`, with a reason fit for the cell's
record.

A command gets the login environment sshd gives (perfpost sends no variables of its own) and
the cell's ``env``, read from standard input.
"""

from __future__ import annotations

import contextlib
import shlex
import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from invoke.exceptions import CommandTimedOut

from perfpost.errors import HostError
from perfpost.run import hostscript
from perfpost.run.connection import READ_TIMEOUT, HostConnection
from perfpost.run.hostscript import CommandResult

__all__ = ["HostError", "RemoteHost", "interrupt"]

KILL_AFTER = 5  # seconds between the timeout's TERM and KILL
CLIENT_GRACE = 30  # how much later the client gives up if the host's own timeout never fires
_MISSING = "@perfpost-no-such-file"


# Remote commands running now (pidfile -> host), so an interrupt can kill them: a command
# waited on in a worker thread (start_together) would otherwise run on to its end.
_ACTIVE: dict[str, RemoteHost] = {}
_INTERRUPTED = threading.Event()


def interrupt() -> None:
    """Kill every running remote command's process group; for signal handlers."""
    _INTERRUPTED.set()
    for pidfile, host in list(_ACTIVE.items()):
        host._kill(pidfile)


class RemoteHost:
    """A host from the inventory, reached over SSH through a Fabric connection."""

    def __init__(self, spec: dict[str, Any], env: dict[str, str] | None = None) -> None:
        self.name = spec["name"]
        self.spec = spec
        self.env = dict(env or {})
        self.conn = HostConnection(spec)

    @property
    def where(self) -> str:
        return self.conn.where

    @property
    def address(self) -> str:
        """The host's address as SSH reaches it: an ssh_config alias's HostName, which its
        daemons bind and advertise (the alias is a name only this machine's ssh knows)."""
        return str(self.conn.host)

    def run(
        self,
        script: str,
        timeout: float,
        *,
        force: bool = False,
        abandon: str = "",
        on_stdout: Callable[[bytes], None] | None = None,
    ) -> CommandResult:
        """Run ``script`` with ``sh`` on the host, killed with its whole process group at
        ``timeout`` seconds (or when perfpost is interrupted); its exit code is its own, 124
        included, and a timeout is ``timed_out``, as on localhost. After an interrupt only
        ``force`` commands (clean-up) still run. ``abandon`` runs on the host if the
        connection drops while the script runs (perfpost killed): it removes scratch.
        ``on_stdout`` gets the script's output as it comes.

        Fabric's runner (:class:`~perfpost.run.connection.Waiting`) blocks on the channel's
        output and exit status: nothing here wakes while the tool runs. Should the host's
        own timeout never fire, Invoke's ``timeout`` kills the group from here a little later."""
        if _INTERRUPTED.is_set() and not force:
            raise KeyboardInterrupt("interrupted")
        self.conn.open()
        pidfile = f"/tmp/perfpost-{uuid.uuid4().hex[:12]}.pid"
        # `timeout` puts itself and the script in a new process group and kills that group;
        # its pid (= the group id) goes to a file so perfpost can kill the group itself. The
        # environment goes through standard input, which then stays open as the lifeline.
        wrapper = hostscript.remote_wrapper(pidfile, timeout, KILL_AFTER)
        command = (
            f"sh -c {shlex.quote(wrapper)} perfpost {shlex.quote(script)} {shlex.quote(abandon)}"
        )
        runner = self.conn.config.runners.remote(context=self.conn, inline_env=False)
        runner.stdin_head = hostscript.env_block(self.env)
        runner.on_deadline = lambda: self._kill(pidfile)
        runner.on_stdout = on_stdout
        _ACTIVE[pidfile] = self
        try:
            result = runner.run(command, timeout=timeout + KILL_AFTER + CLIENT_GRACE)
        except CommandTimedOut as e:
            return CommandResult(None, e.result.stdout, e.result.stderr, timed_out=True)
        except HostError:
            raise
        except BaseException as e:
            # Interrupted, or the connection died: take the tools down if the host answers.
            self._kill(pidfile)
            if isinstance(e, KeyboardInterrupt | SystemExit):
                raise
            raise self.conn.lost(e) from None
        finally:
            _ACTIVE.pop(pidfile, None)
        if _INTERRUPTED.is_set() and not force:
            raise KeyboardInterrupt("interrupted")
        code = result.exited
        if code is None or code < 0:
            # paramiko's "no exit status": the channel closed before the command ended (the
            # host stopped answering, or its sshd died or dropped the session); the
            # command's outcome is unknown.
            self._kill(pidfile)
            raise self.conn.lost(EOFError("the channel closed before the command ended"))
        # `timeout`'s own 124 (137 after KILL) is no sign: a tool may exit with it. The
        # wrapper marks a script `timeout` stopped, after its output (hostscript).
        timed_out, stderr = hostscript.split_timed_out(result.stderr, pidfile)
        return CommandResult(
            None if timed_out else code, result.stdout, stderr, timed_out=timed_out
        )

    def _kill(self, pidfile: str) -> None:
        """Kill the process group recorded in ``pidfile``, on a channel of its own.

        A channel of its own: this may run inside a signal handler while a command is
        waiting on the same connection.
        """
        # `kill -SIG -PGID`, no `--`: dash (Debian's sh) reads `-- -PGID` as a bad number.
        script = (
            f'p=$(cat {pidfile} 2>/dev/null) && [ -n "$p" ] && '
            f'{{ kill -TERM "-$p" 2>/dev/null; sleep 1; kill -KILL "-$p" 2>/dev/null; }}'
            f"; rm -f {pidfile}"
        )
        try:
            transport = self.conn.transport
            if transport is None or not transport.is_active():
                return
            channel = transport.open_session(timeout=10)
            channel.settimeout(20)
            channel.exec_command(f"sh -c {shlex.quote(script)}")
            channel.recv_exit_status()
            channel.close()
        except Exception:  # best effort: the host may be gone
            pass

    def guard(self, abandon: str) -> RemoteGuard:
        """A scratch guard on its own exec channel, held open until released (see
        :func:`hostscript.scratch_guard`): when perfpost dies, its connection, and so the
        channel, closes, and the host runs ``abandon``."""
        if _INTERRUPTED.is_set():
            raise KeyboardInterrupt("interrupted")
        guard = shlex.quote(hostscript.scratch_guard())
        command = f"sh -c {guard} perfpost {shlex.quote(abandon)}"
        channel = self.conn.session()
        try:
            # Returns once sshd has started the guard: only then may the scratch be made.
            channel.exec_command(command)
        except Exception as e:  # socket or SSH: the host is lost
            raise self.conn.lost(e) from None
        return RemoteGuard(channel)

    def read(self, remote_path: str) -> bytes | None:
        """A file's bytes, into memory, with ``cat`` on an exec channel of its own (no SFTP,
        which a host may have disabled); None when it does not exist."""
        q = shlex.quote(remote_path)
        script = f"[ -e {q} ] || {{ echo {_MISSING} >&2; exit 1; }}; exec cat -- {q}"
        out, err = bytearray(), bytearray()
        try:
            channel = self.conn.session()
            try:
                channel.settimeout(READ_TIMEOUT)
                channel.exec_command(f"sh -c {shlex.quote(script)}")
                channel.shutdown_write()
                while chunk := channel.recv(1 << 16):
                    out += chunk
                    while channel.recv_stderr_ready():
                        err += channel.recv_stderr(1 << 16)
                while chunk := channel.recv_stderr(1 << 16):
                    err += chunk
                code = channel.recv_exit_status()
            finally:
                channel.close()
        except Exception as e:  # socket, SSH or timeout: the host is lost
            self.conn.check()
            raise HostError(
                f"cannot copy {remote_path} from {self.where}: {e or type(e).__name__}"
            ) from None
        if code == 0:
            return bytes(out)
        self.conn.check()  # a connection closed mid-copy: the host may have stopped answering
        said = err.decode(errors="replace").strip()
        if said == _MISSING:
            return None
        raise HostError(f"cannot copy {remote_path} from {self.where}: exit code {code}: {said}")

    @contextlib.contextmanager
    def stream(self, script: str) -> Iterator[Stream]:
        """``script`` run by ``sh`` on an exec channel of its own, for a conversation: its
        output read line by line, bytes (a tar) written to its input. No SFTP, no argv limit
        on what is sent. A socket or SSH failure is :class:`HostError`."""
        if _INTERRUPTED.is_set():
            raise KeyboardInterrupt("interrupted")
        channel = self.conn.session()
        try:
            channel.settimeout(READ_TIMEOUT)
            channel.exec_command(f"sh -c {shlex.quote(script)}")
        except Exception as e:
            raise self.conn.lost(e) from None
        s = Stream(channel, self.where)
        try:
            yield s
        except (TimeoutError, OSError, EOFError) as e:
            raise self.conn.lost(e) from None
        finally:
            with contextlib.suppress(Exception):
                channel.close()

    def close(self) -> None:
        """Close the connection, best effort: a host that died mid-cell leaves a dead socket,
        and an error here would fail a cell whose record (and reason) is already written."""
        self.conn.close()


class _Drain:
    """One output stream of a channel, read to its end by a thread blocked in ``recv``."""

    def __init__(self, recv: Any) -> None:
        self._recv = recv
        self._chunks: list[bytes] = []
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        with contextlib.suppress(Exception):  # a closed or dead channel: what came is kept
            while chunk := self._recv(1 << 16):
                self._chunks.append(chunk)

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)

    def text(self) -> str:
        return b"".join(self._chunks).decode(errors="replace")


class Stream:
    """One exec channel of :meth:`RemoteHost.stream`: lines from the script's output,
    bytes to its input (buffered into large packets), its exit status at the end."""

    BUFFER = 1 << 18

    def __init__(self, channel: Any, where: str) -> None:
        self.channel = channel
        self.where = where
        self._out = channel.makefile("rb")
        self._err = _Drain(channel.recv_stderr)
        self._pending = bytearray()

    def settimeout(self, seconds: float) -> None:
        """How long a read or write may wait (the script may first wait for a lock)."""
        self.channel.settimeout(seconds)

    def readline(self) -> str:
        """The script's next line of output ("" at its end)."""
        return self._out.readline().decode(errors="replace").rstrip("\n")

    def write(self, data: bytes) -> int:
        self._pending += data
        if len(self._pending) >= self.BUFFER:
            self.flush()
        return len(data)

    def flush(self) -> None:
        if self._pending:
            self.channel.sendall(bytes(self._pending))
            self._pending.clear()

    def finish(self) -> tuple[int | None, list[str], str]:
        """Close the script's input; its exit status, its remaining output lines and its
        standard error, once it ended."""
        self.flush()
        self.channel.shutdown_write()
        rest = [ln.decode(errors="replace").rstrip("\n") for ln in self._out]
        code = self.channel.recv_exit_status()
        self._err.join(READ_TIMEOUT)
        return (code if code >= 0 else None), rest, self._err.text()


class RemoteGuard:
    """A guard's exec channel; perfpost never closes its input but to release it."""

    def __init__(self, channel: Any) -> None:
        self.channel = channel

    def release(self) -> None:
        """Tell the guard the scratch is gone, and wait (a while) for it to end. Best effort:
        a host that is gone ran the guard's script already."""
        try:
            self.channel.settimeout(hostscript.RELEASE_WAIT)
            self.channel.sendall(f"{hostscript.RELEASE}\n".encode())
            self.channel.shutdown_write()
            self.channel.status_event.wait(hostscript.RELEASE_WAIT)
        except Exception:
            pass
        finally:
            with contextlib.suppress(Exception):
                self.channel.close()
