"""Instrumented clients: where the time goes inside a JVM tool, counted by a Byteman agent.

An experiment's ``instrument:`` attaches Byteman (from Maven Central, provisioned like the
tools) to the JVM a cell runs (freon, vapor, teragen's client and its local-mode maps) with
rule sets perfpost ships (``rules/output.btm``: the Hadoop FileSystem output stream's
``write``, ``hsync``, ``hflush`` and ``close``; ``rules/input.btm``: ``read``, ``pread``,
``input-close``) and the user's own rule files. perfpost's helper (``CallStats.java``, built
when Byteman is provisioned) counts each op's calls, summed time, bytes and threads, counting
only the outermost instrumented call of a thread, and writes them as JSON when the JVM exits.

Everything here is pure but :func:`check` (which runs Byteman's own rule checker) and the
build step of provisioning: the runner writes the rules to the host, adds
:func:`java_options` to the tool's JVM options, and turns the JSON into metrics with
:func:`parse_result`. Byteman's own complaints in a tool's log (:func:`errors_in`) fail the
cell: a rule that did not compile would otherwise leave counts silently short.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from perfpost import provision
from perfpost.errors import ConfigError, ParseError, PerfpostError
from perfpost.tools.base import Metric

HERE = Path(__file__).resolve().parent
NAME = "byteman"
VERSION = "4.0.27"  # 4.0.28 is not on Maven Central
HELPER_JAR = "perfpost-byteman.jar"
AGENT_JAR = "byteman.jar"  # the provisioned byteman-<version>.jar, under a name that does not move
RESULT = "instrument.json"  # what the helper writes, kept in the cell's raw/
SCHEMA_VERSION = 1
# The host inventory key naming a directory that holds a provisioned Byteman (lib/*.jar);
# `provisioned` (the default) is perfpost's install at the controller's path.
HOST_KEY = "byteman"
RULE_SETS: dict[str, Path] = {
    "output": HERE / "rules" / "output.btm",
    "input": HERE / "rules" / "input.btm",
}
# The label of an instrumented cell, and of the same cell run without the agent for its cost.
ON, OFF = "on", "off"
AXIS = "instrument"


def _build(staging: Path, log: Any) -> None:
    """Compile perfpost's helper against the resolved Byteman into ``lib/``, and give the
    agent jar a name that does not carry the version (``-javaagent:.../byteman.jar``)."""
    jars = sorted((staging / "lib").glob("byteman-*.jar"))
    if not jars:
        raise PerfpostError("Maven resolved no byteman-*.jar")
    shutil.copy(jars[0], staging / "lib" / AGENT_JAR)
    javac, jar = shutil.which("javac"), shutil.which("jar")
    if not javac or not jar:
        raise PerfpostError(
            "javac and jar (a JDK) are needed to build Byteman's helper: run scripts/setup"
        )
    with tempfile.TemporaryDirectory(dir=staging) as classes:
        for argv in (
            [
                javac,
                "--release",
                "8",
                "-nowarn",
                "-cp",
                str(jars[0]),
                "-d",
                classes,
                str(HERE / "CallStats.java"),
            ],
            [jar, "cf", str(staging / "lib" / HELPER_JAR), "-C", classes, "."],
        ):
            got = subprocess.run(argv, capture_output=True, text=True, check=False)
            log.write(got.stdout + got.stderr)
            if got.returncode != 0:
                raise PerfpostError(f"building Byteman's helper failed: {got.stderr.strip()}")
    print(f"byteman: perfpost's helper built into lib/{HELPER_JAR}", file=log, flush=True)


RUNTIME = provision.Runtime(
    name=NAME,
    version=VERSION,
    files=HERE,
    version_property="byteman.version",
    launcher="bmcheck",
    expect_jar="byteman-",
    log4j=False,
    build=_build,
    sources=("CallStats.java",),
)


# ------------------------------------------------------------------------------- the plan


def normalize(raw: Any, where: str) -> dict[str, Any]:
    """An experiment's ``instrument:`` as ``{"rules": [...], "without": "first"|"every",
    "tasks": bool}``; a list is the rules alone."""
    if isinstance(raw, list):
        raw = {"rules": raw}
    out = {
        "rules": list(raw.get("rules", [])),
        "without": raw.get("without", "first"),
        "tasks": bool(raw.get("tasks", False)),
    }
    if not out["rules"]:
        raise ConfigError(f"{where}.rules", "name at least one rule set (output, input) or file")
    return out


def resolve_rules(names: list[Any], where: str, base: Path | None = None) -> list[dict[str, str]]:
    """Rule sets by name (perfpost's: output, input) or ``.btm`` files (relative to the
    working directory), each with the hash of its text: a changed rule is another
    measurement."""
    out = []
    seen = set()
    for i, name in enumerate(names):
        here = f"{where}[{i}]"
        if not isinstance(name, str) or not name:
            raise ConfigError(here, "a rule set is a name (output, input) or a .btm file")
        if name in RULE_SETS:
            path = RULE_SETS[name]
        elif name.endswith(".btm"):
            path = Path(name) if os.path.isabs(name) else (base or Path.cwd()) / name
            if not path.is_file():
                raise ConfigError(here, f"no rule file {name!r} (looked at {path})")
        else:
            raise ConfigError(
                here,
                f"{name!r} is neither one of perfpost's rule sets ({', '.join(RULE_SETS)}) "
                "nor a .btm file",
            )
        if name in seen:
            raise ConfigError(here, f"{name!r} is listed twice")
        seen.add(name)
        text = path.read_bytes()
        out.append(
            {
                "name": name,
                "path": str(path.resolve()),
                "sha256": hashlib.sha256(text).hexdigest()[:16],
            }
        )
    return out


def label_of(rules: list[Any]) -> str:
    return ON if rules else OFF


def version_of(tools_cfg: Mapping[str, Any]) -> str:
    return provision.configured(RUNTIME, tools_cfg)[0]


def local_home(tools_cfg: Mapping[str, Any]) -> Path:
    """perfpost's provisioned Byteman on this machine (it checks the rules)."""
    return provision.configured_home(RUNTIME, tools_cfg)


