"""Precision-driven repeats end to end, with a tool whose noise is known.

A dd stand-in sleeps the k-th of a list of drawn times and reports that dd copied 1 MiB in
it, so each run's throughput is 1 MiB over a known time. The count of runs where the 95%
interval of the median first lies within +-5% is predicted here with scipy from the runs'
values; perfpost must stop exactly there. A kill -9 of snakemake in the middle resumes without
running a finished run again.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from tests.conftest import env_with_venv, snakemake_bin
from tests.e2e import make_checkout, notebook_of, planned_records, snakemake

pytestmark = pytest.mark.e2e

MIN, MAX, TARGET = 3, 15, 0.05
MIB = 1048576

SHIM = """#!/bin/sh
# dd with a known noise: the k-th finished run "copies" 1 MiB in the k-th drawn time; the
# counter moves only once the time is printed, so a run killed before that takes none. While
# $state/hold exists a run waits before it takes a time (and says so in $state/held): the
# test kills snakemake there, never in the instant between a run's time and its record.
case "$1" in --version) exec /bin/dd "$@" ;; esac
state={state}
while [ -e "$state/hold" ]; do touch "$state/held"; sleep 0.05; done
i=$(cat "$state/next" 2>/dev/null || echo 0)
t=$(sed -n "$((i + 1))p" "$state/times")
sleep "$t"
echo "256+0 records in" >&2
echo "256+0 records out" >&2
echo "1048576 bytes (1.0 MB, 1.0 MiB) copied, $t s, 1.0 MB/s" >&2
echo $((i + 1)) > "$state/next.tmp" && mv "$state/next.tmp" "$state/next"
"""


def predicted_runs(values: list[float]) -> int:
    """The first round (3, 4, ..., 15 runs) whose median's 95% order-statistic interval lies
    within +-5% of the median, by scipy's binomial distribution."""
    for n in range(MIN, MAX + 1):
        x = sorted(values[:n])
        ks = [k for k in range(1, n // 2 + 1) if sps.binom.cdf(k - 1, n, 0.5) <= 0.025]
        if ks:
            k, med = max(ks), float(np.median(x))
            if max(med - x[k - 1], x[n - k] - med) / med <= TARGET:
                return n
    return MAX


def digests(work: Path) -> dict[str, str]:
    return {
        str(p.relative_to(work)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in work.glob("results/noisy/cells/*/*/r[0-9]*/attempt-*/record.json")
    }


def shim_running(shim: Path) -> bool:
    for pid in os.listdir("/proc"):
        try:
            if pid.isdigit() and str(shim) in Path(f"/proc/{pid}/cmdline").read_text():
                return True
        except OSError:
            continue
    return False


def test_runs_stop_at_the_predicted_count_and_a_kill_resumes(tmp_path):
    state, shim, target = tmp_path / "state", tmp_path / "shim", tmp_path / "target"
    for d in (state, shim, target):
        d.mkdir()
    # 0.2 s with 4% log-normal noise: drawn once, here; the seed puts the stop mid-range.
    times = 0.2 * np.exp(np.random.default_rng(1).normal(0, 0.04, MAX + 5))
    (state / "times").write_text("".join(f"{t:.4f}\n" for t in times))
    (shim / "dd").write_text(SHIM.replace("{state}", str(state)))
    (shim / "dd").chmod(0o755)
    rates = [MIB / float(f"{t:.4f}") for t in times]
    expected = predicted_runs(rates)
    assert MIN + 3 < expected < MAX, "the draw should stop between the first round and max"

    path = f"{shim}:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
    config = {
        "experiments": {
            "noisy": {
                "tool": "dd",
                "params": {"dir": str(target), "bs": "4k", "count": 256},
                "repeats": {"min": MIN, "max": MAX, "precision": f"{TARGET:.0%}"},
                "env": {"PATH": path},
            }
        }
    }
    work = make_checkout(tmp_path / "w", config)
    proc = subprocess.Popen(
        [snakemake_bin(), "--cores", "2", "report"],
        cwd=work,
        env=env_with_venv(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        # In the middle: past the first rounds, a run held in the stand-in before its time.
        deadline = time.monotonic() + 120
        while len(digests(work)) < MIN + 2:
            assert time.monotonic() < deadline, "the run never got past its first rounds"
            assert proc.poll() is None, "snakemake ended before it could be killed"
            time.sleep(0.02)
        (state / "hold").touch()
        while not (state / "held").exists():
            assert time.monotonic() < deadline, "no run reached the stand-in after its rounds"
            assert proc.poll() is None, "snakemake ended before it could be killed"
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    deadline = time.monotonic() + 20
    while shim_running(shim):  # the killed run's job stops with it
        assert time.monotonic() < deadline, "the killed run's dd kept running"
        time.sleep(0.1)
    before = digests(work)
    assert MIN + 2 <= len(before) < expected
    (state / "hold").unlink()

    again = snakemake(work, "--cores", "2", "report")
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    after = digests(work)
    for path_, digest in before.items():  # finished runs were never run again
        assert after[path_] == digest, path_
    runs = sorted(work.glob("results/noisy/cells/default/localhost/r[0-9]*"))
    assert len(runs) == expected
    done = {}
    cell = work / "results/noisy/cells/default/localhost"
    for rec_path in cell.glob("r[0-9]*/attempt-*/record.json"):
        rec = json.loads(rec_path.read_text())
        assert rec["status"] == "done", rec["reason"]
        done[rec["repeat"]] = next(m["value"] for m in rec["metrics"] if m["name"] == "throughput")
    assert sorted(done) == list(range(1, expected + 1))
    # The runs got the drawn times in order, one each, whatever order the first round ran in.
    assert sorted(done.values()) == pytest.approx(sorted(rates[:expected]))
    assert int((state / "next").read_text()) == expected
    # The decisions on disk: one per round, the last says the target was reached.
    last = json.loads((cell / f"precision/after-{expected}.json").read_text())
    assert (last["more"], last["why"], last["runs"]) == (False, "reached", expected)
    # The post shows the precision reached, as computed here.
    x = sorted(rates[:expected])
    med = float(np.median(x))
    k = max(k for k in range(1, expected // 2 + 1) if sps.binom.cdf(k - 1, expected, 0.5) <= 0.025)
    reached = max(med - x[k - 1], x[expected - k] - med) / med
    post = notebook_of(work / "reports/noisy/index.md")
    assert f"| default | {expected} |" in post
    assert f"+-{reached:.1%} | reached |" in post
    (said,) = [ln for ln in post.splitlines() if "median throughput is known within" in ln]
    assert said.startswith("- Every cell's median throughput is known within +-5% (95% interval")
    assert said.endswith("see [Precision](#precision)).")  # a bullet of its own
    # Finished: nothing is planned again.
    assert planned_records(work) == []
