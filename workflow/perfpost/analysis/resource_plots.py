"""Figures of what the hosts did while the runs measured (:mod:`perfpost.analysis.resources`).

Two kinds: one overview of every cell (CPU busy and the busiest disk's utilisation, per
host, medians over its runs), and for a few cells the representative run over time: the
tool's own rate (where it reported progress) above the CPU and disk utilisation of each host
and the daemons' CPU, on one time axis counted from the start of the measured step.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from perfpost.analysis.plots import (
    DPI,
    WIDTH_IN,
    fit_title,
    from_zero,
    legend_below,
    save_figure,
)
from perfpost.analysis.resources import UNRESOLVED, cell_profiles
from perfpost.analysis.tidy import results
from perfpost.clusters.base import role_of
from perfpost.clusters.metrics import LATENCIES

# Colours of their own, none of tab10's or tab20's, with which a post's figures colour the
# settings of its cells (plots.series_colours): blue and orange here read as two of them.
# The overview's CPU and disk bars:
RESOURCE_GREYS = ("#4d4d4d", "#b3b3b3")
# Over time, each host's CPU and disk in dark grey, and each kind of daemon in a colour of its
# own (teal, magenta, ochre, gold, slate, olive, light grey, rust, pink, lavender, light
# green), then as many more as a lab needs (:func:`_more_colours`). A host is told by its line
# style in every panel, its daemons' lines included: a lab of six hosts and seven kinds of
# daemon asks for seven colours, not thirteen.
HOST_COLOUR = "#4d4d4d"
DAEMON_COLOURS = (
    "#1b9e77",
    "#e7298a",
    "#a6761d",
    "#e6ab02",
    "#7570b3",
    "#556b2f",
    "#b3b3b3",
    "#8c2d04",
    "#f781bf",
    "#c2a5cf",
    "#b2df8a",
)
MAX_TIME_FIGURES = 6  # cells drawn over time; the rest are in the overview and the table
MIN_INTERVALS = 3  # a run sampled over fewer intervals has no shape over time to show


def _fit_above(fig: Any, legend: Any) -> None:
    """Panels above the legend, which :func:`legend_below` put under them."""
    bottom = legend.get_window_extent().height / fig.dpi / fig.get_figheight()
    fig.tight_layout(rect=(0, min(bottom, 0.8), 1, 1))


def overview(
    window: pd.DataFrame,
    axes: list[str],
    title: str,
    out_base: Path,
    names: dict[str, str] | None = None,
) -> dict | None:
    """CPU busy and the busiest disk's utilisation per cell and host (bars, medians), each
    cell by its name in the post (``names``)."""
    # A cell whose step was shorter than two samples has no share of its own to draw.
    profiles = [c for c in cell_profiles(window, axes) if c["bound"]["verdict"] != UNRESOLVED]
    rows = [((names or {}).get(c["cell"], c["cell"]), p) for c in profiles for p in c["nodes"]]
    if not rows:
        return None
    multi = len({p["node"] for _, p in rows}) > 1
    labels = [f"{cell} ({p['node']})" if multi else cell for cell, p in rows]
    cpu = [100 * (p["busy"] or 0.0) for _, p in rows]
    disk = [100 * ((p["disk"] or {}).get("util") or 0.0) for _, p in rows]
    height = 1.6 + 0.42 * len(rows)
    fig, ax = plt.subplots(figsize=(WIDTH_IN, height), dpi=DPI)
    y = np.arange(len(rows))
    # Greys: the post's other figures give its cells' settings the palette's colours, and
    # blue and orange here read as two of them.
    ax.barh(y - 0.2, cpu, height=0.38, color=RESOURCE_GREYS[0], label="CPU busy, % of all cores")
    ax.barh(y + 0.2, disk, height=0.38, color=RESOURCE_GREYS[1], label="busiest disk, % utilised")
    ax.set_yticks(y, labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.axvline(90, color="grey", lw=0.8, ls=":")
    ax.set_xlabel("% of the measured step (median over runs); dotted: 90%")
    # Over the figure, not the axes: the axes sit right of the centre by the cells' labels.
    fig.suptitle(fit_title(fig, f"{title}: resources while measuring", 11), fontsize=11)
    handles, texts = ax.get_legend_handles_labels()
    legend = legend_below(fig, handles, texts, None)
    _fit_above(fig, legend)
    got = save_figure(fig, out_base, "resources")
    return {
        **got,
        "section": "resources",
        "title": f"{title}: resources while measuring",
        "caption": "Per cell and host, the median over its runs of the CPU's busy share (user "
        "and system time, of all cores) and of the busiest disk's utilisation during the "
        "measured step.",
    }


def _representative(
    tidy_df: pd.DataFrame, cell: str, metric: str | None
) -> tuple[str, int, float | None] | None:
    """The run nearest the cell's median of ``metric``: host, repeat, its wall time."""
    done = results(tidy_df)
    d = done[(done["cell"] == cell) & (done["metric"] == metric)] if metric else done[:0]
    if d.empty:
        return None
    med = d["value"].median()
    row = d.iloc[int(np.argmin(np.abs(d["value"].to_numpy() - med)))]
    host, repeat = str(row["host"]), int(row["repeat"])
    wall = done[
        (done["cell"] == cell)
        & (done["host"] == host)
        & (done["repeat"] == repeat)
        & (done["metric"] == "wall_time")
    ]["value"]
    return host, repeat, float(wall.iloc[0]) if len(wall) else None


