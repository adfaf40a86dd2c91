"""``perfpost history``: each series over builds (or sessions), as a table and a figure.

A series is one experiment's cell on one host of one fingerprint, one metric, under one
measurement hash: results of different machines, or of a changed config, are never in one
series. Its points are builds in the order they were first measured (``by="build"``) or the
sessions that measured them (``by="session"``); :mod:`perfpost.history.changes` finds where
it stepped and whether the newest point is worse than the ones before it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from perfpost.history.changes import Analysis, analyse
from perfpost.units import axis_unit, format_value, metric_label, sig

MAX_TICKS = 20
SERIES_KEY = ["experiment", "cell", "host", "fingerprint", "measurement", "metric", "unit"]


@dataclass(frozen=True)
class Series:
    key: dict[str, str]
    points: pd.DataFrame  # one row per point: its label, build, revision, first run, runs
    runs: list[list[float]]  # each point's runs' values
    analysis: Analysis
    machine: str


def select(
    df: pd.DataFrame,
    experiment: str | None = None,
    cell: str | None = None,
    host: str | None = None,
    metric: str | None = None,
) -> pd.DataFrame:
    """The rows asked for: every metric named, else each experiment's compared metric."""
    out = df
    for col, want in (("experiment", experiment), ("cell", cell), ("host", host)):
        if want is not None:
            out = out[out[col] == want]
    if metric is not None:
        return out[out["metric"] == metric]
    return out[out["primary"].astype(bool)]


def series(df: pd.DataFrame, by: str = "build") -> list[Series]:
    """Every series in ``df`` (rows of the store), analysed."""
    out = []
    if df.empty:
        return out
    point = "build" if by == "build" else "session"
    for key, g in df.groupby(SERIES_KEY, sort=True, dropna=False):
        runs = g.drop_duplicates(["repeat", "attempt", "session", "start"])
        first = runs.groupby(point)["start"].min().sort_values()
        labels = list(first.index)
        values = [
            [v for v in runs.loc[runs[point] == b, "value"].astype(float) if math.isfinite(v)]
            for b in labels
        ]
        labels = [b for b, v in zip(labels, values, strict=True) if v]
        values = [v for v in values if v]
        if not labels:
            continue
        revs = [
            " ".join(sorted({r for r in runs.loc[runs[point] == b, "revision"] if r}))
            for b in labels
        ]
        if point == "session":
            builds = [
                ", ".join(dict.fromkeys(runs.loc[runs["session"] == s, "build"])) for s in labels
            ]
            shown = [str(first[s])[:16].replace("T", " ") for s in labels]
        else:
            builds, shown = labels, labels
        points = pd.DataFrame(
            {
                "point": shown,
                "build": builds,
                "revision": revs,
                "first": [str(first[b]) for b in labels],
                "runs": [len(v) for v in values],
            }
        )
        unit = str(key[-1])
        analysis = analyse(shown, values, unit)
        out.append(
            Series(
                key=dict(zip(SERIES_KEY, map(str, key), strict=True)),
                points=points,
                runs=values,
                analysis=analysis,
                machine=str(g["machine"].iloc[0]),
            )
        )
    return out


def _pct(x: float | None) -> str:
    if x is None or not math.isfinite(x):
        return "n/a"
    return f"{x * 100:+.1f}%"


def title(s: Series) -> str:
    k = s.key
    return f"{k['experiment']}, {k['cell']} on {k['host']}: {metric_label(k['metric'])}"


