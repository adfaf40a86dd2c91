"""A finished record is never remade: settings that do not define the measurement re-run
nothing, and a changed measurement runs new attempts beside the old records, which stay on
disk byte for byte. Real snakemake, real dd, in a temporary checkout."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.conftest import BIN, env_with_venv
from tests.e2e import make_checkout, planned_records, snakemake

pytestmark = pytest.mark.e2e


def config(target: Path, count: int = 64, **ssh) -> dict:
    return {
        "ssh": {"connect_timeout": 3, **ssh},
        "hosts": {"localhost": {"max_parallel_cells": 1}},
        "experiments": {
            "w": {
                "tool": "dd",
                "params": {"dir": str(target), "bs": "4k", "count": count},
                "axes": {"conv": ["fsync", "fdatasync"]},
                "repeats": 2,
                "timeout": 60,
            }
        },
    }


def write(work: Path, cfg: dict) -> None:
    (work / "config" / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))


def digests(work: Path) -> dict[str, str]:
    return {
        str(p.relative_to(work)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(work.glob("results/w/cells/*/*/r*/attempt-*/record.json"))
    }


def cells(work: Path) -> list[dict]:
    out = subprocess.run(
        [str(BIN / "perfpost"), "cells"],
        cwd=work,
        capture_output=True,
        text=True,
        env=env_with_venv(),
        check=True,
    )
    return list(csv.DictReader(io.StringIO(out.stdout)))


def test_runtime_settings_rerun_nothing_and_a_new_measurement_keeps_old_records(tmp_path):
    target = tmp_path / "target"
    target.mkdir()
    work = make_checkout(tmp_path / "checkout", config(target))
    first = snakemake(work, "--cores", "2", "report")
    assert first.returncode == 0, first.stderr[-3000:]
    before = digests(work)
    assert len(before) == 4

    # How perfpost reaches hosts and how long it waits define no measurement.
    for changed in (
        config(target, connect_timeout=4),
        config(target, known_hosts=str(tmp_path / "kh"), trust_new_keys=True),
        {**config(target), "hosts": {"localhost": {"max_parallel_cells": 2}}},
    ):
        write(work, changed)
        assert planned_records(work) == []
        dry = snakemake(work, "-n", "--cores", "2", "report")
        assert "Nothing to be done" in dry.stdout + dry.stderr, dry.stdout[-2000:]
    timeout = config(target)
    timeout["experiments"]["w"]["timeout"] = 90
    write(work, timeout)
    assert planned_records(work) == []

    # count defines the measurement: new attempts, the old records untouched.
    write(work, config(target, count=32))
    assert planned_records(work) == sorted(p.replace("attempt-1", "attempt-2") for p in before)
    assert {r["status"] for r in cells(work)} == {"stale"}
    second = snakemake(work, "--cores", "2", "report")
    assert second.returncode == 0, second.stderr[-3000:]
    after = digests(work)
    assert {k: after[k] for k in before} == before
    assert len(after) == 8
    # The tables and the post are made of the runs of the current config only: 32 x 4 KiB.
    tidy = list(csv.DictReader((work / "results/w/tidy.csv").open()))
    written = {float(r["value"]) for r in tidy if r["metric"] == "bytes"}
    assert written == {32 * 4096}
    assert {r["attempt"] for r in cells(work)} == {"2"}
    assert {r["status"] for r in cells(work)} == {"done"}

    # Back to count 64: the first records are current again and nothing runs.
    write(work, config(target))
    assert planned_records(work) == []
    assert {r["attempt"] for r in cells(work)} == {"1"}
    records = [json.loads((work / p).read_text()) for p in before]
    assert all(r["status"] == "done" for r in records)
    third = snakemake(work, "--cores", "2", "report")
    assert third.returncode == 0, third.stderr[-3000:]
    tidy = list(csv.DictReader((work / "results/w/tidy.csv").open()))
    assert {float(r["value"]) for r in tidy if r["metric"] == "bytes"} == {64 * 4096}
    assert digests(work) == after


def test_a_finished_cell_snakemake_runs_again_keeps_its_record(tmp_path):
    """Snakemake runs a finished cell's job again when it never saw the job end (killed
    meanwhile: rerun-incomplete) or when told to (--forcerun): the record is not deleted
    first, and the job keeps it rather than measuring again (perfpost rerun does that). The
    log Snakemake deletes before such a job is written back: it is the record's."""
    target = tmp_path / "target"
    target.mkdir()
    work = make_checkout(tmp_path / "checkout", config(target))
    first = snakemake(work, "--cores", "2", "report")
    assert first.returncode == 0, first.stderr[-3000:]
    before = digests(work)
    assert len(before) == 4
    logs = {r: (work / r).with_name("perfpost.log").read_text() for r in before}
    # What the measuring job said of its run: which run, which attempt, how it ended.
    for record, log in logs.items():
        _, _, _, cell, host, repeat, _, _ = Path(record).parts
        assert f"w {cell} {host} {repeat} attempt 1: done" in log, log
    again = snakemake(work, "--cores", "2", "--forcerun", "cell", "report")
    assert again.returncode == 0, again.stderr[-3000:]
    assert again.stdout.count("rule cell:") + again.stderr.count("rule cell:") == 4
    assert digests(work) == before
    for record in before:
        log = (work / record).with_name("perfpost.log").read_text()
        # The first line names the run's cell server that forked the job; nothing else.
        said = [line for line in log.splitlines() if "run by the run's cell server" not in line]
        assert said[:2] == [
            f"perfpost: {record} is finished already; kept as it is",
            "perfpost: the log of the job that made it follows",
        ], log
        assert log.endswith(logs[record]), log
