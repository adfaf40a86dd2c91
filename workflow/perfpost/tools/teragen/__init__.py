"""Hadoop ``teragen``: command builder and parser of the job's console output.

Command: ``[env K=V ...] YARN jar EXAMPLES_JAR teragen [-Dk=v ...] ROWS OUTPUT``. The size is
given in bytes with decimal units, as teragen's documentation counts (``100G`` = 10^11 bytes
= 10^9 rows of 100 bytes); OUTPUT is the experiment's base URI plus a directory unique to
the run. ``local: true`` runs the job in-process (``mapreduce.framework.name=local``) with
its temporary directories inside the run's scratch directory.

The parser reads the job id, its outcome (``completed successfully``, or the failure and its
exception) and the ``Counters:`` block, matching counters by meaning so the labels of other
Hadoop versions (``vcore-milliseconds`` vs ``vcore-seconds``) still land in one metric.

On YARN, with ``resourcemanager`` set, the host then reads the application's record from the
ResourceManager's REST API (:mod:`perfpost.tools.teragen.yarnapp`): its elapsed time and the
vcore- and memory-seconds of every container, the application master's included, as the
teragen post did (memory-seconds in byte-seconds, B*s: YARN's MB are MiB).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from fractions import Fraction
from pathlib import Path
from typing import Any

from perfpost import provision
from perfpost.errors import ConfigError, ParseError
from perfpost.tools import base, log4j
from perfpost.tools.base import Fetch, Metric, Plan, Proc, env_prefix, fill_work
from perfpost.tools.teragen import yarnapp
from perfpost.units import YARN_MB

NAME = "teragen"
# The Hadoop release whose client perfpost fetches (config: tools.hadoop.version).
VERSION = "3.4.2"
RUNTIME = provision.Runtime(
    name="hadoop",
    version=VERSION,
    files=Path(__file__).resolve().parent,
    version_property="hadoop.version",
    launcher="yarn",
    expect_jar="hadoop-mapreduce-examples-",
)
# The host's inventory key naming its `yarn` command (`provisioned`: the fetched one).
HOST_KEY = "yarn"
# The variable that carries JVM options to the client's JVM (local mode: the maps' too).
JVM_OPTS_VAR = "HADOOP_CLIENT_OPTS"
PLOT_METRICS = ("elapsed", "throughput", "app_elapsed", "app_vcore_seconds")
# What its runs measure, for the post's sentences (a command's is its own).
SUBJECT = "the storage"
TABLE_METRICS = (
    "elapsed",
    "job_time",
    "app_elapsed",
    "app_vcore_seconds",
    "app_memory_seconds",
    "throughput",
    "bytes_written",
    "map_tasks",
    "cpu_time",
    "map_vcore_seconds",
    "sync_time",
)
RUN_TABLE = ("elapsed", "job_time", "app_elapsed", "app_vcore_seconds", "bytes_written")
SYNC_ADJUST = (("bytes_written", "elapsed", "throughput"),)
LOG = "teragen.log"
ROW_BYTES = 100
_DECIMAL = {"": 1, "k": 10**3, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15}

PARAMS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["dir"],
    "properties": {
        "size": {
            "description": "Bytes to generate, decimal units (100G = 10^9 rows)",
            "type": ["string", "integer"],
        },
        "rows": {
            "description": "Rows of 100 bytes, instead of size",
            "type": "integer",
            "minimum": 1,
        },
        "output": {
            "description": "Base URI of the output (hdfs://..., o3fs://..., ofs://..., "
            "file:///...); each run writes a directory of its own in it",
            "type": "string",
            "default": "file://{work}",
        },
        "defines": {"description": "-D settings for the job", "type": "object", "default": {}},
        "local": {
            "description": "Run the job in-process (no YARN), temporary files in {work}",
            "type": "boolean",
            "default": False,
        },
        "env": {
            "description": "Environment variables for the run",
            "type": "object",
            "additionalProperties": {"type": "string"},
            "default": {},
        },
        "dir": {
            "description": "Directory the run's scratch directory ({work}) goes in",
            "type": "string",
            "minLength": 1,
        },
        "launcher": {
            "description": "The yarn command on the host; by default the host's "
            "`yarn` from the inventory",
            "type": "string",
        },
        "jar": {
            "description": "The MapReduce examples jar on the host (set for provisioned hosts)",
            "type": "string",
        },
        "java_opts": {
            "description": "JVM options for a provisioned launcher",
            "type": "string",
            "default": "-Xmx512m",
        },
        "remove_output": {
            "description": "Remove the run's output directory afterwards (`yarn "
            "org.apache.hadoop.fs.FsShell -rm -r -skipTrash`), whatever the outcome; "
            "output under {work} goes with the scratch directory anyway",
            "type": "boolean",
            "default": False,
        },
        "resourcemanager": {
            "description": "The ResourceManager's web address (http://rm:8088), or a list "
            "of them (HA); each run's application record is read from its REST API on the "
            "host, with curl. Not with local: true",
            # One schema for both forms, so a mistake gets a message about the URL itself.
            "type": ["string", "array"],
            "pattern": "^https?://",
            "items": {"type": "string", "pattern": "^https?://"},
            "minItems": 1,
        },
        "app_record_timeout": {
            "description": "Seconds to wait for the application's record to be final "
            "(terminal state, containers released)",
            "type": "number",
            "exclusiveMinimum": 0,
            "default": 60,
        },
    },
}


def parse_decimal_size(text: str | int) -> int:
    if isinstance(text, int):
        return text
    bad = f"bad size {text!r}: expected e.g. 100M, 10G, 1T (decimal units)"
    m = re.match(r"^\s*(\d+(?:\.\d+)?)\s*([kKMGTP]?)B?\s*$", str(text))
    if not m:
        raise ValueError(bad)
    try:
        number = Fraction(m.group(1))  # exact: a float would round sizes past 2^53 bytes
    except ValueError:  # more digits than int() reads
        raise ValueError(bad) from None
    return int(number * _DECIMAL[m.group(2)])


def rows(params: Mapping[str, Any]) -> int:
    if "rows" in params:
        return int(params["rows"])
    return max(parse_decimal_size(params["size"]) // ROW_BYTES, 1)


def complete_params(
    params: dict[str, Any], host: Mapping[str, Any], tools: Mapping[str, Any]
) -> dict[str, Any]:
    """``params`` with the host's ``yarn`` command as ``launcher``, unless they name one; with
    a provisioned client, its examples jar as ``jar`` unless they name one."""
    if "launcher" in params:
        return params
    command, provisioned = base.provisioned_launcher(RUNTIME, HOST_KEY, host, tools)
    params = {**params, "launcher": command}
    if "jar" not in params and provisioned:
        settings = tools.get(RUNTIME.name, {})
        version = settings.get("version", RUNTIME.version)
        lib = provision.home(RUNTIME.name, version, settings.get("cache")) / "lib"
        params["jar"] = str(lib / f"hadoop-mapreduce-examples-{version}.jar")
    return params


# Where the MapReduce client puts the job's files for the ApplicationMaster and the tasks.
STAGING = "yarn.app.mapreduce.am.staging-dir"
DEFAULT_FS = "fs.defaultFS"


def for_clusters(
    params: dict[str, Any], clusters: list[dict[str, Any]], host: str = ""
) -> dict[str, Any]:
    """``params`` with the job's file system and staging directory on the cell's HDFS when
    the cell's YARN runs NodeManagers on a host other than the client's: a staging directory
    on the client's own disk (YARN's default) is one no other host can read, and the job's
    ApplicationMaster would fail to start. With every NodeManager on the client's host, the
    staging directory is the run's own (``{work}/staging``): on a local disk its owner is the
    client's login, and a job submitted under another name (``HADOOP_USER_NAME``) finds the
    one an earlier job made "not as expected" and fails. ``defines`` entries for them win.
    With an Ozone of a build of the user's, its file system client too
    (:func:`_ozone_client`)."""
    params = _ozone_client(params, clusters)
    defines = params.get("defines", {})
    if params.get("local") or STAGING in defines or DEFAULT_FS in defines:
        return params
    yarn = next((c for c in clusters if c.get("kind") == "yarn"), None)
    hdfs = next((c for c in clusters if c.get("kind") == "hdfs"), None)
    if yarn is None:
        return params
    if set(yarn["roles"].get("nodemanager", [])) <= {host}:
        return {**params, "defines": {**defines, STAGING: "{work}/staging"}}
    if hdfs is None:
        return params
    fs = f"{{{hdfs['name']}.fs}}"
    return {
        **params,
        "defines": {**defines, DEFAULT_FS: fs, STAGING: f"{fs}/tmp/perfpost-staging"},
    }


OZONE_BUILD = "PERFPOST_OZONE_BUILD"


def _ozone_client(params: dict[str, Any], clusters: list[dict[str, Any]]) -> dict[str, Any]:
    """``params`` whose launcher takes the Ozone file system client from the build the
    cell's Ozone runs (``clusters.<name>.build``), unless ``env`` names one: perfpost's
    ``yarn`` launcher puts that build's ozone-filesystem-hadoop3 jar first for the client
    and, with -libjars, for the job's tasks."""
    if OZONE_BUILD in params.get("env", {}):
        return params
    for c in clusters:
        if c.get("kind") == "ozone" and c.get("build") and c.get("home"):
            return {**params, "env": {**params.get("env", {}), OZONE_BUILD: c["home"]}}
    return params


