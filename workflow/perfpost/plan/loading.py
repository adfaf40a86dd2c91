"""Reading a config file: YAML, strictly (a key given twice is a mistake, not the last one
kept), and every error names the file and line."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from perfpost.errors import ConfigError


def _no_duplicates(loader: Any, node: Any, deep: bool = False) -> Any:
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
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
    """A YAML loader that refuses duplicate keys instead of keeping the last one silently.

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
