"""When a line of a JVM tool's log was written: Ozone (freon, vapor) and Hadoop (teragen) log
through log4j, which starts each line with ``YYYY-MM-DD HH:MM:SS`` and a fraction of a second.
"""

from __future__ import annotations

import datetime as dt
import re

_STAMP = re.compile(r"^(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2})(?:[,.](\d{1,6}))?")


def timestamp(line: str, digits: int | None = None) -> float | None:
    """Epoch seconds of the time ``line`` starts with (local time, as log4j writes it), or
    None when it starts with none, or with a date that does not exist (month 13).

    The fraction may have 1 to 6 digits, or be absent. With ``digits``, a line must have at
    least that many and only those count (Hadoop's console lines carry milliseconds, ``,123``;
    one with fewer digits is not one of its log lines)."""
    m = _STAMP.match(line)
    if not m:
        return None
    frac = m.group(3) or ""
    if digits is not None:
        if len(frac) < digits:
            return None
        frac = frac[:digits]
    try:
        stamp = dt.datetime.fromisoformat(f"{m.group(1)}T{m.group(2)}").timestamp()
    except (ValueError, OverflowError):  # a date that does not exist (month 13) is no time
        return None
    return stamp + (int(frac) / 10 ** len(frac) if frac else 0.0)


# Log stamps are read in the controller's time zone; a host in another is off by whole
# quarter hours: an offset of at least half of one from the host's clock is taken as that.
ZONE_STEP = 900.0


def zone_offset(offset: float) -> float:
    """The part of ``offset`` (a log stamp minus the host's clock for the same moment, in
    seconds) that is a time zone's: whole quarter hours, or 0 for less than half of one."""
    return round(offset / ZONE_STEP) * ZONE_STEP if abs(offset) >= ZONE_STEP / 2 else 0.0
