"""Validity checks: the measured facts that say a run's number is worth quoting.

Each check states what was measured and flags the runs where it fails, so the post never
quotes a number without the evidence behind it:

- **Page cache dropped** (cells with ``drop_cache``): /proc/meminfo's ``Cached`` before and
  after the drop, and how much of the cell's own files was still in the page cache when the
  measurement started (fincore). Flagged: files still cached (a tmpfs cannot drop them), and
  reads faster than the disk under them delivers at most (a rotational disk
  :data:`ROTATIONAL_CEILING`, SATA's line rate :data:`SATA_CEILING`): they came from a cache
  below the page cache (a virtual disk's host, a controller).
- **Start skew** (start_together): the spread of the hosts' starts against the run's length;
  flagged above :data:`SKEW_SHARE`, where the hosts' aggregate is not over one window.
- **sync share** (``after: [sync]``): how much of write plus sync the sync took; flagged above
  :data:`SYNC_SHARE`, where the raw rate overstates what reached the disk.
- **Sessions**: runs of one cell made by different runs of perfpost (a re-run later, a
  retried cell). Where a cell has runs from several, a Kruskal-Wallis test across them;
  flagged where it rejects at :data:`ALPHA`: the runs were pooled, but the sessions disagree.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
from scipy import stats as sps

from perfpost.analysis.tidy import results
from perfpost.units import format_bytes, format_value, metric_label, sig

ROTATIONAL_CEILING = 300e6  # B/s: above the fastest spinning disk's sequential rate
SATA_CEILING = 600e6  # B/s: SATA III's 6 Gb/s after 8b/10b encoding
FILES_CACHED_SHARE = 0.01  # of a cell's files still cached after a drop
SKEW_SHARE = 0.01  # of the run's length
SYNC_SHARE = 0.10  # of write plus sync
ALPHA = 0.05


def _cell_name(row: Any, axes: list[str]) -> str:
    return ", ".join(f"{a}={getattr(row, a)}" for a in axes) or str(row.cell)


def _runs(tidy_df: pd.DataFrame, metric: str) -> pd.DataFrame:
    done = results(tidy_df)
    return done[done["metric"] == metric]


def _run_name(row: Any, axes: list[str]) -> str:
    return f"`{_cell_name(row, axes)}` on {row.host}, repeat {row.repeat}"


def _ceiling(rotational: Any, transport: Any) -> tuple[float, str] | None:
    if transport == "sata":
        return SATA_CEILING, "SATA's line rate"
    if str(rotational).lower() in ("true", "1", "1.0"):  # a bool, or as cells.csv read it
        return ROTATIONAL_CEILING, "a rotational disk's"
    return None


def cache_check(
    tidy_df: pd.DataFrame, cells: pd.DataFrame, axes: list[str], rate: str | None
) -> dict[str, Any] | None:
    """The page-cache drop's evidence and its flags; None where no run dropped the cache."""
    after = _runs(tidy_df, "cached_after_drop")
    if after.empty:
        return None
    before = _runs(tidy_df, "cached_before_drop")
    resident = _runs(tidy_df, "files_cached_after_drop")
    facts = [
        f"The page cache was dropped before {len(after)} runs: /proc/meminfo's Cached went "
        f"from {format_bytes(before['value'].median())} to "
        f"{format_bytes(after['value'].median())} (medians)."
    ]
    flags = []
    files = tidy_df[tidy_df["metric"] == "files_cached_after_drop"]
    if not resident.empty:
        facts.append(
            f"Of the files the runs read, at most {format_bytes(resident['value'].max())} were "
            "still in the page cache when the measurement started (fincore)."
        )
    sizes = _file_sizes(cells)
    for row in files.itertuples(index=False):
        size = sizes.get((row.cell, row.host, row.repeat))
        if row.status == "done" and size and row.value > FILES_CACHED_SHARE * size:
            flags.append(
                f"{_run_name(row, axes)}: {row.value / size:.0%} of its files were still cached "
                "after the drop (a tmpfs, or files in use, cannot be dropped): its reads "
                "measure memory."
            )
    if rate is not None:
        disks = cells.set_index(["cell", "host", "repeat"])
        for row in _runs(tidy_df, rate).itertuples(index=False):
            key = (row.cell, row.host, row.repeat)
            if key not in disks.index or row.unit != "B/s":
                continue
            info = disks.loc[key]
            limit = _ceiling(info.get("cache_rotational"), info.get("cache_transport"))
            if limit is not None and row.value > limit[0] and key in _dropped(after):
                flags.append(
                    f"{_run_name(row, axes)}: {format_value(row.value, 'B/s')} from "
                    f"`{info.get('cache_disk')}`, faster than {limit[1]} "
                    f"{format_value(limit[0], 'B/s')}: served by a cache below the page cache "
                    "(a virtual disk's host, a controller), not by the disk."
                )
    return {"title": "Page cache dropped", "facts": facts, "flags": flags}


def _dropped(after: pd.DataFrame) -> set[tuple[str, str, int]]:
    return set(zip(after["cell"], after["host"], after["repeat"], strict=True))


def _file_sizes(cells: pd.DataFrame) -> dict[tuple[str, str, int], float]:
    if "cache_files_bytes" not in cells:
        return {}
    return {
        (r.cell, r.host, r.repeat): float(r.cache_files_bytes)
        for r in cells.itertuples(index=False)
        if r.cache_files_bytes == r.cache_files_bytes and r.cache_files_bytes
    }


