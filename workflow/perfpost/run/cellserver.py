"""The run's cell server: cells, and perfpost's steps after them, forked from one process
that has perfpost imported already.

A cell job used to be a Python process of its own: interpreter start, then perfpost's
imports (and paramiko's, for a remote host), 0.1 to 0.15 s of every cell before its tool ran,
and 0.3 CPU-seconds of the controller. The run's watcher (:mod:`perfpost.cli.janitor`, one
per run, started in ``onstart``) imports all that once and serves each ``run-cell`` and
``run-together`` instead: the job's process (the client, :mod:`perfpost.run.cellclient`,
which the rules run by its path) connects to a Unix socket, hands over its standard streams,
arguments, environment and directory, and waits; the server forks, and the child runs the
cell exactly as the job's process would have (same code, same streams, same environment)
and exits. The client exits with its exit code. perfpost's steps after the cells (tables,
figures, posts: :data:`perfpost.run.cellclient.STEPS`) are served the same way; the libraries
they import (pandas, matplotlib, scipy) the server imports when the first of them comes.

What the job's process was, it stays: Snakemake's job, killed with it. A signal the client
gets (SIGTERM, SIGINT, SIGHUP) is passed to the cell, which stops its tools on every host as
before, and the client waits for it to end; if the client dies, the cell is sent SIGTERM.
The cell watches the run as every job does. The run makes the socket, listening, before
its first job starts, and hands it to the server, so a job that comes while the server still
imports waits for it. Where no server answers (``perfpost run-cell`` typed by hand, the
server gone), the client runs the cell itself, as before.

The socket is in a directory only this user can enter, and the server serves only its own
user (SO_PEERCRED). It stops taking cells once the run is gone, and returns once the cells
it forked have ended."""

from __future__ import annotations

import os
import select
import signal
import socket
import struct
import sys

from perfpost.run.cellclient import FORWARDED, HEADER_SIZE, STEPS, decode

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    Main = Callable[[list[str]], int]
    Request = tuple[list[str], dict[str, str], str]  # argv, env, cwd

_REQUEST_TIMEOUT = 10.0  # seconds a connected client gets to send its request


# ------------------------------------------------------------------------------ server


# What a cell imports, imported once before any cell is forked (by name: the server is run
# by perfpost's command line, which it must not import itself).
WARM = (
    "perfpost.cli.steps",
    "perfpost.cli.user",
    "perfpost.plan.specs",
    "perfpost.run.hosts",
    "perfpost.run.runner",
    "ctypes",
)
# What a cell on an SSH host adds (Fabric, Invoke and paramiko, imported by
# perfpost.run.remote when a host is opened, with what a connection looks up): imported only
# for a run that has such a host, since the run's first jobs wait for the server's imports.
WARM_REMOTE = ("perfpost.run.remote", "fabric", "invoke", "paramiko", "pwd", "encodings.idna")


def _remote_hosts() -> bool:
    """Whether the run's cells may use an SSH host: a host other than localhost in the run's
    settings (``$PERFPOST_RUNTIME``); where those are not set, it may."""
    import json

    from perfpost.hostenv import LOCALHOST
    from perfpost.plan.specs import RUNTIME_ENV

    try:
        hosts = json.loads(os.environ[RUNTIME_ENV]).get("hosts", {})
    except (KeyError, ValueError, AttributeError):
        return True
    return any(name != LOCALHOST for name in hosts)


def _warm() -> None:
    import importlib

    from perfpost import tools

    for name in WARM + (WARM_REMOTE if _remote_hosts() else ()):
        importlib.import_module(name)
    tools.every()  # every tool's module, loaded on first use otherwise


# What perfpost's steps after the cells import (tables, figures, posts: pandas, pyarrow,
# matplotlib, scipy, jinja2), imported by the server when the first of them comes, so every
# later one is forked with them: not at its start, where the run's first cells would wait.
WARM_STEPS = (
    "perfpost.analysis.tidy",
    "perfpost.analysis.resources",
    "perfpost.analysis.profiles",
    "perfpost.analysis.steady",
    "perfpost.analysis.compare",
    "perfpost.analysis.precision",
    "perfpost.analysis.plots",
    "perfpost.analysis.report",
    "perfpost.analysis.html",
    "perfpost.history.store",
    "perfpost.run.envinfo",
)
_STEPS_WARM: list[bool] = []


