"""Reading a config file: YAML, strictly (a key given twice is a mistake, not the last one
kept), and every error names the file and line."""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

from perfpost.errors import ConfigError

_MERGE = "tag:yaml.org,2002:merge"  # `<<: *anchor`, whose keys a mapping's own override


def _no_duplicates(loader: Any, node: Any, deep: bool = False) -> Any:
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        if key_node.tag == _MERGE:  # merged by construct_mapping, as YAML's merge key does
            continue
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise ConfigError(
                f"line {key_node.start_mark.line + 1}",
                f"duplicate key {key!r} (first at line {seen[key]})",
            )
        seen[key] = key_node.start_mark.line + 1
    return loader.construct_mapping(node, deep=deep)


@cache
def _strict_loader() -> type:
    """A YAML loader that refuses duplicate keys instead of keeping the last one silently,
    and takes YAML's merge key (``<<: *anchor``) as PyYAML's own loader does.

    Made on first use: PyYAML (compiling its regular expressions) is no part of the import
    ``perfpost run-cell`` pays once per cell."""
    import yaml

    class StrictLoader(yaml.SafeLoader):
        pass

    StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _no_duplicates)
    return StrictLoader


def load_yaml(path: str | Path) -> dict[str, Any]:
    """A config file, refusing duplicate keys; errors name the file."""
    import yaml

    try:
        with open(path) as fh:
            data = yaml.load(fh, Loader=_strict_loader())
    except ConfigError as e:
        raise ConfigError(f"{path}: {e.where}", e.message) from None
    except yaml.YAMLError as e:
        raise ConfigError(str(path), f"not valid YAML: {e}") from None
    if not isinstance(data, dict):
        raise ConfigError(str(path), "a config is a mapping with `experiments:` (and `hosts:`)")
    return data


def key_lines(path: str | Path) -> dict[tuple[str, ...], int]:
    """Each key path of a config file (``("experiments", "dd", "params")``; a list's items
    by their index) and the line it is on."""
    import yaml

    with open(path) as fh:
        root = yaml.compose(fh, Loader=yaml.SafeLoader)
    out: dict[tuple[str, ...], int] = {}

    def walk(node: Any, prefix: tuple[str, ...]) -> None:
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                key = (*prefix, str(k.value))
                out.setdefault(key, k.start_mark.line + 1)
                walk(v, key)
        elif isinstance(node, yaml.SequenceNode):
            for i, v in enumerate(node.value):
                key = (*prefix, str(i))
                out.setdefault(key, v.start_mark.line + 1)
                walk(v, key)

    walk(root, ())
    return out


_PART = re.compile(r"^([^\[]*)((?:\[[^\]]*\])*)$")


def key_path(where: str) -> tuple[str, ...]:
    """A ConfigError's ``where`` as the keys it names: ``experiments.x[default].params`` is
    experiments, x, params (a bracketed cell label names no key), ``compare[1]`` the list's
    second item."""
    out: list[str] = []
    for part in where.split("."):
        m = _PART.match(part)
        if not m:
            out.append(part)
            continue
        if m.group(1):
            out.append(m.group(1))
        out += re.findall(r"\[(\d+)\]", m.group(2))
    return tuple(out)


def locate(where: str, files: Iterable[str | Path]) -> tuple[str, int] | None:
    """The file and line a ConfigError's ``where`` is at: the deepest of its keys found, in
    the last file that has it (a later ``--configfile`` overrides an earlier one)."""
    keys = key_path(where)
    found = None
    for path in files:
        try:
            lines = key_lines(path)
        except Exception:
            continue
        for n in range(len(keys), 0, -1):
            if keys[:n] in lines:
                if found is None or n >= found[2]:
                    found = (str(path), lines[keys[:n]], n)
                break
    return (found[0], found[1]) if found else None


def message(error: ConfigError, files: Iterable[str | Path]) -> str:
    """A config mistake as one line a person reads: the file and line first, then the key
    and what is wrong with it."""
    if re.match(r"^\S+: line \d+$", error.where) or error.where.endswith(
        tuple(str(f) for f in files)
    ):
        return str(error)  # the strict loader's own: file and line already
    place = locate(error.where, files)
    if place is None:
        return str(error)
    return f"{place[0]}:{place[1]}: {error.where}: {error.message}"
