"""The watcher of a run (``python -m perfpost.run.janitor PID START WORKDIR``, started in a
session of its own by :func:`perfpost.run.lifeline.start_janitor`): when the run ends, by
whatever means, it removes a killed run's locks, waits for its jobs and stops the clusters
it left up."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

from perfpost import paths
from perfpost.run import lifeline


def main(argv: list[str]) -> None:
    pid, start, workdir = int(argv[0]), argv[1], argv[2]
    lifeline.janitor(pid, start, workdir)
    if not (Path(workdir) / paths.CLUSTERS_DIR).is_dir():
        return  # no cluster was ever deployed here: nothing of deploy's to import or run
    from perfpost.run import deploy

    run = f"{socket.gethostname()}:{pid}:{start}"
    deploy.stop_owned(Path(workdir), run=run, why="its run was killed")


if __name__ == "__main__":
    main(sys.argv[1:])
