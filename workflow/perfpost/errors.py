"""Errors perfpost reports to users: each names the place (file, key path, line) it is about."""

from __future__ import annotations

import time


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


class HostError(PerfpostError):
    """A host that could not be used: unreachable, authentication, host key, lost connection."""


class HostSilent(HostError):
    """A host that stopped answering on an open connection (frozen, or cut off from this
    machine): what ran there may have finished or may still run; nothing more came back."""

    def __init__(self, name: str, heard: float, silence: float) -> None:
        self.name = name
        self.heard = heard  # when it last answered (epoch seconds)
        self.silence = silence  # seconds without a reply when perfpost gave up on it
        when = time.strftime("%H:%M:%S", time.localtime(heard))
        super().__init__(f"{name} stopped answering at {when} (no reply for {silence:.0f} s)")


def unforeseen(e: BaseException) -> str:
    """The reason a record gives for an exception: a host error's own words, else the
    exception's type and message (perfpost had no words of its own for it)."""
    if isinstance(e, PerfpostError):
        return str(e)
    return f"internal error: {type(e).__name__}: {e}" if str(e) else f"internal error: {e!r}"
