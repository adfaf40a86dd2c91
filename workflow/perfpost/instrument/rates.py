"""From the sampler's counters to what a host did: rates per interval (:func:`intervals`: CPU
shares, memory, disks, network, pressure, the followed processes and the daemons' own
metrics) and a summary of the measured step (:func:`window`: each rate over the step, bracketed
by the samples at its edges, and the share of its time CPU and disks were busy). Pure: it
reads :class:`perfpost.instrument.sampler.Samples` and nothing else.
"""

from __future__ import annotations

import itertools
import math
import re
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from perfpost.clusters import metrics as daemon_metrics
from perfpost.instrument.sampler import (
    BUSY,
    SECTOR,
    Sample,
    Samples,
    disk_of,
    whole_disks,
)


@dataclass(frozen=True)
class Point:
    """One rate or gauge over one interval (ending at ``t``, epoch seconds)."""

    resource: str  # cpu, cpu0, disk:vda, net:eth0, memory, pressure, system, process:<label>
    metric: str
    t: float
    seconds: float
    value: float
    unit: str


# CPU time fields of /proc/stat, in order.
_CPU_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def _cpu_shares(a: list[int], b: list[int]) -> dict[str, float] | None:
    d = [max(y - x, 0) for x, y in zip(a[:8], b[:8], strict=False)]
    d += [0] * (8 - len(d))
    total = sum(d)
    if total <= 0:
        return None
    f = dict(zip(_CPU_FIELDS, d, strict=True))
    user = f["user"] + f["nice"]
    system = f["system"] + f["irq"] + f["softirq"]
    return {
        "busy": (user + system) / total,
        "user": user / total,
        "system": system / total,
        "iowait": f["iowait"] / total,
        "steal": f["steal"] / total,
    }


def intervals(
    data: Samples,
    active_only: bool = True,
    labels: Mapping[int, str] | None = None,
    daemons: Mapping[str, Sequence[Any]] | None = None,
) -> list[Point]:
    """Rates and gauges over each interval between two samples. Disks are whole disks;
    with ``active_only``, disks and interfaces that did nothing over the whole series are
    left out (a machine's dozen idle loop devices). ``labels`` names followed processes."""
    samples = data.samples
    points: list[Point] = []
    if len(samples) < 2:
        return points
    first, last = samples[0], samples[-1]
    disks = sorted(whole_disks(last.disks))
    if active_only:
        disks = [n for n in disks if n in first.disks and last.disks[n][:8] != first.disks[n][:8]]
    nets = sorted(
        n
        for n in last.nets
        if not active_only or (n in first.nets and first.nets[n] != last.nets[n])
    )
    for a, b in itertools.pairwise(samples):
        points += _interval(data, a, b, disks, nets, labels or {})
    # The daemons' metrics are read every few samples: intervals run from one read to the next.
    read = [s for s in samples if s.daemons]
    values = _daemon_values(read, daemons or {})
    for (a, b), (va, vb) in zip(itertools.pairwise(read), itertools.pairwise(values), strict=True):
        points += _daemon_points(a, b, va, vb, daemons or {})
    return points


def _daemon_values(
    samples: Sequence[Sample], daemons: Mapping[str, Sequence[Any]]
) -> list[dict[str, dict[str, float]]]:
    """Each sample's daemon metrics, read once: label -> metric -> raw value."""
    return [
        {
            label: daemon_metrics.read("\n".join(s.daemons[label]), found)
            for label, found in daemons.items()
            if label in s.daemons
        }
        for s in samples
    ]


def _daemon_points(
    a: Sample,
    b: Sample,
    va: Mapping[str, Mapping[str, float]],
    vb: Mapping[str, Mapping[str, float]],
    daemons: Mapping[str, Sequence[Any]],
) -> list[Point]:
    """A counter's rate over the interval, a gauge's value at its end, per daemon."""
    out: list[Point] = []
    dt = b.t - a.t
    if dt <= 0:
        return out
    for label, found in daemons.items():
        now, before = vb.get(label, {}), va.get(label, {})
        for src in found:
            if src.name not in now:
                continue
            if src.ops and now.get(src.ops) == before.get(src.ops, now.get(src.ops)):
                continue  # no operation in the interval: its average is no number
            if src.kind == "counter":
                if src.name not in before:
                    continue
                value = max(now[src.name] - before[src.name], 0.0) * src.scale / dt
            else:
                value = now[src.name] * src.scale
            if math.isfinite(value):
                out.append(Point(f"daemon:{label}", src.name, b.t, dt, value, src.unit))
    return out


