"""Matrix expansion and cell ids: which cells an experiment has, and their stable names.

An axis is a list of values, or a mapping ``label: value`` when the value is unfit for a path
(``disk: /var/tmp/perfpost``). Axes combine as a cross product; ``zip`` groups move together;
``exclude`` rules drop combinations. A cell id is ``axis=label,...`` in declaration order, so
it reads well in paths and never changes when unrelated axes are added elsewhere.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from perfpost.errors import ConfigError

LABEL_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")
NO_AXES_ID = "default"


@dataclass(frozen=True)
class Axis:
    """One matrix axis: labels (for ids and tables) and values (for commands), in order."""

    name: str
    labels: tuple[str, ...]
    values: tuple[Any, ...]


@dataclass(frozen=True)
class Cell:
    """One combination of axis values; ``labels`` and ``values`` follow axis order."""

    id: str
    labels: tuple[tuple[str, str], ...]
    values: tuple[tuple[str, Any], ...]

    @property
    def label_map(self) -> dict[str, str]:
        return dict(self.labels)

    @property
    def value_map(self) -> dict[str, Any]:
        return dict(self.values)


def label(value: Any) -> str:
    """The label of an axis value: what cell ids, tables, comparisons and figures all match on.

    One rule for every place that names a value (``1`` is ``"1"``, ``1.5`` is ``"1.5"``,
    ``true`` is ``"true"``), so a comparison or a figure selects exactly the cells the config
    named; a table that turned ``1`` into ``1.0`` would match nothing.
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def parse_axes(spec: Mapping[str, Any], where: str) -> list[Axis]:
    """Axes from config, checking that every label is non-empty, unique and path-safe."""
    axes = []
    for name, raw in spec.items():
        path = f"{where}.{name}"
        if not LABEL_RE.match(str(name)):
            raise ConfigError(path, "axis names use letters, digits and . _ + - only")
        if isinstance(raw, Mapping):
            labels = tuple(label(k) for k in raw)
            values = tuple(raw.values())
        elif isinstance(raw, Sequence) and not isinstance(raw, str):
            labels = tuple(label(v) for v in raw)
            values = tuple(raw)
        else:
            raise ConfigError(path, "an axis is a list of values or a mapping label: value")
        if not labels:
            raise ConfigError(path, "axis has no values")
        for text in labels:
            if not LABEL_RE.match(text):
                raise ConfigError(
                    path,
                    f"value {text!r} cannot name a cell (letters, digits and . _ + - only); "
                    "give the axis as a mapping, e.g. `disk: /var/tmp/x`",
                )
        dupes = sorted({x for x in labels if labels.count(x) > 1})
        if dupes:
            raise ConfigError(path, f"duplicate values {dupes}")
        axes.append(Axis(str(name), labels, values))
    return axes


def _groups(axes: list[Axis], zips: Sequence[Sequence[str]], where: str) -> list[list[Axis]]:
    by_name = {a.name: a for a in axes}
    seen: dict[str, int] = {}
    groups: list[list[Axis]] = []
    for i, group in enumerate(zips):
        path = f"{where}.zip[{i}]"
        if len(group) < 2:
            raise ConfigError(path, "a zip group names at least two axes")
        members = []
        for name in group:
            if name not in by_name:
                raise ConfigError(path, f"{name!r} is not an axis (axes: {sorted(by_name)})")
            if name in seen:
                raise ConfigError(path, f"axis {name!r} is already in zip group {seen[name]}")
            seen[name] = i
            members.append(by_name[name])
        lengths = {a.name: len(a.labels) for a in members}
        if len(set(lengths.values())) > 1:
            raise ConfigError(path, f"zipped axes must have equal lengths, got {lengths}")
        groups.append(members)
    # Order groups by the first declared axis they contain, so ids keep declaration order.
    out: list[list[Axis]] = []
    placed: set[str] = set()
    for axis in axes:
        if axis.name in placed:
            continue
        group = next((g for g in groups if axis in g), [axis])
        out.append(group)
        placed.update(a.name for a in group)
    return out


def _check_excludes(axes: list[Axis], excludes: Sequence[Mapping[str, Any]], where: str) -> None:
    by_name = {a.name: a for a in axes}
    for i, rule in enumerate(excludes):
        path = f"{where}.exclude[{i}]"
        if not rule:
            raise ConfigError(path, "an empty exclude rule would drop every cell")
        for name, wanted in rule.items():
            if name not in by_name:
                raise ConfigError(path, f"{name!r} is not an axis (axes: {sorted(by_name)})")
            for text in _as_labels(wanted):
                if text not in by_name[name].labels:
                    raise ConfigError(
                        f"{path}.{name}",
                        f"{text!r} is not a value of axis {name!r} {list(by_name[name].labels)}",
                    )


def _as_labels(wanted: Any) -> list[str]:
    if isinstance(wanted, Sequence) and not isinstance(wanted, str):
        return [label(w) for w in wanted]
    return [label(wanted)]


def cell_id(labels: Sequence[tuple[str, str]]) -> str:
    """``axis=label,...`` in axis order; ``default`` for an experiment without axes."""
    if not labels:
        return NO_AXES_ID
    return ",".join(f"{name}={text}" for name, text in labels)


def parse_cell_id(text: str) -> dict[str, str]:
    """Inverse of :func:`cell_id`."""
    if text == NO_AXES_ID:
        return {}
    out = {}
    for part in text.split(","):
        name, sep, text = part.partition("=")
        if not sep or not name or not text:
            raise ValueError(f"not a cell id: {text!r}")
        out[name] = text
    return out


def expand(
    axes_spec: Mapping[str, Any],
    exclude: Sequence[Mapping[str, Any]] = (),
    zip_groups: Sequence[Sequence[str]] = (),
    where: str = "axes",
) -> list[Cell]:
    """All cells of a matrix, in a stable order (declaration order, first axis slowest)."""
    parent = where.rpartition(".")[0] or where
    axes = parse_axes(axes_spec, where)
    groups = _groups(axes, zip_groups, parent)
    _check_excludes(axes, exclude, parent)
    rules = [{k: set(_as_labels(v)) for k, v in r.items()} for r in exclude]
    order = [a.name for a in axes]
    cells = []
    for combo in itertools.product(*(range(len(g[0].labels)) for g in groups)):
        chosen: dict[str, tuple[str, Any]] = {}
        for group, idx in zip(groups, combo, strict=True):
            for axis in group:
                chosen[axis.name] = (axis.labels[idx], axis.values[idx])
        if any(all(chosen[k][0] in v for k, v in r.items()) for r in rules):
            continue
        labels = tuple((n, chosen[n][0]) for n in order)
        values = tuple((n, chosen[n][1]) for n in order)
        cells.append(Cell(cell_id(labels), labels, values))
    if axes and not cells:
        raise ConfigError(f"{parent}.exclude", "the exclude rules drop every cell")
    return cells
