"""One declared comparison as a figure: every run of its two sides per group, and the change
the post states with its interval.

Each side is drawn in its series' colour, the colour the post's other figures give it, and
named under its place (the two sides of a group stand side by side): a colour means one thing
in every figure of a post. The change is on a ratio scale when the groups' changes lie far
apart (+1,500% and -1% on one linear axis squash the small one's interval to a dot), black
where a difference is claimed and grey where none is. No legend sits over the runs."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

from perfpost.analysis.plots import (
    COLOURS,
    DPI,
    HEIGHT_IN,
    WIDTH_IN,
    _scale_y,
    fit_title,
    save_figure,
)
from perfpost.units import axis_unit, metric_label

CLAIM, NO_CLAIM = "black", "0.6"
RATIO_SPAN = 4.0  # the changes' ratios spanning more than this get a log ratio axis
SIDE_OFFSET = 0.2


def _side_names(row: Any) -> tuple[str, str]:
    """The baseline's and the candidate's short names: the comparison's own ("Ozone vs
    HDFS"), else their labels."""
    if row.name.count(" vs ") == 1:
        cand, base = row.name.split(" vs ")
        return base.strip(), cand.strip()
    return row.base_label, row.cand_label


def _ratio_ticks(low: float, high: float, most: int = 7) -> list[float]:
    """Round percentages for a log ratio axis between ``low`` and ``high`` (ratios), no two
    closer than a seventh of the axis (their labels would overlap): 0% always, then the
    candidates outward from it."""
    candidates = [
        -0.99,
        -0.9,
        -0.75,
        -0.5,
        -0.25,
        -0.1,
        0.0,
        0.1,
        0.25,
        0.5,
        1,
        2,
        5,
        10,
        20,
        50,
        100,
        200,
        500,
        1000,
    ]
    inside = [1 + c for c in candidates if low <= 1 + c <= high]
    if not inside:
        return [1.0]
    gap = (math.log10(high) - math.log10(low)) / most
    chosen = [1.0] if low <= 1.0 <= high else [inside[0]]
    for t in sorted(inside, key=lambda t: abs(math.log10(t))):
        if all(abs(math.log10(t) - math.log10(c)) >= gap for c in chosen):
            chosen.append(t)
    return sorted(chosen)


def figure_title(experiment_title: str, name: str, control: bool = False) -> str:
    """A comparison figure's title: the experiment's subject, then the comparison. An
    experiment's title often lists its contrasts after a colon ("Chunk writes: one file per
    chunk vs one file per block"); the figure names its own instead of both."""
    head = experiment_title.split(": ", 1)[0]
    aa = " (A/A control: the noise floor)" if control else ""
    return f"{head}: {name}{aa}"


