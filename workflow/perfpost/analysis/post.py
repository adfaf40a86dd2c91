"""The post a reader wants, in the shape of the reference posts: the question, the answer
first (in plain words, with its interval and its runs), how it was run (hosts, versions,
disks, the commands as a person types them), one table of the compared metric, the figures
that carry the answer, the caveats, a conclusion. Everything else (the statistics' method,
every run, resources, validity in full, environments, logs) is the notebook beside it
(:mod:`perfpost.analysis.report` renders both).

Sentences here are built from the comparisons (each in words by
:mod:`perfpost.analysis.verdicts`), the design checks (:mod:`perfpost.analysis.design`) and the
tables; none restates a number another module did not compute.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from perfpost.analysis.compare import Row
from perfpost.analysis.design import Finding
from perfpost.analysis.verdicts import (
    capital,
    claim,
    control,
    distance,
    families,
    no_claim,
    no_difference,
    not_compared,
    percent,
    plain,
    plain_none,
    starts_clause,
    summed,
    within_starts,
)
from perfpost.units import (
    counted,
    format_bytes,
    format_value,
    listed,
    metric_label,
    rate_scale,
    sig,
)

MAX_ANSWERS = 4  # comparison sentences the answer gives; the table has them all


# -- the answer ------------------------------------------------------------------------------


def undermined_by(
    row: Row, findings: Sequence[Finding], on_disk: Mapping[str, bool] | None = None
) -> Finding | None:
    """The first design finding that undermines a cell on either side of ``row``: any
    comparison resting on it, or (a finding of ``placement`` scope) one whose sides put their
    data in different places (``on_disk``: per cell, whether its data went to a disk), or (of
    ``one side`` scope) one whose sides are not both among its cells."""
    mine = set(row.base_cells) | set(row.cand_cells)
    for f in findings:
        if not f.undermines or not mine & set(f.cells):
            continue
        if f.scope == "one side" and mine <= set(f.cells):
            continue  # both sides on the one device the finding is about: the caveat says it
        if f.scope == "placement":
            where = on_disk or {}
            sides = {where.get(c) for c in row.base_cells}, {where.get(c) for c in row.cand_cells}
            if sides[0] == sides[1]:
                continue  # both sides' data in the same kind of place: the caveat says it
        return f
    return None


def _across(row: Row, starts: Mapping[str, set[str]]) -> bool:
    """Whether a comparison's sides ran on different cluster starts (``starts``: per cell)."""
    base = set().union(*(starts.get(c, set()) for c in row.base_cells))
    cand = set().union(*(starts.get(c, set()) for c in row.cand_cells))
    return bool(base) and bool(cand) and not base & cand


