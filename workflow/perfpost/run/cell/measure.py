"""Measuring a cell beside its companions: the measured step, timed on its host, with what
runs beside it (an agent, a resource sampler, a background load) already started by the
preparation.

With ``start_at`` (cells that start together on several hosts) the step waits on its host for
that moment. The step's timing and exit codes go into the record. Whatever its outcome, each
beside is stopped right after it, in reverse order; a beside that fails to stop loses its own
findings (a warning in the record), never the measurement.
"""

from __future__ import annotations

import sys
import time
import traceback
from typing import Any

from perfpost.errors import unforeseen
from perfpost.run import hostscript, quiet
from perfpost.run.cell.attempt import Attempt, iso


def measure(cell: Attempt, start_at: float | None) -> dict[str, Any] | None:
    """The measured step, timed on the host; with ``start_at``, it waits for that moment.
    What runs beside it is stopped right after it, whatever its outcome."""
    try:
        return _measure(cell, start_at)
    finally:
        _stop_besides(cell)


def _stop_besides(cell: Attempt) -> None:
    for b in reversed(cell.set_up):
        try:
            b.stop(cell)
        except Exception as e:  # its findings are lost, the measurement is not
            traceback.print_exc(file=sys.stderr)
            cell.record.setdefault("warnings", []).append(f"{b.name}: {unforeseen(e)}")


def _measure(cell: Attempt, start_at: float | None) -> dict[str, Any] | None:
    spec, plan = cell.spec, cell.plan
    mine = [c.ident() for c in spec.cluster_specs()]
    before = quiet.clusters_up(spec.host["name"], mine)
    cell.measured = cell.run_step(
        "measure",
        hostscript.measure_script(
            "measure",
            cell.logdir,
            plan.measure,
            plan.background,
            start_at=start_at,
            each=bool(cell.clients),
        ),
        spec.timeout + (max(start_at - time.time(), 0) if start_at else 0),
        on_stdout=hostscript.LineWatch(cell.measuring_began),
    )
    cell.timing = timing = hostscript.parse_markers(cell.measured.stdout).get("measure")
    if cell.clients:
        # Each client's own start and end on the host: the span of its processes.
        procs = hostscript.parse_procs(cell.measured.stdout)
        for c, info in zip(cell.clients, cell.record["clients"]["each"], strict=True):
            its = [procs[i] for i in c.procs if i in procs]
            info["start_epoch"] = min(s for s, _, _ in its) if its else None
            info["end_epoch"] = max(e for _, e, _ in its) if its else None
            info["exit_codes"] = [rc for _, _, rc in its]
    if start_at is not None:
        cell.record["start_ready_ahead"] = hostscript.parse_ahead(cell.measured.stdout)
    if timing:
        cell.record.update(
            start_epoch=timing.start,
            end_epoch=timing.end,
            start=iso(timing.start),
            end=iso(timing.end),
        )
        bad = [c for c in timing.exit_codes if c != 0]
        cell.record["exit_code"] = bad[0] if bad else 0
        cell.record["exit_codes"] = list(timing.exit_codes)
    # Clusters this run does not use, up on its host as the step began or as it ended.
    cell.record["others_up"] = sorted({*before, *quiet.clusters_up(spec.host["name"], mine)})
    return None
