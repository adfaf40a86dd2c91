"""``dd`` write and concurrent-read tests: command builder and summary parser.

Write cells copy ``/dev/zero`` into a file in ``dir`` (``bs`` x ``count``, optional ``conv`` and
``oflag``), like the fsync check of the ratis-log-separation post. Read cells first write one
file per reader, then start ``readers`` dd processes at once, each reading its own file to
``/dev/null`` with block size ``bs`` (the cluster-io-reads post), optionally after dropping the
page cache and with a rate-limited writer running beside them.

The parser reads every summary form coreutils dd prints: before and after 8.24 (``(1.0 GB)``
and ``(1.0 GB, 954 MiB)``), ``1 byte``/``0 bytes``, exponents (``2.3926e-05 s``), any rate unit,
``status=progress`` redraws, and translated logs (decimal commas, other words). A log without
a final summary (killed, truncated, BusyBox built without one) is an error, never a guess.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from perfpost.errors import ConfigError, ParseError
from perfpost.tools.base import (
    CACHE_PARAMS,
    CLIENT_PARAMS,
    Metric,
    Plan,
    Proc,
    never_provisioned,
    params_as_given,
)
from perfpost.tools.dd.design import (  # noqa: F401 (the tool's hooks for the design checks)
    data_synced,
    forced_rates,
    written_bytes,
)
from perfpost.units import UnitError, human_unit_factor, parse_size

NAME = "dd"
RUNTIME = None  # the host's own dd: nothing to fetch
HOST_KEY = None  # and no inventory key naming its command
VERSION_ARGV = ("dd", "--version")
PLOT_METRICS = ("throughput", "throughput_adjusted")
# What its runs measure, for the post's sentences (a command's is its own).
SUBJECT = "the storage"
TABLE_METRICS = ("throughput", "throughput_adjusted", "elapsed", "bytes", "sync_time")
# (amount, time, rate): how the sync step adjusts a write cell's throughput.
SYNC_ADJUST = (("bytes", "elapsed", "throughput"),)

PARAMS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["dir"],
    "properties": {
        "mode": {
            "description": "write: /dev/zero to a file; read: concurrent readers, one file each",
            "enum": ["write", "read"],
            "default": "write",
        },
        "dir": {
            "description": "Directory the test files go in (created; a per-cell subdirectory is "
            "removed afterwards).",
            "type": "string",
            "minLength": 1,
        },
        "bs": {"description": "Block size, dd units (4k, 1M)", "type": ["string", "integer"]},
        "count": {"description": "Blocks to write (write mode)", "type": "integer", "minimum": 1},
        "conv": {
            "description": "Flush at the end of a write: fsync (data+metadata) or fdatasync",
            "enum": ["fsync", "fdatasync", "none"],
            "default": "none",
        },
        "oflag": {
            "description": "Output flags for writes, e.g. direct, dsync, sync",
            "type": "array",
            "items": {"enum": ["direct", "dsync", "sync", "nocache"]},
            "default": [],
        },
        "iflag": {
            "description": "Input flags for reads, e.g. direct",
            "type": "array",
            "items": {"enum": ["direct", "nocache"]},
            "default": [],
        },
        "readers": {
            "description": "Concurrent readers (read mode)",
            "type": "integer",
            "minimum": 1,
            "maximum": 256,
            "default": 1,
        },
        "file_size": {
            "description": "Size of each reader's file (read mode)",
            "type": ["string", "integer"],
        },
        **CACHE_PARAMS,
        **CLIENT_PARAMS,
        "background_writer": {
            "description": "Write this many bytes per second to a file beside the readers while "
            "they run (0: none).",
            "type": ["string", "integer"],
            "default": 0,
        },
    },
}

WRITE_FILE = "dd.out"
WRITE_LOG = "dd.log"
WRITER_CHUNK = 1024 * 1024


READ_PREFIX = "reader-"


def reader_log(i: int) -> str:
    return f"{READ_PREFIX}{i}.log"


complete_params = params_as_given
install_marker = never_provisioned


def check_params(params: Mapping[str, Any], where: str) -> None:
    """Checks a schema cannot express: size units and which keys each mode needs."""
    for key in ("bs", "file_size", "background_writer"):
        if key in params:
            try:
                parse_size(params[key])
            except UnitError as e:
                raise ConfigError(f"{where}.{key}", str(e)) from None
    mode = params.get("mode", "write")
    needs = {"write": ("bs", "count"), "read": ("bs", "file_size")}[mode]
    for key in needs:
        if key not in params:
            raise ConfigError(where, f"dd in {mode} mode needs `{key}`")
    if mode == "write":
        for key in ("readers", "file_size", "iflag"):
            if key in params and params[key] not in (1, []):
                raise ConfigError(f"{where}.{key}", "only applies to mode: read")
    if mode == "read" and params.get("conv", "none") != "none":
        raise ConfigError(f"{where}.conv", "only applies to mode: write")
    if parse_size(params["bs"]) == 0:
        raise ConfigError(f"{where}.bs", "block size must be positive")


def _flag(name: str, values: list[str]) -> list[str]:
    return [f"{name}={','.join(values)}"] if values else []


def plan(params: Mapping[str, Any], workdir: str) -> Plan:
    """The commands of one cell; ``workdir`` is a fresh directory inside ``params['dir']``."""
    mode = params.get("mode", "write")
    bs = str(params["bs"])
    if mode == "write":
        argv = [
            "dd",
            "if=/dev/zero",
            f"of={workdir}/{WRITE_FILE}",
            f"bs={bs}",
            f"count={params['count']}",
        ]
        if params.get("conv", "none") != "none":
            argv.append(f"conv={params['conv']}")
        argv += _flag("oflag", list(params.get("oflag", [])))
        return Plan(
            measure=(Proc(tuple(argv), WRITE_LOG),),
            drop_cache=bool(params.get("drop_cache", False)),
            writes=True,
            description=f"dd write, bs={bs}",
        )
    readers = int(params.get("readers", 1))
    size = parse_size(params["file_size"])
    prepare = tuple(
        Proc(
            (
                "dd",
                "if=/dev/zero",
                f"of={workdir}/read-{i}",
                "bs=1M",
                f"count={size}",
                "iflag=count_bytes",
                "conv=fsync",
            )
        )
        for i in range(1, readers + 1)
    )
    measure = tuple(
        Proc(
            (
                "dd",
                f"if={workdir}/read-{i}",
                "of=/dev/null",
                f"bs={bs}",
                *_flag("iflag", list(params.get("iflag", []))),
            ),
            reader_log(i),
        )
        for i in range(1, readers + 1)
    )
    background: tuple[Proc, ...] = ()
    rate = parse_size(params.get("background_writer", 0))
    if rate:
        # One 1 MiB chunk, flushed, every 1 MiB/rate seconds: a steady writer like the
        # post's "~10 MB/s", restarting its file every 256 chunks to bound its size.
        interval = f"{WRITER_CHUNK / rate:.6f}"
        loop = (
            'i=0; while :; do dd if=/dev/zero of="$1" bs=1M count=1 seek=$((i % 256)) '
            'conv=notrunc,fdatasync 2>/dev/null; i=$((i+1)); sleep "$2"; done'
        )
        background = (Proc(("sh", "-c", loop, "writer", f"{workdir}/writer.out", interval)),)
    return Plan(
        measure=measure,
        prepare=prepare,
        background=background,
        drop_cache=bool(params.get("drop_cache", False)),
        writes=False,
        description=f"{readers} concurrent dd readers, bs={bs}",
    )


# ---------------------------------------------------------------------------- parsing

_NUM = r"(?:\d+(?:[.,]\d+)?(?:[eE][-+]?\d+)?|[Ii]nf(?:inity)?)"
# Matched by shape, not by words, so translated logs parse too ("Bytes ... kopiert, 0,0087 s").
# Counts are uintmax_t, at most 20 digits: a longer run of digits is not dd's.
_SUMMARY = re.compile(
    r"^(?P<bytes>\d{1,20}) \w+"
    r"(?: \((?P<human>[^)]*)\))?"
    r" \w+, (?P<secs>" + _NUM + r") ?(?:s|seconds?),"
    r" (?P<rate>" + _NUM + r") ?(?P<unit>[kKMGTPE]?i?B)/s\s*$"
)
_RECORDS = re.compile(r"^(?P<full>\d{1,20})\+(?P<partial>\d{1,20}) \w.*$")
_TRUNCATED = re.compile(r"^(?P<n>\d{1,20}) truncated records?\s*$")


@dataclass(frozen=True)
class DdSummary:
    """What one dd process reported."""

    bytes: int
    elapsed: float
    reported_rate: float  # B/s as dd printed it (rounded by dd)
    records: dict[str, int]
    errors: tuple[str, ...]
    line: int


def _num(text: str) -> float:
    return float(text.replace(",", "."))


def parse_log(text: str, source: str = "<log>") -> DdSummary:
    """The final summary of one dd log; a log with no summary is an error naming the file.

    dd with ``status=progress`` redraws a summary-shaped line with ``\\r``; only the one after
    the ``records out`` line is the result.
    """
    summary = None
    summary_line = 0
    records: dict[str, int] = {}
    errors: list[str] = []
    n_records = 0
    error_line = 0
    progress = False
    last_nonblank = 0
    # Line numbers count "\n" as an editor does; "\r" redraws (status=progress) are segments.
    for no, physical in enumerate(text.split("\n"), start=1):
        for segment in physical.split("\r"):
            line = segment.strip()
            if not line:
                continue
            last_nonblank = no
            if (m := _RECORDS.match(line)) and n_records < 2:
                # dd prints "records in", then "records out": order tells them apart in any
                # language.
                direction = ("in", "out")[n_records]
                n_records += 1
                records[f"records_{direction}_full"] = int(m["full"])
                records[f"records_{direction}_partial"] = int(m["partial"])
            elif m := _TRUNCATED.match(line):
                records["truncated_records"] = int(m["n"])
            elif m := _SUMMARY.match(line):
                if n_records == 2:
                    summary, summary_line = m, no  # the final summary follows "records out"
                else:
                    progress = True  # a status=progress redraw, not a result
            elif line.startswith("dd: ") and not line.startswith("dd: warning:"):
                errors.append(line[4:])
                error_line = error_line or no
    if errors:
        # dd still prints a summary after a failed write: those bytes are not a result.
        raise ParseError(source, f"dd reported an error: {errors[0]}", error_line)
    if summary is None:
        if not last_nonblank:
            raise ParseError(source, "empty log: dd printed nothing")
        if progress and n_records < 2:
            raise ParseError(
                source,
                "log ends mid-run: progress lines but no 'records out' "
                "line and final summary (dd was killed or the log cut)",
                last_nonblank,
            )
        raise ParseError(
            source,
            "no dd summary line ('N bytes ... copied, T s, R/s') after "
            "'records out': the log is truncated or not from dd",
            last_nonblank,
        )
    secs = _num(summary["secs"])
    try:
        rate = _num(summary["rate"]) * human_unit_factor(summary["unit"])
    except UnitError as e:
        raise ParseError(source, f"dd summary: {e}", summary_line) from None
    # dd writes "Infinity B/s" when no time passed: then there is no throughput to report.
    if not math.isfinite(secs) or (secs == 0 and not math.isfinite(rate)):
        raise ParseError(
            source,
            f"dd summary has no finite time and rate: {summary['secs']} s, "
            f"{summary['rate']} {summary['unit']}/s",
            summary_line,
        )
    return DdSummary(int(summary["bytes"]), secs, rate, records, tuple(errors), summary_line)


def error_reason(texts: Mapping[str, str]) -> str | None:
    """The first ``dd:`` error line of a cell's logs, for a failed cell's reason."""
    for name, text in texts.items():
        for line in text.splitlines():
            if line.startswith("dd: "):
                return f"{name}: {line}"
    return None


def _throughput(nbytes: float, secs: float, reported: float) -> float:
    # dd prints 3 significant digits of its rate; bytes/elapsed is the exact figure.
    return nbytes / secs if secs > 0 else reported


def version_argv(params: Mapping[str, Any]) -> tuple[str, ...]:
    return VERSION_ARGV


def parse_cell(logs: Mapping[str, str], wall_time: float | None = None) -> list[Metric]:
    """Metrics of one cell from its logs (name -> text): one writer, or N concurrent readers.

    A writer's throughput is its bytes over dd's own time. Readers are summed into one
    result over the measured step's wall time (``wall_time``, timed on the host from the
    first reader's start to the last one's end): what a reader of the post compares, all
    the bytes the readers delivered in the time it took. Each reader's own time is shorter
    (they start one after another), so their bytes over the slowest reader's time alone
    overstated the rate (36 GB/s where the step gave 15 GB/s); that one is kept as
    ``throughput_slowest_reader``, with the slowest and fastest reader's own rates.
    """
    if not logs:
        raise ParseError("<cell>", "no logs to parse")
    summaries = [parse_log(text, source) for source, text in logs.items()]
    total = sum(s.bytes for s in summaries)
    slowest = max(s.elapsed for s in summaries)
    rates = [_throughput(s.bytes, s.elapsed, s.reported_rate) for s in summaries]
    reading = any(str(source).rsplit("/", 1)[-1].startswith(READ_PREFIX) for source in logs)
    if reading and wall_time:
        out = [
            Metric("bytes", float(total), "B"),
            Metric("elapsed", wall_time, "s"),
            Metric("throughput", total / wall_time, "B/s"),
            Metric("throughput_slowest_reader", _throughput(total, slowest, sum(rates)), "B/s"),
        ]
    else:
        out = [
            Metric("bytes", float(total), "B"),
            Metric("elapsed", slowest, "s"),
            Metric("throughput", _throughput(total, slowest, sum(rates)), "B/s"),
        ]
    if len(summaries) > 1:
        out += [
            Metric("readers", float(len(summaries)), "count"),
            Metric("reader_throughput_min", min(rates), "B/s"),
            Metric("reader_throughput_max", max(rates), "B/s"),
        ]
    records: dict[str, int] = {}
    for s in summaries:
        for k, v in s.records.items():
            records[k] = records.get(k, 0) + v
    out += [Metric(k, float(v), "count") for k, v in sorted(records.items())]
    return out


def parse_text(text: str, source: str) -> list[Metric]:
    """Metrics of a single dd log, for ``perfpost parse dd``."""
    return parse_cell({source: text})


def describe(experiment: Mapping[str, Any], results: Any = None) -> list[str]:
    """The test method in prose, from the experiment's config (axes named where they vary);
    ``results`` (the tidy rows) changes nothing here: dd's times are always dd's own."""
    params, axes = experiment["params"], experiment["axes"]

    def val(key: str, default: Any = None) -> str:
        if key in axes and key not in params:
            return f"`{key}` (an axis)"
        value = params.get(key, default)
        if isinstance(value, str) and "{" in value:
            return f"`{value}` (set by the axes)"
        return f"`{value}`"

    mode = params.get("mode", axes.get("mode", "write"))
    lines = []
    if mode == "write":
        conv = params.get("conv", "none")
        flush = {
            "fsync": "with `conv=fsync`: one fsync after the last write, so dd's time includes "
            "flushing data and metadata to the device once, while the writes themselves go "
            "to the page cache",
            "fdatasync": "with `conv=fdatasync`: one fdatasync after the last write, so dd's "
            "time includes flushing the data to the device once",
        }.get(conv, "without a flush at the end, so the page cache may absorb the writes")
        lines.append(
            f"Each run writes {val('count')} blocks of {val('bs')} from `/dev/zero` into "
            f"a new file under {val('dir')}, {flush}."
        )
        if params.get("oflag"):
            flags = params["oflag"]
            each = {
                "dsync": "each write waits until its data reach the device",
                "sync": "each write waits until its data and metadata reach the device",
                "direct": "writes bypass the page cache",
            }
            said = "; ".join(each[f] for f in flags if f in each)
            lines.append(
                f"Output flags: `oflag={','.join(flags)}`" + (f" ({said})." if said else ".")
            )
        lines.append("Throughput is the bytes dd wrote divided by dd's own elapsed time.")
    else:
        lines.append(
            f"Each run first writes one {val('file_size')} file per reader under {val('dir')} "
            f"(not measured, flushed with fsync), then starts {val('readers', 1)} dd readers at "
            f"once, each reading its own file to `/dev/null` with block size {val('bs')}."
        )
        lines.append(
            "A run's throughput is the bytes read by all readers divided by the measured "
            "step's wall time, from the first reader's start to the last one's end, timed on "
            "the host; each reader's own rate is in the data."
        )
    cache = params.get("drop_cache")
    if "drop_cache" in axes or isinstance(cache, str):
        lines.append(
            "The page cache was dropped (`sync; echo 3 > /proc/sys/vm/drop_caches`) "
            "right before the measurement in the cells that ask for it (see the "
            "axes); the others read from a hot cache."
        )
    elif cache:
        lines.append(
            "The page cache was dropped (`sync; echo 3 > /proc/sys/vm/drop_caches`) "
            "right before each measurement."
        )
    elif mode == "read":
        lines.append(
            "The page cache was not dropped: the files had just been written, so reads "
            "come from a hot cache."
        )
    if params.get("background_writer") or "background_writer" in axes:
        lines.append(
            f"A background writer aimed at {val('background_writer')} bytes per second while "
            "the readers ran: a 1 MiB chunk, flushed, then a sleep of 1 MiB over that rate, so "
            "it wrote less than the rate by each chunk's write and flush time; what it wrote "
            "was not measured (an experiment's `background:` load is)."
        )
    if params.get("on_unprivileged") == "skip":
        lines.append(
            "Where the page cache could not be dropped (not root), those cells were "
            "skipped rather than measured with a hot cache."
        )
    return lines
