"""Rate over time from a tool's progress lines: one line per run, coloured as every other
figure of the post colours its cell's series, styled by the cell's other axes, with each
run's warm-up end and step where the steady-state table found them. The caption says only
what the figure draws."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from perfpost.analysis.plots import (
    HEIGHT_IN,
    WIDTH_IN,
    Palette,
    _scale_y,
    fit_title,
    layout_above,
    legend_below,
    save_figure,
)
from perfpost.units import axis_unit, format_seconds, metric_label

DPI = 150
WARMUP_STYLE = {"linestyle": "--", "linewidth": 1.1}
STEP_STYLE = {"linestyle": ":", "linewidth": 1.6}
SERIES_LEGEND_MAX = 20  # legend entries at most; beyond, a line says what the styles mean


def _boundaries(steady: pd.DataFrame | None) -> dict[tuple[str, str, int], dict[str, Any]]:
    """Per run (cell, host, repeat): the steady-state table's row, for the lines it draws."""
    if steady is None or steady.empty:
        return {}
    return {
        (str(r["cell"]), str(r["host"]), int(r["repeat"])): r for r in steady.to_dict("records")
    }


def series_figure(
    series: pd.DataFrame,
    title: str,
    steady: pd.DataFrame | None = None,
    palette: Palette | None = None,
    labels: dict[str, dict[str, Any]] | None = None,
) -> tuple[Figure, dict[str, bool]] | None:
    """Rate over time, not yet saved, and what it drew of the steady-state marks
    (``warmup``, ``step``); None when there is nothing to draw. ``palette`` and ``labels``
    (cell -> its axis labels): the post's colours, a cell's series colour and its other axes'
    style; without them, one colour per cell."""
    data = series[series["rate"].notna()] if not series.empty else series
    if data.empty:
        return None
    marks = _boundaries(steady)
    fig, ax = plt.subplots(figsize=(WIDTH_IN, HEIGHT_IN), dpi=DPI)
    drawn: dict[str, Any] = {"warmup": False, "step": False}
    colours: dict[str, Any] = {}
    styles: dict[str, tuple[str, str]] = {}
    fallback = plt.get_cmap("tab20").colors
    for i, cell in enumerate(dict.fromkeys(data["cell"])):
        mine = (labels or {}).get(str(cell))
        if palette is not None and mine is not None:
            colours[cell], styles[cell] = palette.colour(mine), palette.style(mine)
        else:
            colours[cell], styles[cell] = fallback[i % len(fallback)], ("-", "o")
    for cell, sub in data.groupby("cell", sort=False):
        colour, (ls, marker) = colours[cell], styles[cell]
        # One line a run, and a run of several clients one line a client (its own series).
        keys = ["host", "repeat", *(["series"] if "series" in sub else [])]
        for key, run in sub.groupby(keys, sort=False):
            host, repeat = key[0], key[1]
            run = run.sort_values("t", kind="stable")
            idle = _idle_until(run)
            if idle is not None:
                drawn["idle_start"] = max(idle, drawn.get("idle_start", idle))
            ax.plot(
                run["t"],
                run["rate"],
                color=colour,
                linestyle=ls,
                alpha=0.75,
                linewidth=1.2,
                marker=marker,
                markersize=2.5,
            )
            mark = marks.get((str(cell), str(host), int(repeat)))
            if mark is None:
                continue
            if (mark.get("warmup_samples") or 0) > 0:
                ax.axvline(mark["warmup_end_t"], color=colour, gid="warmup", **WARMUP_STYLE)
                drawn["warmup"] = True
            if pd.notna(mark.get("step_t")):
                ax.axvline(mark["step_t"], color=colour, gid="step", **STEP_STYLE)
                drawn["step"] = True
    handles, names = _legend(palette, labels, colours, styles)
    if drawn["warmup"]:
        handles.append(Line2D([], [], color="0.3", **WARMUP_STYLE))
        names.append("warm-up end (MSER-5)")
    if drawn["step"]:
        handles.append(Line2D([], [], color="0.3", **STEP_STYLE))
        names.append("step (Pettitt)")
    ax.set_xlabel("time since the run started (s)")
    log = _scale_y(ax, data["rate"].tolist())
    unit = axis_unit("1/s", [])[0]
    ax.set_ylabel(f"{metric_label('rate')} ({unit}" + (", log scale)" if log else ")"))
    fig.suptitle(fit_title(fig, title, 11), fontsize=11)
    ax.grid(alpha=0.3)
    if len(names) <= SERIES_LEGEND_MAX:
        legend = legend_below(
            fig,
            handles,
            names,
            "one line per run, one per client in runs of several"
            if data.get("series", pd.Series(dtype=str)).astype(str).str.startswith("client-").any()
            else "one line per run",
        )
        bottom = legend.get_window_extent().height / fig.dpi + 0.05
    else:
        fig.text(
            0.5,
            0.01,
            f"{len(colours)} cells, one line per run; colours as in the post's other figures",
            ha="center",
            va="bottom",
            fontsize=8,
            color="0.4",
        )
        bottom = 0.3
    layout_above(fig, bottom)
    return fig, drawn


