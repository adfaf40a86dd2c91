"""Comparisons a post may claim: a candidate against a baseline, as numbers and as sentences.

Two kinds, one statistic (:func:`perfpost.stats.compare`):

- declared in an experiment (``compare:``), between cells of one matrix: baseline and
  candidate are filters over the axes, compared within each group of the other axes;
- :func:`compare_tables`, between two runs of the same matrix (``perfpost compare BASE
  CANDIDATE``), cell by cell, as benchstat compares two benchmark outputs.

A claim is made only when the 95% interval of the relative difference excludes zero; with
fewer than :data:`perfpost.stats.MIN_RUNS` runs a side it says so instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from perfpost import matrix, stats
from perfpost.tidy import results
from perfpost.units import format_bytes, format_seconds, metric_label, rate_scale, sig


@dataclass(frozen=True)
class Row:
    """One comparison in one group: what the summary sentence and the table row say."""

    name: str
    group: str  # "size=1024", or "" when pooled
    metric: str
    unit: str
    base_values: tuple[float, ...]
    cand_values: tuple[float, ...]
    result: stats.Comparison
    base_label: str = "baseline"
    cand_label: str = "candidate"


def _matches(df: pd.DataFrame, labels: Mapping[str, Any]) -> pd.Series:
    """Rows whose axis labels are the ones named: a config value (``1``, ``true``) is read as
    the matrix labels it (:func:`perfpost.matrix.label`), the text the tables hold."""
    mask = pd.Series(True, index=df.index)
    for axis, value in labels.items():
        mask &= df[axis].astype(str) == matrix.label(value)
    return mask


def _side_name(labels: Mapping[str, Any]) -> str:
    return ", ".join(f"{a}={v}" for a, v in labels.items())


def default_metric(tidy_df: pd.DataFrame, plot_metrics: Sequence[str]) -> str | None:
    present = set(results(tidy_df)["metric"])
    return next((m for m in plot_metrics if m in present), None)


def experiment_comparisons(
    tidy_df: pd.DataFrame, experiment: Mapping[str, Any], plot_metrics: Sequence[str]
) -> list[Row]:
    """Every declared comparison of ``experiment``, per group of its other axes."""
    done = results(tidy_df)
    axes = list(experiment["axes"])
    out: list[Row] = []
    for comp in experiment.get("compare", []):
        base_f, cand_f = comp["baseline"], comp["candidate"]
        name = comp.get("name") or f"{_side_name(cand_f)} vs {_side_name(base_f)}"
        metric = comp.get("metric") or default_metric(tidy_df, plot_metrics)
        by = comp.get("by")
        if by is None:
            by = [a for a in axes if a not in base_f and a not in cand_f]
        rows = done[done["metric"] == metric] if metric else done.iloc[0:0]
        base, cand = rows[_matches(rows, base_f)], rows[_matches(rows, cand_f)]
        # Groups from every cell that ran, finished or not: a group whose cells all failed
        # is shown with n = 0, not silently left out.
        sides = tidy_df[_matches(tidy_df, base_f) | _matches(tidy_df, cand_f)]
        keys = sides[by].drop_duplicates() if by else pd.DataFrame([{}])
        for key in keys.itertuples(index=False):
            labels = dict(zip(by, key, strict=True))
            b = base[_matches(base, labels)]["value"].tolist()  # no labels: all of them
            c = cand[_matches(cand, labels)]["value"].tolist()
            unit = str(rows["unit"].iloc[0]) if len(rows) else ""
            out.append(
                Row(
                    name=name,
                    group=_side_name(labels),
                    metric=metric or "(no metric)",
                    unit=unit,
                    base_values=tuple(b),
                    cand_values=tuple(c),
                    result=stats.compare(b, c, stats.HIGHER_IS_BETTER.get(unit)),
                    base_label=_side_name(base_f),
                    cand_label=_side_name(cand_f),
                )
            )
    return out


def fmt_value(value: float, unit: str, scale: tuple[str, float] | None = None) -> str:
    """A value in the unit a reader expects (MB/s, ops/s, s, bytes)."""
    if value != value:  # NaN
        return "n/a"
    if unit == "B/s":
        name, factor = scale or rate_scale([value])
        return f"{sig(value / factor)} {name}"
    if unit == "B":
        return format_bytes(value)
    if unit == "s":
        return format_seconds(value)
    if unit == "1/s":
        return f"{sig(value)} ops/s"
    if unit in ("count", ""):
        return sig(value)
    return f"{sig(value)} {unit}"


def _pct(x: float | None) -> str:
    return "n/a" if x is None or x != x else f"{x:+.1%}"


def _ci(r: stats.Comparison) -> str:
    return "n/a" if r.ci_low is None else f"{_pct(r.ci_low)} .. {_pct(r.ci_high)}"


def _p(r: stats.Comparison) -> str:
    return "n/a" if r.p_value is None else f"{r.p_value:.2g}"


def sentence(row: Row) -> str:
    """The summary's claim, or its refusal to claim, with the numbers behind it."""
    r = row.result
    where = f" ({row.group})" if row.group else ""
    label = metric_label(row.metric).lower()
    medians = f"median {fmt_value(r.median_cand, row.unit)} vs {fmt_value(r.median_base, row.unit)}"
    n = f"n = {r.n_cand}/{r.n_base}"
    head = f"{row.name}{where}"
    if r.verdict == "too few runs to say" and not (r.n_base and r.n_cand):
        return f"{head}: too few runs to say ({n}): no finished run to compare."
    if r.verdict == "too few runs to say":
        return (
            f"{head}: too few runs to say ({n}; at least {stats.MIN_RUNS} a side needed); "
            f"{label} {medians} ({_pct(r.diff)})."
        )
    if r.verdict == "no significant difference":
        return (
            f"{head}: no significant difference in {label} ({medians}, {_pct(r.diff)}; "
            f"95% CI {_ci(r)} spans zero; {n}; Mann-Whitney p = {_p(r)})."
        )
    if r.verdict in ("better", "worse"):
        word = "faster" if r.verdict == "better" else "slower"
        if row.unit not in ("B/s", "1/s", "s", "ms"):
            word = r.verdict
    else:
        word = r.verdict
    return (
        f"{head}: {abs(r.diff):.1%} {word} in {label} ({medians}; 95% CI {_ci(r)}; {n}; "
        f"Mann-Whitney p = {_p(r)})."
    )


