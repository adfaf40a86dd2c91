"""Remote hosts over SSH, through paramiko. The only module that imports paramiko.

One connection per host serves every command of a job (TCP_NODELAY and keepalive on), each
command on an exec channel of its own. An ssh_config file resolves the host's name as
OpenSSH would (Host, HostName, User, Port, IdentityFile, ProxyJump). Host keys are verified
against known_hosts: perfpost accepts no unknown key unless the inventory opts in with
``trust_new_keys`` (a new key is then appended to known_hosts as one line, changed keys are
still refused). Every command runs under the host's
``timeout`` in a process group of its own; on a timeout or an interrupt perfpost kills that
group, so no tool outlives its cell. Files come back over a plain exec channel (``cat``), not
SFTP, which a host may not offer. Connection failures become :class:`HostError` with a reason
fit for the cell's record.

A command gets the login environment sshd gives (perfpost sends no variables of its own) and
the cell's ``env``, read from standard input; no secret is written to a file on the host.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import getpass
import hashlib
import hmac
import os
import shlex
import socket
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from perfpost.errors import PerfpostError
from perfpost.run import hostscript
from perfpost.run.hostscript import CommandResult

KILL_AFTER = 5  # seconds between the timeout's TERM and KILL
CLIENT_GRACE = 30  # how much later the client gives up if the host's own timeout never fires
CONNECT_TIMEOUT = 15
READ_TIMEOUT = 120  # seconds a file copy may go without a byte before the host counts as lost
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


class HostError(PerfpostError):
    """A host that could not be used: unreachable, authentication, host key, lost connection."""


def _known_hosts_paths(spec: dict[str, Any]) -> list[Path]:
    if spec.get("known_hosts"):
        return [Path(os.path.expanduser(spec["known_hosts"]))]
    return [Path(os.path.expanduser("~/.ssh/known_hosts"))]


def _key_name(host: str, port: int) -> str:
    return host if port == 22 else f"[{host}]:{port}"


def _names_match(names: str, hostname: str) -> bool:
    """Whether a known_hosts line's first field names ``hostname``: plainly (comma-separated)
    or hashed (``|1|salt|hmac``, as ``HashKnownHosts`` writes)."""
    for name in names.split(","):
        if name == hostname:
            return True
        if name.startswith("|1|"):
            try:
                salt, digest = (base64.b64decode(x) for x in name[3:].split("|", 1))
            except (ValueError, TypeError):
                continue
            mine = hmac.new(salt, hostname.encode(), hashlib.sha1).digest()
            if hmac.compare_digest(mine, digest):
                return True
    return False


def _known_lines(text: str) -> list[tuple[str, str, str, str]]:
    """(marker, names, key type, base64 key) of every host key line; comments, blank and
    unreadable lines are skipped (and kept in the file as they are)."""
    out = []
    for line in text.splitlines():
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        marker = fields.pop(0) if fields[0].startswith("@") else ""
        if len(fields) >= 3:
            out.append((marker, fields[0], fields[1], fields[2]))
    return out


class KeyChanged(HostError):
    """The host offers a key that known_hosts does not hold for it, or holds as revoked."""


def trust_key(path: Path, hostname: str, keytype: str, key: str) -> bool:
    """Append ``hostname keytype key`` to the known_hosts file ``path``, as OpenSSH writes a
    new host (``[host]:port`` for a port other than 22), unless it is there already.

    The file is never rewritten: every other line (``@cert-authority``, ``@revoked``,
    comments, hashed names) stays as it is, in its order. An exclusive lock is held while
    the file is re-read and appended to, so parallel cells trusting hosts at once neither
    lose a line nor add one twice. A key that differs from the one already recorded for
    the host, or is revoked, raises :class:`KeyChanged`. Returns whether a line was added.
    """
    if not path.parent.exists():
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(fd, "r+b") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)  # released when the file is closed
        data = fh.read()
        known = _known_lines(data.decode(errors="replace"))
        if any(m == "@revoked" and (t, k) == (keytype, key) for m, _, t, k in known):
            raise KeyChanged(f"host key rejected: the key of {hostname} is revoked in {path}")
        mine = [(t, k) for m, names, t, k in known if not m and _names_match(names, hostname)]
        if (keytype, key) in mine:
            return False  # another cell added it meanwhile
        if mine:
            raise KeyChanged(
                f"host key rejected: {hostname} offers a {keytype} key that is not the one "
                f"in {path}; if the host was reinstalled, remove the old line "
                f"(ssh-keygen -R '{hostname}') and add the new key after checking it"
            )
        sep = b"" if not data or data.endswith(b"\n") else b"\n"
        fh.write(sep + f"{hostname} {keytype} {key}\n".encode())
        fh.flush()
        os.fsync(fh.fileno())
    return True


class AppendNewKeys:
    """paramiko's missing-host-key policy for ``trust_new_keys``: the new key is appended to
    known_hosts by :func:`trust_key` (paramiko's own AutoAddPolicy rewrites the whole file,
    dropping the lines it cannot read, and races with other cells)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def missing_host_key(self, client: Any, hostname: str, key: Any) -> None:
        trust_key(self.path, hostname, key.get_name(), key.get_base64())
        client.get_host_keys().add(hostname, key.get_name(), key)


