"""A history over builds, end to end: nightly runs of a stand-in whose speed changes at a
known build, each in a fresh clone sharing one history store, then `perfpost history`.

The stand-in is a dd whose `--version` names its build (``build-N``, from a file the test
writes before each night) and whose reported time is 0.02 s a run, times 1.25 from build 4
on (20% less throughput), times a session offset and a run's own jitter of under +-1% each
(fixed by the build and the run's number, so the test is the same every time).

Expected values: the build the stand-in changed at (4), and the step's size computed from
the tool's own output: each night's tidy table, its runs' throughputs.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from tests.conftest import env_with_venv
from tests.e2e import make_checkout, snakemake

pytestmark = pytest.mark.e2e

BUILDS, CHANGE_AT, RUNS = 6, 4, 4

SHIM = """#!/bin/sh
b=$(cat {state}/build)
case "$1" in --version) echo "dd (perfpost stand-in) build-$b"; exit 0 ;; esac
exec 9>"{state}/lock"
flock 9
k=$(cat "{state}/next" 2>/dev/null || echo 0)
echo $((k + 1)) > "{state}/next"
flock -u 9
t=$(awk -v b="$b" -v k="$k" -v at={at} 'BEGIN {{
  slow = (b >= at) ? 1.25 : 1.0
  night = 1 + ((b * 3) % 5 - 2) * 0.004
  run = 1 + ((k * 7) % 5 - 2) * 0.004
  printf "%.6f", 0.02 * slow * night * run }}')
sleep "$t"
echo "256+0 records in" >&2
echo "256+0 records out" >&2
echo "1048576 bytes (1.0 MB, 1.0 MiB) copied, $t s, 1.0 MB/s" >&2
"""


def night(tmp_path, build: int, store, state, shim, target) -> pd.DataFrame:
    """One nightly job: a fresh clone, the stand-in at ``build``, its runs into the store."""
    (state / "build").write_text(f"{build}\n")
    path = f"{shim}:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
    config = {
        "history": str(store),
        "experiments": {
            "nightly": {
                "tool": "dd",
                "params": {"dir": str(target), "bs": "4k", "count": 256},
                "repeats": RUNS,
                "env": {"PATH": path},
            }
        },
    }
    work = make_checkout(tmp_path / f"clone-{build}", config)
    done = snakemake(work, "--cores", "2", "results/nightly/history.json")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    tidy = pd.read_csv(work / "results" / "nightly" / "tidy.csv")
    return tidy[(tidy["metric"] == "throughput") & (tidy["status"] == "done")]


def history(store, out, cwd):
    import subprocess

    return subprocess.run(
        ["perfpost", "history", "--store", str(store), "--out", str(out)],
        capture_output=True,
        text=True,
        env=env_with_venv(),
        cwd=cwd,
        timeout=120,
    )


def test_the_build_a_stand_in_slowed_at_is_found_and_no_other(tmp_path):
    state, shim, target, store = (tmp_path / n for n in ("state", "shim", "target", "store"))
    for d in (state, shim, target):
        d.mkdir()
    (shim / "dd").write_text(SHIM.format(state=state, at=CHANGE_AT))
    (shim / "dd").chmod(0o755)
    medians = []
    for build in range(1, BUILDS + 1):
        rates = night(tmp_path, build, store, state, shim, target)
        assert len(rates) == RUNS
        medians.append(float(np.median(rates["value"])))
        if build == CHANGE_AT - 1:
            # Three steady builds: no change, and the gate passes.
            before = history(store, tmp_path / "before", tmp_path)
            assert before.returncode == 0, before.stdout + before.stderr
            assert "No change point over 3 points" in before.stdout
    done = history(store, tmp_path / "report", tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr  # the newest build is worse
    text = done.stdout
    # One change, at the build the stand-in changed at, its size from the runs' own rates.
    step = math.expm1(
        np.log(medians[CHANGE_AT - 1 :]).mean() - np.log(medians[: CHANGE_AT - 1]).mean()
    )
    assert f"at **dd (perfpost stand-in) build-{CHANGE_AT}**: {step * 100:+.1f}% (worse" in text
    assert step == pytest.approx(1 / 1.25 - 1, abs=0.01)
    assert text.count("**change ") == 1
    assert f"**The newest, dd (perfpost stand-in) build-{BUILDS}, is worse" in text
    assert "worse at the newest point: nightly" in done.stderr
    figures = list((tmp_path / "report").glob("*.png"))
    assert len(figures) == 1
    assert figures[0].stat().st_size > 10_000
    # The store: every night's runs, each once, one machine, one file per night.
    runs = pd.read_parquet(store / "runs")
    rates = runs[runs["metric"] == "throughput"]
    assert len(rates) == BUILDS * RUNS
    assert len(set(rates["fingerprint"])) == 1
    assert set(rates["build_from"]) == {"tool"}
    assert len(list((store / "runs").glob("*.parquet"))) == BUILDS
