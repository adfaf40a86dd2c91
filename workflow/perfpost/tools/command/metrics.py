"""A command's metrics as the experiment declares them, and reading them from its output.

Each declaration names one way to find the number::

    metrics:
      throughput: {regex: 'copied, [\\d.]+ s, (?P<value>[\\d.]+) MB/s', unit: MB/s}
      received:   {json: end.sum_received.bits_per_second, unit: bit/s}
      write_ms:   {csv: write_ms, file: "{work}/times.csv", pick: mean, unit: ms}
      syscalls:   {regex: '^(?P<value>\\d+)\\s+total', unit: count, better: lower}

``from`` the output of the command (its stdout and stderr, one log) unless a ``file`` the
command wrote is named; ``pick`` which of several matches or rows (the last by default: a
tool's summary comes after its progress); ``unit`` one a reader writes (MB/s, ms, GiB),
stored in perfpost's base units (B/s, s, B); ``better`` where the unit does not say it.
"""

from __future__ import annotations

import csv
import io
import json
import re
import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from perfpost.errors import ConfigError, ParseError
from perfpost.tools.base import Metric
from perfpost.units import HIGHER_IS_BETTER, HUMAN_UNITS, SECONDS_PER

LOG = "command.log"

# A unit as a user writes it -> (perfpost's base unit, the factor to it).
_BITS = (("bit/s", 1), ("kbit/s", 10**3), ("Mbit/s", 10**6), ("Gbit/s", 10**9))
_TIMES = {"s": "second", "ms": "millisecond", "us": "microsecond", "ns": "nanosecond",
          "min": "minute"}  # fmt: skip
UNITS: dict[str, tuple[str, Fraction]] = {
    # Sizes and rates as coreutils prints them (kB, MiB, GB/s), bits a second (iperf3's).
    **{u: ("B", Fraction(f)) for u, f in HUMAN_UNITS.items()},
    **{f"{u}/s": ("B/s", Fraction(f)) for u, f in HUMAN_UNITS.items()},
    **{u: ("B/s", Fraction(f, 8)) for u, f in _BITS},
    **{u: ("s", SECONDS_PER[word]) for u, word in _TIMES.items()},
    **{u: ("1/s", Fraction(1)) for u in ("1/s", "ops/s", "op/s", "events/s", "calls/s")},
    "count": ("count", Fraction(1)),
    "": ("", Fraction(1)),
}
PICKS = ("last", "first", "sum", "mean", "min", "max")

METRIC_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "regex": {
            "description": "A regular expression (Python's) searched line by line; the number "
            "is its group named value (or named as the metric, or its only group).",
            "type": "string",
            "minLength": 1,
        },
        "json": {
            "description": "A path into the JSON the output holds (end.sum_received."
            "bits_per_second; jobs[0].write.iops).",
            "type": "string",
            "minLength": 1,
        },
        "csv": {"description": "A column of a CSV with a header row.", "type": "string"},
        "file": {
            "description": "A file the command wrote to read it from ({work}/out.json), "
            "instead of its output.",
            "type": "string",
            "minLength": 1,
        },
        "pick": {
            "description": "Of several matches or rows: last (the default), first, sum, mean, "
            "min or max.",
            "enum": list(PICKS),
            "default": "last",
        },
        "unit": {
            "description": "The number's unit as the command prints it: B/s, kB/s, MB/s, "
            "GB/s, KiB/s, MiB/s, GiB/s (and on to EB/s, EiB/s), bit/s, kbit/s, Mbit/s, "
            "Gbit/s, B, kB, MB, GB, KiB, MiB, GiB (and on to EB, EiB), s, ms, us, ns, min, "
            "1/s (ops/s, events/s, calls/s), count, or none.",
            "enum": list(UNITS),
            "default": "",
        },
        "absent": {
            "description": "The value when nothing matches, where absence means a value (strace "
            "leaves out calls never made: 0); without it, a metric not found fails the run.",
            "type": "number",
        },
        "better": {
            "description": "Whether a higher or a lower value is better (a rate's and a "
            "time's unit say it; a count's does not).",
            "enum": ["higher", "lower"],
        },
    },
}


