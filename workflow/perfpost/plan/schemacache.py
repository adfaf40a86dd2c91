"""Configs that passed the JSON schemas before, kept (with their defaults filled in) so the
next run of the same config skips the schema checks: :func:`passed_before` and :func:`keep`.
The key covers everything the checks' outcome depends on (:func:`_cache_key`)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from perfpost import hostenv, tools
from perfpost.plan.schema import SCHEMA_PATH

# The layout of a kept config (perfpost.plan.build.build_plan with ``cache``).
CONFIG_CACHE_SCHEMA_VERSION = 1


# How many kept configs a cache holds: one file per config ever run, so each edit of the
# config would otherwise add one for good. The oldest go first; one pruned costs its config
# the schema checks (0.3 s) once more.
CONFIG_CACHE_KEEP = 32


def plain(value: Any) -> bool:
    """Whether ``value`` is JSON as it stands (string keys; no tuples, dates or sets), so
    that its JSON text names it exactly and reading that text back gives it again."""
    if isinstance(value, dict):
        return all(isinstance(k, str) and plain(v) for k, v in value.items())
    if isinstance(value, list):
        return all(plain(v) for v in value)
    return value is None or isinstance(value, (str, int, float, bool))


def _cache_key(config: dict[str, Any]) -> str:
    """Everything the schema checks' outcome depends on: the config, the config schema and
    the tools' params schemas, and the versions of perfpost, Snakemake (its validator fills
    the defaults) and jsonschema."""
    from importlib.metadata import version

    import perfpost

    h = hashlib.sha256()
    for part in (
        str(CONFIG_CACHE_SCHEMA_VERSION),
        perfpost.__version__,
        version("snakemake"),
        version("jsonschema"),
        json.dumps(config, sort_keys=True, separators=(",", ":")),
        json.dumps(
            {name: t.PARAMS_SCHEMA for name, t in tools.every().items()},
            sort_keys=True,
            default=repr,
        ),
    ):
        h.update(part.encode() + b"\0")
    h.update(SCHEMA_PATH.read_bytes())
    return h.hexdigest()


def passed_before(config: dict[str, Any], cache: str | Path | None) -> tuple[Path | None, bool]:
    """Where this config's checks are kept in ``cache`` (None: not kept, it is not plain
    JSON), and whether they passed before; if so, ``config`` gets its defaults from there."""
    if cache is None or not plain(config):
        return None, False
    # Kept under results/, the config would keep its secret settings' values there too.
    if hostenv.setting_secrets(config.get("experiments"), config.get("clusters")):
        return None, False
    path = Path(cache) / f"config-{_cache_key(config)}.json"
    try:
        kept = json.loads(path.read_text())
    except (OSError, ValueError):
        return path, False
    if (
        not isinstance(kept, dict)
        or kept.get("schema_version") != CONFIG_CACHE_SCHEMA_VERSION
        or not isinstance(kept.get("config"), dict)
    ):
        return path, False
    config.clear()
    config.update(kept["config"])
    return path, True


def keep(path: Path, filled: str) -> None:
    """Note that the config passed (``filled``: its JSON with the defaults)."""
    from perfpost.records import write_text_atomic

    doc = f'{{"schema_version": {CONFIG_CACHE_SCHEMA_VERSION}, "config": {filled}}}\n'
    try:
        write_text_atomic(path, doc)
        kept = sorted(
            path.parent.glob("config-*.json"), key=lambda p: p.stat().st_mtime, reverse=True
        )
        for old in kept[CONFIG_CACHE_KEEP:]:
            old.unlink(missing_ok=True)
    except OSError:
        pass  # a cache that cannot be written only costs the next run the checks
