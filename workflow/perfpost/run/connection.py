"""A host's SSH connection: a Fabric :class:`~fabric.Connection`, configured for perfpost.

Fabric resolves the host from the inventory entry and ssh_config (HostName, User, Port,
IdentityFile, ProxyJump through its gateway connections) and runs commands through its
``runners.remote`` class. perfpost configures it rather than working around it:

- host keys are checked against known_hosts on every hop (:func:`hostkeys.verify`), where
  Fabric would accept any key (its AutoAddPolicy);
- the user's own Fabric files (``~/.fabric.yaml``) are not read, so a run does what its
  config says; what perfpost sets is the config's ``overrides``;
- the runner (:class:`Waiting`) blocks on the channel's exit status, as the command itself
  does, where Invoke's polls every ``input_sleep`` (10 ms) for the command's end and reads
  perfpost's standard input in a thread of its own: ``in_stream=False``, and the cell's
  variables are written once to the command's input, which stays open as its lifeline;
- TCP_NODELAY (a command's round trip is 3x shorter), a connect timeout for every stage of
  the handshake, and keepalives that notice a host that stopped answering (:class:`Alive`),
  as ssh's ServerAliveInterval and ServerAliveCountMax do.

A connection is opened once: after it was lost, it is not opened again behind the caller's
back (a frozen host would hold every later step for a connect timeout), only once closed.
"""

from __future__ import annotations

import codecs
import contextlib
import math
import os
import socket
import threading
import time
import traceback
from collections.abc import Iterator
from typing import Any

from fabric import Config, Connection
from fabric.runners import Remote

from perfpost.errors import HostError, HostSilent
from perfpost.run import hostkeys

CONNECT_TIMEOUT = 15
ALIVE_INTERVAL = 5.0  # seconds between keepalive requests (ssh's ServerAliveInterval)
ALIVE_COUNT_MAX = 3  # unanswered intervals before the host counts as gone (ServerAliveCountMax)
READ_TIMEOUT = 120  # seconds a command's output may lag its exit status


class Waiting(Remote):
    """Fabric's runner for one command, waiting on events rather than polling.

    ``stdin_head`` is written to the command's standard input as soon as it started; the
    input is never closed by the runner (the command's lifeline). ``on_deadline`` runs when
    Invoke's ``timeout`` fires, before the channel closes (it kills the command's process
    group on the host)."""

    read_chunk_size = 1 << 16  # Invoke's 1000 bytes made a large output 65 times the reads
    stdin_head = b""
    on_deadline: Any = None
    on_stdout: Any = None  # called with each chunk of the command's output as it comes
    deadline_hit = False

    def send_start_message(self, command: str) -> None:
        super().send_start_message(command)
        if self.stdin_head:
            self.channel.sendall(self.stdin_head)

    def wait(self) -> None:
        """Block until the exit status comes (or the channel closes), then give the output
        readers a while to read the rest: the status may come before the last output."""
        self.channel.status_event.wait()
        end = time.monotonic() + READ_TIMEOUT
        for thread in self.threads.values():
            thread.join(max(0.0, end - time.monotonic()))
        if any(t.is_alive() for t in self.threads.values()):
            self.channel.close()  # a process left holding the output open: what came is kept

    def read_proc_output(self, reader: Any) -> Iterator[str]:
        # One decoder per stream: a character split between two reads stays one character.
        decoder = codecs.getincrementaldecoder(self.encoding)("replace")
        while data := reader(self.read_chunk_size):
            if text := decoder.decode(data):
                yield text
        if text := decoder.decode(b"", final=True):
            yield text

    def read_proc_stdout(self, num_bytes: int) -> bytes:
        data: bytes = super().read_proc_stdout(num_bytes)
        if data and self.on_stdout is not None:
            try:
                self.on_stdout(data)
            except Exception:  # a watcher's fault never loses the output
                traceback.print_exc()
        return data

    def respond(self, buffer_: list[str]) -> None:
        # Invoke joins the whole output so far on every read for its watchers; none here.
        if self.watchers:
            super().respond(buffer_)

    def kill(self) -> None:
        self.deadline_hit = True
        if self.on_deadline is not None:
            self.on_deadline()
        super().kill()

    @property
    def timed_out(self) -> bool:
        return self.deadline_hit