def _warm_steps(argv: list[str]) -> None:
    """Import what perfpost's steps use, once, as the first step is handed over."""
    if _STEPS_WARM or not argv or argv[0] not in STEPS:
        return
    import importlib

    _STEPS_WARM.append(True)
    for name in WARM_STEPS:
        try:
            importlib.import_module(name)
        except Exception:  # the step imports it again, and says what is wrong
            pass


class _Cell:
    def __init__(self, conn: socket.socket, pid: int, pidfd: int) -> None:
        self.conn, self.pid, self.pidfd = conn, pid, pidfd


def _read_request(conn: socket.socket) -> tuple[Request, list[int]]:
    """The job's (argv, env, cwd) and its fds 0, 1 and 2, which are closed here if the
    request is bad (OSError or ValueError)."""
    conn.settimeout(_REQUEST_TIMEOUT)
    head, fds, _, _ = socket.recv_fds(conn, HEADER_SIZE, 3)
    try:
        if len(head) != HEADER_SIZE or len(fds) != 3:
            raise OSError("a malformed request")
        size = int.from_bytes(head, "big")
        data = b""
        while len(data) < size:
            got = conn.recv(min(65536, size - len(data)))
            if not got:
                raise OSError("a truncated request")
            data += got
        request = decode(data)
    except (OSError, ValueError):
        for fd in fds:
            os.close(fd)
        raise
    conn.settimeout(None)
    return request, fds


def _child(request: Request, fds: list[int], close: list[Any], main: Main) -> None:
    """In the forked child: become the job's process and run its command; never returns.
    ``close``: the server's sockets (closed as objects, so that collecting them later does not
    close a descriptor the cell reopened) and descriptors."""
    code = 1
    server = os.getppid()
    try:
        for obj in close:
            if isinstance(obj, int):
                os.close(obj)
            else:
                obj.close()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        # As a fresh Python process has them (the server's are its own).
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        _die_with(server)
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        argv, env, cwd = request
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(env)
        sys.argv = ["perfpost", *argv]
        print(f"perfpost: run by the run's cell server (pid {server})", flush=True)
        code = main(argv)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


_PR_SET_PDEATHSIG = 1  # prctl(2)


def _die_with(server: int) -> None:
    """SIGTERM for this cell should its server die (killed, say): the job has then lost its
    answer and ends as failed, so the cell stops its tools and leaves no record rather than
    run on unseen (the next run measures it again)."""
    import ctypes

    ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM))
    if os.getppid() != server:  # it died before the line above
        os.kill(os.getpid(), signal.SIGTERM)


