"""Validity checks: the measured facts that say a run's number is worth quoting.

Each check states what was measured and flags the runs where it fails, so the post never
quotes a number without the evidence behind it:

- **Page cache dropped** (cells with ``drop_cache``): /proc/meminfo's ``Cached`` before and
  after the drop, and how much of the cell's own files was still in the page cache when the
  measurement started (fincore). Flagged: files still cached (a tmpfs cannot drop them), and
  reads faster than the device under them can deliver: they came from a cache below the
  page cache (a virtual disk's host, a controller). A ceiling is known only for one physical
  disk (lsblk's TYPE ``disk``) on an interface in :data:`INTERFACE_CEILINGS` (SATA); for
  anything else (an LVM, md or dm volume, a loop device, NVMe, virtio, a record without the
  type) the section says that no ceiling is known, and why.
- **Start skew** (start_together): the spread of the hosts' starts against the run's length;
  flagged above :data:`SKEW_SHARE`, where the hosts' aggregate is not over one window; and
  flagged where a host was not yet waiting when the common start came.
- **sync share** (``after: [sync]``): how much of write plus sync the sync took; flagged above
  :data:`SYNC_SHARE` whatever the sync took in seconds, where the raw rate overstates what
  reached the disk.
- **Reporting lag** (tools whose clock can stop late, ``TIME_LAG``: freon): how much of a
  run's time the lag can be; flagged above :data:`LAG_SHARE`, where the rate may read low by
  that much.
- **Sessions**: runs of one cell made by different runs of perfpost (a re-run later, a
  retried cell). Where a cell has runs from several, Kruskal-Wallis across them, its p the
  exact permutation p of H (:func:`session_p`: a cell has few runs, too few for the
  chi-square approximation, which flags two sessions of three runs twice as often as it
  says). The post's cells with several sessions are one family: flagged where Holm's
  adjusted p is at most :data:`ALPHA`: the runs were pooled, but the sessions disagree.
- **Drift**: each cell's runs against the order they started in (Mann-Kendall, exact p;
  :mod:`perfpost.analysis.drift`); flagged where they rose or fell with it.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd

from perfpost import tools
from perfpost.analysis import drift, resource_checks
from perfpost.analysis.stats import holm
from perfpost.analysis.tidy import cell_name, results
from perfpost.tools.base import LAG_SHARE
from perfpost.units import counted, format_bytes, format_value, metric_label, sig

SATA_CEILING = 600e6  # B/s: SATA III's 6 Gb/s line rate, 10 line bits a byte (8b/10b)
# The rate no single disk on an interface (lsblk's TRAN) can pass, whatever the disk: its
# link's. A dual-actuator SATA disk is rated 554 MB/s, under SATA's. Left out: "sas" (SAS
# HBAs such as hpsa and smartpqi show a controller's RAID volume as one SAS disk), "ata"
# (lsblk's word for any other driver with "ata" in its name), "nvme" (its PCIe lanes and
# generation are not in lsblk), "usb", "iscsi", "fc" (the other end is a machine or array).
INTERFACE_CEILINGS = {"sata": (SATA_CEILING, "SATA III's line rate")}
ONE_DISK = ("disk", "part")  # lsblk TYPEs of one physical device (or a part of it)
VOLUMES = {  # lsblk TYPEs of a volume: its reads may come from several disks, or none
    "lvm": "an LVM volume",
    "crypt": "a dm-crypt volume",
    "mpath": "a multipath device",
    "dmraid": "a firmware RAID volume (dmraid)",
    "dm": "a device-mapper volume",
    "loop": "a loop device",
}
FILES_CACHED_SHARE = 0.01  # of a cell's files still cached after a drop
SKEW_SHARE = 0.01  # of the run's length
SYNC_SHARE = 0.10  # of write plus sync
ALPHA = 0.05  # the sessions' family, after Holm's correction
EXACT_ASSIGNMENTS = 20_000  # up to this many ways to deal a cell's runs, every one is tried
PERMUTATIONS = 9_999  # beyond, random deals: p resolves to 1 / 10,000
PERMUTATION_SEED = 20261101  # the same runs give the same p in every post


def _runs(tidy_df: pd.DataFrame, metric: str) -> pd.DataFrame:
    done = results(tidy_df)
    return done[done["metric"] == metric]


class _Flags:
    """Flagged runs gathered per cell and host: one line each, naming its runs and the range
    of what was measured (18 cold-read runs of 6 cells are 6 lines, not 18)."""

    def __init__(self, axes: list[str]) -> None:
        self.axes = axes
        self.cells: dict[tuple[str, str], list[tuple[int, float, float]]] = {}
        self.names: dict[tuple[str, str], str] = {}

    def add(self, row: Any, value: float, share: float = float("nan")) -> None:
        key = (str(row.cell), str(row.host))
        self.names.setdefault(key, cell_name(row, self.axes))
        self.cells.setdefault(key, []).append((int(row.repeat), value, share))

    def lines(self, text: Any) -> list[str]:
        """``text(values, shares)`` says what the runs' values and shares were."""
        out = []
        for (_, host), runs in self.cells.items():
            runs.sort()
            which = ", ".join(str(r) for r, _, _ in runs)
            label = f"run{'s' if len(runs) > 1 else ''} {which}"
            values = [v for _, v, _ in runs]
            shares = [sh for _, _, sh in runs]
            out.append(f"`{self.names[(_, host)]}` on {host}, {label}: {text(values, shares)}")
        return out