def _interval(
    data: Samples,
    a: Sample,
    b: Sample,
    disks: list[str],
    nets: list[str],
    labels: Mapping[int, str],
) -> list[Point]:
    """The points of the interval from sample ``a`` to ``b``."""
    points: list[Point] = []
    dt = b.t - a.t
    if dt > 0:

        def add(resource: str, metric: str, value: float, unit: str) -> None:
            if math.isfinite(value):
                points.append(Point(resource, metric, b.t, dt, value, unit))

        for cpu in b.cpu:
            if cpu not in a.cpu:
                continue
            shares = _cpu_shares(a.cpu[cpu], b.cpu[cpu])
            if shares is None:
                continue
            if cpu == "cpu":
                for k, v in shares.items():
                    add("cpu", k, v, "ratio")
            else:  # each core: a single thread's limit shows on one core, not on all
                for k, v in shares.items():
                    add(cpu, k, v, "ratio")
        if "ctxt" in a.system and "ctxt" in b.system:
            add("system", "context_switches", (b.system["ctxt"] - a.system["ctxt"]) / dt, "1/s")
        for k in ("procs_running", "procs_blocked"):
            if k in b.system:
                add("system", k, float(b.system[k]), "count")
        mem = b.memory
        if "total" in mem and "available" in mem:
            add("memory", "used", float(mem["total"] - mem["available"]), "B")
        for k in ("cached", "dirty", "writeback"):
            if k in mem:
                add("memory", k, float(mem[k]), "B")
        for name in disks:
            if name not in a.disks or name not in b.disks:
                continue
            x, y = a.disks[name], b.disks[name]
            d = [max(q - p, 0) for p, q in zip(x, y, strict=False)]
            ios = d[0] + d[4]
            res = f"disk:{name}"
            add(res, "read_bytes", d[2] * SECTOR / dt, "B/s")
            add(res, "write_bytes", d[6] * SECTOR / dt, "B/s")
            add(res, "reads", d[0] / dt, "1/s")
            add(res, "writes", d[4] / dt, "1/s")
            add(res, "util", min(d[9] / 1000.0 / dt, 1.0), "ratio")
            add(res, "queue", d[10] / 1000.0 / dt, "")
            if ios:
                add(res, "await", (d[3] + d[7]) / 1000.0 / ios, "s")
        for name in nets:
            if name not in a.nets or name not in b.nets:
                continue
            (rx0, tx0), (rx1, tx1) = a.nets[name], b.nets[name]
            add(f"net:{name}", "rx_bytes", max(rx1 - rx0, 0) / dt, "B/s")
            add(f"net:{name}", "tx_bytes", max(tx1 - tx0, 0) / dt, "B/s")
        for key in b.pressure:
            if key in a.pressure:
                share = (b.pressure[key] - a.pressure[key]) / 1e6 / dt
                add("pressure", key.replace(".", "_"), min(max(share, 0.0), 1.0), "ratio")
        for pid, (ticks, rss) in b.procs.items():
            if pid not in a.procs:
                continue
            res = f"process:{labels.get(pid, pid)}"
            add(res, "cpu", (ticks - a.procs[pid][0]) / data.clk_tck / dt, "cores")
            add(res, "rss", float(rss), "B")
    return points


def cores(data: Samples) -> int:
    """How many CPUs the host has (its ``cpuN`` lines)."""
    if not data.samples:
        return 0
    return sum(1 for k in data.samples[-1].cpu if k != "cpu")


def _bracket(samples: Sequence[Sample], t0: float, t1: float) -> tuple[Sample, Sample] | None:
    """The samples that enclose [t0, t1] most tightly: the last at or before t0 and the
    first at or after t1 (the nearest ones where none does)."""
    if len(samples) < 2:
        return None
    before = [s for s in samples if s.t <= t0] or [samples[0]]
    after = [s for s in samples if s.t >= t1] or [samples[-1]]
    a, b = before[-1], after[0]
    if b.t <= a.t:
        return None
    return a, b


