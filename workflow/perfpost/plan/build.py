"""From a config to its plan: the schemas' checks (or their kept pass), then each
experiment checked and expanded, step by step, into cells with their tool params and clusters.

Every mistake is a :class:`~perfpost.errors.ConfigError` naming the key (and, for a file
read by :func:`load_plan`, the file and line).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from perfpost import instrument, tools
from perfpost.errors import ConfigError
from perfpost.hostenv import LOCALHOST
from perfpost.instrument import clustersteps, load
from perfpost.plan import checks, matrix, schema, schemacache
from perfpost.plan import order as order_
from perfpost.plan.clusters import cell_clusters, cluster_order
from perfpost.plan.loading import load_yaml
from perfpost.plan.model import Experiment, Plan
from perfpost.plan.params import cluster_fields, resolve_params
from perfpost.tools.base import primary_metric


def build_plan(config: dict[str, Any], cache: str | Path | None = None) -> Plan:
    """Validate ``config`` (filling defaults in place; ``cache``: a directory where the
    configs that passed are kept) and expand every experiment.

    With ``cache``, a config that passed the JSON schemas before (its text, the schemas and
    the validators unchanged, :mod:`perfpost.plan.schemacache`) is not validated again:
    importing jsonschema and compiling the schemas took 0.3 s of every ``snakemake`` run.
    perfpost's own checks run every time.
    """
    kept, checked = schemacache.passed_before(config, cache)
    filled = None  # the config's JSON with its defaults, to keep once every check passed
    if not checked:
        schema.validate_schema(config)
        filled = json.dumps(config) if kept is not None and schemacache.plain(config) else None
    hosts = _hosts(config)
    experiments: dict[str, Experiment] = {}
    for name, raw in config["experiments"].items():
        experiments[name] = _experiment(name, raw, config, hosts, checked)
    return Plan(
        hosts=hosts,
        experiments=experiments,
        tools=config.get("tools", {}),
        clusters=config.get("clusters", {}),
        history=config.get("history", "history") or None,
        checked=(kept, filled) if kept is not None and filled is not None else None,
    )


def _hosts(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every host by name, ``localhost`` always among them, with the SSH defaults under each
    other host's own settings."""
    hosts: dict[str, dict[str, Any]] = {LOCALHOST: {"max_parallel_cells": 1}}
    ssh = config.get("ssh", {})
    for name, spec in config.get("hosts", {}).items():
        if name == LOCALHOST:
            # The tools' command keys (ozone, yarn) apply here too: only SSH settings do not.
            commands = sorted({t.HOST_KEY for t in tools.every().values() if t.HOST_KEY})
            commands.append(instrument.HOST_KEY)
            if set(spec) - {"max_parallel_cells", *commands, "env"}:
                raise ConfigError(
                    f"hosts.{name}",
                    "localhost runs commands here, without SSH: only max_parallel_cells, "
                    f"{', '.join(commands)} and env apply",
                )
            hosts[name] = dict(spec)
            continue
        hosts[name] = {**ssh, **spec}
    return hosts


