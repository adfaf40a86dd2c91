"""Checks of the set-up itself: a setting a daemon did not take, a clock too coarse for the
run it timed, and a host that was not quiet while a run measured."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from perfpost import tools
from perfpost.analysis.design.finding import Finding
from perfpost.analysis.tidy import results
from perfpost.units import format_seconds, metric_label

CLOCK_SHARE = 0.05  # one tick of the clock over the run's time


def settings_not_applied(clusters: Sequence[Mapping[str, Any]]) -> list[Finding]:
    """Cells that ran on a cluster whose daemons used another value than the config set
    (``overridden`` in the cluster's state: the key, the value asked, the value that ran)."""
    out = []
    for c in clusters:
        for o in c.get("overridden") or []:
            cells = tuple(c.get("cells") or [])
            if not cells:
                continue
            ran = f"ran {o['ran']}, not {o['asked']}"
            daemon = o.get("daemon") or "daemon"
            where = f"{daemon} on {o['host']}" if o.get("host") else daemon
            names = ", ".join(f"`{x}`" for x in cells)
            out.append(
                Finding(
                    check="A setting that did not take effect",
                    caveat=(
                        f"{names} asked `{o['key']}` = `{o['asked']}`, but the {where} used "
                        f"`{o['ran']}` ({o.get('why') or 'the release does not support it'}): "
                        + (
                            f"these cells ran {o['ran']}, are labelled so, and are compared "
                            "with nothing as if they differed."
                            if len(cells) > 1
                            else f"the cell ran {o['ran']}, is labelled so, and is compared "
                            "with nothing as if it differed."
                        )
                    ),
                    facts=(
                        f"Cluster `{c.get('name')}` ({c.get('id')}): `{o['key']}` was set to "
                        f"`{o['asked']}`; the {where} said it used `{o['ran']}`"
                        + (f": `{o['evidence']}`" if o.get("evidence") else "")
                        + ".",
                    ),
                    cells=cells,
                    undermines=True,
                    ran=dict.fromkeys(cells, ran),
                    headline=(
                        f"whether `{o['key']}` = `{o['asked']}` changes anything: it did not "
                        f"take effect (the {where} used `{o['ran']}`), so {names} measured "
                        f"{o['ran']}"
                    ),
                    short=f"{names} ran {o['ran']}",
                    remedy=f"a release whose daemons take `{o['key']}` = `{o['asked']}`",
                )
            )
    return out


def coarse_clock(
    experiment: Mapping[str, Any], tidy_df: pd.DataFrame, metric: str | None
) -> list[Finding]:
    """Runs whose ``metric`` comes from a clock (the tool's ``CLOCKS``: metric -> (the metric
    that holds the time it was measured over, the clock's tick, what the clock is)) whose
    tick is more than :data:`CLOCK_SHARE` of that time."""
    if metric is None:
        return []
    clocks = getattr(tools.get(experiment["tool"]), "CLOCKS", {})
    if metric not in clocks:
        return []
    over, tick, what = clocks[metric]
    done = results(tidy_df)
    times = done[done["metric"] == over]
    short = times[times["value"] < tick / CLOCK_SHARE]
    if short.empty:
        return []
    cells_hit = tuple(dict.fromkeys(str(c) for c in short["cell"]))
    return [
        Finding(
            check="A run shorter than its clock resolves",
            caveat=(
                f"{len(short)} of {len(times)} runs measured {metric_label(metric).lower()} "
                f"over less than {format_seconds(tick / CLOCK_SHARE)} ("
                f"{format_seconds(float(short['value'].min()))} at the least) on {what}, "
                f"whose tick is {format_seconds(tick)}: one tick is over "
                f"{CLOCK_SHARE:.0%} of such a run, so its number is coarse by that much."
            ),
            cells=cells_hit,
        )
    ]


def busy_host(up: Mapping[tuple[str, str, int], Sequence[str]]) -> list[Finding]:
    """Runs that measured while a cluster they did not use was starting, up or stopping on
    their host (:func:`perfpost.analysis.runorder.others_up`): its daemons took CPU, memory
    and disk beside the run."""
    if not up:
        return []
    by_cell: dict[str, list[str]] = {}
    for (cell, host, repeat), names in up.items():
        by_cell.setdefault(cell, []).append(f"r{repeat} on {host} ({', '.join(names)})")
    said = "; ".join(f"`{c}` {', '.join(v)}" for c, v in by_cell.items())
    return [
        Finding(
            check="A host that was not quiet",
            caveat=(
                f"{len(up)} run(s) measured while a cluster they did not use was starting, up "
                f"or stopping on their host: {said}. Its daemons shared the host with the run."
            ),
            cells=tuple(by_cell),
        )
    ]


def ran_by_axis(
    found: Sequence[Finding], df: pd.DataFrame, axes: Sequence[str]
) -> dict[str, dict[str, str]]:
    """Per axis, its values whose cells all ran something else than a setting asked (the
    ``ran`` of :func:`settings_not_applied`'s findings), and what they ran."""
    notes = {c: n for f in found for c, n in f.ran.items()}
    out: dict[str, dict[str, str]] = {}
    for a in axes:
        if a not in df:
            continue
        for value, rows in df.groupby(a, sort=False):
            said = {notes.get(str(c)) for c in set(rows["cell"])}
            if len(said) == 1 and None not in said:
                out.setdefault(a, {})[str(value)] = said.pop()
    return out