def verdict(s: Series) -> str:
    """One sentence: where the series stepped, its noise floor, and the newest point."""
    a = s.analysis
    if len(a.builds) < 2:
        return f"One {'build' if a.builds else 'point'} so far: nothing to compare yet."
    unit = s.key["unit"]
    parts = []
    if a.changes:
        steps = "; ".join(
            f"at **{c.build}**: {_pct(c.change)} ({c.direction}, "
            f"{format_value(c.before, unit)} to {format_value(c.after, unit)}"
            + (f"; runs either side p = {c.runs_p:.2g}" if c.runs_p is not None else "")
            + ")"
            for c in a.changes
        )
        parts.append(f"Change points (PELT): {steps}.")
    else:
        parts.append(f"No change point over {len(a.builds)} points (PELT).")
    if a.floor is not None:
        parts.append(
            f"Noise floor: \u00b1{a.floor * 100:.1f}%, the smallest step at the next build this"
            f" history would flag (its build-to-build noise, read from {len(a.builds)} points)."
        )
    if a.note:
        parts.append(a.note[0].upper() + a.note[1:] + ".")
    newest = a.builds[-1]
    if a.newest_worse:
        c = a.changes[-1]
        parts.append(
            f"**The newest, {newest}, is worse beyond the noise floor**: the series stepped"
            f" {_pct(c.change)} at {c.build}, and has not come back."
        )
    else:
        parts.append(f"The newest, {newest}, is not worse than the points before it.")
    return " ".join(parts)


def table(s: Series) -> str:
    """The series as markdown: one row per point, its change from the one before, and the
    change points marked."""
    a, unit = s.analysis, s.key["unit"]
    scale = axis_unit(unit, a.medians)
    head = f"median ({scale[0]})" if scale[0] else "median"
    kind = "build" if _by_build(s) else "session"
    rows = [
        f"| # | {kind} | revision | first run | runs | {head} | vs previous | |",
        "|---:|---|---|---|---:|---:|---:|---|",
    ]
    starts = {c.index: c for c in a.changes}
    for i, p in s.points.iterrows():
        med = a.medians[i]
        cell_value = sig(med / scale[1]) if scale[0] else format_value(med, unit, cell=True)
        prev = (med / a.medians[i - 1] - 1) if i and a.medians[i - 1] else None
        mark = ""
        if i in starts:
            c = starts[i]
            mark = f"**change {_pct(c.change)}, {c.direction}**"
        label = p["point"] if p["point"] == p["build"] else f"{p['point']} ({p['build']})"
        rows.append(
            f"| {i + 1} | {_md(label)} | {str(p['revision'])[:12]}"
            f" | {p['first'][:19].replace('T', ' ')} | {p['runs']} | {cell_value}"
            f" | {_pct(prev)} | {mark} |"
        )
    return "\n".join(rows) + "\n"


def _md(text: str) -> str:
    return str(text).replace("|", "\\|")


def slug(s: Series) -> str:
    k = s.key
    raw = f"{k['experiment']}--{k['cell']}--{k['host']}--{k['metric']}--{k['fingerprint'][:6]}"
    return re.sub(r"[^A-Za-z0-9._=-]+", "_", raw)