def window(
    data: Samples,
    t0: float,
    t1: float,
    labels: Mapping[int, str] | None = None,
    daemons: Mapping[str, Sequence[Any]] | None = None,
) -> dict[str, Any]:
    """The measured step [t0, t1] on this host: each rate over the samples that bracket it,
    and for CPU and disks the share of the step's time they were busy (:data:`BUSY`).

    Returns ``{"seconds", "cores", "cpu": {...}, "disks": {name: {...}}, "nets": {...},
    "pressure": {...}, "processes": {label: {...}}, "memory": {...}}``."""
    out: dict[str, Any] = {"seconds": t1 - t0, "cores": cores(data)}
    pair = _bracket(data.samples, t0, t1)
    if pair is None:
        return out
    a, b = pair
    span = b.t - a.t
    out["span"] = span
    pts = intervals(Samples(data.clk_tck, data.page, data.interval, [a, b]), False, labels)
    inside = [
        p
        for p in intervals(data, False, labels)
        if p.t - p.seconds < t1 and p.t > t0  # intervals that overlap the step
    ]

    def busy_share(resource: str, metric: str) -> float | None:
        """The share of the step's time in intervals where ``resource`` was busy."""
        ps = [p for p in inside if p.resource == resource and p.metric == metric]
        total = sum(_overlap(p, t0, t1) for p in ps)
        if total <= 0:
            return None
        return sum(_overlap(p, t0, t1) for p in ps if p.value >= BUSY) / total

    cpu = {p.metric: p.value for p in pts if p.resource == "cpu"}
    if cpu:
        cpu["busy_time_share"] = busy_share("cpu", "busy")
        per_core = [
            p.value for p in pts if re.fullmatch(r"cpu\d+", p.resource) and p.metric == "busy"
        ]
        if per_core:
            cpu["busiest_core"] = max(per_core)
        out["cpu"] = cpu
    names = set(a.disks) & set(b.disks)
    disks = {}
    for name in sorted(whole_disks(names)):
        vals = {p.metric: p.value for p in pts if p.resource == f"disk:{name}"}
        if not vals or not any(vals.get(k) for k in ("reads", "writes", "util")):
            continue
        vals["busy_time_share"] = busy_share(f"disk:{name}", "util")
        vals["read_total"] = float((b.disks[name][2] - a.disks[name][2]) * SECTOR)
        vals["write_total"] = float((b.disks[name][6] - a.disks[name][6]) * SECTOR)
        disks[name] = vals
    out["disks"] = disks
    # Partitions' written bytes, so a directory's partition can be matched to its disk.
    out["partitions"] = {
        n: {
            "disk": disk_of(n, names),
            "write_total": float((b.disks[n][6] - a.disks[n][6]) * SECTOR),
            "read_total": float((b.disks[n][2] - a.disks[n][2]) * SECTOR),
        }
        for n in sorted(names - whole_disks(names))
        if b.disks[n][:8] != a.disks[n][:8]
    }
    nets = {}
    for p in pts:
        if p.resource.startswith("net:") and p.value > 0:
            nets.setdefault(p.resource[4:], {})[p.metric] = p.value
    for name, vals in nets.items():
        (rx0, tx0), (rx1, tx1) = a.nets[name], b.nets[name]
        vals["rx_total"], vals["tx_total"] = float(rx1 - rx0), float(tx1 - tx0)
    out["nets"] = nets
    out["pressure"] = {p.metric: p.value for p in pts if p.resource == "pressure"}
    procs: dict[str, dict[str, float]] = {}
    for p in pts:
        if p.resource.startswith("process:"):
            procs.setdefault(p.resource[8:], {})[p.metric] = p.value
    out["processes"] = procs
    out["memory"] = {p.metric: p.value for p in pts if p.resource == "memory"}
    if daemons:
        out["daemons"] = _daemon_window(data, t0, t1, daemons)
    return out


def _daemon_window(
    data: Samples, t0: float, t1: float, daemons: Mapping[str, Sequence[Any]]
) -> dict[str, dict[str, float]]:
    """Per daemon over the measured step: a counter's rate over the bracketing samples, a
    gauge's median over the intervals that overlap the step."""
    pair = _bracket([s for s in data.samples if s.daemons], t0, t1)
    if pair is None:
        return {}
    a, b = pair
    va, vb = _daemon_values([a, b], daemons)
    over = _daemon_points(a, b, va, vb, daemons)
    inside = [
        p
        for p in intervals(data, False, None, daemons)
        if p.resource.startswith("daemon:") and p.t - p.seconds < t1 and p.t > t0
    ]
    out: dict[str, dict[str, float]] = {}
    for label, found in daemons.items():
        vals: dict[str, float] = {}
        for src in found:
            if src.kind == "counter":
                got = [
                    p.value
                    for p in over
                    if p.resource == f"daemon:{label}" and p.metric == src.name
                ]
            else:
                inner = [
                    p.value
                    for p in inside
                    if p.resource == f"daemon:{label}" and p.metric == src.name
                ]
                got = [statistics.median(inner)] if inner else []
            if got:
                vals[src.name] = got[0]
        if vals:
            out[label] = vals
    return out


def _overlap(p: Point, t0: float, t1: float) -> float:
    return max(0.0, min(p.t, t1) - max(p.t - p.seconds, t0))
