"""Item 1, cell overhead: one dd cell through ``snakemake`` + perfpost against the bare ``dd``.

The cell writes 64-byte blocks from /dev/zero into /dev/shm: a syscall-bound dd whose
throughput depends on the CPU it gets, which is what Snakemake and perfpost could take from it.
Large writes into tmpfs were tried first; on this VM they vary by 2x from run to run (fresh
guest pages), which would hide a 1% effect.

Each round runs, in rotating order: ``snakemake --cores 1 <the cell's record>`` in a workflow
checkout (the record removed first, so the cell runs), ``perfpost run-cell`` by itself, a
bare Snakefile whose one shell rule runs the same dd (Snakemake without perfpost), and the
bare ``dd`` with the same arguments into a fresh directory. Overhead is wall time minus
the bare dd's wall time; throughput comes from the cell's record and from dd's own stderr.

What perfpost itself adds is held against the bare Snakefile: per ``snakemake`` run of one
cell, and per extra cell of a MANY_CELLS-cell run against the bare Snakefile's extra job
(runs of MANY_CELLS jobs and of one, of both, alternately). With --smoke: one round, 3 cells
instead of MANY_CELLS, small dd and no warm-up.
"""

from __future__ import annotations

import json
import os
import random
import re
import resource
import shutil
import statistics
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

from benchlib import Row, check, make_checkout, median, pick, snakemake, timed, tool

EXPERIMENT = "cell"
MANY = "many"
# Twenty, not ten: each round's figure is (wall of the many - wall of one) / (MANY_CELLS - 1),
# and a one-cell run's wall moves by 0.3 s from run to run on this VM, which over 9 extra cells
# had moved the per-cell figure by 30 ms (0.03 to 0.05 s in three full runs of one revision).
MANY_CELLS = 20
MANY_COUNT = 100_000  # dd blocks of each of the many cells
# Where the time goes when a target is missed: the jobs of a 10-cell run traced with perf
# (sched_process_exec/fork/exit), and the bare Snakefile's likewise, on the 2-core VM the
# figures come from.
WHY_INVOCATION = (
    "the run's janitor, which serves the cells, is one more Python process importing what a"
    " cell needs (0.19 s of CPU, beside Snakemake reading the Snakefile), and the cell's job is"
    " a Python client handing the cell to it, where the bare Snakefile runs dd itself"
)
WHY_EXTRA_CELL = (
    "a served cell's job spends about 110 ms beside a 110 ms dd where the bare Snakefile's"
    " spends about 20 ms (perf's scheduler events over a 6-cell run): before dd, the job's"
    " client (a Python start without site-packages) handing the cell to the run's cell"
    " server, about 20 ms; the forked cell's set-up, 14 ms; the tool's version and the"
    " preparation, 9 ms; the resource sampler's start and first sample, which the measured"
    " step waits for so that samples bracket it, 26 ms; after dd, the sampler's last sample,"
    " the clean-up and the record, 34 ms. With `resources: false` an extra cell took about"
    " 30 ms less (0.19 to 0.21 s against 0.21 to 0.24 s, three runs each)"
)
_SUMMARY = re.compile(r"^(\d+) bytes .*copied, ([\d.e+-]+) s,", re.M)


def bare_dd(argv: list[str]) -> tuple[float, float]:
    """(wall seconds, throughput B/s from dd's own summary) of one bare dd."""
    t = time.perf_counter()
    # As perfpost's localhost runs it: the C locale, this environment.
    done = subprocess.run(
        argv, capture_output=True, text=True, check=True, env={**os.environ, "LC_ALL": "C"}
    )
    wall = time.perf_counter() - t
    m = _SUMMARY.search(done.stderr)
    if not m:
        raise RuntimeError(f"no dd summary in {done.stderr!r}")
    return wall, int(m.group(1)) / float(m.group(2))


