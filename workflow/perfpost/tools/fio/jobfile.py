"""fio job files: read on the controller, overridden per cell, delivered with the cell.

A job file is fio's INI form: ``[section]`` headers, ``option=value`` or bare ``option``
lines, ``;`` and ``#`` comments; ``[global]`` sections set defaults for the jobs after them.
perfpost does not interpret the options (fio does): it finds the sections, the
``${VAR}`` variables fio fills from its environment, and appends overrides at the end of
every job section, where they win over what the section and any ``[global]`` set. What ran
is the file with those lines, written into the run's scratch directory and kept in its
record.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfpost.errors import ConfigError

# fio reads a job file of any size; this one travels on a command line (base64) to the host.
MAX_BYTES = 64 * 1024
GLOBAL = "global"
# fio's own keywords, expanded by fio itself (not variables of its environment).
_VAR = re.compile(r"\$\{([^}]*)\}")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SECTION = re.compile(r"^\[([^\]]+)\]\s*$")
OVERRIDE_NOTE = "; set by perfpost"


@dataclass(frozen=True)
class Section:
    """One ``[name]`` of the file: where its lines end, and the options it sets."""

    name: str
    line: int  # of its header, 1-based
    end: int  # the index (0-based) after its last line
    options: tuple[tuple[str, str | None], ...]

    @property
    def is_job(self) -> bool:
        return self.name != GLOBAL


@dataclass(frozen=True)
class JobFile:
    """A job file's text and what perfpost needs to know of it."""

    text: str
    sections: tuple[Section, ...]
    variables: tuple[tuple[str, int], ...]  # ${NAME} and its first line

    @property
    def jobs(self) -> list[Section]:
        return [s for s in self.sections if s.is_job]


def _strip_comment(line: str) -> str:
    """fio drops what follows a ``;`` or ``#`` after an option (``numjobs=4 ; four``)."""
    for mark in (";", "#"):
        at = line.find(mark)
        if at >= 0:
            line = line[:at]
    return line.strip()


class _Refused(Exception):
    def __init__(self, line: int | None, message: str) -> None:
        super().__init__(message)
        self.line, self.message = line, message


def parse(text: str, where: str) -> JobFile:
    """The sections and variables of a job file; a :class:`ConfigError` at ``where`` naming the
    line for what fio would not read here (an option before any section, an ``include``).
    Read once per text: every cell and every run of an experiment plans from the same one."""
    try:
        return _parse(text)
    except _Refused as e:
        at = where if e.line is None else f"{where}, line {e.line}"
        raise ConfigError(at, e.message) from None


@functools.lru_cache(maxsize=64)
def _parse(text: str) -> JobFile:
    lines = text.splitlines()
    sections: list[Section] = []
    current: tuple[str, int, list[tuple[str, str | None]]] | None = None
    last = 0
    seen: dict[str, int] = {}
    variables: dict[str, int] = {}

    def close(end: int) -> None:
        if current is not None:
            name, line, options = current
            sections.append(Section(name, line, end, tuple(options)))

    for no, raw in enumerate(lines, start=1):
        for m in _VAR.finditer(raw.split(";", 1)[0].split("#", 1)[0]):
            name = m.group(1)
            if not _NAME.match(name):
                raise _Refused(no, f"${{{name}}} is not a variable name")
            variables.setdefault(name, no)
        stripped = raw.strip()
        if not stripped or stripped[0] in ";#":
            continue
        m = _SECTION.match(stripped)
        if m:
            close(last)
            name = m.group(1).strip()
            if name != GLOBAL and name in seen:
                raise _Refused(
                    no, f"job [{name}] is also at line {seen[name]}: overrides name a job once"
                )
            seen[name] = no
            current = (name, no, [])
            last = no
            continue
        if stripped.startswith("include ") or stripped == "include":
            raise _Refused(
                no, "`include` of another job file: perfpost delivers one file; put it in this one"
            )
        if current is None:
            raise _Refused(no, f"{stripped!r} comes before any [section]")
        option = _strip_comment(stripped)
        key, eq, value = option.partition("=")
        current[2].append((key.strip(), value.strip() if eq else None))
        last = no
    close(last)
    if not any(s.is_job for s in sections):
        raise _Refused(None, "no job in the file: only [global] sections, or none")
    return JobFile(text, tuple(sections), tuple(variables.items()))


