"""Sizes, rates and durations: parsing what users and tools write, formatting what readers expect.

Config sizes follow dd's own conventions (``K``/``k`` = 1024, ``kB`` = 1000, ``M`` = 1024**2,
``MB`` = 1000**2, ...), so a ``bs: 10k`` means the same to perfpost as it does to ``dd``.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

_BINARY = {"": 1, "c": 1, "w": 2, "b": 512, "k": 1024, "K": 1024, "KiB": 1024}
_POWERS = "KMGTPE"
for _i, _p in enumerate(_POWERS, start=1):
    _BINARY[_p] = 1024**_i
    _BINARY[_p + "iB"] = 1024**_i
    _BINARY[_p + "B"] = 1000**_i
_BINARY["kB"] = 1000

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$")


class UnitError(ValueError):
    """A size or rate that cannot be read."""


# Every unit a tidy value is stored in: tidy.csv's ``unit`` column holds only these, and
# tidy.schema.json and docs/outputs.md list them from here. No prefixes (no ms, MB, MB*s): the
# post chooses the prefix a reader sees (:func:`seconds_scale`, :func:`rate_scale`).
BASE_UNITS: dict[str, str] = {
    "B": "bytes",
    "s": "seconds",
    "B/s": "bytes per second",
    "1/s": "operations or events per second",
    "count": "a number of things (operations, records, tasks, runs)",
    "B*s": "byte-seconds: memory held times the seconds it was held (YARN's MB-seconds x 2^20)",
    "vcore*s": "vcore-seconds: virtual cores held times the seconds they were held",
    "": "none: a number the tool printed without a unit (a gauge, a histogram, a field of "
    "an instrumented client)",
}

# Whether more is better, by unit: a rate's more, a time's less; the others say nothing.
HIGHER_IS_BETTER = {"B/s": True, "1/s": True, "s": False, "ms": False}

# Bytes in YARN's memory "MB", which is a MiB (ResourceInformation.MEMORY_MB has units "Mi";
# a container of 1024 MB has 2^30 bytes): MB-seconds times this are byte-seconds.
YARN_MB = 2**20

# Seconds in one java.util.concurrent.TimeUnit, by the word Dropwizard's reporters print for
# it: plural for durations (``duration_unit=milliseconds``, ``mean = 28.51 milliseconds``),
# singular in rates (``rate_unit=events/second``, ``calls/second``). Exact fractions, so a
# conversion rounds once.
SECONDS_PER: dict[str, Fraction] = {
    "nanosecond": Fraction(1, 10**9),
    "microsecond": Fraction(1, 10**6),
    "millisecond": Fraction(1, 10**3),
    "second": Fraction(1),
    "minute": Fraction(60),
    "hour": Fraction(3600),
    "day": Fraction(86400),
}
# The things a Dropwizard rate counts: a timer's calls, a meter's events.
RATE_NOUNS = ("events", "calls")


def _time_unit(word: str) -> Fraction:
    key = word[:-1] if word.endswith("s") and word[:-1] in SECONDS_PER else word
    if key not in SECONDS_PER:
        known = ", ".join(f"{w}s" for w in SECONDS_PER)
        raise UnitError(f"unknown time unit {word!r} (known: {known})")
    return SECONDS_PER[key]


def _times(value: float | str, factor: Fraction) -> float:
    """``value`` times ``factor``, rounded once: the decimal text as the tool printed it
    (``5.06``) is taken exactly, so 5.06 ms is the double nearest 0.00506 s."""
    number = float(value)
    if not math.isfinite(number) or number == 0:
        return number * float(factor)  # no digits worth keeping (and 1e-999999 stays cheap)
    exact = Fraction(number)
    if isinstance(value, str):
        try:
            exact = Fraction(value.strip())
        except ValueError:  # a form float reads and Fraction does not: its double is exact
            pass
    product = exact * factor
    try:
        return float(product)
    except OverflowError:
        return math.inf if product > 0 else -math.inf


def to_seconds(value: float | str, unit: str) -> float:
    """``value`` durations of ``unit`` (the whole word: ``microseconds``, ``minute``) in s;
    give the number as printed (a string) to convert it exactly."""
    return _times(value, _time_unit(unit))


def to_per_second(value: float | str, unit: str) -> float:
    """A rate printed per ``unit`` (``events/millisecond``, ``calls/second``) in 1/s."""
    noun, slash, per = unit.partition("/")
    if not slash or noun not in RATE_NOUNS:
        raise UnitError(
            f"unknown rate unit {unit!r} (known: {' or '.join(RATE_NOUNS)} per a time unit, "
            "e.g. events/second)"
        )
    return _times(value, 1 / _time_unit(per))


def parse_size(text: str | int) -> int:
    """Bytes for a size written as dd writes it (``4k``, ``1M``, ``10MB``, ``1GiB``, ``512``)."""
    if isinstance(text, bool):
        raise UnitError(f"size must be a number with an optional unit, not {text!r}")
    if isinstance(text, int):
        if text < 0:
            raise UnitError(f"size must not be negative: {text}")
        return text
    m = _SIZE_RE.match(str(text))
    if not m or m.group(2) not in _BINARY:
        units = "k/K, M, G, T (x1024), kB, MB, GB (x1000), KiB, MiB, GiB"
        raise UnitError(f"bad size {text!r}: expected a number with one of the units {units}")
    value = float(m.group(1)) * _BINARY[m.group(2)]
    if value != int(value):
        raise UnitError(f"bad size {text!r}: not a whole number of bytes")
    return int(value)


# Units as coreutils prints them in rates and human sizes ("164 MB/s", "1.0 GB", "954 MiB").
HUMAN_UNITS = {"B": 1, "kB": 1000, "KB": 1000, "KiB": 1024}
for _i, _p in enumerate(_POWERS, start=1):
    HUMAN_UNITS[_p + "B"] = 1000**_i
    HUMAN_UNITS[_p + "iB"] = 1024**_i


def human_unit_factor(unit: str) -> float:
    """Bytes per unit for a unit as coreutils prints it (``kB``, ``MB``, ``GiB``, ...)."""
    try:
        return HUMAN_UNITS[unit]
    except KeyError:
        raise UnitError(f"unknown unit {unit!r}") from None


def format_bytes(n: float) -> str:
    """``1.0 GB`` style, SI like dd, for prose and tables."""
    if n is None or math.isnan(n):
        return "n/a"
    for unit, factor in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(n) >= factor:
            return f"{n / factor:.3g} {unit}"
    return f"{n:.0f} B"


RATE_SCALES = (("GB/s", 1e9), ("MB/s", 1e6), ("kB/s", 1e3), ("B/s", 1.0))


def rate_scale(values: list[float]) -> tuple[str, float]:
    """One unit for a whole column of B/s values, chosen by its median so digits line up."""
    finite = sorted(v for v in values if v is not None and not math.isnan(v))
    if not finite:
        return "MB/s", 1e6
    mid = finite[len(finite) // 2]
    for unit, factor in RATE_SCALES:
        if mid >= factor:
            return unit, factor
    return "B/s", 1.0


SECONDS_SCALES = (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9))


def seconds_scale(values: list[float]) -> tuple[str, float]:
    """One unit for a whole column of times in s, chosen by its median as :func:`rate_scale`
    does: a 0.0007 s timer reads ``700 us``, a 0.0285 s one ``28.5 ms``; 1 s and up stay s."""
    finite = sorted(abs(v) for v in values if v is not None and not math.isnan(v))
    if not finite or finite[len(finite) // 2] == 0:
        return "s", 1.0
    mid = finite[len(finite) // 2]
    for unit, factor in SECONDS_SCALES:
        if mid >= factor:
            return unit, factor
    return SECONDS_SCALES[-1]


def format_seconds(s: float, scale: tuple[str, float] | None = None) -> str:
    """Seconds in the unit that suits their size (``12.3 ms``, ``1.23 s``, ``123 s``), or in
    ``scale`` (from :func:`seconds_scale`) so a column reads in one unit."""
    if s is None or math.isnan(s):
        return "n/a"
    unit, factor = scale or seconds_scale([s])
    v = s / factor
    if abs(v) >= 100:
        return f"{v:.0f} {unit}"
    return f"{v:.3g} {unit}"


def sig(x: float, digits: int = 3) -> str:
    """A number to ``digits`` significant digits, without exponent for everyday sizes."""
    if x is None or math.isnan(x):
        return "n/a"
    if x == 0:
        return "0"
    # Counts stay whole numbers, and so does a whole number that a unit's scaling left a
    # rounding error off (0.287 s in ms is 287.00000000000006: "287", as its neighbours).
    if abs(x - round(x)) <= 1e-9 * max(1.0, abs(x)):
        return f"{round(x):,}"
    magnitude = math.floor(math.log10(abs(x)))
    decimals = max(digits - 1 - magnitude, 0)
    return f"{x:,.{decimals}f}"


def format_value(
    value: float | None, unit: str, scale: tuple[str, float] | None = None, *, cell: bool = False
) -> str:
    """The one way perfpost shows a value with its unit (a base unit of the tidy table).

    In a sentence (default) the value carries its unit: ``1.83 GB/s``, ``28.5 ms``, ``102 MB``,
    ``6,341 ops/s``, ``15.3 GB*s``; ``scale`` (from :func:`rate_scale` or
    :func:`seconds_scale`) puts a whole column in one unit. As a table ``cell`` whose header
    names the unit, rates and counts are bare numbers in that scale; bytes, byte-seconds and
    times keep the prefix that suits each value.
    """
    if value is None or value != value:  # None or NaN
        return "n/a"
    if unit == "B":
        return format_bytes(value)
    if unit == "B*s":
        return f"{format_bytes(value)}*s"
    if unit == "s":
        return format_seconds(value, scale if scale and not cell else None)
    if scale:
        number = sig(value / scale[1])
        return number if cell else f"{number} {scale[0]}"
    if cell:
        return sig(value)
    if unit == "B/s":
        name, factor = rate_scale([value])
        return f"{sig(value / factor)} {name}"
    if unit == "1/s":
        return f"{sig(value)} ops/s"
    if unit in ("count", ""):
        return sig(value)
    return f"{sig(value)} {unit}"


# How a metric is named in figures, tables and sentences (kept here, not with the plots, so
# the post and the comparisons do not import matplotlib).
METRIC_LABELS = {
    "until_time": "Time to the bound",
    "throughput": "Throughput",
    "throughput_adjusted": "Throughput, sync time added",
    "elapsed": "Elapsed time",
    "wall_time": "Wall time",
    "sync_time": "sync time",
    "rate": "Rate",
    "rate_adjusted": "Rate, sync time added",
    "rate_over_time": "Rate over time",
    "operations": "Operations",
    "app_elapsed": "Elapsed time (YARN)",
    "app_vcore_seconds": "vcore-seconds (YARN)",
    "app_memory_seconds": "memory-seconds (YARN)",
    "app_launch_delay": "AM launch delay (YARN)",
    "iops": "IOPS",
    "lat_mean": "Mean latency",
    "clat_p99": "Completion latency, 99th percentile",
    "map_vcore_seconds": "map vcore-seconds",
    "map_memory_seconds": "map memory-seconds",
    "rate_time": "Measured phase",
    "startup": "Start-up",
    "operations_time": "Operations' time",
    "rate_source_progress_window": "runs timed over their progress window",
    "rate_source_freon_timestamps": "runs timed by freon's timestamps",
    "rate_source_host_wall_time": "runs timed by host wall time",
}


def metric_label(metric: str) -> str:
    return METRIC_LABELS.get(metric, metric.replace("_", " "))


def axis_unit(unit: str, values: list[float]) -> tuple[str, float]:
    """The axis unit for values in a base unit: the prefix that suits their median for
    rates and times (a 0.0285 s timer is drawn in ms), MB for bytes, GB*s for byte-seconds,
    ops/s for operations a second."""
    if unit == "B/s":
        return rate_scale(values)
    if unit == "s":
        return seconds_scale(values)
    if unit == "B":
        return ("MB", 1e6)
    if unit == "B*s":
        return ("GB*s", 1e9)
    if unit == "1/s":
        return ("ops/s", 1.0)  # as the tables and sentences name it
    return (unit, 1.0)


def listed(items: list[str]) -> str:
    """Items as a sentence lists them: "a", "a and b", "a, b and c"."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + f" and {items[-1]}"


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and its noun as a person writes them: "1 cell", "2 cells", never "cell(s)"."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"
