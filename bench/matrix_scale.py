"""Items 4 and 6, matrix scale and the report: Snakemake over 1,000 and 10,000 dd cells.

The matrix is bs (10 sizes, 512 B .. 256 KiB) x count (10, or 100 for 10,000 cells) x dir
(10 directories in /dev/shm), one repeat, on localhost: cells so small (at most 2.5 MB) that
re-running one costs almost nothing but perfpost and Snakemake. With --smoke the matrix is
2 x 2 x 2, and the steps that only --quick leaves out are left out too.

In one workflow checkout, in order:

- ``snakemake -n report`` over 1,000 and 10,000 cells that never ran, and over a bare
  Snakefile of 10,000 shell jobs with the same output paths and no perfpost (Snakemake's
  own floor for that many jobs, measured in the same run);
- 1,000 finished cells are fabricated: one cell runs for real, and every other record is
  written from it (labels, parameters, command, metrics and dd log made consistent) with
  perfpost's own ``records.write_json_atomic`` at the path ``paths.record`` names;
- ``snakemake report`` renders the post from them (item 6);
- ``snakemake report`` again, with nothing to do (the no-op run);
- one cell's repeat directory is removed and ``snakemake <its record>`` runs it again (the
  re-run of one cell: what Snakemake plans and runs for it inside the 1,000-cell matrix);
- another cell's is removed and ``snakemake report`` runs it and then renders its
  experiment's tables, figures and post again over all 1,000 cells (item 6's work);
- the workflow's steps (``perfpost env``, ``tables``, ``figures``, ``post``) run by
  themselves on the same 1,000 records, to say where the time of a run goes.
"""

from __future__ import annotations

import json
import random
import shutil
import tempfile
import time
import uuid
from pathlib import Path

from benchlib import (
    Row,
    check,
    job_counts,
    make_checkout,
    median,
    pick,
    post_argvs,
    snakemake,
    timed,
    tool,
    write_config,
)

EXPERIMENT = "scale"
# Seconds a report over the finished cells may take before the item gives up: far past its
# target (30 s), so that a machine busy with other work gives a slow figure, not an error.
REPORT_TIMEOUT = 1800


def matrix_config(shm: Path, counts: int, sizes: int = 10) -> dict:
    """``sizes`` block sizes x ``counts`` counts x ``sizes`` directories."""
    return {
        "experiments": {
            EXPERIMENT: {
                "title": "Matrix scale",
                "tool": "dd",
                "params": {"mode": "write"},
                "axes": {
                    "bs": [512 * 2**i for i in range(sizes)],
                    "count": list(range(1, counts + 1)),
                    "dir": {f"d{i}": str(shm / f"d{i}") for i in range(sizes)},
                },
                "repeats": 1,
                "plot": {"x": "bs", "facet": "dir"},
            }
        }
    }


BARE_SNAKEFILE = """\
# 10,000 dd jobs with perfpost's path shape, and nothing else: Snakemake's own cost.
CELLS = [f"bs={512 * 2**b},count={c},dir=d{d}" for b in range(10) for c in range(1, 101)
         for d in range(10)]
CELL = "results/scale/cells/{cell}/{host}/r{repeat}/attempt-{attempt}"


rule report:
    input:
        expand(CELL + "/record.json", cell=CELLS, host="localhost", repeat=1, attempt=1),


rule cell:
    output:
        CELL + "/record.json",
    log:
        CELL + "/perfpost.log",
    shell:
        "dd if=/dev/zero of={output} bs=512 count=1 2> {log}"
"""


