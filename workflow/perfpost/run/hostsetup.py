"""A host made ready by the experiment and restored after it: its ``setup`` steps before the
experiment's first run on the host, its ``teardown`` steps after the last.

A host's set-up is held as a cluster is (:mod:`perfpost.run.deploy`): a :class:`ClusterSpec`
of kind ``setup`` with the one host as its role, so what starts, shares and stops clusters
does it too. Its cells hold it while they run; the last cell of the run on that host restores
it, and so does whatever ends the run (its end, Ctrl-C, its watcher when it is killed, the
next run for one whose run is gone). Its state says when it was set up and restored, and the
restore runs once: a state already restored is not restored again. A step that fails fails
the set-up, and the host's cells with its output as the reason, before anything is measured;
what had been done is restored.

A step is a shell command, run as the login user or, with ``sudo``, as root (directly where
the login user is root, else through ``sudo -n``); or a Python function (``file.py:name``)
called with the host's Fabric :class:`~fabric.Connection` (an :class:`invoke.Context` on
``localhost``), a fabfile's task, which may ``run`` and ``sudo`` itself. Each step's command,
exit status, output and time are kept in the state (secret settings masked, as a cluster's).
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from perfpost.clusters.base import SETUP, ClusterError
from perfpost.run.hostscript import quote

KIND = SETUP
STEP_TIMEOUT = 600.0  # seconds one step may take
OUTPUT_KEPT = 4000  # characters of a step's output kept in the state


class SetupError(ClusterError):
    """A set-up step that failed: the host, the step and what it printed."""


def shown(step: Mapping[str, Any]) -> str:
    """A step as a person reads it: the command, or ``python file.py:name``."""
    if "python" in step:
        return f"python {step['python']}"
    return str(step["run"])


def script(step: Mapping[str, Any]) -> str:
    """A shell step's script: its command, as root with ``sudo`` (``sudo -n``: a password
    prompt nobody answers fails at once), its standard error with its output."""
    inner = quote([str(step["run"])])
    if step.get("sudo"):
        return f'if [ "$(id -u)" -eq 0 ]; then sh -c {inner}; else sudo -n sh -c {inner}; fi 2>&1'
    return f"sh -c {inner} 2>&1"


def _connection(host: Any) -> Any:
    """What a Python step gets: the host's Fabric connection, or an invoke Context here."""
    conn = getattr(host, "conn", None)
    if conn is not None:
        return conn
    import invoke

    # Nothing reads a step's standard input (a run's is not a terminal), as on remote hosts.
    return invoke.Context(invoke.Config(overrides={"run": {"in_stream": False}}))


def _call(step: Mapping[str, Any], host: Any) -> tuple[int, str]:
    """A Python step: ``file.py:name`` loaded from the run's directory and called with the
    host's connection; exit 0 and what it printed (and returned), or 1 and the error."""
    path, _, name = str(step["python"]).rpartition(":")
    out = io.StringIO()
    try:
        loader = importlib.util.spec_from_file_location(f"perfpost_setup_{Path(path).stem}", path)
        if loader is None or loader.loader is None:
            raise ImportError(f"cannot load {path}")
        module = importlib.util.module_from_spec(loader)
        loader.loader.exec_module(module)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            returned = getattr(module, name)(_connection(host))
        if returned is not None:
            print(returned, file=out)
        return 0, out.getvalue()
    except Exception as e:
        return 1, out.getvalue() + f"{type(e).__name__}: {e}\n"


def _call_bounded(
    step: Mapping[str, Any], host: Any, timeout: float
) -> tuple[int | None, str, bool]:
    """:func:`_call` bounded in time as a shell step is: past ``timeout`` the step is
    reported timed out (exit None) and its thread left behind, a daemon thread that ends
    with this process (a Python function cannot be killed from outside)."""
    got: list[tuple[int, str]] = []
    streams = sys.stdout, sys.stderr
    worker = threading.Thread(target=lambda: got.append(_call(step, host)), daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive() or not got:
        # _call redirects this process's stdout and stderr while the function runs: the
        # run's own output goes back where it went, the step's keeps to its buffer.
        sys.stdout, sys.stderr = streams
        return None, "", True
    code, output = got[0]
    return code, output, False


def run_steps(node: Any, phase: str, steps: list[Mapping[str, Any]], log: Any) -> list[dict]:
    """Run ``steps`` on ``node`` (a cluster :class:`~perfpost.clusters.base.Node`) in order,
    stopping at the first that fails; what each did, as the state keeps it."""
    done = []
    for i, step in enumerate(steps, start=1):
        t0 = time.time()
        if "python" in step:
            code, output, timed_out = _call_bounded(step, node.host, STEP_TIMEOUT)
        else:
            got = node.host.run(script(step), STEP_TIMEOUT, force=True)
            timed_out = bool(got.timed_out)
            code = None if timed_out else got.exit_code
            output = (got.stdout or "") + (got.stderr or "")
        said = {
            "host": node.name,
            "phase": phase,
            "step": i,
            "command": shown(step),
            "sudo": bool(step.get("sudo")),
            "exit": code,
            "timed_out": timed_out,
            "seconds": round(time.time() - t0, 3),
            "output": output[-OUTPUT_KEPT:],
        }
        done.append(said)
        if log is not None:
            how = "timed out" if timed_out else f"exit {code}"
            print(f"{node.name}: {phase} step {i} `{shown(step)}`: {how}", file=log, flush=True)
        if code != 0:
            break
    return done


def failed(done: list[dict]) -> dict | None:
    """The step that failed, if one did."""
    return next((d for d in done if d["exit"] != 0), None)


def reason(d: Mapping[str, Any]) -> str:
    """Why a set-up failed, as a cell's record says it: the host, the step, its status and
    the end of its output."""
    how = f"timed out after {STEP_TIMEOUT:g} s" if d["timed_out"] else f"exit {d['exit']}"
    tail = "\n".join(str(d["output"]).strip().splitlines()[-15:])
    return (
        f"the {d['phase']} of {d['host']} failed at step {d['step']} (`{d['command']}`, {how})"
        + (f":\n{tail}" if tail else "")
    )


def set_up(dep: Any, state: dict[str, Any], log: Any = None) -> None:
    """Run the set-up steps on the deployment's host; what they did goes to ``state``
    (``setup``). Raises :class:`SetupError` with the failed step's output."""
    host = dep.spec.hosts()[0]
    done = run_steps(dep.node(host), "setup", dep.spec.steps.get("setup", []), log)
    state["setup"] = done
    bad = failed(done)
    if bad is not None:
        raise SetupError(reason(bad))


def restore(dep: Any, state: dict[str, Any], log: Any = None) -> None:
    """Run the teardown steps once (a state that has them was restored already); what they
    did, or why the host could not be reached, goes to ``state`` (``teardown``)."""
    if state.get("teardown") is not None:
        return
    host = dep.spec.hosts()[0]
    try:
        done = run_steps(dep.node(host), "teardown", dep.spec.steps.get("teardown", []), log)
    except Exception as e:  # a host that is gone: nothing there to restore from here
        done = [{"host": host, "phase": "teardown", "step": 0, "command": "", "sudo": False,
                 "exit": None, "timed_out": False, "seconds": 0.0, "output": str(e)}]  # fmt: skip
        if log is not None:
            print(f"{host}: teardown not run: {e}", file=log, flush=True)
    state["teardown"] = done