def _legend(
    palette: Palette | None,
    labels: dict[str, dict[str, Any]] | None,
    colours: dict[str, Any],
    styles: dict[str, tuple[str, str]],
) -> tuple[list[Any], list[str]]:
    """A colour entry per series and a style entry per value of the other axes, where the
    post's palette applies: no colour twice in the legend. Else one entry per cell."""
    if palette is None or not labels or not all(str(c) in labels for c in colours):
        return (
            [
                Line2D([], [], color=colours[c], linestyle=styles[c][0], marker=styles[c][1])
                for c in colours
            ],
            [str(c).replace(",", ", ") for c in colours],
        )
    handles, names = [], []
    seen_c: dict[Any, str] = {}
    seen_s: dict[tuple[str, str], str] = {}
    for cell in colours:
        mine = labels[str(cell)]
        if palette.series:
            seen_c.setdefault(colours[cell], palette.name(mine, palette.series))
        if palette.others and len(set(styles.values())) > 1:
            seen_s.setdefault(styles[cell], palette.name(mine, palette.others))
    for colour, name in seen_c.items():
        handles.append(Line2D([], [], color=colour, linewidth=2.5))
        names.append(name)
    for (ls, marker), name in seen_s.items():
        handles.append(Line2D([], [], color="0.35", linestyle=ls, marker=marker, markersize=3))
        names.append(name)
    if not handles:  # one cell
        cell = next(iter(colours))
        handles = [Line2D([], [], color=colours[cell])]
        names = [str(cell)]
    return handles, names


def _idle_until(run: pd.DataFrame) -> float | None:
    """The latest time into ``run`` (one run's progress, sorted by time) at which it still had
    finished no operation: its progress lines read 0 from the first up to there (a client
    still starting, a first write still waiting on its pipeline). None where its first
    reading is above 0."""
    moved = (run["rate"] > 0).to_numpy()
    first = int(moved.argmax()) if moved.any() else len(moved)
    return float(run["t"].iloc[first - 1]) if first > 0 else None


def caption(drawn: dict[str, Any]) -> str:
    """What the figure shows, and only that."""
    text = "From the tool's progress lines: operations per second between two of them."
    if drawn.get("idle_start"):
        text += (
            " A line that starts at 0 is a run that had finished no operation yet (up to "
            f"{format_seconds(float(drawn['idle_start']))} into a run, here)."
        )
    marks = []
    if drawn.get("warmup"):
        marks.append("dashed: where a run's warm-up ends (MSER-5)")
    if drawn.get("step"):
        marks.append("dotted: a step (Pettitt)")
    said = "; ".join(marks)
    return text + (f" {said[:1].upper()}{said[1:]}." if marks else "")


def plot_series(
    series: pd.DataFrame,
    title: str,
    out_base: Path,
    steady: pd.DataFrame | None = None,
    palette: Palette | None = None,
    labels: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any] | None:
    """Rate over time (:func:`series_figure`), saved, with its caption.

    A steady line is what a benchmark wants to see; a falling one means a cache filled up
    or the device slowed down, and the mean rate alone would hide it.
    """
    got = series_figure(series, title, steady, palette, labels)
    if got is None:
        return None
    fig, drawn = got
    return {**save_figure(fig, out_base, "rate_over_time"), "note": caption(drawn)}
