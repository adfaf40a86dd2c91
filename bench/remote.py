"""Items 2 and 3, remote execution: perfpost against plain ssh to the same real sshd hosts.

    python bench/remote.py [--quick]        # just these items; bench/run.py runs them all

Starts a testbed of 16 hosts (network namespaces as root, loopback ports otherwise) and
measures:

2. per-command latency of ``true`` on a warm perfpost connection, next to ``ssh`` through a
   warm ControlMaster (the target's baseline) and ``ssh`` opening a new connection each time;
3. fan-out: one cell run on k hosts at once, k = 1, 3, 8, 16, one ``perfpost run-cell``
   process per host as Snakemake runs them: wall time over the same at k = 1, and the skew of
   the measured steps' start times between hosts. The same with bare ``ssh`` (one new
   connection per host running the same command) is the machine's own baseline. Cells that
   start together (``start_together``, one process, a common start time) are measured too.

The fan-out cell goes through perfpost's real runner (version, prepare, measure, fetch,
cleanup, parse, record) with ``sleep 2`` as its tool: a workload that uses no CPU, so the
figure is perfpost's own cost and not the tool competing for this machine's 2 cores with
itself. The sshd hosts run on this machine too: their share of the CPU is in every figure,
perfpost's and ssh's alike.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import UNREAPED_CPU, Row, check, median, tree_cpu

SLEEP = 2.0
HOSTS = 16
FAN_OUT = (1, 3, 8, 16)


def ssh_argv(bed: Any, name: str, *extra: str) -> list[str]:
    h = bed.host(name)
    return [
        "ssh",
        "-q",
        "-i",
        bed.key,
        "-o",
        f"UserKnownHostsFile={bed.known_hosts}",
        "-o",
        "StrictHostKeyChecking=yes",
        "-o",
        "BatchMode=yes",
        "-p",
        str(h.port),
        *extra,
        f"{bed.user}@{h.address}",
    ]


# ---------------------------------------------------------------- 2. per-command latency


def per_command(bed: Any, repeat: int) -> dict[str, float]:
    """Seconds per ``true``: perfpost warm, ssh ControlMaster warm, ssh new connection."""
    from perfpost.run.remote import RemoteHost

    host = RemoteHost(bed.spec("h1"))
    host.run("true", 10)  # connect once: the figure is for a warm connection
    warm: list[float] = []
    master: list[float] = []
    with tempfile.TemporaryDirectory() as d:
        cm = ["-o", "ControlMaster=auto", "-o", f"ControlPath={d}/cm", "-o", "ControlPersist=60"]
        subprocess.run([*ssh_argv(bed, "h1", *cm), "true"], check=True)
        # Alternate blocks of 10 so a burst of load elsewhere hits both sides alike.
        for _ in range(max(repeat // 10, 1)):
            t = time.perf_counter()
            for _ in range(10):
                host.run("true", 10)
            warm.append((time.perf_counter() - t) / 10)
            t = time.perf_counter()
            for _ in range(10):
                subprocess.run([*ssh_argv(bed, "h1", *cm), "true"], check=True)
            master.append((time.perf_counter() - t) / 10)
        subprocess.run(
            [*ssh_argv(bed, "h1", *cm[:4], "-O", "exit")], capture_output=True, check=False
        )
    host.close()
    cold = []
    for _ in range(5):
        t = time.perf_counter()
        subprocess.run([*ssh_argv(bed, "h1"), "true"], check=True)
        cold.append(time.perf_counter() - t)
    return {"perfpost": median(warm), "master": median(master), "cold": median(cold)}


# ------------------------------------------------------------------------ 3. fan-out


def sleep_adapter() -> SimpleNamespace:
    """A tool adapter whose measured step is ``sleep``: registered in the child only."""
    from perfpost.tools.base import Metric, Plan, Proc

    return SimpleNamespace(
        NAME="sleep",
        RUNTIME=None,
        HOST_KEY=None,
        SYNC_ADJUST=(),
        plan=lambda params, workdir: Plan(
            measure=(Proc(("sleep", f"{params['seconds']:g}"), "sleep.log"),),
            description="sleep",
        ),
        version_argv=lambda params: ("sleep", "--version"),
        parse_cell=lambda logs, wall_time=None: [Metric("slept", wall_time or 0.0, "s")],
        error_reason=lambda texts: None,
    )


def cell_spec(bed: Any, name: str) -> str:
    from perfpost.plan.config import CellSpec

    return CellSpec(
        experiment="fanout",
        cell="default",
        labels={},
        host=bed.spec(name),
        repeat=1,
        tool="sleep",
        params={"dir": "/tmp/perfpost-bench", "seconds": SLEEP},
        after=[],
        sync_threshold=0.1,
        timeout=60.0,
    ).to_json()


def child(spec: str, out: str) -> int:
    """``perfpost run-cell`` with the sleep tool registered: what a cell job runs."""
    from perfpost import cli, tools

    tools.TOOLS["sleep"] = sleep_adapter()
    return cli.main(["run-cell", "--spec", spec, "--out", out])


def hosts_cpu(bed: Any) -> float:
    """CPU seconds the testbed's hosts (sshd and all they ran) have used so far."""
    return sum(tree_cpu(h.pid) for h in bed.hosts if h.pid)


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def cpu_per_cell(bed: Any, k: int, fn: Any) -> tuple[tuple[float, float], float, float]:
    """``fn()``'s result, and the CPU seconds per host it cost here (client processes) and
    on the hosts (sshd, the shell and the tool)."""
    c0, h0 = children_cpu(), hosts_cpu(bed)
    got = fn()
    return got, (children_cpu() - c0) / k, (hosts_cpu(bed) - h0) / k


