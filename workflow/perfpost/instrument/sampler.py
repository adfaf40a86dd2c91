"""Resource telemetry: what each host did while a cell measured, read from /proc and /sys.

Nothing is installed on a host: a POSIX shell loop there prints, once per interval, the
host's clock and the kernel's own counters (``/proc/stat``, ``/proc/meminfo``,
``/proc/diskstats``, ``/proc/net/dev``, ``/proc/pressure/*`` and ``/proc/<pid>/stat`` of
the processes it follows: a cluster's daemons) with one ``tail`` (one process a sample, plus
``sleep``; under bash the clock is read without a process). The loop runs as an ordinary
host command, so it has the lifeline every command has (perfpost gone: the host kills it)
and a timeout; perfpost stops it with ``USR1`` right after the measured step, and it takes
one last sample then, so the measured window is bracketed by samples taken at its edges.

This module is pure: :func:`sampler_script` and :func:`stop_script` are text for the host,
:func:`parse` reads what the loop printed, :func:`intervals` turns counters into rates per
interval, and :func:`window` summarises the measured step.
"""

from __future__ import annotations

import itertools
import math
import re
import shlex
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from perfpost.clusters import metrics as daemon_metrics

SAMPLE_MARKER = "@perfpost-sample"
HEADER_MARKER = "@perfpost-sampler"
DIR_MARKER = "@perfpost-dir"
SCHEMA_VERSION = 1
INTERVAL = 1.0  # seconds between samples, by default
SECTOR = 512  # bytes: /proc/diskstats counts 512-byte sectors whatever the device's own size

FILES = (
    "/proc/stat",
    "/proc/meminfo",
    "/proc/diskstats",
    "/proc/net/dev",
    "/proc/pressure/cpu",
    "/proc/pressure/io",
    "/proc/pressure/memory",
)

# A share of time at or above which a resource counts as busy in an interval; a resource
# busy in at least SATURATED_SHARE of the measured step's time was saturated.
BUSY = 0.90
SATURATED_SHARE = 0.50

_CLOCK = (
    'if [ -n "${EPOCHREALTIME:-}" ]; then now() { t=$EPOCHREALTIME; }; '
    "else now() { t=$(date +%s.%N); }; fi"
)


def sampler_script(
    state_dir: str,
    interval: float = INTERVAL,
    pids: Iterable[int] = (),
    dirs: Iterable[str] = (),
    scrapes: Iterable[tuple[str, Sequence[str]]] = (),
    daemon_every: int = 1,
) -> str:
    """The sampling loop, for ``Host.run``: it prints samples on standard output until it
    gets ``USR1`` (:func:`stop_script`), then prints one more and exits. ``state_dir`` holds
    its pid once the first sample is out (:func:`ready_script`), and goes when it ends.
    ``dirs``: directories whose device is printed first (:data:`DIR_MARKER`). ``scrapes``:
    (label, URLs): every ``daemon_every``-th sample, and the last, also fetches a daemon's
    URLs (its ``/jmx`` queries) with one curl, where the host has it."""
    d = shlex.quote(state_dir)
    files = " ".join([*FILES, *(f"/proc/{int(p)}/stat" for p in pids)])
    body = "\n".join(
        [
            "set -u",
            _CLOCK,
            f"mkdir -p -- {d} || exit 97",
            "stop=; trap 'stop=1' USR1",
            f"trap 'rm -rf -- {d}' EXIT",
            f'echo "{HEADER_MARKER} schema={SCHEMA_VERSION} clk_tck=$(getconf CLK_TCK 2>/dev/null)'
            f" page=$(getconf PAGESIZE 2>/dev/null) interval={interval:g}"
            ' curl=$(command -v curl >/dev/null 2>&1 && echo 1 || echo 0)"',
            # The device of each directory that matters (its nearest existing ancestor's).
            *(
                f'p={shlex.quote(x)}; while [ ! -e "$p" ]; do p=$(dirname -- "$p"); done; '
                f'printf \'%s %s %s\\n\' {DIR_MARKER} "$(stat -c %d -- "$p")" {shlex.quote(x)}'
                for x in dirs
            ),
            "curl=; command -v curl >/dev/null 2>&1 && curl=1",
            "first=1; n=0",
            "while :; do",
            f'  now; echo "{SAMPLE_MARKER} $t"',
            f"  tail -n +1 -- {files} 2>/dev/null",
            "  n=$((n+1)); read_daemons=; "
            f'[ $(( (n - 1) % {max(1, int(daemon_every))} )) -eq 0 ] || [ -n "$stop" ] '
            "&& read_daemons=1",
            *(
                '  [ -n "$curl" ] && [ -n "$read_daemons" ] && { '
                f"printf '\\n==> daemon:%s <==\\n' {shlex.quote(label)}; "
                f"curl -s -m 2 {' '.join(shlex.quote(u) for u in urls)}; echo; }}"
                for label, urls in scrapes
            ),
            # Ready once the first sample is out: the measured step starts after it.
            f'  [ -n "$first" ] && {{ echo $$ > {d}/pid; first=; }}',
            '  [ -n "$stop" ] && break',
            f"  sleep {interval:g} & s=$!",
            # A trapped signal ends `wait` at once: the last sample is taken when asked for.
            '  wait "$s"; [ -n "$stop" ] && kill "$s" 2>/dev/null',
            "done",
            "exit 0",
        ]
    )
    return (
        "export LC_ALL=C\n"
        'if [ -z "${EPOCHREALTIME:-}" ] && command -v bash >/dev/null 2>&1; then '
        f"exec bash -c {shlex.quote(body)}; fi\n" + body + "\n"
    )


