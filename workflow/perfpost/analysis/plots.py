"""Per-test figures: each metric across the matrix, every repeat a point, the median marked.

The x axis is one matrix axis (``plot.x`` or the first numeric one); the other axes are
series, a colour each in every figure of the post, but for axes zipped with x (or the facet),
which name its ticks (``1k`` over ``chunks=40000``). Numeric and size axes (``1.5``, ``4k``)
sit at the value their label names, on a log scale past a decade, a line joining each series'
medians from three values on; other axes are categories in config order. A panel spanning
more than 1.5 decades gets a log y axis, said in its label; the legend lies under the panels.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

from perfpost.analysis.tidy import results
from perfpost.plan import matrix
from perfpost.units import UnitError, axis_unit, metric_label, parse_size, sig

COLOURS = plt.get_cmap("tab10").colors
WIDTH_IN, HEIGHT_IN, DPI = 8.0, 4.5, 150
LOG_Y_DECADES = 1.5  # a wider span of positive values gets a log y axis
HEADROOM = 0.05  # room above the highest value on a linear axis from zero
LEGEND_MAX_COLUMNS = 4


def _position(value: Any) -> float | None:
    """Where a label sits on a numeric axis: the number it is (``1.5``) or the bytes of the
    size it names (``4k`` is 4096); None for a category. Read from the label, never from how
    a table typed the column."""
    text = matrix.label(value)
    try:
        pos = float(text)
    except ValueError:
        try:
            pos = float(parse_size(text))
        except UnitError:
            return None
    return pos if math.isfinite(pos) else None


def _texts(axis_labels: dict[str, list[Any]]) -> dict[str, list[str]]:
    """Axis values as the labels the tables hold (``1``, ``1.5``, ``true``)."""
    return {a: [matrix.label(v) for v in values] for a, values in axis_labels.items()}


def choose_x(axis_labels: dict[str, list[Any]], preferred: str | None) -> str | None:
    """The axis on x: the configured one, else the first numeric axis with >1 value."""
    if preferred:
        return preferred
    multi = [a for a, labels in axis_labels.items() if len(labels) > 1]
    for a in multi:
        if all(_position(v) is not None for v in axis_labels[a]):
            return a
    return multi[0] if multi else None


def partners(axis: str | None, zips: Sequence[Sequence[str]]) -> list[str]:
    """The axes zipped with ``axis``: they move with it, so they describe it, not a series."""
    if axis is None:
        return []
    return [a for group in zips if axis in group for a in group if a != axis]


def series_axes(
    axis_labels: dict[str, list[Any]],
    x_axis: str | None,
    facet: str | None = None,
    zips: Sequence[Sequence[str]] = (),
) -> list[str]:
    """The axes that split a panel into series: all but x, the facet and their zip partners."""
    travel = {x_axis, facet, *partners(x_axis, zips), *partners(facet, zips)}
    return [a for a in axis_labels if a not in travel]


def _series_combos(
    axis_labels: dict[str, list[Any]], series: list[str], zips: Sequence[Sequence[str]]
) -> list[tuple[str, ...]]:
    """Every series in config order: the product of the series axes, zipped ones together."""
    texts = _texts({a: axis_labels[a] for a in series})
    groups: list[list[str]] = []
    for a in series:
        zipped = next((list(g) for g in zips if a in g), [a])
        members = [m for m in series if m in zipped]
        if members not in groups:
            groups.append(members)
    out = []
    for picks in itertools.product(*(range(len(texts[g[0]])) for g in groups)):
        chosen = {m: texts[m][i] for g, i in zip(groups, picks, strict=True) for m in g}
        out.append(tuple(chosen[a] for a in series))
    return out


def series_colours(
    axis_labels: dict[str, list[Any]],
    series_axes: list[str],
    zips: Sequence[Sequence[str]] = (),
) -> dict[tuple[str, ...], Any]:
    """One colour per series (the values of the axes that split a panel), in config order,
    the same in every panel and every figure of a post: the comparison figures colour each
    side by its series, and the per-run figures each cell by its series, so a colour means
    one thing across the post. Past ten series tab10 repeats itself; tab20 keeps twenty apart."""
    combos = _series_combos(axis_labels, series_axes, zips)
    source = COLOURS if len(combos) <= len(COLOURS) else plt.get_cmap("tab20").colors
    return {combo: source[i % len(source)] for i, combo in enumerate(combos)}


LINESTYLES = ("-", "--", ":", "-.")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


@dataclass(frozen=True)
class Palette:
    """A post's colours and styles: a colour per series (:func:`series_colours`), and a
    line style and marker per value of the other axes (x, the facet), for figures that draw
    every cell apart (the rate over time): a colour and a style together name a cell, and no
    colour means two things in one post."""

    series: tuple[str, ...]
    colours: dict[tuple[str, ...], Any]
    others: tuple[str, ...]
    styles: dict[tuple[str, ...], tuple[str, str]]

    @classmethod
    def of_experiment(
        cls,
        axis_labels: dict[str, list[Any]],
        x_axis: str | None,
        facet: str | None = None,
        zips: Sequence[Sequence[str]] = (),
    ) -> Palette:
        series = series_axes(axis_labels, x_axis, facet, zips)
        others = [a for a in axis_labels if a not in series]
        texts = _texts(axis_labels)
        combos = list(itertools.product(*(texts[a] for a in others))) if others else [()]
        styles = {
            tuple(c): (LINESTYLES[i % len(LINESTYLES)], MARKERS[i % len(MARKERS)])
            for i, c in enumerate(combos)
        }
        return cls(tuple(series), series_colours(axis_labels, series, zips), tuple(others), styles)

    def colour(self, labels: dict[str, Any]) -> Any:
        key = tuple(matrix.label(labels.get(a)) for a in self.series)
        return self.colours.get(key, COLOURS[0])

    def style(self, labels: dict[str, Any]) -> tuple[str, str]:
        key = tuple(matrix.label(labels.get(a)) for a in self.others)
        return self.styles.get(key, ("-", "o"))

    def name(self, labels: dict[str, Any], which: Sequence[str]) -> str:
        return ", ".join(f"{a}={matrix.label(labels.get(a))}" for a in which)


@dataclass(frozen=True)
class _X:
    """The x axis of a figure: the labels rows hold, what the ticks say, and where they sit."""

    name: str | None
    labels: list[str]
    ticks: list[str]
    positions: list[float]
    numeric: bool
    log: bool

    @property
    def joined(self) -> bool:
        """Whether a line joins a series' medians: on a numeric axis of three values or
        more. Two values are two points; a line between them would draw a trend where
        nothing was measured (1k and 1M joined across three decades)."""
        return self.numeric and len(self.positions) > 2


def _x_axis(
    axis_labels: dict[str, list[Any]],
    x_axis: str | None,
    zips: Sequence[Sequence[str]],
    ran: dict[str, dict[str, str]] | None = None,
) -> _X:
    if not x_axis:
        return _X(None, [""], [""], [0.0], False, False)
    texts = _texts(axis_labels)
    labels = texts[x_axis]
    found = [_position(v) for v in labels]
    numeric = len(found) > 1 and all(p is not None for p in found)
    positions = [float(p) for p in found] if numeric else [float(i) for i in range(len(labels))]
    log = numeric and min(positions) > 0 and max(positions) / min(positions) >= 10
    # A zipped partner changes with x: its label goes under x's on each tick.
    # A value whose setting did not take effect is named with what ran (``ran``).
    said = (ran or {}).get(x_axis, {})
    ticks = [
        "\n".join(
            [
                text + (f"\n({said[text]})" if text in said else ""),
                *(f"{p}={texts[p][i]}" for p in partners(x_axis, zips) if p in texts),
            ]
        )
        for i, text in enumerate(labels)
    ]
    return _X(x_axis, labels, ticks, positions, numeric, log)


def _log_y(values: Sequence[float]) -> bool:
    """Log y when every value is positive and they span more than :data:`LOG_Y_DECADES`
    decades: a linear axis would flatten the small ones to a line along the bottom. A zero
    cannot be drawn on a log axis, so a panel with one stays linear."""
    finite = [v for v in values if math.isfinite(v)]
    if not finite or min(finite) <= 0:
        return False
    return math.log10(max(finite) / min(finite)) > LOG_Y_DECADES


def _plain(value: float) -> str:
    """A tick value as people write it: ``0.1``, ``50``, ``1,000`` (no ``0.100``, no ``1e3``)."""
    text = sig(value)
    return text.rstrip("0").rstrip(".") if "." in text else text


def from_zero(ax: Any, top: float) -> None:
    """A y axis from zero with :data:`HEADROOM` over ``top``, the highest value drawn
    (matplotlib's margin, 5% of the values' range, is no room for values close together)."""
    room = top * (1 + HEADROOM) if math.isfinite(top) and top > 0 else 0.0
    ax.set_ylim(0, max(ax.get_ylim()[1], room))


def _scale_y(ax: Any, values: Sequence[float]) -> bool:
    """Linear from :func:`from_zero`, or log (:func:`_log_y`) with plain numbers on its ticks."""
    if not _log_y(values):
        from_zero(ax, max((v for v in values if math.isfinite(v)), default=0.0))
        return False
    ax.set_yscale("log")
    span = math.log10(max(values) / min(values))
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0) if span < 3 else (1.0,)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: _plain(v)))
    ax.yaxis.set_minor_locator(NullLocator())  # unlabelled ticks cost time and say nothing
    return True


def _draw(
    ax: Any,
    data: pd.DataFrame,
    factor: float,
    x: _X,
    series_axes: list[str],
    colours: dict[tuple[str, ...], Any],
) -> tuple[set[tuple[str, ...]], bool]:
    """One panel; returns the series that had runs in it and whether its y axis is log."""
    xs = x.positions
    gaps = np.diff((np.log10 if x.log else np.asarray)(sorted(set(xs))))  # decades on log x
    step = float(gaps.min()) if x.numeric and len(gaps) else 1.0  # series spread by a share
    n = max(len(colours), 1)
    # Labels as text once, and one scatter for every run and one for every median in the
    # panel, each point in its series' colour; a line per series joins its medians when x is
    # ordered. A scatter per x value made 2,000 artists for a 1,000-cell matrix (13 s to
    # draw), one per series 200 (2 s with the SVG).
    as_text = {a: data[a].astype(str).to_numpy() for a in {*series_axes, x.name} if a}
    runs: dict[str, list[Any]] = {"x": [], "y": [], "c": []}
    medians: dict[str, list[Any]] = {"x": [], "y": [], "c": []}
    drawn = set()
    for i, (key, colour) in enumerate(colours.items()):
        mask = np.ones(len(data), dtype=bool)
        for a, v in zip(series_axes, key, strict=True):
            mask &= as_text[a] == v
        if not mask.any():
            continue
        drawn.add(key)
        values = (data["value"].to_numpy()[mask]) / factor
        at = as_text[x.name][mask] if x.name else None
        # Spread series sideways so points of different series at one x do not overlap.
        offset = (i - (n - 1) / 2) * (0.6 / n)
        med: list[tuple[float, float]] = []
        for j, text in enumerate(x.labels):
            ys = (values if at is None else values[at == text]).tolist()
            if not ys:
                continue
            shifted = xs[j] * 10 ** (offset * step) if x.log else xs[j] + offset * step
            runs["x"] += [shifted] * len(ys)
            runs["y"] += ys
            runs["c"] += [colour] * len(ys)
            med.append((shifted, float(np.median(ys))))
        medians["x"] += [m[0] for m in med]
        medians["y"] += [m[1] for m in med]
        medians["c"] += [colour] * len(med)
        if x.joined and len(med) > 1:
            med.sort()
            ax.plot(*zip(*med, strict=True), color=colour, linewidth=1.2, alpha=0.8)
    if runs["x"]:
        ax.scatter(
            runs["x"], runs["y"], s=18, color=runs["c"], alpha=0.55, linewidths=0, gid="runs"
        )
        ax.scatter(
            medians["x"],
            medians["y"],
            marker="_",
            s=260,
            color=medians["c"],
            linewidths=2.2,
            gid="medians",
        )
    if x.log:
        ax.set_xscale("log")
        ax.minorticks_off()
    if x.name:
        ax.set_xticks(xs)
        ax.set_xticklabels(x.ticks)
        ax.set_xlabel(x.name)
    else:
        ax.set_xticks([])
    if not x.numeric:
        ax.set_xlim(min(xs) - 0.5, max(xs) + 0.5)
    log = _scale_y(ax, runs["y"])
    ax.grid(axis="y", alpha=0.3)
    return drawn, log


def legend_below(fig: Figure, handles: list[Any], labels: list[str], title: str | None) -> Any:
    """The legend under the panels, inside the image: as many columns as fit the width, long
    labels broken at their commas when one column is still too wide, the figure widened as a
    last resort; the figure then grows by the legend's height, so the panels keep theirs."""
    width = fig.bbox.width * 0.96

    def place(texts: list[str], ncol: int) -> Any:
        return fig.legend(
            handles,
            texts,
            loc="lower center",
            bbox_to_anchor=(0.5, 0.0),
            ncol=ncol,
            fontsize=8,
            frameon=False,
            title=title,
            title_fontsize=8,
        )

    renderer = fig.canvas.get_renderer()
    legend = None
    for texts in (labels, [t.replace(", ", ",\n") for t in labels]):
        for ncol in range(min(len(texts), LEGEND_MAX_COLUMNS), 0, -1):
            legend = place(texts, ncol)
            if legend.get_window_extent(renderer).width <= width:
                break
            legend.remove()
            legend = None
        if legend is not None:
            break
    if legend is None:
        legend = place(texts, 1)
        fig.set_figwidth(legend.get_window_extent(renderer).width / 0.96 / fig.dpi)
    height = legend.get_window_extent(fig.canvas.get_renderer()).height / fig.dpi
    fig.set_figheight(fig.get_figheight() + height)
    return legend