@dataclass(frozen=True)
class Declared:
    """One metric's declaration."""

    name: str
    how: str  # regex, json or csv
    what: str  # the pattern, path or column
    file: str | None
    pick: str
    unit: str
    higher: bool | None
    absent: float | None = None

    def base(self) -> tuple[str, Fraction]:
        return UNITS[self.unit]

    def said(self) -> str:
        """Where the number comes from, for the post's method."""
        where = f"the file `{self.file}`" if self.file else "its output"
        of = {
            "regex": f"the regular expression `{self.what}`",
            "json": f"the JSON path `{self.what}`",
            "csv": f"the CSV column `{self.what}`",
        }[self.how]
        many = "" if self.pick == "last" and self.how == "json" else f" ({self.pick} match)"
        if self.how == "csv":
            many = f" ({self.pick} row)"
        absent = "" if self.absent is None else f", {self.absent:g} where it is absent"
        return f"`{self.name}` ({self.unit or 'no unit'}) by {of} in {where}{many}{absent}"


def declared(params: Mapping[str, Any]) -> dict[str, Declared]:
    """The experiment's declarations, by metric name, in the order given."""
    out = {}
    for name, d in (params.get("metrics") or {}).items():
        how = next(k for k in ("regex", "json", "csv") if k in d)
        better = d.get("better")
        unit = str(d.get("unit", ""))
        higher = (better == "higher") if better else HIGHER_IS_BETTER.get(UNITS[unit][0])
        out[name] = Declared(
            name, how, str(d[how]), d.get("file"), d.get("pick", "last"), unit, higher,
            d.get("absent"),
        )  # fmt: skip
    return out


def _group(pattern: re.Pattern[str], name: str) -> str | int:
    if "value" in pattern.groupindex:
        return "value"
    if name in pattern.groupindex:
        return name
    return 1


def check_metrics(metrics: Mapping[str, Any], where: str) -> None:
    """Each declaration names one way to find its number, and that way can work."""
    for name, d in metrics.items():
        place = f"{where}.{name}"
        if name == "wall_time":
            raise ConfigError(place, "wall_time is every run's own: name the metric otherwise")
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", name):
            raise ConfigError(place, "a metric's name is a word: letters, digits and _")
        ways = [k for k in ("regex", "json", "csv") if k in d]
        if len(ways) != 1:
            raise ConfigError(place, "give one of regex, json or csv")
        if "regex" in d:
            try:
                pattern = re.compile(d["regex"])
            except re.error as e:
                raise ConfigError(f"{place}.regex", f"not a regular expression: {e}") from None
            if pattern.groups == 0:
                raise ConfigError(
                    f"{place}.regex", "has no group: put the number in (?P<value>...)"
                )
            if pattern.groups > 1 and _group(pattern, name) == 1:
                raise ConfigError(
                    f"{place}.regex",
                    f"has {pattern.groups} groups: name the number's (?P<value>...)",
                )
        if "json" in d:
            try:
                _path(d["json"])
            except ValueError as e:
                raise ConfigError(f"{place}.json", str(e)) from None
        if d.get("better") and UNITS[str(d.get("unit", ""))][0] in HIGHER_IS_BETTER:
            base = UNITS[str(d.get("unit", ""))][0]
            says = "higher" if HIGHER_IS_BETTER[base] else "lower"
            if d["better"] != says:
                raise ConfigError(
                    f"{place}.better", f"a {d.get('unit')} value is better {says}, as its unit says"
                )


