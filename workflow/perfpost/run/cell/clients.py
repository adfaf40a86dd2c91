"""Several clients of the tool at once on a cell's host (``clients: N``): "30 freon JVMs of 10
threads, rates summed" as one run, not as cells that happen to overlap.

Each client is the tool's own plan made for a scratch directory of its own (its ``{work}``
and ``{run}``), so its files, outputs and any path it names on a cluster are its own; its logs
and outputs are kept under ``client-<i>.`` names. The measured step starts every client's
processes at one moment, each timed by itself on the host. Each client's logs are parsed as a
run of their own, and the run's numbers are the clients' together (:func:`combine`):

- a tool that reports its progress over time (freon) and names the metrics of its rate
  (``CLIENT_WINDOW``): the rate is the clients' sum over the *common window*, from the
  latest moment any client began its measured phase to the earliest moment one ended it, each
  client's count at both ends read from its own progress lines (interpolated between the two
  around it), so every client's share is over the same seconds;
- any other rate (bytes or operations a second) is the sum of each client's rate over its
  own run, and the record says how far their runs overlapped;
- times are the slowest client's, counts and bytes the clients' sum, any other number their
  mean; a number not every client has is left out, not summed from some of them.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from perfpost.run import hostscript
from perfpost.tools.base import Metric, Plan, Proc, count_at

# Units whose values add up across clients: rates, amounts, counts.
ADDITIVE = frozenset({"1/s", "B/s", "count", "B", "B*s", "vcore*s"})
PREFIX = "client-"


def count(params: Mapping[str, Any]) -> int:
    """The clients a cell of these parameters runs on each host (1: the tool as it is)."""
    return int(params.get("clients") or 1)


def name(i: int, what: str) -> str:
    """Client ``i``'s copy of a log or output named ``what`` in the cell's raw/."""
    return f"{PREFIX}{i}.{what}"


@dataclass(frozen=True)
class Client:
    """One client: its scratch directory, the tool's plan for it, which of the combined
    plan's measured processes are its (1-based), and its files by the names kept in raw/."""

    index: int
    workdir: str
    plan: Plan
    procs: tuple[int, ...]
    names: dict[str, str] = field(default_factory=dict)  # kept name -> the tool's own

    def texts(self, texts: Mapping[str, str]) -> dict[str, str]:
        """Its logs and outputs among the cell's, by the names the tool gave them."""
        return {own: texts[kept] for kept, own in self.names.items() if kept in texts}

    def kept(self, own: str) -> str:
        """The name in raw/ of its file the tool calls ``own``."""
        return next((k for k, o in self.names.items() if o == own), own)


def plan(
    adapter: Any, params: Mapping[str, Any], workdir: str, n: int
) -> tuple[Plan, list[Client]]:
    """The tool's plan for ``n`` clients at once, and each client's part of it. Their
    measured processes start together; the first client's background (a writer beside the
    readers) is the cell's one; every client's preparation and removal runs."""
    out: list[Client] = []
    measure: list[Proc] = []
    outputs: list[tuple[str, str]] = []
    files: list[tuple[str, str]] = []
    prepare: list[Proc] = []
    remove: list[Proc] = []
    for i in range(1, n + 1):
        own = f"{workdir}/{PurePosixPath(workdir).name}-c{i}"
        p = adapter.plan(dict(params), own)
        names: dict[str, str] = {}
        mine = []
        for proc in p.measure:
            log = name(i, proc.log) if proc.log else None
            if proc.log and log:
                names[log] = proc.log
            measure.append(Proc(proc.argv, log))
            mine.append(len(measure))
        for what, path in p.outputs:
            outputs.append((name(i, what), path))
            names[name(i, what)] = what
        files += [(name(i, f), text) for f, text in p.files]
        prepare += p.prepare
        remove += p.remove
        out.append(Client(i, own, p, tuple(mine), names))
    first = out[0].plan
    combined = Plan(
        measure=tuple(measure),
        files=tuple(files),
        prepare=tuple(prepare),
        background=first.background,
        remove=tuple(remove),
        outputs=tuple(outputs),
        drop_cache=first.drop_cache,
        writes=first.writes,
        description=f"{n} clients at once, each: {first.description}"
        if first.description
        else f"{n} clients at once",
    )
    return combined, out