def host_home(host: Mapping[str, Any], tools_cfg: Mapping[str, Any]) -> tuple[str, bool]:
    """The Byteman directory on ``host``, and whether it is perfpost's provisioned one."""
    value = host.get(HOST_KEY, "provisioned")
    if value == "provisioned":
        return str(local_home(tools_cfg)), True
    return str(value), False


def marker(tools_cfg: Mapping[str, Any]) -> str:
    return str(provision.configured_marker(RUNTIME, tools_cfg))


def settings(
    rules: list[dict[str, str]],
    host: Mapping[str, Any],
    tools_cfg: Mapping[str, Any],
    classes: str | None,
    tasks: bool = False,
) -> dict[str, Any]:
    """What a cell's run needs to attach the agent: its rules, where Byteman is on the host
    and here, the tool's jars the rules are checked against (``classes``), and whether the
    job's map tasks on YARN get the agent too."""
    out = {
        "agent": f"byteman {version_of(tools_cfg)}",
        "rules": rules,
        "home": host_home(host, tools_cfg)[0],
        "check_home": str(local_home(tools_cfg)),
        "classes": classes,
    }
    if tasks:
        out["tasks"] = True
    return out


def identity(instrument: Mapping[str, Any]) -> dict[str, Any]:
    """What of the instrumentation defines the measurement: the agent, the rules' text, and
    whether map tasks carry it."""
    out = {
        "agent": instrument["agent"],
        "rules": [[r["name"], r["sha256"]] for r in instrument["rules"]],
    }
    if instrument.get("tasks"):
        out["tasks"] = True
    return out


# ---------------------------------------------------------------------------- the run


def host_rule_paths(instrument: Mapping[str, Any], logdir: str) -> dict[str, str]:
    """Where each rule file goes on the host (in the cell's log directory), by its name."""
    out = {}
    for i, r in enumerate(instrument["rules"], start=1):
        stem = re.sub(r"[^A-Za-z0-9._-]", "_", Path(r["name"]).stem)
        out[r["name"]] = f"{logdir}/rules/{i}-{stem}.btm"
    return out


