"""freon's command line: ``[env K=V ...] LAUNCHER freon|vapor [--verbose] [-D k=v ...]
SUBCOMMAND OPTIONS``; generic options go before the subcommand, as freon requires. ``{work}``
in any value is the cell's own scratch directory on the host (for ``hdds.datanode.dir``)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from perfpost.errors import ConfigError
from perfpost.tools import base
from perfpost.tools.base import (
    CACHE_PARAMS,
    CLIENT_PARAMS,
    Metric,
    Plan,
    Proc,
    env_prefix,
    fill_work,
)
from perfpost.tools.freon.defaults import HOST_KEY, JVM_OPTS_VAR, LOG, READERS, RUNTIME

PARAMS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["subcommand", "dir"],
    "properties": {
        "program": {
            "description": "freon, or vapor (where cmdw lives since Ozone 2.2)",
            "enum": ["freon", "vapor"],
            "default": "freon",
        },
        "subcommand": {
            "description": "The generator: cmdw, dcg, dfsg, ockg, omkg, ...",
            "type": "string",
            "pattern": "^[a-z][a-z0-9-]*$",
        },
        "options": {
            "description": "Generator options: one letter -> `-n 1000`, longer -> "
            "`--copy-buffer=1`, true -> a bare flag",
            "type": "object",
            "default": {},
        },
        "args": {
            "description": "Extra arguments after the options, as they are",
            "type": "array",
            "items": {"type": "string"},
            "default": [],
        },
        "generic": {
            "description": "Hadoop/Ozone settings, passed as -D key=value before the subcommand",
            "type": "object",
            "default": {},
        },
        "verbose": {"description": "Pass --verbose", "type": "boolean", "default": False},
        "env": {
            "description": "Environment variables for the run (e.g. HADOOP_USER_NAME)",
            "type": "object",
            "additionalProperties": {"type": "string"},
            "default": {},
        },
        "dir": {
            "description": "Directory the cell's scratch directory ({work}) goes in",
            "type": "string",
            "minLength": 1,
        },
        "launcher": {
            "description": "The ozone command on the host; by default the host's "
            "`ozone` from the inventory",
            "type": "string",
        },
        "prepare": {
            "description": "An unmeasured freon run right before the measured one, with its "
            "launcher, program, env, generic and java_opts, and its options (path, prefix, "
            "-n, -t) overlaid by these: `{subcommand: dfsg, options: {s: 64MB}}` writes the "
            "files a measured `dfsv` then reads, and gives the run its bytes and throughput.",
            "type": "object",
            "additionalProperties": False,
            "required": ["subcommand"],
            "properties": {
                "subcommand": {"type": "string", "pattern": "^[a-z][a-z0-9-]*$"},
                "options": {"type": "object", "default": {}},
            },
        },
        **CACHE_PARAMS,
        **CLIENT_PARAMS,
        "java_opts": {
            "description": "JVM options for a provisioned launcher (OZONE_OPTS)",
            "type": "string",
            "default": "-Xmx256m",
        },
    },
}


def complete_params(
    params: dict[str, Any], host: Mapping[str, Any], tools: Mapping[str, Any]
) -> dict[str, Any]:
    """``params`` with the host's ``ozone`` command as ``launcher``, unless they name one."""
    if "launcher" in params:
        return params
    return {**params, "launcher": base.provisioned_launcher(RUNTIME, HOST_KEY, host, tools)[0]}


def for_clusters(
    params: dict[str, Any], clusters: list[dict[str, Any]], host: str = ""
) -> dict[str, Any]:
    """``params`` whose ``launcher`` is the ``bin/ozone`` of the build the cell's Ozone runs
    (``clusters.<name>.build``), unless they name a launcher: client and cluster from one
    build."""
    if "launcher" in params:
        return params
    for c in clusters:
        if c.get("kind") == "ozone" and c.get("build") and c.get("home"):
            return {**params, "launcher": f"{c['home']}/bin/ozone"}
    return params


def install_marker(
    params: Mapping[str, Any], host: Mapping[str, Any], tools: Mapping[str, Any]
) -> str | None:
    """The provisioned Ozone's COMPLETE file, when the host runs that one."""
    return base.provisioned_marker(RUNTIME, HOST_KEY, params, host, tools)


def check_params(params: Mapping[str, Any], where: str) -> None:
    for key, value in params.get("options", {}).items():
        if not re.match(r"^[A-Za-z0-9][A-Za-z0-9-]*$", str(key)):
            raise ConfigError(f"{where}.options.{key}", "option names are letters, digits, -")
        if isinstance(value, dict | list):
            raise ConfigError(f"{where}.options.{key}", "an option takes one value")
    for key in params.get("env", {}):
        if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", key):
            raise ConfigError(f"{where}.env.{key}", "not an environment variable name")
    prep = params.get("prepare")
    if prep:
        check_params({"options": prep.get("options", {})}, f"{where}.prepare")
        if params["subcommand"] in READERS and "prefix" not in _long(params.get("options", {})):
            raise ConfigError(
                f"{where}.options.prefix",
                "a reader after `prepare` needs the prefix its files were written with "
                "(freon picks a random one otherwise): set options.prefix",
            )
        size = prepare_params(params)["options"].get("size")
        if size is not None:
            try:
                freon_size(size)
            except ValueError as e:
                raise ConfigError(f"{where}.prepare.options.s", str(e)) from None


# freon's short options and the long names they stand for (picocli's -n/--number-of-tests...)
SHORT = {"n": "number-of-tests", "t": "threads", "p": "prefix", "r": "path", "s": "size"}
ALIASES = {"thread": "threads", "rpath": "path"}
DEFAULT_THREADS = 10  # freon's -t when not given (its --help: "Default: 10")


