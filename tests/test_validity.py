"""Validity checks: each flags what it should, on numbers worked out by hand here.

Unit tests build tidy and cells tables the way the tables step does; one end-to-end test
drops the page cache for real under files on a disk and on a tmpfs (which cannot drop them).
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path

import pandas as pd
import pytest

from perfpost.analysis import validity
from tests.e2e import make_checkout, snakemake

AXES = ["size"]


def tidy(rows: list[tuple]) -> pd.DataFrame:
    """(cell, host, repeat, metric, value, unit) -> a tidy table of finished runs."""
    out = []
    for cell, host, repeat, metric, value, unit in rows:
        out.append(
            {
                "experiment": "e",
                "cell": cell,
                "host": host,
                "repeat": repeat,
                "size": cell.split("=")[1],
                "tool": "dd",
                "status": "done",
                "attempt": 1,
                "metric": metric,
                "value": float(value),
                "unit": unit,
            }
        )
    return pd.DataFrame(out)


def cells(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame([{"status": "done", "session": None, **r} for r in rows])


def test_start_skew_above_one_percent_of_the_run_is_flagged():
    df = tidy(
        [
            # 50 ms of a 2 s run is 2.5%: flagged. 5 ms of 2 s is 0.25%: not.
            ("size=1", "h1", 1, "start_skew", 0.050, "s"),
            ("size=1", "h1", 1, "wall_time", 2.0, "s"),
            ("size=1", "h1", 2, "start_skew", 0.005, "s"),
            ("size=1", "h1", 2, "wall_time", 2.0, "s"),
        ]
    )
    # Both runs' hosts were waiting: 0.8 and 0.3 s before the start.
    ready = cells(
        [
            {"cell": "size=1", "host": "h1", "repeat": 1, "start_ready_ahead": 0.8},
            {"cell": "size=1", "host": "h1", "repeat": 2, "start_ready_ahead": 0.3},
        ]
    )
    check = validity.skew_check(df, ready, AXES)
    assert check is not None
    assert check["facts"] == [
        "The hosts started within 50 ms of each other (the largest skew of 2 host runs).",
        "Every host was waiting when the common start came (the last ready 300 ms before it).",
    ]
    assert len(check["flags"]) == 1
    assert check["flags"][0].startswith(
        "`size=1` on h1, run 1: start skew 50 ms, 2.5% of the run's length"
    )


def test_a_host_not_yet_waiting_at_the_common_start_is_flagged(tmp_path):
    df = tidy(
        [
            ("size=1", "h1", 1, "start_skew", 0.004, "s"),
            ("size=1", "h1", 1, "wall_time", 2.0, "s"),
            ("size=1", "h2", 1, "start_skew", 0.004, "s"),
            ("size=1", "h2", 1, "wall_time", 2.0, "s"),
        ]
    )
    # h2 was ready 120 ms after the planned start; as cells.csv reads back (text, blanks).
    table = cells(
        [
            {"cell": "size=1", "host": "h1", "repeat": 1, "start_ready_ahead": 0.5},
            {"cell": "size=1", "host": "h2", "repeat": 1, "start_ready_ahead": -0.12},
            {"cell": "size=2", "host": "h1", "repeat": 1, "start_ready_ahead": None},
        ]
    )
    table.to_csv(tmp_path / "cells.csv", index=False)
    check = validity.skew_check(df, pd.read_csv(tmp_path / "cells.csv", dtype=str), AXES)
    assert check is not None
    assert len(check["facts"]) == 1  # no claim that every host was waiting
    assert check["flags"] == [
        "`size=1` on h2, run 1: ready 120 ms after the planned start (perfpost was still "
        "setting the host up): its start, and its cell's skew, include that delay, not only "
        "the hosts' own."
    ]
    # Records made before perfpost noted readiness: no claim either way.
    check = validity.skew_check(df, cells([{"cell": "size=1", "host": "h1", "repeat": 1}]), AXES)
    assert check is not None
    assert len(check["facts"]) == 1
    assert check["flags"] == []


def test_a_sync_over_a_tenth_of_write_plus_sync_is_flagged():
    df = tidy(
        [
            # 0.5 s of sync after 1.5 s of writing: 0.5 / 2.0 = 25%, flagged. 0.05 s after
            # 1.95 s: 2.5%, not.
            ("size=1", "h", 1, "sync_time", 0.5, "s"),
            ("size=1", "h", 1, "wall_time", 1.5, "s"),
            ("size=1", "h", 2, "sync_time", 0.05, "s"),
            ("size=1", "h", 2, "wall_time", 1.95, "s"),
        ]
    )
    check = validity.sync_check(df, AXES)
    assert check is not None
    # Median of 25% and 2.5% is 13.75%.
    assert "took 13.8% (median; at most 25.0%) of write plus sync" in check["facts"][0]
    assert "added to every run's write time" in check["facts"][0]
    (flag,) = check["flags"]
    assert flag.startswith("`size=1` on h, run 1: sync took 0.500 s, 25% of write plus sync")
    assert "the sync time added rate has it" in flag


def test_a_short_sync_with_a_large_share_is_flagged_on_its_share():
    # 0.05 s of sync after 0.05 s of writing is half of write plus sync: the raw rate is
    # twice what reached the disk, however short the sync was in seconds.
    short = tidy(
        [("size=1", "h", 1, "sync_time", 0.05, "s"), ("size=1", "h", 1, "wall_time", 0.05, "s")]
    )
    (flag,) = validity.sync_check(short, AXES)["flags"]
    assert "sync took 0.0500 s, 50% of write plus sync" in flag


def test_a_lag_over_a_tenth_of_the_run_is_flagged():
    # freon's clock can stop up to 1 s late: 1 s of a 4 s run is 25%, flagged; of a 20 s
    # run 5%, not. (Records without rate_lag: the whole run's elapsed and freon's 1 s.)
    df = tidy(
        [
            ("size=1", "h", 1, "elapsed", 4.0, "s"),
            ("size=1", "h", 2, "elapsed", 20.0, "s"),
        ]
    )
    from perfpost.tools import freon

    check = validity.lag_check(df, AXES, freon.TIME_LAG)
    assert check is not None
    assert check["title"] == "Reporting lag"
    assert check["facts"][0].startswith("Runs' rates are over the whole run: freon prints its")
    assert check["facts"][0].endswith(
        "can be long by up to 1 s: up to 25% of the shortest of them (4 s)."
    )
    assert check["flags"] == [
        "`size=1` on h, run 1: took 4 s: its rate may read low by up to 25% (above 10%)."
    ]
    # A tool without a lag has no such check.
    assert validity.lag_check(df, AXES, None) is None
    # The experiment's tool says which lag applies: dd has none.
    exp = {"tool": "dd", "axes": {"size": [1]}}
    assert "Reporting lag" not in [c["title"] for c in validity.checks(df, cells([]), exp, None)]
    exp["tool"] = "freon"
    assert "Reporting lag" in [c["title"] for c in validity.checks(df, cells([]), exp, None)]


def test_sessions_that_disagree_are_flagged_and_one_session_is_said():
    # Two sessions of three runs, all of the first below all of the second. Kruskal-Wallis
    # by hand: ranks 1-3 and 4-6, H = 12 / (6 * 7) * (6^2/3 + 15^2/3) - 3 * 7 = 27/7 = 3.857;
    # p = P(chi2 with 1 df > 3.857) = 0.0495 <= 0.05.
    df = tidy(
        [
            ("size=1", "h", r, "throughput", v, "B/s")
            for r, v in enumerate([10, 11, 12, 20, 21, 22], 1)
        ]
    )
    sessions = ["2026-11-01T10:00:00Z/1"] * 3 + ["2026-11-20T09:00:00Z/2"] * 3
    table = cells(
        [
            {"cell": "size=1", "host": "h", "repeat": r, "session": s}
            for r, s in enumerate(sessions, 1)
        ]
    )
    check = validity.session_check(df, table, AXES, "throughput")
    assert check is not None
    assert check["facts"][0] == (
        "The runs came from 2 runs of perfpost (started 2026-11-01T10:00:00Z, "
        "started 2026-11-20T09:00:00Z)."
    )
    (flag,) = check["flags"]
    assert "disagree (Kruskal-Wallis p = 0.0495)" in flag
    # Interleaved sessions agree: no flag.
    table["session"] = sessions[::2] + sessions[1::2]
    table["session"] = [sessions[0], sessions[3]] * 3
    assert validity.session_check(df, table, AXES, "throughput")["flags"] == []
    table["session"] = sessions[0]
    one = validity.session_check(df, table, AXES, "throughput")
    assert one["facts"] == [
        "Every run came from one run of perfpost (started 2026-11-01T10:00:00Z)."
    ]


def test_cold_reads_faster_than_the_disk_are_flagged():
    df = tidy(
        [
            ("size=1", "h", 1, "cached_before_drop", 8e8, "B"),
            ("size=1", "h", 1, "cached_after_drop", 1e8, "B"),
            ("size=1", "h", 1, "files_cached_after_drop", 0, "B"),
            ("size=1", "h", 1, "throughput", 1.2e9, "B/s"),  # 4x a spinning disk
            ("size=2", "h", 1, "cached_before_drop", 8e8, "B"),
            ("size=2", "h", 1, "cached_after_drop", 1e8, "B"),
            ("size=2", "h", 1, "files_cached_after_drop", 0, "B"),
            ("size=2", "h", 1, "throughput", 2e8, "B/s"),  # a disk can do that
        ]
    )
    table = cells(
        [
            {"cell": c, "host": "h", "repeat": 1, "cache_disk": "sda", "cache_rotational": True}
            for c in ("size=1", "size=2")
        ]
    )
    check = validity.cache_check(df, table, AXES, "throughput")
    assert check is not None
    assert check["facts"][0].startswith("The page cache was dropped before 2 runs")
    (flag,) = check["flags"]
    assert flag.startswith("`size=1` on h, run 1: 1.20 GB/s from `sda`, faster than a rotational")
    # Over SATA the ceiling is the link's 600 MB/s: 1.2 GB/s is still too fast, 200 MB/s not.
    table["cache_rotational"] = False
    table["cache_transport"] = "sata"
    assert len(validity.cache_check(df, table, AXES, "throughput")["flags"]) == 1
    # An NVMe disk has no ceiling perfpost states: nothing flagged.
    table["cache_transport"] = "nvme"
    assert validity.cache_check(df, table, AXES, "throughput")["flags"] == []


@pytest.mark.e2e
@pytest.mark.skipif(os.geteuid() != 0, reason="dropping the page cache needs root")
def test_a_real_drop_evicts_a_disks_files_but_not_a_tmpfs(tmp_path):
    disk = Path(f"/var/tmp/perfpost-validity-{uuid.uuid4().hex[:8]}")
    shm = Path(f"/dev/shm/perfpost-validity-{uuid.uuid4().hex[:8]}")
    config = {
        "experiments": {
            "cold": {
                "tool": "dd",
                "params": {
                    "mode": "read",
                    "dir": "{where}",
                    "bs": "1M",
                    "file_size": "8M",
                    "readers": 2,
                    "drop_cache": True,
                },
                "axes": {"where": {"disk": str(disk), "memdisk": str(shm)}},
                "repeats": 1,
            }
        }
    }
    work = make_checkout(tmp_path / "w", config)
    try:
        done = snakemake(work, "--cores", "2", "report")
    finally:
        shutil.rmtree(disk, ignore_errors=True)
        shutil.rmtree(shm, ignore_errors=True)
    assert done.returncode == 0, done.stderr[-3000:]
    facts = {}
    for path in work.glob("results/cold/cells/*/localhost/r1/attempt-1/record.json"):
        rec = json.loads(path.read_text())
        facts[rec["labels"]["where"]] = rec["cache_drop"]
    # Two readers' files of 8 MiB each: 16,777,216 bytes in all. The drop evicts them from
    # the disk's page cache; a tmpfs keeps every page (it has nowhere else to put them).
    assert facts["disk"]["files_bytes"] == facts["memdisk"]["files_bytes"] == 2 * 8 * 1048576
    assert facts["disk"]["files_resident"] == 0
    assert facts["memdisk"]["files_resident"] == 2 * 8 * 1048576
    assert facts["memdisk"]["disk"] is None  # a tmpfs has no disk under it
    post = (work / "reports" / "cold" / "index.md").read_text()
    assert "**Page cache dropped.** The page cache was dropped before 2 runs" in post
    assert (
        "- Flagged: `where=memdisk` on localhost, run 1: 100% of its files were still "
        "cached after the drop" in post
    )
    assert "`where=disk` on localhost, run 1: 100%" not in post
