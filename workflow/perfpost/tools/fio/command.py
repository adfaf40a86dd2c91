"""fio's command line: the typed job options, the config checks, and the plan of one run."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from perfpost.errors import ConfigError
from perfpost.tools.base import (
    CACHE_PARAMS,
    CLIENT_PARAMS,
    Plan,
    Proc,
    fill_work,
    never_provisioned,
)
from perfpost.tools.fio import jobfile
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
            "=0, null -> left out, else --name=value (with a jobfile: set in every job)",
            "type": "object",
            "default": {},
        },
        "jobfile": {
            "description": "A fio job file (relative to the working directory) to run instead "
            "of one job from these parameters; the typed options and `options` override it "
            "in every job, `sections` in one",
            "type": "string",
            "minLength": 1,
        },
        "sections": {
            "description": "With a jobfile: options set in one job section only, by its name",
            "type": "object",
            "additionalProperties": {"type": "object"},
        },
        "vars": {
            "description": "With a jobfile: the values of its ${VAR}s (fio fills them from its "
            "environment); `{axis}` in a value takes the cell's",
            "type": "object",
            "propertyNames": {"pattern": "^[A-Za-z_][A-Za-z0-9_]*$"},
            "additionalProperties": {"type": ["string", "number"]},
        },
        "command": {
            "description": "The fio command on the host",
            "type": "string",
            "minLength": 1,
            "default": "fio",
        },
        **CACHE_PARAMS,
        **CLIENT_PARAMS,
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


install_marker = never_provisioned
# Set by perfpost (complete_params): the job file's text as it was when the run was planned,
# so a changed file is another measurement and the record keeps what ran.
JOBFILE_TEXT = "jobfile_text"


def complete_params(
    params: dict[str, Any], host: Mapping[str, Any], tools: Mapping[str, Any]
) -> dict[str, Any]:
    """With a job file, the params carry its text."""
    if not params.get("jobfile"):
        return params
    return {**params, JOBFILE_TEXT: jobfile.read(params["jobfile"], "params.jobfile")}


def _check_option(key: Any, value: Any, here: str) -> None:
    if not isinstance(key, str) or not _OPTION.match(key):
        raise ConfigError(here, "fio option names are letters, digits, _ and -")
    if isinstance(value, dict | list):
        raise ConfigError(here, "an option takes one value (a string, number or bool)")
    if isinstance(value, str) and ("\n" in value or "\x00" in value):
        raise ConfigError(here, "a value is one line")


def _check_jobfile(params: Mapping[str, Any], where: str) -> None:
    """The file is there and fio's INI form, every ${VAR} has a value, every section
    override names a job of the file."""
    here = f"{where}.jobfile"
    text = jobfile.read(params["jobfile"], here)
    job = jobfile.parse(text, f"{here}: {jobfile.resolve(params['jobfile'])}")
    given = params.get("vars") or {}
    for name, line in job.variables:
        if name not in given:
            raise ConfigError(
                f"{where}.vars",
                f"the job file uses ${{{name}}} (line {line}): give its value as vars.{name}",
            )
    jobs = {s.name for s in job.jobs}
    for section, options in (params.get("sections") or {}).items():
        if section not in jobs:
            raise ConfigError(
                f"{where}.sections.{section}",
                f"no job [{section}] in the file (its jobs: {', '.join(sorted(jobs))})",
            )
        for key, value in options.items():
            _check_option(key, value, f"{where}.sections.{section}.{key}")
            if key in RESERVED:
                raise ConfigError(
                    f"{where}.sections.{section}.{key}", f"perfpost sets {key} of every job"
                )
            if key == "filename" and str(value).startswith(("/", "{work}")):
                raise ConfigError(
                    f"{where}.sections.{section}.filename",
                    "a section's file is a name in the run's scratch directory ({work}), "
                    "where fio lays out every job's files",
                )


def check_params(params: Mapping[str, Any], where: str) -> None:
    """Option names and values fio can take as one argument each, no option given twice,
    fio's own output options left to perfpost, and something that sizes the job (or a job
    file that does)."""
    if JOBFILE_TEXT in params:
        raise ConfigError(f"{where}.{JOBFILE_TEXT}", "perfpost sets it from `jobfile`")
    options = params.get("options") or {}
    if not isinstance(options, Mapping):
        raise ConfigError(f"{where}.options", "a mapping of fio option -> value")
    if params.get("jobfile"):
        _check_jobfile(params, where)
    else:
        for key in ("sections", "vars"):
            if params.get(key):
                raise ConfigError(f"{where}.{key}", "only with a `jobfile`")
    for key, value in options.items():
        here = f"{where}.options.{key}"
        _check_option(key, value, here)
        if key in RESERVED:
            said = {
                "name": "use the `name` parameter",
                "directory": "each run gets its own directory under `dir` ({work})",
            }.get(key, "perfpost reads fio's JSON report and sets the output itself")
            raise ConfigError(here, f"perfpost sets --{key}: {said}")
        if key in TYPED:
            raise ConfigError(here, f"`{key}` is a parameter of its own: set params.{key}")
    filename = options.get("filename")
    if isinstance(filename, str) and not filename.startswith(("/", "{work}")):
        raise ConfigError(
            f"{where}.options.filename",
            "must be an absolute path or start with {work}: fio runs in perfpost's log "
            "directory, and with a filename perfpost gives no --directory",
        )
    sized = [k for k in _SIZED if params.get(k) is not None or options.get(k) is not None]
    if not sized and not params.get("jobfile"):
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
    if params.get(JOBFILE_TEXT) is not None:
        return _jobfile_argv(params, workdir)
    options = _options(params)
    out = [params.get("command", "fio"), "--output-format=json"]
    out.append(f"--name={params.get('name', 'perfpost')}")
    if "filename" not in options:
        # fio puts --directory in front of every filename, an absolute one too.
        out.append(f"--directory={workdir}")
    for key, value in _chosen(params):
        if value is None:
            continue
        if value is True and key not in ("direct",):
            out.append(f"--{key}")
        else:
            out.append(f"--{key}={_value(value, workdir)}")
    return out


def _chosen(params: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The typed options given, then ``options``, in command-line order."""
    typed = [(k, params[k]) for k in TYPED if params.get(k) is not None]
    return [*typed, *_options(params).items()]


