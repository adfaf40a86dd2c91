"""Properties every log parser keeps, on any text: dd, freon, teragen and the ResourceManager's
application records. Seeds are the real logs of tests/data/*/capture.sh.

A parser reads a result or raises ParseError naming the log (and a line it is about); it
never crashes, and a log cut short or with a damaged number never yields a number the run
did not print, NaN, infinity, or a negative time, amount or count.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perfpost.errors import ParseError
from perfpost.tools import dd, freon, teragen
from perfpost.tools.freon import parser as freon_parser
from perfpost.tools.teragen import yarnapp

DATA = Path(__file__).parent / "data"
SOURCE = "raw/run 3/the.log"
WALL = 7.25  # the host's clock for a cell, for the metrics that need one


def _names(*patterns: str) -> tuple[str, ...]:
    return tuple(sorted(str(p.relative_to(DATA)) for pat in patterns for p in DATA.glob(pat)))


REAL = {
    "dd": _names("dd/*.log"),
    "freon": _names("freon/*.log"),
    "teragen": _names("teragen/*.log", "yarn/*.log"),
    "yarnapp": _names("yarn/*.json"),
}
TOOLS = tuple(REAL)
# Bytes, decoded as the runner does: universal newlines would turn "\r" redraws into "\n".
TEXTS = {rel: (DATA / rel).read_bytes().decode() for rels in REAL.values() for rel in rels}
LINES = sorted({line for text in TEXTS.values() for line in re.split(r"\r\n|\r|\n", text)})

PARSE_TEXT: dict[str, Callable[[str, str], object]] = {
    "dd": dd.parse_text,
    "freon": freon.parse_text,
    "teragen": teragen.parse_text,
    "yarnapp": yarnapp.parse_text,
}
# With the host's clock too, so the metrics derived from it (rate, throughput) are checked.
PARSE_CELL: dict[str, Callable[[str], object]] = {
    "dd": lambda text: dd.parse_cell({SOURCE: text}, wall_time=WALL),
    "freon": lambda text: freon.parse_cell({SOURCE: text}, wall_time=WALL),
    "teragen": lambda text: teragen.parse_cell({SOURCE: text}, wall_time=WALL),
    "yarnapp": lambda text: yarnapp.parse_text(text, SOURCE),
}


def _yarn_summary(text: str) -> None:
    try:
        yarnapp.summary(text, SOURCE)
    except ParseError as e:
        failed = e.source
    else:
        return
    assert failed == SOURCE


# The other readers of a log, which their callers (the runner, `perfpost parse`) do not guard
# with an except: whatever the text, they answer.
SIDE_READERS: dict[str, tuple[Callable[[str], object], ...]] = {
    "dd": (lambda t: dd.error_reason({SOURCE: t}),),
    "freon": (lambda t: freon.error_reason({SOURCE: t}), lambda t: freon.parse_series({SOURCE: t})),
    "teragen": (
        lambda t: teragen.error_reason({SOURCE: t}),
        lambda t: teragen.summary(t, SOURCE),
        lambda t: teragen.fetches({"resourcemanager": "http://rm:8088"}, {SOURCE: t}),
    ),
    "yarnapp": (yarnapp.is_final, _yarn_summary),
}

NUMBER = re.compile(r"\d+(?:[.,]\d+)?(?:[eE][-+]?\d+)?")
LONG = "9" * 4400  # more digits than int() reads from a string
JUNK = ("NaN", "nan", "-", "-1", "-0.5", "1e999", "Infinity", "inf", "", "x", "0", "00", "99")
JUNK += ("1.2.3", LONG)


def max_line(text: str) -> int:
    return max(len(text.splitlines()), text.count("\n") + 1)


def outcome(parse: Callable[..., object], text: str, *args) -> dict | ParseError:
    """name -> (value, unit) of what ``parse`` read, or its ParseError, checked to name the log
    and a line the log has. Any other exception fails the test."""
    try:
        got = parse(text, *args)
    except ParseError as e:
        error = e
    else:
        return {m.name: (m.value, m.unit) for m in got}
    assert error.source == SOURCE
    assert str(error).startswith(f"{SOURCE}:")
    assert error.line is None or 1 <= error.line <= max_line(text), error.line
    return error


def check_all_readers(tool: str, text: str) -> dict | ParseError:
    got = outcome(PARSE_TEXT[tool], text, SOURCE)
    for read in SIDE_READERS[tool]:
        read(text)
    return got


def assert_amounts(got: dict) -> None:
    """Finite values, and none below zero where there is a unit (times, bytes, counts, rates)."""
    for name, (value, unit) in got.items():
        assert math.isfinite(value), (name, value)
        if unit:
            assert value >= 0, (name, value, unit)


def garble(text: str, draw) -> str:
    """``text`` with one number (a late one half the time: results come last) made junk."""
    spans = [m.span() for m in NUMBER.finditer(text)]
    if not spans:
        return text
    last = len(spans) - 1
    i = draw(st.one_of(st.integers(max(0, last - 40), last), st.integers(0, last)))
    a, b = spans[i]
    return text[:a] + draw(st.sampled_from(JUNK)) + text[b:]


EDIT_CHARS = "0123456789 .,-+eEiBkMG=:()|%/\t"


@st.composite
def damaged_logs(draw) -> str:
    """A real log of any tool with lines dropped, repeated, or taken from other tools' logs, or
    damaged a character or a number at a time; joined with any line ending."""
    lines = re.split(r"\r\n|\r|\n", TEXTS[draw(st.sampled_from(sorted(TEXTS)))])
    for _ in range(draw(st.integers(1, 6))):
        i = draw(st.integers(0, len(lines) - 1))
        line = lines[i]
        op = draw(st.sampled_from(("drop", "repeat", "foreign", "delete", "insert", "number")))
        if op == "drop":
            del lines[i]
        elif op == "repeat":
            lines.insert(i, line)
        elif op == "foreign":
            lines.insert(i, draw(st.sampled_from(LINES)))
        elif op == "number":
            lines[i] = garble(line, draw)
        elif line:
            j = draw(st.integers(0, len(line) - 1))
            if op == "insert":
                lines[i] = line[:j] + draw(st.sampled_from(EDIT_CHARS)) + line[j:]
            else:
                lines[i] = line[:j] + line[j + 1 :]
        if not lines:
            lines = [""]
    end = draw(st.sampled_from(("\n", "\r\n", "\r")))
    return end.join(lines) + draw(st.sampled_from(("", end)))


garbage = st.one_of(
    st.binary(max_size=500).map(lambda b: b.decode("utf-8", errors="replace")),
    st.binary(max_size=500).map(lambda b: b.decode("latin-1")),
    damaged_logs(),
)

FAST = settings(max_examples=150, deadline=None, derandomize=True, database=None)
SLOW_DATA = [HealthCheck.too_slow, HealthCheck.data_too_large]


# ---------------------------------------------------------------------------- 1. any text


@pytest.mark.parametrize("tool", TOOLS)
@settings(FAST, max_examples=400, suppress_health_check=SLOW_DATA)
@given(text=garbage)
def test_any_text_parses_or_is_a_parse_error_naming_the_log(tool, text):
    got = check_all_readers(tool, text)
    if not isinstance(got, ParseError):
        assert_amounts(got)


HOSTILE = {
    "nul bytes": "\x00" * 64,
    "redraws only": "\r" * 500 + "x",
    "deep json": "[" * 100_000,
    "deep object": '{"app":' * 50_000,
    "long number": LONG,
    "long numbers in a log's shape": "\n".join(
        [
            f"{LONG}+0 records in",
            f"{LONG}+0 records out",
            f"{LONG} bytes copied, 1 s, 1 kB/s",
            f"Total execution time (sec): {LONG}",
            f"Successful executions: {LONG}",
            f"x INFO mapreduce.Job: Counters: {LONG}",
        ]
    ),
    "impossible dates": "\n".join(
        f"{d} 10:00:00,000 [main] INFO freon.BaseFreonGenerator: Executing test with prefix p "
        f"and number-of-tests 5\n{d} 10:00:01,000 [main] INFO mapreduce.Job: Running job: "
        "job_1_1"
        for d in ("2026-13-40", "0000-01-01", "0001-01-01", "9999-12-31")
    ),
    "dd rate in no unit": "1+0 records in\n1+0 records out\n1 byte copied, 1 s, 1 iB/s\n",
    "dd rate in kiB": "1+0 records in\n1+0 records out\n1 byte copied, 1 s, 1 kiB/s\n",
    "console value 1.2.3": "-- Timers --\nchunk-write\n  min = 1.2.3 milliseconds\n",
    "remote exception not an object": '{"RemoteException": "no"}',
    "remote exception a list": '{"RemoteException": [1]}',
}


@pytest.mark.parametrize("tool", TOOLS)
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_text_is_a_parse_error_or_a_result_never_a_crash(tool, name):
    got = check_all_readers(tool, HOSTILE[name])
    if not isinstance(got, ParseError):
        assert_amounts(got)


# ---------------------------------------------------------------------------- 2. no log at all


@pytest.mark.parametrize("tool", TOOLS)
@pytest.mark.parametrize("text", ["", "\n", "  \t\r\n\r\n", "\r\r\r", "\n\n\n \n"])
def test_empty_and_blank_logs_are_errors_naming_the_log(tool, text):
    got = check_all_readers(tool, text)
    assert isinstance(got, ParseError)
    assert got.line is None  # nothing in it to point at


FOREIGN = [(tool, rel) for tool in TOOLS for other in TOOLS if other != tool for rel in REAL[other]]


@pytest.mark.parametrize(("tool", "rel"), FOREIGN)
def test_another_tools_log_is_an_error_naming_the_log_and_a_line(tool, rel):
    got = check_all_readers(tool, TEXTS[rel])
    assert isinstance(got, ParseError), got
    assert got.line is not None


# ---------------------------------------------------------------------------- 3. cut logs


@pytest.mark.parametrize("tool", TOOLS)
@settings(FAST, max_examples=300)
@given(data=st.data())
def test_a_cut_log_is_refused_or_read_to_the_whole_logs_numbers(tool, data):
    rel = data.draw(st.sampled_from(REAL[tool]))
    text = TEXTS[rel]
    # Dense near the end, where the results are; anywhere else too.
    back = data.draw(st.one_of(st.integers(0, 160), st.integers(0, len(text))))
    full = outcome(PARSE_CELL[tool], text)
    got = outcome(PARSE_CELL[tool], text[: len(text) - back])
    if isinstance(got, ParseError):
        return
    assert not isinstance(full, ParseError), "a cut turned a failed run into a result"
    assert got == full  # every number the whole log's, none lost, none made up


# ---------------------------------------------------------------------------- 4. damaged numbers


@pytest.mark.parametrize("tool", TOOLS)
@settings(FAST, max_examples=400, suppress_health_check=SLOW_DATA)
@given(data=st.data())
def test_a_damaged_number_is_refused_or_read_as_a_finite_amount(tool, data):
    text = garble(TEXTS[data.draw(st.sampled_from(REAL[tool]))], data.draw)
    got = outcome(PARSE_CELL[tool], text)
    for read in SIDE_READERS[tool]:
        read(text)
    if not isinstance(got, ParseError):
        assert_amounts(got)


# ---------------------------------------------------------------------------- 5. freon's scan

# freon reads a long log with whole-text searches and sends only the lines they pick out to
# its line-by-line reading (the reference). Both must read every text the same way.
SCAN_PIECES = (
    "\n", "\r", " ", "  ", "\t", "\x1c", "\x85", "\xa0", "\u3000", "é", "1", ":", "[", "]",
    " - ", ": ", "ERROR", "FATAL", "INFO", "WARN", "DEBUG", "Progress: ", " % (", " out of ",
    "Progress: 5 % (1 out of 2)", "Progress: 1 % (99999999999999999999 out of 2)",
    "2026-11-22 05:04:45,644 ", "2026-11-22T05:04:45.6 ", "2026-11-22 05:04:45 [t] INFO a:1: ",
    "type=TIMER, name=x, count=3", "Executing test with prefix a and number-of-tests 5",
    "Total execution time (sec): 3", "Failures: 1", "Successful executions: 4",
    "One or more freon test is failed.", "-- Timers ---", "count = 5", "java.io.IOException: x",
    "Running chunk write test", "2026-11-22 05:04:46,056 [main] INFO a: Running chunk write test",
)  # fmt: skip
SCAN_LINES = {
    "iso date": "2026-11-22T05:04:46,645 [t] INFO freon.ProgressBar: Progress: 7 % (7 out of 9)",
    "no thread": "2026-11-22 05:04:46,645 INFO freon.ProgressBar: Progress: 7 % (7 out of 9)",
    "padded level": "2026-11-22 05:04:46,645 [t] INFO  p.ProgressBar - Progress: 7 % (7 out of 9)",
    "error level": "2026-11-22 05:04:46,645 [t] ERROR p.Bar: Progress: 7 % (7 out of 9)",
    "logger named Progress": "2026-11-22 05:04:46,645 [t] INFO Progress: 7 % (7 out of 9)",
    "in the thread": "2026-11-22 05:04:46,645 [Progress: 1 % (1 out of 9)] INFO a: b",
    "later in the message": "2026-11-22 05:04:46,645 [t] INFO a: at Progress: 7 % (7 out of 9)",
    "twice": "2026-11-22 05:04:46,645 [t] INFO a: Progress: 1 % (1 out of 9) Progress: 2 % (2 "
    "out of 9)",
    "blank message": "2026-11-22 05:04:46,645 [t] INFO a:    ",
    "error under a level in the message": "2026-11-22 05:04:46,645 INFO ERROR - x",
    "redrawn": "2026-11-22 05:04:46,645 [t] INFO a: Progress: 1 % (1 out of 9)\rx: 1",
    "trailing space": "2026-11-22 05:04:46,645 [t] INFO a: Progress: 7 % (7 out of 9) \t\x1c",
    # The start of operations is read from its first plain line: before, after and beside it.
    "operations begin": "2026-11-22 05:04:46,056 [main] INFO a: Running chunk write test: t=2",
    "operations begin, no date": "Running chunk write test: threads=2",
    "operations begin, no such date": "2026-13-22 05:04:46,0 [m] INFO a: Running chunk write test",
    "operations begin in the thread": "2026-11-22 05:04:46,0 [Running chunk write test] INFO a: b",
    "operations begin at an error": "2026-11-22 05:04:46,056 [m] ERROR a: Running chunk write test",
    "operations begin with progress": "2026-11-22 05:04:46,645 [t] INFO a: Running chunk write test"
    " Progress: 7 % (7 out of 9)",
}


@st.composite
def edited_freon_logs(draw) -> str:
    """A real freon log with pieces of log lines written over it anywhere, maybe cut."""
    text = TEXTS[draw(st.sampled_from(REAL["freon"]))]
    for _ in range(draw(st.integers(0, 6))):
        i = draw(st.integers(0, len(text)))
        j = min(len(text), i + draw(st.integers(0, 8)))
        text = text[:i] + draw(st.sampled_from(SCAN_PIECES)) + text[j:]
    return text[: draw(st.integers(0, len(text)))] if draw(st.booleans()) else text


def freon_reading(text: str, scan: bool) -> dict:
    log = freon_parser._Log(text, SOURCE, scan=scan)
    # First what a run's rate needs of the progress, which a scan reads from the log's ends
    # alone; then the whole progress, from which the same must follow.
    ends, window, timed = log.ends, freon_parser.window(log), log.counts_seconds
    state = {k: v for k, v in vars(log).items() if not k.startswith("_")}
    every = list(enumerate(log.progress))
    assert freon_parser.Ends.find(iter(every), reversed(every)) == ends
    return {**state, "progress": log.progress, "ends": ends, "window": window, "timed": timed}


@settings(FAST, max_examples=1500, suppress_health_check=SLOW_DATA)
@given(text=st.one_of(edited_freon_logs(), damaged_logs(), garbage))
def test_freon_scan_reads_any_text_as_the_line_by_line_reading(text):
    assert freon_reading(text, scan=True) == freon_reading(text, scan=False)


@pytest.mark.parametrize("name", sorted(SCAN_LINES))
@pytest.mark.parametrize("rel", REAL["freon"])
def test_freon_scan_reads_odd_lines_inside_a_real_log_as_the_reference(name, rel):
    lines = TEXTS[rel].split("\n")
    for at in (0, 1, len(lines) // 2, len(lines) - 1, len(lines)):
        text = "\n".join([*lines[:at], SCAN_LINES[name], *lines[at:]])
        scanned = freon_reading(text, scan=True)
        assert scanned == freon_reading(text, scan=False), (name, at)