def install_marker(
    params: Mapping[str, Any], host: Mapping[str, Any], tools: Mapping[str, Any]
) -> str | None:
    """The provisioned Hadoop client's COMPLETE file, when the host runs that one."""
    return base.provisioned_marker(RUNTIME, HOST_KEY, params, host, tools)


def check_params(params: Mapping[str, Any], where: str) -> None:
    if ("size" in params) == ("rows" in params):
        raise ConfigError(where, "teragen needs one of `size` or `rows`")
    if "size" in params:
        try:
            parse_decimal_size(params["size"])
        except ValueError as e:
            raise ConfigError(f"{where}.size", str(e)) from None
    if params.get("local") and params.get("resourcemanager"):
        raise ConfigError(
            f"{where}.resourcemanager",
            "a local job (local: true) runs without YARN: it has no application record",
        )


_fill = fill_work


def output_uri(params: Mapping[str, Any], workdir: str) -> str:
    base = _fill(params.get("output", "file://{work}"), workdir).rstrip("/")
    return f"{base}/teragen-{workdir.rstrip('/').rsplit('/', 1)[-1]}"


def argv(params: Mapping[str, Any], workdir: str) -> list[str]:
    out = env_prefix(params, JVM_OPTS_VAR, workdir)
    out += [
        params.get("launcher", "yarn"),
        "jar",
        params.get("jar", "hadoop-mapreduce-examples.jar"),
        "teragen",
    ]
    defines = dict(params.get("defines", {}))
    if params.get("local"):
        defines = {
            "mapreduce.framework.name": "local",
            "fs.defaultFS": "file:///",
            "hadoop.tmp.dir": "{work}/tmp",
            "mapreduce.jobtracker.staging.root.dir": "{work}/tmp/staging",
            **defines,
        }
    out += [f"-D{k}={_fill(v, workdir)}" for k, v in defines.items()]
    out += [str(rows(params)), output_uri(params, workdir)]
    return out


