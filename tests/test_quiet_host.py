"""perfpost's own heavy steps (tables, figures, posts, provisioning) never run on a host
while a cell measures there, and the post says only what the records show about overlap.

Two experiments on localhost, one of slow cells (a dd that waits 1.5 s first): without the
rule, the fast experiment's tables, figures and post run beside the slow cells."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from tests.e2e import make_checkout, notebook_of, snakemake

pytestmark = pytest.mark.e2e

SLOW_DD = """#!/bin/sh
case "$1" in --version) exec /bin/dd "$@" ;; esac
sleep 1.5
exec /bin/dd "$@"
"""


def born(path: Path) -> float:
    """When the file was created (the shell's redirect makes a step's log as it starts)."""
    out = subprocess.run(["stat", "-c", "%.9W", str(path)], capture_output=True, text=True)
    return float(out.stdout.strip().replace(",", "."))


def test_perfposts_own_steps_never_overlap_a_measurement(tmp_path):
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "dd").write_text(SLOW_DD)
    (shim / "dd").chmod(0o755)
    target = tmp_path / "target"
    target.mkdir()
    path = f"{shim}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    dd = {"tool": "dd", "params": {"dir": str(target), "bs": "4k", "count": 16}}
    config = {
        "experiments": {
            "fast": {**dd, "axes": {"conv": ["fsync", "fdatasync"]}, "repeats": 1},
            "slow": {
                **dd,
                "axes": {"conv": ["fsync", "fdatasync"]},
                "repeats": 3,
                "env": {"PATH": path},
            },
        }
    }
    work = make_checkout(tmp_path / "w", config)
    done = snakemake(work, "--cores", "6", "report")
    assert done.returncode == 0, done.stderr[-3000:]

    windows = []
    for rec_path in work.glob("results/*/cells/*/*/r*/attempt-*/record.json"):
        rec = json.loads(rec_path.read_text())
        assert rec["status"] == "done", rec["reason"]
        windows.append((rec["start_epoch"], rec["end_epoch"], str(rec_path.parent)))
    assert len(windows) == 2 + 6
    steps = []
    for exp in ("fast", "slow"):
        base = work / "results" / exp
        for log, out in (
            (base / "logs/tables.log", base / "tidy.csv"),
            (base / "logs/figures.log", work / "reports" / exp / "figures" / "figures.json"),
            (base / "logs/post.log", work / "reports" / exp / "index.md"),
        ):
            steps.append((born(log), out.stat().st_mtime, f"{exp}/{log.name}"))
    for s0, s1, step in steps:
        for c0, c1, cell in windows:
            assert s1 <= c0 or c1 <= s0, (
                f"{step} {s0:.2f}..{s1:.2f} during {cell} {c0:.2f}..{c1:.2f}"
            )

    # The post states what the records show: no two runs on one host overlapped.
    post = notebook_of(work / "reports" / "slow" / "index.md")
    assert re.search(
        r"ran one at a time on each host \(their recorded times do not overlap\)", post
    ), post[:3000]
    (line,) = [ln for ln in post.splitlines() if "perfpost's own steps" in ln]
    assert line.endswith("while a cell measured on it."), line  # its own list item


def test_the_overlap_the_post_states_is_counted_from_the_records():
    import pandas as pd

    from perfpost.analysis.report import overlap

    def rows(*spans):
        return [
            {"host": h, "start": f"2026-01-01T00:00:{a:02d}Z", "end": f"2026-01-01T00:00:{b:02d}Z"}
            for h, a, b in spans
        ]

    # Back to back is not at once; h2's three runs share the second 3..4: three at once.
    assert overlap(pd.DataFrame(rows(("h1", 0, 2), ("h1", 2, 4)))) == {"most": 1, "where": []}
    spans = rows(("h1", 0, 2), ("h1", 2, 4), ("h2", 0, 4), ("h2", 1, 5), ("h2", 3, 6))
    assert overlap(pd.DataFrame(spans)) == {"most": 3, "where": ["h2"]}
    spans = rows(("h1", 0, 3), ("h1", 1, 2), ("h2", 0, 3), ("h2", 2, 4))
    assert overlap(pd.DataFrame(spans)) == {"most": 2, "where": ["h1", "h2"]}
