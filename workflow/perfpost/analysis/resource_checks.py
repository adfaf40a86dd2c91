"""The resource check of a post's Validity section, and ``perfpost compare``'s resource
profile: from the window table (:mod:`perfpost.analysis.resources`), runs whose system under
test was CPU-bound, runs whose writes went to another disk than the one under their
directory, and each side's CPU and busiest disk beside a comparison."""

from __future__ import annotations

from typing import Any

import pandas as pd

from perfpost.analysis.resources import (
    RESOLVED_INTERVALS,
    _median,
    _mostly_others,
    _pct,
    _run_tool_cores,
    _unresolved,
    cell_profiles,
    r_split,
    tool_cores,
)
from perfpost.instrument.sampler import BUSY, SATURATED_SHARE
from perfpost.units import counted, format_value, sig

WRONG_DISK_SHARE = 0.5  # of the busiest other disk's writes: less on the cell's own disk
WRONG_DISK_MIN = 1 << 20  # bytes that other disk took, below which nothing is said


def _sut_nodes(d: pd.DataFrame) -> list[str]:
    """The nodes that ran the system under test: those with a cluster daemon, else the
    cell's own host (dd, fio and vapor write to it themselves)."""
    roles = {n: r_split(r) for n, r in d.drop_duplicates("node")[["node", "roles"]].to_numpy()}
    daemons = [n for n, r in roles.items() if any(x != "client" for x in r)]
    return daemons or [n for n, r in roles.items() if "client" in r]


def measured(tidy_df: pd.DataFrame | None) -> str:
    """What the runs set out to measure, for the CPU-bound flag: their tools' ``SUBJECT``
    where all agree (the storage), else no name (a command: iperf3 measures the network)."""
    from perfpost import tools

    names = set() if tidy_df is None or "tool" not in tidy_df else set(tidy_df["tool"].dropna())
    said = {getattr(tools.get(n), "SUBJECT", None) if n in tools.NAMES else None for n in names}
    return said.pop() if len(said) == 1 and None not in said else "what they set out to measure"