def _experiment(
    name: str,
    raw: dict[str, Any],
    config: dict[str, Any],
    hosts: dict[str, dict[str, Any]],
    checked: bool,
) -> Experiment:
    """One experiment, checked and expanded (``checked``: its params passed their schema
    before, :mod:`perfpost.plan.schemacache`)."""
    where = f"experiments.{name}"
    exp = Experiment(name=name, **{k: copy.deepcopy(v) for k, v in raw.items()})
    if not exp.title:
        exp.title = name
    try:
        tools.get(exp.tool)
    except KeyError as e:
        raise ConfigError(f"{where}.tool", str(e.args[0])) from None
    exp.load = load.settings(exp.background, f"{where}.background")
    checks.check_hosts(exp, hosts, where)
    checks.check_plot(exp, where)
    checks.check_axis_names(exp, where)
    _precision(exp, where)
    exp.cells = matrix.expand(exp.axes, exp.exclude, exp.zip, where=f"{where}.axes")
    _instrumented_cells(exp, where)
    for cell in exp.cells:
        exp.labels[cell.id] = cell.label_map
    checks.check_comparisons(exp, where)
    checker = None if checked else schema.params_checker(tools.get(exp.tool).PARAMS_SCHEMA)
    for cell in exp.cells:
        params = resolve_params(exp, cell, where)
        exp.resolved[cell.id] = schema.check_tool_params(
            exp.tool, params, f"{where}[{cell.id}]", checker
        )
        checks.check_clients(exp, exp.resolved[cell.id], f"{where}[{cell.id}]")
        if exp.setup or exp.teardown:
            exp.setups[cell.id] = host_steps(exp, cell.value_map, where)
            for phase, steps in exp.setups[cell.id].items():
                for i, step in enumerate(steps):
                    if step.get("host") and step["host"] not in hosts:
                        raise ConfigError(
                            f"{where}.{phase}[{i}].host",
                            f"unknown host {step['host']!r} (known: {sorted(hosts)})",
                        )
        if exp.cluster or cluster_fields(params):
            exp.cluster_specs[cell.id] = cell_clusters(
                config.get("clusters", {}),
                hosts,
                config.get("tools", {}),
                exp,
                cell,
                params,
                f"{where}[{cell.id}]",
            )
    exp.life = clustersteps.settings(exp, exp.cluster_specs, where)
    acted = {s["cluster"] for s in exp.life.get("steps", [])}
    for specs in exp.cluster_specs.values():
        for c in specs:
            if c["name"] in acted:  # what a step changed never reaches another cell
                c["fresh"] = "cell"
    checks.check_controls(exp, where)
    exp.order = order_.settings(
        exp.order,
        where,
        clusters=bool(exp.cluster_specs),
        together=exp.start_together,
        compares=bool(exp.compare),
    )
    if exp.order is not None and exp.cluster_specs:
        exp.cluster_order = cluster_order(exp)
    return exp


_AXIS_FIELD = re.compile(r"\{([A-Za-z_][\w.-]*)\}")


def _fill(step: Any, values: Mapping[str, Any]) -> Any:
    """A step with ``{axis}`` filled by the cell's value; any other brace is the shell's
    (``{ a; b; }``, ``${VAR}``, awk's ``{print}``) and stays as written."""
    if isinstance(step, dict):
        return {k: _fill(v, values) for k, v in step.items()}
    if not isinstance(step, str):
        return step
    return _AXIS_FIELD.sub(lambda m: str(values[m[1]]) if m[1] in values else m[0], step)


def host_steps(exp: Experiment, values: Mapping[str, Any], where: str) -> dict[str, Any]:
    """A cell's ``setup`` and ``teardown`` steps with its axis values filled in, each as
    ``{run, sudo}`` or ``{python}``; a Python step's file must be there."""
    out: dict[str, list[dict[str, Any]]] = {}
    for phase in ("setup", "teardown"):
        steps = []
        for i, raw in enumerate(getattr(exp, phase)):
            here = f"{where}.{phase}[{i}]"
            step = _fill(raw, values)
            if isinstance(step, str):
                step = {"run": step}
            if ("run" in step) == ("python" in step):
                raise ConfigError(here, "give `run: <command>` or `python: file.py:function`")
            on = {"host": str(step["host"])} if step.get("host") else {}
            if "run" in step:
                steps.append({"run": str(step["run"]), "sudo": bool(step.get("sudo", False)), **on})
                continue
            if "sudo" in step:
                raise ConfigError(
                    f"{here}.sudo", "a Python step runs as it likes: its connection has sudo()"
                )
            path, _, name = str(step["python"]).rpartition(":")
            if not path.endswith(".py") or not name.isidentifier():
                raise ConfigError(f"{here}.python", "give it as file.py:function")
            if not Path(path).is_file():
                raise ConfigError(f"{here}.python", f"no file {path!r} (relative to {Path.cwd()})")
            steps.append({"python": str(step["python"]), **on})
        out[phase] = steps
    return out


