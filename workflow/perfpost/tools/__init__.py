"""The tools perfpost runs, by name: one line per tool in :data:`TOOLS`.

Each is a folder of its own (``tools/<name>/``) holding everything perfpost knows of it: its
command builder and parser, its method text, its defaults and version, and what perfpost
fetches to run it. :mod:`perfpost.tools.base` says what a tool module provides.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from perfpost import provision

# One entry per tool folder: adding a tool is its folder and its name here.
NAMES = ("dd", "fio", "freon", "teragen")

TOOLS: dict[str, ModuleType] = {
    name: importlib.import_module(f"perfpost.tools.{name}") for name in NAMES
}


def get(name: str) -> ModuleType:
    try:
        return TOOLS[name]
    except KeyError:
        raise KeyError(f"unknown tool {name!r} (known: {', '.join(sorted(TOOLS))})") from None


def runtimes() -> dict[str, provision.Runtime]:
    """What the tools need fetched, by the runtime's name (``ozone``, ``hadoop``)."""
    return {t.RUNTIME.name: t.RUNTIME for t in TOOLS.values() if t.RUNTIME is not None}
