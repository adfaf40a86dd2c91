"""The method's sentences on a cluster's life during each run (an experiment's
``cluster_steps``, ``daemon_trace`` and ``daemon_metrics``), as the experiment declared them:
what was done to the cluster and when, and what was read of its daemons."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from perfpost.instrument.clustersteps import ALL, BEFORE, OFFLINE

_DONE = {
    "stop": "stopped (TERM, then KILL after a grace)",
    "kill": "killed with kill -9",
    "start": "started again",
    "restart": "restarted",
    "wipe": "had its data directories deleted",
}


def _who(step: Mapping[str, Any]) -> str:
    instance = step.get("instance", 0)
    who = f"each {step['role']}" if instance == ALL else f"{step['role']} {int(instance)}"
    return who + (f" of `{step['cluster']}`" if step.get("cluster") else "")


def _did(step: Mapping[str, Any]) -> str:
    if step["do"] == "run":
        return f"ran `{step['command']}`"
    return _DONE[step["do"]]


def describe(experiment: Mapping[str, Any]) -> list[str]:
    """The method's sentences on what was done to the cluster during each run and what was
    read of its daemons, as the experiment declared them."""
    out = []
    steps = experiment.get("cluster_steps") or []
    offline = [s for s in steps if s.get("at") == OFFLINE]
    if offline:
        said = [f"{_who(s)} {_did(s)}" for s in offline]
        out.append(
            "Before each run, with every daemon of its cluster stopped (after the cluster's "
            "start had laid out their directories), in this order: " + "; ".join(said) + ". "
            "Then every daemon was started again and the run waited until the cluster was "
            "ready."
        )
    steps = [s for s in steps if s.get("at") != OFFLINE]
    if steps:
        said = []
        for s in steps:
            at = s.get("at", BEFORE)
            when = "before it measured" if at == BEFORE else f"{float(at):g} s into it"
            said.append(f"{when}, {_who(s)} {_did(s)}")
        out.append("In each run, in this order: " + "; ".join(said) + ". ")
    if offline or steps:
        out[-1] += (
            ("" if steps else " ") + "Each run had a cluster started for it alone, so no step "
            "reached another run; the record of each run says when each step happened, "
            "relative to its measurement."
        )
    trace = experiment.get("daemon_trace")
    if trace:
        which = (
            f"instance {trace['instance']} of the {trace['role']}s"
            if trace.get("instance") is not None
            else f"each {trace['role']}"
        )
        out.append(
            f"`{trace.get('command', 'strace -f -c')}` was attached to {which} (`-o <file> -p "
            "<pid>`) right before each measured step and interrupted right after it: its "
            "counts are the run's, and a traced daemon is slower than an untraced one."
        )
    for name, m in (experiment.get("daemon_metrics") or {}).items():
        what = (
            f"the JMX attribute `{m['attribute']}` of `{m['jmx']}`"
            if "jmx" in m
            else f"the Prometheus metric `{m['prometheus']}`"
        )
        how = {
            "value": "its value as the run ended",
            "delta": "its change over the run",
            "rate": "its change per second over the run"
            + (" until the bound was met" if experiment.get("until") else ""),
        }[m["as"]]
        out.append(
            f"`{name}` ({m['unit']}) is {how}: {what}, summed over the cluster's "
            f"{m['role']}s, read from each over HTTP at the run's start and end."
        )
    return out