def sources(params: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The files the declarations read, each once, by the name its copy gets beside the
    log: (name, path as declared)."""
    paths = dict.fromkeys(d.file for d in declared(params).values() if d.file)
    return [(_file_name(i, p), p) for i, p in enumerate(paths, start=1)]


def _file_name(i: int, path: str) -> str:
    base = re.sub(r"[^A-Za-z0-9_.-]", "_", path.rstrip("/").rsplit("/", 1)[-1]) or "file"
    return f"output-{i}-{base}"


_STEP = re.compile(r"\.?([^.\[\]]+)|\[(-?\d+)\]")


def _path(text: str) -> list[str | int]:
    steps: list[str | int] = []
    at = 0
    while at < len(text):
        m = _STEP.match(text, at)
        if not m or m.end() == at:
            raise ValueError(f"cannot read the path {text!r} at {text[at:]!r}")
        steps.append(m[1] if m[1] is not None else int(m[2]))
        at = m.end()
    return steps


def _number(text: str, d: Declared, source: str) -> float:
    try:
        return float(text.replace(",", "")) if isinstance(text, str) else float(text)
    except (TypeError, ValueError):
        raise ParseError(source, f"metric {d.name}: {text!r} is not a number") from None


def _pick(values: list[float], how: str) -> float:
    if how == "first":
        return values[0]
    if how == "sum":
        return sum(values)
    if how == "mean":
        return statistics.fmean(values)
    if how == "min":
        return min(values)
    if how == "max":
        return max(values)
    return values[-1]


def _tail(text: str, n: int = 5) -> str:
    lines = text.strip().splitlines()[-n:]
    return " | ".join(lines) if lines else "(no output)"


def _json_of(text: str, source: str, name: str) -> Any:
    """The JSON document in ``text``: the whole of it, else the first one that starts a line
    (a tool's stderr lines around it)."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    decoder = json.JSONDecoder()
    for m in re.finditer(r"(?m)^[ \t]*[\[{]", text):
        try:
            return decoder.raw_decode(text, m.end() - 1)[0]
        except ValueError:
            continue
    raise ParseError(source, f"metric {name}: no JSON document in it; it ends: {_tail(text)}")


def _read(d: Declared, text: str, source: str) -> float:
    """One declared metric's value in its declared unit."""
    if d.how == "regex":
        pattern = re.compile(d.what)
        group = _group(pattern, d.name)
        found = [m[group] for line in text.splitlines() if (m := pattern.search(line))]
        found = [f for f in found if f is not None]
        if not found and d.absent is not None:
            return float(d.absent)
        if not found:
            raise ParseError(
                source, f"metric {d.name}: /{d.what}/ matched no line; it ends: {_tail(text)}"
            )
        return _pick([_number(f, d, source) for f in found], d.pick)
    if d.how == "json":
        value: Any = _json_of(text, source, d.name)
        for step in _path(d.what):
            try:
                value = value[step]
            except (KeyError, IndexError, TypeError):
                raise ParseError(
                    source, f"metric {d.name}: the JSON has no {d.what} (stopped at {step!r})"
                ) from None
        if isinstance(value, list):
            return _pick([_number(v, d, source) for v in value], d.pick)
        return _number(value, d, source)
    rows = list(csv.DictReader(io.StringIO(text)))
    if not rows or d.what not in rows[0]:
        have = ", ".join(rows[0]) if rows else "no rows"
        raise ParseError(source, f"metric {d.name}: no CSV column {d.what!r} (columns: {have})")
    cells = [r[d.what] for r in rows if (r.get(d.what) or "").strip()]
    if not cells:
        raise ParseError(source, f"metric {d.name}: the column {d.what!r} is empty")
    return _pick([_number(c, d, source) for c in cells], d.pick)


def parse_run(
    params: Mapping[str, Any], logs: Mapping[str, str], wall_time: float | None = None
) -> list[Metric]:
    """Every declared metric of one run, in perfpost's base units; one not found is an error
    naming it, its pattern and the output's end."""
    files = {path: name for name, path in sources(params)}
    out = []
    for d in declared(params).values():
        source = files[d.file] if d.file else LOG
        if source not in logs:
            raise ParseError(source, f"metric {d.name}: the command wrote no {d.file or LOG}")
        base, factor = d.base()
        value = _read(d, logs[source], source)
        out.append(Metric(d.name, float(Fraction(value) * factor), base))
    return out


def parse_cell(logs: Mapping[str, str], wall_time: float | None = None) -> list[Metric]:
    """Without its declarations a command's log says nothing perfpost can read: no metric
    (the runner records the wall time)."""
    return []


def parse_text(text: str, source: str) -> list[Metric]:
    return []
