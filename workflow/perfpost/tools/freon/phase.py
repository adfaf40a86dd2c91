"""The measured phase of a freon run, from its progress lines: a run's rate is over the
operations completed between two moments whose counts freon printed (:func:`window`), or, for
a ``--duration`` run, from its start of operations to freon's deadline
(:func:`deadline_window`). What it needs of a run's progress is a few entries at each end of
its log (:class:`Ends`), which the parser reads without the progress lines in between.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from perfpost.tools import log4j

# A plain log4j line: the parser's reference _LOGGED form narrowed (ASCII digits, spaces, a
# "yyyy-MM-dd HH:mm:ss" date, no ERROR or FATAL), so that _LOGGED reads it the same way. The
# parser's scan reads the other lines line by line (its _line).
PLAIN_PREFIX = (
    r"(?P<ts>[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}(?:[,.][0-9]+)?) +"
    r"(?:\[[^\]\n]*\] +)?(?:INFO|WARN|DEBUG|TRACE) +[\w.$]+(?::[0-9]+)?(?:: | - )"
)
PLAIN_PREFIX_AT = re.compile(PLAIN_PREFIX)
# A plain line's progress: the first Progress in its message, as the parser's _line reads it.
PLAIN_PROGRESS = re.compile(
    r"(?>" + PLAIN_PREFIX + r").*?Progress: [\d.]+ % \((?P<done>\d{1,19})(?!\d) out of "
    r"(?P<total>\d{1,19})(?!\d)\)"
)


@dataclass(frozen=True)
class Window:
    """The measured phase of a run (two of its progress lines, or a duration run's start of
    operations and deadline): ``start`` s after the test began (the client's start-up lies
    before it), ``seconds`` long, ``operations`` completed in it."""

    start: float
    seconds: float
    operations: int

    @property
    def rate(self) -> float:
        return self.operations / self.seconds


Progress = tuple[float | None, int, int]  # (timestamp or bar time, completed, total)
Place = tuple[int, int]  # where an entry is in its log: the start of its line, its number there


def plain_entry(
    text: str, start: int, m: re.Match[str], stamps: dict[str, float | None]
) -> Progress | None:
    """The progress entry of the plain line at ``start``, whose first progress match is
    ``m``, as the parser's line-by-line reading takes it; ``stamps`` keeps the timestamps read
    so far."""
    plain = PLAIN_PREFIX_AT.match(text, start)
    if plain is None:
        return None
    if m.start() >= plain.end():  # the line's first progress is in its message
        done, total = m.group(2), m.group(3)
    else:  # the first lies in the prefix (a thread named so): the message's, if any
        plain = PLAIN_PROGRESS.match(text, start)
        if plain is None:
            return None
        done, total = plain.group("done"), plain.group("total")
    stamp = plain.group("ts")
    if stamp not in stamps:
        stamps[stamp] = log4j.timestamp(stamp)
    return stamps[stamp], int(done), int(total)


@dataclass(frozen=True)
class Ends:
    """What a run's rate needs of its progress: the last entry, and among the entries the
    log's clock stamped (epoch seconds), the first and the last, the first and the last
    inside the run (0 < completed < total), and whether those two are different entries."""

    last: Progress | None = None
    first_stamped: Progress | None = None
    last_stamped: Progress | None = None
    first_inside: Progress | None = None
    last_inside: Progress | None = None
    two_inside: bool = False

    @staticmethod
    def find(
        forward: Iterator[tuple[Any, Progress]], backward: Iterator[tuple[Any, Progress]]
    ) -> Ends:
        """From the entries in order and in reverse, each read only as far as needed."""

        def stamped(e: Progress) -> bool:
            return e[0] is not None and e[0] > 1e6

        def inside(e: Progress) -> bool:
            return stamped(e) and 0 < e[1] < e[2]

        first = first_in = None
        for place, e in forward:
            if first is None and stamped(e):
                first = e
            if inside(e):
                first_in = (place, e)
                break
        last = last_st = last_in = None
        for place, e in backward:
            last = last or e
            if last_st is None and stamped(e):
                last_st = e
            if inside(e):
                last_in = (place, e)
                break
        return Ends(
            last=last,
            first_stamped=first,
            last_stamped=last_st,
            first_inside=first_in[1] if first_in else None,
            last_inside=last_in[1] if last_in else None,
            two_inside=bool(first_in and last_in and first_in[0] != last_in[0]),
        )


def window(log: Any) -> Window | None:
    """The run's measured phase: from the first progress line that counts an operation to
    the last one before the count reached its total, when the log stamps them to the
    millisecond and they are two different moments; for a ``--duration`` run, whose progress
    counts seconds, see :func:`deadline_window`. None otherwise (a run of a second or two,
    the terminal form's whole-second bar).

    Each end is a moment at which freon printed how many operations had completed, so the
    window's time is exact to the stamps' millisecond and its count to the operations in
    flight at either end (at most one per thread, as likely early as late)."""
    if not log.precise_ts:
        return None
    ends = log.ends
    if ends.first_stamped is None or ends.last_stamped is None:
        return None
    total = ends.last_stamped[2]
    if log.expected is not None and total != log.expected:
        return deadline_window(log, [ends.first_stamped])
    if ends.first_inside is None or ends.last_inside is None or not ends.two_inside:
        return None
    (t_a, c_a, _), (t_b, c_b, _) = ends.first_inside, ends.last_inside
    if t_a is None or t_b is None or t_b <= t_a or c_b <= c_a:
        return None
    began = log.start_ts if log.start_ts is not None else ends.first_stamped[0]
    return Window(start=t_a - began, seconds=t_b - t_a, operations=c_b - c_a)


def deadline_window(log: Any, points: list[tuple[float, int, int]]) -> Window | None:
    """The measured phase of a ``--duration`` run: from the moment the generator says its
    operations begin (vapor cmdw's "Running chunk write test") to freon's deadline, its
    start plus the duration. Its progress lines count the seconds since that start ("3 out
    of 4") and its threads take no operation past the deadline, so the phase's end is freon's
    own clock, not the summary's; the start is the first progress line (printed as freon
    takes its start time), the duration its total. A generator that says nothing when its
    operations begin has no such phase: its set-up would be inside it."""
    if log.ops_ts is None or log.success is None:
        return None
    # The first line's count may be nonsense: its thread can read freon's start time before
    # freon sets it, print the JVM's uptime in seconds ("10530 out of 3") and stop. Its stamp
    # is still the moment freon starts.
    t0, _, seconds = points[0]
    if seconds <= 0:
        return None
    end = t0 + seconds
    if end <= log.ops_ts:
        return None
    began = log.start_ts if log.start_ts is not None else t0
    return Window(start=log.ops_ts - began, seconds=end - log.ops_ts, operations=log.success)
