"""Sizes, rates and durations: parsing what users and tools write, formatting what readers expect.

Config sizes follow dd's own conventions (``K``/``k`` = 1024, ``kB`` = 1000, ``M`` = 1024**2,
``MB`` = 1000**2, ...), so a ``bs: 10k`` means the same to perfpost as it does to ``dd``.
"""

from __future__ import annotations

import math
import re

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
_HUMAN = {"B": 1, "kB": 1000, "KB": 1000, "KiB": 1024}
for _i, _p in enumerate(_POWERS, start=1):
    _HUMAN[_p + "B"] = 1000**_i
    _HUMAN[_p + "iB"] = 1024**_i


def human_unit_factor(unit: str) -> float:
    """Bytes per unit for a unit as coreutils prints it (``kB``, ``MB``, ``GiB``, ...)."""
    try:
        return _HUMAN[unit]
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


def format_seconds(s: float) -> str:
    """Seconds with precision that suits their size (``0.0123 s``, ``1.23 s``, ``123 s``)."""
    if s is None or math.isnan(s):
        return "n/a"
    if s >= 100:
        return f"{s:.0f} s"
    return f"{s:.3g} s"


def sig(x: float, digits: int = 3) -> str:
    """A number to ``digits`` significant digits, without exponent for everyday sizes."""
    if x is None or math.isnan(x):
        return "n/a"
    if x == 0:
        return "0"
    if x == int(x):  # counts stay whole numbers
        return f"{int(x):,}"
    magnitude = math.floor(math.log10(abs(x)))
    decimals = max(digits - 1 - magnitude, 0)
    return f"{x:,.{decimals}f}"


# How a metric is named in figures, tables and sentences (kept here, not with the plots, so
# the post and the comparisons do not import matplotlib).
METRIC_LABELS = {
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
    "app_memory_seconds": "MB-seconds (YARN)",
    "app_launch_delay": "AM launch delay (YARN)",
    "map_vcore_seconds": "map vcore-seconds",
    "map_mb_seconds": "map MB-seconds",
}


def metric_label(metric: str) -> str:
    return METRIC_LABELS.get(metric, metric.replace("_", " "))