def answer(
    rows: Sequence[Row],
    findings: Sequence[Finding],
    fallback: Sequence[str],
    on_disk: Mapping[str, bool] | None = None,
    starts: Mapping[str, set[str]] | None = None,
) -> dict[str, Any]:
    """The post's answer: what the comparisons say in plain words, claims first, then those a
    design check undermines, each with why; where every comparison is undermined, why this
    machine cannot answer the question comes first of all. ``fallback``: the sentences of an
    experiment that declared no comparison. Where two starts of one set-up differed (a
    setting that did not take effect), a claimed difference between sides on different
    cluster starts (``starts``: each cell's) that lies within it is not claimed: it could be
    the starts'."""
    sound: list[tuple[str, int]] = []  # a sentence and the comparisons it speaks for
    # A weak line, the design check's reason it is weak ("" where the line says why itself),
    # and the comparisons it speaks for: the reason is said where the lead does not say it.
    weak: list[tuple[str, str, int]] = []
    controls: list[str] = []
    said_findings: list[Finding] = []
    # Claims first, then the rest, each in the order the config declared them.
    ordered = sorted(rows, key=lambda r: (r.control, not r.result.significant))
    plain_no: list[Row] = []
    claimed: list[Row] = []  # claimed and no design check undermines them
    tempered: list[Row] = []  # claimed, but within how far two cluster starts differed
    # The design finding that undermines each comparison, found once for every use below.
    voids = {id(r): undermined_by(r, findings, on_disk) for r in rows}
    # The comparisons a setting that did not take effect voided: both sides ran one set-up.
    one_setup = {id(r) for r in rows if getattr(voids[id(r)], "ran", None)}
    # How far apart one set-up's two cluster starts measured, the farthest.
    ran_twice = [
        r.result.change
        for r in rows
        if not r.control and r.result.significant and id(r) in one_setup
    ]
    widest = max(ran_twice, key=distance, default=None)
    for row in ordered:
        f = None if row.control else voids[id(row)]
        if row.control:
            controls.append(control(row))
        elif f is not None:
            if f not in said_findings:
                said_findings.append(f)
            if f.ran:  # a setting that did not take effect: the sides ran one set-up
                weak.append((not_compared(row, f), "", 1))
            else:
                text = claim(row) if row.result.significant else no_claim(row)
                weak.append((text, f.short or "see the caveats", 1))
        elif (
            row.result.significant
            and widest is not None
            and _across(row, starts or {})
            and within_starts(row, widest)
        ):
            weak.append((f"{claim(row)}; {starts_clause(widest)}", "", 1))
            tempered.append(row)
        elif row.result.significant:
            sound.append((claim(row), 1))
            claimed.append(row)
        else:
            plain_no.append(row)
    # A comparison's groups that did not differ are one sentence, not one a group.
    gathered = families(plain_no)
    sound += [(no_difference(family), len(family)) for family in gathered]
    compared = [r for r in rows if not r.control]
    # Nothing stands: the reason first, then what the runs measured.
    # (A claim within how far two starts differed is no design check's: it is said, not this.)
    stands = sound or tempered
    cannot = [f.headline or f.caveat for f in said_findings] if compared and not stands else []
    # Where the lead gives every weak line's reason, no line says it again.
    reasoned = [(f"{t}; {why}" if why and not cannot else t, n) for t, why, n in weak]
    shown = [*sound, *reasoned][:MAX_ANSWERS]
    lines = [text for text, _ in shown]
    more = sum(n for _, n in sound) + sum(n for _, n in reasoned) - sum(n for _, n in shown)
    lines += controls[:1]
    if not rows:
        lines = list(fallback)
    # What could not be answered beside what could.
    unanswered = [f.headline for f in said_findings if f.headline] if stands else []
    lead = next((r for r in [*claimed, *ordered] if not r.control), None)
    if lead is not None:
        f = voids[id(lead)]
        family = next((x for x in gathered if lead in x), [lead])
        if f is not None and f.ran:  # not compared: "no difference shown" would be a verdict
            description = not_compared(lead, f)
        else:
            description = plain_none(family) + (f"; {f.short}" if f is not None and f.short else "")
        if lead in tempered and widest is not None:
            description += f"; {starts_clause(widest)}"
    else:
        description = lines[0] if lines else ""
    return {
        "undermining": said_findings,
        "claims": summed(claimed, compared),
        "claimed": len(claimed),
        "start_spread": abs(widest) if widest is not None else None,
        "tempered": [plain(r) for r in tempered],
        # The groups the post does not claim for a reason other than the runs: their figures
        # mark a claimed difference in black (:func:`figures_shown`).
        "unshown": [(r.name, r.group) for r in rows if voids[id(r)] is not None or r in tempered],
        "compared": len(compared),
        # Of those, the ones that showed no difference and nothing undermines.
        "no_difference": len(plain_no),
        # Of those, the ones a setting that did not take effect left uncompared.
        "voided": sum(1 for r in compared if id(r) in one_setup),
        "label": metric_label(compared[0].metric).lower() if compared else "",
        # How small a difference those could have told apart: an undermined or uncompared
        # comparison's floor is no floor of what these runs measured.
        "floors": [
            r.result.detectable
            for r in plain_no
            if r.result.detectable == r.result.detectable and r.result.detectable is not None
        ],
        "cannot": [capital(c) for c in cannot],
        "unanswered": [c[:1].lower() + c[1:] if not c.startswith("`") else c for c in unanswered],
        "lines": [x.rstrip(".") + "." for x in lines],
        "more": more,
        # The cells the answer's first comparison rests on: the commands the post shows.
        "lead_cells": [*lead.base_cells, *lead.cand_cells] if lead is not None else [],
        # The front matter's description (search results, link previews): the answer itself.
        "description": description.replace("`", "").rstrip(".") + ".",
    }


