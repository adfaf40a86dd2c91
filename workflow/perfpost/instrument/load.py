"""A background load beside the measured step (``background:`` on an experiment): any tool
perfpost runs as a process on the host (fio with its ``rate=``, dd, freon, a command), started
on the cell's host before each measured run and stopped right after it, as the *Cluster I/O
performance* post read "with ~10MB/s write" going on, or the teragen post ran freon ockg
beside the job.

What it did is measured, not assumed, over the measured step itself:

- a tool that reports its progress over time (freon): its operations between the step's
  start and end, each read on the line between the two progress lines around it (ops/s);
- any other: the load's process's I/O counters (``/proc/<pid>/io``: ``wchar``, ``rchar``,
  the bytes it passed to write and read calls; a process's counters hold its children's once
  it has reaped them), read right before the step starts and right after it ends (B/s).

A load with progress lines gets its lead from its first operation, not from its start: a
JVM's start (freon's takes seconds, longer on a busy host) is no part of the load, and
counted from the launch no lead fits every host. A load that is not running (or for freon,
not yet operating) when the step starts, that exits before it ends, or whose rate misses its
target by more than its ``tolerance`` (default :data:`TOLERANCE`), fails
the run with the numbers.
"""

from __future__ import annotations

import re
import shlex
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from perfpost.errors import ConfigError
from perfpost.instrument.beside import Beside, Cell
from perfpost.tools.base import Metric
from perfpost.units import format_value