def _steps(ax: Any, d: pd.DataFrame, scale: float = 1.0, **style: Any) -> Any:
    """Each interval's value as a level over the interval itself, (t - seconds, t]."""
    d = d.sort_values("t")
    starts = (d["t"] - d["seconds"].fillna(0)).to_numpy()
    x = np.append(starts, d["t"].to_numpy()[-1:])
    y = scale * np.append(d["value"].to_numpy(), d["value"].to_numpy()[-1:])
    (line,) = ax.plot(x, y, drawstyle="steps-post", lw=1.2, **style)
    return line


def _palette(n: int) -> list[str]:
    """``n`` colours for ``n`` kinds of daemon: the palette's, then as many more as a lab
    needs, none twice."""
    return [*DAEMON_COLOURS[:n], *_more_colours(n - len(DAEMON_COLOURS))]


# Hues the colours past the palette leave out: tab10's blue and orange (205 and 28 degrees),
# which a post's first two settings take, and a margin either side.
_TAKEN_HUES = ((190.0, 220.0), (15.0, 40.0))


def _more_colours(n: int) -> list[str]:
    """``n`` colours past the palette: hues a golden angle apart (outside
    :data:`_TAKEN_HUES`), dark and light in turn, so that neighbours differ most."""
    import colorsys

    out: list[str] = []
    hue, k = 0.0, 0
    while len(out) < n:
        hue = (hue + 137.508) % 360.0
        if any(lo <= hue <= hi for lo, hi in _TAKEN_HUES):
            continue
        r, g, b = colorsys.hsv_to_rgb(hue / 360.0, 0.7, (0.55, 0.8)[k % 2])
        out.append(f"#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}")
        k += 1
    return out


# A host's look in every panel: a line style, then a marker on it past the four styles.
_NODE_STYLES = ("-", "--", ":", "-.")
_NODE_MARKERS = ("", "o", "s", "^", "v", "D")


