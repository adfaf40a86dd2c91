"""A cluster's daemons under a tracer for the measured step (an experiment's
``daemon_trace``): ``strace -f -c``, ``perf stat`` or any command that takes ``-o FILE -p
PID``, attached to each daemon of a role right before the step and stopped with SIGINT right
after it, so what it counts is the run's and nothing of the daemon's start.

Attached, not started under it: a daemon launched under ``strace`` writes its summary only
when it exits, which is after the cell's record, and counts its own start-up; attaching
covers exactly the measured step. The tracer's output is kept in the run's raw/ as
``trace-<daemon>.txt``; where it is strace's summary table (``-c``) the record holds the
table (calls, errors and seconds per system call) and each call's count, summed over the
traced daemons, is a metric of the run (``<role>.<syscall>``). A tracer that cannot attach
(no strace on the host, ptrace refused) fails the run: the numbers asked for would be missing.
"""

from __future__ import annotations

import re
import shlex
import uuid
from collections.abc import Mapping
from typing import Any

from perfpost.instrument.beside import Beside, Cell
from perfpost.tools.base import Metric

ATTACH_TIMEOUT = 20.0  # seconds a tracer gets to attach to every thread of a daemon
STOP_TIMEOUT = 60.0  # seconds it gets to write its summary once interrupted
_DASHES = re.compile(r"^-+(?: -+)+\s*$")


def strace_table(text: str) -> list[dict[str, Any]] | None:
    """strace -c's summary as rows (``syscall``, ``calls``, ``errors``, ``seconds``), the
    ``total`` row last; None when ``text`` has no such table. Columns are cut where the
    table's own dashed rule cuts them (an empty ``errors`` cell is 0)."""
    lines = text.splitlines()
    head = next((i for i, ln in enumerate(lines) if ln.lstrip().startswith("% time")), None)
    if head is None or head + 1 >= len(lines) or not _DASHES.match(lines[head + 1]):
        return None
    spans = [(m.start(), m.end()) for m in re.finditer(r"-+", lines[head + 1])]
    names = [lines[head][a:b].strip() for a, b in spans[:-1]] + [
        lines[head][spans[-1][0] :].strip()
    ]
    rows = []
    for ln in lines[head + 2 :]:
        if not ln.strip() or _DASHES.match(ln):
            continue
        cells = [ln[a:b].strip() for a, b in spans[:-1]] + [ln[spans[-1][0] :].strip()]
        got = dict(zip(names, cells, strict=True))
        try:
            rows.append(
                {
                    "syscall": got["syscall"],
                    "calls": int(got.get("calls") or 0),
                    "errors": int(got.get("errors") or 0),
                    "seconds": float(got.get("seconds") or 0.0),
                }
            )
        except (KeyError, ValueError):
            return None
    return rows or None


class DaemonTrace(Beside):
    name = "daemon_trace"

    def __init__(self, settings: Mapping[str, Any]) -> None:
        self.settings = dict(settings)
        self.token = uuid.uuid4().hex[:12]
        self.started: list[tuple[Any, str, int, str]] = []  # node, label, tracer pid, file
        self.failure: str | None = None
        self.kind: Any = None

    def start(self, cell: Cell) -> None:
        s = self.settings
        kind = self.kind = cell.cluster_kind(s["cluster"])
        program = shlex.split(s["command"])[0]
        # strace says when it has attached to every thread; another tracer gets a second.
        wait = ATTACH_TIMEOUT if program.rsplit("/", 1)[-1] == "strace" else 1.0
        for d in list(kind.dep.daemons):
            if d.role != s["role"] or not d.pid:
                continue
            if s.get("instance") is not None and d.index != s["instance"]:
                continue
            node = kind.dep.node(d.host)
            out = f"/tmp/perfpost-trace-{self.token}-{d.label}.txt"
            run = f"exec {s['command']} -o {shlex.quote(out)} -p {int(d.pid)}"
            script = (
                f"command -v {shlex.quote(program)} >/dev/null 2>&1 || "
                f"{{ echo 'no {program} on the host' >&2; exit 3; }}; "
                f"setsid sh -c {shlex.quote(run)} </dev/null >{shlex.quote(out)}.err 2>&1 & "
                "t=$!; i=0; "
                # Attached once it says so (strace) or has written its file (others).
                f"while [ $i -lt {int(wait * 10)} ] && kill -0 $t 2>/dev/null && "
                f"! grep -q attached {shlex.quote(out)}.err 2>/dev/null; do sleep 0.1; "
                "i=$((i+1)); done; "
                f"kill -0 $t 2>/dev/null || {{ cat {shlex.quote(out)}.err >&2; exit 4; }}; "
                "echo $t"
            )
            try:
                said = node.sh(script, timeout=ATTACH_TIMEOUT + 30, what="attaching a tracer")
                tracer = int(said.split()[-1])
            except Exception as e:
                self.failure = f"daemon_trace: {s['command']} on the {d.label} ({d.host}): {e}"
                return
            self.started.append((node, d.label, tracer, out))

    def stop(self, cell: Cell) -> None:
        traced = cell.record.setdefault("daemon_trace", {})
        for node, label, tracer, out in self.started:
            try:
                node.sh(
                    f"kill -INT {tracer} 2>/dev/null; i=0; while kill -0 {tracer} 2>/dev/null && "
                    f"[ $i -lt {int(STOP_TIMEOUT * 10)} ]; do sleep 0.1; i=$((i+1)); done; "
                    f"kill -KILL {tracer} 2>/dev/null; true",
                    timeout=STOP_TIMEOUT + 30,
                    what="stopping the tracer",
                )
                text = node.read(out)
            except Exception as e:
                self.failure = f"daemon_trace: the {label}'s tracer: {e}"
                continue
            name = f"trace-{label}.txt"
            cell.keep(name, text)
            traced[label] = {
                "command": self.settings["command"],
                "raw": f"raw/{name}",
                "table": strace_table(text),
            }

    def collect(
        self, cell: Cell, texts: Mapping[str, str], parsed: list[Metric]
    ) -> tuple[list[Metric], str | None]:
        if self.failure is not None:
            return [], self.failure
        calls: dict[str, int] = {}
        for info in (cell.record.get("daemon_trace") or {}).values():
            for row in info.get("table") or []:
                calls[row["syscall"]] = calls.get(row["syscall"], 0) + row["calls"]
        role = self.settings["role"]
        return [Metric(f"{role}.{k}", float(v), "count") for k, v in calls.items()], None

    def cleanup(self, cell: Cell) -> None:
        for node, _, tracer, out in self.started:
            try:
                node.sh(
                    f"kill -KILL {tracer} 2>/dev/null; rm -f -- {shlex.quote(out)} "
                    f"{shlex.quote(out)}.err; true",
                    what="removing the tracer's files",
                )
            except Exception:
                pass
        if self.kind is not None:
            self.kind.dep.close()