def fit_title(fig: Figure, text: str, fontsize: float) -> str:
    """``text`` broken into lines as wide as the figure. matplotlib's own ``wrap=True``
    breaks lines at draw time, after ``tight_layout`` made room for one: a long title then
    ran off the top of the image."""
    renderer = fig.canvas.get_renderer()
    # Every caller puts it over the figure (suptitle), centred: 7% of the width spare each
    # side. Over the axes it would sit right of the centre by the y labels, and a line as
    # wide as the figure lost its last word off the right edge.
    limit = fig.bbox.width * 0.86
    probe = fig.text(0, 0, "", fontsize=fontsize)
    lines: list[str] = []
    line = ""
    for word in text.split():
        probe.set_text(f"{line} {word}".strip())
        if line and probe.get_window_extent(renderer).width > limit:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    probe.remove()
    return "\n".join([*lines, line])


def layout_above(fig: Figure, bottom_in: float) -> None:
    """Fit the panels above ``bottom_in`` inches of legend; slant x labels that would touch."""
    rect = (0, min(bottom_in / fig.get_figheight(), 0.8), 1, 1)
    fig.tight_layout(rect=rect)
    renderer = fig.canvas.get_renderer()
    slanted = False
    for ax in fig.axes:
        boxes = sorted(
            (t.get_window_extent(renderer) for t in ax.get_xticklabels() if t.get_text()),
            key=lambda b: b.x0,
        )
        if any(a.x1 + 4 > b.x0 for a, b in itertools.pairwise(boxes)):
            for t in ax.get_xticklabels():
                t.set_rotation(30)
                t.set_horizontalalignment("right")
            slanted = True
    if slanted:
        fig.tight_layout(rect=rect)
        for ax in fig.axes:
            _thin_ticks(ax)