def fabric_config(spec: dict[str, Any], timeout: float) -> Config:
    """Fabric's configuration for the host ``spec``: its ssh_config file (``-F`` semantics:
    that file alone), else the user's and the system's; perfpost's runner and settings."""
    path = os.path.expanduser(spec["ssh_config"]) if spec.get("ssh_config") else None
    if path is not None and not os.path.isfile(path):
        raise HostError(f"ssh_config {path} does not exist")
    seconds = math.ceil(timeout)
    overrides = {
        "runners": {"remote": Waiting},
        # UTF-8 whatever this machine's locale says (a job's may be C: ASCII).
        "run": {
            "hide": True,
            "warn": True,
            "in_stream": False,
            "pty": False,
            "echo": False,
            "encoding": "utf-8",
        },
        # Environment variables never go on a command line (Fabric writes them unescaped).
        "inline_ssh_env": False,
        "timeouts": {"connect": seconds},
    }
    config = Config(lazy=True, runtime_ssh_path=path, overrides=overrides)
    config.load_ssh_config()
    return config


def _gateway(config: Config, target: str, port: int | None, timeout: int) -> Connection | bool:
    """The ProxyJump chain to ``target`` as Fabric gateways, in ssh's order: the first hop
    listed is reached directly, each later one through the hop before it, the host through
    the last. (Fabric's own reading of ProxyJump reverses a list of several hops.) False
    when there is no hop, ``ProxyJump none`` included."""
    found = config.base_ssh_config.lookup(target)
    host, port = found.get("hostname", target), int(port or found.get("port") or 22)
    gateway: Connection | bool = False
    for jump in (j.strip() for j in found.get("proxyjump", "").split(",") if j.strip()):
        if jump.lower() == "none":
            break
        # Its own connect_kwargs: Fabric would write a hop's IdentityFile into the shared
        # config's, and every later hop and the host would try that key first.
        hop = Connection(
            jump,
            config=config,
            gateway=gateway,
            connect_timeout=timeout,
            connect_kwargs=_stage_timeouts(timeout),
        )
        if (hop.host, hop.port) == (host, port):
            break  # a wildcard Host entry that names the host as its own jump
        gateway = hop
    return gateway


def _stage_timeouts(seconds: float) -> dict[str, float]:
    """Every stage of a handshake waits as long as the TCP connection may: a host whose
    sshd is frozen accepts the connection and never greets."""
    return {"banner_timeout": seconds, "auth_timeout": seconds, "channel_timeout": seconds}


