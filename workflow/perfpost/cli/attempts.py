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


def _stdout_file() -> Path | None:
    """The regular file this job's output goes to (its Snakemake log), if it is one."""
    try:
        path = Path(os.readlink(f"/proc/self/fd/{sys.stdout.fileno()}"))
    except (OSError, ValueError, AttributeError):
        return None
    return path if path.is_file() else None


def hold_log() -> None:
    """Give the log this job writes a second name (a hard link, :func:`paths.kept_log`) that
    Snakemake does not know: if it runs the job again after it finished, it deletes the log
    first, and :func:`keep` writes it back from that name."""
    log = _stdout_file()
    if log is None:
        return
    kept = paths.kept_log(log)
    try:
        kept.unlink(missing_ok=True)  # an earlier try of this attempt that did not finish
        os.link(log, kept)
    except OSError:
        return  # a file system without hard links: the log is not kept, as before


def keep(outs: list[str]) -> int:
    """A finished job Snakemake runs again: its records stay as they are, and its log, which
    Snakemake deleted, is written back from the name :func:`hold_log` gave it."""
    for out in outs:
        print(f"perfpost: {out} is finished already; kept as it is", flush=True)
    log = _stdout_file()
    kept = paths.kept_log(log) if log else None
    if kept is None or not kept.is_file() or os.path.samefile(kept, log):
        return 0
    print("perfpost: the log of the job that made it follows", flush=True)
    sys.stdout.buffer.write(kept.read_bytes())
    sys.stdout.flush()
    return 0


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