def listen(path: str) -> socket.socket | None:
    """A Unix socket listening on ``path``, or None if it cannot be bound there. The run
    makes it before its first job starts and hands it to its server (:func:`inherited`), so
    that no job finds the socket missing and runs its cell itself."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(path)
    except OSError:
        listener.close()
        return None
    listener.listen(256)
    return listener


def inherited(fd: int = 0) -> socket.socket | None:
    """The listening Unix socket this process was handed as ``fd`` (the run's watcher gets
    it as its standard input), or None if ``fd`` is something else. Taken, ``fd`` becomes
    /dev/null, as the watcher's standard input was before: nothing it starts later reads
    whatever file would next take the number."""
    import stat

    try:
        if not stat.S_ISSOCK(os.fstat(fd).st_mode):
            return None
        sock = socket.socket(fileno=os.dup(fd))
    except OSError:
        return None
    if sock.family != socket.AF_UNIX or not sock.getsockopt(
        socket.SOL_SOCKET, socket.SO_ACCEPTCONN
    ):
        sock.close()
        return None
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, fd)
    os.close(null)
    return sock


def serve(
    path: str,
    run_fd: int,
    load: Callable[[], Main],
    listener: socket.socket | None = None,
    on_run_end: Callable[[], object] | None = None,
) -> None:
    """Serve cells on the Unix socket ``path`` (``listener`` if it is listening there
    already) until the run ends (``run_fd``, its pidfd, becomes readable), each forked child
    calling the ``main`` that ``load()`` imports (perfpost's command line) with the job's
    arguments; return once every cell forked has ended too. ``on_run_end`` is called as soon
    as the run ends, before its cells have (a killed run's locks go at once). Removes the
    socket and its directory; closes ``run_fd``.

    The socket listens before anything is imported (``load`` and :func:`_warm`, 0.1 to 0.2 s
    of a 2-core machine): the run's first jobs, which start at once, wait in the backlog for
    that rather than each import perfpost itself (64 imports at once on 64 hosts)."""
    listener = listener or listen(path)
    if listener is None:
        os.close(run_fd)
        return
    try:
        main = load()
        _warm()
        _loop(listener, path, run_fd, main, on_run_end)
    finally:
        os.close(run_fd)
        if listener.fileno() != -1:
            listener.close()
        _unlink(path)


def _loop(
    listener: socket.socket,
    path: str,
    run_fd: int,
    main: Main,
    on_run_end: Callable[[], object] | None = None,
) -> None:
    uid = os.getuid()
    cells: dict[int, _Cell] = {}  # by the fd it is watched through (its pidfd or its client)
    poller = select.poll()
    poller.register(run_fd, select.POLLIN)
    poller.register(listener, select.POLLIN)
    run_alive = True
    while run_alive or cells:
        for fd, _ in poller.poll():
            if fd == run_fd:
                run_alive = False
                poller.unregister(run_fd)
                poller.unregister(listener)
                listener.close()
                _unlink(path)
                if on_run_end is not None:
                    on_run_end()
            elif run_alive and fd == listener.fileno():
                _accept(listener, uid, cells, poller, [listener, run_fd], main)
            elif fd in cells:
                _on_event(fd, cells, poller)


def _accept(
    listener: socket.socket,
    uid: int,
    cells: dict[int, _Cell],
    poller: select.poll,
    own: list[Any],
    main: Main,
) -> None:
    conn, _ = listener.accept()
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    if struct.unpack("3i", creds)[1] != uid:
        conn.close()
        return
    try:
        request, fds = _read_request(conn)
    except (OSError, ValueError):
        conn.close()
        return
    _warm_steps(request[0])
    others = {id(c): c for c in cells.values()}.values()
    pid = os.fork()
    if pid == 0:
        close = [*own, conn, *(c.conn for c in others), *(c.pidfd for c in others)]
        _child(request, fds, close, main)
    for fd in fds:
        os.close(fd)
    pidfd = os.pidfd_open(pid)
    cell = _Cell(conn, pid, pidfd)
    cells[pidfd] = cells[conn.fileno()] = cell
    poller.register(pidfd, select.POLLIN)
    poller.register(conn, select.POLLIN)


def _on_event(fd: int, cells: dict[int, _Cell], poller: select.poll) -> None:
    cell = cells[fd]
    if fd == cell.pidfd:
        _, status = os.waitpid(cell.pid, 0)
        try:
            cell.conn.sendall(f"{os.waitstatus_to_exitcode(status)}\n".encode())
        except OSError:
            pass
        _forget(cell, cells, poller)
        return
    try:
        got = cell.conn.recv(16)
    except OSError:
        got = b""
    if got:
        sigs = [s for s in got if s in {int(x) for x in FORWARDED}]
    else:  # the client is gone: the cell stops as if Snakemake had stopped it
        sigs = [int(signal.SIGTERM)]
        poller.unregister(cell.conn)
        del cells[cell.conn.fileno()]
    for sig in sigs:
        try:
            os.kill(cell.pid, sig)
        except ProcessLookupError:
            pass


def _forget(cell: _Cell, cells: dict[int, _Cell], poller: select.poll) -> None:
    poller.unregister(cell.pidfd)
    cells.pop(cell.pidfd, None)
    os.close(cell.pidfd)
    if cell.conn.fileno() != -1:
        if cells.pop(cell.conn.fileno(), None) is not None:
            poller.unregister(cell.conn)
        cell.conn.close()


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
    try:
        os.rmdir(os.path.dirname(path))
    except OSError:
        pass