def java_options(home: str, rule_paths: list[str], out: str) -> str:
    """The JVM options that attach the agent: the rules as scripts, Byteman and perfpost's
    helper on the boot class path (so rules may instrument classes of every loader, java.io
    too), rules compiled to bytecode (a tenth of the interpreted cost per call), and where
    the helper writes its counts."""
    agent = f"{home}/lib/{AGENT_JAR}"
    args = [f"script:{p}" for p in rule_paths]
    args += [f"boot:{agent}", f"boot:{home}/lib/{HELPER_JAR}"]
    for part in (agent, *rule_paths, out):
        if re.search(r"[,=\s]", part):
            raise PerfpostError(
                f"Byteman's agent options cannot hold {part!r} (a comma, = or space)"
            )
    return " ".join(
        [
            f"-javaagent:{agent}={','.join(args)}",
            "-Dorg.jboss.byteman.compile.to.bytecode=true",
            f"-Dperfpost.instrument.out={out}",
        ]
    )


def attach(params: Mapping[str, Any], var: str, options: str) -> dict[str, Any]:
    """The tool's params with the agent's options after its own JVM options (``java_opts``,
    or the experiment's own ``env`` value of ``var`` when it sets one)."""
    out = dict(params)
    env = dict(out.get("env", {}))
    if var in env:
        env[var] = f"{env[var]} {options}".strip()
        out["env"] = env
    else:
        out["java_opts"] = f"{out.get('java_opts') or ''} {options}".strip()
    return out


# Hadoop puts each task attempt's id where its JVM options say @taskid@: one file per JVM.
TASKS_DIR = "tasks"
TASK_RESULT = "instrument-@taskid@.json"
MAP_OPTS = "mapreduce.map.java.opts"
TASK_PREFIX = "map-"  # a map task's ops, beside the client's: map-write.call


def attach_tasks(params: Mapping[str, Any], options: str) -> dict[str, Any]:
    """The params of a job whose map tasks get the agent: its options after the job's own
    ``mapreduce.map.java.opts`` (Hadoop adds the heap when they name none)."""
    out = dict(params)
    defines = dict(out.get("defines", {}))
    defines[MAP_OPTS] = f"{defines.get(MAP_OPTS, '')} {options}".strip()
    out["defines"] = defines
    return out


def merge_tasks(results: Mapping[str, str]) -> tuple[list[Metric], dict[str, Any]]:
    """The map tasks' JSON files (by name) as one set of metrics, ``map-<op>.<field>``,
    summed over the tasks, and each task's own counts for the record."""
    total: dict[str, dict[str, int]] = {}
    tasks = []
    unfinished = 0
    for name, text in sorted(results.items()):
        data = _load(text, name)
        unfinished += int(data.get("unfinished", 0))
        tasks.append(
            {"task": name, "ops": {op: f["calls"] for op, f in sorted(data["ops"].items())}}
        )
        for op, f in data["ops"].items():
            t = total.setdefault(op, {"calls": 0, "time_ns": 0, "bytes": 0, "threads": 0})
            for k in t:
                t[k] += f.get(k, 0)
    return _metrics(total, TASK_PREFIX), {"unfinished": unfinished, "tasks": tasks}


# What Byteman says when a rule or the agent fails; the JVM goes on without the rule.
_ERRORS = re.compile(
    r"^(?:Rule\.\w+ : error.*"
    r"|org\.jboss\.byteman\.[\w.$]*(?:Exception|Error)\b.*"
    r"|ERROR : .*"
    r"|Error opening zip file or JAR manifest missing.*"
    r"|Error occurred during initialization of VM.*"
    r"|agent library failed to init.*"
    r"|Caused by: java\.lang\.Exception: org\.jboss\.byteman\..*"
    r"|perfpost CallStats: .*)$"
)


def errors_in(texts: Mapping[str, str]) -> list[str]:
    """Byteman's (and the JVM's agent) error lines in a run's logs, in order, once each."""
    out: list[str] = []
    for text in texts.values():
        for line in text.splitlines():
            line = line.strip()
            if _ERRORS.match(line) and line not in out:
                out.append(line)
    return out


def _load(text: str, source: str) -> dict[str, Any]:
    """One JSON record of the helper, checked to be one."""
    try:
        data = json.loads(text)
    except ValueError as e:
        raise ParseError(source, None, f"not JSON: {e}") from None
    if not isinstance(data, dict) or data.get("schema_version") != SCHEMA_VERSION:
        raise ParseError(source, None, f"not perfpost's instrument record v{SCHEMA_VERSION}")
    return data