def _span(values: list[float], show: Any) -> str:
    low, high = min(values), max(values)
    return show(low) if show(low) == show(high) else f"{show(low)} .. {show(high)}"


def _fact(value: Any) -> str | None:
    """A cells.csv field as text: None, NaN (an empty field read back) and "" are unknown."""
    if value is None or value != value or value == "":
        return None
    return str(value)


def _ceiling(disk: str | None, kind: str | None, transport: str | None) -> tuple[float, str] | str:
    """The most a device can deliver and what that is, or why no such ceiling is known.
    Only one physical disk has one: a volume's reads (LVM, md RAID, reporting ROTA=1 over
    spinning disks) may come from several disks, and a loop device's from another file
    system."""
    if disk is None:
        return "no disk was found under the files (a tmpfs, an overlay, a network file system)"
    if kind is None:
        return f"`{disk}`'s device type was not recorded (a record from before perfpost kept it)"
    if kind not in ONE_DISK:
        if kind in VOLUMES:
            return f"`{disk}` is {VOLUMES[kind]}"
        if kind.startswith("raid") or kind in ("linear", "md", "multipath"):
            return f"`{disk}` is an md RAID ({kind})"
        return f"`{disk}` is of type {kind}, not one disk"
    if transport in INTERFACE_CEILINGS:
        return INTERFACE_CEILINGS[transport]
    if transport is None:
        # Linux names virtio-blk disks vd*; they report no transport.
        what = "a virtio disk" if disk.startswith("vd") else "a disk with no transport reported"
        return f"`{disk}` is {what}: no interface limit known"
    return f"`{disk}` is on {transport}: no interface limit known"


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
    if not resident.empty:
        most = resident["value"].max()
        facts.append(
            "None of the files the runs read was still in the page cache when the measurement "
            "started (fincore)."
            if most == 0
            else f"Of the files the runs read, at most {format_bytes(most)} were still in the "
            "page cache when the measurement started (fincore)."
        )
    cached = _Flags(axes)
    sizes = _file_sizes(cells)
    for row in resident.itertuples(index=False):
        size = sizes.get((row.cell, row.host, row.repeat))
        if size and row.value > FILES_CACHED_SHARE * size:
            cached.add(row, row.value, row.value / size)
    flags = cached.lines(
        lambda _, shares: (
            f"{_span(shares, '{:.0%}'.format)} of its files were still cached after the "
            "drop (a tmpfs, or files in use, cannot be dropped): its reads measure memory."
        )
    )
    if rate is not None:
        disks = cells.set_index(["cell", "host", "repeat"])
        dropped = _dropped(after)
        fast: dict[tuple[str, float, str], _Flags] = {}
        said: dict[str, list[str]] = {}  # what is said of a device's reads -> its hosts
        for row in _runs(tidy_df, rate).itertuples(index=False):
            key = (row.cell, row.host, row.repeat)
            if key not in disks.index or key not in dropped or row.unit != "B/s":
                continue
            info = disks.loc[key]
            disk = _fact(info.get("cache_disk"))
            limit = _ceiling(
                disk, _fact(info.get("cache_type")), _fact(info.get("cache_transport"))
            )
            if isinstance(limit, str):
                fact = f"No read ceiling is known on {{hosts}}: {limit}."
            else:
                fact = (
                    f"Reads from `{disk}` on {{hosts}} are checked against {limit[1]} "
                    f"({format_value(limit[0], 'B/s')})."
                )
                if row.value > limit[0]:
                    fast.setdefault((str(disk), *limit), _Flags(axes)).add(row, row.value)
            hosts = said.setdefault(fact, [])
            if str(row.host) not in hosts:
                hosts.append(str(row.host))
        facts += [fact.format(hosts=", ".join(hosts)) for fact, hosts in said.items()]
        for (disk, ceiling, what), found in fast.items():
            flags += found.lines(
                lambda values, _, d=disk, c=ceiling, w=what: (
                    f"{_span(values, lambda v: format_value(v, 'B/s'))} from `{d}`, faster "
                    f"than {w} ({format_value(c, 'B/s')}): served by a cache below the page "
                    "cache (a virtual disk's host, a controller), not by the disk."
                )
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


def _ready_ahead(cells: pd.DataFrame) -> dict[tuple[str, str, int], float]:
    if "start_ready_ahead" not in cells:
        return {}
    ahead = pd.to_numeric(cells["start_ready_ahead"], errors="coerce")
    return {
        (str(r.cell), str(r.host), int(r.repeat)): float(a)
        for r, a in zip(cells.itertuples(index=False), ahead, strict=True)
        if a == a
    }


def skew_check(
    tidy_df: pd.DataFrame, cells: pd.DataFrame, axes: list[str]
) -> dict[str, Any] | None:
    """Start skew of start_together runs against their length, and whether every host was
    waiting for the common start: one that was still being set up starts late for that
    reason, and the skew then measures perfpost's set-up, not the hosts."""
    skew = _runs(tidy_df, "start_skew")
    if skew.empty:
        return None
    wall = _runs(tidy_df, "wall_time").set_index(["cell", "repeat", "host"])["value"]
    worst = skew["value"].max()
    facts = [
        f"The hosts started within {sig(worst * 1000)} ms of each other (the largest skew of "
        f"{len(skew)} host runs)."
    ]
    skewed = _Flags(axes)
    for row in skew.itertuples(index=False):
        length = wall.get((row.cell, row.repeat, row.host))
        if length and row.value > SKEW_SHARE * length:
            skewed.add(row, row.value, row.value / length)
    flags = skewed.lines(
        lambda values, shares: (
            f"start skew {_span(values, lambda v: sig(v * 1000) + ' ms')}, "
            f"{_span(shares, '{:.1%}'.format)} of the run's length: the hosts' aggregate "
            f"throughput is not over one window (above {SKEW_SHARE:.0%})."
        )
    )
    ahead = _ready_ahead(cells)
    known = []  # the leads of the runs that recorded one
    late = _Flags(axes)
    for row in skew.itertuples(index=False):
        lead = ahead.get((str(row.cell), str(row.host), int(row.repeat)))
        if lead is None:
            continue
        known.append(lead)
        if lead < 0:
            late.add(row, -lead)
    if known and min(known) >= 0:
        facts.append(
            f"Every host was waiting when the common start came (the last ready "
            f"{sig(min(known) * 1000)} ms before it)."
        )
    flags += late.lines(
        lambda values, _: (
            f"ready {_span(values, lambda v: sig(v * 1000) + ' ms')} after the planned start "
            "(perfpost was still setting the host up): its start, and its cell's skew, "
            "include that delay, not only the hosts' own."
        )
    )
    return {"title": "Start skew", "facts": facts, "flags": flags}


def sync_check(tidy_df: pd.DataFrame, axes: list[str]) -> dict[str, Any] | None:
    """The sync step's share of write plus sync, flagged on its own: a sync that takes a
    large share of the run says the raw rate overstates what reached the disk, however long
    it took in seconds."""
    sync = _runs(tidy_df, "sync_time")
    if sync.empty:
        return None
    wall = _runs(tidy_df, "wall_time").set_index(["cell", "host", "repeat"])["value"]
    shares = []
    slow = _Flags(axes)
    for row in sync.itertuples(index=False):
        length = wall.get((row.cell, row.host, row.repeat))
        if length is None:
            continue
        share = row.value / (length + row.value) if length + row.value > 0 else 0.0
        shares.append(share)
        if share > SYNC_SHARE:
            slow.add(row, row.value, share)
    flags = slow.lines(
        lambda values, shares: (
            f"sync took {_span(values, lambda v: sig(v) + ' s')}, "
            f"{_span(shares, '{:.0%}'.format)} of write plus sync: the raw rate overstates "
            "what reached the disk; the sync time added rate has it."
        )
    )
    facts = [
        f"`sync` after each run took {share_text(shares)} of write plus sync, and is added "
        f"to every run's write time in the sync time added rate ({len(sync)} runs)."
    ]
    return {"title": "`sync` share", "facts": facts, "flags": flags}


def lag_check(
    tidy_df: pd.DataFrame,
    axes: list[str],
    lag: tuple[str, str, float, str] | None,
    metric: str | None = None,
) -> dict[str, Any] | None:
    """The tool's reporting lag against each run's time. ``lag`` names the metric of the time
    a run's rate is over, the metric of how late that time's clock can stop (0 for a rate
    between two stamped moments), the lag of a run recorded without that metric (over its
    ``elapsed``), and why the clock can stop late. Where the post's headline ``metric`` is
    not that rate (a reader's throughput, from its own timer), the check says so."""
    if not lag:
        return None
    time_metric, lag_metric, seconds, why = lag
    keys = ["cell", "host", "repeat"]
    times = _runs(tidy_df, time_metric).set_index(keys)["value"]
    elapsed = _runs(tidy_df, "elapsed").set_index(keys)["value"]
    lags = _runs(tidy_df, lag_metric).set_index(keys)["value"]
    runs = []  # (row, time, lag) of every run with a time
    for row in _runs(tidy_df, "elapsed").itertuples(index=False):
        key = (row.cell, row.host, row.repeat)
        length = times.get(key, elapsed.get(key))
        if length and length > 0:
            runs.append((row, float(length), float(lags.get(key, seconds))))
    if not runs:
        return None
    lagged = [(row, length, late) for row, length, late in runs if late > 0]
    if not lagged:
        return {
            "title": "Reporting lag",
            "facts": [
                f"Every rate ({len(runs)} runs) is over its run's measured phase, whose ends "
                f"are moments stamped to the millisecond: the reporting lag ({why}) is in "
                "none of them."
            ],
            "flags": [],
        }
    late = _Flags(axes)
    for row, length, most in lagged:
        if most > LAG_SHARE * length:
            late.add(row, length, most / length)
    row, shortest, most = min(lagged, key=lambda x: x[1])
    whole = "" if len(lagged) == len(runs) else f"{len(lagged)} of {len(runs)} "
    facts = [
        f"{whole}{'R' if not whole else 'r'}uns' rates are over the whole run: "
        f"{why}, so such a run's time can be long by up to {most:g} s: up to "
        f"{most / shortest:.0%} of the shortest of them ({sig(shortest)} s)."
    ]
    rate = time_metric.removesuffix("_time")
    if metric and not metric.startswith(rate):
        facts.append(
            f"These concern the {metric_label(rate).lower()} column alone: the post's "
            f"headline, {metric_label(metric).lower()}, is not taken over this time."
        )
    flags = late.lines(
        lambda values, shares: (
            f"took {_span(values, lambda v: sig(v) + ' s')}: its rate may read low by up to "
            f"{_span(shares, '{:.0%}'.format)} (above {LAG_SHARE:.0%})."
        )
    )
    return {"title": "Reporting lag", "facts": facts, "flags": flags}


def share_text(shares: list[float]) -> str:
    if not shares:
        return "n/a"
    s = pd.Series(shares)
    return f"{s.median():.1%} (median; at most {s.max():.1%})"


def _rank_sums(ranks: np.ndarray, sizes: Sequence[int]) -> np.ndarray:
    """The sessions' rank sums for every distinct way to deal ``ranks`` to sessions of
    ``sizes`` (one row a way, N! / (n1! n2! ...) rows)."""
    if len(sizes) == 1:
        return np.array([[ranks.sum()]])
    firsts = np.array(list(itertools.combinations(range(len(ranks)), sizes[0])), dtype=np.intp)
    first = ranks[firsts].sum(axis=1)
    if len(sizes) == 2:
        return np.column_stack([first, ranks.sum() - first])
    blocks = []
    for chosen, total in zip(firsts, first, strict=True):
        rest = _rank_sums(np.delete(ranks, chosen), sizes[1:])
        blocks.append(np.column_stack([np.full(len(rest), total), rest]))
    return np.vstack(blocks)


def _random_rank_sums(ranks: np.ndarray, sizes: Sequence[int], count: int) -> np.ndarray:
    """The sessions' rank sums for ``count`` random deals, seeded (:data:`PERMUTATION_SEED`)."""
    rng = np.random.default_rng(PERMUTATION_SEED)
    starts = np.cumsum([0, *sizes[:-1]])
    out = []
    for done in range(0, count, 1000):  # 1,000 deals at a time: a cell may have many runs
        deals = rng.permuted(np.tile(ranks, (min(1000, count - done), 1)), axis=1)
        out.append(np.add.reduceat(deals, starts, axis=1))
    return np.vstack(out)


def session_p(groups: Sequence[Sequence[float]]) -> float:
    """Kruskal-Wallis across sessions (each group one session's runs): the permutation p of
    H, the share of the ways to deal the runs to sessions of these sizes whose H is at least
    the runs' own. The chi-square approximation needs about five runs a session; a cell has
    three to ten, and at three a side it flags 9.6% of agreeing sessions at 5%.

    Up to :data:`EXACT_ASSIGNMENTS` ways every one is tried; beyond, :data:`PERMUTATIONS`
    random ones, p = (1 + b) / (B + 1) for b of B as far apart. Ties take mid-ranks, which
    deal with the runs; with every run equal there is nothing to disagree on: p = 1.

    Given the runs, H grows with the sum over sessions of (rank sum)^2 / runs (its tie
    correction and constants are the same for every deal), so that sum is compared."""
    values = np.concatenate([np.asarray(g, dtype=float) for g in groups])
    sizes = [len(g) for g in groups]
    if len(np.unique(values)) < 2:
        return 1.0
    ranks = pd.Series(values).rank(method="average").to_numpy()
    weights = 1.0 / np.asarray(sizes, dtype=float)
    starts = np.cumsum([0, *sizes[:-1]])
    observed = float((np.add.reduceat(ranks, starts) ** 2 * weights).sum())
    ways = math.factorial(len(values)) // math.prod(math.factorial(n) for n in sizes)
    exact = ways <= EXACT_ASSIGNMENTS
    sums = _rank_sums(ranks, sizes) if exact else _random_rank_sums(ranks, sizes, PERMUTATIONS)
    stats = (sums**2 * weights).sum(axis=1)
    # Mid-ranks are halves: equal statistics may differ in the last bits of a float.
    apart = int((stats >= observed - 1e-9 * observed).sum())
    return apart / len(stats) if exact else (1 + apart) / (PERMUTATIONS + 1)


def smallest_session_p(sizes: Sequence[int]) -> float:
    """The smallest p :func:`session_p` can give runs dealt to sessions of these ``sizes``:
    its own p of the runs farthest apart, each session a block of consecutive values, over
    every order of the blocks (H counts the groups' rank sums, so which order is farthest
    depends on the sizes; a deal and its reversal tie)."""
    best = 1.0
    for order in set(itertools.permutations(sizes)):
        groups, start = [], 0
        for k in order:
            groups.append([float(v) for v in range(start, start + k)])
            start += k
        best = min(best, session_p(groups))
    return best


def session_check(
    tidy_df: pd.DataFrame, cells: pd.DataFrame, axes: list[str], metric: str | None
) -> dict[str, Any] | None:
    """Runs from several sessions of perfpost, and whether the sessions agree: every cell
    with runs from several is tested (:func:`session_p`), and they are one family, so a
    post of many cells is not flagged by chance alone more often than :data:`ALPHA`."""
    if metric is None or "session" not in cells:
        return None
    done = cells[cells["status"] == "done"]
    sessions = dict(
        zip(
            zip(done["cell"], done["host"], done["repeat"], strict=True),
            done["session"],
            strict=True,
        )
    )
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
    tested: list[tuple[str, int, float]] = []  # (cell on host, sessions, p)
    sizes_of: list[list[list[float]]] = []
    for (_, host), sub in runs.groupby(["cell", "host"], sort=False):
        groups = [g["value"].tolist() for _, g in sub.groupby("session", sort=False)]
        if len(groups) < 2:
            continue
        sizes_of.append(groups)
        # The cell's fields by name: a Series' own attributes (``size``) would shadow axes.
        row = SimpleNamespace(**{a: sub[a].iloc[0] for a in [*axes, "cell"]})
        tested.append((f"`{cell_name(row, axes)}` on {host}", len(groups), session_p(groups)))
    adjusted = holm([p for _, _, p in tested])
    flags = [
        f"{where}: its runs from {n} sessions disagree (Kruskal-Wallis, permutation "
        f"p = {p:.3g}; {adj:.3g} after Holm's correction over {len(tested)} cells); they are "
        "pooled in the results, read them per session in the data."
        for (where, n, p), adj in zip(tested, adjusted, strict=True)
        if adj <= ALPHA
    ]
    if not tested:
        facts.append("No cell has runs from more than one.")
        return {"title": "Sessions", "facts": facts, "flags": flags}
    where, _, least = min(tested, key=lambda t: t[2])
    facts.append(
        f"{counted(len(tested), 'cell')} {'has' if len(tested) == 1 else 'have'} runs from "
        "more than one; Kruskal-Wallis across their "
        f"sessions ({metric_label(metric).lower()}, the permutation p of H) flags those where "
        f"p <= {ALPHA:g} after Holm's correction over the {len(tested)}; the smallest p is "
        f"{least:.3g} ({where})."
    )
    floors = holm([smallest_session_p([len(g) for g in sizes]) for sizes in sizes_of])
    if min(floors) > ALPHA:
        return {
            "title": "Sessions",
            "facts": facts,
            "flags": [],
            "untestable": (
                f"the sessions' runs are too few in "
                f"{'the cell' if len(tested) == 1 else f'each of the {len(tested)} cells'} for any "
                f"outcome to give an adjusted p of {ALPHA:g} or less (the smallest is "
                f"{min(floors):.3g})"
            ),
        }
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
    resources_df: pd.DataFrame | None = None,
) -> list[dict[str, Any]]:
    """Every check that applies to the experiment's runs, in the post's order."""
    axes = list(experiment["axes"])
    found = [
        cache_check(tidy_df, cells, axes, metric),
        skew_check(tidy_df, cells, axes),
        sync_check(tidy_df, axes),
        lag_check(tidy_df, axes, getattr(tools.get(experiment["tool"]), "TIME_LAG", None), metric),
        session_check(tidy_df, cells, axes, metric),
        drift.check(tidy_df, cells, axes, metric),
        resource_checks.check(resources_df, axes, tidy_df),
    ]
    # A check that could not fire at these runs says why ("untestable"); the rest say None.
    return [{"untestable": None, "headline": None, **c} for c in found if c is not None]
