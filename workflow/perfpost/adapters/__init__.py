"""Tool adapters by name. Each module has NAME, PARAMS_SCHEMA, check_params, plan,
version_argv, parse_cell, parse_text, error_reason, describe, PLOT_METRICS, TABLE_METRICS and
SYNC_ADJUST; parse_series where the tool reports progress over time."""

from __future__ import annotations

from types import ModuleType

from perfpost.adapters import dd, freon, teragen

ADAPTERS: dict[str, ModuleType] = {dd.NAME: dd, freon.NAME: freon, teragen.NAME: teragen}


def get(name: str) -> ModuleType:
    try:
        return ADAPTERS[name]
    except KeyError:
        raise KeyError(f"unknown tool {name!r} (known: {', '.join(sorted(ADAPTERS))})") from None