def axis_effects(summary: pd.DataFrame, axes: Sequence[str], metric: str) -> list[str]:
    """For an experiment that declared no comparison: per axis, how much the median moved
    from its first value to its last, the other axes held (the median of those ratios, and
    their range). Descriptive: no claim, no interval."""
    sub = summary[summary["metric"] == metric]
    if sub.empty:
        return []
    unit = str(sub["unit"].iloc[0])
    label = metric_label(metric).lower()
    out = []
    varied = [a for a in axes if len(set(sub[a])) > 1]
    for a in varied:
        values = list(dict.fromkeys(sub[a]))
        first, last = values[0], values[-1]
        others = [x for x in varied if x != a]
        ratios = []
        if others:
            for _, g in sub.groupby(others, sort=False):
                lo = g[g[a] == first]["median"]
                hi = g[g[a] == last]["median"]
                if len(lo) and len(hi) and float(lo.iloc[0]) > 0:
                    ratios.append(float(hi.iloc[0]) / float(lo.iloc[0]))
        else:
            lo = sub[sub[a] == first]["median"]
            hi = sub[sub[a] == last]["median"]
            if len(lo) and len(hi) and float(lo.iloc[0]) > 0:
                ratios.append(float(hi.iloc[0]) / float(lo.iloc[0]))
        if not ratios:
            continue
        mid = float(np.median(ratios))
        spread = (
            f" (the median of {len(ratios)} settings of the other axes, from "
            f"{sig(min(ratios), 2)} to {sig(max(ratios), 2)} times)"
            if len(ratios) > 1
            else ""
        )
        # Worded so that a metric's name reads the same singular or plural ("syscalls").
        out.append(f"Median {label} at {a}={last}: {sig(mid, 2)} times that at {a}={first}{spread}")
    best = sub["median"].idxmin() if unit == "s" else sub["median"].idxmax()
    hi = sub.loc[best]
    name = ", ".join(f"{a}={hi[a]}" for a in varied or axes)
    scale = rate_scale([float(hi["median"])]) if unit == "B/s" else None
    word = "shortest" if unit == "s" else "highest"
    runs = counted(int(hi["n"]), "run")
    value = format_value(float(hi["median"]), unit, scale)
    out.insert(
        0,
        # One cell has no highest, and a cell of no axes no name.
        f"Median {label}: {value} ({runs})"
        if len(sub) == 1
        else f"{capital(word)} median {label}: {value} ({name}, {runs})",
    )
    return out


def figures_shown(
    figures: Sequence[Mapping[str, Any]],
    rows: Sequence[Row],
    said: Mapping[str, Any],
    metric: str | None,
) -> list[Mapping[str, Any]]:
    """The figures that carry the answer (``said``, :func:`answer`'s): the metric's, and each
    comparison's but those whose every group is not claimed for a reason other than the runs:
    a design check voids it (a setting that did not take effect compares a set-up with
    itself; a cache called a disk, memory with that cache) or it is a difference of clusters
    within how far two starts of one set-up differed. Their figure marks a claimed difference
    in black, which the post does not claim; the notebook has them."""
    unshown = set(said.get("unshown") or [])
    voided: dict[str, bool] = {}
    for r in rows:
        gone = (r.name, r.group) in unshown
        voided[r.name] = voided.get(r.name, True) and gone
    void = {name for name, gone in voided.items() if gone}
    return [
        f
        for f in figures
        if (f.get("comparison") and f["comparison"] not in void)
        or (f.get("metric") == metric and "comparison" not in f)
    ]


# -- how it was run ----------------------------------------------------------------------