def children_cpu() -> float:
    """CPU seconds of the processes this one started and waited for, and of theirs (a
    snakemake run with its jobs): what contention from others hardly changes."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def record_throughput(path: Path) -> float:
    rec = json.loads(path.read_text())
    if rec["status"] != "done":
        raise RuntimeError(f"{path}: {rec['status']}: {rec['reason']}")
    return next(m["value"] for m in rec["metrics"] if m["name"] == "throughput")


def median_ci(xs: list[float], seed: int = 1) -> tuple[float, float]:
    """95% percentile-bootstrap interval of the median of ``xs``: how far noise alone moves
    it with this many rounds."""
    rng = random.Random(seed)
    meds = sorted(statistics.median(rng.choices(xs, k=len(xs))) for _ in range(2000))
    return meds[int(0.025 * len(meds))], meds[int(0.975 * len(meds)) - 1]


def bare_snakefile(shm: Path, count: int) -> str:
    """Snakemake without perfpost: one shell rule running the same dd as a cell, one job per
    output ``{shm}/plain/{i}/dd.out``, its summary in ``dd-{i}.log``."""
    return (
        "rule dd:\n"
        "    output:\n"
        f'        "{shm}/plain/{{i}}/dd.out",\n'
        "    log:\n"
        '        "dd-{i}.log",\n'
        "    shell:\n"
        f'        "LC_ALL=C dd if=/dev/zero of={{output}} bs=64 count={count} 2> {{log}}"\n'
    )


def marginal_cost(
    work: Path, shm: Path, rounds: int, log, many: int = MANY_CELLS, count: int = MANY_COUNT
) -> dict[str, list[float]]:
    """Extra seconds of one more job once Snakemake is up, with perfpost and without: per
    round, a run of ``many`` small cells against a run of one, and a bare Snakefile's run of
    ``many`` jobs (the same dd) against its run of one, alternately; and the bare dd of one
    such cell, to say what a cell costs beyond its own dd."""
    from perfpost import paths

    records = [paths.record(MANY, "default", "localhost", r, 1) for r in range(1, many + 1)]
    cells_dir = work / "results" / MANY / "cells"
    plain = work / "bare-snakemake-many"
    plain.mkdir()
    (plain / "Snakefile").write_text(bare_snakefile(shm, count))
    outputs = [f"{shm}/plain/{i}/dd.out" for i in range(1, many + 1)]

    def perfpost_run(targets: list[str]) -> float:
        shutil.rmtree(cells_dir, ignore_errors=True)
        return snakemake(work, "--cores", "1", *targets)[0]

    def plain_run(targets: list[str]) -> float:
        shutil.rmtree(shm / "plain", ignore_errors=True)
        return snakemake(plain, "--cores", "1", *targets)[0]

    kinds = {
        "perfpost": lambda: perfpost_run(records[:1]),
        "perfpost many": lambda: perfpost_run(records),
        "bare snakemake": lambda: plain_run(outputs[:1]),
        "bare snakemake many": lambda: plain_run(outputs),
    }
    got: dict[str, list[float]] = {k: [] for k in kinds}
    bare: list[float] = []
    order = list(kinds)
    for i in range(rounds):
        for k in order[i % len(order) :] + order[: i % len(order)]:
            got[k].append(kinds[k]())
        for _ in range(3):
            d = shm / f"bare-{uuid.uuid4().hex[:8]}"
            d.mkdir()
            bare.append(
                bare_dd(["dd", "if=/dev/zero", f"of={d}/dd.out", "bs=64", f"count={count}"])[0]
            )
            shutil.rmtree(d)
        log(
            f"  round {i + 1}: perfpost 1 cell {got['perfpost'][-1]:.2f} s, {many} cells "
            f"{got['perfpost many'][-1]:.2f} s; bare Snakefile 1 job "
            f"{got['bare snakemake'][-1]:.2f} s, {many} jobs "
            f"{got['bare snakemake many'][-1]:.2f} s"
        )
    per = {
        "perfpost": [
            (m - o) / (many - 1) for o, m in zip(got["perfpost"], got["perfpost many"], strict=True)
        ],
        "bare snakemake": [
            (m - o) / (many - 1)
            for o, m in zip(got["bare snakemake"], got["bare snakemake many"], strict=True)
        ],
    }
    return {**{f"{k}_wall_s": v for k, v in got.items()}, **per, "bare_dd_wall_s": bare}


def run(scale: str, log=print) -> list[Row]:
    rounds = pick(scale, 5, 2, 1)
    count = pick(scale, 2_000_000, 1_000_000, 10_000)
    many = pick(scale, MANY_CELLS, MANY_CELLS, 3)
    many_count = pick(scale, MANY_COUNT, MANY_COUNT, 1_000)
    shm = Path(f"/dev/shm/perfpost-bench-{uuid.uuid4().hex[:8]}")
    shm.mkdir()
    work = Path(tempfile.mkdtemp(prefix="perfpost-bench-cell-"))
    try:
        config = {
            "experiments": {
                EXPERIMENT: {
                    "tool": "dd",
                    "params": {"dir": str(shm), "bs": 64, "count": count},
                    "repeats": 1,
                },
                # Small cells in one snakemake run: the cost of one more cell.
                MANY: {
                    "tool": "dd",
                    "params": {"dir": str(shm), "bs": 64, "count": many_count},
                    "repeats": many,
                },
            }
        }
        make_checkout(work, config)
        from perfpost import paths
        from perfpost.plan import build as pconfig

        plan = pconfig.build_plan(config)
        spec = plan.spec(EXPERIMENT, "default", "localhost", 1)
        record = paths.record(EXPERIMENT, "default", "localhost", 1, 1)
        cells_dir = work / "results" / EXPERIMENT / "cells"

        # What Snakemake costs before any job runs: the dry run of the same target.
        dry = []
        for _ in range(pick(scale, 3, 1, 1)):
            shutil.rmtree(cells_dir, ignore_errors=True)
            dry.append(snakemake(work, "-n", "--cores", "1", record)[0])

        cpu: dict[str, list[float]] = {"snakemake": [], "bare snakemake": []}

        def via_snakemake() -> tuple[float, float]:
            shutil.rmtree(cells_dir, ignore_errors=True)
            c = children_cpu()
            wall, _ = snakemake(work, "--cores", "1", record)
            cpu["snakemake"].append(children_cpu() - c)
            return wall, record_throughput(work / record)

        def via_run_cell() -> tuple[float, float]:
            out = work / "direct" / "attempt-1" / "record.json"
            shutil.rmtree(work / "direct", ignore_errors=True)
            wall, done = timed(
                [tool("perfpost"), "run-cell", "--spec", spec.to_json(), "--out", str(out)]
            )
            if done.returncode:
                raise RuntimeError(done.stdout + done.stderr)
            return wall, record_throughput(out)

        def via_bare() -> tuple[float, float]:
            d = shm / f"bare-{uuid.uuid4().hex[:8]}"
            d.mkdir()
            try:
                return bare_dd(["dd", "if=/dev/zero", f"of={d}/dd.out", "bs=64", f"count={count}"])
            finally:
                shutil.rmtree(d)

        plain = work / "bare-snakemake"
        plain.mkdir()
        (plain / "Snakefile").write_text(bare_snakefile(shm, count))

        def via_plain_snakemake() -> tuple[float, float]:
            shutil.rmtree(shm / "plain", ignore_errors=True)
            c = children_cpu()
            wall, _ = snakemake(plain, "--cores", "1", f"{shm}/plain/1/dd.out")
            cpu["bare snakemake"].append(children_cpu() - c)
            m = _SUMMARY.search((plain / "dd-1.log").read_text())
            if not m:
                raise RuntimeError(f"no dd summary in {plain / 'dd-1.log'}")
            return wall, int(m.group(1)) / float(m.group(2))

        # One unmeasured warm-up of each: page cache for the Python files, tmpfs pages.
        if scale != "smoke":
            via_bare(), via_run_cell(), via_snakemake(), via_plain_snakemake()
        for runs in cpu.values():
            runs.clear()
        kinds = {
            "snakemake": via_snakemake,
            "run-cell": via_run_cell,
            "bare snakemake": via_plain_snakemake,
            "bare": via_bare,
        }
        got: dict[str, list[tuple[float, float]]] = {k: [] for k in kinds}
        order = list(kinds)
        for i in range(rounds):
            for k in order[i % len(order) :] + order[: i % len(order)]:
                got[k].append(kinds[k]())
            log(
                f"  round {i + 1}: "
                + ", ".join(
                    f"{k} {got[k][-1][0]:.2f} s {got[k][-1][1] / 1e6:.1f} MB/s" for k in kinds
                )
            )
        marginal = marginal_cost(work, shm, pick(scale, 5, 1, 1), log, many, many_count)
        bare_wall = [w for w, _ in got["bare"]]
        bare_thr = [t for _, t in got["bare"]]
        extra = [w - b for (w, _), b in zip(got["snakemake"], bare_wall, strict=True)]
        extra_rc = [w - b for (w, _), b in zip(got["run-cell"], bare_wall, strict=True)]
        extra_plain = [w - b for (w, _), b in zip(got["bare snakemake"], bare_wall, strict=True)]
        ratio = [t / b for (_, t), b in zip(got["snakemake"], bare_thr, strict=True)]
        ratio_rc = [t / b for (_, t), b in zip(got["run-cell"], bare_thr, strict=True)]
        noise = statistics.stdev(bare_thr) / statistics.mean(bare_thr) if rounds > 1 else 0.0
        common = {
            "rounds": rounds,
            "dd": f"bs=64 count={count} into {shm}",
            "bare_wall_s": bare_wall,
            "bare_throughput_Bps": bare_thr,
            "snakemake_wall_s": [w for w, _ in got["snakemake"]],
            "snakemake_throughput_Bps": [t for _, t in got["snakemake"]],
            "run_cell_wall_s": [w for w, _ in got["run-cell"]],
            "run_cell_throughput_Bps": [t for _, t in got["run-cell"]],
            "bare_throughput_cv": noise,
        }
        # What perfpost adds to Snakemake: the same dd through a bare Snakefile, same rounds.
        # Each against the dd it ran itself (its bytes over its throughput): this dd's time
        # varies by +-20% from run to run, which subtracting another run's dd would add.
        dd_bytes = 64 * count
        own = [w - dd_bytes / t for w, t in got["snakemake"]]
        own_plain = [w - dd_bytes / t for w, t in got["bare snakemake"]]
        mine, theirs = median(own), median(own_plain)
        per_mine, per_theirs = median(marginal["perfpost"]), median(marginal["bare snakemake"])
        return [
            check(
                Row(
                    "1 cell overhead",
                    "perfpost's cost per snakemake run of one cell, extra wall vs its own dd",
                    mine - theirs,
                    "s",
                    details={"per_round_perfpost": own, "per_round_bare_snakefile": own_plain},
                    perfpost=mine,
                    baseline=theirs,
                    baseline_unit="s",
                    baseline_name="a bare Snakefile",
                    why=WHY_INVOCATION,
                ),
                lambda v: v <= 0.3,
                "<= 0.3 s",
            ),
            check(
                Row(
                    "1 cell overhead",
                    f"perfpost's cost per extra cell, {many} cells vs 1 in one snakemake run",
                    per_mine - per_theirs,
                    "s",
                    details=marginal,
                    perfpost=per_mine,
                    baseline=per_theirs,
                    baseline_unit="s",
                    baseline_name="a bare Snakefile's extra job",
                    why=WHY_EXTRA_CELL,
                ),
                lambda v: v <= 0.05,
                "<= 0.05 s",
            ),
            Row(
                "1 cell overhead",
                "  CPU of a snakemake run of one cell with its jobs (the same dd in both)",
                median(cpu["snakemake"]) - median(cpu["bare snakemake"]),
                "s",
                details=cpu,
                perfpost=median(cpu["snakemake"]),
                baseline=median(cpu["bare snakemake"]),
                baseline_unit="s",
                baseline_name="a bare Snakefile",
            ),
            check(
                Row(
                    "1 cell overhead",
                    "extra wall per cell, snakemake + perfpost vs bare dd",
                    median(extra),
                    "s",
                    details={"per_round": extra, **common},
                ),
                lambda v: v <= 0.5,
                "<= 0.5 s",
            ),
            check(
                Row(
                    "1 cell overhead",
                    "throughput ratio, perfpost cell / bare dd (95% CI {:.3f}..{:.3f})".format(
                        *median_ci(ratio)
                    ),
                    median(ratio),
                    "x",
                    details={
                        "per_round": ratio,
                        "median_ci95": median_ci(ratio),
                        "bare_noise_cv": noise,
                        "ratio_of_medians": median([t for _, t in got["snakemake"]])
                        / median(bare_thr),
                    },
                ),
                lambda v: abs(v - 1) <= 0.01,
                "1 +- 0.01",
            ),
            Row(
                "1 cell overhead",
                "  of which snakemake startup (dry run of the cell)",
                median(dry),
                "s",
                details={"runs": dry},
            ),
            Row(
                "1 cell overhead",
                f"  one more cell in a {many}-cell run, extra wall vs bare dd",
                median(marginal["perfpost"]) - median(marginal["bare_dd_wall_s"]),
                "s",
                details={
                    "runs": marginal["perfpost"],
                    "bare_dd_wall_s": marginal["bare_dd_wall_s"],
                },
            ),
            Row(
                "1 cell overhead",
                "  a bare Snakefile running the same dd (no perfpost), extra wall vs bare dd",
                median(extra_plain),
                "s",
                details={"per_round": extra_plain},
            ),
            Row(
                "1 cell overhead",
                "  perfpost run-cell alone (no cell server), extra wall vs bare dd",
                median(extra_rc),
                "s",
                details={"per_round": extra_rc},
            ),
            Row(
                "1 cell overhead",
                "  perfpost run-cell alone (no cell server), throughput ratio",
                median(ratio_rc),
                "x",
                details={"per_round": ratio_rc},
            ),
            Row(
                "1 cell overhead",
                "  bare dd throughput (CV across rounds: noise floor)",
                median(bare_thr) / 1e6,
                "MB/s",
                details={"cv": noise},
            ),
        ]
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(shm, ignore_errors=True)