def skew_check(tidy_df: pd.DataFrame, axes: list[str]) -> dict[str, Any] | None:
    """Start skew of start_together runs against their length."""
    skew = _runs(tidy_df, "start_skew")
    if skew.empty:
        return None
    wall = _runs(tidy_df, "wall_time").set_index(["cell", "repeat", "host"])["value"]
    worst = skew["value"].max()
    facts = [
        f"The hosts started within {sig(worst * 1000)} ms of each other (the largest skew of "
        f"{len(skew)} host runs)."
    ]
    flags = []
    for row in skew.itertuples(index=False):
        length = wall.get((row.cell, row.repeat, row.host))
        if length and row.value > SKEW_SHARE * length:
            flags.append(
                f"{_run_name(row, axes)}: start skew {sig(row.value * 1000)} ms is "
                f"{row.value / length:.1%} of its {sig(length)} s: the hosts' aggregate "
                f"throughput is not over one window (above {SKEW_SHARE:.0%})."
            )
    return {"title": "Start skew", "facts": facts, "flags": flags}


def sync_check(tidy_df: pd.DataFrame, axes: list[str], threshold: float) -> dict[str, Any] | None:
    """The sync step's share of write plus sync."""
    sync = _runs(tidy_df, "sync_time")
    if sync.empty:
        return None
    wall = _runs(tidy_df, "wall_time").set_index(["cell", "host", "repeat"])["value"]
    shares = []
    flags = []
    for row in sync.itertuples(index=False):
        length = wall.get((row.cell, row.host, row.repeat))
        if length is None:
            continue
        share = row.value / (length + row.value) if length + row.value > 0 else 0.0
        shares.append(share)
        if share > SYNC_SHARE:
            flags.append(
                f"{_run_name(row, axes)}: sync took {sig(row.value)} s, {share:.0%} of write "
                f"plus sync: the raw rate overstates what reached the disk"
                + (" (the sync time added rate has it)." if row.value > threshold else ".")
            )
    added = int((sync["value"] > threshold).sum())
    facts = [
        f"`sync` after each run took {share_text(shares)} of write plus sync; it took longer "
        f"than {threshold:g} s in {added} of {len(sync)} runs, and was added to their write "
        "time."
    ]
    return {"title": "`sync` share", "facts": facts, "flags": flags}


def share_text(shares: list[float]) -> str:
    if not shares:
        return "n/a"
    s = pd.Series(shares)
    return f"{s.median():.1%} (median; at most {s.max():.1%})"


def session_check(
    tidy_df: pd.DataFrame, cells: pd.DataFrame, axes: list[str], metric: str | None
) -> dict[str, Any] | None:
    """Runs from several sessions of perfpost, and whether the sessions agree."""
    if metric is None or "session" not in cells:
        return None
    sessions = cells[cells["status"] == "done"].set_index(["cell", "host", "repeat"])["session"]
    runs = _runs(tidy_df, metric).copy()
    runs["session"] = [
        sessions.get(key) for key in zip(runs["cell"], runs["host"], runs["repeat"], strict=True)
    ]
    known = runs["session"].dropna()
    if known.empty:
        return None
    count = known.nunique()
    if count == 1:
        return {
            "title": "Sessions",
            "facts": [f"Every run came from one run of perfpost (started {_when(known.iloc[0])})."],
            "flags": [],
        }
    facts = [f"The runs came from {count} runs of perfpost ({_sessions(known)})."]
    flags = []
    mixed = 0
    for (_, host), sub in runs.groupby(["cell", "host"], sort=False):
        groups = [g["value"].tolist() for _, g in sub.groupby("session", sort=False)]
        if len(groups) < 2:
            continue
        mixed += 1
        if len({v for g in groups for v in g}) < 2:
            continue  # all equal: nothing to test, and nothing to disagree on
        p = float(sps.kruskal(*groups).pvalue)
        if p <= ALPHA:
            row = sub.iloc[0]
            flags.append(
                f"`{_cell_name(row, axes)}` on {host}: its runs from {len(groups)} sessions "
                f"disagree (Kruskal-Wallis p = {p:.3g}); they are pooled in the results, "
                "read them per session in the data."
            )
    facts.append(
        f"{mixed} cell(s) have runs from more than one; Kruskal-Wallis across their sessions "
        f"({metric_label(metric).lower()}) flags those where p <= {ALPHA:g}."
    )
    return {"title": "Sessions", "facts": facts, "flags": flags}


def _when(session: str) -> str:
    return str(session).split("/", 1)[0]


def _sessions(known: pd.Series) -> str:
    return ", ".join(f"started {_when(s)}" for s in sorted(known.unique()))


def checks(
    tidy_df: pd.DataFrame,
    cells: pd.DataFrame,
    experiment: Mapping[str, Any],
    metric: str | None,
) -> list[dict[str, Any]]:
    """Every check that applies to the experiment's runs, in the post's order."""
    axes = list(experiment["axes"])
    found = [
        cache_check(tidy_df, cells, axes, metric),
        skew_check(tidy_df, axes),
        sync_check(tidy_df, axes, float(experiment.get("sync_threshold", 0.1))),
        session_check(tidy_df, cells, axes, metric),
    ]
    return [c for c in found if c is not None]
