"""The bench runs: every item of ``python bench/run.py`` at its smoke size, as a command of
its own, ends without an error and gives the rows of the measures it numbers.

Nothing here holds a figure to a target (speed is measured in bench/, never asserted in
tests): a smoke run's figures come from inputs too small to mean anything. What it catches is
a bench that no longer runs, such as an item calling perfpost with an old signature."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT, env_with_venv

pytestmark = pytest.mark.e2e

# The measures each item numbers, as bench/run.py's docstring lists them.
ITEMS = {
    "cell": {"1"},
    "remote": {"2", "3"},
    "matrix": {"4", "6"},
    "parse": {"5"},
    "agent": {"7"},
    "scale": {"8"},
    "deliver": {"9"},
    "sampler": {"10"},
    "history": {"11"},
}
NEEDS_ROOT = {"scale", "deliver"}  # testbed hosts with their own disks: network namespaces


@pytest.mark.parametrize("item", sorted(ITEMS))
def test_a_bench_item_runs_at_its_smoke_size(item, tmp_path, request):
    env = env_with_venv()
    if item == "agent":  # freon and Byteman, provisioned into the session's tool cache
        cache, _ = request.getfixturevalue("ozone_cache")
        env["PERFPOST_CACHE"] = str(cache)
    out = tmp_path / f"{item}.json"
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "run.py"), "--smoke", "--only", item, "--out", out],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=900,
        check=False,
    )
    said = done.stdout[-3000:] + done.stderr[-3000:]
    assert done.returncode == 0, said
    doc = json.loads(out.read_text())
    assert doc["size"] == "smoke", said
    assert doc["items"] == [item], said
    assert doc["errors"] == {}, said
    rows = doc["rows"]
    numbers = {r["item"].split(" ", 1)[0] for r in rows}
    if item in NEEDS_ROOT and os.geteuid() != 0:
        assert [r["shown"] for r in rows] == ["skipped"], rows
        return
    assert numbers == ITEMS[item], (numbers, said)
    # A row with a target that has no figure is an item that broke inside (shown "error").
    assert not [r["figure"] for r in rows if r["shown"] == "error"], said
    assert any(r["value"] is not None for r in rows), rows


def test_settle_waits_for_a_quiet_machine_and_says_how_long(monkeypatch):
    """A machine busy 1.5 cores for three windows, then 0.05: the bench waits four windows
    (8 s of its clock) and reports the last window's load; one busy for ever is left at the
    limit. The load is made up (what /proc/stat would say), the clock too: no time passes."""
    monkeypatch.syspath_prepend(str(ROOT / "bench"))
    import benchlib

    def machine(loads: list[float]):
        clock = {"t": 0.0, "busy": 0.0}
        it = iter(loads)

        def sleep(s: float) -> None:
            clock["busy"] += next(it) * s
            clock["t"] += s

        monkeypatch.setattr(benchlib.time, "sleep", sleep)
        monkeypatch.setattr(benchlib.time, "perf_counter", lambda: clock["t"])
        monkeypatch.setattr(benchlib, "_busy_jiffies", lambda: (clock["busy"], 0.0))

    machine([1.5, 1.5, 1.5, 0.05, 1.5])
    assert benchlib.settle(cores=0.15, window=2.0, limit=90.0) == {
        "settle_s": 8.0,
        "busy_cores_before": 0.05,
    }
    machine([1.0] * 100)
    assert benchlib.settle(cores=0.15, window=2.0, limit=10.0) == {
        "settle_s": 10.0,
        "busy_cores_before": 1.0,
    }
