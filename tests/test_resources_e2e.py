"""Telemetry through the whole workflow, against readings whose truth the test knows:

- dd writes 64 MiB with conv=fsync into an ext4 on a loop device the test makes (nothing else
  writes there): the loop device's counted writes over the measured step are at least those
  64 MiB, and not much more (the file system's journal and metadata), and the directory's
  device is the loop device ``losetup`` named;
- fio's cpuio engine burns one CPU at 100% load pinned to core 0 (``cpus_allowed=0``): core 0
  was busy in every interval of the step, whatever else the machine did, and the tool's own
  CPU time is at most its wall time (one thread);
- the post names what bound each cell, with those numbers.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from tests.e2e import make_checkout, notebook_of, sections, snakemake

pytestmark = pytest.mark.e2e

MIB = 1 << 20
COUNT = 64  # MiB dd writes


@pytest.fixture(scope="module")
def loop_fs(tmp_path_factory):
    if os.geteuid() != 0 or not shutil.which("losetup") or not shutil.which("mkfs.ext4"):
        pytest.skip("a loop device file system needs root, losetup and mkfs.ext4")
    base = tmp_path_factory.mktemp("loopfs")
    image, mnt = base / "disk.img", base / "mnt"
    mnt.mkdir()
    subprocess.run(["truncate", "-s", "256M", str(image)], check=True)
    subprocess.run(["mkfs.ext4", "-q", "-F", str(image)], check=True)
    dev = subprocess.run(
        ["losetup", "-f", "--show", str(image)], check=True, capture_output=True, text=True
    ).stdout.strip()
    try:
        subprocess.run(["mount", dev, str(mnt)], check=True)
        try:
            yield mnt, Path(dev).name
        finally:
            subprocess.run(["umount", str(mnt)], check=False)
    finally:
        subprocess.run(["losetup", "-d", dev], check=False)


@pytest.fixture(scope="module")
def run(loop_fs, tmp_path_factory):
    mnt, _ = loop_fs
    cfg = {
        "experiments": {
            "bytes": {
                "tool": "dd",
                "params": {
                    "mode": "write",
                    "dir": str(mnt / "perfpost"),
                    "bs": "1M",
                    "count": COUNT,
                    "conv": "fsync",
                },
                "repeats": 2,
            },
            "burn": {
                "tool": "fio",
                "params": {
                    "dir": "/var/tmp/perfpost",
                    "name": "burn",
                    "ioengine": "cpuio",
                    "size": "1M",
                    "runtime": 4,
                    "time_based": True,
                    "options": {"cpuload": 100, "cpus_allowed": 0},
                },
                "repeats": 1,
            },
        }
    }
    work = tmp_path_factory.mktemp("resources-run")
    make_checkout(work, cfg)
    result = snakemake(work, "--cores", "1", "report", timeout=1200)
    assert result.returncode == 0, result.stderr[-4000:]
    return work


def window(work: Path, experiment: str) -> pd.DataFrame:
    return pd.read_csv(
        work / "results" / experiment / "resources-window.csv", dtype={"detail": str}
    )


def test_the_loop_disk_counted_the_bytes_dd_wrote(run, loop_fs):
    _, loop = loop_fs
    w = window(run, "bytes")
    assert sorted(w["repeat"].unique()) == [1, 2]
    for repeat, d in w.groupby("repeat"):
        (device,) = d[d["resource"].str.startswith("dir:")]["detail"]
        assert device == loop
        written = d[(d["resource"] == f"disk:{loop}") & (d["metric"] == "write_total")]["value"]
        assert len(written) == 1, repeat
        # dd's 64 MiB reached the device inside the step (conv=fsync); ext4's journal and
        # metadata add a little, nothing else writes to this file system.
        assert COUNT * MIB <= written.iloc[0] <= COUNT * MIB * 1.05 + 4 * MIB, written.iloc[0]
    # The series sums to the same bytes: rate x interval over the step's intervals.
    s = pd.read_csv(run / "results" / "bytes" / "resources.csv")
    one = s[(s["repeat"] == 1) & (s["resource"] == f"disk:{loop}") & (s["metric"] == "write_bytes")]
    assert (one["value"] * one["seconds"]).sum() >= COUNT * MIB


def test_a_pinned_burner_keeps_its_core_busy_and_its_cpu_time_is_its_own(run):
    s = pd.read_csv(run / "results" / "burn" / "resources.csv")
    cpu0 = s[s["resource"] == "cpu0"]
    busy, steal = (cpu0[cpu0["metric"] == m].set_index(["repeat", "t"]) for m in ("busy", "steal"))
    core0 = busy.assign(busy=busy["value"], steal=steal["value"])
    # Whole intervals inside the 4 s step (the first and last may reach past its ends).
    t = core0.index.get_level_values("t")
    inside = core0[(t - core0["seconds"] >= 0.5) & (t <= 3.5)]
    assert len(inside) >= 2, core0
    # The core never idles: busy, or taken by the virtual machine's host (steal), which the
    # burner cannot refuse (in a CI run, 0.94 busy and 0.06 stolen in one second).
    assert (inside["busy"] + inside["steal"] >= 0.97).all(), inside
    record = next((run / "results" / "burn").rglob("record.json"))
    metrics = {m["name"]: m["value"] for m in json.loads(record.read_text())["metrics"]}
    # One thread: its CPU time cannot pass its wall time; fio's own clock says 4 s.
    assert 0 < metrics["tool_cpu_time"] <= metrics["wall_time"] * 1.02


def test_the_posts_name_what_bound_each_cell(run):
    for experiment in ("bytes", "burn"):
        post = notebook_of(run / "reports" / experiment / "index.md")
        assert "Resources" in sections(post)
        assert (run / "reports" / experiment / "resources-window.csv").is_file()
        text = post.split("## Resources", 1)[1].split("\n## ", 1)[0]
        # A step shorter than two of the 1 s samples (by the tool's own wall time) is not
        # given a bottleneck the samples around it cannot support.
        records = (run / "results" / experiment / "cells").rglob("record.json")
        wall = sorted(
            m["value"]
            for p in records
            for m in json.loads(p.read_text())["metrics"]
            if m["name"] == "wall_time"
        )
        if wall[(len(wall) - 1) // 2] < 2.0:
            assert "cannot say what bound it" in text
            assert "figures/resources.png" not in text  # no share of its own to draw
            continue
        assert "figures/resources.png" in text  # the overview figure
        assert (
            "this cell measured" in text
            or "no single resource saturated" in text
            or ("competed for it" in text)
        )
        assert "(the tool " in text  # the tool's own cores, beside the host's
    post = notebook_of(run / "reports" / "bytes" / "index.md")
    # The loop device took dd's writes, so nothing says they went to another disk.
    assert "another disk took" not in post
    # The burn cell ran 4 s: long enough to be drawn over time.
    figures = json.loads((run / "reports" / "burn" / "figures" / "figures.json").read_text())
    assert any(f.get("metric") == "resources_over_time" for f in figures)
