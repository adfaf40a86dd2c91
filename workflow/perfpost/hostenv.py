"""Environment variables for a cell's commands, some of them secret.

The config sets variables per host and per experiment (``env:``). A plain value is part of the
benchmark's description and shows in records and posts. A value marked secret
(``{secret: VAR}``) is never in the config: it is read from perfpost's own environment
variable ``VAR`` when the cell runs, reaches the host's commands through their standard input
(never a command line), and is replaced by ``***`` in every log, record and post perfpost
writes. The cell spec, which Snakemake stores in its metadata, holds only the variable's name.

Nothing else of perfpost's environment reaches a command: on ``localhost`` it starts from
:data:`BASE_ENV` only, so the source variable of a secret (``PERF_S3_KEY``) or any other
variable perfpost happens to have is not handed to experiments that did not declare it. Over
SSH a command gets the login environment sshd gives (perfpost sends no variables), plus
``env``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from perfpost.errors import PerfpostError
from perfpost.records import write_bytes_atomic

MASK = "***"

# The host name that means this machine: commands run here without SSH, from BASE_ENV.
LOCALHOST = "localhost"

# What a localhost command inherits from perfpost's environment, when set there: where to find
# programs (PATH, and the JVM through JAVA_HOME), who and where it is (HOME, USER, LOGNAME,
# TMPDIR), and the locale (LANG; LC_ALL is then set to C so tools print numbers one way).
# Everything else a command needs is declared with `env:`. TERM is left out: no command has
# a terminal.
BASE_ENV = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "TMPDIR", "JAVA_HOME")


def base(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The part of ``environ`` a localhost command starts from: :data:`BASE_ENV` and
    ``LC_ALL=C``, nothing else."""
    out = {name: environ[name] for name in BASE_ENV if name in environ}
    out["LC_ALL"] = "C"
    return out


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

    def bytes(self, data: bytes) -> bytes:
        """Masked bytes: secrets are matched as their UTF-8 encoding, whatever else the
        output holds (a tool's log need not be valid text)."""
        for s in self.secrets:
            data = data.replace(s.encode(), MASK.encode())
        return data

    def write(self, path: str | Path, data: str | bytes) -> None:
        """Write a log perfpost keeps: masked in memory first, then written atomically, so
        no file under results ever holds a secret, not even for a moment."""
        raw = data.encode() if isinstance(data, str) else data
        write_bytes_atomic(path, self.bytes(raw))

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