def fabricate(work: Path, config: dict) -> int:
    """Finished records for every cell of ``config``: one real run, the rest written from it
    with the package's own writer. Returns how many were written."""
    import os

    from perfpost import paths, records
    from perfpost.plan import build as pconfig
    from perfpost.run import hostscript
    from perfpost.run.hosts import LocalHost
    from perfpost.run.runner import run_cell
    from perfpost.tools import dd

    plan = pconfig.build_plan(json.loads(json.dumps(config)))
    specs = list(plan.jobs())
    cwd = os.getcwd()
    os.chdir(work)
    try:
        first = specs[0]
        path = Path(paths.record(first.experiment, first.cell, "localhost", first.repeat, 1))
        template = run_cell(first, path, LocalHost())
        if template["status"] != "done":
            raise RuntimeError(f"the template cell failed: {template['reason']}")
        base_rate = next(m["value"] for m in template["metrics"] if m["name"] == "throughput")
        start = template["start_epoch"]
        rng = random.Random(20260101)
        for i, spec in enumerate(specs[1:], start=1):
            p = spec.params
            bs, count = int(p["bs"]), int(p["count"])
            nbytes = bs * count
            rate = base_rate * (0.5 + bs / 262144) * (1 + rng.gauss(0, 0.05))
            elapsed = nbytes / rate
            workdir = f"{p['dir']}/{hostscript.SCRATCH_PREFIX}{uuid.uuid4().hex[:12]}"
            argv = dd.plan(p, workdir).measure[0].argv
            t0 = start + i * 0.05
            rec = {
                **template,
                "cell": spec.cell,
                "labels": spec.labels,
                "measurement": spec.measurement_id(),
                "params": p,
                "command": hostscript.quote(argv),
                "workdir": workdir,
                "start_epoch": t0,
                "end_epoch": t0 + elapsed,
                "start": _iso(t0),
                "end": _iso(t0 + elapsed),
                "metrics": [
                    {"name": "wall_time", "value": elapsed + 0.002, "unit": "s"},
                    {"name": "bytes", "value": float(nbytes), "unit": "B"},
                    {"name": "elapsed", "value": elapsed, "unit": "s"},
                    {"name": "throughput", "value": nbytes / elapsed, "unit": "B/s"},
                    {"name": "records_in_full", "value": float(count), "unit": "count"},
                    {"name": "records_in_partial", "value": 0.0, "unit": "count"},
                    {"name": "records_out_full", "value": float(count), "unit": "count"},
                    {"name": "records_out_partial", "value": 0.0, "unit": "count"},
                ],
            }
            out = Path(paths.record(spec.experiment, spec.cell, "localhost", spec.repeat, 1))
            raw = out.parent / paths.RAW
            raw.mkdir(parents=True, exist_ok=True)
            (raw / dd.WRITE_LOG).write_text(
                f"{count}+0 records in\n{count}+0 records out\n"
                f"{nbytes} bytes copied, {elapsed:.6g} s, {rate / 1e6:.3g} MB/s\n"
            )
            records.write_json_atomic(out, rec)
        return len(specs)
    finally:
        os.chdir(cwd)


def _iso(ts: float) -> str:
    from perfpost.run.cell.attempt import iso

    return iso(ts)


def steps(work: Path, config: dict) -> dict[str, float]:
    """Each workflow step by itself, as the rules call it, on the finished records."""
    import os

    from perfpost import glue
    from perfpost.glue import attempts
    from perfpost.plan import build as pconfig

    cwd = os.getcwd()
    os.chdir(work)
    try:
        plan = pconfig.build_plan(json.loads(json.dumps(config)))
        recs = attempts.current_records(plan, EXPERIMENT)
    finally:
        os.chdir(cwd)
    out = work / "bench-steps"
    out.mkdir(exist_ok=True)
    argvs = {
        "env": ["env", "--host", glue.host_json(plan, "localhost"), "--out", f"{out}/env.json"],
        **post_argvs(plan, EXPERIMENT, recs, out, f"{out}/env.json"),
        "import only": [],
    }
    got = {}
    for name, argv in argvs.items():
        if name == "import only":
            import sys

            wall, done = timed(
                [
                    sys.executable,
                    "-c",
                    "import perfpost.cli, perfpost.analysis.report, perfpost.analysis.plots",
                ],
                cwd=work,
            )
        else:
            wall, done = timed([tool("perfpost"), *argv], cwd=work)
        if done.returncode:
            raise RuntimeError(f"perfpost {name} failed: {done.stdout}{done.stderr}")
        got[name] = wall
    return got


