"""A run that only waits: ``tool: wait``, ended when the experiment's ``until`` condition on
a daemon metric holds (re-replication done: nothing under-replicated in the SCM).

perfpost's own watcher (:mod:`perfpost.instrument.clustersteps`) reads the daemon metric from
this machine while the run measures and, once the bound is met, leaves a file in the run's
scratch directory on the cell's host: the run is a loop on the host that ends when that file
appears (a tenth of a second at most after). Its numbers are ``until_time`` (the seconds from
the measured step's start to the reading that met the bound, by the watcher's clock), its
wall time, and the experiment's ``daemon_metrics``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from perfpost.tools.base import (
    Metric,
    Plan,
    Proc,
    fill_work,
    never_provisioned,
    params_as_given,
)

NAME = "wait"
RUNTIME = None
HOST_KEY = None
LOG = "wait.log"
FLAG = ".until"  # in the run's scratch directory: the watcher's "the bound was met"
PLOT_METRICS = ("until_time", "wall_time")
TABLE_METRICS = ("until_time", "wall_time")
SYNC_ADJUST: tuple[tuple[str, str, str], ...] = ()

PARAMS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "dir": {
            "description": "Directory the run's scratch directory ({work}) goes in, on the "
            "cell's host: the watcher leaves its file there",
            "type": "string",
            "default": "/var/tmp/perfpost",
        },
        "before": {
            "description": "A command run on the cell's host before each run, unmeasured, "
            "as a client of the cell's clusters ({cluster.field}s filled, their client "
            "configuration in effect): the data a recovery will copy, written by freon. "
            "Run by sh -c; a failure fails the run with its output",
            "type": "string",
        },
        "env": {
            "description": "Variables for the `before` command (HADOOP_USER_NAME)",
            "type": "object",
            "additionalProperties": {"type": "string"},
            "default": {},
        },
    },
}

complete_params = params_as_given
install_marker = never_provisioned


def check_params(params: Mapping[str, Any], where: str) -> None:
    """Nothing beyond the schema: what a wait waits for is the experiment's ``until``."""


BOUNDS = (("below", "<"), ("above", ">"), ("equals", "="))


def bound_text(until: Mapping[str, Any]) -> str:
    """``< 1``: an ``until`` bound as the post says it."""
    return next((f"{w} {until[k]:g}" for k, w in BOUNDS if k in until), "")


def flag(workdir: str) -> str:
    return f"{workdir.rstrip('/')}/{FLAG}"


def plan(params: Mapping[str, Any], workdir: str) -> Plan:
    """A loop that ends when the watcher's file appears (the experiment's timeout bounds
    it); it says when it saw it."""
    script = f'while [ ! -e "{flag(workdir)}" ]; do sleep 0.1; done; echo "the bound was met"'
    prepare: tuple[Proc, ...] = ()
    if params.get("before"):
        env = [f"{k}={fill_work(v, workdir)}" for k, v in (params.get("env") or {}).items()]
        argv = ("sh", "-c", fill_work(params["before"], workdir))
        prepare = (Proc((*(("env", *env) if env else ()), *argv), "before.log"),)
    return Plan(measure=(Proc(("sh", "-c", script), LOG),), prepare=prepare, description="wait")


def version_argv(params: Mapping[str, Any]) -> tuple[str, ...]:
    return ("true",)


def parse_cell(logs: Mapping[str, str], wall_time: float | None = None) -> list[Metric]:
    """The wait's own log says nothing but that it ended: its numbers are the watcher's."""
    return []


def parse_text(text: str, source: str) -> list[Metric]:
    return []


def error_reason(texts: Mapping[str, str]) -> str | None:
    return None


def describe(experiment: Mapping[str, Any], results: Any = None) -> list[str]:
    """The method: what the run waited for."""
    until = experiment.get("until") or {}
    bound = bound_text(until)
    return [
        f"Each run waits, measuring nothing itself, until the daemon metric "
        f"`{until.get('metric', '?')}` reads {bound} (read from this machine every "
        f"{until.get('every', 1):g} s); `until_time` is the seconds from the measured step's "
        "start to the reading that met it, the run's wall time a tenth of a second more at "
        "most."
    ]