def remove_argv(params: Mapping[str, Any], workdir: str) -> list[str]:
    """Remove the run's output with the same client and configuration that wrote it."""
    out = env_prefix(params, JVM_OPTS_VAR, workdir)
    fs = "org.apache.hadoop.fs.FsShell"
    defines = [f"-D{k}={_fill(v, workdir)}" for k, v in params.get("defines", {}).items()]
    target = output_uri(params, workdir)
    return [
        *out,
        params.get("launcher", "yarn"),
        fs,
        *defines,
        "-rm",
        "-r",
        "-f",
        "-skipTrash",
        target,
    ]


def plan(params: Mapping[str, Any], workdir: str) -> Plan:
    return Plan(
        measure=(Proc(tuple(argv(params, workdir)), LOG),),
        remove=(Proc(tuple(remove_argv(params, workdir))),) if params.get("remove_output") else (),
        writes=True,
        description=f"teragen {rows(params)} rows",
    )


def version_argv(params: Mapping[str, Any]) -> tuple[str, ...]:
    return ("sh", "-c", '"$0" version 2>/dev/null | head -n 1', params.get("launcher", "yarn"))


# ---------------------------------------------------------------------------- parsing

_RUNNING = re.compile(r"Running job: (job_\w+)")
_DONE = re.compile(r"Job (job_\w+) completed successfully")
_FAILED = re.compile(r"Job (job_\w+) failed with state (\w+) due to: (.*)$")
_COUNTERS = re.compile(r"(?:^|\s)Counters: (\d{1,19})\s*$")
_COUNTER_VALUE = re.compile(r"\d{1,19}")  # a Java long that counts: never below zero
_EXCEPTION = re.compile(
    r"^(?:Exception in thread \"\w+\" )?([\w.$]+(?:Exception|Error))(?:: (.*))?$"
)