def plot_comparison(
    rows: list[Any],
    title: str,
    out_base: Path,
    colour_of: Callable[[Sequence[str]], Any] | None = None,
    scale: tuple[str, float] | None = None,
) -> dict[str, str] | None:
    """The figure of one comparison's ``rows`` (one per group): above, every run of each
    side, bars at the medians, each side in its series' colour (``colour_of(cells)``);
    below, the change (Hodges-Lehmann estimate of candidate / baseline - 1) with its 95%
    interval. ``scale``: the unit the post shows the metric in."""
    rows = [r for r in rows if r.base_values or r.cand_values]
    if not rows:
        return None
    unit = rows[0].unit
    values = [v for r in rows for v in (*r.base_values, *r.cand_values)]
    unit_name, factor = scale or axis_unit(unit, values)
    fig, (top, bottom) = plt.subplots(
        2, 1, figsize=(WIDTH_IN, HEIGHT_IN * 1.5), dpi=DPI, gridspec_kw={"height_ratios": [3, 2]}
    )
    base_name, cand_name = _side_names(rows[0])
    groups = [r.group or "" for r in rows]
    ticks, labels = [], []
    for i, r in enumerate(rows):
        for values_, cells, dx, name, default in (
            (r.base_values, r.base_cells, -SIDE_OFFSET, base_name, COLOURS[0]),
            (r.cand_values, r.cand_cells, SIDE_OFFSET, cand_name, COLOURS[1]),
        ):
            colour = colour_of(cells) if colour_of and cells else default
            ys = [v / factor for v in values_]
            ticks.append(i + dx)
            labels.append(name)
            if not ys:
                continue
            top.scatter([i + dx] * len(ys), ys, s=18, color=colour, alpha=0.6, linewidths=0)
            top.scatter(
                [i + dx],
                [float(pd.Series(ys).median())],
                marker="_",
                s=300,
                color=colour,
                linewidths=2.4,
            )
    for ax in (top, bottom):
        ax.set_xlim(-0.6, len(groups) - 0.4)
    top.set_xticks(ticks)
    top.set_xticklabels(labels, fontsize=8)
    log = _scale_y(top, [v / factor for v in values])
    top.set_ylabel(
        f"{metric_label(rows[0].metric)} ({unit_name}" + (", log scale)" if log else ")")
    )
    top.grid(axis="y", alpha=0.3)
    # A group's name a line an axis ("readers=1" over "cache=hot"): six groups' names side
    # by side ran into each other.
    names = [g.replace(", ", "\n") for g in groups]
    size = 8 if len(groups) <= 4 else 7
    if any(groups):
        above = top.secondary_xaxis("top")
        above.set_xticks(range(len(groups)))
        above.set_xticklabels(names, fontsize=size)
        above.tick_params(length=0)
    else:
        top.set_title("every run; bars: medians", fontsize=8, color="0.4")
    _changes(bottom, rows, names, size)
    fig.suptitle(fit_title(fig, title, 11), fontsize=11)
    fig.tight_layout()
    return save_figure(fig, out_base, out_base.name)


def _changes(ax: Any, rows: list[Any], groups: list[str], size: int = 8) -> None:
    """The lower panel: each group's change and interval, as ratios on a log axis where
    they lie far apart, else as percentages on a linear one."""
    ends = []
    for r in rows:
        res = r.result
        for x in (res.change, res.ci_low, res.ci_high):
            if x is not None and x == x and x > -1:
                ends.append(1 + x)
    ratio = bool(ends) and max(ends) / min(ends) > RATIO_SPAN

    def y(change: float) -> float:
        return 1 + change if ratio else change * 100

    for i, r in enumerate(rows):
        res = r.result
        if res.change != res.change:  # NaN: nothing to show
            continue
        colour = CLAIM if res.significant else NO_CLAIM
        if res.ci_low is not None and res.ci_high is not None:
            err = [[y(res.change) - y(res.ci_low)], [y(res.ci_high) - y(res.change)]]
            ax.errorbar(
                [i], [y(res.change)], yerr=err, fmt="o", color=colour, capsize=5, linewidth=1.6
            )
        else:
            ax.scatter([i], [y(res.change)], marker="x", color=colour)  # too few runs
    ax.axhline(1.0 if ratio else 0.0, color="0.3", linewidth=0.8)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([g or "all runs" for g in groups], fontsize=size)
    if ratio:
        ax.set_yscale("log")
        low, high = ax.get_ylim()
        ax.yaxis.set_major_locator(FixedLocator(_ratio_ticks(low, high)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v - 1:+,.0%}"))
        ax.yaxis.set_minor_locator(NullLocator())
        ax.set_ylabel("change vs baseline\n(log ratio scale)")
    else:
        ax.set_ylabel("change vs baseline (%)")
    ax.grid(axis="y", alpha=0.3)
    ax.set_title(
        "Hodges-Lehmann estimate, 95% CI; black: a difference claimed, grey: none",
        fontsize=8,
        color="0.4",
    )
    if not math.isfinite(ax.get_ylim()[0]):
        ax.set_ylim(auto=True)
