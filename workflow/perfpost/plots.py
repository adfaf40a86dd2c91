"""Per-test figures: each metric across the matrix, every repeat a point, the median marked.

The x axis is one matrix axis (``plot.x`` or the first numeric one); the other axes become
series with fixed colours. Numeric and size axes (``4k``, ``1M``) are placed by value, on a log
scale when they span a decade or more; other axes are categories in config order.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from perfpost.tidy import results
from perfpost.units import UnitError, metric_label, parse_size, rate_scale

COLOURS = plt.get_cmap("tab10").colors
WIDTH_IN, HEIGHT_IN, DPI = 8.0, 4.5, 150


def _position(label: Any) -> float | None:
    if isinstance(label, int | float) and not isinstance(label, bool):
        return float(label)
    try:
        return float(parse_size(str(label)))
    except UnitError:
        return None


def choose_x(axis_labels: dict[str, list[Any]], preferred: str | None) -> str | None:
    """The axis on x: the configured one, else the first numeric axis with >1 value."""
    if preferred:
        return preferred
    multi = [a for a, labels in axis_labels.items() if len(labels) > 1]
    for a in multi:
        if all(_position(v) is not None for v in axis_labels[a]):
            return a
    return multi[0] if multi else None


def _unit(unit: str, values: list[float]) -> tuple[str, float]:
    if unit == "B/s":
        return rate_scale(values)
    if unit == "B":
        return ("MB", 1e6)
    return (unit, 1.0)


def series_colours(
    axis_labels: dict[str, list[Any]], series_axes: list[str], roles: dict[str, Any] | None
) -> dict[tuple[str, ...], Any]:
    """Colours follow the series in config order, the same in every panel; the series a
    comparison names as baseline and candidate get the comparison figures' colours, so a
    reader matches them across figures."""
    combos = list(itertools.product(*([str(v) for v in axis_labels[a]] for a in series_axes)))
    fixed: dict[tuple[str, ...], Any] = {}
    for side, colour in (("baseline", COLOURS[0]), ("candidate", COLOURS[1])):
        want = {a: str(v) for a, v in ((roles or {}).get(side) or {}).items()}
        if not want or not set(want) <= set(series_axes):
            continue
        for combo in combos:
            if all(dict(zip(series_axes, combo, strict=True))[a] == v for a, v in want.items()):
                fixed.setdefault(combo, colour)
    palette = [c for c in COLOURS if c not in fixed.values()]
    out, i = {}, 0
    for combo in combos:
        if combo in fixed:
            out[combo] = fixed[combo]
        else:
            out[combo] = palette[i % len(palette)]
            i += 1
    return out


def _draw(
    ax: Any,
    data: pd.DataFrame,
    factor: float,
    axis_labels: dict[str, list[Any]],
    x_axis: str | None,
    series_axes: list[str],
    colours: dict[tuple[str, ...], Any],
) -> None:
    x_labels = [str(v) for v in axis_labels[x_axis]] if x_axis else [""]
    positions = [_position(v) for v in axis_labels[x_axis]] if x_axis else [None]
    numeric = len(positions) > 1 and all(p is not None for p in positions)
    log = numeric and min(positions) > 0 and max(positions) / min(positions) >= 10
    xs = positions if numeric else list(range(len(x_labels)))
    step = 1.0 if not numeric else (xs[1] - xs[0]) if len(xs) > 1 else 1.0
    n = max(len(colours), 1)
    # Labels as text once, and one scatter for every run and one for every median in the
    # panel, each point in its series' colour; a line per series joins its medians. A scatter
    # per x value made 2,000 artists for a 1,000-cell matrix (13 s to draw), one per series
    # 200 (2 s with the SVG).
    as_text = {a: data[a].astype(str).to_numpy() for a in {*series_axes, *([x_axis] or [])} if a}
    runs: dict[str, list[Any]] = {"x": [], "y": [], "c": []}
    medians: dict[str, list[Any]] = {"x": [], "y": [], "c": []}
    for i, (key, colour) in enumerate(colours.items()):
        mask = np.ones(len(data), dtype=bool)
        for a, v in zip(series_axes, key, strict=True):
            mask &= as_text[a] == v
        if not mask.any():
            continue
        values = (data["value"].to_numpy()[mask]) / factor
        at = as_text[x_axis][mask] if x_axis else None
        name = ", ".join(f"{a}={v}" for a, v in zip(series_axes, key, strict=True))
        # Spread series sideways so points of different series at one x do not overlap.
        offset = (i - (n - 1) / 2) * (0.6 / n)
        pts_x: list[float] = []
        pts_y: list[float] = []
        med_x, med_y = [], []
        for j, label in enumerate(x_labels):
            ys = (values if at is None else values[at == label]).tolist()
            if not ys:
                continue
            shifted = xs[j] * (1.15**offset) if log else xs[j] + offset * step
            pts_x += [shifted] * len(ys)
            pts_y += ys
            med_x.append(shifted)
            med_y.append(float(pd.Series(ys).median()))
        runs["x"] += pts_x
        runs["y"] += pts_y
        runs["c"] += [colour] * len(pts_x)
        medians["x"] += med_x
        medians["y"] += med_y
        medians["c"] += [colour] * len(med_x)
        ax.plot(med_x, med_y, color=colour, linewidth=1.2, alpha=0.8, label=name or "median")
    if runs["x"]:
        ax.scatter(runs["x"], runs["y"], s=18, color=runs["c"], alpha=0.55, linewidths=0)
        ax.scatter(
            medians["x"], medians["y"], marker="_", s=260, color=medians["c"], linewidths=2.2
        )
    if log:
        ax.set_xscale("log")
        ax.minorticks_off()
    if x_axis:
        ax.set_xticks(xs)
        ax.set_xticklabels(x_labels)
        ax.set_xlabel(x_axis)
    else:
        ax.set_xticks([])
    ax.set_ylim(bottom=0)
    ax.grid(axis="y", alpha=0.3)


def plot_metric(
    df: pd.DataFrame,
    metric: str,
    axis_labels: dict[str, list[Any]],
    x_axis: str | None,
    title: str,
    out_base: Path,
    facet: str | None = None,
    roles: dict[str, Any] | None = None,
) -> dict[str, str] | None:
    """Draw one figure; returns the PNG and SVG names, or None when there is nothing to draw.

    With ``facet``, one panel per value of that axis, each with its own y scale (a hot cache
    and a cold one differ by an order of magnitude; one scale would flatten the cold one).
    """
    data = results(df)
    data = data[data["metric"] == metric]
    if data.empty:
        return None
    unit_name, factor = _unit(str(data["unit"].iloc[0]), data["value"].tolist())
    series_axes = [a for a in axis_labels if a not in (x_axis, facet)]
    colours = series_colours(axis_labels, series_axes, roles)
    panels = [str(v) for v in axis_labels[facet]] if facet else [None]
    width = WIDTH_IN if len(panels) == 1 else min(WIDTH_IN * 1.5, 4.5 * len(panels))
    fig, axes = plt.subplots(1, len(panels), figsize=(width, HEIGHT_IN), dpi=DPI, squeeze=False)
    for ax, panel in zip(axes[0], panels, strict=True):
        sub = data if panel is None else data[data[facet].astype(str) == panel]
        _draw(ax, sub, factor, axis_labels, x_axis, series_axes, colours)
        if panel is not None:
            ax.set_title(f"{facet}={panel}", fontsize=10)
    axes[0][0].set_ylabel(f"{metric_label(metric)} ({unit_name})")
    fig.suptitle(title, fontsize=11)
    handles, labels = axes[0][0].get_legend_handles_labels()
    if series_axes:
        fig.legend(
            handles,
            labels,
            fontsize=8,
            frameon=False,
            loc="lower center",
            ncol=min(len(labels), 4),
            title="lines join medians; points are repeats",
            title_fontsize=8,
        )
        fig.tight_layout(rect=(0, 0.08 + 0.04 * ((len(labels) - 1) // 4), 1, 1))
    else:
        fig.text(
            0.99,
            0.01,
            "points: repeats; bars: medians",
            ha="right",
            va="bottom",
            fontsize=8,
            color="0.4",
        )
        fig.tight_layout()
    return _save(fig, out_base, metric)


def _save(fig: Any, out_base: Path, metric: str) -> dict[str, str]:
    """PNG for the post, SVG beside it for print; returns their names."""
    out_base.parent.mkdir(parents=True, exist_ok=True)
    png, svg = out_base.with_suffix(".png"), out_base.with_suffix(".svg")
    fig.savefig(png)
    fig.savefig(svg)
    plt.close(fig)
    return {"metric": metric, "png": png.name, "svg": svg.name}


def _tuple(key: Any) -> tuple[Any, ...]:
    return key if isinstance(key, tuple) else (key,)


def plot_experiment(
    df: pd.DataFrame,
    title: str,
    axis_labels: dict[str, list[Any]],
    metrics: list[str],
    preferred_x: str | None,
    outdir: Path,
    facet: str | None = None,
    roles: dict[str, Any] | None = None,
) -> list[dict[str, str]]:
    """All figures of one experiment into ``outdir``; returns what was drawn. ``roles``:
    the experiment's first comparison, whose sides keep their colours in every figure."""
    rest = {a: v for a, v in axis_labels.items() if a != facet}
    x_axis = choose_x(rest, preferred_x)
    drawn = []
    for metric in metrics:
        fig = plot_metric(
            df,
            metric,
            axis_labels,
            x_axis,
            f"{title}: {metric_label(metric)}",
            outdir / metric,
            facet,
            roles,
        )
        if fig:
            drawn.append(fig)
    return drawn


