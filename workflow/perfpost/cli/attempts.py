"""New attempts of a failed cell, in the same job: each in its own ``attempt-<n>``
directory with its own log, the failed ones kept (``perfpost run-cell --retries``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from perfpost import paths


def next_attempt(outs: list[str]) -> list[str]:
    """Record paths of a new attempt after every attempt any of ``outs``' hosts has."""
    n = max(max(paths.attempts_in(Path(o).parent.parent), default=0) for o in outs)
    return [str(Path(o).parent.parent / f"attempt-{n + 1}" / Path(o).name) for o in outs]


def log_to(record_path: str) -> None:
    """Send this job's output to the new attempt's own log, as Snakemake does for the first."""
    log = Path(record_path).parent / Path(paths.CELL_LOG).name
    log.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def run_attempts(outs: list[str], run: Any, retries: int) -> None:
    """Run a cell's attempt and, while it fails and the profile's ``retries`` allow, new
    attempts: each in its own attempt-<n> directory with its own log, failed ones kept."""
    for tried in range(1, retries + 2):
        done = run(outs)
        if not any(r["status"] == "failed" for r in done) or tried > retries:
            return
        failed, outs = paths.attempt_of(outs[0]), next_attempt(outs)
        again = paths.attempt_of(outs[0])
        print(
            f"perfpost: retry {tried} of {retries}: attempt {again}, "
            f"logged in {Path(outs[0]).parent}/{Path(paths.CELL_LOG).name}",
            flush=True,
        )
        log_to(outs[0])
        print(f"perfpost: attempt {again}: retry {tried} of {retries} after attempt {failed}")
