"""Which besides (:mod:`perfpost.instrument.beside`) a cell has, in setup order."""

from __future__ import annotations

from typing import Any

from perfpost.instrument import agent, clustersteps, daemontrace, jfr, load, resources
from perfpost.instrument.beside import Beside


def for_cell(spec: Any) -> list[Beside]:
    """The agent changes the measured command, so it comes first; the cluster's steps
    before the run (a daemon restarted) come before anything that attaches to a daemon; a
    background load runs its lead before the sampler starts, which starts last, nearest the
    measured step."""
    out: list[Beside] = []
    if spec.instrument:
        out.append(agent.Agent())
    if getattr(spec, "life", None):
        out.append(clustersteps.ClusterLife(spec.life))
    if getattr(spec, "profile", None):
        out.append(jfr.Profiler(spec.profile))
    if getattr(spec, "background", None):  # its lead before the sampler's first sample
        out.append(load.Load(spec.background))
    if getattr(spec, "resources", None):
        out.append(resources.Telemetry(spec.resources))
    if (getattr(spec, "life", None) or {}).get("trace"):  # attached nearest the step
        out.append(daemontrace.DaemonTrace(spec.life["trace"]))
    return out
