"""``fio``, the flexible I/O tester: command builder, JSON report parser and test method.

One cell runs one fio job description, given on the command line::

    fio --output-format=json --name=NAME --directory={work} [--rw=... --bs=... ...] [OPTIONS]

The common job options are typed parameters (so an axis of the same name sets them, and the
config check catches a typo); ``options`` takes any other option fio accepts, by its own name:
``true`` is a bare flag (``--time_based``), ``false`` is ``=0``, ``null`` leaves it out, any
other value is ``--name=value`` as one argument (the runner quotes it for ``sh``). ``{work}``
in a value is the cell's own scratch directory on the host, where fio lays out its files.

fio prints its JSON report on stdout and its error messages (``fio: ...``) on stderr; the cell
keeps both in one raw log, ``fio.log`` (fio writes the report at the end, after any message).
The parser reads the report by its field names (fio 3.x: ``jobs[].read/write/trim`` with
``io_bytes``, ``bw_bytes``, ``iops``, ``runtime`` in ms and ``lat_ns``/``clat_ns``/``slat_ns``
in ns with their ``percentile`` maps; ``sync``; ``disk_util``), in base units, exactly: a
value is taken from the digits fio printed and converted with one rounding. A job with a
non-zero ``error``, a log without a report, or a report that is cut off is a
:class:`ParseError` with fio's own message, never a number.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from perfpost.errors import ConfigError, ParseError
from perfpost.tools.base import (
    Metric,
    Plan,
    Proc,
    fill_work,
    never_provisioned,
    params_as_given,
)
from perfpost.units import SECONDS_PER

NAME = "fio"
RUNTIME = None  # the host's own fio (Debian's package): nothing to fetch
HOST_KEY = None  # and no inventory key naming its command
LOG = "fio.log"
# The first plotted metric leads the summary and is what a comparison compares by default.
# Figures are named after their metric, so plotted names have no dots.
PLOT_METRICS = ("iops", "throughput", "clat_p99", "lat_mean")
TABLE_METRICS = (
    "iops",
    "throughput",
    "lat_mean",
    "clat_p50",
    "clat_p99",
    "clat_p99.9",
    "sync_time",
)
# One row per run; the post's run table takes names without dots (it reads them as fields).
RUN_TABLE = ("iops", "throughput", "runtime")
# A buffered write's time with a slow `sync` after it (after: [sync]) as dd's.
SYNC_ADJUST = (("write.bytes", "write.runtime", "write.bandwidth"),)

# rw values fio 3.x knows; an optional ":<n>" suffix skips n blocks between I/Os.
RW_MODES = (
    "read",
    "write",
    "trim",
    "randread",
    "randwrite",
    "randtrim",
    "rw",
    "readwrite",
    "randrw",
    "trimwrite",
    "randtrimwrite",
)
WRITING = frozenset(
    {"write", "randwrite", "rw", "readwrite", "randrw", "trimwrite", "randtrimwrite"}
)

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


_VERSION = re.compile(r"\bfio-(\d+(?:\.\d+)+(?:[-+~.]\w+)*)")


def parse_version(text: str) -> str | None:
    """``3.33`` from ``fio-3.33`` (``fio --version``, or the report's ``fio version``)."""
    m = _VERSION.search(text)
    return m.group(1) if m else None


# ---------------------------------------------------------------------------- parsing

DIRECTIONS = ("read", "write", "trim")
LATENCIES = (("lat_ns", "lat"), ("clat_ns", "clat"), ("slat_ns", "slat"))
NS = SECONDS_PER["nanosecond"]
MS = SECONDS_PER["millisecond"]
_START = re.compile(r"^\{", re.M)
_PERCENTILE = re.compile(r"^(\d{1,3})(?:\.(\d{1,12}))?$")
_PLAIN = re.compile(r"^-?\d{1,40}(?:\.\d{1,40})?(?:[eE][-+]?\d{1,3})?$")


class _Dec(str):
    """A JSON number with a fraction, kept as fio printed it, so it converts exactly."""


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number fio prints")


_DECODER = json.JSONDecoder(parse_float=_Dec, parse_constant=_reject_constant)


class _Report:
    """fio's JSON report in a log, and the messages around it."""

    def __init__(self, text: str, source: str) -> None:
        self.source = source
        self.lines = text.splitlines()
        self.messages = [
            (no, line.strip())
            for no, line in enumerate(self.lines, start=1)
            if line.startswith("fio: ")
        ]
        self.data: Any = None
        self.line: int | None = None
        m = _START.search(text)
        if not m:
            return
        self.line = text.count("\n", 0, m.start()) + 1
        try:
            self.data, end = _DECODER.raw_decode(text, m.start())
        except json.JSONDecodeError as e:
            if not text[e.pos :].strip():
                raise ParseError(
                    source,
                    "fio's JSON report is cut off (fio was killed, or the log truncated)",
                    self._line(e.lineno),
                ) from None
            raise ParseError(
                source, f"fio's JSON report is not valid JSON: {e.msg}", self._line(e.lineno)
            ) from None
        except (ValueError, RecursionError) as e:
            raise ParseError(source, f"fio's JSON report is unreadable: {e}", self.line) from None
        rest = text[end:]
        if _START.search(rest):
            raise ParseError(
                source,
                "more than one JSON report in the log (fio's --status-interval?)",
                text.count("\n", 0, end + _START.search(rest).start()) + 1,
            )

    def _line(self, no: int) -> int:
        return min(max(no, 1), max(len(self.lines), 1))

    def first_message(self) -> tuple[int, str] | None:
        """fio's first ``fio: ...`` line: the human-readable cause, before the errno lines."""
        return self.messages[0] if self.messages else None


def _fail(report: _Report, message: str, line: int | None = None) -> ParseError:
    return ParseError(report.source, message, line if line is not None else report.line)


def _number(report: _Report, value: Any, where: str) -> Fraction:
    """A non-negative, finite number of the report, exactly as printed."""
    if isinstance(value, bool) or not isinstance(value, int | _Dec):
        raise _fail(report, f"{where} is {json.dumps(value)[:40]}, not a number")
    try:
        if isinstance(value, int):
            exact = Fraction(value)
        elif _PLAIN.match(value):
            exact = Fraction(str(value))
        else:  # a form with a huge exponent: its double, which is finite or refused below
            exact = Fraction(float(value))
        if not math.isfinite(float(exact)):
            raise OverflowError
    except (OverflowError, ValueError):
        raise _fail(report, f"{where} is {str(value)[:40]}, too large to be fio's") from None
    if exact < 0:
        raise _fail(report, f"{where} is negative ({str(value)[:40]})")
    return exact


def _obj(report: _Report, parent: Any, key: str, where: str) -> dict[str, Any]:
    value = parent.get(key) if isinstance(parent, dict) else None
    if not isinstance(value, dict):
        raise _fail(report, f"{where}.{key} is missing or not an object")
    return value


def _field(report: _Report, parent: dict[str, Any], key: str, where: str) -> Fraction:
    if key not in parent:
        raise _fail(report, f"{where} has no {key!r}")
    return _number(report, parent[key], f"{where}.{key}")


def _pct_name(report: _Report, key: str, where: str) -> str:
    m = _PERCENTILE.match(key)
    if not m or Fraction(key) > 100:
        raise _fail(report, f"{where}: {key!r} is not a percentile")
    frac = (m.group(2) or "").rstrip("0")
    return f"p{int(m.group(1))}" + (f".{frac}" if frac else "")


def _latency(report: _Report, block: dict[str, Any], where: str) -> dict[str, Fraction] | None:
    """One ``*_ns`` block in seconds (exact fractions), or None when it counted nothing."""
    n = _field(report, block, "N", where)
    if n == 0:
        return None
    out = {"N": n}
    for key in ("min", "max", "mean", "stddev"):
        out[key] = _field(report, block, key, where) * NS
    pct = block.get("percentile")
    if pct is not None:
        if not isinstance(pct, dict):
            raise _fail(report, f"{where}.percentile is not an object")
        for key, value in pct.items():
            out[_pct_name(report, key, f"{where}.percentile")] = (
                _number(report, value, f"{where}.percentile.{key}") * NS
            )
    return out


class _Direction:
    """What one job did in one direction (read, write or trim), exactly."""

    def __init__(self, report: _Report, block: dict[str, Any], where: str) -> None:
        self.ios = _field(report, block, "total_ios", where)
        self.bytes = _field(report, block, "io_bytes", where)
        self.bandwidth = _field(report, block, "bw_bytes", where)
        self.iops = _field(report, block, "iops", where)
        self.runtime = _field(report, block, "runtime", where) * MS
        self.short = _number(report, block.get("short_ios", 0), f"{where}.short_ios")
        self.dropped = _number(report, block.get("drop_ios", 0), f"{where}.drop_ios")
        self.latency: dict[str, dict[str, Fraction]] = {}
        for key, kind in LATENCIES:
            if key in block:
                got = _latency(report, _obj(report, block, key, where), f"{where}.{key}")
                if got is not None:
                    self.latency[kind] = got

    @property
    def active(self) -> bool:
        return self.ios > 0 or self.bytes > 0


class _Sync:
    """The job's fsync/fdatasync calls (``sync``: a count and their latency)."""

    def __init__(self, report: _Report, block: Any, where: str) -> None:
        if not isinstance(block, dict):
            raise _fail(report, f"{where} is not an object")
        self.ios = _field(report, block, "total_ios", where)
        self.latency: dict[str, dict[str, Fraction]] = {}
        if "lat_ns" in block:
            got = _latency(report, _obj(report, block, "lat_ns", where), f"{where}.lat_ns")
            if got is not None:
                self.latency["lat"] = got


def _direction_metrics(prefix: str, d: _Direction) -> list[Metric]:
    out = [
        Metric(f"{prefix}.iops", float(d.iops), "1/s"),
        Metric(f"{prefix}.bandwidth", float(d.bandwidth), "B/s"),
        Metric(f"{prefix}.bytes", float(d.bytes), "B"),
        Metric(f"{prefix}.ios", float(d.ios), "count"),
        Metric(f"{prefix}.runtime", float(d.runtime), "s"),
        Metric(f"{prefix}.short_ios", float(d.short), "count"),
        Metric(f"{prefix}.drop_ios", float(d.dropped), "count"),
    ]
    return out + _latency_metrics(f"{prefix}.", d.latency)


def _latency_metrics(prefix: str, latency: dict[str, dict[str, Fraction]]) -> list[Metric]:
    """``<prefix>clat_mean``, ``clat_min``, ``clat_max``, ``clat_stddev``, ``clat_p99``..."""
    return [
        Metric(f"{prefix}{kind}_{key}", float(value), "s")
        for kind, stats in latency.items()
        for key, value in stats.items()
        if key != "N"
    ]


def _pooled(prefix: str, parts: list[_Direction]) -> list[Metric]:
    """Latency over the I/Os of several jobs or directions: the mean of all of them (each
    part's mean weighted by its count), the least and the most. Percentiles and standard
    deviations cannot be merged from fio's summaries (fio merges them with group_reporting)."""
    if len(parts) == 1:
        return _latency_metrics(prefix, parts[0].latency)
    out = []
    for _, kind in LATENCIES:
        blocks = [p.latency[kind] for p in parts if kind in p.latency]
        if blocks:
            n = sum(b["N"] for b in blocks)
            mean = sum(b["N"] * b["mean"] for b in blocks) / n
            out += [
                Metric(f"{prefix}{kind}_mean", float(mean), "s"),
                Metric(f"{prefix}{kind}_min", float(min(b["min"] for b in blocks)), "s"),
                Metric(f"{prefix}{kind}_max", float(max(b["max"] for b in blocks)), "s"),
            ]
    return out


def _merged(prefix: str, parts: list[_Direction]) -> list[Metric]:
    """Several jobs' one direction: counts and rates summed, latency pooled."""
    return [
        Metric(f"{prefix}.iops", float(sum(p.iops for p in parts)), "1/s"),
        Metric(f"{prefix}.bandwidth", float(sum(p.bandwidth for p in parts)), "B/s"),
        Metric(f"{prefix}.bytes", float(sum(p.bytes for p in parts)), "B"),
        Metric(f"{prefix}.ios", float(sum(p.ios for p in parts)), "count"),
        Metric(f"{prefix}.runtime", float(max(p.runtime for p in parts)), "s"),
        Metric(f"{prefix}.short_ios", float(sum(p.short for p in parts)), "count"),
        Metric(f"{prefix}.drop_ios", float(sum(p.dropped for p in parts)), "count"),
        *_pooled(f"{prefix}.", parts),
    ]


def _jobs(report: _Report) -> list[tuple[str, dict[str, Any]]]:
    data = report.data
    if not isinstance(data, dict) or not isinstance(data.get("fio version"), str):
        raise _fail(report, "not fio's JSON report: no 'fio version'")
    jobs = data.get("jobs")
    if not isinstance(jobs, list) or not jobs:
        raise _fail(report, "fio's report has no jobs")
    out = []
    for i, job in enumerate(jobs):
        where = f"jobs[{i}]"
        if not isinstance(job, dict) or not isinstance(job.get("jobname"), str):
            raise _fail(report, f"{where} has no jobname")
        out.append((where, job))
    return out


def _check_errors(report: _Report, jobs: list[tuple[str, dict[str, Any]]]) -> None:
    for where, job in jobs:
        err = _number(report, job.get("error"), f"{where}.error")
        if err:
            code = int(err)
            said = f"error {code}" + (f" ({os.strerror(code)})" if 0 < code < 4096 else "")
            msg = report.first_message()
            tail, line = (f": {msg[1]}", msg[0]) if msg else ("", None)
            raise _fail(report, f"fio job {job['jobname']!r} failed with {said}{tail}", line)


def _disk_metrics(report: _Report) -> list[Metric]:
    disks = report.data.get("disk_util", [])
    if not isinstance(disks, list):
        raise _fail(report, "disk_util is not a list")
    out = []
    for i, disk in enumerate(disks):
        where = f"disk_util[{i}]"
        if not isinstance(disk, dict) or not isinstance(disk.get("name"), str):
            raise _fail(report, f"{where} has no name")
        prefix = f"disk.{disk['name']}"
        for key in ("read_ios", "write_ios", "read_merges", "write_merges"):
            if key in disk:
                out.append(
                    Metric(f"{prefix}.{key}", float(_field(report, disk, key, where)), "count")
                )
        for key in ("read_ticks", "write_ticks", "in_queue"):
            if key in disk:
                out.append(
                    Metric(f"{prefix}.{key}", float(_field(report, disk, key, where) * MS), "s")
                )
        if "util" in disk:
            # fio prints a percentage; stored as the fraction of the time the disk was busy.
            out.append(
                Metric(f"{prefix}.util", float(_field(report, disk, "util", where) / 100), "")
            )
    return out


def parse_report(text: str, source: str) -> list[Metric]:
    """Metrics of one fio log: totals, each direction that did I/O, each job when several."""
    if not text.strip():
        raise ParseError(source, "empty log: fio printed nothing")
    report = _Report(text, source)
    if report.data is None:
        msg = report.first_message()
        if msg:
            raise ParseError(source, f"fio printed no report: {msg[1]}", msg[0])
        raise ParseError(
            source,
            "no JSON report from fio (--output-format=json) in the log",
            len(report.lines) or None,
        )
    jobs = _jobs(report)
    _check_errors(report, jobs)
    per_job: list[tuple[str, dict[str, _Direction], _Sync | None]] = []
    names: dict[str, int] = {}
    for where, job in jobs:
        dirs = {}
        for d in DIRECTIONS:
            if d in job:
                got = _Direction(report, _obj(report, job, d, where), f"{where}.{d}")
                if got.active:
                    dirs[d] = got
        sync = _Sync(report, job["sync"], f"{where}.sync") if "sync" in job else None
        if sync is not None and not sync.ios:
            sync = None
        name = job["jobname"]
        names[name] = names.get(name, 0) + 1
        per_job.append((f"job.{name}.{names[name]}", dirs, sync))

    out: list[Metric] = []
    everything: list[_Direction] = []
    for d in DIRECTIONS:
        parts = [dirs[d] for _, dirs, _ in per_job if d in dirs]
        if parts:
            everything += parts
            out += _direction_metrics(d, parts[0]) if len(per_job) == 1 else _merged(d, parts)
    syncs = [s for _, _, s in per_job if s is not None]
    if syncs:
        out.append(Metric("sync.ios", float(sum(s.ios for s in syncs)), "count"))
        if len(per_job) == 1:
            out += _latency_metrics("sync.", syncs[0].latency)
    # Totals over every direction and job: what a post compares first. Latency percentiles
    # only where one direction of one report did all the I/O (they cannot be merged).
    out = [
        Metric("iops", float(sum(p.iops for p in everything)), "1/s"),
        Metric("throughput", float(sum(p.bandwidth for p in everything)), "B/s"),
        Metric("bytes", float(sum(p.bytes for p in everything)), "B"),
        Metric("runtime", float(max((p.runtime for p in everything), default=0)), "s"),
        Metric("jobs", float(len(per_job)), "count"),
        *_pooled("", everything),
        *out,
    ]
    if len(per_job) > 1:
        for prefix, dirs, sync in per_job:
            for d, part in dirs.items():
                out += _direction_metrics(f"{prefix}.{d}", part)
            if sync is not None:
                out.append(Metric(f"{prefix}.sync.ios", float(sync.ios), "count"))
    return out + _disk_metrics(report)


def error_reason(texts: Mapping[str, str]) -> str | None:
    """Why a run failed: fio's first ``fio:`` message, else a job's error number."""
    for name, text in texts.items():
        for no, line in enumerate(text.splitlines(), start=1):
            if line.startswith("fio: "):
                return f"{name}:{no}: {line.strip()}"
        try:
            parse_report(text, name)
        except ParseError as e:
            if "failed with error" in e.message:
                return str(e)
    return None


def parse_cell(logs: Mapping[str, str], wall_time: float | None = None) -> list[Metric]:
    """Metrics of one run from its one log; fio's own clock, not the host's, times it."""
    if len(logs) != 1:
        raise ParseError("<cell>", f"expected one fio log, got {len(logs)}")
    source, text = next(iter(logs.items()))
    return parse_report(text, source)


def parse_text(text: str, source: str) -> list[Metric]:
    """Metrics of a single fio log, for ``perfpost parse fio``."""
    return parse_cell({source: text})


# ---------------------------------------------------------------------------- test method

PATTERNS = {
    "read": "sequential reads",
    "write": "sequential writes",
    "trim": "sequential trims",
    "randread": "random reads",
    "randwrite": "random writes",
    "randtrim": "random trims",
    "rw": "mixed sequential reads and writes",
    "readwrite": "mixed sequential reads and writes",
    "randrw": "mixed random reads and writes",
    "trimwrite": "sequential trims, each followed by a write",
    "randtrimwrite": "random trims, each followed by a write",
}


def describe(experiment: Mapping[str, Any], results: Any = None) -> list[str]:
    """The test method in prose, from the experiment's config (axes named where they vary);
    ``results`` changes nothing: every number is fio's own."""
    params, axes = experiment["params"], experiment["axes"]
    options = dict(params.get("options") or {})

    def given(key: str) -> bool:
        return key in axes or params.get(key) is not None or options.get(key) is not None

    def val(key: str, default: Any = None) -> str:
        if key in axes and key not in params:
            got = axes[key]
            shown = list(got.values() if isinstance(got, dict) else got)
            return " or ".join(f"`{v}`" for v in shown) + f" (the `{key}` axis)"
        value = params.get(key, options.get(key, default))
        if isinstance(value, str) and "{" in value and value != "{work}":
            return f"`{value}` (set by the axes)"
        return f"`{value}`"

    rw = params.get("rw")
    if "rw" in axes and "rw" not in params:
        what = f"I/O of the pattern {val('rw')}"
    elif isinstance(rw, str) and rw.partition(":")[0] in PATTERNS:
        what = PATTERNS[rw.partition(":")[0]] + f" (`rw={rw}`)"
    else:
        what = f"I/O of the pattern {val('rw', 'read')}"
    bs = f" in blocks of {val('bs')}" if given("bs") else ""
    where = (
        f"on {val('filename')}"
        if options.get("filename") is not None
        else f"in a new directory under {val('dir')}, where fio first lays out its file (not timed)"
    )
    lines = [f"Each run is one fio job doing {what}{bs}, {where}."]
    engine = (
        f"The I/O engine is {val('ioengine')}"
        if given("ioengine")
        else ("The I/O engine is fio's default (`psync`)")
    )
    depth = f" with {val('iodepth')} I/Os in flight" if given("iodepth") else ""
    direct = params.get("direct", options.get("direct"))
    if "direct" in axes:
        cache = "; `direct` is an axis (O_DIRECT, bypassing the page cache, where set)"
    elif direct in (True, 1, "1"):
        cache = "; `direct=1`: O_DIRECT, bypassing the page cache"
    else:
        cache = "; buffered: the page cache may serve reads and absorb writes"
    lines.append(f"{engine}{depth}{cache}.")
    runtime = val("runtime") + (" s" if isinstance(params.get("runtime"), int) else "")
    if params.get("time_based") or "time_based" in axes:
        lines.append(
            f"Each job runs for {runtime} (`time_based`), going over its "
            f"{val('size')} file as many times as it can."
        )
    elif given("runtime"):
        lines.append(f"Each job does {val('size')} of I/O, or stops after {runtime}.")
    elif given("size"):
        lines.append(f"Each job does {val('size')} of I/O.")
    if given("fsync"):
        lines.append(f"fio calls fsync after every {val('fsync')} writes.")
    if given("rwmixread"):
        lines.append(f"{val('rwmixread')} percent of the I/Os are reads.")
    if given("numjobs"):
        merged = (
            "fio merges them into one report (`group_reporting`)"
            if params.get("group_reporting")
            else "each job's own rows are in the data, and latency percentiles only there "
            "(fio merges them with `group_reporting`)"
        )
        lines.append(
            f"{val('numjobs')} copies of the job run at once; IOPS and bandwidth are summed "
            f"over them and mean latency is over all their I/Os; {merged}."
        )
    lines.append(
        "IOPS, bandwidth and latencies are fio's own, from its JSON report "
        "(`clat`: completion latency, from submission to completion; `lat`: total latency, "
        "submission included; `p99`: the 99th percentile). `iops` and `throughput` are summed "
        "over reads, writes and trims; each direction also has its own metrics in the data "
        "(`read.iops`, `write.clat_p99`)."
    )
    if params.get("drop_cache"):
        lines.append(
            "The page cache was dropped (`sync; echo 3 > /proc/sys/vm/drop_caches`) right "
            "before each measurement."
        )
    return lines
