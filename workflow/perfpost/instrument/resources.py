"""Resource telemetry as a :class:`~perfpost.instrument.beside.Beside`: a sampler
(:mod:`perfpost.instrument.sampler`) on every host a cell involves, its own host and each
host of its clusters, started just before the measured step and stopped right after it.

The record gets ``resources``: per host, its role, the device under each directory that
matters, the measured step's summary (:func:`rates.window`) and each interval's rates and
gauges as a series whose ``t`` is seconds since the measured step started (the tool's own
progress series counts from there too). What the loops printed is kept in ``raw/``.
"""

from __future__ import annotations

import shlex
import threading
import uuid
from collections.abc import Mapping
from typing import Any

from perfpost.instrument import gclog, rates, sampler
from perfpost.instrument.beside import Beside, Cell, HostSeat
from perfpost.tools.base import Metric

SCHEMA_VERSION = 1
SHORT_TIMEOUT = 60.0
DAEMON = "daemon:"  # the resource of a daemon's own metrics
STOP_WAIT = 15.0  # seconds a loop gets to print its last sample and end
RAW = "resources-{host}.txt"
# Seconds between reads of the daemons' own metrics: each costs a daemon 20 to 30 ms of CPU
# (its JMX servlet answering a few queries), a read a second 2 to 3% of a core.
DAEMONS = 2.0


class _Loop:
    """One sampler on one host: its thread blocked in ``Host.run`` until the loop ends."""

    def __init__(self, seat: HostSeat, state_dir: str, script: str, timeout: float) -> None:
        self.seat = seat
        self.state_dir = state_dir
        self.result: Any = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(
            target=self._run, args=(script, timeout), daemon=True, name=f"sampler-{seat.name}"
        )
        self.thread.start()

    def _run(self, script: str, timeout: float) -> None:
        try:
            self.result = self.seat.host.run(script, timeout, force=True)
        except BaseException as e:  # the host went away: the cell says so, not this thread
            self.error = e


def settings(raw: Any) -> dict[str, Any]:
    """An experiment's ``resources:`` (``false``, or ``{interval: <seconds>, daemons:
    <seconds>}``) as a cell's settings; empty when sampling is off."""
    if raw is False:
        return {}
    raw = raw if isinstance(raw, Mapping) else {}
    return {
        "interval": float(raw.get("interval", sampler.INTERVAL)),
        "daemons": float(raw.get("daemons", DAEMONS)),
    }