def fan_out(bed: Any, k: int, scratch: Path) -> tuple[float, float]:
    """(wall, start skew) of one cell on k hosts, each in its own process."""
    names = [h.name for h in bed.hosts[:k]]
    outs = [scratch / f"k{k}-{time.time_ns()}" / n / "attempt-1" / "record.json" for n in names]
    t = time.perf_counter()
    procs = [
        subprocess.Popen(
            [sys.executable, __file__, "--cell", cell_spec(bed, n), "--out", str(o)],
            stdout=subprocess.DEVNULL,
        )
        for n, o in zip(names, outs, strict=True)
    ]
    codes = [p.wait(120) for p in procs]
    wall = time.perf_counter() - t
    recs = [json.loads(o.read_text()) for o in outs]
    bad = [r["reason"] for r in recs if r["status"] != "done"]
    if any(codes) or bad:
        raise RuntimeError(f"fan-out k={k}: exit codes {codes}, failed: {bad}")
    starts = [r["start_epoch"] for r in recs]
    return wall, max(starts) - min(starts)


def bare_fan_out(bed: Any, k: int) -> tuple[float, float]:
    """(wall, start skew) of ``ssh host 'date; sleep 2'`` on k hosts at once."""
    names = [h.name for h in bed.hosts[:k]]
    t = time.perf_counter()
    procs = [
        subprocess.Popen(
            [*ssh_argv(bed, n), f"date +%s.%N; sleep {SLEEP:g}"], stdout=subprocess.PIPE, text=True
        )
        for n in names
    ]
    starts = [float(p.communicate(timeout=120)[0].split()[0]) for p in procs]
    wall = time.perf_counter() - t
    return wall, max(starts) - min(starts)


def together_skew(bed: Any, k: int) -> float:
    """Start skew of one small dd cell run with start_together on k hosts."""
    from perfpost.plan.config import build_plan
    from perfpost.run.remote import RemoteHost
    from perfpost.run.runner import run_together

    names = [h.name for h in bed.hosts[:k]]
    cfg = {
        "hosts": {n: {x: y for x, y in bed.spec(n).items() if x != "name"} for n in names},
        "experiments": {
            "t": {
                "tool": "dd",
                "hosts": names,
                "start_together": True,
                "repeats": 1,
                "params": {"dir": "/tmp/perfpost-bench", "bs": "4k", "count": 256},
            }
        },
    }
    specs = list(build_plan(cfg).jobs())
    with tempfile.TemporaryDirectory() as d:
        outs = [Path(d) / s.host["name"] / "attempt-1" / "record.json" for s in specs]
        hosts = [RemoteHost(s.host) for s in specs]
        try:
            recs = run_together(specs, outs, hosts)
        finally:
            for h in hosts:
                h.close()
    bad = [r["reason"] for r in recs if r["status"] != "done"]
    if bad:
        raise RuntimeError(f"start_together k={k}: {bad}")
    return recs[0]["start_skew"]


