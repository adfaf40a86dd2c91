"""The job's side of the run's cell server (:mod:`perfpost.run.cellserver`).

A cell's rule runs this file by its path (:func:`job_argv`), not the ``perfpost`` command:
the job only hands its cell over and waits, and the console script's imports (``re``, then
``socket``, ``json`` and ``enum`` for the hand-over) took longer than the rest of the
job's own Python. So this file imports nothing but the interpreter's own modules and
nothing of perfpost: it also runs as ``python -S`` (no site-packages to scan).

Where no server takes the cell (no run around it, the server gone, a job in another Python
installation than the server's), it runs perfpost's command line in its place (``python -m
perfpost``), as the ``perfpost`` command would.
"""

import _signal
import _socket
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

# The socket's path, set for the run's jobs by the run (lifeline.start_janitor), and the
# Python installation (see installation()) the server runs in: a job in another one (a
# rule's conda environment under --use-conda) runs its cell itself, in the environment it
# was given.
ENV = "PERFPOST_CELL_SERVER"
PREFIX_ENV = "PERFPOST_CELL_SERVER_PREFIX"
# The commands the server runs; any other is run by the job's own process. Cells, and
# perfpost's own steps after them (each imported pandas, matplotlib and scipy anew: about
# 2 CPU-seconds of its own, 6 steps an experiment).
CELLS = ("run-cell", "run-together")
STEPS = ("env", "tables", "history-add", "round", "figures", "post", "html")
SERVED = CELLS + STEPS
# Signals the job passes on to its cell: Snakemake stopping it, Ctrl-C, a closed terminal.
FORWARDED = (_signal.SIGTERM, _signal.SIGINT, _signal.SIGHUP)
HEADER_SIZE = 4  # the request's length, big-endian, sent with the job's fds 0, 1 and 2


def installation() -> str:
    """The Python installation this interpreter belongs to: ``sys.prefix`` as it is once
    site.py has run. Under ``-S``, as the job runs, a virtualenv's interpreter keeps its base
    installation's prefix (site.py is what reads ``pyvenv.cfg``), so this looks for that
    file where site.py does: beside the interpreter or one directory up."""
    exe_dir = os.path.dirname(os.path.abspath(sys.executable))
    env = os.path.dirname(exe_dir)
    for d in (exe_dir, env):
        if os.path.isfile(os.path.join(d, "pyvenv.cfg")):
            return env
    return sys.prefix


def server_env(sock: str) -> dict[str, str]:
    """The variables that send a job's served commands to the server on ``sock``, which
    runs in this Python installation."""
    return {ENV: sock, PREFIX_ENV: installation()}


def job_argv(python: str = "python3") -> list[str]:
    """The command a rule runs a served perfpost command with (its arguments follow):
    ``python3`` as the job finds it (the virtualenv's, put first on PATH for the run, or a
    conda environment's), without site-packages."""
    return [python, "-S", os.path.abspath(__file__)]


def encode(argv: list[str], env: "Mapping[bytes, bytes]", cwd: bytes) -> bytes:
    """A request: NUL-separated (no argument, variable or path holds a NUL): the directory,
    the number of arguments, the arguments, then ``NAME=VALUE`` of every variable."""
    fields = [cwd, str(len(argv)).encode(), *(os.fsencode(a) for a in argv)]
    fields += [k + b"=" + v for k, v in env.items()]
    return b"\0".join(fields)


def decode(data: bytes) -> tuple[list[str], dict[str, str], str]:
    """(argv, env, cwd) of a request made by :func:`encode`, as str (``os.fsdecode``)."""
    fields = data.split(b"\0")
    if len(fields) < 2:
        raise ValueError("a request without its directory and argument count")
    try:
        n = int(fields[1])
    except ValueError:
        raise ValueError("a request whose argument count is not a number") from None
    argv = [os.fsdecode(a) for a in fields[2 : 2 + n]]
    if len(argv) != n:
        raise ValueError("a request with fewer arguments than it counts")
    env = {}
    for item in fields[2 + n :]:
        name, sep, value = item.partition(b"=")
        if not sep:
            raise ValueError("a request with a variable without '='")
        env[os.fsdecode(name)] = os.fsdecode(value)
    return argv, env, os.fsdecode(fields[0])


def hand_over(argv: list[str]) -> int | None:
    """Have the run's cell server run ``perfpost argv`` in this process's place: its exit
    code, or None where no server takes it (then the caller runs it itself)."""
    path = os.environ.get(ENV)
    if not path or not argv or argv[0] not in SERVED:
        return None
    if os.environ.get(PREFIX_ENV) != installation():
        return None
    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        conn.connect(path)
        data = encode(argv, os.environb, os.getcwdb())
        fds = b"".join(fd.to_bytes(4, sys.byteorder) for fd in (0, 1, 2))
        rights = [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fds)]
        conn.sendmsg([len(data).to_bytes(HEADER_SIZE, "big")], rights)
        conn.sendall(data)
    except OSError:
        conn.close()
        return None

    def forward(signum: int, frame: object) -> None:
        try:
            conn.send(bytes([signum]))
        except OSError:
            pass

    for sig in FORWARDED:
        _signal.signal(sig, forward)
    reply = b""
    while not reply.endswith(b"\n"):
        try:
            got = conn.recv(64)
        except OSError:
            got = b""
        if not got:
            sys.stderr.write("perfpost: the run's cell server went away before the cell ended\n")
            return 1
        reply += got
    conn.close()
    code = int(reply)
    return 128 - code if code < 0 else code


def main() -> None:
    argv = sys.argv[1:]
    code = hand_over(argv)
    if code is None:
        os.execv(sys.executable, [sys.executable, "-m", "perfpost", *argv])
    sys.exit(code)


if __name__ == "__main__":
    main()
