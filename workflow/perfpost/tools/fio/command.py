"""fio's command line: the typed job options, the config checks, and the plan of one run."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from perfpost.errors import ConfigError
from perfpost.tools.base import Plan, Proc, fill_work, never_provisioned, params_as_given
from perfpost.tools.fio.defaults import LOG, RW_MODES, WRITING

_SIZE = {"type": ["string", "integer"], "minLength": 1, "minimum": 0}

# The typed job options, in the order they go on the command line.
TYPED: dict[str, dict[str, Any]] = {
    "rw": {
        "description": "I/O pattern: read, write, randread, randwrite, randrw, ... "
        "(fio's default: read)",
        "type": "string",
        "pattern": r"^(" + "|".join(RW_MODES) + r")(:[0-9]+[kKmMgG]?)?$",
    },
    "bs": {"description": "Block size, fio units (4k, 1m, 4k,64k for reads,writes)", **_SIZE},
    "size": {"description": "Bytes of I/O per job, and its file's size (64M, 1g)", **_SIZE},
    "ioengine": {
        "description": "I/O engine: psync (fio's default), libaio, io_uring, sync, mmap, ...",
        "type": "string",
        "pattern": r"^[A-Za-z0-9_:./-]+$",
    },
    "iodepth": {
        "description": "I/Os kept in flight (async engines)",
        "type": "integer",
        "minimum": 1,
    },
    "numjobs": {
        "description": "Clones of the job running at once",
        "type": "integer",
        "minimum": 1,
    },
    "direct": {
        "description": "O_DIRECT: bypass the page cache (true/1)",
        "type": ["boolean", "integer"],
        "minimum": 0,
        "maximum": 1,
    },
    "runtime": {
        "description": "Stop the job after this long (fio units: 5, 5s, 2m)",
        "type": ["string", "integer"],
        "minLength": 1,
        "minimum": 1,
    },
    "time_based": {
        "description": "Run for the whole runtime, over the file again and again",
        "type": "boolean",
    },
    "rwmixread": {
        "description": "Percentage of reads in a mixed workload",
        "type": "integer",
        "minimum": 0,
        "maximum": 100,
    },
    "fsync": {
        "description": "fsync after this many writes (0: never)",
        "type": "integer",
        "minimum": 0,
    },
    "group_reporting": {
        "description": "Report the job's clones as one (merged percentiles)",
        "type": "boolean",
    },
}

PARAMS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["dir"],
    "properties": {
        "dir": {
            "description": "Directory the cell's scratch directory ({work}) goes in; fio's "
            "--directory is {work}, removed afterwards",
            "type": "string",
            "minLength": 1,
        },
        "name": {
            "description": "The job's name (--name), in per-job metric names",
            "type": "string",
            "pattern": r"^[A-Za-z0-9][A-Za-z0-9_.-]*$",
            "default": "perfpost",
        },
        **TYPED,
        "options": {
            "description": "Any other fio option by its name: true -> a bare flag, false -> "
            "=0, null -> left out, else --name=value",
            "type": "object",
            "default": {},
        },
        "command": {
            "description": "The fio command on the host",
            "type": "string",
            "minLength": 1,
            "default": "fio",
        },
        "drop_cache": {
            "description": "Drop the page cache right before the measurement (needs root)",
            "type": "boolean",
            "default": False,
        },
        "on_unprivileged": {
            "description": "When the cache cannot be dropped: fail the cell, or skip it",
            "enum": ["fail", "skip"],
            "default": "fail",
        },
    },
}

# Command-line options of fio itself (not job options) that would change what it prints or
# whether it runs a job; and the ones perfpost sets.
RESERVED = frozenset(
    {
        "output",
        "output-format",
        "minimal",
        "append-terse",
        "terse-version",
        "json",
        "version",
        "help",
        "cmdhelp",
        "enghelp",
        "showcmd",
        "parse-only",
        "status-interval",
        "server",
        "client",
        "daemonize",
        "name",
        "directory",
    }
)
_OPTION = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")
# Options any of which tells fio how much to do (with none, fio refuses to run).
_SIZED = ("size", "filesize", "io_size", "io_limit", "filename")


def _options(params: Mapping[str, Any]) -> dict[str, Any]:
    return dict(params.get("options") or {})


complete_params = params_as_given
install_marker = never_provisioned


def check_params(params: Mapping[str, Any], where: str) -> None:
    """Option names and values fio can take as one argument each, no option given twice,
    fio's own output options left to perfpost, and something that sizes the job."""
    options = params.get("options") or {}
    if not isinstance(options, Mapping):
        raise ConfigError(f"{where}.options", "a mapping of fio option -> value")
    for key, value in options.items():
        here = f"{where}.options.{key}"
        if not isinstance(key, str) or not _OPTION.match(key):
            raise ConfigError(here, "fio option names are letters, digits, _ and -")
        if key in RESERVED:
            said = {
                "name": "use the `name` parameter",
                "directory": "each run gets its own directory under `dir` ({work})",
            }.get(key, "perfpost reads fio's JSON report and sets the output itself")
            raise ConfigError(here, f"perfpost sets --{key}: {said}")
        if key in TYPED:
            raise ConfigError(here, f"`{key}` is a parameter of its own: set params.{key}")
        if isinstance(value, dict | list):
            raise ConfigError(here, "an option takes one value (a string, number or bool)")
        if isinstance(value, str) and ("\n" in value or "\x00" in value):
            raise ConfigError(here, "a value is one line")
    filename = options.get("filename")
    if isinstance(filename, str) and not filename.startswith(("/", "{work}")):
        raise ConfigError(
            f"{where}.options.filename",
            "must be an absolute path or start with {work}: fio runs in perfpost's log "
            "directory, and with a filename perfpost gives no --directory",
        )
    sized = [k for k in _SIZED if params.get(k) is not None or options.get(k) is not None]
    if not sized:
        raise ConfigError(
            where,
            "fio needs to know how much I/O to do: set `size` (or options.filename of an "
            "existing file or device, or options.io_size)",
        )


def _value(value: Any, workdir: str) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    return fill_work(value, workdir)


def argv(params: Mapping[str, Any], workdir: str) -> list[str]:
    """The command line of one run, as a list (quoted later by :mod:`perfpost.run.hostscript`)."""
    options = _options(params)
    out = [params.get("command", "fio"), "--output-format=json"]
    out.append(f"--name={params.get('name', 'perfpost')}")
    if "filename" not in options:
        # fio puts --directory in front of every filename, an absolute one too.
        out.append(f"--directory={workdir}")
    chosen = [(k, params[k]) for k in TYPED if params.get(k) is not None]
    for key, value in [*chosen, *options.items()]:
        if value is None:
            continue
        if value is True and key not in ("direct",):
            out.append(f"--{key}")
        else:
            out.append(f"--{key}={_value(value, workdir)}")
    return out


def plan(params: Mapping[str, Any], workdir: str) -> Plan:
    """One fio process, its JSON report and messages in :data:`LOG`."""
    rw = str(params.get("rw") or "read").partition(":")[0]
    said = [f"{k}={params[k]}" for k in ("bs", "iodepth", "numjobs") if params.get(k)]
    return Plan(
        measure=(Proc(tuple(argv(params, workdir)), LOG),),
        drop_cache=bool(params.get("drop_cache", False)),
        writes=rw in WRITING,
        description=" ".join(["fio", rw, *said]),
    )


def version_argv(params: Mapping[str, Any]) -> tuple[str, ...]:
    return (params.get("command", "fio"), "--version")
