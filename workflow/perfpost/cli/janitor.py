"""The watcher of a run (``python -m perfpost.cli.janitor PID START WORKDIR [SOCKET]``,
started in a session of its own by :func:`perfpost.run.lifeline.start_janitor`): while the
run lives it serves its cells (:mod:`perfpost.run.cellserver`, on SOCKET); when the run
ends, by whatever means, it removes a killed run's locks, waits for its jobs and stops the
clusters it left up."""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable
from pathlib import Path

from perfpost import paths
from perfpost.run import lifeline


def _stop(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def serve_cells(sock: str, pid: int, start: str, workdir: str) -> None:
    """Serve the cells of the run ``pid`` (started at ``start``) on ``sock`` with perfpost's
    command line; return once the run and the cells served have ended. A killed run's locks
    are removed the moment it ends, not after its cells: the next run can start at once (it
    waits for those cells itself)."""
    from perfpost.run import cellserver

    run_fd = lifeline.run_pidfd(pid, start)
    if run_fd is None:
        return
    # Stopped (SIGTERM) while serving: the socket and its directory go with it; the cells
    # it forked are stopped by their kernel-sent SIGTERM (cellserver._die_with).
    signal.signal(signal.SIGTERM, _stop)
    cellserver.serve(
        sock,
        run_fd,
        _perfpost,
        cellserver.inherited(),
        on_run_end=lambda: lifeline.remove_stale_locks(workdir),
    )


def _perfpost() -> Callable[[list[str]], int]:
    """perfpost's command line, imported, its parser built once here rather than in every
    cell."""
    from perfpost.cli import build_parser
    from perfpost.cli import main as perfpost

    build_parser()
    return perfpost


def main(argv: list[str]) -> None:
    pid, start, workdir, sock = lifeline.watcher_args(argv)
    if sock:
        serve_cells(sock, pid, start, workdir)
    lifeline.janitor(pid, start, workdir)
    if not (Path(workdir) / paths.CLUSTERS_DIR).is_dir():
        return  # no cluster was ever deployed here: nothing of deploy's to import or run
    from perfpost.run import deploy

    deploy.stop_owned(Path(workdir), run=lifeline.mark(pid, start), why="its run was killed")


if __name__ == "__main__":
    main(sys.argv[1:])
