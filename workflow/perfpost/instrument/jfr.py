"""Java Flight Recorder beside the measured step (``profile:`` on an experiment): a recording
of the tool's JVM (``-XX:StartFlightRecording``, dumped when it exits) and, when asked, of
the cluster's daemons of the roles named (started and dumped with the host's ``jcmd``, only
for the measured step), each kept with the record, and its hottest methods (the top frame of
JFR's execution samples, counted with the JDK's ``jfr`` tool here) in the record.

Nothing is fetched: JFR is part of the JDK's runtime, ``jcmd`` and ``jfr`` of the JDK.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import tempfile
import uuid
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from perfpost.instrument.beside import Beside, Cell
from perfpost.tools.base import Metric

SETTINGS = "profile"  # the JDK's own settings file: execution samples every 10-20 ms
TOP = 10  # methods kept per recording
SHORT_TIMEOUT = 60.0
CLIENT = "client"


def settings(raw: Any) -> dict[str, Any]:
    """An experiment's ``profile:`` (``true``, or ``{client: bool, daemons: [role, ...]}``)
    as a cell's settings; empty when there is none."""
    if not raw:
        return {}
    raw = raw if isinstance(raw, Mapping) else {}
    return {"client": bool(raw.get("client", True)), "daemons": list(raw.get("daemons", []))}


def client_option(path: str) -> str:
    return f"-XX:StartFlightRecording=filename={path},settings={SETTINGS},dumponexit=true"


def hottest(path: Path, top: int = TOP) -> dict[str, Any]:
    """The recording's execution samples and its ``top`` hottest methods by their own
    samples (the frame on top of the stack): ``{"samples": n, "top": [[method, n], ...]}``."""
    tool = shutil.which("jfr")
    if tool is None:
        return {"error": "the JDK's jfr tool is not on this machine's PATH: run scripts/setup"}
    got = subprocess.run(
        [
            tool,
            "print",
            "--json",
            "--stack-depth",
            "1",
            "--events",
            "jdk.ExecutionSample",
            str(path),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if got.returncode != 0:
        return {"error": f"jfr print failed: {got.stderr.strip()[-300:]}"}
    try:
        events = json.loads(got.stdout)["recording"]["events"]
    except (ValueError, KeyError) as e:
        return {"error": f"jfr print gave no recording: {e}"}
    counts: Counter[str] = Counter()
    for e in events:
        frames = ((e.get("values") or {}).get("stackTrace") or {}).get("frames") or []
        if frames:
            m = frames[0].get("method") or {}
            cls = ((m.get("type") or {}).get("name") or "?").replace("/", ".")
            counts[f"{cls}.{m.get('name', '?')}"] += 1
    return {"samples": len(events), "top": [[k, v] for k, v in counts.most_common(top)]}


class Profiler(Beside):
    name = "jfr"

    def __init__(self, settings: Mapping[str, Any]) -> None:
        self.client = bool(settings.get("client", True))
        self.roles = set(settings.get("daemons", []))
        self.token = uuid.uuid4().hex[:12]
        self.started: list[tuple[Any, int, str, str]] = []  # seat, pid, label, remote file

    def _note(self, cell: Cell, text: str) -> None:
        cell.record.setdefault("warnings", []).append(text)

    def setup(self, cell: Cell) -> str | None:
        from perfpost import instrument, tools

        if self.client:
            var = getattr(tools.get(cell.spec.tool), "JVM_OPTS_VAR", None)
            if var is None:
                self._note(cell, f"profile: {cell.spec.tool} does not run on a JVM")
            else:
                option = client_option(f"{cell.logdir}/{CLIENT}.jfr")
                cell.measure_params = instrument.attach(cell.measure_params, var, option)
        return None

    def start(self, cell: Cell) -> None:
        """The daemons' recordings, for the measured step alone."""
        for seat in cell.seats():
            for pid, label in seat.daemons.items():
                if label.rsplit(":", 1)[-1].split("-")[0] not in self.roles:
                    continue
                where = f"/tmp/perfpost-jfr-{self.token}-{label.replace(':', '-')}.jfr"
                script = (
                    "command -v jcmd >/dev/null 2>&1 || { echo 'no jcmd on the host' >&2; "
                    f"exit 3; }}; jcmd {int(pid)} JFR.start name=perfpost-{self.token} "
                    f"settings={SETTINGS} filename={shlex.quote(where)}"
                )
                got = seat.host.run(script, SHORT_TIMEOUT)
                if got.exit_code == 0:
                    self.started.append((seat, pid, label, where))
                else:
                    why = (got.stderr or got.stdout).strip().splitlines()[-1:] or ["?"]
                    self._note(cell, f"profile: {label} on {seat.name}: {why[0]}")

    def stop(self, cell: Cell) -> None:
        for seat, pid, label, where in self.started:
            script = (
                f"jcmd {int(pid)} JFR.dump name=perfpost-{self.token} "
                f"filename={shlex.quote(where)} >/dev/null && "
                f"jcmd {int(pid)} JFR.stop name=perfpost-{self.token} >/dev/null"
            )
            got = seat.host.run(script, SHORT_TIMEOUT)
            if got.exit_code != 0:
                self._note(cell, f"profile: {label} on {seat.name}: the recording was not dumped")
                continue
            self._keep(cell, f"{label.replace(':', '-')}.jfr", where, seat.host, label)

    def _keep(self, cell: Cell, name: str, where: str, host: Any, who: str) -> None:
        data = host.read(where)
        if data is None:
            self._note(cell, f"profile: {who}: no recording at {where}")
            return
        kept = cell.keep(f"jfr-{name}", data)
        with tempfile.TemporaryDirectory() as d:
            copy = Path(d) / name
            copy.write_bytes(kept.read_bytes())
            summary = hottest(copy)
        cell.record.setdefault("profile", {})[who] = {**summary, "raw": f"raw/jfr-{name}"}

    def collect(
        self, cell: Cell, texts: Mapping[str, str], parsed: list[Metric]
    ) -> tuple[list[Metric], str | None]:
        if self.client and CLIENT not in (cell.record.get("profile") or {}):
            self._keep(cell, f"{CLIENT}.jfr", f"{cell.logdir}/{CLIENT}.jfr", cell.host, CLIENT)
        return [], None

    def cleanup(self, cell: Cell) -> None:
        for seat, _, _, where in self.started:
            try:
                seat.host.run(f"rm -f -- {shlex.quote(where)}", SHORT_TIMEOUT, force=True)
            except Exception:
                pass