def _thin_ticks(ax: Any) -> None:
    """Label every k-th x tick where even slanted labels would run into each other (many
    values in a narrow panel); the ticks stay, so every position is still marked."""
    texts = [t.get_text() for t in ax.get_xticklabels()]
    xs = ax.transData.transform([(x, 0) for x in ax.get_xticks()])[:, 0]
    if len(texts) < 3 or len(xs) != len(texts):
        return
    order = np.argsort(xs)
    gap = float(np.diff(xs[order]).min())
    lines = max(t.count("\n") + 1 for t in texts)
    size = ax.get_xticklabels()[0].get_fontsize() * ax.figure.dpi / 72 * 1.2 * lines
    # Slanted at 30 degrees, neighbours clear each other when their anchors are 2 heights apart.
    k = math.ceil(2 * size / gap) if gap > 0 else len(texts)
    if k <= 1:
        return
    keep = {int(i) for i in order[::k]}
    ax.set_xticklabels(
        [t if i in keep else "" for i, t in enumerate(texts)], rotation=30, ha="right"
    )


def metric_figure(
    df: pd.DataFrame,
    metric: str,
    axis_labels: dict[str, list[Any]],
    x_axis: str | None,
    title: str,
    facet: str | None = None,
    zips: Sequence[Sequence[str]] = (),
    scale: tuple[str, float] | None = None,
    ran: dict[str, dict[str, str]] | None = None,
) -> Figure | None:
    """The figure of one metric, not yet saved; None when there is nothing to draw.

    With ``facet``, one panel per value of that axis, each with its own y scale (a hot cache
    and a cold one differ by an order of magnitude; one scale would flatten the cold one).
    ``scale``: the unit the whole post shows this metric in (:func:`metric_scales`);
    ``ran``: per axis, its values whose setting did not take effect and what ran instead.
    """
    data = results(df)
    data = data[data["metric"] == metric]
    if data.empty:
        return None
    unit_name, factor = scale or axis_unit(str(data["unit"].iloc[0]), data["value"].tolist())
    series = series_axes(axis_labels, x_axis, facet, zips)
    colours = series_colours(axis_labels, series, zips)
    x = _x_axis(axis_labels, x_axis, zips, ran)
    texts = _texts(axis_labels)
    panels = texts[facet] if facet else [None]
    width = WIDTH_IN if len(panels) == 1 else min(WIDTH_IN * 1.5, 4.5 * len(panels))
    fig, axes = plt.subplots(1, len(panels), figsize=(width, HEIGHT_IN), dpi=DPI, squeeze=False)
    drawn: set[tuple[str, ...]] = set()
    logs = []
    for i, (ax, panel) in enumerate(zip(axes[0], panels, strict=True)):
        sub = data if panel is None else data[data[facet].astype(str) == panel]
        keys, log = _draw(ax, sub, factor, x, series, colours)
        drawn |= keys
        logs.append(log)
        if panel is not None:
            named = [f"{facet}={panel}", *(f"{p}={texts[p][i]}" for p in partners(facet, zips))]
            ax.set_title(", ".join(named), fontsize=10)
    for i, (ax, log) in enumerate(zip(axes[0], logs, strict=True)):
        if i == 0 or len(set(logs)) > 1:
            ax.set_ylabel(f"{metric_label(metric)} ({unit_name}" + (", log scale)" if log else ")"))
    fig.suptitle(fit_title(fig, title, 11), fontsize=11)
    joined = x.joined
    what = "points: repeats; bars: medians" + (
        "; lines join each series' medians" if joined else ""
    )
    style = {"linestyle": "-" if joined else "none", "marker": "o", "markersize": 4}
    shown = [k for k in colours if k in drawn]
    if series:
        handles = [Line2D([], [], color=colours[k], **style) for k in shown]
        said = ran or {}
        names = [
            ", ".join(
                f"{a}={v}" + (f" ({said[a][v]})" if v in said.get(a, {}) else "")
                for a, v in zip(series, k, strict=True)
            )
            for k in shown
        ]
        legend = legend_below(fig, handles, names, what)
    else:
        colour = next(iter(colours.values()))
        handles = [
            Line2D([], [], color=colour, alpha=0.55, linestyle="none", marker="o", markersize=4),
            Line2D(
                [],
                [],
                color=colour,
                marker="_",
                markersize=10,
                markeredgewidth=2.2,
                linestyle="-" if joined else "none",
            ),
        ]
        names = ["repeats", "medians, joined by a line" if joined else "medians"]
        legend = legend_below(fig, handles, names, None)
    layout_above(fig, legend.get_window_extent().height / fig.dpi + 0.05)
    return fig


