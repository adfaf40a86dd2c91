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


def write_bytes_atomic(path: str | Path, data: bytes) -> None:
    """``data`` appears at ``path`` whole or not at all (temporary name, fsync, rename),
    whatever kills the writer."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
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
