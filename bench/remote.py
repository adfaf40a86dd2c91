"""Remote execution overhead, against plain ssh to the same real sshd hosts.

    python bench/remote.py [--repeat 50]

Starts a testbed of 8 hosts (network namespaces as root, loopback ports otherwise) and prints:

1. per-command latency of `true` on a warm perfpost connection, next to `ssh` opening a new
   connection each time and `ssh` through a warm ControlMaster, as ratios to the latter;
2. fan-out: the wall time of one cell run on k hosts at once (one `perfpost run-cell`-like
   process per host, as Snakemake runs them) divided by the same on one host, for k = 1, 3, 8,
   and the skew of the measured steps' start times between hosts.

The fan-out cell measures `sleep 2`: a workload that uses no CPU, so the figure is perfpost's
own cost (connecting, preparing, fetching logs, cleaning up) and not the tool competing for
this machine's 2 cores with itself.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from perfpost import hostscript, testbed
from perfpost.adapters.base import Proc
from perfpost.remote import RemoteHost

SLEEP = 2.0


def spec(bed: testbed.Testbed, name: str) -> dict:
    return bed.spec(name)


def ssh_argv(bed: testbed.Testbed, name: str, *extra: str) -> list[str]:
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


def per_command(bed: testbed.Testbed, repeat: int) -> dict[str, float]:
    host = RemoteHost(spec(bed, "h1"))
    host.run("true", 10)  # connect once: the figure is for a warm connection
    t = time.perf_counter()
    for _ in range(repeat):
        host.run("true", 10)
    warm = (time.perf_counter() - t) / repeat
    host.close()

    t = time.perf_counter()
    for _ in range(max(repeat // 5, 5)):
        subprocess.run([*ssh_argv(bed, "h1"), "true"], check=True)
    cold = (time.perf_counter() - t) / max(repeat // 5, 5)

    with tempfile.TemporaryDirectory() as d:
        cm = ["-o", "ControlMaster=auto", "-o", f"ControlPath={d}/cm", "-o", "ControlPersist=60"]
        subprocess.run([*ssh_argv(bed, "h1", *cm), "true"], check=True)
        t = time.perf_counter()
        for _ in range(repeat):
            subprocess.run([*ssh_argv(bed, "h1", *cm), "true"], check=True)
        master = (time.perf_counter() - t) / repeat
        subprocess.run(
            [*ssh_argv(bed, "h1", *cm[:4], "-O", "exit")], capture_output=True, check=False
        )
    return {
        "perfpost, warm connection": warm,
        "ssh, new connection each": cold,
        "ssh, warm ControlMaster": master,
    }


def one_cell(host_spec: dict) -> dict:
    """What a cell job does on its host, with `sleep` as the tool: returns host timings."""
    host = RemoteHost(host_spec)
    token = f"perfpost-bench-{time.time_ns()}"
    logdir, workdir = f"/tmp/{token}-logs", f"/tmp/{token}"
    try:
        host.run(hostscript.prepare_script(workdir, logdir, []), 60)
        out = host.run(
            hostscript.measure_script("measure", logdir, [Proc(("sleep", f"{SLEEP:g}"), "s.log")]),
            60,
        )
        host.fetch(f"{logdir}/s.log", Path(tempfile.gettempdir()) / f"{token}.log")
        timing = hostscript.parse_markers(out.stdout)["measure"]
        return {"start": timing.start, "end": timing.end}
    finally:
        host.run(hostscript.cleanup_script(workdir, logdir), 60, force=True)
        host.close()


def fan_out(bed: testbed.Testbed, k: int) -> tuple[float, float]:
    """Wall time of one cell on k hosts, each in its own process as Snakemake runs them."""
    names = [h.name for h in bed.hosts[:k]]
    t = time.perf_counter()
    procs = [
        subprocess.Popen(
            [sys.executable, __file__, "--cell", json.dumps(spec(bed, n))],
            stdout=subprocess.PIPE,
            text=True,
        )
        for n in names
    ]
    timings = [json.loads(p.communicate()[0]) for p in procs]
    wall = time.perf_counter() - t
    starts = [x["start"] for x in timings]
    return wall, max(starts) - min(starts)


def together_skew(bed: testbed.Testbed, k: int) -> float:
    """Start skew of one small dd cell run with start_together on k hosts."""
    from perfpost.config import build_plan
    from perfpost.runner import run_together

    names = [h.name for h in bed.hosts[:k]]
    cfg = {
        "hosts": {n: {x: y for x, y in spec(bed, n).items() if x != "name"} for n in names},
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
    assert all(r["status"] == "done" for r in recs), [r["reason"] for r in recs]
    return recs[0]["start_skew"]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=50)
    ap.add_argument("--cell", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.cell:
        print(json.dumps(one_cell(json.loads(args.cell))))
        return 0
    with tempfile.TemporaryDirectory(prefix="perfpost-bench-") as d:
        bed = testbed.start(8, d)
        try:
            lat = per_command(bed, args.repeat)
            base = lat["ssh, warm ControlMaster"]
            print(f"testbed: {len(bed.hosts)} hosts ({bed.mode}), user {bed.user}")
            print()
            print("| per-command latency (`true`) | ms | ratio to ssh ControlMaster |")
            print("| --- | --- | --- |")
            for name, v in lat.items():
                print(f"| {name} | {v * 1000:.1f} | {v / base:.2f} |")
            print()
            rows = []
            for k in (1, 3, 8):
                runs = [fan_out(bed, k) for _ in range(3)]
                rows.append(
                    (
                        k,
                        statistics.median(w for w, _ in runs),
                        statistics.median(s for _, s in runs),
                    )
                )
            print(
                f"| fan-out: one `sleep {SLEEP:g}` cell on k hosts | wall s (median of 3) | "
                "wall / wall at k=1 | start skew ms |"
            )
            print("| --- | --- | --- | --- |")
            for k, wall, skew in rows:
                print(f"| k = {k} | {wall:.2f} | {wall / rows[0][1]:.2f} | {skew * 1000:.0f} |")
            print()
            print("| start_together: one dd cell on k hosts | start skew ms (median of 3) |")
            print("| --- | --- |")
            for k in (3, 8):
                skew = statistics.median(together_skew(bed, k) for _ in range(3))
                print(f"| k = {k} | {skew * 1000:.1f} |")
        finally:
            bed.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