def plot_metric(
    df: pd.DataFrame,
    metric: str,
    axis_labels: dict[str, list[Any]],
    x_axis: str | None,
    title: str,
    out_base: Path,
    facet: str | None = None,
    zips: Sequence[Sequence[str]] = (),
    scale: tuple[str, float] | None = None,
    ran: dict[str, dict[str, str]] | None = None,
) -> dict[str, str] | None:
    """Draw one figure (:func:`metric_figure`); returns the PNG and SVG names, or None when
    there is nothing to draw."""
    fig = metric_figure(df, metric, axis_labels, x_axis, title, facet, zips, scale, ran)
    return save_figure(fig, out_base, metric) if fig is not None else None


def save_figure(fig: Any, out_base: Path, metric: str) -> dict[str, str]:
    """PNG for the post, SVG beside it for print; returns their names."""
    out_base.parent.mkdir(parents=True, exist_ok=True)
    # Not with_suffix: a metric's name may hold a dot (freon's chunk-write.mean).
    png = out_base.parent / f"{out_base.name}.png"
    svg = out_base.parent / f"{out_base.name}.svg"
    fig.savefig(png)
    fig.savefig(svg)
    plt.close(fig)
    return {"metric": metric, "png": png.name, "svg": svg.name}


def metric_scales(df: pd.DataFrame, metrics: Sequence[str]) -> dict[str, tuple[str, float]]:
    """The unit each metric is shown in across a post's figures, from all its runs: MB/s in
    one figure and GB/s in the next would make one metric read as two."""
    data = results(df)
    out = {}
    for m in metrics:
        sub = data[data["metric"] == m]
        if len(sub):
            out[m] = axis_unit(str(sub["unit"].iloc[0]), sub["value"].tolist())
    return out