class HostConnection(Connection):
    """The Fabric connection to one inventory host (``spec``: its entry, with ``name``)."""

    # Attributes of perfpost's own, declared here: Invoke's context turns an undeclared
    # attribute into a configuration key.
    spec: dict[str, Any] = {}  # noqa: RUF012 (replaced per instance)
    alive: Alive | None = None
    opened = False
    opening: Any = None

    def __init__(self, spec: dict[str, Any]) -> None:
        # Fabric keeps whole seconds: a fraction is rounded up, never down to no timeout.
        timeout = math.ceil(float(spec.get("connect_timeout", CONNECT_TIMEOUT)))
        target = spec.get("address") or spec.get("alias") or spec["name"]
        config = fabric_config(spec, timeout)
        kwargs: dict[str, Any] = _stage_timeouts(timeout)
        if spec.get("key"):
            kwargs["key_filename"] = [os.path.expanduser(spec["key"])]
        port = int(spec["port"]) if spec.get("port") else None
        super().__init__(
            target,
            user=spec.get("user"),
            port=port,
            config=config,
            connect_timeout=timeout,
            connect_kwargs=kwargs,
            gateway=_gateway(config, target, port, timeout),
        )
        self.spec = spec
        self.opening = threading.Lock()
        for hop in self.hops():
            hostkeys.verify(hop.client, spec)

    @property
    def where(self) -> str:
        return f"{self.user}@{self.host}:{self.port}"

    def hops(self) -> list[Connection]:
        """This connection and its gateways, the host itself first, the first hop last."""
        out: list[Connection] = [self]
        while isinstance(out[-1].gateway, Connection):
            out.append(out[-1].gateway)
        return out

    def open(self) -> Any:
        """Connect (once; the hops first) with perfpost's reasons for what went wrong."""
        if self.is_connected:
            return None
        with self.opening:
            if self.is_connected:
                return None
            self.check()
            if self.opened:
                raise HostError(f"connection to {self.where} lost: it closed")
            try:
                got = super().open()
            except Exception as e:
                raise _refused(self, e) from None
            self.opened = True
            for hop in self.hops():
                sock = hop.transport.sock if hop.transport is not None else None
                # Through a ProxyJump the socket is a channel of the hop before: only the
                # first hop has a TCP socket to tune.
                if isinstance(sock, socket.socket):
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            interval = float(self.spec.get("server_alive_interval", ALIVE_INTERVAL))
            count = int(self.spec.get("server_alive_count_max", ALIVE_COUNT_MAX))
            self.alive = Alive(self.transport, self.spec["name"], interval, count)
            return got

    def check(self) -> None:
        """Raise :class:`HostSilent` if the host stopped answering."""
        if self.alive is not None and self.alive.silent is not None:
            raise self.alive.silent

    def session(self, timeout: float | None = None) -> Any:
        """A new exec channel (the connection opened first if it never was)."""
        self.open()
        self.check()
        transport = self.transport
        if transport is None or not transport.is_active():
            raise HostError(f"connection to {self.where} lost: it closed")
        return transport.open_session(timeout=timeout or self.connect_timeout)

    def create_session(self) -> Any:
        """Fabric's runner asks for its channel here: never a silent reconnection, and a
        timeout on the channel's opening."""
        return self.session()

    def lost(self, e: BaseException | None = None) -> HostError:
        """What a failure on an open connection means: the host stopped answering (the
        keepalives said so), else the connection was lost."""
        if self.alive is not None and self.alive.silent is not None:
            return self.alive.silent
        detail = (str(e) or type(e).__name__) if e is not None else "it closed"
        return HostError(f"connection to {self.where} lost: {detail}")

    def close(self) -> None:
        """Close the connection and its hops, best effort: a host that died mid-cell leaves
        a dead socket, and an error here would fail a cell whose record is written."""
        if self.alive is not None:
            self.alive.stop()
        for hop in self.hops():
            with contextlib.suppress(Exception):
                hop.client.close()
        # Used again after this, the host gets a new connection, as a new RemoteHost would.
        self.opened, self.alive = False, None


class Alive:
    """ssh's ServerAliveInterval and ServerAliveCountMax for one connection: every
    ``interval`` seconds a request the server must answer (``keepalive@openssh.com``, which
    OpenSSH refuses, and a refusal is an answer); once none came for ``interval *
    count_max`` seconds, the host counts as gone and its connection is closed, which ends
    whatever waited on it (:attr:`silent` says why).

    paramiko's own keepalive (``Transport.set_keepalive``) asks for no answer, so it can keep
    a NAT mapping open but never notices a host that went quiet. A frozen host (its sshd
    stopped) and one cut off from the network look alike from here: nothing comes back.
    """

    REQUEST = "keepalive@openssh.com"

    def __init__(self, transport: Any, name: str, interval: float, count_max: int) -> None:
        self.transport = transport
        self.name = name
        self.interval = interval
        self.limit = interval * count_max
        self.heard = time.time()  # the last answer
        self.silent: HostSilent | None = None
        self._stop = threading.Event()
        for target in (self._ask, self._watch):
            threading.Thread(target=target, name=f"perfpost-alive-{name}", daemon=True).start()

    def _ask(self) -> None:
        while not self._stop.wait(self.interval):
            # Returns on the answer, or once the transport is closed.
            self.transport.global_request(self.REQUEST, wait=True)
            if not self.transport.is_active():
                return
            self.heard = time.time()

    def _watch(self) -> None:
        while not self._stop.wait(max(0.5, self.heard + self.limit - time.time())):
            silence = time.time() - self.heard
            if silence >= self.limit:
                self.silent = HostSilent(self.name, self.heard, silence)
                with contextlib.suppress(Exception):
                    self.transport.close()
                return

    def stop(self) -> None:
        self._stop.set()