def host_line(host: str, env: Mapping[str, Any] | None, roles: Sequence[str]) -> str:
    """One host as the set-up names it: its roles, CPU, memory, OS and disks."""
    what = f"`{host}` ({', '.join(roles)})" if roles else f"`{host}`"
    if not env or env.get("error"):
        return f"{what}: not described (its environment was not captured)"
    cpu = env.get("cpu") or {}
    cores = cpu.get("threads") or cpu.get("cores")
    parts = [f"{cpu.get('model', 'an unknown CPU')}" + (f", {cores} cores" if cores else "")]
    if env.get("memory_bytes"):
        parts.append(f"{env['memory_bytes'] / 2**30:.0f} GiB")
    if env.get("os"):
        kernel = str(env.get("kernel") or "").split()
        if kernel and kernel[0] == "Linux":
            kernel = kernel[1:2]  # "Linux 6.1.0-18-amd64 x86_64": the release
        parts.append(f"{env['os']}" + (f", Linux {kernel[0]}" if kernel else ""))
    disks = []
    for d in env.get("disks") or []:
        how = d.get("transport") or ("virtio" if str(d.get("name", "")).startswith("vd") else "")
        kind = "reports itself a spinning disk" if d.get("rotational") else "solid state"
        disks.append(
            f"{d['name']} ({format_bytes(d.get('size_bytes') or float('nan'))}"
            + (f", {how}" if how else "")
            + f", {kind})"
        )
    if disks:
        parts.append("disk " + ", ".join(disks))
    return f"{what}: " + "; ".join(parts)


def cluster_line(c: Mapping[str, Any]) -> str:
    """A cluster as the set-up names it: kind, version, roles on hosts."""
    if c.get("error"):
        return f"`{c.get('ref')}`: not described ({c['error']})"
    kind = {"hdfs": "HDFS", "yarn": "YARN", "ozone": "Ozone"}.get(c["kind"], c["kind"])
    version = str(c.get("version") or "").strip().splitlines()
    first = version[0].strip() if version else ""
    release = first.split("(")[0].replace("Hadoop", "").strip() if first else ""
    # Ozone's OMs or SCMs as a ring (OM HA, SCM HA): its service id, as clients name it.
    site = (c.get("site") or {}) if c["kind"] == "ozone" else {}
    rings = {r: site.get(f"ozone.{r}.service.ids") for r in ("om", "scm")}
    roles = "; ".join(
        f"{role} on {hosts}"
        + (f" ({role.upper()} HA, service id `{rings[role]}`)" if rings.get(role) else "")
        for role, hosts in c["roles"].items()
    )
    build = f", build `{c['build']}`" if c.get("build") else ""
    # Daemons started under a command (strace, perf stat): said, since it changes them.
    under = "".join(
        f"; {'every daemon' if role == 'all' else f'the {role}s'} started under `{text}`"
        for role, text in (c.get("prefix") or {}).items()
    )
    return f"{kind} {release}{build} `{c['name']}` ({roles}{under})"


def cluster_lines(clusters: Sequence[Mapping[str, Any]]) -> list[str]:
    """The clusters as the set-up names them, each configuration once: several starts of
    one (a configuration per cell, from an axis) are said together."""
    out: dict[str, list[str]] = {}
    for c in clusters:
        out.setdefault(cluster_line(c), []).append(str(c.get("ref")))
    return [
        line + (f", started {len(refs)} times, a configuration a cell" if len(refs) > 1 else "")
        for line, refs in out.items()
    ]


def _steps(steps: Sequence[Mapping[str, Any]]) -> str:
    said = []
    for step in steps:
        text = f"python `{step['python']}`" if "python" in step else f"`{step['run']}`"
        said.append(text + (" (as root)" if step.get("sudo") else ""))
    return "; ".join(said)


def setup_lines(setups: Sequence[Mapping[str, Any]]) -> list[str]:
    """What perfpost did to the hosts before the runs and after them: one sentence for each
    set of steps, its hosts named, and where a step failed, where."""
    groups: dict[str, tuple[Mapping[str, Any], list[str], list[str]]] = {}
    for s in setups:
        key = repr(sorted((k, repr(v)) for k, v in (s.get("steps") or {}).items()))
        steps, hosts, failed = groups.setdefault(key, (s.get("steps") or {}, [], []))
        if s.get("host") and s["host"] not in hosts:
            hosts.append(s["host"])
        for d in [*(s.get("setup") or []), *(s.get("teardown") or [])]:
            if d.get("exit") != 0 and f"{d['phase']} on `{d['host']}`" not in failed:
                failed.append(f"{d['phase']} on `{d['host']}`")
    out = []
    for steps, hosts, failed in groups.values():
        were = "was" if len(hosts) == 1 else "were"
        line = f"{listed([f'`{h}`' for h in hosts])} {were} set up by perfpost before the runs"
        if steps.get("setup"):
            line += f" with {_steps(steps['setup'])}"
        if steps.get("teardown"):
            line += f", and restored after them with {_steps(steps['teardown'])}"
        if failed:
            line += f" (failed: {', '.join(failed)}; see the notebook)"
        out.append(line)
    return out