def _load_known_hosts(client: Any, path: Path) -> None:
    """Load the plain host keys of ``path`` into ``client``. paramiko's own loader stops at
    the first line it cannot read (``@cert-authority``); those lines are skipped here, and a
    key a ``@revoked`` line names is not loaded."""
    from paramiko.hostkeys import HostKeyEntry

    try:
        text = path.read_text(errors="replace")
    except FileNotFoundError:
        return
    known = _known_lines(text)
    revoked = {(t, k) for m, _, t, k in known if m == "@revoked"}
    keys = client.get_host_keys()
    for marker, names, keytype, key in known:
        if marker or (keytype, key) in revoked:
            continue
        try:
            entry = HostKeyEntry.from_line(f"{names} {keytype} {key}")
        except Exception:  # an unknown key type: OpenSSH skips it too
            continue
        if entry is None:
            continue
        for name in entry.hostnames:
            keys.add(name, entry.key.get_name(), entry.key)


def _ssh_config(spec: dict[str, Any]) -> Any:
    """The ssh_config a host is resolved with: the inventory's file, else the user's and the
    system's (the first value found for a key wins, as in OpenSSH)."""
    from paramiko import SSHConfig

    if spec.get("ssh_config"):
        paths = [Path(os.path.expanduser(spec["ssh_config"]))]
        if not paths[0].is_file():
            raise HostError(f"ssh_config {paths[0]} does not exist")
    else:
        paths = [Path(os.path.expanduser("~/.ssh/config")), Path("/etc/ssh/ssh_config")]
    config = SSHConfig()
    for path in paths:
        if path.is_file():
            with path.open() as fh:
                config.parse(fh)
    return config


class _Hop:
    """One SSH connection: the host itself, or a ProxyJump hop on the way to it."""

    def __init__(
        self,
        target: str,
        config: Any,
        *,
        user: str | None = None,
        port: int | None = None,
        keys: list[str] | None = None,
        connect_timeout: float = CONNECT_TIMEOUT,
        gateway: _Hop | None = None,
    ) -> None:
        from paramiko import SSHClient

        # ProxyJump's own form: [user@]host[:port].
        if "@" in target:
            user, target = target.rsplit("@", 1)[0] or user, target.rsplit("@", 1)[1]
        if target.count(":") == 1:
            target, _, p = target.partition(":")
            port = int(p)
        found = config.lookup(target)
        self.host: str = found.get("hostname", target)
        self.user: str = user or found.get("user") or getpass.getuser()
        self.port: int = int(port or found.get("port") or 22)
        self.keys = keys or [os.path.expanduser(k) for k in found.get("identityfile", [])]
        self.connect_timeout = connect_timeout
        self.gateway = gateway
        self.jump = found.get("proxyjump")
        self.client = SSHClient()

    @property
    def transport(self) -> Any:
        return self.client.get_transport()

    @property
    def is_connected(self) -> bool:
        t = self.transport
        return t is not None and t.is_active()

    def open(self) -> None:
        sock = None
        if self.gateway is not None:
            # A TCP connection made by the hop before, as ssh -J does.
            sock = self.gateway.transport.open_channel(
                "direct-tcpip", (self.host, self.port), ("", 0), timeout=self.connect_timeout
            )
        self.client.connect(
            self.host,
            port=self.port,
            username=self.user,
            key_filename=self.keys or None,
            timeout=self.connect_timeout,
            sock=sock,
        )


