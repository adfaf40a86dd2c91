"""Shared pieces of the benchmark suite: result rows, timing, a workflow checkout, metadata.

Every figure is a :class:`Row`: what was measured, its value, the target it is held to (if
any) and whether it met it. ``run.py`` prints the rows as one table and writes them as JSON.
"""

from __future__ import annotations

import datetime as dt
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
WORKFLOW_FILES = ("Snakefile", "workflow/rules", "workflow/report", "profiles", "envs")


# How much each item measures: ``full`` (the figures the documentation quotes), ``quick``
# (fewer rounds, smaller inputs) and ``smoke`` (every step of every item once, on inputs so
# small that it takes seconds: tests/test_bench.py runs it, so that a changed signature cannot
# break the bench unseen; its figures mean nothing).
SIZES = ("full", "quick", "smoke")


def pick(size: str, full: Any, quick: Any, smoke: Any) -> Any:
    """The value of a setting at ``size``."""
    if size not in SIZES:
        raise ValueError(f"size {size!r}: one of {', '.join(SIZES)}")
    return {"full": full, "quick": quick, "smoke": smoke}[size]


@dataclass
class Row:
    """One line of the results table."""

    item: str  # "1 cell overhead", ...
    figure: str  # what the number is
    value: float | None
    unit: str  # "s", "x", "MB/s", "ms"
    target: str = ""  # "<= 0.5 s"; empty: shown for context, held to nothing
    met: bool | None = None  # None: no target
    details: dict[str, Any] = field(default_factory=dict)
    # What the figure compares: perfpost's own measurement and the baseline's, run in the
    # same command (``value`` is then their ratio or difference, the figure the target holds).
    perfpost: float | None = None
    baseline: float | None = None
    baseline_unit: str = ""  # unit of ``perfpost`` and ``baseline`` ("s", "ms", "%")
    baseline_name: str = ""  # what the baseline is ("bare ssh", "a bare Snakefile")
    why: str = ""  # a missed target: where the time goes (the profile), one sentence

    def _fmt(self, v: float | None, unit: str) -> str:
        if v is None:
            return "-"
        if unit == "x":
            return f"{v:.3f}x" if abs(v - 1) < 0.1 else f"{v:.2f}x"
        if unit == "ms":
            return f"{v:.1f} ms"
        if unit == "MB/s":
            return f"{v:.1f} MB/s"
        if unit == "s":
            return f"{v:.2f} s" if abs(v) < 100 else f"{v:.0f} s"
        if unit == "%":
            return f"{v:.2f}%"
        return f"{v:g} {unit}".strip()

    def shown_pair(self) -> tuple[str, str]:
        """perfpost's and the baseline's figures, as printed."""
        return self._fmt(self.perfpost, self.baseline_unit), self._fmt(
            self.baseline, self.baseline_unit
        )

    def shown(self) -> str:
        if self.value is None:
            return "skipped" if self.met is None else "error"
        v = self.value
        if self.unit == "x":
            return f"{v:.3f}x" if abs(v - 1) < 0.1 else f"{v:.2f}x"
        if self.unit == "ms":
            return f"{v:.1f} ms"
        if self.unit == "MB/s":
            return f"{v:.1f} MB/s"
        if self.unit == "s":
            return f"{v:.2f} s"
        return f"{v:g} {self.unit}".strip()


def check(row: Row, ok: Callable[[float], bool], target: str) -> Row:
    row.target = target
    row.met = None if row.value is None else bool(ok(row.value))
    return row


def median(xs: Sequence[float]) -> float:
    return float(statistics.median(xs))


def timed(argv: Sequence[str], cwd: Path | None = None, timeout: float = 600) -> tuple[float, Any]:
    """Wall seconds of a command, and its CompletedProcess (stdout and stderr captured)."""
    t = time.perf_counter()
    done = subprocess.run(
        list(argv),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env_with_venv(),
        stdin=subprocess.DEVNULL,
        check=False,
    )
    return time.perf_counter() - t, done


def env_with_venv() -> dict[str, str]:
    return {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}