def plot_experiment(
    df: pd.DataFrame,
    title: str,
    axis_labels: dict[str, list[Any]],
    metrics: list[str],
    preferred_x: str | None,
    outdir: Path,
    facet: str | None = None,
    zips: Sequence[Sequence[str]] = (),
    ran: dict[str, dict[str, str]] | None = None,
) -> list[dict[str, str]]:
    """All figures of one experiment into ``outdir``; returns what was drawn. ``zips``: the
    experiment's zip groups, whose axes travel together; ``ran``: axis values named with
    what ran (:func:`metric_figure`)."""
    rest = {a: v for a, v in axis_labels.items() if a != facet and a not in partners(facet, zips)}
    x_axis = choose_x(rest, preferred_x)
    scales = metric_scales(df, metrics)
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
            zips,
            scales.get(metric),
            ran,
        )
        if fig:
            drawn.append(fig)
    return drawn


def experiment_x(
    axis_labels: dict[str, list[Any]],
    preferred_x: str | None,
    facet: str | None,
    zips: Sequence[Sequence[str]] = (),
) -> str | None:
    """The x axis :func:`plot_experiment` chooses, for the figures that share its palette."""
    rest = {a: v for a, v in axis_labels.items() if a != facet and a not in partners(facet, zips)}
    return choose_x(rest, preferred_x)
