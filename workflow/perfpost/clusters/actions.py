"""One role instance of a running cluster acted on, as an experiment's step asks at its
moment (:mod:`perfpost.instrument.clustersteps`): stopped, killed, started again, restarted,
its data directories deleted, or a command run on its host with its own configuration -
what an engineer does by hand to time a recovery ("stop a datanode, delete its directories,
restart it") or to make data offline (``ozone vapor cgdn`` with the datanode down). The whole
cluster is stopped and started again around offline steps (:func:`stop_all`,
:func:`start_all`).

Each action says what it did in a sentence for the record, or raises :class:`ClusterError`
with why it could not. The deployment's ``on_change`` keeps its state as the daemons change,
so the run's stop finds a daemon a step started.
"""

from __future__ import annotations

import re
import shlex
import time
from typing import Any

from perfpost.clusters.base import STOP_GRACE, ClusterError, Daemon

ACTIONS = ("stop", "kill", "start", "restart", "wipe", "run")
# What a run step's command may name of the instance it runs for: its install, the
# directory of its daemons' site files, its number (1 for the first, as vapor's cgdn
# --index counts) and how many instances the role has.
PLACEHOLDERS = ("home", "conf", "n", "instances")
RUN_TIMEOUT = 1800.0


def _current(dep: Any, role: str, index: int) -> Daemon | None:
    return next((d for d in dep.daemons if (d.role, d.index) == (role, index)), None)


def _running(dep: Any, d: Daemon | None) -> bool:
    return bool(d and d.pid and d.pid in dep.node(d.host).alive([d.pid]))


def _gone(dep: Any, d: Daemon) -> None:
    dep.daemons = [x for x in dep.daemons if x is not d]
    if dep.on_change is not None:
        dep.on_change(dep)


def act(
    kind: Any,
    do: str,
    role: str,
    index: int = 0,
    grace: float = STOP_GRACE,
    command: str = "",
) -> dict[str, str]:
    """Do ``do`` (one of :data:`ACTIONS`) to instance ``index`` of ``role`` of the cluster
    ``kind`` runs (a :class:`perfpost.clusters.deployment.Kind`); what was done, in words,
    as ``did`` (a run: beside what it ran, where, and its log)."""
    hosts = kind.dep.spec.roles.get(role) or []
    if index >= len(hosts):
        raise ClusterError(f"the cluster has {len(hosts)} {role} instance(s), no instance {index}")
    if do == "run":
        return _run(kind.dep, role, index, command)
    return {"did": _change(kind, do, role, index, grace)}


def _change(kind: Any, do: str, role: str, index: int, grace: float) -> str:
    """A daemon stopped, killed, started, restarted or its directories wiped: what was done,
    in words."""
    dep = kind.dep
    host = dep.spec.roles[role][index]
    node = dep.node(host)
    label = Daemon(role, host, index).label
    d = _current(dep, role, index)
    running = _running(dep, d)
    if do in ("stop", "kill", "restart"):
        if not running or d is None or d.pid is None:
            raise ClusterError(f"the {label} on {host} is not running: there is nothing to {do}")
        if do == "kill":
            # Its process group (the daemon leads its own session), as a crash takes it.
            node.sh(
                f"kill -KILL -{int(d.pid)} 2>/dev/null; i=0; while kill -0 -{int(d.pid)} "
                "2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done; true",
                what=f"killing the {label}",
            )
        else:
            node.stop([d.pid], grace)
        _gone(dep, d)
        said = f"{'killed' if do == 'kill' else 'stopped'} the {label} on {host} (pid {d.pid})"
        if do != "restart":
            return said
    if do in ("start", "restart"):
        if do == "start" and running and d is not None:
            raise ClusterError(f"the {label} on {host} is running already (pid {d.pid})")
        new = kind.start_instance(role, index)
        started = f"started the {label} on {host} (pid {new.pid})"
        return f"{said}, then {started}" if do == "restart" else started
    if do == "wipe":
        if running and d is not None:
            raise ClusterError(
                f"the {label} on {host} is running (pid {d.pid}): a wipe needs it stopped "
                "first (a stop or kill step before it)"
            )
        dirs = kind.instance_dirs(role, index)
        if not dirs:
            raise ClusterError(f"perfpost knows no data directories of a {dep.spec.kind} {role}")
        quoted = " ".join(shlex.quote(x) for x in dirs)
        # What was there, then nothing: the directories stay, empty, as a new disk's would.
        out = node.sh(
            f"n=$(find {quoted} -type f 2>/dev/null | wc -l); "
            f"b=$(find {quoted} -type f -printf '%s\\n' 2>/dev/null"
            " | awk '{s+=$1} END {print s+0}'); "
            f'for d in {quoted}; do rm -rf -- "$d" && mkdir -p -- "$d" || exit 1; done; '
            'echo "$n ${b:-0}"',
            what=f"deleting the {label}'s directories",
        ).split()
        files, size = (int(out[-2]), int(out[-1])) if len(out) >= 2 else (0, 0)
        return (
            f"deleted the {label}'s data directories on {host} ({', '.join(dirs)}: "
            f"{files} files, {size} bytes)"
        )
    raise ClusterError(f"unknown action {do!r} (known: {', '.join(ACTIONS)})")