# (metric, unit, (numerator, denominator), group pattern, counter pattern): by meaning,
# across Hadoop versions; each counter's own unit (the "(ms)" of its label, "milliseconds"
# or "seconds", "megabyte", which is YARN's MiB) converted to the base unit by whole-number
# factors.
MEANINGS = (
    ("bytes_written", "B", (1, 1), r"Output Format", r"^Bytes Written$"),
    ("records", "count", (1, 1), r"", r"^Map output records$"),
    ("map_tasks", "count", (1, 1), r"", r"^Launched map tasks$"),
    # Attempts the job killed (speculative copies): launched, but maybe never a JVM.
    ("map_tasks_killed", "count", (1, 1), r"", r"^Killed map tasks$"),
    ("cpu_time", "s", (1, 1000), r"", r"^CPU time spent \(ms\)$"),
    ("gc_time", "s", (1, 1000), r"", r"^GC time elapsed \(ms\)$"),
    (
        "map_vcore_seconds",
        "vcore*s",
        (1, 1000),
        r"",
        r"^Total vcore-milliseconds taken by all map tasks$",
    ),
    ("map_vcore_seconds", "vcore*s", (1, 1), r"", r"^Total vcore-seconds taken by all map tasks$"),
    (
        "map_memory_seconds",
        "B*s",
        (YARN_MB, 1000),
        r"",
        r"^Total megabyte-milliseconds taken by all map tasks$",
    ),
    (
        "map_memory_seconds",
        "B*s",
        (YARN_MB, 1),
        r"",
        r"^Total megabyte-seconds taken by all map tasks$",
    ),
)


class JobLog:
    """Everything one pass over a teragen console log says."""

    def __init__(self, text: str, source: str) -> None:
        self.source = source
        self.job_id: str | None = None
        self.succeeded_line = 0
        self.failure: str | None = None
        self.failure_line = 0
        self.exception: tuple[int, str] | None = None
        self.counters: dict[str, dict[str, int]] = {}
        self.counters_line = 0
        self.counters_announced = 0  # N of the job's "Counters: N"
        self.start = self.end = None
        self.lines = 0
        group = None
        in_block = False
        block = self.counters  # where the current block's counters go
        lines = text.splitlines()
        # A last line without its newline may be cut mid-number: its counter is not read.
        cut = len(lines) if not text.endswith(("\n", "\r")) else 0
        for no, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            self.lines = no
            if in_block and line.startswith("\t\t") and "=" in line:
                name, _, value = line.strip().rpartition("=")
                if group is not None and _COUNTER_VALUE.fullmatch(value.strip()) and no != cut:
                    block.setdefault(group, {})[name.strip()] = int(value)
                continue
            if in_block and line.startswith("\t") and not line.startswith("\t\t"):
                group = line.strip()
                continue
            in_block = False
            if m := _RUNNING.search(line):
                self.job_id = m.group(1)
                self.start = log4j.timestamp(line, digits=3)
            elif m := _DONE.search(line):
                self.job_id = m.group(1)
                self.succeeded_line = no
                self.end = log4j.timestamp(line, digits=3)
            elif m := _FAILED.search(line):
                self.job_id = m.group(1)
                self.failure = f"job {m.group(1)} {m.group(2)}: {m.group(3)}"
                self.failure_line = no
            elif (m := _COUNTERS.search(line)) and "Final Counters for attempt" not in line:
                in_block, group = True, None
                self.counters, self.counters_line = {}, no
                self.counters_announced, block = int(m.group(1)), self.counters
            elif "Final Counters for attempt" in line:
                in_block, group, block = True, None, {}  # a task's own copy: read and dropped
            elif (m := _EXCEPTION.match(line.strip())) and self.exception is None:
                self.exception = (no, line.strip())

    @property
    def application_id(self) -> str | None:
        """job_X_Y on YARN is application_X_Y; local jobs have none."""
        if self.job_id and not self.job_id.startswith("job_local"):
            app = "application_" + self.job_id[len("job_") :]
            return app if yarnapp.APP_ID.match(app) else None  # not a YARN job id
        return None


def _by_meaning(counters: Mapping[str, Mapping[str, int]]) -> list[Metric]:
    out: dict[str, Metric] = {}
    for metric, unit, factor, group_re, name_re in MEANINGS:
        for group, values in counters.items():
            if group_re and not re.search(group_re, group):
                continue
            for name, value in values.items():
                if re.search(name_re, name) and metric not in out:
                    num, den = factor  # exact integers: one rounding, in the division
                    out[metric] = Metric(metric, value * num / den, unit)
    return list(out.values())


def error_reason(texts: Mapping[str, str]) -> str | None:
    for name, text in texts.items():
        log = JobLog(text, name)
        if log.failure:
            return f"{name}:{log.failure_line}: {log.failure}"
        if log.exception:
            return f"{name}:{log.exception[0]}: {log.exception[1]}"
    return None


