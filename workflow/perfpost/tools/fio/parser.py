"""fio's JSON report, read by its field names into metrics in base units, exactly."""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from perfpost.errors import ParseError
from perfpost.tools.base import Metric
from perfpost.units import SECONDS_PER

_VERSION = re.compile(r"\bfio-(\d+(?:\.\d+)+(?:[-+~.]\w+)*)")


def parse_version(text: str) -> str | None:
    """``3.33`` from ``fio-3.33`` (``fio --version``, or the report's ``fio version``)."""
    m = _VERSION.search(text)
    return m.group(1) if m else None


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


@dataclass
class _Job:
    """One entry of fio's ``jobs``: a job, a clone of one, or a reporting group fio merged."""

    prefix: str  # job.<name>.<k>
    name: str
    group: int
    dirs: dict[str, _Direction]
    sync: _Sync | None
    steady: list[Metric]


def _label(name: str) -> str:
    """A job's name as it goes into metric names: dots would split them."""
    return name.replace(".", "_")


def _totals(prefix: str, parts: list[_Direction]) -> list[Metric]:
    """Over every direction of ``parts``: what a post compares first. Latency percentiles only
    where one direction of one job did all the I/O (they cannot be merged)."""
    return [
        Metric(f"{prefix}iops", float(sum(p.iops for p in parts)), "1/s"),
        Metric(f"{prefix}throughput", float(sum(p.bandwidth for p in parts)), "B/s"),
        Metric(f"{prefix}bytes", float(sum(p.bytes for p in parts)), "B"),
        Metric(f"{prefix}runtime", float(max((p.runtime for p in parts), default=0)), "s"),
        *_pooled(prefix, parts),
    ]


def _directions(prefix: str, jobs: list[_Job]) -> list[Metric]:
    """Each direction of ``jobs``: one job's own numbers, several jobs' summed and pooled."""
    out = []
    for d in DIRECTIONS:
        parts = [j.dirs[d] for j in jobs if d in j.dirs]
        if parts:
            out += (
                _direction_metrics(prefix + d, parts[0])
                if len(jobs) == 1
                else _merged(prefix + d, parts)
            )
    syncs = [j.sync for j in jobs if j.sync is not None]
    if syncs:
        out.append(Metric(f"{prefix}sync.ios", float(sum(s.ios for s in syncs)), "count"))
        if len(jobs) == 1:
            out += _latency_metrics(f"{prefix}sync.", syncs[0].latency)
    return out


_SS_CRITERION = re.compile(r"^(-?\d{1,20}(?:\.\d{1,20})?)%$")


def _steady(report: _Report, job: dict[str, Any], where: str) -> list[Metric]:
    """fio's own steady-state detection (``steadystate=``): whether its criterion was met
    (fio then ended the job: ``steady.at`` is when, its runtime), and the value it reached
    (a percentage fio prints, stored as a fraction; a slope's can be negative)."""
    block = job.get("steadystate")
    if block is None:
        return []
    here = f"{where}.steadystate"
    if not isinstance(block, dict):
        raise _fail(report, f"{here} is not an object")
    attained = _field(report, block, "attained", here)
    out = [
        Metric("steady.attained", float(attained > 0), "count"),
        Metric("steady.duration", float(_field(report, block, "duration", here)), "s"),
    ]
    criterion = block.get("criterion")
    m = _SS_CRITERION.match(criterion) if isinstance(criterion, str) else None
    if criterion is not None and m is None:
        raise _fail(report, f"{here}.criterion is {str(criterion)[:40]!r}, not a percentage")
    if m:
        out.append(Metric("steady.criterion", float(Fraction(m.group(1)) / 100), ""))
    if attained:
        # The job's runtime in its directions (ms): fio's job_runtime of a merged group is
        # summed over its clones (four 3.9 s clones: 15.5 s).
        ran = [
            _field(report, job[d], "runtime", f"{where}.{d}")
            for d in DIRECTIONS
            if isinstance(job.get(d), dict)
        ]
        out.append(Metric("steady.at", float(max(ran, default=Fraction(0)) * MS), "s"))
    return out


def parse_report(text: str, source: str) -> list[Metric]:
    """Metrics of one fio log: totals, each direction that did I/O, and when the report has
    several jobs each job's own (``job.<name>.<k>.``) and, with several reporting groups, each
    group's (``group.<first job's name>.``: fio's merged numbers where it merged them)."""
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
    entries = _jobs(report)
    _check_errors(report, entries)
    jobs: list[_Job] = []
    names: dict[str, int] = {}
    for where, job in entries:
        dirs = {}
        for d in DIRECTIONS:
            if d in job:
                got = _Direction(report, _obj(report, job, d, where), f"{where}.{d}")
                if got.active:
                    dirs[d] = got
        sync = _Sync(report, job["sync"], f"{where}.sync") if "sync" in job else None
        if sync is not None and not sync.ios:
            sync = None
        name = _label(job["jobname"])
        names[name] = names.get(name, 0) + 1
        group = int(_number(report, job.get("groupid", 0), f"{where}.groupid"))
        steady = _steady(report, job, where)
        jobs.append(_Job(f"job.{name}.{names[name]}.", name, group, dirs, sync, steady))

    everything = [p for j in jobs for p in j.dirs.values()]
    out = [*_totals("", everything), Metric("jobs", float(len(jobs)), "count")]
    out += _directions("", jobs)
    if len(jobs) == 1:
        return out + jobs[0].steady + _disk_metrics(report)
    for j in jobs:
        out += _totals(j.prefix, list(j.dirs.values()))
        out += _directions(j.prefix, [j])
        out += [Metric(j.prefix + m.name, m.value, m.unit) for m in j.steady]
    groups: dict[int, list[_Job]] = {}
    for j in jobs:
        groups.setdefault(j.group, []).append(j)
    if len(groups) > 1:
        for members in groups.values():
            prefix = f"group.{members[0].name}."
            out += _totals(prefix, [p for j in members for p in j.dirs.values()])
            out += _directions(prefix, members)
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
