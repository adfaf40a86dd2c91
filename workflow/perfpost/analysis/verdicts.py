"""A comparison in a reader's words: a claim with its interval and runs ("Ozone: 40% slower
than HDFS with buffer=one-byte (rate; 95% CI 15% to 68%, 5 runs each)"), what is not claimed
and why, a comparison's groups that did not differ in one sentence, a difference of clusters
within how far two starts of one set-up differed, and where the rate and the elapsed time
disagree. The post (:mod:`perfpost.analysis.post`) puts them in order; every
number here is one :mod:`perfpost.analysis.compare` computed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from perfpost.analysis import stats
from perfpost.analysis.compare import Row, undetectable
from perfpost.analysis.design import Finding
from perfpost.units import HIGHER_IS_BETTER, format_value, metric_label

HIGHER = tuple(u for u, up in HIGHER_IS_BETTER.items() if up)  # units of which more is better
COUNTED = ("count",)  # units a claim states as the two counts


def _sides(row: Row) -> tuple[str, str]:
    """The candidate's and the baseline's names as the comparison's own name gives them
    ("Ozone vs HDFS"), else their axis labels."""
    if row.name.count(" vs ") == 1:
        cand, base = row.name.split(" vs ")
        return cand.strip(), base.strip()
    return row.cand_label, row.base_label


def percent(x: float) -> str:
    """A change's size as the posts write it, unsigned: whole percent from 9.5% up, one
    decimal below (a 0.4% difference never reads "0%")."""
    x = abs(x)
    return f"{x:.0%}" if x >= 0.095 else f"{x:.1%}"


def _times(x: float) -> str:
    return f"{x:.1f}" if x < 10 else f"{x:.0f}"


def _runs(r: stats.Comparison) -> str:
    if r.n_base == r.n_cand:
        return f"{r.n_base} runs each"
    return f"{r.n_cand} and {r.n_base} runs"


def capital(text: str) -> str:
    return text[:1].upper() + text[1:] if text and not text.startswith("`") else text


def _words_for(unit: str) -> tuple[str | None, str, str]:
    """A claim's words for a unit: a rate "times as fast", "faster", "slower"; a time "long",
    "longer", "shorter"; anything else only "higher" and "lower" (no "times as")."""
    if unit in HIGHER:
        return "fast", "faster", "slower"
    if unit == "s":
        return "long", "longer", "shorter"
    return None, "higher", "lower"


def claim(row: Row) -> str:
    """A claimed difference in plain words: "Ozone: 40% slower than HDFS with
    buffer=one-byte (rate; 95% CI 15% to 68%, 5 runs each)" (a colon, not "was": a side's
    name may be plural, "6 readers")."""
    r = row.result
    cand, base = _sides(row)
    group = f" with {row.group}" if row.group else ""
    label = metric_label(row.metric).lower()
    if row.unit in COUNTED:
        # A count reads as the two counts, not as a share of one ("100% lower" for 1 -> 0).
        def n(x: float) -> str:
            return format_value(x, "count").strip()

        return (
            f"{capital(cand)}: {n(r.median_cand)} {label} against {n(r.median_base)} with "
            f"{base}{group} (medians; 95% CI of the change {_signed(r.ci_low)} to "
            f"{_signed(r.ci_high)}, {_runs(r)})"
        )
    lo, hi = sorted((r.ci_low, r.ci_high), key=abs)  # type: ignore[arg-type]
    up = r.change > 0
    # A rate and a time say "times as" past a doubling; any other metric in percent.
    as_, more, less = _words_for(row.unit)
    if as_ and r.change >= 1:
        said = f"{_times(1 + r.change)} times as {as_} as {base}"
        ci = f"{_times(1 + lo)} to {_times(1 + hi)} times"
    else:
        said = f"{percent(r.change)} {more if up else less} than {base}"
        ci = f"{percent(lo)} to {percent(hi)}"
    return f"{capital(cand)}: {said}{group} ({label}; 95% CI {ci}, {_runs(r)})"


def _signed(x: float | None) -> str:
    return "n/a" if x is None or x != x else f"{x:+.1%}"


def no_claim(row: Row, detectable: bool = True) -> str:
    """A comparison that claims nothing, saying why in a reader's words; with
    ``detectable``, what these runs could not have detected, where that is why."""
    r = row.result
    cand, base = _sides(row)
    group = f" with {row.group}" if row.group else ""
    label = metric_label(row.metric).lower()
    if r.verdict == stats.TOO_FEW:
        return f"{capital(cand)} against {base}{group}: too few runs to say ({_runs(r)})"
    if r.verdict == stats.IDENTICAL:
        return f"{capital(cand)} and {base}{group} measured the same in every run ({label})"
    if r.verdict == stats.NOISE_FLOOR and row.floor is not None:
        f = row.floor.result
        return (
            f"{capital(cand)} and {base}{group} differed by {_signed(r.change)} in {label}, "
            f"inside the noise floor of the same set-up measured twice ({_signed(f.ci_low)} "
            f"to {_signed(f.ci_high)}): no difference is claimed"
        )
    excludes = r.ci_low is not None and r.ci_high is not None and (r.ci_low > 0 or r.ci_high < 0)
    if excludes and r.tests > 1:
        return (
            f"{capital(cand)} and {base}{group} differed by {_signed(r.change)} in {label} "
            f"(95% CI {_signed(r.ci_low)} to {_signed(r.ci_high)}, {_runs(r)}), but not beyond "
            f"chance once the {r.tests} comparisons made together are counted (Holm's p = "
            f"{r.p_adjusted:.2g}): no difference is claimed"
        )
    bound = undetectable(r) if detectable else None
    return (
        f"{capital(cand)} and {base}{group} did not differ measurably in {label} "
        f"({_signed(r.change)}, 95% CI {_signed(r.ci_low)} to {_signed(r.ci_high)}, "
        f"{_runs(r)})" + (f": {bound}" if bound else "")
    )


def _plainly_no_difference(row: Row) -> bool:
    """Whether :func:`no_claim` says of ``row`` only that it did not differ measurably (not
    too few runs, not identical, not inside a noise floor, not lost to Holm's correction)."""
    r = row.result
    if r.significant or r.verdict in (stats.TOO_FEW, stats.IDENTICAL):
        return False
    if r.verdict == stats.NOISE_FLOOR and row.floor is not None:
        return False
    excludes = r.ci_low is not None and r.ci_high is not None and (r.ci_low > 0 or r.ci_high < 0)
    return not (excludes and r.tests > 1)


def _about(values: Sequence[float]) -> str:
    lo, hi = min(values), max(values)
    return f"{lo:.0%}" if f"{lo:.0%}" == f"{hi:.0%}" else f"{lo:.0%} to {hi:.0%}"


def no_difference(rows: Sequence[Row]) -> str:
    """One comparison's groups that all did not differ measurably, in one sentence: each
    group's change and interval, the runs once where every group had as many, and the range
    of what these runs could not have detected (each way), instead of one such sentence a
    group."""
    if len(rows) == 1:
        return no_claim(rows[0])
    cand, base = _sides(rows[0])
    label = metric_label(rows[0].metric).lower()
    runs = {_runs(r.result) for r in rows}
    each = [
        f"with {r.group} ({_signed(r.result.change)}, 95% CI {_signed(r.result.ci_low)} to "
        f"{_signed(r.result.ci_high)}" + ("" if len(runs) == 1 else f", {_runs(r.result)}") + ")"
        for r in rows
    ]
    listed = ", ".join(each[:-1]) + f" or {each[-1]}"
    text = f"{capital(cand)} and {base} did not differ measurably in {label} {listed}"
    if len(runs) == 1:
        text += f", {runs.pop()}"
    down = [x for r in rows if (x := r.result.detectable) is not None and x == x]
    up = [x for r in rows if (x := r.result.detectable_up) is not None and x == x]
    if len(down) == len(rows):
        if len(up) == len(rows) and _about(up) != _about(down):
            text += (
                f": these runs could not have detected a drop smaller than about {_about(down)} "
                f"or a rise smaller than about {_about(up)}"
            )
        else:
            text += (
                f": these runs could not have detected a difference smaller than about "
                f"{_about(down)}"
            )
    return text


def families(rows: Sequence[Row]) -> list[list[Row]]:
    """``rows`` in order, those of one comparison (its name, metric and sides) that plainly
    did not differ gathered where the first of them stands; every other row alone."""
    out: list[list[Row]] = []
    at: dict[tuple[str, str, tuple[str, str]], list[Row]] = {}
    for row in rows:
        if not row.group or not _plainly_no_difference(row):
            out.append([row])
            continue
        key = (row.name, row.metric, _sides(row))
        if key in at:
            at[key].append(row)
        else:
            at[key] = [row]
            out.append(at[key])
    return out


def plain(row: Row) -> str:
    """A comparison's outcome in one short sentence, for a page's description: no interval,
    no run counts (the post gives them)."""
    r = row.result
    cand, base = _sides(row)
    group = f" with {row.group}" if row.group else ""
    if not r.significant:
        return f"No difference shown between {cand} and {base}{group}"
    text = claim(row)
    return text[: text.rfind(" (")]


def plain_none(rows: Sequence[Row]) -> str:
    """A comparison's groups that all did not differ (:func:`no_difference`), for a page's
    description: which, without the numbers ("Ozone and HDFS did not differ measurably in rate
    with buffer=default or with buffer=one-byte")."""
    if len(rows) == 1:
        return plain(rows[0])
    cand, base = _sides(rows[0])
    label = metric_label(rows[0].metric).lower()
    where = (
        f"with {rows[0].group} or with {rows[1].group}"
        if len(rows) == 2
        else f"in any of the {len(rows)} settings compared"
    )
    return f"{capital(cand)} and {base} did not differ measurably in {label} {where}"


def _change_words(rows: Sequence[Row]) -> str:
    """The range of several claimed changes of one direction in a claim's words: "43% to 52%
    faster than 1", "2.3 to 3.1 times as fast as 4k"."""
    _, base = _sides(rows[0])
    unit = rows[0].unit
    up = rows[0].result.change > 0
    as_, more, less = _words_for(unit)
    changes = sorted(r.result.change for r in rows)
    lo, hi = (changes[0], changes[-1]) if up else (changes[-1], changes[0])
    if as_ and lo >= 1:
        return f"{_times(1 + lo)} to {_times(1 + hi)} times as {as_} as {base}"
    if as_ and hi >= 1:
        return f"{percent(lo)} {more} to {_times(1 + hi)} times as {as_} as {base}"
    return f"{percent(lo)} to {percent(hi)} {more if up else less} than {base}"


def summed(claimed: Sequence[Row], compared: Sequence[Row]) -> list[str]:
    """The claims of a conclusion, a comparison's claimed groups of one direction in one
    sentence ("1M buffer: 2.3 to 3.1 times as fast as 4k in 5 of 6 settings"), with the
    settings they share where they share one ("both with cache=hot"), or both named where
    there are two ("with size=1k and size=1M"); a lone claim as
    :func:`plain` says it. ``compared``: every group of the comparisons, to count from."""
    groups: dict[tuple[str, str], int] = {}
    for r in compared:
        groups[(r.name, r.metric)] = groups.get((r.name, r.metric), 0) + 1
    gathered: dict[tuple[str, str, bool], list[Row]] = {}
    for r in claimed:
        gathered.setdefault((r.name, r.metric, r.result.change > 0), []).append(r)
    out = []
    for (name, metric, _), rows in gathered.items():
        if len(rows) == 1 or not all(r.group for r in rows):
            out += [plain(r) for r in rows]
            continue
        cand, _base = _sides(rows[0])
        n, k = groups[(name, metric)], len(rows)
        # Two groups named in the order of the range ("36% faster to 8.5 times as fast ...
        # with size=1M and size=1k, respectively").
        by_size = sorted(rows, key=lambda r: abs(r.result.change))
        where = (
            f"with {by_size[0].group} and {by_size[1].group}, respectively"
            if k == n == 2
            else f"in all {n} settings"
            if k == n
            else f"in {k} of {n} settings"
        )
        shared = [
            s for s in rows[0].group.split(", ") if all(s in r.group.split(", ") for r in rows)
        ]
        if shared and k < n:
            where += f", {'both' if k == 2 else 'all'} with {', '.join(shared)}"
        out.append(f"{capital(cand)}: {_change_words(rows)} {where}")
    return out


def control(row: Row) -> str:
    """An A/A control's sentence: the noise floor the claims are read against."""
    r = row.result
    cand, base = _sides(row)
    if r.ci_low is None:
        return f"The same set-up measured twice ({cand}, {base}): too few runs for a noise floor"
    if r.significant:
        return (
            f"The same set-up measured twice ({cand} against {base}) differed by "
            f"{_signed(r.change)} (95% CI {_signed(r.ci_low)} to {_signed(r.ci_high)}): "
            "something besides the settings moved the results in this session"
        )
    return (
        f"The same set-up measured twice ({cand} against {base}) differed by "
        f"{_signed(r.change)} (95% CI {_signed(r.ci_low)} to {_signed(r.ci_high)}, "
        f"{_runs(r)}): the noise floor, inside which nothing is claimed"
    )


def not_compared(row: Row, f: Finding) -> str:
    """A comparison a setting that did not take effect voids: both sides ran the same set-up,
    so what lies between them is two runs of one thing, said as such."""
    r = row.result
    cand, base = _sides(row)
    group = f" with {row.group}" if row.group else ""
    between = (
        f" (the {_signed(r.change)} between them, 95% CI {_signed(r.ci_low)} to "
        f"{_signed(r.ci_high)}, is one set-up measured on two cluster starts)"
        if r.ci_low is not None and r.significant
        else ""
    )
    return f"{capital(cand)} against {base}{group}: not compared, {f.short}{between}"


# -- a difference of clusters within how far two starts of one set-up differed -------------


def distance(change: float) -> float:
    """How far a change lies from none, as a ratio either way (+100% and -50% alike)."""
    return math.inf if change <= -1 else abs(math.log1p(change))


def within_starts(row: Row, spread: float) -> bool:
    """Whether a claimed change could be its two cluster starts' rather than the clusters':
    its interval's end nearest no change is no farther from it than ``spread``, how far two
    starts of one set-up differed (a change, either way). A difference of clusters stands
    only where its whole interval lies beyond the starts'."""
    r = row.result
    ends = [x for x in (r.ci_low, r.ci_high) if x is not None and x == x] or [r.change]
    return min(distance(x) for x in ends) <= distance(spread)


def starts_clause(spread: float) -> str:
    """Why a claim :func:`within_starts` is not the clusters' difference, after the claim."""
    return (
        f"within the {percent(spread)} by which two starts of one set-up differed here, so not "
        "shown to be the clusters' difference"
    )


# -- when the rate and the elapsed time disagree --------------------------------------------


def _disagreeing(rows: Sequence[Row], other: Sequence[Row]) -> list[tuple[Row, Row]]:
    """The pairs (a comparison on its metric, the same on the elapsed time) whose verdicts
    differ: one claims and the other does not, or they claim opposite ways."""
    out = []
    for a, b in zip(rows, other, strict=False):
        if a.control or a.group != b.group or a.name != b.name:
            continue
        va, vb = a.result.verdict, b.result.verdict
        if {va, vb} & {stats.TOO_FEW, stats.IDENTICAL}:
            continue
        # "better" and "worse" already read each metric its own way (a higher rate, a
        # shorter time): the same verdict is agreement.
        if a.result.significant == b.result.significant and (not a.result.significant or va == vb):
            continue
        out.append((a, b))
    return out


def elapsed_claims(rows: Sequence[Row], other: Sequence[Row]) -> list[str]:
    """What the elapsed time claims where the metric did not (for a conclusion): "Ozone:
    72% longer than HDFS with buffer=default"."""
    return [plain(b) for a, b in _disagreeing(rows, other) if b.result.significant]


def disagreements(
    rows: Sequence[Row], other: Sequence[Row], tidy_df: pd.DataFrame, why_metric: str | None
) -> list[str]:
    """The comparisons whose verdict on the run's elapsed time (``other``, the same
    comparisons on that metric) differs from the verdict on their own metric, in one sentence
    (a list of it, empty where none differs) whatever the comparisons and groups: the verdicts
    on the elapsed time, and the start-up (``why_metric``) each side took, which the elapsed
    time holds and the rate does not."""
    done = tidy_df[tidy_df["status"] == "done"]
    found: dict[str, list[tuple[str, str, str]]] = {}  # comparison -> its groups' verdicts
    for a, b in _disagreeing(rows, other):
        # Beside the metric's own verdict, the interval says enough: no detectable bound.
        shown_b = claim(b) if b.result.significant else no_claim(b, detectable=False)
        why = ""
        if why_metric:
            cand, base = _sides(a)
            med = []
            for cells in (a.cand_cells, a.base_cells):
                x = done[(done["metric"] == why_metric) & done["cell"].isin(cells)]["value"]
                med.append(float(x.median()) if len(x) else math.nan)
            if all(m == m for m in med):
                # "Ozone 6.1 s, HDFS 4.2 s": a side named by a phrase ("on the data disk")
                # reads as well as one named by a word, where "2.59 s for on the data disk"
                # did not.
                why = f"{cand} {format_value(med[0], 's')}, {base} {format_value(med[1], 's')}"
        found.setdefault(a.name, []).append((shown_b, why, a.group))
    if not found:
        return []
    said = [x for each in found.values() for x in each]
    # Each group's start-ups named by their group where one comparison has several.
    whys = [
        w + (f" with {g}" if g and len(found[n]) > 1 else "")
        for n, each in found.items()
        for _, w, g in each
        if w
    ]
    return [
        f"On elapsed time the verdict differs: {'; '.join(v for v, _, _ in said)}. The "
        "elapsed time holds the client's start-up, which the rate leaves out."
        # Named before its numbers: "leaves out: Ozone 5.08 s" read as elapsed times.
        + (f" Start-up (medians): {'; '.join(whys)}." if whys else "")
    ]
