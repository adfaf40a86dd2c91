"""A cell's tool params from its axes: an axis fills the param of its name and every
``{axis}`` field of a template; ``{work}``, ``{run}`` (filled on the host) and
``{<cluster>.<field>}`` (filled once the cell's clusters are up) stay as written."""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from typing import Any

from perfpost import tools
from perfpost.columns import FIXED_COLUMNS, SUMMARY_COLUMNS, TAIL_COLUMNS
from perfpost.errors import ConfigError
from perfpost.plan import matrix
from perfpost.plan.model import Experiment


def _template_fields(text: str, where: str) -> list[str]:
    try:
        return [f for _, f, _, _ in string.Formatter().parse(text) if f is not None]
    except ValueError as e:
        raise ConfigError(where, f"bad template {text!r}: {e}") from None


# Column names of the tidy table and its summaries: an axis may not take one.
RESERVED_AXES = frozenset(
    (*FIXED_COLUMNS, *TAIL_COLUMNS, *SUMMARY_COLUMNS, "work", "run", "cluster", "id")
)


# Filled in on the host, not from the axes: the cell's own scratch directory, its name.
RESERVED_FIELDS = frozenset({"work", "run"})


# Filled in when the cell's clusters are up: {<cluster name>.<field>}, {cluster.<field>}.
_CLUSTER_FIELD = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*\.[a-z0-9_]+$")


def render(value: Any, values: Mapping[str, Any], where: str) -> Any:
    if not isinstance(value, str):
        if isinstance(value, list):
            return [render(v, values, f"{where}[{i}]") for i, v in enumerate(value)]
        if isinstance(value, dict):
            return {k: render(v, values, f"{where}.{k}") for k, v in value.items()}
        return value
    fields = [
        f
        for f in _template_fields(value, where)
        if f not in RESERVED_FIELDS and not _CLUSTER_FIELD.match(f)
    ]
    for f in fields:
        if f not in values:
            known = ", ".join(sorted(values)) or "none"
            raise ConfigError(where, f"template field {{{f}}} names no axis (axes: {known})")
    if len(fields) == 1 and value == "{" + fields[0] + "}":
        return values[fields[0]]  # keep the axis value's type: "{count}" -> 10000
    return value.format_map(_KeepReserved(values))


class _KeepReserved(dict):
    """Axis values; reserved and cluster fields stay as they are, for the run to fill."""

    def __missing__(self, key: str) -> Any:
        return _Dotted(key)  # only dotted fields reach here: others were checked

    def __getitem__(self, key: str) -> Any:
        if key in RESERVED_FIELDS:
            return "{" + key + "}"
        return super().__getitem__(key)


class _Dotted:
    """``{a.b}`` kept as written by ``str.format``."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __getattr__(self, attr: str) -> str:
        return "{" + self.name + "." + attr + "}"


def resolve_params(exp: Experiment, cell: matrix.Cell, where: str) -> dict[str, Any]:
    """The tool's parameters for one cell: axes fill same-named params and `{axis}` fields."""
    adapter = tools.get(exp.tool)
    known = adapter.PARAMS_SCHEMA["properties"]
    values = cell.value_map
    for name in values:
        if name in exp.params and exp.params[name] != "{" + name + "}":
            raise ConfigError(
                f"{where}.params.{name}",
                f'set here and by the axis {name!r}: remove one, or write "{{{name}}}"',
            )
    params = {k: render(v, values, f"{where}.params.{k}") for k, v in exp.params.items()}
    for name, value in values.items():
        if name in known and name not in exp.params:
            params[name] = value
    return params


# A cluster field in rendered params, where a brace the command has (``{{``) is one brace.
_CLUSTER_FIELD_IN = re.compile(r"\{([A-Za-z][A-Za-z0-9_-]*\.[a-z0-9_]+)\}")


def cluster_fields(value: Any) -> list[str]:
    """``{name.field}`` templates in rendered params, anywhere inside them: found by pattern,
    as the run fills them (fill_fields), since rendering made ``{{`` a brace of the command's
    own and the text is no longer a template."""
    if isinstance(value, str):
        return _CLUSTER_FIELD_IN.findall(value)
    if isinstance(value, list):
        return [f for v in value for f in cluster_fields(v)]
    if isinstance(value, dict):
        return [f for v in value.values() for f in cluster_fields(v)]
    return []
