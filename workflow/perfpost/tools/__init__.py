"""The tools perfpost runs, by name: one line per tool in :data:`NAMES`.

Each is a folder of its own (``tools/<name>/``) holding everything perfpost knows of it: its
command builder and parser, its method text, its defaults and version, and what perfpost
fetches to run it. :mod:`perfpost.tools.base` says what a tool module provides.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from perfpost import provision

# One entry per tool folder: adding a tool is its folder and its name here.
NAMES = ("command", "dd", "fio", "freon", "teragen", "wait")

# The tool modules imported so far, by name. Each is imported when first asked for: a cell's
# process loads its own tool's parser and regexes, not every tool's (a third of its
# start-up). Tests and the bench register stand-in tools here.
LOADED: dict[str, ModuleType] = {}


def get(name: str) -> ModuleType:
    """The tool ``name``'s module."""
    module = LOADED.get(name)
    if module is not None:
        return module
    if name not in NAMES:
        known = ", ".join(sorted({*NAMES, *LOADED}))
        raise KeyError(f"unknown tool {name!r} (known: {known})")
    module = LOADED[name] = importlib.import_module(f"perfpost.tools.{name}")
    return module


def every() -> dict[str, ModuleType]:
    """Every tool's module, by name, for what depends on all of them (the config's schemas,
    the cell server's imports)."""
    for name in NAMES:
        get(name)
    return dict(LOADED)


def runtimes() -> dict[str, provision.Runtime]:
    """What the tools need fetched, by the runtime's name (``ozone``, ``hadoop``)."""
    return {t.RUNTIME.name: t.RUNTIME for t in every().values() if t.RUNTIME is not None}