def plot_series(series: pd.DataFrame, title: str, out_base: Path) -> dict[str, str] | None:
    """Rate over time from a tool's progress: one colour per cell, one line per run.

    A steady line is what a benchmark wants to see; a falling one means a cache filled up
    or the device slowed down, and the mean rate alone would hide it.
    """
    data = series[series["rate"].notna()] if not series.empty else series
    if data.empty:
        return None
    fig, ax = plt.subplots(figsize=(WIDTH_IN, HEIGHT_IN), dpi=DPI)
    for i, (cell, sub) in enumerate(data.groupby("cell", sort=False)):
        colour = COLOURS[i % len(COLOURS)]
        for j, (_, run) in enumerate(sub.groupby(["host", "repeat"], sort=False)):
            ax.plot(
                run["t"],
                run["rate"],
                color=colour,
                alpha=0.75,
                linewidth=1.2,
                marker="o",
                markersize=2.5,
                label=cell if j == 0 else None,
            )
    ax.set_xlabel("time since the run started (s)")
    ax.set_ylabel("rate (operations/s)")
    ax.set_ylim(bottom=0)
    ax.set_title(title, fontsize=11)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, frameon=False, loc="best", title="one line per run", title_fontsize=7)
    fig.tight_layout()
    return _save(fig, out_base, "rate_over_time")