def figure(s: Series, out: Path) -> Path:
    """The series: every run a dot, each point's median joined, the segments' means as steps,
    a dashed line where it changed, and the noise floor around the newest segment."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from perfpost.analysis.plots import DPI, WIDTH_IN, fit_title, layout_above, legend_below

    a, unit = s.analysis, s.key["unit"]
    scale = axis_unit(unit, a.medians)
    f = scale[1]
    fig, ax = plt.subplots(figsize=(WIDTH_IN, 4.5), dpi=DPI)
    xs = list(range(len(a.builds)))
    handles, labels = [], []
    dots = ax.scatter(
        [i for i, v in enumerate(s.runs) for _ in v],
        [x / f for v in s.runs for x in v],
        s=10,
        color="0.55",
        alpha=0.7,
        zorder=2,
    )
    handles.append(dots)
    labels.append("a run")
    (line,) = ax.plot(xs, [m / f for m in a.medians], "o-", color="C0", lw=1.2, ms=4, zorder=3)
    handles.append(line)
    labels.append("median of the point's runs")
    for j, (lo, hi) in enumerate(a.segments):
        (seg,) = ax.plot(
            [lo - 0.4, hi - 1 + 0.4], [a.segment_means[j] / f] * 2, color="C1", lw=2.2, zorder=4
        )
    if a.segments:
        handles.append(seg)
        labels.append("segment's geometric mean" if a.log_scale else "segment mean")
    for c in a.changes:
        v = ax.axvline(c.index - 0.5, color="C3", ls="--", lw=1.2, zorder=1)
        ax.annotate(
            f"{_pct(c.change)}",
            (c.index - 0.5, 1.0),
            xycoords=("data", "axes fraction"),
            xytext=(3, -12),
            textcoords="offset points",
            color="C3",
            fontsize=8,
        )
    if a.changes:
        handles.append(v)
        labels.append("change point (PELT)")
    if a.floor is not None and a.segments:
        lo, hi = a.segments[-1]
        mean = a.segment_means[-1] / f
        if a.log_scale:
            band = (mean / (1 + a.floor), mean * (1 + a.floor))
        else:
            band = (mean - a.floor * abs(mean), mean + a.floor * abs(mean))
        b = ax.fill_between([lo - 0.4, hi - 1 + 0.4], *band, color="C1", alpha=0.15, lw=0)
        handles.append(b)
        labels.append(f"noise floor, \u00b1{a.floor * 100:.1f}%")
    prefix, ticks = tick_labels(a.builds)
    # At most MAX_TICKS labelled builds (every k-th, and the newest); the others keep a
    # minor tick. Laying out a hundred labels was most of the command's time.
    k = math.ceil(len(xs) / MAX_TICKS)
    shown = sorted({*xs[::k], xs[-1]} - ({xs[-1] - j for j in range(1, k)} if k > 1 else set()))
    ax.set_xticks(shown)
    ax.set_xticklabels([ticks[i] for i in shown])
    if k > 1:
        ax.set_xticks(xs, minor=True)
    ax.set_xlim(-0.6, len(xs) - 0.4)
    what = "build, in the order first measured" if _by_build(s) else "session"
    ax.set_xlabel(f"{what} ({prefix}\u2026)" if prefix else what)
    ylabel = metric_label(s.key["metric"])
    ax.set_ylabel(f"{ylabel} ({scale[0]})" if scale[0] else ylabel)
    ax.grid(axis="y", alpha=0.3)
    fig.suptitle(fit_title(fig, title(s), 11), fontsize=11)
    legend = legend_below(fig, handles, labels, None)
    layout_above(fig, legend.get_window_extent(fig.canvas.get_renderer()).height / fig.dpi + 0.1)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{slug(s)}.png"
    fig.savefig(path)
    plt.close(fig)
    return path


def _by_build(s: Series) -> bool:
    return bool(s.points["point"].equals(s.points["build"]))


def tick_labels(labels: list[str], most: int = 24) -> tuple[str, list[str]]:
    """What tells the points apart: the words every label shares are said once (returned
    first, for the axis' label), and a tail still too long loses its middle, never its end
    (``dd (coreutils) 9.1`` and ``9.2``; ``ozone 2.3.0-SNAPSHOT (...-a1b2c3.tar.gz)``)."""
    shared = ""
    if len(labels) > 1:
        common = labels[0]
        for label in labels[1:]:
            while not label.startswith(common):
                common = common[:-1]
        cut = max(common.rfind(" "), common.rfind("-"), common.rfind("/"))
        shared = common[: cut + 1] if cut >= 3 else ""
    tails = [label[len(shared) :] for label in labels]
    if not all(tails):
        shared, tails = "", list(labels)

    def fit(text: str) -> str:
        if len(text) <= most:
            return text
        keep = most - 1
        return text[: keep // 3] + "\u2026" + text[len(text) - (keep - keep // 3) :]

    return shared.strip(), [fit(t) for t in tails]


def markdown(all_series: list[Series], figures: dict[str, Path] | None = None) -> str:
    """Every series: heading, verdict, table, figure."""
    out = ["# perfpost history\n"]
    for s in all_series:
        k = s.key
        out.append(f"## {title(s)}\n")
        out.append(
            f"Machine {k['fingerprint']}: {s.machine}."
            f" Measurement {k['measurement'] or 'unknown'}.\n"
        )
        out.append(verdict(s) + "\n")
        out.append(table(s))
        fig = (figures or {}).get(slug(s))
        if fig is not None:
            out.append(f"![{title(s)}]({fig.name})\n")
    return "\n".join(out)


def worse(all_series: list[Series]) -> list[Series]:
    return [s for s in all_series if s.analysis.newest_worse]