def _run(dep: Any, role: str, index: int, command: str) -> dict[str, str]:
    """``command`` run to its end on the instance's host, with the configuration its daemons
    read (``OZONE_CONF_DIR``, ``HADOOP_CONF_DIR``) and the cluster's environment, its
    output in a log beside the daemons' (kept with the cluster's logs): what was done in
    words (``did``), and the command as run, its host, daemon and log."""
    hosts = dep.spec.roles[role]
    host = hosts[index]
    label = Daemon(role, host, index).label
    given = {
        "home": dep.home[host],
        "conf": dep.conf_dir(host),
        "n": str(index + 1),
        "instances": str(len(hosts)),
    }
    text = re.sub(r"\{(" + "|".join(PLACEHOLDERS) + r")\}", lambda m: given[m.group(1)], command)
    root = dep.root(host)
    log = f"{root}/logs/step-{label}-{time.strftime('%H%M%S')}.log"
    env = {"OZONE_CONF_DIR": given["conf"], "HADOOP_CONF_DIR": given["conf"], **dep.spec.env}
    envs = " ".join(shlex.quote(f"{k}={v}") for k, v in env.items())
    began = time.monotonic()
    try:
        dep.node(host).sh(
            f"cd {shlex.quote(root)} && env {envs} sh -c {shlex.quote(text)} "
            f">{shlex.quote(log)} 2>&1",
            timeout=RUN_TIMEOUT,
            what=f"`{text}` for the {label}",
        )
    except ClusterError as e:
        raise ClusterError(f"{e}; {log} says:\n{dep.log_excerpt(host, log)}") from None
    took = time.monotonic() - began
    return {
        "did": f"ran `{text}` on {host} for the {label} ({took:.1f} s; {log})",
        # What was typed, and where: the post lists it as a person types it.
        "ran": text,
        "host": host,
        "daemon": label,
        "log": log,
    }


def stop_all(kind: Any) -> str:
    """Every running daemon of the cluster stopped (TERM, then KILL after a grace: a
    database closes cleanly), in the reverse of the order they start in."""
    dep = kind.dep
    said = []
    for role in reversed(kind.START_ORDER):
        for index in range(len(dep.spec.roles.get(role) or [])):
            d = _current(dep, role, index)
            if d is not None and d.pid and _running(dep, d):
                dep.node(d.host).stop([d.pid], STOP_GRACE)
                _gone(dep, d)
                said.append(f"{d.label} on {d.host} (pid {d.pid})")
    if not said:
        raise ClusterError("no daemon of the cluster was running")
    return f"stopped every daemon: {', '.join(said)}"


def start_all(kind: Any, timeout: float) -> str:
    """Every daemon of the cluster started again in its order (each as initialised at the
    cluster's start), then waited on until the cluster serves clients."""
    from perfpost.clusters.lifecycle import await_ready

    dep = kind.dep
    began = time.monotonic()
    said = []
    for role in kind.START_ORDER:
        for index in range(len(dep.spec.roles.get(role) or [])):
            d = kind.start_instance(role, index)
            said.append(f"{d.label} on {d.host} (pid {d.pid})")
    await_ready(kind, timeout)
    return (
        f"started every daemon again ({', '.join(said)}); the cluster was ready after "
        f"{time.monotonic() - began:.1f} s"
    )