def prepare_script(clients: Sequence[Client], logdir: str) -> str:
    """Every client's preparation, one after another: its directory, files and commands."""
    return "".join(
        hostscript.prepare_script(c.workdir, logdir, c.plan.prepare, c.plan.files) for c in clients
    )


@dataclass(frozen=True)
class Window:
    """The seconds every client was inside its measured phase, and each client's operations
    in them (from its progress lines)."""

    start: float  # epoch seconds, the clients' log clock
    end: float
    operations: tuple[float, ...]

    @property
    def seconds(self) -> float:
        return self.end - self.start

    def rates(self) -> list[float]:
        return [ops / self.seconds for ops in self.operations]


def common_window(series: Sequence[Sequence[Mapping[str, Any]]]) -> Window | str:
    """The common window of the clients' progress series (rows with ``at``, ``completed``,
    ``total``), or why there is none. A client's measured phase is between its first and
    last progress lines inside its run (0 < completed < total), as one run's own rate is."""
    inside = []
    for i, rows in enumerate(series, start=1):
        pts = sorted(
            (float(r["at"]), float(r["completed"]))
            for r in rows
            if r.get("at") is not None and 0 < r["completed"] < (r.get("total") or math.inf)
        )
        if len(pts) < 2 or pts[-1][0] <= pts[0][0]:
            return (
                f"client {i} printed fewer than two progress lines inside its run: no window "
                "to sum the clients' rates over (give each a longer run)"
            )
        inside.append(pts)
    start = max(p[0][0] for p in inside)
    end = min(p[-1][0] for p in inside)
    if end <= start:
        late = max(range(len(inside)), key=lambda k: inside[k][0][0]) + 1
        early = min(range(len(inside)), key=lambda k: inside[k][-1][0]) + 1
        return (
            f"the clients were never all measuring at once: client {early}'s measured phase "
            f"ended {start - end:.3f} s before client {late}'s began, so their rates add up to "
            "no moment's load"
        )
    # The window lies inside every client's points: both counts exist.
    ops = tuple(float(count_at(p, end)) - float(count_at(p, start)) for p in inside)  # type: ignore[arg-type]
    return Window(start, end, ops)


def combine(
    each: Sequence[Sequence[Metric]],
    window: Window | None,
    names: tuple[str, str, str] | None,
    flags: tuple[str, ...] = (),
) -> list[Metric]:
    """The run's numbers from its clients' (see the module's docstring). With ``window``,
    the metrics ``names`` (rate, its time, its operations) are the common window's. Metrics
    whose names start with one of the tool's ``flags`` (CLIENT_FLAGS: a 1 that says how a
    number was made) are one, not a sum of them."""
    common: dict[str, list[Metric]] = {}
    for metrics in each:
        for m in metrics:
            common.setdefault(m.name, []).append(m)
    out = []
    for metric, ms in common.items():
        if len(ms) != len(each):
            continue  # not every client has it: a sum of some would pass for all
        values = [m.value for m in ms]
        unit = ms[0].unit
        if flags and metric.startswith(flags):
            value = max(values)
        elif unit in ADDITIVE:
            value = math.fsum(values)
        elif unit == "s":
            value = max(values)
        else:
            value = statistics.fmean(values)
        out.append(Metric(metric, value, unit))
    if window is not None and names is not None:
        rate, seconds, operations = names
        replaced = {
            rate: Metric(rate, math.fsum(window.operations) / window.seconds, "1/s"),
            seconds: Metric(seconds, window.seconds, "s"),
            # Counts at the window's ends are read between two progress lines: whole
            # operations, rounded.
            operations: Metric(operations, float(round(math.fsum(window.operations))), "count"),
        }
        out = [replaced.pop(m.name, m) for m in out] + list(replaced.values())
    return out


def overlap(spans: Sequence[tuple[float, float]]) -> dict[str, float]:
    """How the clients' own runs (host start, end) lay against each other: the spread of
    their starts and the seconds all of them ran."""
    starts = [s for s, _ in spans]
    ends = [e for _, e in spans]
    return {
        "start_spread": max(starts) - min(starts),
        "all_running": max(min(ends) - max(starts), 0.0),
        "longest": max(e - s for s, e in spans),
    }
