"""Harness speed: perfpost against the bare tools, every figure from one command.

    . .venv/bin/activate
    python bench/run.py            # the full suite, about 16 minutes on 2 cores (as root)
    python bench/run.py --quick    # fewer rounds, a 20 MB log, k = 1 and 8 only, no
                                   # 10,000-cell dry run, no no-op run and no step breakdown
    python bench/run.py --smoke    # every step of every item once, on tiny inputs, in
                                   # seconds each: tests/test_bench.py runs it; its figures
                                   # mean nothing
    python bench/run.py --only parse,cell
    python bench/table.py          # the documentation's table from bench/results/latest.json

Items (each ratio is against a baseline measured in the same run):

1. cell: one dd cell through snakemake + perfpost vs the bare dd, alternately;
2. remote: per-command latency on a warm perfpost connection vs ssh with a ControlMaster;
3. remote: one cell on k = 1, 3, 8, 16, 32 real sshd hosts (wall / wall at k = 1 against bare
   ssh's, start skew), the controller's CPU while 8 remote cells run, and the recorded
   duration of a ``sleep 2`` cell on localhost and on an SSH host;
4. matrix: snakemake -n over 1,000 and 10,000 cells, a no-op run over 1,000 finished cells,
   re-running one cell of them;
5. parse: MB/s of perfpost's freon parser vs one re.finditer pass over the same ~200 MB;
6. matrix: the post of 1,000 finished cells (tables, figures, post);
7. agent: freon dfsg with the Byteman agent `instrument:` attaches vs without, default copy
   buffer and --copy-buffer=1;
8. scale: 64 sshd hosts (network namespaces), one experiment of 64 x 4 cells through
   ``snakemake --cores 64`` and again with ``start_together``: start skew, the controller's
   peak memory and CPU, every host's finish against the median host's, ``perfpost cells``
   and the post;
9. deliver: the Ozone runtime to testbed hosts with their own disks (16; 4 with --quick),
   perfpost's delivery against ``tar | ssh`` to one host, and the check when all have it;
10. sampler: the resource sampler's CPU on a host, a daemon's JMX queries, and a dd result
    with the sampler and without it;
11. history: `perfpost history` over 10,000 runs of 100 builds against pandas reading the
    same store, and adding a night's runs against writing them to Parquet alone.

It prints one table (item, measure, perfpost's figure, the baseline's, the figure the target
holds: their ratio or difference, the target, met; a missed target says why) and writes it,
with the machine's description and each item's CPU contention, to bench/results/latest.json.
Before each item (not at smoke size) it waits, up to 90 s, for the machine to fall quiet
after the last one, and records the wait.
Remote items need root (network namespaces) or fall back to loopback ports; items 8 and 9
need root. Nothing is asserted: a missed target is a row that says "no".
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import ROOT, SIZES, CpuWatch, Row, asjson, machine, settle, table

SCHEMA_VERSION = 1
ITEMS = ("parse", "cell", "matrix", "remote", "agent", "scale", "deliver", "sampler", "history")
RESULTS = ROOT / "bench" / "results"


def _load(name: str):
    if name == "parse":
        import parsing

        return parsing.run
    if name == "cell":
        import cell_overhead

        return cell_overhead.run
    if name == "matrix":
        import matrix_scale

        return matrix_scale.run
    if name == "agent":
        import agent_cost

        return agent_cost.run
    if name == "scale":
        import scale

        return scale.run
    if name == "deliver":
        import delivery

        return delivery.run
    if name == "sampler":
        import sampler_cost

        return sampler_cost.run
    if name == "history":
        import history

        return history.run
    import remote

    return remote.run


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    size = ap.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="fewer rounds and smaller inputs")
    size.add_argument(
        "--smoke", action="store_true", help="every step once on tiny inputs (figures mean nothing)"
    )
    ap.add_argument("--only", default=",".join(ITEMS), help=f"comma list of {', '.join(ITEMS)}")
    ap.add_argument(
        "--out", help="default bench/results/latest.json (a smoke run's: bench/results/smoke.json)"
    )
    args = ap.parse_args(argv)
    chosen = [x.strip() for x in args.only.split(",") if x.strip()]
    unknown = sorted(set(chosen) - set(ITEMS))
    if unknown:
        ap.error(f"unknown items {unknown}; known: {', '.join(ITEMS)}")

    scale = "smoke" if args.smoke else "quick" if args.quick else "full"
    assert scale in SIZES
    meta = machine()
    started = time.perf_counter()
    rows: list[Row] = []
    contention: dict[str, dict[str, float]] = {}
    errors: dict[str, str] = {}
    for name in chosen:
        # A smoke run checks that every step runs, in a busy test suite: it does not wait.
        calm = settle() if scale != "smoke" else {}
        if calm:
            print(
                f"[{time.perf_counter() - started:6.1f} s] waited {calm['settle_s']:.0f} s for a"
                f" quiet machine (busy {calm['busy_cores_before']:.2f} cores)",
                flush=True,
            )
        print(f"[{time.perf_counter() - started:6.1f} s] {name} ...", flush=True)
        watch = CpuWatch()
        try:
            got = _load(name)(scale, log=lambda s: print(s, flush=True))
        except Exception as e:  # one broken item must not hide the others' figures
            traceback.print_exc()
            errors[name] = f"{type(e).__name__}: {e}"
            got = [Row(name, f"failed: {type(e).__name__}: {e}"[:90], None, "", "", False)]
        contention[name] = {**watch.result(), **calm}
        rows += got
        c = contention[name]
        print(
            f"[{time.perf_counter() - started:6.1f} s] {name} done in {c['wall_s']:.0f} s; "
            f"CPU busy {c['busy_cores']:.2f} cores, this suite {c['own_cores']:.2f}, "
            f"others ~{c['foreign_cores']:.2f}",
            flush=True,
        )

    order = {f"{i} ": i for i in range(1, 12)}
    rows.sort(key=lambda r: next((v for k, v in order.items() if r.item.startswith(k)), 11))
    print()
    print(table(rows))
    noisy = {k: v for k, v in contention.items() if v["foreign_cores"] > 0.3}
    print()
    for k, v in contention.items():
        print(
            f"{k}: {v['wall_s']:.0f} s; CPU busy {v['busy_cores']:.2f} of {meta['cpus']} cores, "
            f"others ~{v['foreign_cores']:.2f} cores"
            + ("  <- contention: figures may be skewed" if k in noisy else "")
        )
    total = time.perf_counter() - started
    print(f"total {total:.0f} s ({scale} run)")

    out = Path(args.out or RESULTS / ("smoke.json" if scale == "smoke" else "latest.json"))
    out.parent.mkdir(parents=True, exist_ok=True)
    doc = {
        "schema_version": SCHEMA_VERSION,
        "command": [Path(sys.argv[0]).name, *(argv if argv is not None else sys.argv[1:])],
        "quick": scale != "full",
        "size": scale,
        "items": chosen,
        "machine": meta,
        "duration_s": round(total, 1),
        "contention": contention,
        "errors": errors,
        "rows": asjson(rows),
    }
    out.write_text(json.dumps(doc, indent=2, default=str) + "\n")
    print(f"-> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
