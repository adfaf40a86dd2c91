"""Validity checks: each flags what it should, on numbers worked out by hand here.

Unit tests build tidy and cells tables the way the tables step does; one end-to-end test
drops the page cache for real under files on a disk and on a tmpfs (which cannot drop them).
"""

from __future__ import annotations

import io
import itertools
import json
import math
import os
import shutil
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from perfpost.analysis import tidy as tidy_tables
from perfpost.analysis import validity
from tests.e2e import make_checkout, notebook_of, snakemake

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
    # The rate's own headline: nothing more to say. A reader's throughput, from freon's read
    # timer, is not over that time, and the check says the flags are the rate's alone.
    assert len(validity.lag_check(df, AXES, freon.TIME_LAG, "rate")["facts"]) == 1
    read = validity.lag_check(df, AXES, freon.TIME_LAG, "throughput")
    assert read["facts"][1] == (
        "These concern the rate column alone: the post's headline, throughput, is not taken "
        "over this time."
    )
    assert read["flags"] == check["flags"]
    # A tool without a lag has no such check.
    assert validity.lag_check(df, AXES, None) is None
    # The experiment's tool says which lag applies: dd has none.
    exp = {"tool": "dd", "axes": {"size": [1]}}
    assert "Reporting lag" not in [c["title"] for c in validity.checks(df, cells([]), exp, None)]
    exp["tool"] = "freon"
    assert "Reporting lag" in [c["title"] for c in validity.checks(df, cells([]), exp, None)]


SESSIONS = ["2026-11-01T10:00:00Z/1", "2026-11-20T09:00:00Z/2", "2026-12-02T08:00:00Z/3"]