def jobfile_name(params: Mapping[str, Any]) -> str:
    """The job file's name in the run's scratch directory and in its record's raw/."""
    base = re.sub(r"[^A-Za-z0-9._-]", "_", str(params["jobfile"]).rsplit("/", 1)[-1])
    base = base.lstrip(".") or "job"
    return base if base.endswith(".fio") else f"{base}.fio"


def jobfile_text(params: Mapping[str, Any], workdir: str) -> str:
    """The job file as the run's fio reads it: every job's files in ``workdir`` (unless
    ``options.filename`` names a file or device of its own), the overrides after each job's
    own lines."""
    job = jobfile.parse(params[JOBFILE_TEXT], "params.jobfile")
    every: dict[str, Any] = {}
    if "filename" not in _options(params):
        every["directory"] = workdir
    for key, value in _chosen(params):
        every[key] = 1 if key == "direct" and value is True else value
    return jobfile.render(
        job,
        every,
        params.get("sections") or {},
        lambda v: _value(v, workdir),
        replaced=("directory",),
    )


def _jobfile_argv(params: Mapping[str, Any], workdir: str) -> list[str]:
    variables = [f"{k}={fill_work(v, workdir)}" for k, v in (params.get("vars") or {}).items()]
    return [
        *(["env", *variables] if variables else []),
        params.get("command", "fio"),
        "--output-format=json",
        f"{workdir}/{jobfile_name(params)}",
    ]


def _writes(params: Mapping[str, Any]) -> bool:
    """Whether any job of the run writes (a job file's own ``rw=`` lines, or the override)."""
    if params.get(JOBFILE_TEXT) is None:
        return str(params.get("rw") or "read").partition(":")[0] in WRITING
    if params.get("rw") is not None:
        return str(params["rw"]).partition(":")[0] in WRITING
    job = jobfile.parse(params[JOBFILE_TEXT], "params.jobfile")
    modes = [v for s in job.sections for k, v in s.options if k in ("rw", "readwrite")]
    modes += [
        str(o["rw"]) for o in (params.get("sections") or {}).values() if o.get("rw") is not None
    ]
    # An ${RW} is not known here: counted as writing, the safe side (sync after, cache).
    return any(m is None or "$" in m or m.partition(":")[0] in WRITING for m in modes)


def plan(params: Mapping[str, Any], workdir: str) -> Plan:
    """One fio process, its JSON report and messages in :data:`LOG`; a job file is written
    into the scratch directory first (and kept in the record)."""
    if params.get(JOBFILE_TEXT) is not None:
        name = jobfile_name(params)
        return Plan(
            measure=(Proc(tuple(argv(params, workdir)), LOG),),
            files=((name, jobfile_text(params, workdir)),),
            drop_cache=bool(params.get("drop_cache", False)),
            writes=_writes(params),
            description=f"fio {name}",
        )
    rw = str(params.get("rw") or "read").partition(":")[0]
    said = [f"{k}={params[k]}" for k in ("bs", "iodepth", "numjobs") if params.get(k)]
    return Plan(
        measure=(Proc(tuple(argv(params, workdir)), LOG),),
        drop_cache=bool(params.get("drop_cache", False)),
        writes=_writes(params),
        description=" ".join(["fio", rw, *said]),
    )


def refuse(params: Mapping[str, Any]) -> str | None:
    """Why fio would not run the cell's job file, from this machine's fio before any host is
    touched (``fio --parse-only``); None when it accepts it, or when there is no fio here."""
    if params.get(JOBFILE_TEXT) is None:
        return None
    work = "/nonexistent/perfpost-check"
    variables = {k: fill_work(v, work) for k, v in (params.get("vars") or {}).items()}
    said = jobfile.parse_only(jobfile_text(params, work), variables, params.get("command", "fio"))
    if said is None:
        return None
    return f"fio refuses the job file {jobfile_name(params)} (fio --parse-only here): {said}"


def version_argv(params: Mapping[str, Any]) -> tuple[str, ...]:
    return (params.get("command", "fio"), "--version")