def _precision(exp: Experiment, where: str) -> None:
    """``repeats: {min, max, precision}``: keep the settings apart, plan ``min`` runs."""
    if not isinstance(exp.repeats, dict):
        return
    raw = exp.repeats
    target = raw["precision"]
    fraction = float(target[:-1]) / 100 if isinstance(target, str) else float(target)
    if not 0 < fraction < 1:
        raise ConfigError(f"{where}.repeats.precision", f"{target!r} is not between 0 and 100%")
    low, high = int(raw.get("min", 3)), int(raw["max"])
    if low > high:
        raise ConfigError(f"{where}.repeats", f"min ({low}) is more than max ({high})")
    if exp.start_together:
        raise ConfigError(
            f"{where}.repeats",
            "a precision target needs cells that run one host per job; with start_together "
            "give repeats as a count",
        )
    metric = raw.get("metric") or primary_metric(tools.get(exp.tool), exp.params)
    exp.precision = {
        "min": low,
        "max": high,
        "precision": fraction,
        "metric": metric,
        "step": int(raw.get("step", 1)),
    }
    exp.repeats = low


def _instrumented_cells(exp: Experiment, where: str) -> None:
    """Which cells get a Byteman agent, and with which rules (``exp.rules``).

    ``instrument:`` adds the axis ``instrument`` (``on``; ``off`` for the first cell, or
    every cell, run without the agent so the post can state its cost); an axis named
    ``instrument`` (label: list of rule sets) chooses per cell instead."""
    axis = exp.axes.get(instrument.AXIS)
    if exp.instrument is None and axis is None:
        return
    if getattr(tools.get(exp.tool), "JVM_OPTS_VAR", None) is None:
        key = f"{where}.instrument" if exp.instrument is not None else f"{where}.axes.instrument"
        raise ConfigError(
            key, f"{exp.tool} does not run on a JVM: only freon and teragen can be instrumented"
        )
    if exp.instrument is not None:
        if axis is not None:
            raise ConfigError(
                f"{where}.axes.instrument",
                "the experiment's `instrument:` makes this axis (on, off): give one of the two",
            )
        spec = instrument.normalize(exp.instrument, f"{where}.instrument")
        if spec["tasks"] and exp.tool != "teragen":
            raise ConfigError(f"{where}.instrument.tasks", "only teragen runs map tasks on YARN")
        exp.instrument_tasks = spec["tasks"]
        rules = instrument.resolve_rules(spec["rules"], f"{where}.instrument.rules")
        exp.axes[instrument.AXIS] = {instrument.ON: spec["rules"]}
        if spec["without"] != "none":
            exp.axes[instrument.AXIS][instrument.OFF] = []
        cells = []
        for i, cell in enumerate(exp.cells):
            labels = [] if cell.id == matrix.NO_AXES_ID else list(cell.labels)
            for lab, rule_names in ((instrument.ON, spec["rules"]), (instrument.OFF, [])):
                if lab == instrument.OFF and (
                    spec["without"] == "none" or (i > 0 and spec["without"] == "first")
                ):
                    continue
                new = (*labels, (instrument.AXIS, lab))
                values = (*cell.values, (instrument.AXIS, rule_names))
                made = matrix.Cell(matrix.cell_id(new), new, values)
                cells.append(made)
                exp.rules[made.id] = rules if rule_names else []
        exp.cells = cells
        return
    for cell in exp.cells:
        value = cell.value_map[instrument.AXIS]
        if not isinstance(value, list):
            raise ConfigError(
                f"{where}.axes.instrument.{cell.label_map[instrument.AXIS]}",
                "a value of the instrument axis is a list of rule sets ([] for none)",
            )
        label = cell.label_map[instrument.AXIS]
        exp.rules[cell.id] = instrument.resolve_rules(value, f"{where}.axes.instrument.{label}")


def load_plan(path: str | Path) -> Plan:
    return build_plan(load_yaml(path))