TABLE_HEADER = [
    "comparison",
    "group",
    "metric",
    "baseline median",
    "candidate median",
    "difference",
    "95% CI",
    "n (cand/base)",
    "p",
    "verdict",
]


def table_row(row: Row) -> list[str]:
    r = row.result
    return [
        row.name,
        row.group or "all",
        metric_label(row.metric),
        fmt_value(r.median_base, row.unit),
        fmt_value(r.median_cand, row.unit),
        _pct(r.diff),
        _ci(r),
        f"{r.n_cand}/{r.n_base}",
        _p(r),
        r.verdict,
    ]


def compare_tables(
    base: pd.DataFrame, cand: pd.DataFrame, metrics: Sequence[str] | None = None
) -> list[Row]:
    """Cell by cell (pooled over hosts and repeats), every metric both tables have."""
    b, c = results(base), results(cand)
    keys = ["experiment", "cell", "metric"]
    common = b[keys].drop_duplicates().merge(c[keys].drop_duplicates(), on=keys)
    if metrics:
        common = common[common["metric"].isin(metrics)]
    out = []
    for exp, cell, metric in common.itertuples(index=False):
        bv = b[(b["experiment"] == exp) & (b["cell"] == cell) & (b["metric"] == metric)]
        cv = c[(c["experiment"] == exp) & (c["cell"] == cell) & (c["metric"] == metric)]
        unit = str(bv["unit"].iloc[0])
        out.append(
            Row(
                name=exp,
                group=cell,
                metric=metric,
                unit=unit,
                base_values=tuple(bv["value"]),
                cand_values=tuple(cv["value"]),
                result=stats.compare(bv["value"], cv["value"], stats.HIGHER_IS_BETTER.get(unit)),
            )
        )
    return out


def markdown(rows: Sequence[Row], base_name: str, cand_name: str) -> str:
    """benchstat's table, in markdown: one row per cell and metric, "~" where no claim."""
    lines = [
        f"| experiment | cell | metric | {base_name} | {cand_name} | delta | 95% CI | p | n |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        r = row.result
        delta = _pct(r.diff) if r.significant else "~"
        lines.append(
            f"| {row.name} | `{row.group}` | {metric_label(row.metric)} | "
            f"{fmt_value(r.median_base, row.unit)} | {fmt_value(r.median_cand, row.unit)} | "
            f"{delta} | {_ci(r)} | {_p(r)} | {r.n_base}+{r.n_cand} |"
        )
    lines.append("")
    lines.append(
        f'"~": no significant difference (the 95% interval spans zero) or fewer than '
        f"{stats.MIN_RUNS} runs a side. Medians over repeats and hosts; p from Mann-Whitney U."
    )
    return "\n".join(lines) + "\n"


def as_records(rows: Sequence[Row]) -> list[dict[str, Any]]:
    """The comparisons as data (the post's comparisons.csv), never as formatted text."""
    return [
        {
            "comparison": row.name,
            "group": row.group,
            "metric": row.metric,
            "unit": row.unit,
            "n_base": row.result.n_base,
            "n_cand": row.result.n_cand,
            "median_base": row.result.median_base,
            "median_cand": row.result.median_cand,
            "diff": row.result.diff,
            "ci_low": row.result.ci_low,
            "ci_high": row.result.ci_high,
            "p_value": row.result.p_value,
            "verdict": row.result.verdict,
        }
        for row in rows
    ]