TOLERANCE = 0.10  # of the target rate
LEAD = 1.0  # seconds the load runs before the measured step, by default
SHORT_TIMEOUT = 30.0
# How long a load with progress lines may take to its first operation, and how often its log
# is looked at meanwhile (a freon JVM prints a line a second once it operates).
OPERATING_WITHIN = 300.0
OPERATING_POLL = 0.5
STOP_WAIT = 30.0
RAW = "background.log"
MARK = "@perfpost-load"
# Tools whose run is one process on the host: teragen's is a job on YARN.
TOOLS = ("command", "dd", "fio", "freon")
# Tools a byte rate can be asked of: fio paces itself (rate=); dd's rate is what it is.
RATED = ("fio", "dd")
# A load with progress lines runs this long past the measured step before it is stopped,
# so that a line after the step's end brackets it (freon prints one a second).
PROGRESS_TAIL = 1.5
_RATE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmMgG]i?)?([bB])?(?:/s)?\s*$")
_FACTORS = {"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "ki": 1 << 10, "mi": 1 << 20, "gi": 1 << 30}


def parse_rate(value: Any, where: str) -> float:
    """Bytes per second from ``10485760``, ``"10MB/s"`` (10^6) or ``"10MiB/s"`` (2^20)."""
    if isinstance(value, bool):
        raise ConfigError(where, "a rate in bytes per second: 10485760, 10MB/s or 10MiB/s")
    if isinstance(value, int | float):
        rate = float(value)
    else:
        m = _RATE.match(str(value))
        if not m:
            raise ConfigError(where, f"{value!r} is not a rate: 10485760, 10MB/s or 10MiB/s")
        rate = float(m.group(1)) * _FACTORS[(m.group(2) or "").lower()]
    if rate <= 0:
        raise ConfigError(where, "a rate above 0")
    return rate


def settings(raw: Any, where: str) -> dict[str, Any]:
    """An experiment's ``background:`` as a cell's settings (empty without one): the tool and
    its params (checked as that tool's), the target rate and the lead. The load's params get
    what perfpost needs of them: fio runs its jobs as threads of one process (whose I/O
    counters are then the load's) at the target rate (``rate=``) unless the params set one."""
    if not raw:
        return {}
    from perfpost import tools

    if not isinstance(raw, Mapping):
        raise ConfigError(where, "a mapping: {tool: fio, params: {...}, rate: 10MB/s}")
    tool = raw.get("tool")
    if tool not in TOOLS:
        raise ConfigError(
            f"{where}.tool",
            f"one of {', '.join(TOOLS)}"
            + (
                ": teragen's run is a job on YARN, not a process beside"
                if tool == "teragen"
                else ""
            ),
        )
    if raw.get("rate") is not None and tool not in RATED:
        raise ConfigError(
            f"{where}.rate",
            f"{tool} has no byte rate to hold: leave rate out, and the post says what it did "
            "over each measured step",
        )
    if int((raw.get("params") or {}).get("clients") or 1) > 1:
        raise ConfigError(f"{where}.params.clients", "a load is one process")
    adapter = tools.get(tool)
    params = {
        k: v["default"] for k, v in adapter.PARAMS_SCHEMA["properties"].items() if "default" in v
    }
    params.update(dict(raw.get("params") or {}))
    rate = parse_rate(raw["rate"], f"{where}.rate") if raw.get("rate") is not None else None
    if tool == "fio":
        options = dict(params.get("options") or {})
        options["thread"] = True
        if rate is not None and "rate" not in options:
            options["rate"] = int(rate)
        params["options"] = options
        if params.get("numjobs") not in (None, 1) and rate is not None:
            raise ConfigError(
                f"{where}.params.numjobs", "one job: fio's rate= holds for each job of several"
            )
    if params.get("drop_cache"):
        raise ConfigError(f"{where}.params.drop_cache", "a background load drops no cache")
    import jsonschema

    errors = sorted(
        jsonschema.Draft202012Validator(adapter.PARAMS_SCHEMA).iter_errors(params),
        key=lambda e: list(e.path),
    )
    if errors:
        e = errors[0]
        sub = ".".join(str(p) for p in e.path)
        raise ConfigError(f"{where}.params" + (f".{sub}" if sub else ""), e.message)
    adapter.check_params(params, f"{where}.params")
    if len(adapter.plan(params, "/perfpost-load").measure) != 1:
        raise ConfigError(f"{where}.params", "a load of one process (one dd reader or writer)")
    lead = float(raw.get("lead", LEAD))
    if lead < 0:
        raise ConfigError(f"{where}.lead", "seconds, 0 or more")
    out = {"tool": tool, "params": params, "rate": rate, "lead": lead}
    if raw.get("tolerance") is not None:
        if rate is None:
            raise ConfigError(f"{where}.tolerance", "a tolerance is of a rate: give `rate` too")
        out["tolerance"] = float(raw["tolerance"])
    return out


def for_host(
    settings: Mapping[str, Any],
    clusters: list[dict[str, Any]],
    host: Mapping[str, Any],
    configured: Mapping[str, Any],
) -> dict[str, Any]:
    """A cell's load settings with what its host and clusters add to the load's params, as
    a cell's own tool gets them (freon's provisioned launcher, the build its Ozone runs)."""
    from perfpost import tools

    if not settings:
        return {}
    adapter = tools.get(settings["tool"])
    params = dict(settings["params"])
    pick = getattr(adapter, "for_clusters", None)
    if pick is not None:
        params = pick(params, clusters, host["name"])
    return {**settings, "params": adapter.complete_params(params, dict(host), configured)}


def run_script(
    state: str, argv: list[str], workdir: str, timeout: float, prepare: Sequence[list[str]] = ()
) -> str:
    """The load on the host: prepared (a dd reader's input file) and started in its own
    scratch directory, its pid in ``state``; it ends when asked (TERM, then KILL) or after
    ``timeout``, its files removed, and the script prints its exit status."""
    s, w = shlex.quote(state), shlex.quote(workdir)
    cmd = " ".join(shlex.quote(a) for a in argv)
    return "\n".join(
        [
            "set -u",
            "export LC_ALL=C",
            # A scratch that cannot be made takes the state made before it along.
            f"mkdir -p -- {s} {w} && cd {w} || {{ rm -rf -- {s}; exit 97; }}",
            *(
                f"{' '.join(shlex.quote(a) for a in p)} >> {s}/log 2>&1 || "
                f'{{ echo "{MARK} exit prepare"; cat {s}/log; rm -rf -- {s} {w}; exit 0; }}'
                for p in prepare
            ),
            f"{cmd} > {s}/log 2>&1 < /dev/null & pid=$!",
            f"echo $pid > {s}/pid",
            # The guard's sleep must not outlive it, nor hold the script's output open.
            f"( trap 'kill $s 2>/dev/null; exit 0' TERM; sleep {int(timeout)} & s=$!; "
            f'wait $s; kill -TERM "$pid" 2>/dev/null ) >/dev/null 2>&1 & guard=$!',
            'while :; do wait "$pid"; rc=$?; kill -0 "$pid" 2>/dev/null || break; done',
            'kill "$guard" 2>/dev/null',
            f'echo "{MARK} exit $rc"; cat {s}/log',
            f"rm -rf -- {s} {w}",
        ]
    )


def counters_script(state: str, wait: float = 0.0) -> str:
    """The load's I/O counters now, and the host's clock: ``@perfpost-load io T rchar wchar``
    (``gone`` once it has exited); ``wait``: seconds its pid may take to appear."""
    s = shlex.quote(state)
    return (
        "export LC_ALL=C\n"
        f"i=0; while [ ! -s {s}/pid ] && [ $i -lt {int(wait * 50)} ]; do i=$((i+1)); "
        "sleep 0.02; done\n"
        f"pid=$(cat {s}/pid 2>/dev/null)\n"
        f'if [ -z "$pid" ] || [ ! -r /proc/$pid/io ]; then echo "{MARK} gone"; exit 0; fi\n'
        f"t=$(date +%s.%N)\n"
        f'awk -v t="$t" \'/^rchar:/ {{r=$2}} /^wchar:/ {{w=$2}} '
        f'END {{print "{MARK} io", t, r, w}}\' /proc/$pid/io\n'
    )


def stop_script(state: str) -> str:
    s = shlex.quote(state)
    return (
        f"pid=$(cat {s}/pid 2>/dev/null) || exit 0\n"
        # TERM: a non-interactive shell starts its background commands ignoring INT.
        'kill -TERM "$pid" 2>/dev/null; i=0\n'
        'while kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do i=$((i+1)); sleep 0.05; done\n'
        'kill -KILL "$pid" 2>/dev/null; exit 0\n'
    )


def parse_counters(text: str) -> tuple[float, int, int] | None:
    """(host time, rchar, wchar) from :func:`counters_script`, None when the load was gone."""
    for line in text.splitlines():
        parts = line.split()
        if parts[:2] == [MARK, "io"] and len(parts) == 5:
            try:
                return float(parts[2]), int(parts[3]), int(parts[4])
            except ValueError:
                return None
    return None


def progressed(
    rows: Sequence[Mapping[str, Any]], start: float, end: float
) -> dict[str, float] | str:
    """What a load with progress lines (``rows``: ``at``, ``completed``, ``total``) did
    between the host's ``start`` and ``end`` of the measured step: its operations, the
    seconds they are over and its rate; or why that cannot be read. Its stamps are read in
    this machine's time zone: an offset of whole quarter hours from the host's clock is
    taken as the zone's."""
    from perfpost.tools import log4j
    from perfpost.tools.base import count_at

    pts = [(float(r["at"]), float(r["completed"])) for r in rows if r.get("at") is not None]
    if len(pts) < 2:
        return "it printed fewer than two progress lines"
    zone = log4j.zone_offset(pts[0][0] - start)
    pts = sorted((t - zone, c) for t, c in pts)
    begun = next((t for t, c in pts if c > 0), None)
    if begun is None or begun > start:
        when = f"{begun - start:+.1f} s from" if begun is not None else "at no time during"
        return (
            f"its first operation came {when} the measured step's start: it was not yet operating"
        )
    last = pts[-1][0]
    if last < end:
        return (
            f"its last progress line came {end - last:.1f} s before the measured step's end: "
            "it ended, or stopped reporting, before the step did"
        )
    a, b = count_at(pts, start), count_at(pts, end)
    if a is None or b is None:
        return "its progress lines do not reach over the measured step"
    seconds = end - start
    return {
        "seconds": seconds,
        "operations": b - a,
        "rate": (b - a) / seconds if seconds > 0 else float("nan"),
    }


def achieved(
    before: tuple[float, int, int], after: tuple[float, int, int], writes: bool
) -> dict[str, float]:
    """What the load did between two readings: bytes written and read, seconds, and its
    rate in the direction it works (writes for a writer)."""
    seconds = after[0] - before[0]
    read, written = after[1] - before[1], after[2] - before[2]
    moved = written if writes else read
    return {
        "seconds": seconds,
        "read_bytes": float(read),
        "write_bytes": float(written),
        "rate": moved / seconds if seconds > 0 else float("nan"),
    }


class Load(Beside):
    name = "background"

    def __init__(self, settings: Mapping[str, Any]) -> None:
        self.settings = dict(settings)
        self.thread: threading.Thread | None = None
        self.result: Any = None
        self.error: BaseException | None = None
        self.before: tuple[float, int, int] | None = None
        self.after: tuple[float, int, int] | None = None
        self.state = ""
        self.writes = True
        self.progress: Any = None
        self.log = RAW

    def start(self, cell: Cell) -> None:
        """Start the load, give it its lead, and read its counters last, right before the
        measured step."""
        from perfpost import tools

        adapter = tools.get(self.settings["tool"])
        # The cell's own copy: its clusters' fields filled in, its launcher delivered.
        params = (getattr(cell.spec, "background", None) or self.settings)["params"]
        token = uuid.uuid4().hex[:12]
        self.state = f"/tmp/perfpost-load-{token}"
        workdir = f"{str(params['dir']).rstrip('/')}/perfpost-load-{token}"
        plan = adapter.plan(params, workdir)
        (proc,) = plan.measure  # one process: its counters are the load's (settings checks)
        self.writes = plan.writes
        self.progress = getattr(adapter, "parse_series", None)
        self.log = proc.log or RAW
        argv = list(proc.argv)
        cell.record["background"] = {
            "tool": self.settings["tool"],
            "command": " ".join(shlex.quote(a) for a in argv).replace(workdir, "$LOAD"),
            "target_rate": self.settings.get("rate"),
            "lead": self.settings["lead"],
            "writes": self.writes,
            "measured_by": "progress" if self.progress else "io counters",
        }
        timeout = float(cell.spec.timeout) + self.settings["lead"] + 120.0
        script = run_script(
            self.state, argv, workdir, timeout, [list(p.argv) for p in plan.prepare]
        )

        def run() -> None:
            try:
                self.result = cell.host.run(script, timeout + 30, force=True)
            except BaseException as e:  # the host went away: the record says so
                self.error = e

        self.thread = threading.Thread(target=run, daemon=True, name="background-load")
        self.thread.start()
        if self.progress is not None:
            self._await_operating(cell, min(OPERATING_WITHIN, timeout))
        time.sleep(self.settings["lead"])
        try:
            got = cell.host.run(counters_script(self.state, 5.0), SHORT_TIMEOUT)
            self.before = parse_counters(got.stdout)
        except Exception as e:
            self.error = self.error or e

    def _await_operating(self, cell: Cell, within: float) -> None:
        """Wait until the load's own progress lines count an operation (recorded as
        ``operating_after``, seconds from its launch), it has exited, or ``within`` passed;
        the lead is then counted from there. A load that never operated is found out by the
        check of its lines over the measured step, with its numbers."""
        began = time.monotonic()
        look = f"tail -c 65536 {shlex.quote(self.state)}/log 2>/dev/null; exit 0"
        while time.monotonic() - began < within and self.thread is not None:
            if not self.thread.is_alive():
                return
            try:
                got = cell.host.run(look, SHORT_TIMEOUT)
            except Exception as e:
                self.error = self.error or e
                return
            rows = self.progress({self.log: got.stdout or ""})
            if any((r.get("completed") or 0) > 0 for r in rows):
                cell.record["background"]["operating_after"] = round(time.monotonic() - began, 3)
                return
            time.sleep(OPERATING_POLL)

    def stop(self, cell: Cell) -> None:
        """Read the counters first (the step just ended), then stop the load."""
        try:
            got = cell.host.run(counters_script(self.state), SHORT_TIMEOUT, force=True)
            self.after = parse_counters(got.stdout)
            if self.progress is not None and self.after is not None:
                time.sleep(PROGRESS_TAIL)  # a progress line after the step's end
            cell.host.run(stop_script(self.state), SHORT_TIMEOUT, force=True)
        except Exception as e:
            self.error = self.error or e
        if self.thread is not None:
            self.thread.join(STOP_WAIT)
        out = getattr(self.result, "stdout", "") or ""
        if out:
            cell.keep(RAW, out)
            cell.record["logs"].append(f"raw/{RAW}")

    def collect(
        self, cell: Cell, texts: Mapping[str, str], parsed: list[Metric]
    ) -> tuple[list[Metric], str | None]:
        info = cell.record.setdefault("background", {})
        target = self.settings.get("rate")
        tolerance = self.settings.get("tolerance", TOLERANCE)
        if self.before is None or self.after is None:
            out = getattr(self.result, "stdout", "") or ""
            tail = " ".join(ln for ln in out.splitlines()[-3:] if ln and MARK not in ln)
            if self.error is not None:
                why = str(self.error)
            elif self.before is None:
                why = "it was not running when the measured step started"
            else:
                why = "it exited before the measured step ended"
            return [], f"background load ({info.get('command')}): {why}" + (
                f": {tail[:300]}" if tail else ""
            )
        if self.progress is not None:
            return self._progressed(cell, info)
        got = achieved(self.before, self.after, self.writes)
        info.update(got)
        metrics = [
            Metric("background.rate", got["rate"], "B/s"),
            Metric("background.write_bytes", got["write_bytes"], "B"),
            Metric("background.read_bytes", got["read_bytes"], "B"),
            Metric("background.seconds", got["seconds"], "s"),
        ]
        if target is not None and abs(got["rate"] - target) > tolerance * target:
            off = got["rate"] / target - 1
            return metrics, (
                f"the background load did {format_value(got['rate'], 'B/s')} over the measured "
                f"step, {abs(off):.0%} {'under' if off < 0 else 'over'} its target of "
                f"{format_value(target, 'B/s')} (more than {tolerance:.0%} off)"
            )
        return metrics, None

    def _progressed(self, cell: Cell, info: dict[str, Any]) -> tuple[list[Metric], str | None]:
        """The load's operations over the measured step, from its own progress lines."""
        assert self.before is not None
        assert self.after is not None
        out = getattr(self.result, "stdout", "") or ""
        text = out.split("\n", 1)[1] if out.startswith(MARK) else out
        start = cell.record.get("start_epoch") or self.before[0]
        end = cell.record.get("end_epoch") or self.after[0]
        got = progressed(self.progress({self.log: text}), start, end)
        if isinstance(got, str):
            return [], f"background load ({info.get('command')}): {got}"
        info.update(got)
        return [
            Metric("background.rate", got["rate"], "1/s"),
            Metric("background.operations", got["operations"], "count"),
            Metric("background.seconds", got["seconds"], "s"),
        ], None

    def cleanup(self, cell: Cell) -> None:
        if self.thread is not None and self.thread.is_alive():
            try:
                cell.host.run(stop_script(self.state), SHORT_TIMEOUT, force=True)
            except Exception:
                pass
            self.thread.join(STOP_WAIT)
