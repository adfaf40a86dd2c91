"""Errors perfpost reports to users: each names the place (file, key path, line) it is about."""

from __future__ import annotations


class PerfpostError(Exception):
    """Base class: an error with a message fit to print as is."""


class ConfigError(PerfpostError):
    """A config value that cannot be used; ``where`` is a key path like ``experiments.dd.bs``."""

    def __init__(self, where: str, message: str) -> None:
        self.where = where
        self.message = message
        super().__init__(f"config: {where}: {message}")


class ParseError(PerfpostError):
    """A log that does not say what its tool must say; names the file and, where known, line."""

    def __init__(self, source: str, message: str, line: int | None = None) -> None:
        self.source = source
        self.line = line
        self.message = message
        place = f"{source}:{line}" if line is not None else source
        super().__init__(f"{place}: {message}")


def unforeseen(e: BaseException) -> str:
    """The reason a record gives for an exception: a host error's own words, else the
    exception's type and message (perfpost had no words of its own for it)."""
    if isinstance(e, PerfpostError):
        return str(e)
    return f"internal error: {type(e).__name__}: {e}" if str(e) else f"internal error: {e!r}"
