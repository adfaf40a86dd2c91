"""Item 11, history: `perfpost history` over 10,000 runs of 100 builds, against a bare read.

The store is built as nights of a nightly job add to it: 100 additions (builds), each of 10
cells x 10 runs of dd's 12 metrics (120,000 rows in 100 Parquet files), one cell 20% slower
from build 60. `perfpost history` then reads it, finds the change points of the 10 series,
draws their figures and writes its markdown, as a process of its own. The baseline, in the
same command and also a process of its own: a Python that reads the same store with pandas
and takes each cell's median per build: the least any answer from this store must do.
Best of N, alternately. The addition of the 100th night to a store of 99 is timed too,
against writing its rows to Parquet alone (the cost of finding which runs are new).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from benchlib import Row, check, median, pick, timed

CELLS, RUNS, METRICS = 10, 10, 12
BASELINE = (
    "import sys, pandas as pd; d = pd.read_parquet(sys.argv[1]);"
    " d = d[d.metric == 'throughput'];"
    " print(len(d.groupby(['cell', 'build'])['value'].median()))"
)


def night(
    build: int, rng: np.random.Generator, slower_from: int = 60, cells: int = CELLS
) -> pd.DataFrame:
    """One build's rows, as `perfpost history-add` makes them."""
    from perfpost.history import store

    rows = []
    for c in range(cells):
        level = 1e9 * (0.8 if c == 0 and build >= slower_from else 1.0)
        level *= np.exp(rng.normal(0, 0.02))
        for r in range(1, RUNS + 1):
            start = f"2026-{1 + build // 28:02d}-{1 + build % 28:02d}T02:{c:02d}:{r:02d}+00:00"
            base = {
                "experiment": "nightly",
                "cell": f"bs={2**c}k",
                "host": "h1",
                "repeat": r,
                "attempt": 1,
                "session": f"night-{build}",
                "start": start,
                "primary": False,
                "tool": "dd",
                "tool_version": f"dd build-{build}",
                "build": f"build-{build:03d}",
                "revision": f"{build:040x}",
                "build_from": "given",
                "fingerprint": "0123456789ab",
                "machine": "bench machine",
                "measurement": "m1",
                "perfpost_version": "0.1.0",
                "added": start,
            }
            for m in range(METRICS):
                name = "throughput" if m == 0 else f"metric_{m}"
                value = level * np.exp(rng.normal(0, 0.01)) if m == 0 else float(m)
                rows.append(
                    {
                        **base,
                        "metric": name,
                        "value": value,
                        "unit": "B/s" if m == 0 else "count",
                        "primary": m == 0,
                    }
                )
    return pd.DataFrame(rows)[list(store.COLUMNS)]


def run(scale: str, log=print) -> list[Row]:
    from perfpost.history import store

    builds = pick(scale, 100, 100, 8)
    cells = pick(scale, CELLS, CELLS, 2)
    reps = pick(scale, 3, 2, 1)
    rng = np.random.default_rng(1)
    with tempfile.TemporaryDirectory(prefix="perfpost-bench-history-") as tmp:
        where = Path(tmp) / "history"
        nights = [night(b, rng, builds * 6 // 10, cells) for b in range(builds)]
        for df in nights[:-1]:
            store.add(where, df)
        t = time.perf_counter()
        added = store.add(where, nights[-1])
        add_s = time.perf_counter() - t
        t = time.perf_counter()
        nights[-1].to_parquet(Path(tmp) / "plain.parquet", index=False)
        plain_s = time.perf_counter() - t
        assert added["added_runs"] == cells * RUNS, added
        runs = store.read(where, store.RUN_KEY).drop_duplicates().shape[0]
        timings: dict[str, list[float]] = {"perfpost": [], "baseline": []}
        gate = None
        for i in range(reps):
            steps = (
                ("perfpost", ["perfpost", "history", "--store", str(where), "--out", f"{tmp}/r"]),
                ("baseline", ["python", "-c", BASELINE, str(where / "runs")]),
            )
            for name, argv in steps[:: 1 if i % 2 == 0 else -1]:
                seconds, done = timed(argv)
                if name == "perfpost":
                    gate = done.returncode
                    found = done.stdout.count("**change ")
                elif done.returncode != 0:
                    raise RuntimeError(done.stderr[-500:])
                timings[name].append(seconds)
            log(f"  rep {i + 1}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in timings.items()))
        best = {k: min(v) for k, v in timings.items()}
    details = {
        "runs": runs,
        "builds": builds,
        "rows": runs * METRICS,
        "seconds": timings,
        "exit_code": gate,
        "change_points": found,
        "add_seconds": add_s,
        "plain_parquet_seconds": plain_s,
        "median_perfpost_s": median(timings["perfpost"]),
    }
    return [
        check(
            Row(
                "11 history",
                f"`perfpost history`, {runs:,} runs of {builds} builds, {cells} series, figures",
                best["perfpost"],
                "s",
                details=details,
                perfpost=best["perfpost"],
                baseline=best["baseline"],
                baseline_unit="s",
                baseline_name="pandas reads the store, medians per cell and build",
            ),
            lambda v: v < 10,
            "< 10 s",
        ),
        Row(
            "11 history",
            "  the same / the bare read",
            best["perfpost"] / best["baseline"],
            "x",
        ),
        Row(
            "11 history",
            f"  add the {builds}th night ({cells * RUNS} runs) / write its rows to Parquet alone",
            add_s / plain_s if plain_s else None,
            "x",
            perfpost=add_s,
            baseline=plain_s,
            baseline_unit="s",
            baseline_name="DataFrame.to_parquet",
        ),
    ]
