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


class _Tools(dict[str, ModuleType]):
    """The tool modules by name, each imported when first asked for: a cell's process loads
    its own tool's parser and regexes, not every tool's (a third of its start-up)."""

    def __missing__(self, name: str) -> ModuleType:
        if name not in NAMES:
            raise KeyError(name)
        module = importlib.import_module(f"perfpost.tools.{name}")
        self[name] = module
        return module

    def __contains__(self, name: object) -> bool:
        return name in NAMES or super().__contains__(name)

    def get(self, name: str, default: ModuleType | None = None) -> ModuleType | None:  # type: ignore[override]
        try:
            return self[name]
        except KeyError:
            return default

    def _load_all(self) -> None:
        for name in NAMES:
            self[name]  # imports it

    def __iter__(self):  # type: ignore[no-untyped-def]
        self._load_all()
        return super().__iter__()

    def __len__(self) -> int:
        self._load_all()
        return super().__len__()

    def keys(self):  # type: ignore[no-untyped-def]
        self._load_all()
        return super().keys()

    def values(self):  # type: ignore[no-untyped-def]
        self._load_all()
        return super().values()

    def items(self):  # type: ignore[no-untyped-def]
        self._load_all()
        return super().items()


TOOLS: dict[str, ModuleType] = _Tools()


def get(name: str) -> ModuleType:
    try:
        return TOOLS[name]
    except KeyError:
        raise KeyError(f"unknown tool {name!r} (known: {', '.join(sorted(TOOLS))})") from None


def runtimes() -> dict[str, provision.Runtime]:
    """What the tools need fetched, by the runtime's name (``ozone``, ``hadoop``)."""
    return {t.RUNTIME.name: t.RUNTIME for t in TOOLS.values() if t.RUNTIME is not None}
