"""Any program as a tool: ``tool: command``, its numbers declared by the user.

A lab's own script, ``strace -f -c``, Hadoop's NNThroughputBenchmark: perfpost runs the
command as written (axes, ``{work}``, ``{run}`` and ``{cluster.field}``s filled in as for every
tool) on the experiment's hosts, and reads the metrics the experiment declares from the command's
output (stdout and stderr, as one log) or from a file it wrote: a regular expression's named
group, a JSON path, or a CSV column, each with its unit and, where the unit does not say it,
whether more is better. The run's wall time, timed on the host, is always a metric. A declared
metric that is not found fails the run with the pattern and the output's last lines, never a
silent zero.

The declarations live in :mod:`perfpost.tools.command.metrics`; this module is the tool's
face (its schema, command builder and method text).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from typing import Any

from perfpost.errors import ConfigError
from perfpost.tools.base import (
    CACHE_PARAMS,
    CLIENT_PARAMS,
    Plan,
    Proc,
    env_prefix,
    fill_work,
    never_provisioned,
    params_as_given,
)
from perfpost.tools.command.metrics import (
    LOG,
    METRIC_SCHEMA,
    check_metrics,
    declared,
    parse_cell,  # noqa: F401 (the tool's parser for logs alone)
    parse_run,  # noqa: F401 (the runner's parser, with the declarations)
    parse_text,  # noqa: F401
    sources,
)

NAME = "command"
RUNTIME = None  # the host's own program: nothing to fetch
HOST_KEY = None
# A run's wall time is every command's metric; the declared ones come first (plot_metrics).
PLOT_METRICS = ("wall_time",)
TABLE_METRICS = ("wall_time", "sync_time")
SYNC_ADJUST: tuple[tuple[str, str, str], ...] = ()

PARAMS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["run"],
    "properties": {
        "run": {
            "description": "The command: a string, run by sh -c (pipes and redirections as in "
            "a shell), or a list of arguments, run as they are. Axes fill {axis} fields; "
            "{work} is the run's own scratch directory, {run} its name, {cluster.field} a "
            "running cluster's address. Write {{ and }} for a brace the command itself has.",
            "oneOf": [
                {"type": "string", "minLength": 1},
                {"type": "array", "items": {"type": "string"}, "minItems": 1},
            ],
        },
        "metrics": {
            "description": "The numbers a run reports, by name: each read from the output or "
            "a file the command wrote, by a regular expression, a JSON path or a CSV column.",
            "type": "object",
            "additionalProperties": METRIC_SCHEMA,
            "default": {},
        },
        "primary": {
            "description": "The metric the post compares and a precision target judges (the "
            "first declared one when not given; wall_time when none is declared).",
            "type": "string",
        },
        "dir": {
            "description": "Directory the run's scratch directory ({work}) is made in, and "
            "removed from after the run.",
            "type": "string",
            "minLength": 1,
            "default": "/var/tmp/perfpost",
        },
        "version": {
            "description": "A command whose first line of output names the program's version, "
            "for the post (iperf3 --version); none when not given.",
            "type": "string",
        },
        "env": {
            "description": "Environment variables of the command.",
            "type": "object",
            "additionalProperties": {"type": ["string", "number"]},
            "default": {},
        },
        **CACHE_PARAMS,
        **CLIENT_PARAMS,
    },
}

complete_params = params_as_given
install_marker = never_provisioned


def check_params(params: Mapping[str, Any], where: str) -> None:
    """The declarations' checks (a pattern that compiles, with its group; a unit perfpost
    knows) and a primary metric that is declared."""
    check_metrics(params.get("metrics") or {}, f"{where}.metrics")
    primary = params.get("primary")
    names = [*(params.get("metrics") or {}), "wall_time"]
    if primary is not None and primary not in names:
        raise ConfigError(
            f"{where}.primary", f"{primary!r} is not a declared metric (declared: {names})"
        )


def _argv(params: Mapping[str, Any], workdir: str) -> tuple[str, ...]:
    run = params["run"]
    if isinstance(run, str):
        return ("sh", "-c", fill_work(run, workdir))
    return tuple(fill_work(a, workdir) for a in run)


def plan(params: Mapping[str, Any], workdir: str) -> Plan:
    """The command, its output (both streams) in one log, and the files its metrics are
    read from, fetched after it."""
    # A command has no java_opts to pass (the schema has none): only its env.
    argv = (*env_prefix(params, "JAVA_TOOL_OPTIONS", workdir), *_argv(params, workdir))
    return Plan(
        measure=(Proc(argv, LOG),),
        outputs=tuple((name, fill_work(path, workdir)) for name, path in sources(params)),
        drop_cache=bool(params.get("drop_cache", False)),
        description="command",
    )


def version_argv(params: Mapping[str, Any]) -> tuple[str, ...]:
    return ("sh", "-c", str(params["version"])) if params.get("version") else ("true",)


def primary_metric(params: Mapping[str, Any]) -> str:
    return plot_metrics(params)[0]


def plot_metrics(params: Mapping[str, Any]) -> tuple[str, ...]:
    """The declared metrics, the primary first, then the wall time."""
    names = list(declared(params))
    primary = params.get("primary")
    if primary in names:
        names.remove(primary)
        names.insert(0, primary)
    return (*names, "wall_time")


def table_metrics(params: Mapping[str, Any]) -> tuple[str, ...]:
    return (*plot_metrics(params), "sync_time")


def better(params: Mapping[str, Any]) -> dict[str, bool]:
    """Whether more is better, by metric, where the declaration says so."""
    return {name: d.higher for name, d in declared(params).items() if d.higher is not None}


_ERROR = re.compile(r"\b\w*(?:Exception|Error)\b|\berror\b|\bfailed\b", re.I)


def error_reason(texts: Mapping[str, str]) -> str | None:
    """For a failed run's reason: the command's last line that names an error (a Java
    stack trace ends in "... 8 more", its cause above), else its last line."""
    lines = [x for x in (texts.get(LOG) or "").strip().splitlines() if x.strip()]
    if not lines:
        return None
    named = [x for x in lines if _ERROR.search(x) and not x.lstrip().startswith("at ")]
    return f"{LOG}: {(named or lines)[-1].strip()}"


def describe(experiment: Mapping[str, Any], results: Any = None) -> list[str]:
    """The method: the command as written, and where each number came from."""
    params = experiment["params"]
    run = params["run"]
    shown = run.strip() if isinstance(run, str) else shlex.join(run)
    what = (
        "a shell script of its own (the commands in the set-up, as written)"
        if "\n" in shown
        else f"`{shown}`"
    )
    lines = [f"Each run runs {what} on the cell's host, timed there from start to end."]
    said = [d.said() for d in declared(params).values()]
    if said:
        lines.append("Its numbers, as declared in the config: " + "; ".join(said) + ".")
    lines.append("A run's wall time is the command's, from its start to its end.")
    return lines
