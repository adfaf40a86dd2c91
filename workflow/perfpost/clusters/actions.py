"""One role instance of a running cluster acted on, as an experiment's step asks at its
moment (:mod:`perfpost.instrument.clustersteps`): stopped, killed, started again, restarted,
or its data directories deleted - what an engineer does by hand to time a recovery
("stop a datanode, delete its directories, restart it").

Each action says what it did in a sentence for the record, or raises :class:`ClusterError`
with why it could not. The deployment's ``on_change`` keeps its state as the daemons change,
so the run's stop finds a daemon a step started.
"""

from __future__ import annotations

import shlex
from typing import Any

from perfpost.clusters.base import STOP_GRACE, ClusterError, Daemon

ACTIONS = ("stop", "kill", "start", "restart", "wipe")


def _current(dep: Any, role: str, index: int) -> Daemon | None:
    return next((d for d in dep.daemons if (d.role, d.index) == (role, index)), None)


def _running(dep: Any, d: Daemon | None) -> bool:
    return bool(d and d.pid and d.pid in dep.node(d.host).alive([d.pid]))


def _gone(dep: Any, d: Daemon) -> None:
    dep.daemons = [x for x in dep.daemons if x is not d]
    if dep.on_change is not None:
        dep.on_change(dep)


def act(kind: Any, do: str, role: str, index: int = 0, grace: float = STOP_GRACE) -> str:
    """Do ``do`` (one of :data:`ACTIONS`) to instance ``index`` of ``role`` of the cluster
    ``kind`` runs (a :class:`perfpost.clusters.deployment.Kind`); what was done, in words."""
    dep = kind.dep
    hosts = dep.spec.roles.get(role) or []
    if index >= len(hosts):
        raise ClusterError(f"the cluster has {len(hosts)} {role} instance(s), no instance {index}")
    host = hosts[index]
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