def run(quick: bool, log=print) -> list[Row]:
    from benchlib import ROOT

    sys.path.insert(0, str(ROOT))
    from tests import testbed

    runs = 1 if quick else 3
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="perfpost-bench-remote-") as d:
        t = time.perf_counter()
        bed = testbed.start(HOSTS, d)
        log(f"  testbed: {len(bed.hosts)} hosts ({bed.mode}) in {time.perf_counter() - t:.1f} s")
        try:
            lat = per_command(bed, 20 if quick else 60)
            log("  per command: " + ", ".join(f"{k} {v * 1000:.1f} ms" for k, v in lat.items()))
            rows.append(
                check(
                    Row(
                        "2 command latency",
                        "warm perfpost `true` / ssh ControlMaster `true`",
                        lat["perfpost"] / lat["master"],
                        "x",
                        details={k: v * 1000 for k, v in lat.items()} | {"mode": bed.mode},
                    ),
                    lambda v: v <= 1.5,
                    "<= 1.5x",
                )
            )
            rows.append(
                Row(
                    "2 command latency", "  perfpost, warm connection", lat["perfpost"] * 1000, "ms"
                )
            )
            rows.append(
                Row("2 command latency", "  ssh, warm ControlMaster", lat["master"] * 1000, "ms")
            )
            rows.append(
                Row("2 command latency", "  ssh, new connection each", lat["cold"] * 1000, "ms")
            )

            scratch = Path(d) / "records"
            ks = (1, 8) if quick else FAN_OUT
            fan: dict[int, list[tuple[float, float]]] = {k: [] for k in ks}
            bare: dict[int, list[tuple[float, float]]] = {k: [] for k in ks}
            fan_out(bed, 1, scratch)  # warm-up: page cache, host keys, first logins
            cpu: dict[str, dict[int, tuple[float, float]]] = {"perfpost": {}, "ssh": {}}
            for i in range(runs):
                for k in ks:
                    got, client, host = cpu_per_cell(bed, k, lambda k=k: fan_out(bed, k, scratch))
                    fan[k].append(got)
                    cpu["perfpost"][k] = (client, host)
                    got, client, host = cpu_per_cell(bed, k, lambda k=k: bare_fan_out(bed, k))
                    bare[k].append(got)
                    cpu["ssh"][k] = (client, host)
                log(
                    f"  fan-out run {i + 1}: "
                    + ", ".join(
                        f"k={k} {fan[k][-1][0]:.2f} s/{fan[k][-1][1] * 1000:.0f} ms "
                        f"(ssh {bare[k][-1][0]:.2f} s)"
                        for k in ks
                    )
                )
            wall = {k: median([w for w, _ in v]) for k, v in fan.items()}
            skew = {k: median([s for _, s in v]) for k, v in fan.items()}
            bwall = {k: median([w for w, _ in v]) for k, v in bare.items()}
            bskew = {k: median([s for _, s in v]) for k, v in bare.items()}
            raw = {"perfpost": fan, "ssh": bare}
            rows.append(
                Row(
                    "3 fan-out",
                    f"  wall k=1: one `sleep {SLEEP:g}` cell, perfpost run-cell",
                    wall[1],
                    "s",
                    details={"runs": raw["perfpost"][1]},
                )
            )
            for k in ks[1:]:
                r = Row(
                    "3 fan-out",
                    f"{'' if k == 8 else '  '}wall k={k} / wall k=1",
                    wall[k] / wall[1],
                    "x",
                    details={"wall_s": wall[k], "runs": raw["perfpost"][k]},
                )
                rows.append(check(r, lambda v: v <= 1.10, "<= 1.10x") if k == 8 else r)
            for k in ks[1:]:
                r = Row(
                    "3 fan-out",
                    f"{'' if k == 8 else '  '}start skew between hosts, k={k}",
                    skew[k] * 1000,
                    "ms",
                )
                rows.append(check(r, lambda v: v < 100, "< 100 ms") if k == 8 else r)
            for k in ks[1:]:
                rows.append(
                    Row(
                        "3 fan-out",
                        f"  bare ssh: wall k={k} / k=1 ({bwall[1]:.2f} s), "
                        f"skew {bskew[k] * 1000:.0f} ms",
                        bwall[k] / bwall[1],
                        "x",
                        details={"wall_s": bwall[k], "skew_s": bskew[k], "runs": bare[k]},
                    )
                )
            for who in ("perfpost", "ssh"):
                client, host = cpu["perfpost" if who == "perfpost" else "ssh"][8]
                rows.append(
                    Row(
                        "3 fan-out",
                        f"  k=8, {who}: CPU per host {client:.2f} s here + {host:.2f} s "
                        f"in sshd; all 8 on {os.cpu_count()} cores",
                        (client + host) * 8 / (os.cpu_count() or 1),
                        "s",
                        details={"client_s": client, "host_s": host, "all_k": cpu[who]},
                    )
                )
            for k in (8,) if quick else (3, 8, 16):
                sk = median([together_skew(bed, k) for _ in range(runs)])
                r = Row(
                    "3 fan-out",
                    f"{'' if k == 8 else '  '}start_together skew, k={k}",
                    sk * 1000,
                    "ms",
                )
                rows.append(check(r, lambda v: v < 100, "< 100 ms") if k == 8 else r)
                log(f"  start_together k={k}: {sk * 1000:.1f} ms")
        finally:
            UNREAPED_CPU.append(hosts_cpu(bed))
            bed.stop()
    return rows


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--cell", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.cell:
        return child(args.cell, args.out)
    from benchlib import table

    print(table(run(args.quick)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