def _node_look(j: int) -> dict[str, Any]:
    """The line style (and marker) of the j-th host's lines: its CPU and disk, its
    daemons'."""
    look: dict[str, Any] = {"ls": _NODE_STYLES[j % len(_NODE_STYLES)]}
    marker = _NODE_MARKERS[j // len(_NODE_STYLES) % len(_NODE_MARKERS)]
    if marker:
        # Spaced along the line, not one a sample: a run of minutes at 1 s a sample drew
        # a bead chain that outweighed every other line.
        look.update(marker=marker, ms=3, markevery=0.08)
    return look


# A latency quantile and the count of operations it is of: an interval with none has no
# latency, only the quantile left over from before (OM's and SCM's Ratis logs, idle while a
# datanode syncs, kept 0 syncs/s beside a stale 2 ms that set the scale over the 6 us).
COUNTED_BY = {"ratis_sync_p50": "ratis_syncs", "ratis_sync_p99": "ratis_syncs"}


def _latencies(s: pd.DataFrame) -> list[tuple[str, str, pd.DataFrame]]:
    """Per daemon, its key latency's series (:data:`LATENCIES`, the first it has), over the
    intervals in which it made the operations the latency is of."""
    out = []
    for res in sorted({r for r in s["resource"] if r.startswith("daemon:")}):
        d = s[s["resource"] == res]
        metric = next((m for m in LATENCIES if (d["metric"] == m).any()), None)
        if metric is None:
            continue
        lat = d[d["metric"] == metric]
        count = COUNTED_BY.get(metric)
        if count and (d["metric"] == count).any():
            busy = set(d[(d["metric"] == count) & (d["value"] > 0)]["t"])
            lat = lat[lat["t"].isin(busy)]
        if not lat.empty:
            out.append((res[7:], metric, lat))
    return out


def over_time(
    series: pd.DataFrame,
    progress: pd.DataFrame | None,
    cell: str,
    host: str,
    repeat: int,
    title: str,
    out_base: Path,
    end: float | None = None,
    name: str | None = None,
) -> dict | None:
    """One run: the tool's rate over time (where it reported one), each host's CPU busy and
    busiest disk's utilisation, and the daemons' CPU, on one time axis, titled by the cell's
    ``name`` in the post. None for a run sampled over fewer than :data:`MIN_INTERVALS`
    intervals: it has no shape to show."""
    s = series[(series["cell"] == cell) & (series["host"] == host) & (series["repeat"] == repeat)]
    busy = s[(s["resource"] == "cpu") & (s["metric"] == "busy")]
    if busy.empty or busy.groupby("node").size().max() < MIN_INTERVALS:
        return None
    panels = []
    rate = pd.DataFrame()
    if progress is not None and not progress.empty:
        rate = progress[
            (progress["cell"].astype(str) == cell)
            & (progress["host"].astype(str) == host)
            & (progress["repeat"] == repeat)
            & progress["rate"].notna()
        ]
        if not rate.empty:
            panels.append("rate")
    panels += ["cpu", "disk"]
    procs = s[s["resource"].str.startswith("process:") & (s["metric"] == "cpu")]
    if not procs.empty:
        panels.append("process")
    latencies = _latencies(s)
    if latencies:
        panels.append("latency")
    # Each kind of daemon one colour in every panel, each host one line style (and marker).
    kinds = sorted(
        {role_of(r[8:]) for r in procs["resource"]}
        | {role_of(r[7:]) for r in s["resource"] if r.startswith("daemon:")}
    )
    kind_colour = dict(zip(kinds, _palette(len(kinds)), strict=True))
    fig, axs = plt.subplots(
        len(panels), 1, figsize=(WIDTH_IN, 1.2 + 1.5 * len(panels)), dpi=DPI, sharex=True
    )
    axs = np.atleast_1d(axs)
    nodes = list(dict.fromkeys(s["node"]))
    node_look = {node: _node_look(j) for j, node in enumerate(nodes)}

    def daemon_look(daemon: str, node: str) -> dict[str, Any]:
        return {"color": kind_colour[role_of(daemon)], **node_look[node]}

    # One legend entry per host and per daemon, whatever panels it is drawn in: a daemon's
    # CPU and its latency share its colour, and a colour twice in a legend would say two.
    handles: dict[str, Any] = {}
    said: dict[str, list[str]] = {}
    for ax, panel in zip(axs, panels, strict=True):
        if panel == "rate":
            # On the telemetry's clock (since the measured step started) where the series
            # has it; else from the tool's own start.
            x = rate["t_step"] if "t_step" in rate and rate["t_step"].notna().all() else rate["t"]
            ax.plot(x, rate["rate"], color="black", lw=1.2, marker=".", ms=3)
            ax.set_ylabel("tool ops/s", fontsize=8)
            from_zero(ax, ax.dataLim.y1)
        elif panel == "cpu":
            for node in nodes:
                d = busy[busy["node"] == node]
                if not d.empty:
                    look = {"color": HOST_COLOUR, **node_look[node]}
                    handles.setdefault(node, _steps(ax, d, 100, **look))
            ax.set_ylabel("CPU busy %", fontsize=8)
            ax.set_ylim(0, 105)
        elif panel == "disk":
            busiest: dict[str, str] = {}
            for node in nodes:
                d = s[(s["node"] == node) & s["resource"].str.startswith("disk:")]
                d = d[d["metric"] == "util"]
                if d.empty:
                    continue
                top = d.groupby("resource")["value"].mean().idxmax()
                busiest[node] = top[5:]
                d = d[d["resource"] == top].sort_values("t")
                look = {"color": HOST_COLOUR, **node_look[node]}
                handles.setdefault(node, _steps(ax, d, 100, **look))
            # Which device each line is, above the panel: written at a line's end it sat
            # on the line where the line ended high, and six hosts' names sat on each other.
            if busiest:
                devices = set(busiest.values())
                which = (
                    devices.pop()
                    if len(devices) == 1
                    else ", ".join(f"{node} {dev}" for node, dev in busiest.items())
                )
                ax.set_title(f"busiest device: {which}", loc="right", fontsize=7, pad=2)
            ax.set_ylabel("disk util %", fontsize=8)
            ax.set_ylim(0, 105)
        elif panel == "latency":
            # In us where every latency is under 0.1 ms (a datanode's Ratis sync into
            # memory, 9.6 us, read "0.0100 ms" on its ticks).
            highest = max(float(d["value"].max()) for _, _, d in latencies)
            scale, unit = (1e6, "us") if highest < 1e-4 else (1e3, "ms")
            for daemon, metric, d in latencies:
                node = d["node"].iloc[0]
                key = daemon + (f" ({node})" if len(nodes) > 1 else "")
                line = _steps(ax, d, scale, **daemon_look(daemon, node))
                handles.setdefault(key, line)
                said.setdefault(key, []).append(metric.replace("_", " "))
            ax.set_ylabel(f"daemon latency\n({unit})", fontsize=8)
            from_zero(ax, ax.dataLim.y1)
        else:
            for res, d in procs.groupby("resource", sort=True):
                node = d["node"].iloc[0]
                key = res[8:] + (f" ({node})" if len(nodes) > 1 else "")
                line = _steps(ax, d, **daemon_look(res[8:], node))
                handles.setdefault(key, line)
                said.setdefault(key, []).append("CPU")
            ax.set_ylabel("daemon CPU\n(cores)", fontsize=8)
            from_zero(ax, ax.dataLim.y1)
        ax.tick_params(labelsize=8)
        ax.grid(alpha=0.3)
        for x in (0.0, end):
            if x is not None:
                ax.axvline(x, color="grey", lw=0.8, ls=":")
    axs[-1].set_xlabel("seconds since the measured step started (dotted: its start and end)")
    shown = name or cell
    fig.suptitle(fit_title(fig, f"{title}: {shown}, run {repeat} on {host}", 11), fontsize=11)
    names = [f"{k} ({', '.join(said[k])})" if k in said else k for k in handles]
    legend = legend_below(fig, list(handles.values()), names, "host / daemon")
    _fit_above(fig, legend)
    got = save_figure(fig, out_base, "resources_over_time")
    return {
        **got,
        "section": "resources",
        "title": f"{shown}: run {repeat} on {host} over time",
        "caption": (
            ("Top: the tool's own rate between its progress lines. " if not rate.empty else "")
            + "The CPU's busy share and the busiest disk's utilisation per host (the device "
            "named above its panel)"
            + ("; the daemons' CPU in cores" if "process" in panels else "")
            + (
                "; each daemon's key latency from its own metrics (Ratis log sync: the median of "
                "recent syncs; Hadoop's: the mean over the last second)"
                if "latency" in panels
                else ""
            )
            + ", each over its sampling interval"
            + (
                "; each host in a line style of its own in every panel, its daemons' lines "
                "included, and each kind of daemon in a colour of its own"
                if len(nodes) > 1
                else ""
            )
            + ". The run is the one nearest its cell's median."
        ),
    }


def draw(
    window: pd.DataFrame,
    series: pd.DataFrame,
    progress: pd.DataFrame | None,
    tidy_df: pd.DataFrame,
    axes: list[str],
    metric: str | None,
    title: str,
    out_dir: Path,
    cells_first: list[str] | None = None,
    names: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    """The overview, then up to :data:`MAX_TIME_FIGURES` cells over time (``cells_first``,
    the compared ones, before the rest in the table's order), each cell by its name in the
    post (``names``)."""
    drawn = []
    fig = overview(window, axes, title, out_dir / "resources", names)
    if fig is None:
        return drawn
    drawn.append(fig)
    cells = list(dict.fromkeys([*(cells_first or []), *window["cell"]]))
    for i, cell in enumerate(cells[:MAX_TIME_FIGURES], start=1):
        run = _representative(tidy_df, cell, metric)
        if run is None:
            continue
        host, repeat, end = run
        got = over_time(
            series,
            progress,
            cell,
            host,
            repeat,
            title,
            out_dir / f"resources-{i}",
            end,
            (names or {}).get(cell, cell),
        )
        if got is not None:
            drawn.append(got)
    return drawn
