"""Per-test figures: each metric across the matrix, every repeat a point, the median marked.

The x axis is one matrix axis (``plot.x`` or the first numeric one); the other axes become
series with fixed colours. Numeric and size axes (``4k``, ``1M``) are placed by value, on a log
scale when they span a decade or more; other axes are categories in config order.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 - the backend must be chosen first
import pandas as pd  # noqa: E402

from perfpost.tidy import results  # noqa: E402
from perfpost.units import UnitError, parse_size, rate_scale  # noqa: E402

METRIC_LABELS = {
    "throughput": "Throughput",
    "throughput_adjusted": "Throughput, sync time added",
    "elapsed": "Elapsed time",
    "wall_time": "Wall time",
    "sync_time": "sync time",
}
COLOURS = plt.get_cmap("tab10").colors
WIDTH_IN, HEIGHT_IN, DPI = 8.0, 4.5, 150


def metric_label(metric: str) -> str:
    return METRIC_LABELS.get(metric, metric.replace("_", " "))


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


def plot_metric(
    df: pd.DataFrame,
    metric: str,
    axis_labels: dict[str, list[Any]],
    x_axis: str | None,
    title: str,
    out_base: Path,
) -> dict[str, str] | None:
    """Draw one figure; returns the PNG and SVG paths, or None when there is nothing to draw."""
    data = results(df)
    data = data[data["metric"] == metric]
    if data.empty:
        return None
    unit_name, factor = _unit(str(data["unit"].iloc[0]), data["value"].tolist())
    series_axes = [a for a in axis_labels if a != x_axis]
    x_labels = [str(v) for v in axis_labels[x_axis]] if x_axis else [""]
    positions = [_position(v) for v in axis_labels[x_axis]] if x_axis else [None]
    numeric = all(p is not None for p in positions) and len(positions) > 1
    log = numeric and min(positions) > 0 and max(positions) / min(positions) >= 10
    xs = positions if numeric else list(range(len(x_labels)))

    fig, ax = plt.subplots(figsize=(WIDTH_IN, HEIGHT_IN), dpi=DPI)
    groups = data.groupby(series_axes, sort=False) if series_axes else [((), data)]
    order = {a: [str(v) for v in axis_labels[a]] for a in series_axes}
    groups = sorted(groups, key=lambda g: [order[a].index(str(v)) for a, v in
                                           zip(series_axes, _tuple(g[0]), strict=True)])
    n = max(len(groups), 1)
    for i, (key, sub) in enumerate(groups):
        colour = COLOURS[i % len(COLOURS)]
        name = ", ".join(f"{a}={v}" for a, v in zip(series_axes, _tuple(key), strict=True))
        # Spread series sideways so points of different series at one x do not overlap.
        offset = (i - (n - 1) / 2) * (0.6 / n)
        med_x, med_y = [], []
        for j, label in enumerate(x_labels):
            here = sub if not x_axis else sub[sub[x_axis].astype(str) == label]
            if here.empty:
                continue
            x0 = xs[j]
            shift = (x0 * (1.15 ** offset) if log else x0 + offset * (
                (xs[1] - xs[0]) if numeric and len(xs) > 1 else 1))
            ys = (here["value"] / factor).tolist()
            ax.scatter([shift] * len(ys), ys, s=18, color=colour, alpha=0.55, linewidths=0,
                       label=None)
            med = float(pd.Series(ys).median())
            med_x.append(shift)
            med_y.append(med)
            ax.scatter([shift], [med], marker="_", s=260, color=colour, linewidths=2.2)
        ax.plot(med_x, med_y, color=colour, linewidth=1.2, alpha=0.8, label=name or "median")
    if log:
        ax.set_xscale("log")
    if x_axis:
        ax.set_xticks(xs)
        ax.set_xticklabels(x_labels)
        ax.minorticks_off() if log else None
        ax.set_xlabel(x_axis)
    else:
        ax.set_xticks([])
    ax.set_ylabel(f"{metric_label(metric)} ({unit_name})")
    ax.set_ylim(bottom=0)
    ax.set_title(title, fontsize=11)
    ax.grid(axis="y", alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    if series_axes or len(groups) > 1:
        ax.legend(handles, labels, fontsize=8, frameon=False, title="median of repeats (—); "
                  "points: repeats", title_fontsize=8, loc="best")
    else:
        ax.text(0.99, 0.02, "points: repeats; bar: median", transform=ax.transAxes,
                ha="right", va="bottom", fontsize=8, color="0.4")
    fig.tight_layout()
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
) -> list[dict[str, str]]:
    """All figures of one experiment into ``outdir``; returns what was drawn."""
    x_axis = choose_x(axis_labels, preferred_x)
    drawn = []
    for metric in metrics:
        fig = plot_metric(df, metric, axis_labels, x_axis, f"{title}: {metric_label(metric)}",
                          outdir / metric)
        if fig:
            drawn.append(fig)
    return drawn


def finite(values: list[float]) -> list[float]:
    return [v for v in values if v is not None and not math.isnan(v)]