@functools.lru_cache(maxsize=64)
def _read(path: str, mtime_ns: int, size: int) -> str:
    return Path(path).read_bytes().decode()


def resolve(value: str) -> Path:
    """A job file named in a config: relative to the working directory (the checkout)."""
    path = Path(os.path.expanduser(value))
    return path if path.is_absolute() else Path.cwd() / path


def read(value: str, where: str) -> str:
    """The text of the job file a config names, with a clear error when it is not one."""
    path = resolve(value)
    try:
        st = path.stat()
        if not path.is_file():
            raise ConfigError(where, f"{path} is not a file")
        if st.st_size > MAX_BYTES:
            raise ConfigError(where, f"{path} has {st.st_size} bytes; at most {MAX_BYTES}")
        text = _read(str(path), st.st_mtime_ns, st.st_size)
    except FileNotFoundError:
        raise ConfigError(where, f"no such job file: {path}") from None
    except UnicodeDecodeError:
        raise ConfigError(where, f"{path} is not text (UTF-8)") from None
    except OSError as e:
        raise ConfigError(where, f"cannot read {path}: {e.strerror}") from None
    if "\x00" in text:
        raise ConfigError(where, f"{path} is not text: it holds a NUL byte")
    return text


def _key(line: str) -> str | None:
    """The option a line sets, or None for a header, a comment or a blank."""
    stripped = line.strip()
    if not stripped or stripped[0] in ";#[":
        return None
    return _strip_comment(stripped).partition("=")[0].strip()


def option_line(key: str, value: Any, fill: Any = None) -> str | None:
    """One option as a job-file line: ``true`` a bare option, ``false`` ``=0``, ``null`` none."""
    if value is None:
        return None
    if value is True:
        return key
    if value is False:
        return f"{key}=0"
    text = str(value) if fill is None else fill(value)
    return f"{key}={text}"


REPLACED_NOTE = "; replaced by perfpost: "


def render(
    job: JobFile,
    every: Mapping[str, Any],
    per_section: Mapping[str, Mapping[str, Any]],
    fill: Any = None,
    replaced: tuple[str, ...] = (),
) -> str:
    """The file as it runs: after each job section's own lines, the options set for every
    job (``every``), then those set for that one (``per_section``), under a comment. The
    file's own lines of a ``replaced`` option are commented out, in every section: fio
    checks some values as it reads them (a ``directory=`` that is not there fails the
    job even when a later line sets another)."""
    lines = [
        REPLACED_NOTE + line if _key(line) in replaced else line for line in job.text.splitlines()
    ]
    inserts: dict[int, list[str]] = {}
    for s in job.jobs:
        added = [
            line
            for key, value in [*every.items(), *per_section.get(s.name, {}).items()]
            if (line := option_line(key, value, fill)) is not None
        ]
        if added:
            inserts[s.end] = [OVERRIDE_NOTE, *added]
    out: list[str] = []
    for i, line in enumerate(lines):
        if i in inserts:
            out += inserts.pop(i)
        out.append(line)
    for rest in inserts.values():  # the last section's
        out += rest
    return "\n".join(out) + "\n"


def parse_only(
    text: str, variables: Mapping[str, str], command: str = "fio", timeout: float = 20
) -> str | None:
    """fio's own verdict on the file (``fio --parse-only``), here, before any host is touched:
    None when it accepts it or when this machine has no fio to ask; else its messages."""
    exe = shutil.which(command) or (shutil.which("fio") if command != "fio" else None)
    if exe is None:
        return None
    with tempfile.TemporaryDirectory(prefix="perfpost-fio-check-") as tmp:
        path = Path(tmp) / "job.fio"
        path.write_text(text)
        env = {**os.environ, **variables, "LC_ALL": "C"}
        try:
            got = subprocess.run(
                [exe, "--parse-only", str(path)],
                capture_output=True,
                text=True,
                env=env,
                cwd=tmp,
                timeout=timeout,
            )
        except (OSError, subprocess.TimeoutExpired):
            return None  # no verdict: the host's fio will give one
    if got.returncode == 0:
        return None
    said = [
        line.strip() for line in (got.stderr + got.stdout).splitlines() if line.startswith("fio:")
    ]
    return "; ".join(said) or f"exit code {got.returncode}"