def _hops(target: str, config: Any, spec: dict[str, Any], timeout: float) -> list[_Hop]:
    """The connections that lead to ``target``, first hop first, the host itself last."""
    key = [os.path.expanduser(spec["key"])] if spec.get("key") else None
    port = int(spec["port"]) if spec.get("port") else None
    last = _Hop(target, config, user=spec.get("user"), port=port, keys=key, connect_timeout=timeout)
    hops: list[_Hop] = []
    jumps = last.jump if last.jump and last.jump.lower() != "none" else ""
    for jump in (j.strip() for j in jumps.split(",") if j.strip()):
        hop = _Hop(jump, config, connect_timeout=timeout, gateway=hops[-1] if hops else None)
        if (hop.host, hop.port) == (last.host, last.port):
            break  # a wildcard Host entry that names the host as its own jump
        hops.append(hop)
    last.gateway = hops[-1] if hops else None
    return [*hops, last]


class RemoteHost:
    """A host from the inventory, reached over SSH."""

    def __init__(self, spec: dict[str, Any], env: dict[str, str] | None = None) -> None:
        self.name = spec["name"]
        self.spec = spec
        self.env = dict(env or {})
        target = spec.get("address") or spec.get("alias") or self.name
        timeout = int(spec.get("connect_timeout", CONNECT_TIMEOUT))
        self._hops = _hops(target, _ssh_config(spec), spec, timeout)
        self.conn = self._hops[-1]
        for c in self._hops:
            self._verify_keys(c)
        self._open = False
        # Threads share a host (a sampler's loop beside the cell's own steps): the first
        # opens its connection, the others wait for it rather than open a second one.
        self._opening = threading.Lock()

    @property
    def where(self) -> str:
        return f"{self.conn.user}@{self.conn.host}:{self.conn.port}"

    @property
    def address(self) -> str:
        """The host's address as SSH reaches it: an ssh_config alias's HostName, which its
        daemons bind and advertise (the alias is a name only this machine's ssh knows)."""
        return str(self.conn.host)

    def _verify_keys(self, conn: Any) -> None:
        from paramiko import RejectPolicy

        client = conn.client
        files = _known_hosts_paths(self.spec)
        for path in files:
            _load_known_hosts(client, path)
        if self.spec.get("trust_new_keys"):
            # An explicit opt-in: record a new host's key (a changed key is still refused).
            client.set_missing_host_key_policy(AppendNewKeys(files[0]))
        else:
            client.set_missing_host_key_policy(RejectPolicy())

    def _connect(self) -> None:
        if self._open:
            return
        with self._opening:
            if not self._open:
                self._open_hops()

    def _open_hops(self) -> None:
        from paramiko.ssh_exception import (
            AuthenticationException,
            BadHostKeyException,
            NoValidConnectionsError,
            SSHException,
        )

        known = ", ".join(str(p) for p in _known_hosts_paths(self.spec))
        keyname = _key_name(self.conn.host, self.conn.port)
        try:
            for hop in self._hops:
                hop.open()
        except BadHostKeyException as e:
            raise HostError(
                f"host key rejected: the key of {self.name} ({keyname}) is not the one in "
                f"{known} (got {e.key.get_name()} {e.key.get_fingerprint().hex()}); if the host "
                f"was reinstalled, remove the old line (ssh-keygen -R '{keyname}') and add the "
                "new key after checking it"
            ) from None
        except AuthenticationException as e:
            if "transport shut down or saw EOF" in str(e):
                # paramiko's words when the connection ends mid-authentication: the host
                # went down (or its sshd dropped us), not a refused key.
                raise HostError(
                    f"connection to {self.where} lost during authentication: the server "
                    "closed it (the host went down, or its sshd dropped the connection)"
                ) from None
            raise HostError(f"authentication failed for {self.where}: {e}") from None
        except EOFError:
            # paramiko re-raises its transport thread's EOFError when the server closes the
            # connection during key exchange: the host is going down.
            raise HostError(
                f"connection to {self.where} lost during key exchange: the server closed it "
                "(the host went down, or its sshd dropped the connection)"
            ) from None
        except NoValidConnectionsError as e:
            raise HostError(f"unreachable: {self.where}: {_first_error(e)}") from None
        except TimeoutError:
            raise HostError(
                f"unreachable: {self.where}: no answer within {self.conn.connect_timeout} s"
            ) from None
        except socket.gaierror as e:
            raise HostError(f"unreachable: {self.where}: cannot resolve: {e}") from None
        except (ConnectionResetError, ConnectionAbortedError, BrokenPipeError) as e:
            # The server had answered: a reset after it (a host going down mid-handshake,
            # its sshd closing with our key exchange unread) is a lost connection.
            raise HostError(f"connection to {self.where} lost: {e}") from None
        except OSError as e:
            raise HostError(f"unreachable: {self.where}: {e}") from None
        except SSHException as e:
            if "not found in known_hosts" in str(e):
                # The unknown host may be a ProxyJump hop: paramiko's message names it.
                server = str(e).split("'")[1] if "'" in str(e) else keyname
                raise HostError(
                    f"host key rejected: {self.name} ({server}) is not in {known}; check "
                    f"its key and add it (ssh-keyscan -p {self.conn.port} {self.conn.host} "
                    f">> {_known_hosts_paths(self.spec)[0]}), or set trust_new_keys: true for "
                    "this host in the inventory"
                ) from None
            if "protocol banner" in str(e):
                # The connection was reset (or closed) before the server's greeting: the
                # host is going down, as a refused connection would say a moment later.
                raise HostError(
                    f"connection to {self.where} lost before the server's greeting: {e}"
                ) from None
            raise HostError(f"ssh failed for {self.where}: {e}") from None
        for hop in self._hops:
            transport = hop.transport
            if transport is None:
                continue
            # Through a ProxyJump the socket is a channel of the hop before: only the first
            # hop has a TCP socket to tune.
            if isinstance(transport.sock, socket.socket):
                transport.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            transport.set_keepalive(15)
        self._open = True

    def run(
        self, script: str, timeout: float, *, force: bool = False, abandon: str = ""
    ) -> CommandResult:
        """Run ``script`` with ``sh`` on the host, killed with its whole process group at
        ``timeout`` seconds (or when perfpost is interrupted); its exit code is its own, 124
        included, and a timeout is ``timed_out``, as on localhost. After an interrupt only
        ``force`` commands (clean-up) still run. ``abandon`` runs on the host if the
        connection drops while the script runs (perfpost killed): it removes scratch.

        A plain exec channel: two threads block in ``recv`` on its output and the caller
        blocks on its exit status, so nothing here wakes while the tool runs (Invoke's loop
        polled every 2 ms, 4% of a core per running cell)."""
        if _INTERRUPTED.is_set() and not force:
            raise KeyboardInterrupt("interrupted")
        self._connect()
        pidfile = f"/tmp/perfpost-{uuid.uuid4().hex[:12]}.pid"
        # `timeout` puts itself and the script in a new process group and kills that group;
        # its pid (= the group id) goes to a file so perfpost can kill the group itself. The
        # environment goes through standard input, which then stays open as the lifeline.
        wrapper = hostscript.remote_wrapper(pidfile, timeout, KILL_AFTER)
        command = (
            f"sh -c {shlex.quote(wrapper)} perfpost {shlex.quote(script)} {shlex.quote(abandon)}"
        )
        _ACTIVE[pidfile] = self
        channel = None
        try:
            channel = self._session()
            channel.exec_command(command)
            channel.sendall(hostscript.env_block(self.env))
            out, err = _Drain(channel.recv), _Drain(channel.recv_stderr)
            ended = channel.status_event.wait(timeout + KILL_AFTER + CLIENT_GRACE)
            if not ended:
                self._kill(pidfile)
                channel.close()
                return CommandResult(None, out.text(), err.text(), timed_out=True)
            # The exit status may come before the last output: read both to their end.
            out.join(READ_TIMEOUT)
            err.join(READ_TIMEOUT)
            code = channel.exit_status
        except BaseException as e:
            # Interrupted, or the connection died: take the tools down if the host answers.
            self._kill(pidfile)
            if isinstance(e, KeyboardInterrupt | SystemExit):
                raise
            raise HostError(f"connection to {self.where} lost: {e or type(e).__name__}") from None
        finally:
            _ACTIVE.pop(pidfile, None)
            if channel is not None:
                with contextlib.suppress(Exception):
                    channel.close()
        if _INTERRUPTED.is_set() and not force:
            raise KeyboardInterrupt("interrupted")
        if code is None or code < 0:
            # paramiko's "no exit status": the channel closed before the command ended (the
            # host's sshd died or dropped the session); the command's outcome is unknown.
            self._kill(pidfile)
            raise HostError(
                f"connection to {self.where} lost: the channel closed before the command ended"
            )
        # `timeout`'s own 124 (137 after KILL) is no sign: a tool may exit with it. The
        # wrapper marks a script `timeout` stopped, after its output (hostscript).
        timed_out, stderr = hostscript.split_timed_out(err.text(), pidfile)
        return CommandResult(None if timed_out else code, out.text(), stderr, timed_out=timed_out)

    def _session(self) -> Any:
        """A new exec channel on the host's connection."""
        transport = self.conn.client.get_transport()
        if transport is None or not transport.is_active():
            raise EOFError("the connection is closed")
        return transport.open_session(timeout=CONNECT_TIMEOUT)

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
            transport = self.conn.client.get_transport()
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
        self._connect()
        guard = shlex.quote(hostscript.scratch_guard())
        command = f"sh -c {guard} perfpost {shlex.quote(abandon)}"
        try:
            transport = self.conn.client.get_transport()
            if transport is None or not transport.is_active():
                raise EOFError("the connection is closed")
            channel = transport.open_session(timeout=CONNECT_TIMEOUT)
            # Returns once sshd has started the guard: only then may the scratch be made.
            channel.exec_command(command)
        except Exception as e:  # socket or SSH: the host is lost
            raise HostError(f"connection to {self.where} lost: {e or type(e).__name__}") from None
        return RemoteGuard(channel)

    def read(self, remote_path: str) -> bytes | None:
        """A file's bytes, into memory, with ``cat`` on an exec channel of its own (no SFTP,
        which a host may have disabled); None when it does not exist."""
        self._connect()
        q = shlex.quote(remote_path)
        script = f"[ -e {q} ] || {{ echo {_MISSING} >&2; exit 1; }}; exec cat -- {q}"
        out, err = bytearray(), bytearray()
        try:
            transport = self.conn.client.get_transport()
            if transport is None or not transport.is_active():
                raise EOFError("the connection is closed")
            channel = transport.open_session(timeout=CONNECT_TIMEOUT)
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
            raise HostError(
                f"cannot copy {remote_path} from {self.where}: {e or type(e).__name__}"
            ) from None
        if code == 0:
            return bytes(out)
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
        self._connect()
        try:
            channel = self._session()
            channel.settimeout(READ_TIMEOUT)
            channel.exec_command(f"sh -c {shlex.quote(script)}")
        except Exception as e:
            raise HostError(f"connection to {self.where} lost: {e or type(e).__name__}") from None
        s = Stream(channel, self.where)
        try:
            yield s
        except (TimeoutError, OSError, EOFError) as e:
            raise HostError(f"connection to {self.where} lost: {e or type(e).__name__}") from None
        finally:
            with contextlib.suppress(Exception):
                channel.close()

    def close(self) -> None:
        """Close the connection, best effort: a host that died mid-cell leaves a dead socket,
        and an error here would fail a cell whose record (and reason) is already written."""
        try:
            for hop in reversed(self._hops):
                with contextlib.suppress(Exception):
                    hop.client.close()
        finally:
            self._open = False


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


def _first_error(e: Any) -> str:
    errors = getattr(e, "errors", {}) or {}
    for err in errors.values():
        return err.strerror or str(err)
    return str(e)
