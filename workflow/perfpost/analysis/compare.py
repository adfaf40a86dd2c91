"""Comparisons a post may claim: a candidate against a baseline, as numbers and as sentences.

Two kinds, one statistic (:func:`perfpost.analysis.stats.compare_all`):

- declared in an experiment (``compare:``), between cells of one matrix: baseline and
  candidate are filters over the axes, compared within each group of the other axes;
- :func:`compare_tables`, between two runs of the same matrix (``perfpost compare BASE
  CANDIDATE``), cell by cell, as benchstat compares two benchmark outputs.

A claim is made only when the two-sided Mann-Whitney test rejects at 0.05 after Holm's
correction over the comparisons made together (the groups of one ``compare`` entry; the rows
of one ``perfpost compare`` table). The size is the Hodges-Lehmann estimate of the ratio with
the interval from the same test, so a claim never comes with an interval spanning zero. Where
no interval at 95% exists at these n (2 runs against 2, 3 against 3), it says so instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pandas as pd

from perfpost.analysis import stats
from perfpost.analysis.tidy import results
from perfpost.plan import matrix
from perfpost.units import HIGHER_IS_BETTER, format_value, metric_label, rate_scale


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
    control: bool = False  # an A/A control: one configuration measured twice
    floor: Row | None = None  # the A/A control a claim was read against
    base_cells: tuple[str, ...] = ()  # the cells each side's runs came from
    cand_cells: tuple[str, ...] = ()


def _matches(df: pd.DataFrame, labels: Mapping[str, Any]) -> pd.Series:
    """Rows whose axis labels are the ones named: a config value (``1``, ``true``) is read as
    the matrix labels it (:func:`perfpost.plan.matrix.label`), the text the tables hold."""
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
    tidy_df: pd.DataFrame,
    experiment: Mapping[str, Any],
    plot_metrics: Sequence[str],
    better: Mapping[str, bool] | None = None,
) -> list[Row]:
    """Every declared comparison of ``experiment``, per group of its other axes; ``better``:
    whether more is better, by metric, where its unit does not say (a command's count)."""
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
        unit = str(rows["unit"].iloc[0]) if len(rows) else ""
        # Groups from every cell that ran, finished or not: a group whose cells all failed
        # is shown with n = 0, not silently left out.
        sides = tidy_df[_matches(tidy_df, base_f) | _matches(tidy_df, cand_f)]
        keys = sides[by].drop_duplicates() if by else pd.DataFrame([{}])
        groups = []
        for key in keys.itertuples(index=False):
            labels = dict(zip(by, key, strict=True))
            bs, cs = base[_matches(base, labels)], cand[_matches(cand, labels)]
            b = bs["value"].tolist()  # no labels: all of them
            c = cs["value"].tolist()
            groups.append(
                (labels, b, c, tuple(dict.fromkeys(bs["cell"])), tuple(dict.fromkeys(cs["cell"])))
            )
        # The groups of one entry are one family: Holm's correction counts them all.
        hib = (better or {}).get(metric, HIGHER_IS_BETTER.get(unit))
        found = stats.compare_all([(b, c, hib) for _, b, c, _, _ in groups])
        for (labels, b, c, b_cells, c_cells), result in zip(groups, found, strict=True):
            out.append(
                Row(
                    name=name,
                    group=_side_name(labels),
                    metric=metric or "(no metric)",
                    unit=unit,
                    base_values=tuple(b),
                    cand_values=tuple(c),
                    result=result,
                    base_label=_side_name(base_f),
                    cand_label=_side_name(cand_f),
                    control=bool(comp.get("control")),
                    base_cells=b_cells,
                    cand_cells=c_cells,
                )
            )
    return _against_controls(out)


def _against_controls(rows: list[Row]) -> list[Row]:
    """A claimed change that lies inside an A/A control's 95% interval (same metric; its
    group, or its only group) is not a claim: the same configuration, measured twice in the
    same session, moved as much."""
    controls = [r for r in rows if r.control and r.result.ci_low is not None]
    out = []
    for row in rows:
        floor = None
        if not row.control:
            same = [c for c in controls if c.metric == row.metric]
            floor = next((c for c in same if c.group == row.group), None)
            if floor is None and len(same) == 1:
                floor = same[0]
        if floor is not None and row.result.significant:
            low, high = floor.result.ci_low, floor.result.ci_high
            if low is not None and high is not None and low <= row.result.change <= high:
                row = replace(row, result=replace(row.result, verdict=stats.NOISE_FLOOR))
        out.append(replace(row, floor=floor) if floor is not None else row)
    return out


def _pct(x: float | None) -> str:
    return "n/a" if x is None or x != x else f"{x:+.1%}"


def _ci(r: stats.Comparison) -> str:
    return "n/a" if r.ci_low is None else f"{_pct(r.ci_low)} .. {_pct(r.ci_high)}"


def _p(p: float | None) -> str:
    return "n/a" if p is None else f"{p:.2g}"


def _tests(r: stats.Comparison) -> str:
    """The p-value, and the adjusted one when the comparison was one of several."""
    text = f"Mann-Whitney p = {_p(r.p_value)}"
    if r.tests > 1:
        text += f", Holm-adjusted over {r.tests} comparisons p = {_p(r.p_adjusted)}"
    return text


def undetectable(r: stats.Comparison) -> str:
    """What these runs could not have told from no change, each way: a drop and a rise of the
    same interval's half-width on the log scale are different percentages (37% down is 59%
    up), so each direction gets its own bound. Empty where there is no interval."""
    down, up = r.detectable, r.detectable_up
    if down is None or down != down:
        return ""
    if up is None or up != up or f"{up:.1%}" == f"{down:.1%}":
        return f"these runs could not have detected a difference smaller than about {down:.1%}"
    return (
        f"these runs could not have detected a drop smaller than about {down:.1%} "
        f"or a rise smaller than about {up:.1%}"
    )


def sentence(row: Row) -> str:
    """The summary's claim, or its refusal to claim, with the numbers behind it."""
    r = row.result
    where = f" ({row.group})" if row.group else ""
    label = metric_label(row.metric).lower()
    # One prefix for both medians, as the summary's highest and lowest lines have one.
    scale = rate_scale([r.median_cand, r.median_base]) if row.unit == "B/s" else None
    medians = (
        f"median {format_value(r.median_cand, row.unit, scale)} vs "
        f"{format_value(r.median_base, row.unit, scale)}"
    )
    n = f"n = {r.n_cand}/{r.n_base}"
    head = f"{row.name}{where}"
    level = f"{1 - r.alpha:.0%}"
    if r.verdict == stats.TOO_FEW and not (r.n_base and r.n_cand):
        return f"{head}: too few runs to say ({n}): no finished run to compare."
    if r.verdict == stats.IDENTICAL:
        return (
            f"{head}: {label} identical ({n}: every run of both sides "
            f"{format_value(r.median_base, row.unit)}); nothing to test."
        )
    if r.verdict == stats.TOO_FEW and r.tests > 1 and r.p_min <= r.alpha:
        return (
            f"{head}: too few runs to say ({n}: the smallest possible p-value, {_p(r.p_min)}, "
            f"is {_p(r.p_min_adjusted)} at best after Holm's correction over {r.tests} "
            f"comparisons, above {r.alpha:g}); {label} {medians} ({_pct(r.change)})."
        )
    if r.verdict == stats.TOO_FEW:
        return (
            f"{head}: too few runs to say ({n}: the smallest possible p-value is "
            f"{_p(r.p_min)}, above {r.alpha:g}); {label} {medians} ({_pct(r.change)})."
        )
    if row.control:
        return _control_sentence(row, head, label, medians, n)
    floor = ""
    if row.floor is not None:
        f = row.floor.result
        floor = f"; beyond the A/A noise floor ({_pct(f.change)}, {level} CI {_ci(f)})"
    if r.verdict == stats.NOISE_FLOOR and row.floor is not None:
        return (
            f"{head}: {label} changed {_pct(r.change)} ({level} CI {_ci(r)}; {medians}; {n}; "
            f"{_tests(r)}), inside the {level} interval of the A/A control "
            f"({row.floor.name}: {_ci(row.floor.result)}): the same configuration measured "
            "twice moved as much, so this is not claimed."
        )
    if r.verdict == stats.NO_DIFFERENCE:
        excludes = r.ci_low is not None and (r.ci_low > 0 or (r.ci_high or 0) < 0)
        if r.change != r.change:  # a shift over a baseline median of 0: no relative size
            why = "has no relative size: the baseline median is 0"
        elif not excludes:
            why = "spans zero"
        elif r.p_value is not None and r.p_value <= r.alpha:
            why = "excludes zero, but not after Holm's correction"
        else:  # tied values: the normal approximation's p decides
            why = f"excludes zero, but with tied values p is above {r.alpha:g}"
        detect = f"; {undetectable(r)}" if undetectable(r) else ""
        return (
            f"{head}: no significant difference in {label} ({_pct(r.change)}, {level} CI "
            f"{_ci(r)} {why}; {medians}; {n}; {_tests(r)}){detect}."
        )
    if r.verdict in ("better", "worse"):
        word = "faster" if r.verdict == "better" else "slower"
        if row.unit not in ("B/s", "1/s", "s", "ms"):
            word = r.verdict
    else:
        word = r.verdict
    return (
        f"{head}: {abs(r.change):.1%} {word} in {label} ({level} CI {_ci(r)}; {medians}; {n}; "
        f"{_tests(r)}){floor}."
    )


def _control_sentence(row: Row, head: str, label: str, medians: str, n: str) -> str:
    """An A/A control's line: its difference and interval are the noise floor the other
    comparisons are read against; a significant one says the session was not stable."""
    r = row.result
    level = f"{1 - r.alpha:.0%}"
    said = (
        f"{head}, an A/A control (one configuration measured twice): {label} "
        f"{_pct(r.change)} ({level} CI {_ci(r)}; {medians}; {n}; {_tests(r)})"
    )
    if r.ci_low is None:
        return f"{said}; too few runs for a {level} interval, so no noise floor."
    if r.significant:
        return (
            f"{said}: the same configuration measured differently in the same session, so "
            "something besides the axes moved the results; other comparisons inside this "
            "interval are not claimed."
        )
    detect = f"; {undetectable(r)}" if undetectable(r) else ""
    return f"{said}: the noise floor, and a change of this metric inside it is not claimed{detect}."


# The claim first (change, its interval, the verdict and the p it rests on), then what it
# came from: a narrow column keeps these in view and the rest in the tables that continue it.
TABLE_HEADER = [
    "comparison",
    "group",
    "metric",
    "change",
    "95% CI",
    "verdict",
    "p (Holm)",
    "p",
    "n (cand/base)",
    "baseline median",
    "candidate median",
]


def table_row(row: Row) -> list[str]:
    r = row.result
    return [
        row.name,
        row.group or "all",
        metric_label(row.metric),
        _pct(r.change),
        _ci(r),
        r.verdict,
        _p(r.p_adjusted),
        _p(r.p_value),
        f"{r.n_cand}/{r.n_base}",
        format_value(r.median_base, row.unit),
        format_value(r.median_cand, row.unit),
    ]


def compare_tables(
    base: pd.DataFrame, cand: pd.DataFrame, metrics: Sequence[str] | None = None
) -> list[Row]:
    """Cell by cell (pooled over hosts and repeats), every metric both tables have (or those
    named). Each metric's rows are one family for Holm's correction, as benchstat gives each
    metric a table of its own: a question per metric, so asking for every metric answers
    each as asking for it alone would. A metric with one value in every run of both sides is
    in no family (:data:`perfpost.analysis.stats.IDENTICAL`)."""
    b, c = results(base), results(cand)
    keys = ["experiment", "cell", "metric"]
    common = b[keys].drop_duplicates().merge(c[keys].drop_duplicates(), on=keys)
    if metrics:
        common = common[common["metric"].isin(metrics)]
    found = []
    for exp, cell, metric in common.itertuples(index=False):
        bv = b[(b["experiment"] == exp) & (b["cell"] == cell) & (b["metric"] == metric)]
        cv = c[(c["experiment"] == exp) & (c["cell"] == cell) & (c["metric"] == metric)]
        found.append((exp, cell, metric, str(bv["unit"].iloc[0]), bv["value"], cv["value"]))
    compared: list[stats.Comparison | None] = [None] * len(found)
    for metric in dict.fromkeys(f[2] for f in found):
        idx = [i for i, f in enumerate(found) if f[2] == metric]
        family = [(found[i][4], found[i][5], HIGHER_IS_BETTER.get(found[i][3])) for i in idx]
        for i, result in zip(idx, stats.compare_all(family), strict=True):
            compared[i] = result
    return [
        Row(
            name=exp,
            group=cell,
            metric=metric,
            unit=unit,
            base_values=tuple(bv),
            cand_values=tuple(cv),
            result=result,
        )
        for (exp, cell, metric, unit, bv, cv), result in zip(found, compared, strict=True)
    ]


def markdown(rows: Sequence[Row], base_name: str, cand_name: str) -> str:
    """benchstat's table, in markdown: one row per cell and metric, "~" where no claim."""
    lines = [
        f"| experiment | cell | metric | {base_name} | {cand_name} | change | 95% CI | p | "
        "p (Holm) | n |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    identical: dict[str, int] = {}
    for row in rows:
        r = row.result
        if r.verdict == stats.IDENTICAL:
            identical[metric_label(row.metric)] = identical.get(metric_label(row.metric), 0) + 1
            continue
        delta = _pct(r.change) if r.significant else "~"
        lines.append(
            f"| {row.name} | `{row.group}` | {metric_label(row.metric)} | "
            f"{format_value(r.median_base, row.unit)} | {format_value(r.median_cand, row.unit)} | "
            f"{delta} | {_ci(r)} | {_p(r.p_value)} | {_p(r.p_adjusted)} | "
            f"{r.n_base}+{r.n_cand} |"
        )
    tested = max((row.result.tests for row in rows), default=0)
    why = (
        f"p above {stats.ALPHA:g} after Holm's correction over the rows of each metric "
        "with enough runs (one family per metric), or too few runs for any 95% interval"
        if tested
        else "no row has enough runs for any 95% interval"
    )
    lines.append("")
    lines.append(
        f'"~": no claim: {why}. Medians over repeats and hosts. '
        "change: Hodges-Lehmann estimate of candidate / baseline - 1 with its "
        "distribution-free 95% interval; p: two-sided Mann-Whitney U."
    )
    if identical:
        named = ", ".join(identical)
        lines.append("")
        lines.append(
            f"The same value in every run of both sides, so not tested and in no family: "
            f"{named} ({sum(identical.values())} cell and metric pairs)."
        )
    return "\n".join(lines) + "\n"


RECORD_COLUMNS = [
    "comparison",
    "group",
    "metric",
    "unit",
    "n_base",
    "n_cand",
    "median_base",
    "median_cand",
    "change",
    "ci_low",
    "ci_high",
    "ci_level",
    "p_value",
    "p_adjusted",
    "tests",
    "p_min",
    "p_min_adjusted",
    "detectable",
    "detectable_up",
    "method",
    "verdict",
    "control",
]


def as_records(rows: Sequence[Row]) -> list[dict[str, Any]]:
    """The comparisons as data (the post's comparisons.csv), never as formatted text; the
    columns are :data:`RECORD_COLUMNS`."""
    out = []
    for row in rows:
        r = row.result
        fields = {k: getattr(r, k) for k in RECORD_COLUMNS[4:-1]}
        out.append(
            {
                "comparison": row.name,
                "group": row.group,
                "metric": row.metric,
                "unit": row.unit,
                **fields,
                "control": row.control,  # an A/A control: the noise floor, not a claim
            }
        )
    return out
