"""Recording a cell: every cell ends with exactly one record, done, failed with a reason, or
skipped, written last and atomically, with secrets masked.

:func:`finish` ends an attempt: outputs and scratch removed first (what is left is named),
metrics that could not be computed left out (JSON has no NaN), the record masked and written.
:func:`guarded` runs a phase so that whatever goes wrong in it (a host lost, an exception
nobody foresaw) ends the cell with a failed record saying why. :func:`record_failure` is the
last resort for a cell that could not even be set up.
"""

from __future__ import annotations

import math
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from perfpost import __version__, hostenv
from perfpost.errors import PerfpostError, unforeseen
from perfpost.hostenv import Redactor
from perfpost.plan.specs import CellSpec
from perfpost.records import FAILED, RECORD_SCHEMA_VERSION, read_record, write_json_atomic
from perfpost.run.cell.attempt import Attempt, iso
from perfpost.run.cell.cleanup import cleanup, remove_outputs


def finish(cell: Attempt, status: str, reason: str | None = None) -> dict[str, Any]:
    """End the attempt as ``status`` (``reason``: why it failed or was skipped): its
    outputs and scratch removed, then its record written, masked, atomically."""
    try:
        remove_outputs(cell)
    except Exception as e:  # the record says what went wrong, below
        cell.record.setdefault("warnings", []).append(f"removing outputs: {unforeseen(e)}")
    # The host's scratch (the tool's files and unmasked logs) goes before the record says
    # the attempt is over; what could not be removed is named in the record.
    left = cleanup(cell)
    if left:
        cell.record.setdefault("warnings", []).append(left)
    cell.record["status"] = status
    cell.record["reason"] = reason
    if cell.record["start"] is None:
        cell.record["start"] = iso(cell.began)
        cell.record["end"] = None if cell.end_unknown else iso(time.time())
    # JSON has no NaN: a value that could not be computed is left out, never invented.
    cell.record["metrics"] = [
        m
        for m in cell.record["metrics"]
        if isinstance(m["value"], int | float) and math.isfinite(m["value"])
    ]
    cell.record = cell.redactor.data(cell.record)
    write_json_atomic(cell.record_path, cell.record)
    return cell.record


def guarded(cell: Attempt, phase: Any, *args: Any) -> dict[str, Any] | None:
    """Run one phase of ``cell`` (``phase(cell, *args)``), unless the cell is over already
    (the phase before ended it; then its record). A host failure (unreachable, key rejected,
    connection lost) fails the cell with that reason, keeping whatever logs it had. So does
    any other exception (a bug, a library's surprise): its traceback goes to the job's log,
    its message to the record, and the other cells go on."""
    if cell.record["status"] is not None:
        return cell.record
    try:
        return phase(cell, *args)
    except PerfpostError as e:
        return finish(cell, FAILED, str(e))
    except Exception as e:  # every cell ends with a record
        traceback.print_exc(file=sys.stderr)
        return finish(cell, FAILED, unforeseen(e))


def record_failure(
    spec: CellSpec,
    record_path: str | Path,
    reason: str,
    redactor: Redactor | None = None,
    began: float | None = None,
) -> dict[str, Any]:
    """Write a failed record for a cell that could not even be set up to run (the last
    resort of ``perfpost run-cell``: a cell never ends without a record); ``began``, when
    the attempt started (this machine's clock), is its start, and now its end."""
    path = Path(record_path)
    if path.exists():
        return read_record(path)  # a finished result is never overwritten
    attempt = path.parent.name.rpartition("-")[2]
    record = {
        "schema_version": RECORD_SCHEMA_VERSION,
        "perfpost_version": __version__,
        "experiment": spec.experiment,
        "cell": spec.cell,
        "labels": spec.labels,
        "host": spec.host.get("name"),
        "repeat": spec.repeat,
        "attempt": int(attempt) if attempt.isdigit() else None,
        "tool": spec.tool,
        "params": hostenv.mask_settings(spec.params),
        "status": FAILED,
        "reason": reason,
        "start": iso(began),
        "end": iso(time.time()) if began is not None else None,
        "logs": [],
        "steps": [],
        "metrics": [],
    }
    if spec.cell_env():
        record["env"] = hostenv.public(spec.cell_env())
    redactor = (redactor or Redactor()).adding(hostenv.setting_secrets(spec.params, spec.clusters))
    record = redactor.data(record)
    write_json_atomic(path, record)
    return record
