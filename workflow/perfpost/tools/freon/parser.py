"""freon's log parser: every form freon prints, read by the messages themselves so that any
log4j prefix works (ISO8601 or ``yyyy-MM-dd HH:mm:ss`` dates, with or without thread, class
and line): ``Progress:`` lines (a time series), ``type=TIMER, name=...`` lines (metrics
``<timer>.<field>``: durations in s, rates in 1/s, converted from the units the line names by
their whole words), the summary (``Total execution time``, ``Failures``, ``Successful
executions``), the terminal form (``\\r``-redrawn progress bar, ``-- Timers --`` block, bare
summary lines), and ``name.field: value`` lines printed by instrumented clients. A log without
freon's summary (killed, cut off) is an error."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from typing import Any

from perfpost.errors import ParseError
from perfpost.tools import log4j
from perfpost.tools.base import Metric
from perfpost.tools.freon.defaults import REPORT_INTERVAL
from perfpost.tools.freon.phase import (
    PLAIN_PREFIX,
    PLAIN_PREFIX_AT,
    Ends,
    Place,
    Progress,
    plain_entry,
    window,
)
from perfpost.units import UnitError, to_per_second, to_seconds

_LEVEL = re.compile(r"^\S+ \S+\s+(?:\[[^\]]*\]\s+)?(TRACE|DEBUG|INFO|WARN|ERROR|FATAL)\s")
_LOGGED = re.compile(
    r"^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[,.]\d+)?\s+(?:\[[^\]]*\]\s+)?"
    r"(?:TRACE|DEBUG|INFO|WARN|ERROR|FATAL)\s+[\w.$]+(?::\d+)?(?::\s| - )(?P<msg>.*)$"
)
# A count freon prints is a Java long, at most 19 digits: a longer run of digits is not one.
_INT = r"(\d{1,19})(?!\d)"
_PROGRESS = re.compile(r"Progress: ([\d.]+) % \(" + _INT + " out of " + _INT + r"\)")
_BAR = re.compile(
    r"^\s*([\d.]+)% \|[^|]*\|\s*" + _INT + "/" + _INT + " Time: " + _INT + r":(\d{2}):(\d{2})\|"
)
_METRIC = re.compile(r"type=(?P<type>[A-Z]+), name=(?P<name>[^,]+), (?P<fields>.*)$")
_FIELD = re.compile(r"(\w+)=([^,]*)")
_TOTAL = re.compile(r"Total execution time \(sec\): " + _INT)
_FAILURES = re.compile(r"(?:^|\s|: )Failures: " + _INT + r"\s*$")
_SUCCESS = re.compile(r"Successful executions: " + _INT)
_EXPECTED = re.compile(
    "Expected " + _INT + " --number-of-tests objects!, successfully executed " + _INT
)
_EXECUTING = re.compile(r"Executing test with prefix \S+ and number-of-tests " + _INT)
_FAILED = "One or more freon test is failed."
# The JVM's own unified logging ("[0.007s][warning][gc] -Xloggc is deprecated ..."): the JVM
# speaking of its options, never why freon failed.
_JVM_LOG = re.compile(r"^\[\d+(?:\.\d+)?s\](?:\[[\w ,.-]+\])+ ")
# What a generator logs right before its operations begin, where it logs anything: vapor
# cmdw's "Running chunk write test: threads=...". The measured phase of a --duration run
# starts there (its set-up, a chunk manager and one container per thread, is before it).
_OPS_BEGIN = "Running chunk write test"
# Every logged message the parser reads contains one of these; a line with none (most of a
# chatty datanode's log) is passed over without the eight searches below.
_KEYWORDS = re.compile(
    r"Executing test with prefix|Progress: |type=|Total execution time|Failures: "
    r"|Successful executions: |number-of-tests objects!|" + re.escape(_FAILED) + "|" + _OPS_BEGIN
)
# The lines the whole-text scan leaves to _line: ones with a keyword other than Progress
# ("xecut" is in Executing, execution(s) and executed), a redraw, or a metric.
_RARE = ("xecut", "Failures: ", _FAILED, "\r", _OPS_BEGIN)
_METRIC_HINT = re.compile(r"type=[A-Z]+, name=")
# Every line that is not plain, or whose message is blank (whitespace alone, which _line
# strips): the search stops at the message's first character that is not a space.
_ODD = re.compile(r"\n(?!" + PLAIN_PREFIX.replace("?P<ts>", "") + r"[^\S\n]*\S)")
_EXCEPTION = re.compile(r"^[\w.$]+(?:Exception|Error)(?:: .*)?$")
_INSTRUMENTED = re.compile(
    r"^([A-Za-z][\w-]*)\.([A-Za-z][\w-]*):\s*(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)$"
)
_BLOCK = re.compile(r"^-- (Timers|Meters|Counters|Gauges|Histograms) -+$")
_CONSOLE = re.compile(r"^\s*([\w.%<= -]+?)\s*=\s*(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*([\w/]*)\s*$")

DURATION_FIELDS = {
    "min",
    "max",
    "mean",
    "stddev",
    "median",
    "p50",
    "p75",
    "p95",
    "p98",
    "p99",
    "p999",
}
RATE_FIELDS = {"mean_rate", "m1", "m5", "m15", "m1_rate", "m5_rate", "m15_rate"}
CONSOLE_NAMES = {
    "count": "count",
    "mean rate": "mean_rate",
    "1-minute rate": "m1",
    "5-minute rate": "m5",
    "15-minute rate": "m15",
    "min": "min",
    "max": "max",
    "mean": "mean",
    "stddev": "stddev",
    "median": "median",
    "75% <": "p75",
    "95% <": "p95",
    "98% <": "p98",
    "99% <": "p99",
    "99.9% <": "p999",
    "value": "value",
}
# Where a run's rate came from, named by a metric of value 1 in its record, so the post says
# which clock each run used. The progress window is preferred: both its ends are moments whose
# count freon printed, stamped to the millisecond, so neither the client's start-up nor the
# reporter's last second (:data:`perfpost.tools.freon.defaults.REPORT_INTERVAL`) is in it.
RATE_SOURCES = {
    "rate_source_progress_window": "freon's own progress lines: the operations completed "
    "between the first progress line after the first operation and the last one before the "
    "run's end, over the time between their millisecond stamps; for a --duration run, every "
    "operation, from the generator's start of operations to freon's deadline",
    "rate_source_freon_timestamps": "freon's millisecond log timestamps (start of the test "
    "to its summary)",
    "rate_source_host_wall_time": "the run's wall time on the host, JVM start included",
}


class _Log:
    """One pass over a freon log, collecting everything it says."""

    def __init__(self, text: str, source: str, *, scan: bool = True) -> None:
        self.source = source
        self.metrics: dict[str, Metric] = {}
        self._progress: list[tuple[float | None, int, int]] = []
        self.errors: list[tuple[int, str]] = []
        self.bare: list[tuple[int, str]] = []
        self.total = self.failures = self.success = self.expected = None
        self.start_ts = self.end_ts = None
        self.ops_ts: float | None = None  # when the generator said its operations begin
        self.precise_ts = False
        self.unit_errors: list[tuple[int, str]] = []  # units no conversion knows, by line
        self.failed_marker = 0
        self.last_line = 0
        self.summary_line = 0
        self._text = ""
        self._slow: dict[int, int] = {}  # start of a line read by _line -> progress before it
        self._ends: Ends | None = None
        if scan:
            self._scan(text)
        else:
            self._physical(text.split("\n"), 1, None, None)

    def _physical(self, lines, no: int, block: str | None, timer: str | None):
        """The reference reading: every physical line, and its ``\\r`` redraws, in order."""
        for physical in lines:
            for segment in physical.split("\r"):
                line = segment.rstrip()
                if not line.strip():
                    continue
                self.last_line = no
                block, timer = self._line(no, line, block, timer)
            no += 1
        return block, timer

    def _scan(self, text: str) -> None:
        """The same reading as :meth:`_physical`, at the speed of a few whole-text searches.

        Most of a long log is plain log4j lines that say nothing to the parser but Progress.
        Searches over the whole text find every other line (a line not in the plain form, or
        with a keyword other than Progress, or a ``\\r``); only those go through
        :meth:`_line`, with their own line numbers. The plain Progress lines are read when
        the series is asked for (:attr:`progress`): a run's metrics do not need them.
        tests/test_parser_properties.py checks that both readings agree on real logs, cut and
        damaged.
        """
        starts = {0}  # the first line: _ODD anchors on the newline before a line
        for needle in _RARE:
            at = text.find(needle)
            while at != -1:
                start = text.rfind("\n", 0, at) + 1
                starts.add(start)
                if needle == _OPS_BEGIN and self._says_ops_begin(text, start):
                    break  # the start of operations is read once: the later ones say nothing
                at = text.find(needle, at + 1)
        starts.update(text.rfind("\n", 0, m.start()) + 1 for m in _METRIC_HINT.finditer(text))
        starts.update(m.start() + 1 for m in _ODD.finditer(text))
        self._text = text
        block = timer = None
        no, counted, end = 1, 0, -1
        for start in sorted(starts):
            no += text.count("\n", counted, start)
            counted = start
            if start > end + 1:  # plain lines in between: the last is the last line so far
                block = timer = None
                self.last_line = no - 1
            end = text.find("\n", start)
            end = len(text) if end == -1 else end
            self._slow[start] = len(self._progress)
            block, timer = self._physical((text[start:end],), no, block, timer)
        if end < len(text):  # plain lines after the last one read: the last line is one
            self.last_line = no + text.count("\n", counted)

    @staticmethod
    def _says_ops_begin(text: str, start: int) -> bool:
        """Whether the line at ``start`` is a plain log4j line whose message says the
        operations begin, with a timestamp: :meth:`_line` takes :attr:`ops_ts` from the first
        such line, and the same words on a later plain line change nothing (any other keyword
        of theirs brings the line to :meth:`_line` by itself; their progress is read with the
        plain lines')."""
        plain = PLAIN_PREFIX_AT.match(text, start)
        if plain is None:
            return False
        end = text.find("\n", start)
        line = text[start : len(text) if end == -1 else end]
        return _OPS_BEGIN in line[plain.end() - start :] and log4j.timestamp(line) is not None

    @property
    def counts_seconds(self) -> bool:
        """A ``--duration`` run's progress lines count seconds ("3 out of 4"), not operations:
        their total is not the run's number of tests."""
        last = self.ends.last
        return last is not None and self.expected is not None and last[2] != self.expected

    @property
    def progress(self) -> list[tuple[float | None, int, int]]:
        """Progress as (timestamp or bar time, completed, total), in the log's order."""
        if self._text:
            self._progress = [entry for _, entry in self._forward(self._text)]
            self._text = ""
        return self._progress

    @property
    def ends(self) -> Ends:
        """What a run's rate needs of its progress (:class:`Ends`). After a whole-text scan
        the entries are read from both ends of the log until these are found: a long log's
        plain progress lines in between are never read."""
        if self._ends is None:
            if self._text:
                fwd, bwd = self._forward(self._text), self._backward(self._text)
            else:
                fwd = iter(enumerate(self._progress))
                bwd = reversed(list(enumerate(self._progress)))
            self._ends = Ends.find(fwd, bwd)
        return self._ends

    def _slow_entries(self, slow: list[tuple[int, int]], k: int) -> list[Progress]:
        """The progress entries of the k-th line read by _line (``slow``: its start and the
        number of entries before it, in the order of the text)."""
        hi = slow[k + 1][1] if k + 1 < len(slow) else len(self._progress)
        return self._progress[slow[k][1] : hi]

    def _forward(self, text: str) -> Iterator[tuple[Place, Progress]]:
        """Every progress entry in the log's order, with its place: those of the lines read
        by _line, with those of the plain lines between."""
        slow = sorted(self._slow.items())
        i = 0  # the next slow line
        stamps: dict[str, float | None] = {}
        last = -1
        for m in _PROGRESS.finditer(text):
            start = text.rfind("\n", 0, m.start()) + 1
            if start == last or start in self._slow:
                continue
            last = start
            entry = plain_entry(text, start, m, stamps)
            if entry is None:
                continue
            while i < len(slow) and slow[i][0] < start:  # the slow lines before this one
                for n, e in enumerate(self._slow_entries(slow, i)):
                    yield (slow[i][0], n), e
                i += 1
            yield (start, 0), entry
        for k in range(i, len(slow)):
            for n, e in enumerate(self._slow_entries(slow, k)):
                yield (slow[k][0], n), e

    def _backward(self, text: str) -> Iterator[tuple[Place, Progress]]:
        """The entries of :meth:`_forward`, with the same places, from the log's end."""
        slow = sorted(self._slow.items())
        k = len(slow) - 1  # the next slow line, going back
        stamps: dict[str, float | None] = {}
        pos = len(text)
        while True:
            at = text.rfind("Progress: ", 0, pos)
            start = text.rfind("\n", 0, at) + 1 if at != -1 else -1
            while k >= 0 and slow[k][0] > start:  # the slow lines after this one
                entries = self._slow_entries(slow, k)
                for n in range(len(entries) - 1, -1, -1):
                    yield (slow[k][0], n), entries[n]
                k -= 1
            if at == -1:
                return
            pos = start
            if start in self._slow:
                continue
            end = text.find("\n", start)
            m = _PROGRESS.search(text, start, len(text) if end == -1 else end)
            entry = plain_entry(text, start, m, stamps) if m else None
            if entry is not None:
                yield (start, 0), entry

    def _metric(self, name: str, value: float, unit: str) -> None:
        # NaN, infinity, or a time, rate or count below zero: not a measurement, like a
        # field that is not a number at all.
        if not math.isfinite(value) or (unit and value < 0):
            return
        self.metrics[name] = Metric(name, value, unit)

    def _line(self, no: int, line: str, block: str | None, timer: str | None):
        logged = _LOGGED.match(line)
        msg = logged.group("msg") if logged else line.strip()
        if logged and (lvl := _LEVEL.match(line)) and lvl.group(1) in ("ERROR", "FATAL"):
            self.errors.append((no, msg))
        if logged and not _KEYWORDS.search(msg):
            return None, None
        ts = log4j.timestamp(line) if logged else None
        if _OPS_BEGIN in msg and self.ops_ts is None:
            self.ops_ts = ts
            return None, None
        if m := _EXECUTING.search(msg):
            self.start_ts = ts
            self.precise_ts = bool(logged and re.match(r"^\S+ \d{2}:\d{2}:\d{2}[,.]\d", line))
            self.expected = self.expected or int(m.group(1))
        if m := _PROGRESS.search(msg):
            self._progress.append((ts, int(m.group(2)), int(m.group(3))))
            return None, None
        if m := _BAR.match(line):
            secs = int(m.group(4)) * 3600 + int(m.group(5)) * 60 + int(m.group(6))
            self._progress.append((float(secs), int(m.group(2)), int(m.group(3))))
            return block, timer
        if m := _METRIC.search(msg):
            self._units(no, self._logged_metric, m)
            return None, None
        if m := _TOTAL.search(msg):
            self.total = int(m.group(1))
            self.end_ts = ts
            self.summary_line = no
            return None, None
        if m := _FAILURES.search(msg):
            self.failures = int(m.group(1))
            return None, None
        if m := _SUCCESS.search(msg):
            self.success = int(m.group(1))
            return None, None
        if m := _EXPECTED.search(msg):
            self.expected = int(m.group(1))
            return None, None
        if _FAILED in msg:
            self.failed_marker = self.failed_marker or no
            return None, None
        if not logged:
            stripped = line.strip()
            if m := _BLOCK.match(stripped):
                return m.group(1), None
            if block and re.match(r"^[\w.-]+$", stripped) and "=" not in stripped:
                return block, stripped  # a metric's name inside a console block
            if block and timer and (m := _CONSOLE.match(stripped)):
                self._units(no, self._console_metric, block, timer, m)
                return block, timer
            if m := _INSTRUMENTED.match(stripped):
                self._metric(f"{m.group(1)}.{m.group(2)}", float(m.group(3)), "")
                return None, None
            if _EXCEPTION.match(stripped) and self.errors and self.errors[-1][0] >= no - 1:
                # The exception under an ERROR line says what went wrong: keep them together.
                first_no, first_msg = self.errors[-1]
                self.errors[-1] = (first_no, f"{first_msg}: {stripped}")
            elif (
                not stripped.startswith(("at ", "...", "Caused by"))
                and not re.match(r"^\d+/\d+/\d+, .*=+$", stripped)
                and not _JVM_LOG.match(stripped)
            ):
                self.bare.append((no, stripped))
        return None if logged else block, None if logged else timer

    def _units(self, no: int, read: Any, *args: Any) -> None:
        """Read one metric line; a unit no conversion knows is kept as an error of its line."""
        try:
            read(*args)
        except UnitError as e:
            self.unit_errors.append((no, str(e)))

    def _logged_metric(self, m: re.Match[str]) -> None:
        """A Dropwizard Slf4jReporter line. Only a TIMER's fields are durations: a HISTOGRAM's
        min, mean, ... are plain numbers (sizes, counts) and keep no unit."""
        kind, name = m.group("type"), m.group("name").strip()
        fields = dict(_FIELD.findall(m.group("fields")))
        values = {}  # the numbers, as printed: converted exactly from their decimal text
        for key, raw in fields.items():
            try:
                float(raw)
            except ValueError:
                continue
            values[key] = raw
        timed = kind == "TIMER" and DURATION_FIELDS & values.keys()
        if timed and "duration_unit" not in fields:
            raise UnitError(f"{kind} {name} names no duration_unit")
        if RATE_FIELDS & values.keys() and "rate_unit" not in fields:
            raise UnitError(f"{kind} {name} names no rate_unit")
        for key, raw in values.items():
            if key in DURATION_FIELDS and kind == "TIMER":
                seconds = to_seconds(raw, fields["duration_unit"].strip())
                self._metric(f"{name}.{key}", seconds, "s")
            elif key in RATE_FIELDS:
                per_second = to_per_second(raw, fields["rate_unit"].strip())
                self._metric(f"{name}.{key}", per_second, "1/s")
            elif key == "count":
                self._metric(f"{name}.count", float(raw), "count")
            else:
                self._metric(f"{name}.{key}", float(raw), "")

    def _console_metric(self, block: str, timer: str, m: re.Match[str]) -> None:
        """A line of ConsoleReporter's terminal form (``mean = 28.51 milliseconds``,
        ``mean rate = 105.75 calls/second``); in its Histograms block values have no unit."""
        label, raw, unit = m.group(1).strip(), m.group(2), m.group(3)
        value = float(raw)
        key = CONSOLE_NAMES.get(label.rstrip("=").strip() if label.endswith("<") else label)
        if key is None:
            key = re.sub(r"\W+", "_", label).strip("_")
        if key in RATE_FIELDS:
            self._metric(f"{timer}.{key}", to_per_second(raw, unit), "1/s")
        elif key in DURATION_FIELDS and block == "Timers":
            self._metric(f"{timer}.{key}", to_seconds(raw, unit), "s")
        elif unit:
            raise UnitError(f"unknown unit {unit!r} of {timer} {label}")
        elif key == "count":
            self._metric(f"{timer}.count", value, "count")
        else:
            self._metric(f"{timer}.{key}", value, "")


def _read(text: str, source: str) -> _Log:
    cut = text[text.rfind("\n") + 1 :]
    if cut.strip():
        # freon ends every line it prints: a last line without its end was cut, and its
        # number may be a prefix of the real one ("Successful executions: 227" of 2272).
        text = text[: len(text) - len(cut)]
        if not text.strip():
            line = 1 + text.count("\n")
            raise ParseError(source, "the log's one line is cut before its end", line)
    log = _Log(text, source)
    if log.last_line == 0:
        raise ParseError(source, "empty log: freon printed nothing")
    return log


def error_reason(texts: Mapping[str, str]) -> str | None:
    """Why a run failed: the first ERROR message, else freon's own failure line, else the
    first bare line it printed (e.g. ``dbParentDir == null``)."""
    for name, text in texts.items():
        log = _Log(text, name)
        if log.errors:
            no, msg = log.errors[0]
            return f"{name}:{no}: {msg}" + _out_of_files(msg, text, log)
        if log.failed_marker:
            return f"{name}:{log.failed_marker}: {_FAILED}"
        if log.bare:
            no, msg = log.bare[0]
            return f"{name}:{no}: {msg}"
    return None


def _out_of_files(msg: str, text: str, log: _Log) -> str:
    """What "Too many open files" means, said where a reader meets it. cmdw never finishes a
    block (no putBlock), and Ozone's FILE_PER_BLOCK chunk manager keeps a block's file open
    until it is finished or idle for 10 minutes: a run holds one file per block it wrote."""
    if "Too many open files" not in msg:
        return ""
    said = "; the tool ran out of open files (its `ulimit -n`)"
    per_block = re.search(r"chunksPerBlock=(\d+)", text)
    if msg.rstrip().endswith(".block (Too many open files)") and per_block:
        c = int(per_block.group(1))
        done = log.success or 0
        said += (
            f": cmdw -l FILE_PER_BLOCK keeps the file of every block it writes open until the "
            f"run ends, and {done} chunks at {c} a block (-c) held about {-(-done // c)} "
            "files open; give it more chunks a block (-c), fewer chunks, or a higher limit"
        )
    return said


def parse_cell(logs: Mapping[str, str], wall_time: float | None = None) -> list[Metric]:
    """Metrics of one run. ``rate`` is over the run's measured phase (:func:`window`) where the
    log gives one; otherwise over the whole run, from freon's own millisecond timestamps
    (start of the test to its summary) when the log has them, else from the cell's host-side
    clock: then its time can be long by up to a reporting interval (``rate_lag``)."""
    if len(logs) != 1:
        raise ParseError("<cell>", f"expected one freon log, got {len(logs)}")
    source, text = next(iter(logs.items()))
    log = _read(text, source)
    if log.total is None or log.success is None:
        where = "progress lines but no summary" if log.progress else "no freon summary"
        raise ParseError(
            source,
            f"log ends before freon's summary ({where}: 'Total execution "
            "time', 'Successful executions'): the run was killed or the log cut",
            log.last_line,
        )
    # Libraries log ERRORs that do not fail a run (a hostname that does not resolve): the
    # outcome is freon's own count; an ERROR only explains a failure.
    # A --duration run stops at its deadline, not at its --number-of-tests: its progress
    # counts seconds ("3 out of 4"), and fewer operations than that number is its outcome.
    timed = log.counts_seconds
    short = log.expected is not None and log.success < log.expected and not timed
    if log.failed_marker or (log.failures or 0) > 0 or short:
        reason = error_reason({source: text}) or f"{log.failures} failures"
        if short:
            reason = f"executed {log.success} of {log.expected} operations; {reason}"
        raise ParseError(
            source,
            f"freon reported failures: {reason}",
            log.errors[0][0] if log.errors else log.failed_marker or None,
        )
    if log.unit_errors:
        no, why = log.unit_errors[0]
        raise ParseError(source, f"metric line in a unit perfpost cannot convert: {why}", no)
    if timed and log.success == 0:
        # Its set-up outlasted its --duration: nothing was measured, and 0 ops/s is no rate.
        raise ParseError(
            source,
            "freon did no operation before its --duration ran out (its set-up took the whole "
            "time): nothing was measured; give the run a longer duration",
        )
    out = list(log.metrics.values())
    out += [
        Metric("log_errors", float(len(log.errors)), "count"),
        Metric("total_execution_time", float(log.total), "s"),
        Metric("failures", float(log.failures or 0), "count"),
        Metric("successful_executions", float(log.success), "count"),
        Metric("operations", float(log.success), "count"),
    ]
    elapsed, clock = None, None
    if log.precise_ts and log.start_ts is not None and log.end_ts is not None:
        elapsed, clock = log.end_ts - log.start_ts, "rate_source_freon_timestamps"
    elif wall_time:
        elapsed, clock = wall_time, "rate_source_host_wall_time"
    if elapsed and elapsed > 0:
        out.append(Metric("elapsed", elapsed, "s"))
    phase = window(log)
    if phase is not None:
        rate = phase.rate
        out += [
            Metric("rate", rate, "1/s"),
            Metric("rate_time", phase.seconds, "s"),
            Metric("rate_operations", float(phase.operations), "count"),
            Metric("rate_lag", 0.0, "s"),
            Metric("startup", phase.start, "s"),
            Metric("rate_source_progress_window", 1.0, "count"),
        ]
    elif elapsed and elapsed > 0:
        rate = log.success / elapsed
        out += [
            Metric("rate", rate, "1/s"),
            Metric("rate_time", elapsed, "s"),
            Metric("rate_operations", float(log.success), "count"),
            Metric("rate_lag", REPORT_INTERVAL, "s"),
            Metric(clock, 1.0, "count"),
        ]
    else:
        return out
    if rate > 0:
        # The time the run's operations take at that rate: what a sync after the run is
        # added to, so the sync-added rate is over the same phase as the rate.
        out.append(Metric("operations_time", log.success / rate, "s"))
    return out


def parse_series(logs: Mapping[str, str]) -> list[dict[str, float | None]]:
    """The progress lines as a time series: seconds since start, completed, total, rate."""
    rows: list[dict[str, float]] = []
    for source, text in logs.items():
        log = _Log(text, source)
        if log.counts_seconds:
            continue  # "3 out of 4" are seconds: no operations' rate over time
        t0 = (
            log.start_ts
            if log.start_ts is not None
            else next((t for t, _, _ in log.progress if t is not None), None)
        )
        prev = None
        for t, done, total in log.progress:
            if t is None:
                continue
            elapsed = t - t0 if t0 is not None and t > 1e6 else t  # log stamps vs bar "Time:"
            rate = None
            if prev is not None and elapsed > prev[0]:
                rate = (done - prev[1]) / (elapsed - prev[0])
            at = t if t > 1e6 else None  # the log's own clock, epoch seconds
            rows.append({"t": elapsed, "completed": done, "total": total, "rate": rate, "at": at})
            prev = (elapsed, done)
    return rows


def parse_text(text: str, source: str) -> list[Metric]:
    return parse_cell({source: text})