def ready_script(state_dir: str, wait: float = 10.0) -> str:
    """Wait (at most ``wait`` seconds) until the loop in ``state_dir`` took its first sample;
    exit 1 if it did not."""
    d = shlex.quote(state_dir)
    return (
        f"i=0; while [ ! -s {d}/pid ]; do i=$((i+1)); "
        f"[ $i -gt {int(wait * 50)} ] && exit 1; sleep 0.02; done; exit 0\n"
    )


def stop_script(state_dir: str) -> str:
    """Ask the loop in ``state_dir`` for its last sample; quiet when it is gone already."""
    d = shlex.quote(state_dir)
    return f'p=$(cat -- {d}/pid 2>/dev/null) && kill -USR1 "$p" 2>/dev/null; exit 0\n'


@dataclass
class Sample:
    """The kernel's counters at one moment (host clock, epoch seconds)."""

    t: float
    cpu: dict[str, list[int]] = field(default_factory=dict)  # cpu, cpu0..: jiffies
    system: dict[str, int] = field(default_factory=dict)  # ctxt, procs_running, ...
    memory: dict[str, int] = field(default_factory=dict)  # bytes
    disks: dict[str, list[int]] = field(default_factory=dict)  # name -> diskstats fields
    nets: dict[str, tuple[int, int]] = field(default_factory=dict)  # rx, tx bytes
    pressure: dict[str, int] = field(default_factory=dict)  # cpu.some, io.full, ...: us
    procs: dict[int, tuple[int, int]] = field(default_factory=dict)  # pid -> cpu ticks, rss
    daemons: dict[str, list[str]] = field(default_factory=dict)  # label -> its JMX answers
    devices: dict[str, tuple[int, int]] = field(default_factory=dict)  # disk -> major, minor


@dataclass
class Samples:
    clk_tck: int = 100
    page: int = 4096
    interval: float = INTERVAL
    samples: list[Sample] = field(default_factory=list)
    dirs: dict[str, int] = field(default_factory=dict)  # directory -> st_dev
    curl: bool = True  # whether the host had curl to read daemons' metrics with
    devices: dict[str, tuple[int, int]] = field(default_factory=dict)  # disk -> major, minor

    def device_of(self, directory: str) -> str | None:
        """The diskstats name of the block device under ``directory``, None for one that
        has none (a tmpfs, an overlay) or a directory never looked up."""
        dev = self.dirs.get(directory)
        if dev is None:
            return None
        # Linux's dev_t: major in bits 8-19 and 32-43, minor in bits 0-7 and 20-31.
        major = ((dev >> 8) & 0xFFF) | ((dev >> 32) & ~0xFFF)
        minor = (dev & 0xFF) | ((dev >> 12) & ~0xFF)
        return next((n for n, mm in self.devices.items() if mm == (major, minor)), None)


_MEMORY = {
    "MemTotal": "total",
    "MemAvailable": "available",
    "Cached": "cached",
    "Dirty": "dirty",
    "Writeback": "writeback",
}