def _refused(conn: HostConnection, e: Exception) -> HostError:
    """A failed connection attempt in words for the cell's record."""
    from paramiko.ssh_exception import (
        AuthenticationException,
        BadHostKeyException,
        NoValidConnectionsError,
        SSHException,
    )

    spec, where, name = conn.spec, conn.where, conn.spec["name"]
    known = ", ".join(str(p) for p in hostkeys.known_hosts_paths(spec))
    keyname = hostkeys.key_name(conn.host, conn.port)
    if isinstance(e, HostError):
        return e
    if isinstance(e, BadHostKeyException):
        return HostError(
            f"host key rejected: the key of {name} ({keyname}) is not the one in "
            f"{known} (got {e.key.get_name()} {e.key.get_fingerprint().hex()}); if the host "
            f"was reinstalled, remove the old line (ssh-keygen -R '{keyname}') and add the "
            "new key after checking it"
        )
    if isinstance(e, AuthenticationException):
        if "transport shut down or saw EOF" in str(e):
            # paramiko's words when the connection ends mid-authentication: the host went
            # down (or its sshd dropped us), not a refused key.
            return HostError(
                f"connection to {where} lost during authentication: the server "
                "closed it (the host went down, or its sshd dropped the connection)"
            )
        return HostError(f"authentication failed for {where}: {e}")
    if isinstance(e, EOFError):
        # paramiko re-raises its transport thread's EOFError when the server closes the
        # connection during key exchange: the host is going down.
        return HostError(
            f"connection to {where} lost during key exchange: the server closed it "
            "(the host went down, or its sshd dropped the connection)"
        )
    if isinstance(e, NoValidConnectionsError):
        return HostError(f"unreachable: {where}: {_first_error(e)}")
    if isinstance(e, TimeoutError):
        return HostError(f"unreachable: {where}: no answer within {conn.connect_timeout} s")
    if isinstance(e, socket.gaierror):
        return HostError(f"unreachable: {where}: cannot resolve: {e}")
    if isinstance(e, ConnectionResetError | ConnectionAbortedError | BrokenPipeError):
        # The server had answered: a reset after it (a host going down mid-handshake, its
        # sshd closing with our key exchange unread) is a lost connection.
        return HostError(f"connection to {where} lost: {e}")
    if isinstance(e, OSError):
        return HostError(f"unreachable: {where}: {e}")
    if isinstance(e, SSHException):
        said = str(e)
        if "not found in known_hosts" in said:
            # The unknown host may be a ProxyJump hop: paramiko's message names it.
            server = said.split("'")[1] if "'" in said else keyname
            return HostError(
                f"host key rejected: {name} ({server}) is not in {known}; check "
                f"its key and add it (ssh-keyscan -p {conn.port} {conn.host} "
                f">> {hostkeys.known_hosts_paths(spec)[0]}), or set trust_new_keys: true for "
                "this host in the inventory"
            )
        if said == "No existing session":
            # paramiko's words for a login tried after a key exchange that never finished
            # (its wait gave up silently): the host stopped answering mid-handshake.
            return HostError(
                f"unreachable: {where}: the key exchange did not finish within "
                f"{conn.connect_timeout} s (the host stopped answering)"
            )
        if "protocol banner" in said:
            if isinstance(e.__context__, TimeoutError):
                # The connection was taken and no greeting came: the host is frozen, or
                # its sshd too busy to answer.
                return HostError(
                    f"unreachable: {where}: the connection was accepted but no SSH greeting "
                    f"came within {conn.connect_timeout} s"
                )
            # The connection was reset (or closed) before the server's greeting: the host
            # is going down, as a refused connection would say a moment later.
            return HostError(f"connection to {where} lost before the server's greeting: {e}")
        return HostError(f"ssh failed for {where}: {e}")
    return HostError(f"ssh failed for {where}: {type(e).__name__}: {e}")


def _first_error(e: Any) -> str:
    errors = getattr(e, "errors", {}) or {}
    for err in errors.values():
        return err.strerror or str(err)
    return str(e)