def _metrics(ops: Mapping[str, Mapping[str, Any]], prefix: str = "") -> list[Metric]:
    """Each op's counts in base units: calls and threads counted, time in s, bytes in B
    (none for an op that moves no bytes)."""
    out = []
    for op, fields in sorted(ops.items()):
        name = f"{prefix}{op}"
        out.append(Metric(f"{name}.call", float(fields["calls"]), "count"))
        out.append(Metric(f"{name}.time", fields["time_ns"] / 1e9, "s"))
        if fields.get("bytes"):
            out.append(Metric(f"{name}.bytes", float(fields["bytes"]), "B"))
        out.append(Metric(f"{name}.threads", float(fields["threads"]), "count"))
    return out


def parse_result(text: str, source: str = RESULT) -> tuple[list[Metric], dict[str, Any]]:
    """The helper's JSON as metrics (``write.call`` count, ``write.time`` s, ``write.bytes``
    B, ``write.threads`` count) and what the record keeps (``unfinished`` calls, each
    thread's calls)."""
    data = _load(text, source)
    threads = [
        {"name": t["name"], "ops": {op: f["calls"] for op, f in sorted(t["ops"].items())}}
        for t in data.get("threads", [])
    ]
    info = {"unfinished": int(data.get("unfinished", 0)), "ops": sorted(data["ops"])}
    return _metrics(data["ops"]), {**info, "threads": threads}


# ---------------------------------------------------------------------------- checking

_SUMMARY = re.compile(r"^TestScript: (\d+) total errors")


def check(
    rules: list[Mapping[str, str]], check_home: str, classes: str | None, memo: Path | None = None
) -> list[str]:
    """Byteman's rule checker (TestScript) on ``rules``: parsed, and type-checked against the
    tool's jars in ``classes`` (a directory of jars). Returns its errors, [] when none. The
    verdict is kept in ``memo`` by the rules' and jars' identity, so the first cell checks
    and the others read."""
    # The install's marker names the helper it was built from: a rebuilt helper checks again.
    built = sorted(p.name for p in Path(check_home).glob(f"{provision.COMPLETE}-*"))
    key = hashlib.sha256(
        json.dumps(
            [[r["name"], r["sha256"]] for r in rules] + [check_home, classes, built]
        ).encode()
    ).hexdigest()[:16]
    memo_file = (memo or Path(check_home) / "checks") / f"{key}.json"
    try:
        return list(json.loads(memo_file.read_text())["errors"])
    except (OSError, ValueError, KeyError):
        pass
    launcher = Path(check_home) / "bin" / RUNTIME.launcher
    if not launcher.exists():
        raise PerfpostError(f"Byteman is not provisioned at {check_home}")
    env = {**os.environ, "PERFPOST_CHECK_CLASSPATH": f"{classes}/*" if classes else ""}
    got = subprocess.run(
        [str(launcher), *(r["path"] for r in rules)],
        capture_output=True,
        text=True,
        errors="replace",
        env=env,
        timeout=300,
        check=False,
    )
    text = got.stdout + got.stderr
    errors = _check_errors(text)
    if got.returncode != 0 and not errors:
        errors = [f"Byteman's rule checker failed (exit {got.returncode}): {text.strip()[-300:]}"]
    memo_file.parent.mkdir(parents=True, exist_ok=True)
    tmp = memo_file.with_name(f".{memo_file.name}.{os.getpid()}")
    tmp.write_text(json.dumps({"errors": errors, "output": text[-20000:]}) + "\n")
    tmp.replace(memo_file)
    return errors


def _check_errors(text: str) -> list[str]:
    """TestScript's ERROR lines, each with the exception line under it (what was wrong)."""
    lines = text.splitlines()
    out = []
    for i, line in enumerate(lines):
        if line.startswith("ERROR : "):
            msg = line[len("ERROR : ") :].strip()
            nxt = lines[i + 1].strip() if i + 1 < len(lines) else ""
            if nxt and not nxt.startswith(("ERROR", "TestScript", "Checking", "Parsed")):
                msg += f": {nxt}"
            out.append(msg)
    total = next((int(m.group(1)) for ln in lines if (m := _SUMMARY.match(ln))), None)
    if total and not out:
        out.append(f"Byteman's rule checker found {total} error(s)")
    return out