BASELINE_COLOUR, CANDIDATE_COLOUR = COLOURS[0], COLOURS[1]  # the same in every comparison


def plot_comparison(rows: list[Any], title: str, out_base: Path) -> dict[str, str] | None:
    """One declared comparison: left, every run of baseline and candidate per group (bars
    are medians); right, the change the post states (Hodges-Lehmann estimate of candidate /
    baseline - 1) with its 95% interval, coloured only where a difference is claimed."""
    rows = [r for r in rows if r.base_values or r.cand_values]
    if not rows:
        return None
    unit = rows[0].unit
    unit_name, factor = _unit(unit, [v for r in rows for v in (*r.base_values, *r.cand_values)])
    fig, (left, right) = plt.subplots(
        1, 2, figsize=(WIDTH_IN * 1.3, HEIGHT_IN), dpi=DPI, gridspec_kw={"width_ratios": [3, 2]}
    )
    groups = [r.group or "all" for r in rows]
    for i, r in enumerate(rows):
        for values, colour, dx, label in (
            (r.base_values, BASELINE_COLOUR, -0.15, f"baseline: {r.base_label}"),
            (r.cand_values, CANDIDATE_COLOUR, 0.15, f"candidate: {r.cand_label}"),
        ):
            ys = [v / factor for v in values]
            if not ys:
                continue
            left.scatter([i + dx] * len(ys), ys, s=18, color=colour, alpha=0.6, linewidths=0)
            left.scatter(
                [i + dx],
                [float(pd.Series(ys).median())],
                marker="_",
                s=300,
                color=colour,
                linewidths=2.4,
                label=label if i == 0 else None,
            )
    for ax in (left, right):
        ax.set_xlim(-0.6, len(groups) - 0.4)
    left.set_xticks(range(len(groups)))
    left.set_xticklabels(groups, fontsize=8, rotation=20 if len(groups) > 4 else 0)
    left.set_ylabel(f"{metric_label(rows[0].metric)} ({unit_name})")
    left.set_ylim(bottom=0)
    left.grid(axis="y", alpha=0.3)
    left.legend(fontsize=8, frameon=False, title="bars: medians", title_fontsize=8)
    for i, r in enumerate(rows):
        res = r.result
        if res.change != res.change:  # NaN: nothing to show
            continue
        y = res.change * 100
        colour = "0.5" if not res.significant else CANDIDATE_COLOUR
        if res.ci_low is not None:
            err = [[y - res.ci_low * 100], [res.ci_high * 100 - y]]
            right.errorbar([i], [y], yerr=err, fmt="o", color=colour, capsize=5, linewidth=1.6)
        else:
            right.scatter([i], [y], marker="x", color=colour)  # too few runs: no interval
    right.axhline(0, color="0.3", linewidth=0.8)
    right.set_xticks(range(len(groups)))
    right.set_xticklabels(groups, fontsize=8, rotation=20 if len(groups) > 4 else 0)
    right.set_ylabel("change, candidate vs baseline (%)")
    right.grid(axis="y", alpha=0.3)
    right.set_title("Hodges-Lehmann, 95% CI; grey: no claim", fontsize=8, color="0.4")
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    return _save(fig, out_base, out_base.name)