def tool(name: str) -> str:
    exe = BIN / name
    return str(exe) if exe.exists() else shutil.which(name) or name


def snakemake(workdir: Path, *args: str, timeout: float = 600) -> tuple[float, Any]:
    """``snakemake ARGS`` in ``workdir``, timed; fails loudly when snakemake does."""
    wall, done = timed([tool("snakemake"), *args], cwd=workdir, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(
            f"snakemake {' '.join(args)} failed ({done.returncode}):\n"
            + (done.stdout[-2000:] + done.stderr[-3000:])
        )
    return wall, done


def post_argvs(plan: Any, experiment: str, recs: list[str], out: Path, env: str) -> dict:
    """``perfpost tables``, ``figures`` and ``post`` as the rules call them, for the finished
    records ``recs`` of ``experiment``, writing under ``out`` (``env``: a host's env.json)."""
    from perfpost import glue

    exp = glue.experiment_json(plan, experiment)
    tidy = ("--tidy", f"{out}/tidy.parquet")
    return {
        "tables": [
            "tables",
            "--axes",
            glue.axes_json(plan, experiment),
            "--out-dir",
            str(out),
            *recs,
        ],
        "figures": [
            *("figures", "--experiment", exp, *tidy, "--series", f"{out}/series.csv"),
            *("--out-dir", f"{out}/figures"),
        ],
        "post": [
            *("post", "--experiment", exp, *tidy, "--cells", f"{out}/cells.csv"),
            *("--figures", f"{out}/figures", "--env", env, "--out", f"{out}/index.md"),
            *("--data", f"{out}/data.csv", "--comparisons", f"{out}/comparisons.csv"),
        ],
    }


def job_counts(output: str) -> dict[str, int]:
    """Snakemake's "Job stats" table: rule -> jobs (the jobs a run ran or would run)."""
    counts: dict[str, int] = {}
    lines = output.splitlines()
    for i, line in enumerate(lines):
        if line.strip() == "Job stats:":
            for row in lines[i + 3 :]:
                parts = row.split()
                if len(parts) != 2 or not parts[1].isdigit():
                    break
                if parts[0] != "total":
                    counts[parts[0]] = int(parts[1])
            break
    return counts


def make_checkout(dest: Path, config: dict[str, Any]) -> Path:
    """The workflow as a user has it (Snakefile, rules, profile) with ``config`` as its config,
    as the end-to-end tests set it up."""
    for rel in WORKFLOW_FILES:
        src = ROOT / rel
        if src.is_dir():
            shutil.copytree(src, dest / rel)
        else:
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(src, dest / rel)
    write_config(dest / "config" / "config.yaml", config)
    return dest


def write_config(path: Path, config: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


# --------------------------------------------------------------------- CPU contention


def _busy_jiffies() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine since boot, from /proc/stat."""
    parts = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    vals = [int(x) for x in parts[:8]]
    idle = vals[3] + vals[4]
    hz = os.sysconf("SC_CLK_TCK")
    return (sum(vals) - idle) / hz, sum(vals) / hz


# CPU seconds of processes the suite started but does not reap itself (the testbed's sshd,
# killed by testbed.stop): items add them here before stopping those processes.
UNREAPED_CPU: list[float] = []


def process_cpu(pid: int) -> float:
    """CPU seconds of a live process and of the children it has reaped."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def tree_cpu(pid: int) -> float:
    """CPU seconds of a live process and all its live descendants (and what they reaped)."""
    kids: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        kids.setdefault(ppid, []).append(int(entry.name))
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        total += process_cpu(p)
        todo += kids.get(p, [])
    return total


def hosts_cpu(bed: Any) -> float:
    """CPU seconds a testbed's hosts (each sshd and all it ran) have used so far: an item's
    own, though it never reaps them."""
    return sum(tree_cpu(h.pid) for h in bed.hosts if h.pid)


def _own_cpu() -> float:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime + sum(UNREAPED_CPU)


# Before an item, the machine must have calmed down from the last one. The bench waits until
# the machine's busy CPU over a short window falls under SETTLE_CORES, for at most
# SETTLE_MAX_S, and says how long it waited and what it left at. (The busy "others" the
# deliver item read at a64f52e were not the last item's: the machine was quiet before it;
# they were its own hosts' sshd and tar, which it now counts as its own.)
SETTLE_CORES = 0.15
SETTLE_WINDOW_S = 2.0
SETTLE_MAX_S = 90.0


def settle(
    cores: float = SETTLE_CORES, window: float = SETTLE_WINDOW_S, limit: float = SETTLE_MAX_S
) -> dict[str, float]:
    """Wait until the whole machine is busy less than ``cores`` over ``window`` seconds, or
    ``limit`` seconds have passed; returns the wait and the busy cores of the last window."""
    start = time.perf_counter()
    while True:
        b0, _ = _busy_jiffies()
        time.sleep(window)
        busy = (_busy_jiffies()[0] - b0) / window
        waited = time.perf_counter() - start
        if busy < cores or waited >= limit:
            return {"settle_s": round(waited, 1), "busy_cores_before": round(busy, 2)}


class CpuWatch:
    """CPU the machine spent during a span, and how much of it was not this suite's.

    ``foreign_cores`` approximates the load from others (another engineer's tests): busy CPU
    minus this process, its reaped children and :data:`UNREAPED_CPU`, in cores on average.
    """

    def __init__(self) -> None:
        self.t = time.perf_counter()
        self.busy, _ = _busy_jiffies()
        self.own = _own_cpu()
        self.load = os.getloadavg()[0]

    def result(self) -> dict[str, float]:
        wall = time.perf_counter() - self.t
        busy = _busy_jiffies()[0] - self.busy
        own = _own_cpu() - self.own
        return {
            "wall_s": round(wall, 2),
            "busy_cores": round(busy / wall, 2) if wall else 0.0,
            "own_cores": round(own / wall, 2) if wall else 0.0,
            "foreign_cores": round(max(busy - own, 0.0) / wall, 2) if wall else 0.0,
            "loadavg_1m_at_start": round(self.load, 2),
        }


# ----------------------------------------------------------------------------- metadata


def machine() -> dict[str, Any]:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem = int(line.split()[1]) * 1024
    except OSError:
        pass
    os_name = ""
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                os_name = line.split("=", 1)[1].strip('"')
    except OSError:
        pass
    git = subprocess.run(
        ["git", "-C", str(ROOT), "describe", "--always", "--dirty", "--abbrev=12"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    versions = {}
    for name in ("snakemake", "paramiko", "pandas", "matplotlib"):
        try:
            from importlib.metadata import version

            versions[name] = version(name)
        except Exception:
            versions[name] = None
    return {
        "hostname": platform.node(),
        "cpu_model": cpu,
        "cpus": os.cpu_count(),
        "memory_bytes": mem,
        "kernel": platform.release(),
        "os": os_name,
        "python": platform.python_version(),
        "root": os.geteuid() == 0,
        "perfpost_git": git or None,
        "versions": versions,
        "loadavg": list(os.getloadavg()),
        # Set in some sandboxes: every Python process then compiles perfpost from source.
        "python_env": {
            k: os.environ.get(k) for k in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")
        },
        "time": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }


def asjson(rows: Sequence[Row]) -> list[dict[str, Any]]:
    return [asdict(r) | {"shown": r.shown()} for r in rows]


def table(rows: list[Row]) -> str:
    """The results as one markdown table: item, measure, perfpost, baseline, the figure held
    to the target (ratio or difference), target, met (a missed row says why)."""
    head = ("item", "measure", "perfpost", "baseline", "figure", "target", "met")
    body = []
    for r in rows:
        mine, base = r.shown_pair()
        if r.baseline_name and r.baseline is not None:
            base = f"{base} ({r.baseline_name})"
        met = "-" if r.met is None else ("yes" if r.met else "NO")
        if r.met is False and r.why:
            met += f": {r.why}"
        body.append((r.item, r.figure, mine, base, r.shown(), r.target or "-", met))
    widths = [max(len(x[i]) for x in [head, *body]) for i in range(len(head))]

    def line(cells: tuple[str, ...]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(head), sep, *(line(b) for b in body)])