class Telemetry(Beside):
    name = "resources"

    def __init__(self, settings: Mapping[str, Any]) -> None:
        self.interval = float(settings.get("interval", sampler.INTERVAL))
        # The daemons are read every this many samples (and at the step's end).
        self.daemon_every = max(1, round(float(settings.get("daemons", DAEMONS)) / self.interval))
        self.loops: list[_Loop] = []
        self.gc_log: str | None = None

    def setup(self, cell: Cell) -> str | None:
        """The tool's own JVM logs its collections beside the run (the daemons' come from
        own JMX)."""
        from perfpost import instrument, tools

        var = getattr(tools.get(cell.spec.tool), "JVM_OPTS_VAR", None)
        if var is not None:
            # Several client JVMs (clients: N) each log to a file of their own (%p: its pid).
            many = int(cell.spec.params.get("clients") or 1) > 1
            self.gc_log = f"{cell.logdir}/{gclog.EACH if many else gclog.FILE}"
            cell.measure_params = instrument.attach(
                cell.measure_params, var, gclog.option(self.gc_log)
            )
        return None

    def start(self, cell: Cell) -> None:
        """Start a loop on each host and wait until each took its first sample. A host
        where it cannot start leaves a note, not a failed cell: telemetry is evidence
        about the measurement, not the measurement."""
        token = uuid.uuid4().hex[:12]
        # Long enough for the whole step and a common start; the lifeline ends it sooner.
        timeout = float(cell.spec.timeout) + 120.0
        for seat in cell.seats():
            state_dir = f"/tmp/perfpost-sampler-{token}-{seat.name}"
            script = sampler.sampler_script(
                state_dir, self.interval, seat.daemons, seat.dirs, seat.scrapes, self.daemon_every
            )
            self.loops.append(_Loop(seat, state_dir, script, timeout))
        for loop in self.loops:
            try:
                ready = loop.seat.host.run(sampler.ready_script(loop.state_dir), SHORT_TIMEOUT)
                ok = ready.exit_code == 0
            except Exception as e:
                ok, loop.error = False, e
            if not ok:
                self._note(cell, f"resources on {loop.seat.name}: the sampler did not start")

    @staticmethod
    def _note(cell: Cell, text: str) -> None:
        notes = cell.record.setdefault("warnings", [])
        if text not in notes:
            notes.append(text)

    def stop(self, cell: Cell) -> None:
        for loop in self.loops:
            try:
                loop.seat.host.run(sampler.stop_script(loop.state_dir), SHORT_TIMEOUT, force=True)
            except Exception as e:
                loop.error = loop.error or e
        hosts: dict[str, Any] = {}
        t0, t1 = cell.record.get("start_epoch"), cell.record.get("end_epoch")
        for loop in self.loops:
            loop.thread.join(STOP_WAIT)
            seat, got = loop.seat, loop.result
            if loop.thread.is_alive() or got is None or not got.stdout:
                why = loop.error or "no samples came back"
                self._note(cell, f"resources on {seat.name}: {why}")
                continue
            raw = RAW.format(host=seat.name)
            cell.keep(raw, got.stdout)
            data = sampler.parse(got.stdout)
            entry: dict[str, Any] = {
                "own": seat.own,
                "roles": seat.roles,
                "cores": rates.cores(data),
                "samples": len(data.samples),
                "raw": raw,
                "dirs": {d: data.device_of(d) for d in seat.dirs if d in data.dirs},
                "daemons": {str(p): label for p, label in seat.daemons.items()},
            }
            if seat.scrapes:
                entry["scraped"] = {label: urls for label, urls in seat.scrapes}
                if not data.curl:
                    self._note(cell, f"daemons' metrics on {seat.name}: the host has no curl")
            if t0 is not None and t1 is not None:
                entry["window"] = rates.window(data, t0, t1, seat.daemons, seat.sources)
                entry["series"] = series(data, t0, seat.daemons, seat.sources)
            hosts[seat.name] = entry
        if hosts:
            cell.record["resources"] = {
                "schema_version": SCHEMA_VERSION,
                "interval": self.interval,
                "hosts": hosts,
            }

    def collect(
        self, cell: Cell, texts: Mapping[str, str], parsed: list[Metric]
    ) -> tuple[list[Metric], str | None]:
        """The tool's JVM's collections, from its GC log: evidence, never a reason to fail."""
        if self.gc_log is None:
            return [], None
        if self.gc_log.endswith(gclog.EACH):
            # Every client JVM's log, one after another: their pauses and pause time summed,
            # the largest heap any of them had in use.
            got = cell.run_step(
                "gc_logs",
                f"cat -- {shlex.quote(cell.logdir)}/{gclog.EACH_GLOB} 2>/dev/null; exit 0",
                60.0,
            )
            text = got.stdout or None
            if text is not None:
                cell.keep(gclog.FILE, text)
                cell.record["logs"].append(f"raw/{gclog.FILE}")
        else:
            text = cell.read_log(self.gc_log, gclog.FILE)
        return (gclog.parse(text) if text is not None else []), None

    def cleanup(self, cell: Cell) -> None:
        """A loop still running (its stop never arrived) is asked again; its lifeline and
        timeout end it in any case."""
        for loop in self.loops:
            if loop.thread.is_alive():
                try:
                    loop.seat.host.run(
                        sampler.stop_script(loop.state_dir), SHORT_TIMEOUT, force=True
                    )
                except Exception:
                    pass
                loop.thread.join(STOP_WAIT)


def series(
    data: sampler.Samples,
    t0: float,
    labels: Mapping[int, str],
    daemons: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Each interval's values, column-wise: ``t`` (the interval's end, seconds since the
    measured step started) and ``seconds`` (its length; ``daemon_seconds`` for the daemons'
    metrics, read every few samples), and per ``<resource>/<metric>`` its
    values (None where that interval has none) and unit."""
    points = rates.intervals(data, True, labels, daemons)
    ts = sorted({p.t for p in points})
    # The daemons are read every few samples: their intervals end with a host interval but
    # are longer, so they have lengths of their own (one length per end overwrote the host
    # interval's with the daemons' at every read).
    lengths = {p.t: p.seconds for p in points if not p.resource.startswith(DAEMON)}
    daemon_lengths = {p.t: p.seconds for p in points if p.resource.startswith(DAEMON)}
    index = {t: i for i, t in enumerate(ts)}
    values: dict[str, list[float | None]] = {}
    units: dict[str, str] = {}
    for p in points:
        key = f"{p.resource}/{p.metric}"
        col = values.setdefault(key, [None] * len(ts))
        col[index[p.t]] = round(p.value, 9)
        units[key] = p.unit
    out: dict[str, Any] = {
        "t": [round(t - t0, 6) for t in ts],
        "seconds": [round(lengths.get(t, daemon_lengths.get(t, 0.0)), 6) for t in ts],
        "values": values,
        "units": units,
    }
    if daemon_lengths:
        out["daemon_seconds"] = [
            round(daemon_lengths[t], 6) if t in daemon_lengths else None for t in ts
        ]
    return out
