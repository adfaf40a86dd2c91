"""Cleaning up after a cell: however the attempt ends, it leaves nothing on its hosts.

What the measured step wrote elsewhere (teragen's output on HDFS or Ozone) is removed once it
ran, a failure noted without undoing the measurement; what ran beside it is cleaned up; the
cell's scratch on its host is removed, once, and only then is the host's guard released (until
then, should perfpost die, the host removes it by itself). What could not be removed is named.
"""

from __future__ import annotations

import sys
import traceback

from perfpost import paths
from perfpost.errors import PerfpostError
from perfpost.run import hostscript
from perfpost.run.cell.attempt import SHORT_TIMEOUT, Attempt


def cleanup(cell: Attempt) -> str | None:
    """Remove the cell's scratch on the host (once); what is left there, if anything."""
    if cell.cleaned:
        return None
    cell.cleaned = True
    for b in cell.set_up:
        try:
            b.cleanup(cell)
        except Exception:
            traceback.print_exc(file=sys.stderr)
    for h in cell.opened_hosts:
        try:
            h.close()
        except Exception:
            pass
    try:
        got = cell.host.run(cell.scratch_cleanup, SHORT_TIMEOUT, force=True)
    except Exception:  # a host that is gone has nothing left to clean
        return None
    left = hostscript.parse_left(got.stdout)
    if cell.guard is not None and not got.timed_out:
        # Only once the removal ran: until then, should perfpost die, the host does it.
        cell.guard.release()
        cell.guard = None
    if left:
        return f"scratch left on the host, remove it by hand: {' '.join(left)}"
    return None


def remove_outputs(cell: Attempt) -> None:
    """The plan's ``remove`` commands (teragen's output on HDFS or Ozone), once the
    measured step ran; a failure is noted, it does not undo the measurement."""
    plan = cell.plan
    if plan is None or not plan.remove or cell.measured is None:
        return
    for i, proc in enumerate(plan.remove, start=1):
        name = f"remove-{i}"
        try:
            got = cell.run_step(name, hostscript.quote(proc.argv), SHORT_TIMEOUT * 5)
        except PerfpostError as e:
            cell.record.setdefault("warnings", []).append(f"{name}: {e}")
            continue
        if got.exit_code != 0:
            why = "timed out" if got.timed_out else f"exit code {got.exit_code}"
            cell.record.setdefault("warnings", []).append(
                f"{name} ({hostscript.quote(proc.argv)}) failed: {why}; "
                f"see {paths.RAW}/{name}.stderr"
            )