def sessions(by_cell: dict[str, list[list[float]]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The tidy and cells tables of cells whose runs came from sessions: for each cell, one
    list of run values per session, in the order of SESSIONS."""
    runs, table = [], []
    for cell, per_session in by_cell.items():
        repeat = 0
        for session, values in zip(SESSIONS, per_session, strict=False):
            for value in values:
                repeat += 1
                runs.append((cell, "h", repeat, "throughput", value, "B/s"))
                table.append({"cell": cell, "host": "h", "repeat": repeat, "session": session})
    return tidy(runs), cells(table)


def test_sessions_that_disagree_are_flagged_and_one_session_is_said():
    # Two sessions of three runs, all of the first below all of the second. Of the C(6, 3) =
    # 20 ways to deal the six runs to two sessions of three, two are as far apart (1-3 | 4-6
    # and 4-6 | 1-3): the exact p is 2/20 = 0.1, and nothing is flagged. (The chi-square
    # approximation says 0.0495.)
    df, table = sessions({"size=1": [[10, 11, 12], [20, 21, 22]]})
    check = validity.session_check(df, table, AXES, "throughput")
    assert check is not None
    assert check["facts"][0] == (
        "The runs came from 2 runs of perfpost (started 2026-11-01T10:00:00Z, "
        "started 2026-11-20T09:00:00Z)."
    )
    assert check["flags"] == []
    assert "the smallest p is 0.1 (`size=1` on h)" in check["facts"][1]
    # Four runs a side, as far apart: 2 of the C(8, 4) = 70 ways, p = 2/70 = 0.0286: flagged.
    df, table = sessions({"size=1": [[10, 11, 12, 13], [20, 21, 22, 23]]})
    (flag,) = validity.session_check(df, table, AXES, "throughput")["flags"]
    assert flag.startswith("`size=1` on h: its runs from 2 sessions disagree")
    assert "p = 0.0286" in flag
    # Interleaved sessions agree: no flag.
    table["session"] = [SESSIONS[0], SESSIONS[1]] * 4
    assert validity.session_check(df, table, AXES, "throughput")["flags"] == []
    table["session"] = SESSIONS[0]
    one = validity.session_check(df, table, AXES, "throughput")
    assert one["facts"] == [
        "Every run came from one run of perfpost (started 2026-11-01T10:00:00Z)."
    ]


def test_the_cells_with_several_sessions_are_one_family_under_holms_correction():
    apart4 = [[10, 11, 12, 13], [20, 21, 22, 23]]  # p = 2/70 = 0.0286 (above)
    apart5 = [[10, 11, 12, 13, 14], [20, 21, 22, 23, 24]]  # p = 2/C(10, 5) = 2/252 = 0.00794
    agree = [[10, 12, 14, 16], [11, 13, 15, 17]]  # rank sums 16 and 20: p far above 0.05
    # The 4-a-side cell alone is flagged; beside two cells whose sessions agree it is the
    # smallest of three p: Holm multiplies it by 3, 0.0857 > 0.05, and nothing is flagged.
    df, table = sessions({"size=1": apart4})
    assert len(validity.session_check(df, table, AXES, "throughput")["flags"]) == 1
    df, table = sessions({"size=1": apart4, "size=2": agree, "size=3": agree})
    check = validity.session_check(df, table, AXES, "throughput")
    assert check["flags"] == []
    assert "Holm" in check["facts"][1]
    # Two 5-a-side cells apart and one that agrees: Holm gives 3 x 2/252 = 0.0238 to the
    # smaller and max(0.0238, 2 x 2/252) = 0.0238 to the next: both flagged, saying so.
    df, table = sessions({"size=1": apart5, "size=2": apart5, "size=3": agree})
    flags = validity.session_check(df, table, AXES, "throughput")["flags"]
    assert [f.split(":")[0] for f in flags] == ["`size=1` on h", "`size=2` on h"]
    for flag in flags:
        assert "p = 0.00794" in flag
        assert "0.0238 after Holm's correction over 3 cells" in flag


def _kruskal_h(*groups: Any, axis: int = -1) -> Any:
    from scipy import stats

    return stats.kruskal(*groups, axis=axis).statistic


@pytest.mark.parametrize(
    "groups",
    [
        [[10, 11, 12], [20, 21, 22]],  # apart, 3 a side
        [[1, 2, 2, 3], [2, 3, 3, 4, 4]],  # ties across the sessions
        [[5, 1, 4], [2, 6, 9, 7], [3, 8]],  # three sessions
        [[1, 1, 2], [2, 3, 3, 3], [1, 3, 4]],  # three sessions, ties
        [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12.5]],  # 34,650 ways: Monte-Carlo
    ],
)
def test_session_p_is_the_permutation_p_of_kruskal_wallis_h(groups):
    """scipy's permutation test over every distinct assignment of the runs to the sessions
    (N! / (n1! n2! ...) of them), with scipy's own H (mid-ranks for ties)."""
    from scipy import stats

    exact = stats.permutation_test(
        groups,
        _kruskal_h,
        permutation_type="independent",
        alternative="greater",
        n_resamples=np.inf,
        vectorized=True,
    ).pvalue
    ways = math.factorial(sum(map(len, groups))) // math.prod(
        math.factorial(len(g)) for g in groups
    )
    p = validity.session_p(groups)
    if ways <= validity.EXACT_ASSIGNMENTS:
        assert p == pytest.approx(exact, rel=1e-12)
    else:
        # Monte-Carlo: p = (1 + b) / (B + 1) for b of B permutations at least as far apart,
        # within 4 standard errors of the exact p, and the same again (seeded).
        b = validity.PERMUTATIONS
        assert round(p * (b + 1)) == pytest.approx(p * (b + 1), abs=1e-6)
        assert abs(p - exact) <= 4 * math.sqrt(max(exact, 1 / b) * (1 - exact) / b)
        assert validity.session_p(groups) == p


def test_the_fully_separated_three_a_side_cell_has_p_one_tenth_by_enumeration():
    """All C(6, 3) = 20 deals of the six runs to two sessions of three, each tested with
    scipy's H: 2 are as far apart as the runs were."""
    from scipy import stats

    runs = [10, 11, 12, 20, 21, 22]
    observed = stats.kruskal(runs[:3], runs[3:]).statistic
    deals = [
        stats.kruskal([runs[i] for i in first], [runs[i] for i in range(6) if i not in first])
        for first in itertools.combinations(range(6), 3)
    ]
    at_least = sum(d.statistic >= observed - 1e-12 for d in deals)
    assert (at_least, len(deals)) == (2, 20)
    assert validity.session_p([runs[:3], runs[3:]]) == at_least / len(deals) == 0.1


NULL_CELLS = 2000  # simulated cells a design, from one seeded generator


@pytest.mark.parametrize("sizes", [(3, 3), (4, 5)])
def test_sessions_that_agree_are_flagged_at_most_at_the_nominal_rate(sizes):
    """2,000 one-cell posts whose sessions' runs come from one normal distribution: the share
    flagged is the test's false-alarm rate, at most 5% plus 3 binomial standard deviations
    (0.0049 at 2,000 cells: 6.46%). The chi-square approximation flags 9.6% at 3 a side."""
    rng = np.random.default_rng(20261101)
    df, table = sessions({"size=1": [[0.0] * n for n in sizes]})
    flagged = 0
    for _ in range(NULL_CELLS):
        df["value"] = rng.normal(size=len(df))
        flagged += bool(validity.session_check(df, table, AXES, "throughput")["flags"])
    alpha = 0.05
    limit = alpha + 3 * math.sqrt(alpha * (1 - alpha) / NULL_CELLS)
    assert flagged / NULL_CELLS <= limit, (sizes, flagged)


FAMILY_POSTS = 400  # simulated posts, from one seeded generator


def test_a_post_whose_sessions_all_agree_is_flagged_at_most_at_the_nominal_rate():
    """400 posts of five cells, two sessions of six runs each, every run from one normal
    distribution: the share of posts with any flag is the family's false-alarm rate, at most
    5% plus 3 binomial standard deviations (0.0109 at 400 posts: 8.27%). Five cells tested
    each at 5% would flag 1 - 0.95^5 = 23% of such posts."""
    rng = np.random.default_rng(20261120)
    df, table = sessions({f"size={c}": [[0.0] * 6, [0.0] * 6] for c in range(1, 6)})
    flagged = 0
    for _ in range(FAMILY_POSTS):
        df["value"] = rng.normal(size=len(df))
        flagged += bool(validity.session_check(df, table, AXES, "throughput")["flags"])
    alpha = 0.05
    limit = alpha + 3 * math.sqrt(alpha * (1 - alpha) / FAMILY_POSTS)
    assert flagged / FAMILY_POSTS <= limit, flagged


def cold_reads(rates: list[float], **disk: Any) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Cold-read runs of one cell at ``rates`` (B/s) from a disk with the lsblk facts
    ``disk`` (cells.csv's ``cache_*`` columns), as the tables step makes them."""
    runs = []
    for repeat, rate in enumerate(rates, 1):
        runs += [
            ("size=1", "h", repeat, "cached_before_drop", 8e8, "B"),
            ("size=1", "h", repeat, "cached_after_drop", 1e8, "B"),
            ("size=1", "h", repeat, "files_cached_after_drop", 0, "B"),
            ("size=1", "h", repeat, "throughput", rate, "B/s"),
        ]
    table = [
        {"cell": "size=1", "host": "h", "repeat": r, **{f"cache_{k}": v for k, v in disk.items()}}
        for r in range(1, len(rates) + 1)
    ]
    return tidy(runs), cells(table)


def as_read_back(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` written to cells.csv and read again (None is empty, True a word)."""
    buf = io.StringIO()
    table.to_csv(buf, index=False)
    buf.seek(0)
    return pd.read_csv(buf)


SATA_HDD = {"disk": "sda", "rotational": True, "transport": "sata", "type": "disk"}


def test_reads_from_one_sata_disk_past_sata_iiis_line_rate_are_flagged():
    # SATA III: 6 Gb/s on the line, 10 line bits a byte (8b/10b): 600 MB/s. A dual-actuator
    # SATA disk is rated 554 MB/s, below it (and above the 300 MB/s once assumed for any
    # spinning disk): not flagged. 1.2 GB/s cannot have come over the link: flagged.
    df, table = cold_reads([554e6, 1.2e9], **SATA_HDD)
    for t in (table, as_read_back(table)):
        check = validity.cache_check(df, t, AXES, "throughput")
        assert check is not None
        assert (
            "Reads from `sda` on h are checked against SATA III's line rate (600 MB/s)."
            in (check["facts"])
        )
        (flag,) = check["flags"]
        assert flag.startswith(
            "`size=1` on h, run 2: 1.20 GB/s from `sda`, faster than SATA III's line rate "
            "(600 MB/s)"
        )


@pytest.mark.parametrize(
    ("disk", "why"),
    [
        (
            {"disk": "nvme0n1", "rotational": False, "transport": "nvme", "type": "disk"},
            "`nvme0n1` is on nvme: no interface limit known",
        ),
        (
            {"disk": "dm-0", "rotational": True, "transport": None, "type": "lvm"},
            "`dm-0` is an LVM volume",
        ),
        (
            {"disk": "md0", "rotational": True, "transport": None, "type": "raid0"},
            "`md0` is an md RAID (raid0)",
        ),
        (
            {"disk": "vda", "rotational": True, "transport": None, "type": "disk"},
            "`vda` is a virtio disk: no interface limit known",
        ),
        (
            {"disk": "loop0", "rotational": False, "transport": None, "type": "loop"},
            "`loop0` is a loop device",
        ),
        # Recorded before the device's type was: a SATA disk's, or a volume's, unknown.
        (
            {"disk": "sda", "rotational": True, "transport": "sata"},
            "`sda`'s device type was not recorded (a record from before perfpost kept it)",
        ),
    ],
)
def test_no_ceiling_is_assumed_for_a_volume_or_an_unknown_interface_and_the_check_says_why(
    disk, why
):
    # 1.2 GB/s: four times the 300 MB/s once assumed for anything rotational. An LVM or md
    # volume of spinning disks reports ROTA=1 and reads from several; a virtio disk's host
    # may be anything.
    df, table = cold_reads([1.2e9], **disk)
    for t in (table, as_read_back(table)):
        check = validity.cache_check(df, t, AXES, "throughput")
        assert check is not None
        assert check["flags"] == []
        assert f"No read ceiling is known on h: {why}." in check["facts"]


def test_cells_table_carries_the_device_type_and_reads_records_without_it():
    def record(cache_drop: dict) -> dict:
        return {
            "cell": "size=1",
            "host": "h",
            "repeat": 1,
            "status": "done",
            "cache_drop": cache_drop,
        }

    new = {"disk": "dm-0", "rotational": True, "transport": None, "type": "lvm"}
    old = {"disk": "sda", "rotational": True, "transport": "sata"}
    table = tidy_tables.cells_table([("a.json", record(new)), ("b.json", record(old))])
    assert table["cache_type"].iloc[0] == "lvm"
    assert pd.isna(table["cache_type"].iloc[1])  # unknown, as cells.csv will say
    assert table["cache_disk"].tolist() == ["dm-0", "sda"]


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
    post = notebook_of(work / "reports" / "cold" / "index.md")
    assert "**Page cache dropped.** The page cache was dropped before 2 runs" in post
    assert (
        "- Flagged: `where=memdisk` on localhost, run 1: 100% of its files were still "
        "cached after the drop" in post
    )
    assert "`where=disk` on localhost, run 1: 100%" not in post


def test_sessions_too_small_to_disagree_say_so():
    # Two sessions of three runs: C(6, 3) = 20 deals, the two extreme ones as far apart, so
    # the smallest p is 2/20 = 0.1, above 0.05 whatever the runs: not testable, not "nothing
    # flagged".
    assert validity.smallest_session_p([3, 3]) == pytest.approx(2 / 20)
    # 3 + 4: 35 deals; the lowest three in the first session, or the highest three (a
    # deal and its reversal have one H): 2/35.
    assert validity.smallest_session_p([3, 4]) == pytest.approx(2 / 35)
    df, table = sessions({"size=1": [[10, 11, 12], [20, 21, 22]]})
    check = validity.session_check(df, table, AXES, "throughput")
    assert check["flags"] == []
    assert "the smallest is 0.1" in check["untestable"]
