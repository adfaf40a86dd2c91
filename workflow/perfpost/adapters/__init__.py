"""Tool adapters by name. Each module has NAME, PARAMS_SCHEMA, check_params, plan, log_names,
parse_cell, parse_text, error_reason, VERSION_ARGV, PLOT_METRICS, TABLE_METRICS, SYNC_ADJUST."""

from __future__ import annotations

from types import ModuleType

from perfpost.adapters import dd

ADAPTERS: dict[str, ModuleType] = {dd.NAME: dd}


def get(name: str) -> ModuleType:
    try:
        return ADAPTERS[name]
    except KeyError:
        raise KeyError(f"unknown tool {name!r} (known: {', '.join(sorted(ADAPTERS))})") from None