def changed_settings(clusters: Sequence[Mapping[str, Any]]) -> list[str]:
    """The settings the config changed from the release's defaults, each key once: one
    value, or "set per cell" where the clusters' values differ (an axis fills them). A key
    several clusters share at one value is said once, with their names."""
    values: dict[tuple[str, str], dict[str, list[str]]] = {}
    for c in clusters:
        for k in c.get("changed") or []:
            if k.get("configured"):
                where = (str(k["key"]), str(k.get("side") or ""))
                values.setdefault(where, {}).setdefault(str(c.get("name")), []).append(
                    str(k["value"])
                )
    out = []
    for (key, side), by_name in values.items():
        distinct = {name: list(dict.fromkeys(vals)) for name, vals in by_name.items()}
        shared = {v for vals in distinct.values() for v in vals}
        groups = [list(distinct)] if len(shared) == 1 else [[name] for name in distinct]
        for names in groups:
            # A key the config gave one side alone says which: the rest reached both.
            whose = ", ".join(f"`{name}`" for name in names) + (f", {side} only" if side else "")
            vals = distinct[names[0]]
            if len(vals) == 1:
                out.append(f"`{key}={vals[0]}` ({whose})")
            else:
                out.append(f"`{key}`, set per cell from its axes ({whose})")
    return out


def one_side_only(clusters: Sequence[Mapping[str, Any]]) -> bool:
    """Whether the config gave any changed key to one side alone (daemons or clients)."""
    return any(
        k.get("configured") and k.get("side") for c in clusters for k in c.get("changed") or []
    )


# -- the results table -----------------------------------------------------------------


def results_table(
    tidy_df: pd.DataFrame,
    axes: Sequence[str],
    metric: str,
    labels: Mapping[str, str],
    covers: tuple[str, str, str] | None = None,
) -> dict[str, Any]:
    """One table of the compared metric: per cell, its runs, median, min .. max and, for a
    rate over part of a run (``covers``: its operations, the run's operations, its time), what
    the rate covers, so it reconciles with the run's totals."""
    done = tidy_df[tidy_df["status"] == "done"]
    sub = done[done["metric"] == metric]
    if sub.empty:
        return {"header": [], "rows": []}
    unit = str(sub["unit"].iloc[0])
    scale = rate_scale(sub["value"].tolist()) if unit == "B/s" else None
    shown = scale[0] if scale else {"1/s": "ops/s", "s": "", "count": ""}.get(unit, unit)
    header = [
        "cell",
        "runs",
        f"{metric_label(metric)} median" + (f" ({shown})" if shown else ""),
        "min .. max",
    ]
    if covers:
        header.append("the rate covers (medians)")
    rows = []
    for cell, g in sub.groupby("cell", sort=False):
        v = g["value"]
        row = [
            f"`{labels.get(str(cell), str(cell))}`",
            str(len(v)),
            format_value(float(v.median()), unit, scale, cell=True),
            f"{format_value(float(v.min()), unit, scale, cell=True)} .. "
            f"{format_value(float(v.max()), unit, scale, cell=True)}",
        ]
        if covers:
            ops, total, time = covers
            c = done[done["cell"] == cell]

            def med(m: str, c: pd.DataFrame = c) -> float:
                x = c[c["metric"] == m]["value"]
                return float(x.median()) if len(x) else math.nan

            def count(x: float) -> str:
                """A median of counts: whole, or halfway between two (176.5)."""
                return f"{x:,.0f}" if x == int(x) else f"{x:,.1f}"

            row.append(
                f"{count(med(ops))} of {count(med(total))} operations in "
                f"{format_value(med(time), 's')}"
            )
        rows.append(row)
    return {"header": header, "rows": rows}


