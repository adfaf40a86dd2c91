"""The ResourceManager's record of one YARN application: what the teragen post read from
``/ws/v1/cluster/apps/<application id>`` for each run (elapsed time, vcore-seconds and
memory-seconds, the latter kept in byte-seconds).

Pure functions over the JSON text. The record is *final* once the application reached a
terminal state and released its containers: the RM goes on adding to ``memorySeconds`` and
``vcoreSeconds`` for a moment after ``FINISHED`` while the last containers stop (seen on
Hadoop 3.4.2: 14605 -> 14829 MB-s), so a record read too early would understate them.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from perfpost.errors import ParseError
from perfpost.tools.base import Metric
from perfpost.units import YARN_MB

NAME = "yarn-app"
LOG = "yarn-app.json"
TERMINAL = ("FINISHED", "FAILED", "KILLED")
APP_ID = re.compile(r"^application_\d+_\d+$")
REQUIRED = ("id", "state", "finalStatus", "startedTime", "finishedTime", "elapsedTime")


def url(base: str, application_id: str) -> str:
    """The REST address of an application's record on the RM web app at ``base``."""
    if not APP_ID.match(application_id):
        raise ValueError(f"not a YARN application id: {application_id!r}")
    return f"{base.rstrip('/')}/ws/v1/cluster/apps/{application_id}"


@dataclass(frozen=True)
class AppRecord:
    """The fields of the RM's record perfpost keeps (times in ms since the epoch, as YARN)."""

    id: str
    state: str
    final_status: str
    diagnostics: str
    started_ms: int
    launched_ms: int | None
    finished_ms: int
    elapsed_ms: int
    memory_seconds: int | None
    vcore_seconds: int | None
    running_containers: int | None

    @property
    def final(self) -> bool:
        """Terminal and no container left running (older RMs do not report containers)."""
        return self.state in TERMINAL and (self.running_containers or 0) <= 0

    @property
    def succeeded(self) -> bool:
        return self.state == "FINISHED" and self.final_status == "SUCCEEDED"

    @property
    def status(self) -> str:
        return f"{self.state}/{self.final_status}"

    def metrics(self) -> list[Metric]:
        """Base units: s, vcore*s, and B*s for YARN's MB-seconds (memory held over time)."""
        out = [Metric("app_elapsed", self.elapsed_ms / 1000, "s")]
        if self.vcore_seconds is not None:
            out.append(Metric("app_vcore_seconds", float(self.vcore_seconds), "vcore*s"))
        if self.memory_seconds is not None:
            byte_seconds = float(self.memory_seconds * YARN_MB)  # exact integer product first
            out.append(Metric("app_memory_seconds", byte_seconds, "B*s"))
        if self.launched_ms and 0 < self.started_ms <= self.launched_ms:
            # From submission to the application master's launch: time spent waiting.
            out.append(Metric("app_launch_delay", (self.launched_ms - self.started_ms) / 1000, "s"))
        return out

    def info(self) -> dict[str, Any]:
        """What the cell's record keeps beside the metrics."""
        return {
            "id": self.id,
            "status": self.status,
            "state": self.state,
            "final_status": self.final_status,
            "diagnostics": self.diagnostics,
            "started_ms": self.started_ms,
            "finished_ms": self.finished_ms,
            "final": self.final,
        }


def _int(app: dict[str, Any], key: str, source: str) -> int | None:
    value = app.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ParseError(source, f"app.{key} is {value!r}, expected a number")
    return int(value)


def _known(app: dict[str, Any], key: str, source: str) -> int | None:
    """A time or amount, or None where YARN writes -1 for one it does not know (the resources
    of an application the user may not see, the elapsed time of one that never started)."""
    value = _int(app, key, source)
    return None if value is None or value < 0 else value


def parse(text: str, source: str) -> AppRecord:
    """The record in ``text`` (the RM's JSON answer); errors name the file and the key."""
    if not text.strip():
        raise ParseError(source, "empty: the ResourceManager answered nothing")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise ParseError(
            source, f"not JSON ({e.msg}): the answer was cut off or not the RM's", e.lineno
        ) from None
    except (ValueError, RecursionError) as e:  # a number too long for int(), nesting too deep
        raise ParseError(source, f"not the RM's JSON: {e}") from None
    if not isinstance(doc, dict):
        raise ParseError(source, "expected a JSON object")
    if "RemoteException" in doc:
        exc = doc["RemoteException"] if isinstance(doc["RemoteException"], dict) else {}
        raise ParseError(
            source,
            f"the ResourceManager answered {exc.get('exception', 'an error')}: "
            f"{exc.get('message', '')}".rstrip(": "),
        )
    app = doc.get("app")
    if not isinstance(app, dict):
        raise ParseError(source, "no `app` object: not an application record")
    missing = [k for k in REQUIRED if k not in app]
    if missing:
        raise ParseError(source, f"app record lacks {', '.join('app.' + k for k in missing)}")
    elapsed = _known(app, "elapsedTime", source)
    if elapsed is None:
        raise ParseError(source, f"app.elapsedTime is {app['elapsedTime']!r}: no elapsed time")
    return AppRecord(
        id=str(app["id"]),
        state=str(app["state"]),
        final_status=str(app["finalStatus"]),
        diagnostics=str(app.get("diagnostics") or "").strip(),
        started_ms=_int(app, "startedTime", source) or 0,
        launched_ms=_int(app, "launchTime", source),
        finished_ms=_int(app, "finishedTime", source) or 0,
        elapsed_ms=elapsed,
        memory_seconds=_known(app, "memorySeconds", source),
        vcore_seconds=_known(app, "vcoreSeconds", source),
        running_containers=_int(app, "runningContainers", source),
    )


def is_final(text: str) -> bool:
    """Whether ``text`` is a record that will not change any more (see the module doc)."""
    try:
        return parse(text, "-").final
    except ParseError:
        return False


def parse_text(text: str, source: str) -> list[Metric]:
    """``perfpost parse yarn-app``: the metrics of a record, refusing one still running
    (its elapsed time and resource use would be a snapshot, not the run's)."""
    rec = parse(text, source)
    if rec.state not in TERMINAL:
        raise ParseError(
            source, f"{rec.id} is still {rec.state}: its elapsed time and resources are not final"
        )
    return rec.metrics()


def summary(text: str, source: str) -> dict[str, str]:
    """The application id and status, for ``perfpost parse``."""
    rec = parse(text, source)
    return {"id": rec.id, "status": rec.status}