def check(
    window: pd.DataFrame | None, axes: list[str], tidy_df: pd.DataFrame | None = None
) -> dict[str, Any] | None:
    """The Validity section's resource check: runs whose system under test was CPU-bound
    (its numbers are a CPU result, or a result of the CPU others took: said apart where the
    cell's own processes are known), and runs whose disk writes went to another disk than
    the one under the cell's directory."""
    if window is None or window.empty:
        return None
    tool_cores = _run_tool_cores(tidy_df)
    subject = measured(tidy_df)
    done = window[window["status"] == "done"]
    if done.empty:
        return None
    cpu_bound: dict[str, list[str]] = {}
    wrong_disk: dict[str, list[str]] = {}
    short: list[str] = []
    n_runs = 0
    nodes_seen: set[str] = set()
    runs_of: dict[str, set[tuple[str, int]]] = {}  # a cell's runs, and those CPU-bound
    bound_runs: dict[str, set[tuple[str, int]]] = {}
    for (cell, _host, repeat), d in done.groupby(["cell", "host", "repeat"], sort=False):
        n_runs += 1
        runs_of.setdefault(cell, set()).add((str(_host), int(repeat)))
        nodes_seen.update(d["node"])
        step = d[(d["resource"] == "window") & (d["metric"] == "seconds")]["value"]
        every = d[(d["resource"] == "window") & (d["metric"] == "interval")]["value"]
        if len(step) and len(every) and _unresolved(step.iloc[0], every.iloc[0]):
            short.append(f"{cell} r{repeat}")
            continue  # the samples around it are not the step's
        for node in _sut_nodes(d):
            share = d[
                (d["node"] == node) & (d["resource"] == "cpu") & (d["metric"] == "busy_time_share")
            ]["value"]
            if len(share) and share.iloc[0] >= SATURATED_SHARE:
                n = d[d["node"] == node]
                p = {
                    "busy": _median(n, "cpu", "busy"),
                    "cores": _median(n, "cpu", "cores"),
                    "processes": {
                        r[8:]: _median(n, r, "cpu")
                        for r in set(n["resource"])
                        if r.startswith("process:")
                    },
                    "tool_cores": tool_cores.get((str(cell), str(_host), int(repeat)))
                    if "client" in r_split(n["roles"].iloc[0])
                    else None,
                }
                said = (
                    f"{node} r{repeat}: {_pct(p['busy'])} busy, at least {BUSY:.0%} for "
                    f"{_pct(share.iloc[0])} of the run"
                )
                if _mostly_others(p):
                    said += ", mostly by other work on the host"
                cpu_bound.setdefault(cell, []).append(said)
                bound_runs.setdefault(cell, set()).add((str(_host), int(repeat)))
        own = d[d["roles"].map(lambda r: "client" in r_split(r))]
        for row in own[own["resource"].str.startswith("dir:")].itertuples(index=False):
            device = row.detail
            if not device:
                continue
            node = row.node
            n = d[d["node"] == node]
            writes = n[(n["metric"] == "write_total") & n["resource"].str.startswith("disk:")]
            name = _disk_name(device, n)
            mine = float(writes[writes["resource"] == f"disk:{name}"]["value"].sum())
            others = writes[writes["resource"] != f"disk:{name}"].sort_values("value")
            if others.empty:
                continue
            top = others.iloc[-1]
            # A device stacked on another (a loop file, an LVM volume) has its writes counted
            # on both, so only a disk that took far more than the cell's own is said to have
            # taken its writes.
            if top["value"] >= WRONG_DISK_MIN and mine < WRONG_DISK_SHARE * top["value"]:
                wrong_disk.setdefault(cell, []).append(
                    f"{node} r{repeat}: {format_value(mine, 'B')} written to {name} under "
                    f"`{row.resource[4:]}`, {format_value(top['value'], 'B')} to "
                    f"{top['resource'][5:]}"
                )
    facts = [
        f"Every run was sampled every {_interval_text(done)} on {counted(len(nodes_seen), 'host')} "
        f"({', '.join(sorted(nodes_seen))}): CPU, disks, network, memory and pressure, from "
        "/proc (see [Resources](#resources))."
    ]
    if short:
        shown = ", ".join(f"`{x}`" for x in short[:6]) + (" ..." if len(short) > 6 else "")
        facts.append(
            f"{counted(len(short), 'run')} measured for less than {RESOLVED_INTERVALS:g} sampling "
            f"intervals ({shown}): the samples around them are mostly time outside them, so "
            "they are not checked here."
        )
    if short and len(short) == n_runs:
        return {
            "title": "Resources",
            "facts": facts,
            "flags": [],
            "untestable": (
                f"every run's measured step was shorter than {RESOLVED_INTERVALS:g} sampling "
                "intervals, too short for the samples to say what bound it"
            ),
        }
    flags = []
    for cell, said in cpu_bound.items():
        flags.append(
            f"`{cell}`: the system under test's host was CPU-bound ({'; '.join(said)}): "
            "these runs measured the CPU (theirs, or what other work left them) at least as "
            f"much as {subject}."
        )
    for cell, said in wrong_disk.items():
        flags.append(
            f"`{cell}`: another disk took more than twice the writes of the one under the "
            f"cell's directory ({'; '.join(said)}): the run may not have measured that disk."
        )
    headline = None
    if cpu_bound:
        others = [c for c, said in cpu_bound.items() if any("other work" in x for x in said)]
        # A cell bound in some of its runs is said apart: its median may read well under
        # the threshold in the figure.
        whole = [c for c in cpu_bound if bound_runs[c] >= runs_of[c]]
        some = [c for c in cpu_bound if c not in whole]
        cells = done["cell"].nunique()
        hit = sum(len(bound_runs[c]) for c in some)
        if some and whole:
            more = "another" if len(some) == 1 else f"{len(some)} others"
            of = sum(len(runs_of[c]) for c in some)
            where = (
                f"in every run of {len(whole)} of {cells} cells and in {hit} of {of} runs of {more}"
            )
        elif some:
            where = f"in {hit} of {n_runs} runs (in {len(some)} of {cells} cells)"
        elif len(whole) < cells:
            where = f"in {len(whole)} of {cells} cells"
        else:
            where = "in every run" if cells == 1 else "in every cell"
        headline = (
            f"the host of the system under test was CPU-bound {where}, so they measured the "
            f"CPU at least as much as {subject}"
            + (
                f"; in {len(others)} of those cells the CPU went mostly to other work on the host"
                if others
                else ""
            )
        )
    return {"title": "Resources", "facts": facts, "flags": flags, "headline": headline}


def _disk_name(device: str, d: pd.DataFrame) -> str:
    """The whole disk of ``device`` among the node's sampled disks (a partition's disk)."""
    from perfpost.instrument.sampler import disk_of

    names = {r[5:] for r in d["resource"] if r.startswith("disk:")}
    return disk_of(device, names | {device}) if device not in names else device


def _interval_text(done: pd.DataFrame) -> str:
    got = done[(done["resource"] == "window") & (done["metric"] == "interval")]["value"]
    values = sorted({float(v) for v in got.dropna()})
    if not values:
        return "interval"
    return " or ".join("second" if v == 1 else f"{sig(v)} s" for v in values)


def compare_markdown(
    sides: list[tuple[str, pd.DataFrame, pd.DataFrame | None]],
) -> str:
    """``perfpost compare``'s resource profile: for each cell both sides ran, each side's
    CPU, busiest disk and what bound it, next to the performance change above it. ``sides``:
    (name, window table, tidy table) of the baseline, then of the candidate."""
    profiles = [
        {c["cell"]: c for c in cell_profiles(window, [], tool_cores(tidy_df))}
        for _, window, tidy_df in sides
    ]
    cells = [c for c in profiles[0] if c in profiles[1]]
    if not cells:
        return ""
    lines = [
        "Resources while measuring (medians over each side's runs; see the posts' Resources):",
        "",
        "| cell | side | host | CPU busy | CPU >= 90% | busiest disk, util | what bound it |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for cell in cells:
        for (name, _, _), side in zip(sides, profiles, strict=True):
            c = side[cell]
            for p in c["nodes"]:
                disk = p["disk"]
                lines.append(
                    f"| `{cell}` | {name} | {p['node']} | {_pct(p['busy'])} of {p['cores']} | "
                    f"{_pct(p['busy_share'])} | "
                    + (f"{disk['name']} {_pct(disk['util'])}" if disk else "-")
                    + f" | {c['bound']['verdict']} |"
                )
    return "\n".join(lines) + "\n"