# -- the conclusion ----------------------------------------------------------------------


def conclusion(
    said: Mapping[str, Any], findings: Sequence[Finding], experiment: Mapping[str, Any]
) -> str:
    """The post's last word: the author's (``conclusion:`` in the config) where given; else
    what the runs show and, where a design check undermines them, what would answer the
    question instead."""
    if experiment.get("conclusion"):
        return " ".join(str(experiment["conclusion"]).split())
    undermining = list(said.get("undermining") or [])
    remedies = list(dict.fromkeys(f.remedy for f in undermining if f.remedy))
    what_would = (
        " To answer it, run the same config with " + "; or with ".join(remedies) + "."
        if remedies
        else ""
    )
    if undermining and said.get("cannot"):
        return (
            "As run here, this experiment does not answer its question: "
            + "; ".join(dict.fromkeys(f.check.lower() for f in undermining))
            + f" (see the caveats).{what_would}"
        )
    lines = said.get("lines") or []
    if not lines:
        return "No run finished, so there is nothing to conclude."
    claims = said.get("claims") or []
    caveats = (
        " Read it with the caveats above." if [f for f in findings if not f.undermines] else ""
    )
    if said.get("elapsed"):
        # What the elapsed time claimed where the rate did not: said above, and here too, so
        # that "no difference" is not read as the whole answer.
        caveats = (
            " On the elapsed time, which holds the client's start-up: "
            + "; ".join(said["elapsed"])
            + "."
            + caveats
        )
    unanswered = (
        f" Not answered here: {'; '.join(said['unanswered'])}.{what_would}"
        if said.get("unanswered")
        else ""
    )
    tempered = said.get("tempered") or []
    if claims or tempered:
        # The rest were undermined or left uncompared: said in the answer, not counted here.
        others = said.get("no_difference", 0)
        more = (
            " The other comparison showed no difference these runs could tell."
            if others == 1
            else f" The other {others} comparisons showed no difference these runs could tell."
            if others > 1
            else ""
        )
        spread = percent(said["start_spread"]) if said.get("start_spread") else ""
        starts = (
            f" One set-up measured on two cluster starts differed by {spread}: a comparison "
            "of clusters can move by as much from one start to the next, so only a difference "
            "well beyond it is the clusters'."
            if spread and not tempered
            else ""
        )
        if tempered:  # claimed, but within that: said as such, with what would answer it
            it = "it" if len(tempered) == 1 else "them"
            starts = (
                f" {'. '.join(tempered)}, within the {spread} by which one set-up measured on "
                f"two cluster starts differed: these runs do not show {it} to be the clusters' "
                "difference; several starts of each cluster would."
            )
        said_claims = f"{'. '.join(c.rstrip('.') for c in claims)}." if claims else ""
        return f"{said_claims}{more}{starts}{unanswered}{caveats}".strip()
    if said.get("compared"):
        floors = said.get("floors") or []
        lo, hi = (f"{min(floors):.0%}", f"{max(floors):.0%}") if floors else ("", "")
        floor = (
            " (these runs could not have told apart differences smaller than about "
            + (lo if lo == hi else f"{lo} to {hi}")
            + ")"
            if floors
            else ""
        )
        # Where the elapsed time claimed what the metric did not, the metric is named.
        of = f" in {said['label']}" if said.get("elapsed") and said.get("label") else ""
        # Only the comparisons that showed no difference count: one a setting voided was not
        # made, and one a design check undermines showed nothing either way.
        n = said.get("no_difference", 0)
        left_out = said["compared"] - n
        which = "The one comparison" if n == 1 else f"None of the {n} comparisons"
        made = (
            ""
            if not left_out
            else " made"
            if left_out == said.get("voided", 0)
            else " that nothing undermines"
        )
        return (
            f"{which}{made} showed {'no' if n == 1 else 'a'} difference{of} at these numbers "
            f"of runs{floor}: more runs a cell, or a quieter machine, would tell smaller "
            f"differences apart.{unanswered}{caveats}"
        )
    return f"{lines[0].rstrip('.')}.{caveats}"
