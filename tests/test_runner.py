"""One cell run for real on localhost: records, raw logs, failures and clean-up."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from perfpost import paths
from perfpost.plan.build import build_plan
from perfpost.records import read_record
from perfpost.run.runner import run_cell
from perfpost.tools import dd
from perfpost.tools.base import Metric, sync_adjusted


def spec_for(params, **exp):
    cfg = {"experiments": {"t": {"tool": "dd", "params": params, "repeats": 1, **exp}}}
    return next(build_plan(cfg).jobs())


def record_path(tmp_path: Path, spec, attempt=1) -> Path:
    return tmp_path / paths.record(spec.experiment, spec.cell, "localhost", spec.repeat, attempt)


def metrics(rec):
    return {m["name"]: m["value"] for m in rec["metrics"]}


def test_write_cell_records_what_dd_printed(tmp_path, scratch, localhost):
    spec = spec_for({"dir": str(scratch), "bs": "4k", "count": 64, "conv": "fsync"}, after=["sync"])
    out = record_path(tmp_path, spec)
    rec = run_cell(spec, out, localhost)
    assert rec == read_record(out)
    assert rec["status"] == "done", rec["reason"]
    assert rec["tool_version"].startswith("dd (coreutils)")
    assert rec["command"].startswith("dd if=/dev/zero of=")
    assert "bs=4k count=64 conv=fsync" in rec["command"]
    m = metrics(rec)
    raw = (out.parent / "raw" / "dd.log").read_text()
    parsed = {x.name: x.value for x in dd.parse_text(raw, "dd.log")}
    assert m["bytes"] == parsed["bytes"] == 64 * 4096
    assert m["throughput"] == parsed["throughput"]
    assert 0 < m["elapsed"] <= m["wall_time"]
    assert rec["start_epoch"] < rec["end_epoch"]
    assert m["sync_time"] == pytest.approx(rec["sync"]["seconds"])
    assert {"throughput_adjusted", "elapsed_adjusted", "sync_time"} <= set(m)
    assert list(scratch.iterdir()) == []  # the cell's work directory is gone


def test_the_sync_is_added_to_every_runs_write_time():
    raw = [
        Metric("bytes", 1e9, "B"),
        Metric("elapsed", 4.0, "s"),
        Metric("throughput", 2.5e8, "B/s"),
    ]
    slow = {m.name: m.value for m in sync_adjusted(raw, 1.0, dd.SYNC_ADJUST)}
    assert slow["elapsed_adjusted"] == 5.0
    assert slow["throughput_adjusted"] == 2e8  # 1e9 B over 4 + 1 s
    assert "sync_added" not in slow


def test_one_definition_for_every_run_whatever_its_sync_took():
    """A 1 s write of 1e9 B with a 0.099 s and with a 0.101 s sync: by hand, 1e9 / 1.099 =
    909.9 MB/s and 1e9 / 1.101 = 908.3 MB/s, 0.18% apart for 2 ms more sync. A rule that
    added only syncs over 0.1 s gave 1000 and 908.3 MB/s: 9% apart, and a cell whose syncs
    fell either side of it mixed two definitions in its median."""
    raw = [
        Metric("bytes", 1e9, "B"),
        Metric("elapsed", 1.0, "s"),
        Metric("throughput", 1e9, "B/s"),
    ]
    short = {m.name: m.value for m in sync_adjusted(raw, 0.099, dd.SYNC_ADJUST)}
    long = {m.name: m.value for m in sync_adjusted(raw, 0.101, dd.SYNC_ADJUST)}
    assert short["throughput_adjusted"] == pytest.approx(1e9 / 1.099)
    assert long["throughput_adjusted"] == pytest.approx(1e9 / 1.101)
    assert short["throughput_adjusted"] / long["throughput_adjusted"] - 1 < 0.002


def test_concurrent_readers_are_one_cell(tmp_path, scratch, localhost):
    spec = spec_for(
        {
            "mode": "read",
            "dir": str(scratch),
            "bs": "64k",
            "file_size": "256k",
            "readers": 3,
            "background_writer": "4M",
        }
    )
    rec = run_cell(spec, record_path(tmp_path, spec), localhost)
    assert rec["status"] == "done", rec["reason"]
    m = metrics(rec)
    assert m["readers"] == 3
    assert m["bytes"] == 3 * 256 * 1024
    assert rec["exit_codes"] == [0, 0, 0]
    assert len(rec["logs"]) == 3
    assert rec["background_commands"]
    assert list(scratch.iterdir()) == []


def test_a_cell_that_cannot_prepare_fails_with_its_reason(tmp_path, localhost):
    spec = spec_for({"dir": "/proc/perfpost-cannot-exist", "bs": "4k", "count": 1})
    out = record_path(tmp_path, spec)
    rec = run_cell(spec, out, localhost)
    assert rec["status"] == "failed"
    assert rec["reason"].startswith("preparing the cell failed (exit code 1)")
    assert "/proc/perfpost-cannot-exist" in rec["reason"]
    assert rec["metrics"] == []
    assert read_record(out)["status"] == "failed"


def test_a_hung_cell_is_killed_at_its_timeout(tmp_path, scratch, localhost):
    spec = spec_for({"dir": str(scratch), "bs": "1", "count": 10**12}, timeout=1)
    rec = run_cell(spec, record_path(tmp_path, spec), localhost)
    assert rec["status"] == "failed"
    assert rec["reason"] == "timed out after 1 s"
    workdir = rec["workdir"]
    left = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if workdir.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                left.append(pid)
        except OSError:
            pass
    assert left == []
    assert list(scratch.iterdir()) == []


def test_dropping_the_cache_without_root_is_skipped_or_failed_never_hot(tmp_path, scratch):
    """Runs `perfpost run-cell` where the page cache cannot be dropped.

    As root, that is a private mount namespace with /proc/sys read-only, as in many
    containers; as any other user it is the plain machine.
    """
    results = {}
    for policy in ("skip", "fail"):
        spec = spec_for(
            {
                "dir": str(scratch),
                "bs": "4k",
                "count": 4,
                "drop_cache": True,
                "on_unprivileged": policy,
            }
        )
        out = tmp_path / policy / "attempt-1" / "record.json"
        out.parent.mkdir(parents=True)
        argv = [
            sys.executable,
            "-m",
            "perfpost",
            "run-cell",
            "--spec",
            spec.to_json(),
            "--out",
            str(out),
        ]
        if os.geteuid() == 0:
            readonly = (
                "mount --bind /proc/sys /proc/sys && "
                'mount -o remount,bind,ro /proc/sys && exec "$@"'
            )
            argv = [
                "unshare",
                "--mount",
                "--propagation",
                "private",
                "sh",
                "-c",
                readonly,
                "sh",
                *argv,
            ]
        subprocess.run(argv, check=True, capture_output=True, text=True, timeout=60)
        results[policy] = json.loads(out.read_text())
    assert results["skip"]["status"] == "skipped"
    assert results["fail"]["status"] == "failed"
    for rec in results.values():
        assert "cannot drop the page cache" in rec["reason"]
        assert rec["metrics"] == []
        assert "measure" not in [s["step"] for s in rec["steps"]]


def test_a_sleep_2_cell_records_two_seconds_and_no_more_than_50_ms_over(
    tmp_path, scratch, localhost, monkeypatch
):
    # A tool that does nothing but ``sleep 2``: its true duration is 2.000 s plus the exec
    # of sleep (about a millisecond). nanosleep never returns early, so a recorded figure
    # below 2.0 s is a clock read in the wrong place; the allowance over it is ten times the
    # 5 ms accuracy perfpost aims at (bench/remote.py holds that), room for a loaded
    # machine, yet far below the ~100 ms a figure taken around the whole step (a shell, the
    # environment, a log copy) would add.
    from types import SimpleNamespace

    from perfpost import tools
    from perfpost.plan.specs import CellSpec
    from perfpost.tools.base import Plan, Proc

    sleep = SimpleNamespace(
        NAME="sleep",
        RUNTIME=None,
        HOST_KEY=None,
        SYNC_ADJUST=(),
        plan=lambda params, workdir: Plan(
            measure=(Proc(("sleep", "2"), "sleep.log"),), description="sleep"
        ),
        version_argv=lambda params: ("sleep", "--version"),
        parse_cell=lambda logs, wall_time=None: [],
        error_reason=lambda texts: None,
    )
    monkeypatch.setitem(tools.LOADED, "sleep", sleep)
    spec = CellSpec(
        experiment="t",
        cell="default",
        labels={},
        host={"name": "localhost"},
        repeat=1,
        tool="sleep",
        params={"dir": str(scratch)},
        after=[],
        sync_threshold=0.1,
        timeout=30.0,
    )
    rec = run_cell(spec, record_path(tmp_path, spec), localhost)
    assert rec["status"] == "done", rec["reason"]
    wall = metrics(rec)["wall_time"]
    assert wall == pytest.approx(rec["end_epoch"] - rec["start_epoch"], abs=1e-6)
    assert 2.0 <= wall < 2.05
    # Each step says what it took, as perfpost saw it: the measuring step slept 2 s.
    took = {s["step"]: s["seconds"] for s in rec["steps"]}
    assert 2.0 <= took["measure"] < 5.0
    assert took["version"] < 2.0
