"""freon's command line: ``[env K=V ...] LAUNCHER freon|vapor [--verbose] [-D k=v ...]
SUBCOMMAND OPTIONS``; generic options go before the subcommand, as freon requires. ``{work}``
in any value is the cell's own scratch directory on the host (for ``hdds.datanode.dir``)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from perfpost.errors import ConfigError
from perfpost.tools import base
from perfpost.tools.base import Plan, Proc, env_prefix, fill_work
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


def plan(params: Mapping[str, Any], workdir: str) -> Plan:
    return Plan(
        measure=(Proc(tuple(argv(params, workdir)), LOG),),
        writes=params["subcommand"] not in READERS,
        description=f"{params.get('program', 'freon')} {params['subcommand']}",
    )


def version_argv(params: Mapping[str, Any]) -> tuple[str, ...]:
    return ("sh", "-c", '"$0" version 2>/dev/null | head -n 1', params.get("launcher", "ozone"))
