"""Cell records: the JSON a finished attempt leaves behind, written atomically.

A record exists only once its attempt is over (done, failed or skipped); it is written to a
temporary name and renamed, so a reader never sees half of one. ``status`` is authoritative:
metrics of a failed attempt are kept for diagnosis but never reported as results.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

RECORD_SCHEMA_VERSION = 1
DONE, FAILED, SKIPPED = "done", "failed", "skipped"
STATUSES = (DONE, FAILED, SKIPPED)


def _umask() -> int:
    """This process's umask, read without changing it where /proc says it (Linux)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_bytes_atomic(path: str | Path, data: bytes) -> None:
    """``data`` appears at ``path`` whole or not at all (temporary name, fsync, rename),
    whatever kills the writer. Its mode is what ``open`` would give it (0666 less the
    umask), not the temporary file's 0600: a post's data behind a web server running as
    another user was unreadable."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(path: str | Path, data: Any) -> None:
    text = json.dumps(data, indent=2, sort_keys=True, allow_nan=False) + "\n"
    write_bytes_atomic(path, text.encode())


def write_text_atomic(path: str | Path, text: str) -> None:
    """Tables and posts too appear whole or not at all, whatever kills the step."""
    write_bytes_atomic(path, text.encode())


def read_record(path: str | Path) -> dict[str, Any]:
    with open(path) as fh:
        data = json.load(fh)
    version = data.get("schema_version")
    if version != RECORD_SCHEMA_VERSION:
        raise ValueError(
            f"{path}: record schema version {version}, expected {RECORD_SCHEMA_VERSION}"
        )
    if data.get("status") not in STATUSES:
        raise ValueError(f"{path}: bad status {data.get('status')!r}")
    return data


def latest_of(record_path: str | Path) -> str:
    """The record of the latest attempt at or after ``record_path``'s with the same
    measurement.

    A cell retried within a run (the profile's ``retries``) finishes in a later attempt than
    the one Snakemake planned, and tables follow it there; never to a later attempt that was
    measured with other parameters (a config changed and changed back).
    """
    from perfpost import paths

    later = paths.latest_record(record_path)
    if later == str(record_path):
        return later
    try:
        want = read_record(record_path).get("measurement")
    except (OSError, ValueError):
        want = None
    base, name = Path(record_path).parent.parent, Path(record_path).name
    planned = paths.attempt_of(record_path)
    for n in reversed(paths.attempts_in(base)):
        if n <= planned:
            break
        try:
            if read_record(base / f"attempt-{n}" / name).get("measurement") == want:
                return str(base / f"attempt-{n}" / name)
        except (OSError, ValueError):
            continue
    return str(record_path)
