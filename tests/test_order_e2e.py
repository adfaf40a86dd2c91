"""A drift over the session, and the order of the runs, end to end.

A dd stand-in whose k-th run on the host (any cell's) reports 1 MiB copied in 0.02 s x
1.01^k: each run 1% slower than the one before, whatever its cell. Two cells the stand-in
cannot tell apart (`bs` 4k and 4096) are compared. Made back to back, all of one cell's runs
come before the other's, and the comparison reports a difference that is only the drift; made
interleaved (A B B A ...), it reports none, and the drift check flags both cells.

Expected values: the order each run had, from the stand-in's own counter (kept beside its
log), and the verdicts' p from scipy's Mann-Whitney U on the runs' own throughputs.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest
from scipy.stats import mannwhitneyu

from tests.e2e import make_checkout, notebook_of, snakemake

pytestmark = pytest.mark.e2e

RUNS = 8

SHIM = """#!/bin/sh
case "$1" in --version) exec /bin/dd "$@" ;; esac
state={state}
exec 9>"$state/lock"
flock 9
k=$(cat "$state/next" 2>/dev/null || echo 0)
echo $((k + 1)) > "$state/next"
flock -u 9
t=$(awk -v k="$k" 'BEGIN {{ printf "%.6f", 0.02 * 1.01 ^ k }}')
sleep "$t"
for a in "$@"; do case "$a" in bs=*) echo "$k $a" >> "$state/order" ;; esac; done
echo "256+0 records in" >&2
echo "256+0 records out" >&2
echo "1048576 bytes (1.0 MB, 1.0 MiB) copied, $t s, 1.0 MB/s" >&2
"""


def run(tmp_path, order: str):
    state, shim, target = tmp_path / "state", tmp_path / "shim", tmp_path / "target"
    for d in (state, shim, target):
        d.mkdir()
    (shim / "dd").write_text(SHIM.format(state=state))
    (shim / "dd").chmod(0o755)
    path = f"{shim}:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
    config = {
        "experiments": {
            "drift": {
                "tool": "dd",
                "params": {"dir": str(target), "bs": "{bs}", "count": 256},
                "axes": {"bs": ["4k", "4096"]},
                "repeats": RUNS,
                "order": order,
                "env": {"PATH": path},
                "compare": [
                    {
                        "name": "4096 vs 4k",
                        "baseline": {"bs": "4k"},
                        "candidate": {"bs": "4096"},
                        "metric": "throughput",
                    }
                ],
            }
        }
    }
    work = make_checkout(tmp_path / "w", config)
    done = snakemake(work, "--cores", "4", "report")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    # The stand-in's own count: which bs each k-th run had.
    made = [ln.split() for ln in (state / "order").read_text().splitlines()]
    seq = [bs.split("=")[1] for _, bs in sorted(made, key=lambda x: int(x[0]))]
    tidy = pd.read_csv(work / "results" / "drift" / "tidy.csv")
    rates = tidy[(tidy["metric"] == "throughput") & (tidy["status"] == "done")]
    side = {bs: rates[rates["bs"].astype(str) == bs]["value"].tolist() for bs in ("4k", "4096")}
    table = pd.read_csv(work / "reports" / "drift" / "comparisons.csv")
    post = notebook_of(work / "reports" / "drift" / "index.md")
    return seq, side, table, post


def test_back_to_back_a_drift_looks_like_a_difference(tmp_path):
    seq, side, table, post = run(tmp_path, "back-to-back")
    assert seq == ["4k"] * RUNS + ["4096"] * RUNS  # cell after cell
    # Every 4096 run came later, so slower: complete separation, p = 2 / C(16, 8).
    p = mannwhitneyu(side["4k"], side["4096"], alternative="two-sided", method="exact").pvalue
    assert p == pytest.approx(2 / math.comb(2 * RUNS, RUNS))
    row = table.iloc[0]
    assert row["verdict"] == "worse"
    assert row["p_min_adjusted"] == pytest.approx(p)
    assert "made back to back" in post
    assert f"{2 * RUNS} of the {2 * RUNS} runs came where the plan put them" in post


def test_interleaved_the_drift_cancels_and_is_flagged(tmp_path):
    seq, side, table, post = run(tmp_path, "interleaved")
    assert seq == ["4k", "4096", "4096", "4k"] * (RUNS // 2)  # A B B A, as planned
    # A's runs are the 1st, 4th, 5th, 8th ... of 16, B's the rest: their rank sums are equal
    # (68 each), U = 32 of 64, p = 1.
    p = mannwhitneyu(side["4k"], side["4096"], alternative="two-sided", method="exact").pvalue
    assert p == pytest.approx(1.0)
    assert table.iloc[0]["verdict"] == "no significant difference"
    # Each cell's 8 runs fell in start order: S = -28 of 28, p = 2 / 8!, x2 for Holm.
    drift = post.split("**Drift.**", 1)[1].split("\n**", 1)[0]
    flags = [ln for ln in drift.splitlines() if ln.startswith("- Flagged:")]
    assert len(flags) == 2, drift
    want = 2 / math.factorial(RUNS)
    for f in flags:
        assert f"throughput fell with run order (S = -28 of at most 28, p = {want:.3g}" in f
        assert f"{2 * want:.3g} after Holm's correction over 2 cells" in f
    assert "A B B A" in post
    assert "Validity: " in post
    assert "Drift (2 cells)" in post


def test_a_precision_target_s_later_rounds_keep_the_interleaved_order(tmp_path):
    # Each cell's round decision is a checkpoint; its next runs exist only once it is made.
    # Every cell's pending round is asked for at once, and decisions come before runs, so
    # the runs of rounds 4..8 still alternate A B B A (a 0.1% target: every round is run).
    shm = tmp_path / "target"
    shm.mkdir()
    config = {
        "experiments": {
            "precise": {
                "tool": "dd",
                "params": {"dir": str(shm), "bs": "{bs}", "count": 64},
                "axes": {"bs": ["4k", "8k"]},
                "repeats": {"min": 3, "max": 8, "precision": "0.1%"},
                "order": "interleaved",
            }
        }
    }
    work = make_checkout(tmp_path / "w", config)
    done = snakemake(work, "--cores", "4", "report")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    cells = pd.read_csv(work / "results" / "precise" / "cells.csv").sort_values("start")
    made = [f"{c.split('=')[1]}/{r}" for c, r in zip(cells["cell"], cells["repeat"], strict=True)]
    want = []
    for r in range(1, 9):
        want += [f"4k/{r}", f"8k/{r}"] if r % 2 else [f"8k/{r}", f"4k/{r}"]
    assert made == want
    post = notebook_of(work / "reports" / "precise" / "index.md")
    assert "16 of the 16 runs came where the plan put them" in post
