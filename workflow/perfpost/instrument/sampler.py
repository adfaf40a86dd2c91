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
and :func:`parse` reads what the loop printed; :mod:`perfpost.instrument.rates` turns its
counters into rates per interval and a summary of the measured step.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

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