def _long(options: Mapping[str, Any]) -> dict[str, Any]:
    """Options keyed by their long names, so -s and --size are one option."""
    out: dict[str, Any] = {}
    for key, value in options.items():
        name = SHORT.get(str(key), str(key))
        out[ALIASES.get(name, name)] = value
    return out


def freon_size(value: Any) -> int:
    """Bytes of a freon size option: a number of bytes, or a number with a unit, which
    freon's StorageSize reads in powers of 2 (``64MB`` is 64 MiB; its help: "Size is in base 2
    binary")."""
    text = str(value).strip()
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([KMGT]?)I?B?", text, re.IGNORECASE)
    if not m:
        raise ValueError(f"{text!r} is not a size freon reads (bytes, or 64KB, 64MB, 1GB)")
    power = " KMGT".index(m.group(2).upper() or " ")
    return int(float(m.group(1)) * 1024**power)


_fill = fill_work


def argv(params: Mapping[str, Any], workdir: str) -> list[str]:
    """The command line of one run, as a list (quoted later)."""
    out = env_prefix(params, JVM_OPTS_VAR, workdir)
    out += [params.get("launcher", "ozone"), params.get("program", "freon")]
    if params.get("verbose"):
        out.append("--verbose")
    for key, value in params.get("generic", {}).items():
        out += ["-D", f"{key}={_fill(value, workdir)}"]
    out.append(params["subcommand"])
    for key, value in params.get("options", {}).items():
        if value is False or value is None:
            continue
        flag = f"-{key}" if len(str(key)) == 1 else f"--{key}"
        if value is True:
            out.append(flag)
        elif len(str(key)) == 1:
            out += [flag, _fill(value, workdir)]
        else:
            out.append(f"{flag}={_fill(value, workdir)}")
    out += [_fill(a, workdir) for a in params.get("args", [])]
    return out


def prepare_params(params: Mapping[str, Any]) -> dict[str, Any] | None:
    """The unmeasured run ``prepare`` asks for: the measured run's params with its
    subcommand and its options overlaid (``-s`` and ``--size`` are one option)."""
    prep = params.get("prepare")
    if not prep:
        return None
    options = {**_long(params.get("options", {})), **_long(prep.get("options", {}))}
    return {**params, "subcommand": prep["subcommand"], "options": options}


def read_bytes_each(params: Mapping[str, Any]) -> int | None:
    """Bytes of each file a reader reads: the size its ``prepare`` run wrote them with."""
    prep = prepare_params(params)
    if prep is None or params["subcommand"] not in READERS:
        return None
    size = prep["options"].get("size")
    return None if size is None else freon_size(size)


def primary_metric(params: Mapping[str, Any]) -> str:
    """A reader of files of a known size is measured by its throughput; any other run by
    its rate of operations."""
    return "throughput" if read_bytes_each(params) is not None else "rate"


def plan(params: Mapping[str, Any], workdir: str) -> Plan:
    prep = prepare_params(params)
    return Plan(
        measure=(Proc(tuple(argv(params, workdir)), LOG),),
        prepare=(Proc(tuple(argv(prep, workdir))),) if prep else (),
        drop_cache=bool(params.get("drop_cache", False)),
        writes=params["subcommand"] not in READERS,
        description=f"{params.get('program', 'freon')} {params['subcommand']}",
    )


def derive(params: Mapping[str, Any], metrics: list[Metric]) -> list[Metric]:
    """A reader's bytes and throughput, from the size its ``prepare`` run wrote its files
    with. Every successful read is one whole file (dfsv reads each to its end), so bytes are
    the reads times the size. Throughput is the readers' aggregate rate while reading: each
    of the ``busy`` threads (``-t``, freon's default 10, at most one per file) reads a file
    in the timer's mean time, so together they read ``busy x size / mean`` bytes a second
    (with the cache dropped, dfsv's warm re-read of its reference file left out).
    freon's own timer spans open to last byte of each file: neither the JVM's start, the
    client's set-up, nor the once-a-second wait for the summary dilutes it, as they do the
    run's ``rate`` of short runs."""
    size = read_bytes_each(params)
    if size is None:
        return []
    got = {m.name: m.value for m in metrics}
    ops = got.get("operations")
    if not ops:
        return []
    out = [Metric("bytes", ops * size, "B")]
    timers = [k[: -len(".mean")] for k in got if k.endswith(".mean") and f"{k[:-5]}.count" in got]
    timers = [t for t in timers if got[f"{t}.count"] == ops]
    if len(timers) != 1 or got[f"{timers[0]}.mean"] <= 0:
        return out
    t = timers[0]
    mean, reads = got[f"{t}.mean"], int(ops)
    if params.get("drop_cache") and params["subcommand"] == "dfsv" and reads > 1:
        # dfsv reads its first file once for the reference digest before its timer starts,
        # after the cache was dropped: that read of it is warm, and the fastest. Left out.
        mean, reads = (ops * mean - got[f"{t}.min"]) / (ops - 1), reads - 1
    threads = int(_long(params.get("options", {})).get("threads", DEFAULT_THREADS))
    busy = min(threads, int(ops))
    return [
        *out,
        Metric("throughput", busy * size / mean, "B/s"),
        Metric("readers_busy", float(busy), "count"),
        Metric("reads_timed", float(reads), "count"),
    ]


def version_argv(params: Mapping[str, Any]) -> tuple[str, ...]:
    return ("sh", "-c", '"$0" version 2>/dev/null | head -n 1', params.get("launcher", "ozone"))