def run(scale: str, log=print) -> list[Row]:
    from perfpost.plan import build as pconfig

    quick = scale != "full"
    shm = Path(f"/dev/shm/perfpost-bench-{uuid.uuid4().hex[:8]}")
    work = Path(tempfile.mkdtemp(prefix="perfpost-bench-matrix-"))
    rows: list[Row] = []
    try:
        small = matrix_config(shm, *pick(scale, (10, 10), (10, 10), (2, 2)))
        large = matrix_config(shm, 100)
        n = len(list(pconfig.build_plan(json.loads(json.dumps(small))).jobs()))
        make_checkout(work, small)
        write_config(work / "config" / "c10k.yaml", large)
        big = ["--configfile", "config/c10k.yaml", "--replace-workflow-config"]

        if not quick:  # warm-up: Python files in the page cache, .snakemake/ made
            snakemake(work, "-n", "--cores", "2", "report")
        dry1k, dry10k = [], []
        for _ in range(1 if quick else 2):
            wall, done = snakemake(work, "-n", "--cores", "2", "report")
            dry1k.append(wall)
            jobs1k = job_counts(done.stdout + done.stderr)
            log(f"  snakemake -n, {n:,} cells: {wall:.2f} s {jobs1k}")
        bare = work / "bare"
        bare.mkdir()
        (bare / "Snakefile").write_text(BARE_SNAKEFILE)
        dry_bare = []
        # perfpost's workflow and the bare Snakefile alternate, round by round: this VM's CPU
        # speed drifts by 20% over a minute, which two runs of one then two of the other
        # would read as a difference between them.
        for _ in range(0 if quick else 3):  # 15 s and more each: the full run's
            wall, done = snakemake(work, "-n", "--cores", "2", *big, "report")
            dry10k.append(wall)
            jobs10k = job_counts(done.stdout + done.stderr)
            log(f"  snakemake -n, 10,000 cells: {wall:.2f} s (cell jobs: {jobs10k.get('cell')})")
            wall, done = snakemake(bare, "-n", "--cores", "2", "report")
            dry_bare.append(wall)
            jobs = job_counts(done.stdout + done.stderr)
            log(f"  snakemake -n, bare 10,000-job Snakefile: {wall:.2f} s {jobs}")
        rows.append(
            Row(
                "4 matrix scale",
                f"snakemake -n, {n:,} cells",
                median(dry1k),
                "s",
                details={"runs": dry1k, "jobs": jobs1k},
            )
        )
        if dry10k:
            rows.append(
                check(
                    Row(
                        "4 matrix scale",
                        "snakemake -n, 10,000 cells",
                        median(dry10k),
                        "s",
                        details={"runs": dry10k, "jobs": jobs10k},
                    ),
                    lambda v: v < 15,
                    "< 15 s",
                )
            )
            rows.append(
                Row(
                    "4 matrix scale",
                    "  snakemake -n, a bare Snakefile of 10,000 dd jobs (no perfpost)",
                    median(dry_bare),
                    "s",
                    details={"runs": dry_bare},
                )
            )
            ratios = [a / b for a, b in zip(dry10k, dry_bare, strict=True)]
            rows.append(
                Row(
                    "4 matrix scale",
                    "  snakemake -n, 10,000 cells: perfpost / bare Snakefile, same round",
                    median(ratios),
                    "x",
                    details={"runs": ratios},
                )
            )
        else:
            rows.append(
                Row(
                    "4 matrix scale",
                    "snakemake -n, 10,000 cells (--quick: not run)",
                    None,
                    "s",
                    "< 15 s",
                )
            )

        t = time.perf_counter()
        n = fabricate(work, small)
        log(f"  fabricated {n} finished cells in {time.perf_counter() - t:.1f} s")
        wall, done = snakemake(work, "-n", "--cores", "2", "report")
        planned = job_counts(done.stdout + done.stderr)
        if planned.get("cell"):
            raise RuntimeError(f"the fabricated cells would run again: {planned}")
        rows.append(
            Row(
                "4 matrix scale",
                f"snakemake -n, {n:,} finished cells",
                wall,
                "s",
                details={"jobs": planned},
            )
        )

        wall, done = snakemake(work, "--cores", "2", "report", timeout=REPORT_TIMEOUT)
        first = job_counts(done.stdout + done.stderr)
        log(f"  first report over {n:,} finished cells: {wall:.2f} s {first}")
        report_wall = wall

        noop = []
        for _ in range(0 if quick else 2):
            wall, done = snakemake(work, "--cores", "2", "report", timeout=REPORT_TIMEOUT)
            noop.append(wall)
            noop_jobs = job_counts(done.stdout + done.stderr)
            log(f"  no-op run: {wall:.2f} s {noop_jobs}")
        if noop:
            rows.append(
                Row(
                    "4 matrix scale",
                    f"no-op snakemake report, {n:,} finished cells",
                    median(noop),
                    "s",
                    details={"runs": noop, "jobs_run": noop_jobs},
                )
            )

        from perfpost import paths
        from perfpost.plan import build as pconfig

        specs = list(pconfig.build_plan(json.loads(json.dumps(small))).jobs())
        rng = random.Random(7)
        chosen = rng.sample(specs[1:], 2 if quick else 6)
        rerun: dict[str, list[float]] = {"cell": [], "report": []}
        rerun_jobs: dict[str, dict] = {}
        for i, spec in enumerate(chosen):
            how = "cell" if i % 2 == 0 else "report"
            shutil.rmtree(work / paths.repeat_dir(spec.experiment, spec.cell, "localhost", 1))
            record = paths.record(spec.experiment, spec.cell, "localhost", spec.repeat, 1)
            target = record if how == "cell" else "report"
            wall, done = snakemake(work, "--cores", "2", target, timeout=REPORT_TIMEOUT)
            if not (work / record).exists():
                raise RuntimeError(f"re-running {spec.cell} left no record: {done.stderr}")
            rerun[how].append(wall)
            rerun_jobs[how] = job_counts(done.stdout + done.stderr)
            log(f"  re-run one cell ({spec.cell}, snakemake {how}): {wall:.2f} s {rerun_jobs[how]}")
        if rerun_jobs["cell"] != {"cell": 1}:
            raise RuntimeError(f"re-running one cell ran other jobs: {rerun_jobs['cell']}")
        rows.append(
            check(
                Row(
                    "4 matrix scale",
                    f"re-run one cell of {n:,} (snakemake <its record>)",
                    median(rerun["cell"]),
                    "s",
                    details={"runs": rerun["cell"], "jobs_run": rerun_jobs["cell"]},
                ),
                lambda v: v < 5,
                "< 5 s",
            )
        )
        rows.append(
            Row(
                "4 matrix scale",
                "  the same, then its tables, figures and post (snakemake report)",
                median(rerun["report"]),
                "s",
                details={"runs": rerun["report"], "jobs_run": rerun_jobs["report"]},
            )
        )

        rows.append(
            check(
                Row(
                    "6 report",
                    f"post from {n:,} finished cells (snakemake report)",
                    report_wall,
                    "s",
                    details={"jobs_run": first},
                ),
                lambda v: v < 30,
                "< 30 s",
            )
        )
        if quick:
            return rows
        got = steps(work, small)
        log("  steps by themselves: " + ", ".join(f"{k} {v:.2f} s" for k, v in got.items()))
        for name in ("env", "tables", "figures", "post", "import only"):
            what = (
                "python + import perfpost.cli, report, plots"
                if name == "import only"
                else f"perfpost {name}, {n:,} records"
            )
            rows.append(Row("6 report", f"  step: {what}", got[name], "s"))
        return rows
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(shm, ignore_errors=True)
