"""Environment variables for a cell's commands, some of them secret.

The config sets variables per host and per experiment (``env:``). A plain value is part of the
benchmark's description and shows in records and posts. A value marked secret
(``{secret: VAR}``) is never in the config: it is read from perfpost's own environment
variable ``VAR`` when the cell runs, reaches the host's commands through their standard input
(never a command line), and is replaced by ``***`` in every log, record and post perfpost
writes. The cell spec, which Snakemake stores in its metadata, holds only the variable's name.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from perfpost.errors import PerfpostError
from perfpost.records import write_bytes_atomic

MASK = "***"


def is_secret(value: Any) -> bool:
    return isinstance(value, dict) and "secret" in value


def public(env: Mapping[str, Any]) -> dict[str, str]:
    """What records and posts show: plain values as they are, secrets by their source only."""
    return {
        name: f"(secret, from ${value['secret']})" if is_secret(value) else str(value)
        for name, value in env.items()
    }


def missing(env: Mapping[str, Any], environ: Mapping[str, str] = os.environ) -> list[str]:
    """Names of the variables whose secret is not set in ``environ``."""
    return [n for n, v in env.items() if is_secret(v) and v["secret"] not in environ]


def resolve(
    env: Mapping[str, Any], environ: Mapping[str, str] = os.environ
) -> tuple[dict[str, str], list[str]]:
    """The values to export on the host, and the secret ones among them (for redaction)."""
    values: dict[str, str] = {}
    secrets: list[str] = []
    for name, value in env.items():
        if is_secret(value):
            source = value["secret"]
            if source not in environ:
                raise PerfpostError(
                    f"env.{name}: its secret comes from the environment variable {source}, "
                    "which is not set for perfpost"
                )
            values[name] = environ[source]
            if environ[source]:
                secrets.append(environ[source])
        else:
            values[name] = str(value)
    return values, secrets


class Redactor:
    """Replaces secret values by ``***`` in text, JSON-like data and files."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        # Longest first: a secret that contains another is masked whole.
        self.secrets = sorted({s for s in secrets if s}, key=len, reverse=True)

    def __bool__(self) -> bool:
        return bool(self.secrets)

    def text(self, text: str) -> str:
        for s in self.secrets:
            text = text.replace(s, MASK)
        return text

    def data(self, value: Any) -> Any:
        if not self.secrets:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.data(k): self.data(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.data(v) for v in value]
        return value

    def tree(self, root: str | Path) -> list[Path]:
        """Mask secrets in every file under ``root`` (rewritten atomically); returns the
        files that held one."""
        if not self.secrets:
            return []
        needles = [s.encode() for s in self.secrets]
        changed = []
        for path in sorted(Path(root).rglob("*")):
            if not path.is_file() or path.is_symlink():
                continue
            data = path.read_bytes()
            if not any(n in data for n in needles):
                continue
            for n in needles:
                data = data.replace(n, MASK.encode())
            write_bytes_atomic(path, data)
            changed.append(path)
        return changed


class RedactingStream:
    """A text stream that masks secrets before they reach the real one (a job's log)."""

    def __init__(self, stream: Any, redactor: Redactor) -> None:
        self._stream = stream
        self._redactor = redactor

    def write(self, text: str) -> int:
        self._stream.write(self._redactor.text(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