def _section(sample: Sample, name: str, line: str, page: int) -> None:
    parts = line.split()
    if not parts:
        return
    if name == "/proc/stat":
        if parts[0].startswith("cpu"):
            sample.cpu[parts[0]] = [int(x) for x in parts[1:]]
        elif parts[0] in ("ctxt", "procs_running", "procs_blocked"):
            sample.system[parts[0]] = int(parts[1])
    elif name == "/proc/meminfo":
        key = parts[0].rstrip(":")
        if key in _MEMORY:
            sample.memory[_MEMORY[key]] = int(parts[1]) * 1024  # kB is KiB here
    elif name == "/proc/diskstats":
        if len(parts) >= 14:
            sample.disks[parts[2]] = [int(x) for x in parts[3:]]
            sample.devices[parts[2]] = (int(parts[0]), int(parts[1]))
    elif name == "/proc/net/dev":
        if ":" in line:
            iface, _, rest = line.partition(":")
            fields = rest.split()
            if len(fields) >= 9:
                sample.nets[iface.strip()] = (int(fields[0]), int(fields[8]))
    elif name.startswith("/proc/pressure/"):
        kind = name.rsplit("/", 1)[1]
        total = next((p for p in parts if p.startswith("total=")), None)
        if total is not None:
            sample.pressure[f"{kind}.{parts[0]}"] = int(total[6:])
    elif re.fullmatch(r"/proc/\d+/stat", name):
        # The command name may hold spaces and parentheses: fields count from its last ')'.
        rest = line.rpartition(")")[2].split()
        if len(rest) >= 22:
            pid = int(name.split("/")[2])
            sample.procs[pid] = (int(rest[11]) + int(rest[12]), int(rest[21]) * page)


def parse(text: str) -> Samples:
    """What :func:`sampler_script` printed. A sample cut short (the loop killed while it
    printed) is dropped: it lacks a file every earlier sample has, or its last line has no
    end. Anything unreadable in a section is left out: a counter is never guessed."""
    out = Samples()
    if text and not text.endswith("\n"):
        text = text.rpartition("\n")[0]
    current: Sample | None = None
    section = ""
    seen: list[tuple[Sample, set[str]]] = []
    for line in text.splitlines():
        if line.startswith(HEADER_MARKER):
            for word in line.split()[1:]:
                key, _, value = word.partition("=")
                try:
                    if key == "clk_tck" and value:
                        out.clk_tck = int(value)
                    elif key == "page" and value:
                        out.page = int(value)
                    elif key == "interval" and value:
                        out.interval = float(value)
                    elif key == "curl" and value:
                        out.curl = value == "1"
                except ValueError:
                    pass
            continue
        if line.startswith(DIR_MARKER + " "):
            _, dev, directory = line.split(" ", 2)
            if dev.isdigit():
                out.dirs[directory] = int(dev)
            continue
        if line.startswith(SAMPLE_MARKER):
            try:
                current = Sample(t=float(line.split()[1]))
            except (IndexError, ValueError):
                current = None
                continue
            seen.append((current, set()))
            section = ""
            continue
        if current is None:
            continue
        if line.startswith("==> ") and line.endswith(" <=="):
            section = line[4:-4]
            if section in FILES:
                seen[-1][1].add(section)
            if section.startswith("daemon:"):
                current.daemons[section[7:]] = []
            continue
        if section.startswith("daemon:"):
            current.daemons[section[7:]].append(line)
            continue
        try:
            _section(current, section, line, out.page)
        except (ValueError, IndexError):
            continue
    if seen:
        wanted = seen[0][1]
        out.samples = [s for s, files in seen if files >= wanted and s.cpu]
    if out.samples:
        out.devices = dict(out.samples[-1].devices)
    return out


def whole_disks(names: Iterable[str]) -> set[str]:
    """The disks among diskstats' names, not their partitions (``vda1`` of ``vda``,
    ``nvme0n1p1`` of ``nvme0n1``, ``mmcblk0p1``): a partition's I/O is its disk's too."""
    names = set(names)
    out = set()
    for n in names:
        m = re.fullmatch(r"(.*\d)p\d+", n) or re.fullmatch(r"(.*\D)\d+", n)
        if m and m.group(1) in names:
            continue
        out.add(n)
    return out


def disk_of(name: str, names: Iterable[str]) -> str:
    """The whole disk a partition (or disk) name belongs to."""
    names = set(names)
    m = re.fullmatch(r"(.*\d)p\d+", name) or re.fullmatch(r"(.*\D)\d+", name)
    if m and m.group(1) in names:
        return m.group(1)
    return name


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