def parse_cell(logs: Mapping[str, str], wall_time: float | None = None) -> list[Metric]:
    if len(logs) != 1:
        raise ParseError("<cell>", f"expected one teragen log, got {len(logs)}")
    source, text = next(iter(logs.items()))
    log = JobLog(text, source)
    if not log.lines:
        raise ParseError(source, "empty log: teragen printed nothing")
    if log.failure or (log.exception and not log.succeeded_line):
        reason = error_reason({source: text})
        raise ParseError(
            source,
            f"the job failed: {reason}",
            log.failure_line or (log.exception[0] if log.exception else None),
        )
    if not log.succeeded_line or not log.counters:
        raise ParseError(
            source,
            "log ends before the job completed with its counters "
            "('Job ... completed successfully', 'Counters: N'): the run was "
            "killed or the log cut",
            log.lines,
        )
    read = sum(len(v) for v in log.counters.values())
    if read != log.counters_announced:
        raise ParseError(
            source,
            f"the job's counters block holds {read} of the {log.counters_announced} counters "
            "it announces: the log was cut or is damaged",
            log.lines,
        )
    out = _by_meaning(log.counters)
    out.append(Metric("counters", float(read), "count"))
    # Stamps that go backwards (a clock step) give no job time.
    if log.start is not None and log.end is not None and log.end >= log.start:
        out.append(Metric("job_time", log.end - log.start, "s"))
    written = next((m.value for m in out if m.name == "bytes_written"), None)
    if wall_time:
        out.append(Metric("elapsed", wall_time, "s"))
        if written is not None:
            out.append(Metric("throughput", written / wall_time, "B/s"))
    return out


def parse_text(text: str, source: str) -> list[Metric]:
    return parse_cell({source: text})


def summary(text: str, source: str) -> dict[str, str]:
    """The job id and its outcome, for ``perfpost parse``."""
    log = JobLog(text, source)
    if log.failure or (log.exception and not log.succeeded_line):
        status = "failed"
    elif log.succeeded_line:
        status = "succeeded"
    else:
        status = "incomplete"
    return {"id": log.job_id or "", "status": status}


def _app_record(body: str, source: str) -> tuple[list[Metric], dict[str, Any]]:
    rec = yarnapp.parse(body, source)
    return rec.metrics(), rec.info()


def fetches(params: Mapping[str, Any], texts: Mapping[str, str]) -> tuple[Fetch, ...]:
    """The ResourceManager's record of the run's application, when there is one to read."""
    rms = params.get("resourcemanager")
    if not rms:
        return ()
    app = next((JobLog(t, n).application_id for n, t in texts.items()), None)
    if app is None:
        return ()  # never submitted (bad output directory, no RM): the log says why
    urls = (rms,) if isinstance(rms, str) else tuple(rms)
    return (
        Fetch(
            name=yarnapp.LOG,
            urls=tuple(yarnapp.url(u, app) for u in urls),
            final=yarnapp.is_final,
            parse=_app_record,
            timeout=float(params.get("app_record_timeout", 60)),
            what=f"the ResourceManager's record of {app}",
            cancel_urls=tuple(yarnapp.url(u, app) + "/state" for u in urls),
            cancel_body='{"state": "KILLED"}',
            cancel_what=f"YARN application {app}",
        ),
    )


def describe(experiment: Mapping[str, Any], results: Any = None) -> list[str]:
    """The test method in prose; ``results`` (the tidy rows) changes nothing here: every time
    teragen reports has one source, named below."""
    p = experiment["params"]
    size = p.get("size", f"{p.get('rows')} rows")
    lines = [
        f"Each run is `teragen` of {size} (rows of 100 bytes; decimal units, so 100G is "
        "10^9 rows) into a directory of its own under the output URI."
    ]
    if p.get("local"):
        lines.append(
            "The job runs in local mode (`mapreduce.framework.name=local`), its "
            "temporary files inside the run's scratch directory."
        )
    if p.get("resourcemanager"):
        lines.append(
            "After each run the host read the application's record from the ResourceManager "
            "REST API (`/ws/v1/cluster/apps/<application id>`, the id from the job id) once "
            "it was final: `app elapsed` is YARN's elapsedTime, and vcore-seconds and "
            "memory-seconds (YARN's MB-seconds, shown in byte-seconds: its MB are MiB) count "
            "every container, the application master's included."
        )
    lines.append(
        "`elapsed` is the whole run timed on the host (JVM start included), and throughput "
        "is the bytes written divided by it; `job_time` is from the job's log timestamps "
        "(running to completed), which the client polls once a second, so it moves in steps "
        "of about 1 s."
    )
    return lines
