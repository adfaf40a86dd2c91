"""The checks of a config that its JSON schema cannot express, each naming the key at fault:
an experiment's hosts, plot and axis names, its comparisons and A/A controls, each cell's tool
params (its schema and the tool's own checks), and the secrets the config names.
"""

from __future__ import annotations

import os
from typing import Any

from perfpost import hostenv, tools
from perfpost.errors import ConfigError
from perfpost.plan import matrix
from perfpost.plan.model import Experiment, Plan
from perfpost.plan.params import RESERVED_AXES


def check_hosts(exp: Experiment, hosts: dict[str, dict[str, Any]], where: str) -> None:
    """The experiment's hosts are known, each listed once."""
    for i, host in enumerate(exp.hosts):
        if host not in hosts:
            raise ConfigError(
                f"{where}.hosts[{i}]",
                f"unknown host {host!r}: add it under `hosts:` (known: {sorted(hosts)})",
            )
    dupes = sorted({h for h in exp.hosts if exp.hosts.count(h) > 1})
    if dupes:
        raise ConfigError(f"{where}.hosts", f"host listed twice: {dupes}")


def check_plot(exp: Experiment, where: str) -> None:
    """``plot:`` names parts the tool reports and axes the experiment has."""
    by = exp.plot.get("by")
    parts = tuple(getattr(tools.get(exp.tool), "PARTS", ()))
    if by and by not in parts:
        raise ConfigError(
            f"{where}.plot.by",
            f"{exp.tool} reports no {by}s"
            + (f" (it reports: {', '.join(parts)})" if parts else ""),
        )
    if by and by in exp.axes:
        raise ConfigError(f"{where}.plot.by", f"{by!r} is an axis already: rename the axis")
    for key in ("x", "facet"):
        if exp.plot.get(key) and exp.plot[key] not in [*exp.axes, *([by] if by else [])]:
            raise ConfigError(f"{where}.plot.{key}", f"{exp.plot[key]!r} is not an axis")
    if exp.plot.get("x") and exp.plot.get("x") == exp.plot.get("facet"):
        raise ConfigError(f"{where}.plot", "x and facet must be different axes")


def check_axis_names(exp: Experiment, where: str) -> None:
    """No axis takes the name of a column of perfpost's tables."""
    for axis in exp.axes:
        if axis in RESERVED_AXES:
            raise ConfigError(
                f"{where}.axes.{axis}",
                f"{axis!r} names a column of perfpost's tables; call the axis something "
                f"else (reserved: {', '.join(sorted(RESERVED_AXES))})",
            )


def check_comparisons(exp: Experiment, where: str) -> None:
    """Every comparison names real axes and labels and selects cells on both sides."""
    comp_sides = ("baseline", "candidate")
    for i, comp in enumerate(exp.compare):
        here = f"{where}.compare[{i}]"
        for side in comp_sides:
            for axis in comp[side]:
                if axis not in exp.axes:
                    raise ConfigError(
                        f"{here}.{side}.{axis}",
                        f"{axis!r} is not an axis of this experiment (axes: {sorted(exp.axes)})",
                    )
            # The label rule the tables and figures match on, so a comparison that passes
            # here finds its runs there.
            chosen = [
                c
                for c in exp.cells
                if all(exp.labels[c.id][a] == matrix.label(v) for a, v in comp[side].items())
            ]
            if not chosen:
                raise ConfigError(
                    f"{here}.{side}",
                    f"selects no cell: no cell has {comp[side]} (labels: "
                    + "; ".join(
                        f"{a}: {sorted({str(exp.labels[c.id][a]) for c in exp.cells})}"
                        for a in comp[side]
                    )
                    + ")",
                )
        base, cand = ({a: matrix.label(v) for a, v in comp[s].items()} for s in comp_sides)
        if base == cand:
            raise ConfigError(here, "baseline and candidate select the same cells")
        for j, axis in enumerate(comp.get("by", [])):
            if axis not in exp.axes:
                raise ConfigError(f"{here}.by[{j}]", f"{axis!r} is not an axis")
            if axis in comp["baseline"] or axis in comp["candidate"]:
                raise ConfigError(
                    f"{here}.by[{j}]", f"{axis!r} is a filter of this comparison: group by others"
                )


def check_clients(exp: Experiment, params: dict[str, Any], where: str) -> None:
    """Several clients in a run share the cell's agent and recording settings, and each of
    their JVMs would write the same counts or recording file: refused until each has its own."""
    if int(params.get("clients") or 1) == 1:
        return
    for key in ("instrument", "profile"):
        if getattr(exp, key, None):
            raise ConfigError(
                f"{where}.params.clients",
                f"several clients with `{key}`: each client JVM would write the same "
                f"{'counts' if key == 'instrument' else 'recording'} file; run one client "
                f"with `{key}`, or several without it",
            )


def check_controls(exp: Experiment, where: str) -> None:
    """An A/A control (``control: true``) compares one configuration with itself: each
    baseline cell has a candidate cell with the same other labels and the same command."""
    for i, comp in enumerate(exp.compare):
        if not comp.get("control"):
            continue
        named = set(comp["baseline"]) | set(comp["candidate"])
        sides = []
        for side in ("baseline", "candidate"):
            chosen = {}
            for c in exp.cells:
                labels = exp.labels[c.id]
                if all(labels[a] == matrix.label(v) for a, v in comp[side].items()):
                    rest = tuple(sorted((a, str(v)) for a, v in labels.items() if a not in named))
                    chosen[rest] = c.id
            sides.append(chosen)
        for rest, base in sides[0].items():
            cand = sides[1].get(rest)
            if cand is None:
                continue
            a, b = exp.resolved[base], exp.resolved[cand]
            if a != b:
                diff = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
                raise ConfigError(
                    f"{where}.compare[{i}].control",
                    f"an A/A control compares one command with itself, but `{base}` and "
                    f"`{cand}` differ in params {', '.join(diff)}: give both labels the same "
                    "value",
                )


def check_secrets(plan: Plan, environ: dict[str, str] | None = None) -> None:
    """Every secret the config names must be set before any job starts, not fail cell by cell."""
    environ = dict(os.environ) if environ is None else environ
    places = [(f"hosts.{h}.env", spec.get("env", {})) for h, spec in plan.hosts.items()]
    places += [(f"experiments.{n}.env", e.env) for n, e in plan.experiments.items()]
    for where, env in places:
        for name in hostenv.missing(env, environ):
            raise ConfigError(
                f"{where}.{name}",
                f"its secret comes from the environment variable {env[name]['secret']}, which "
                "is not set: export it in the shell that runs snakemake",
            )
