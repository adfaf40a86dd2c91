"""The post's "Inside the client" section: what an instrumented JVM spent in each call.

From the tidy rows an agent's counts became (``write.call``, ``write.time``, ...): one row per
instrumented cell, in the shape of the HCFS post's table (the cell's axes, then calls and time
in each op), and the agent's own cost from the cells run with and without it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from perfpost import instrument, records
from perfpost.analysis import stats
from perfpost.units import format_seconds, sig

# The order a reader expects: the output stream's ops as an application calls them, then the
# input stream's; any other op (a user's rule) after them, by name.
OP_ORDER = ("write", "hflush", "hsync", "close", "read", "pread", "input-close")
RULE_TEXT = {
    "output": "`output` (the Hadoop FileSystem output stream: `write`, `hsync`, `hflush`, `close`)",
    "input": "`input` (the Hadoop FileSystem input stream: `read`, `pread`, `input-close`)",
}
# The same, as the post's set-up says it in a line.
RULE_CALLS = {
    "output": "the output stream's `write`, `hsync`, `hflush` and `close`",
    "input": "the input stream's `read`, `pread` and `close`",
}
COST_METRIC = "wall_time"
SET_OPS = {
    "output": ("write", "hsync", "hflush", "close"),
    "input": ("read", "pread", "input-close"),
}


def _ops(df: pd.DataFrame) -> list[str]:
    found = {m[: -len(".call")] for m in df["metric"].unique() if m.endswith(".call")}
    found = {op for op in found if f"{op}.time" in set(df["metric"])}
    return [o for o in OP_ORDER if o in found] + sorted(found - set(OP_ORDER))


def _is_off(experiment: Mapping[str, Any], label: str) -> bool:
    value = experiment["axes"].get(instrument.AXIS, {})
    if isinstance(value, Mapping):
        return not value.get(label)
    return label == instrument.OFF


def _labels(experiment: Mapping[str, Any]) -> list[Any]:
    value = experiment["axes"].get(instrument.AXIS, {})
    return list(value) if isinstance(value, Mapping | list | tuple) else [value]


def section(tidy_df: pd.DataFrame, experiment: Mapping[str, Any]) -> dict[str, Any] | None:
    """The section's content, or None when the experiment instruments nothing."""
    if instrument.AXIS not in experiment["axes"] or instrument.AXIS not in tidy_df.columns:
        return None
    done = tidy_df[tidy_df["status"] == records.DONE]
    hosts = list(experiment["hosts"])
    others = [a for a in experiment["axes"] if a != instrument.AXIS]
    by = [*others, instrument.AXIS, *(["host"] if len(hosts) > 1 else [])]
    ops = _ops(done)
    rules = _rules(experiment)
    out: dict[str, Any] = {
        "rules": [RULE_TEXT.get(r, f"`{r}`") for r in rules],
        "calls": " and ".join(RULE_CALLS.get(r, f"the `{r}` rules' calls") for r in rules),
        "ops": ops,
        "header": [*[a for a in by if a != instrument.AXIS], "runs"]
        + [h for op in ops for h in (f"{op} calls", f"{op} time")]
        + ["wall time"],
        "rows": [],
        "cost": [],
        # Ops a shipped rule set counts that the client never called: no column, said so.
        "uncalled": [o for r in rules for o in SET_OPS.get(r, ()) if o not in ops],
        "most": None,
        # Whether any cell ran without the agent: only then is its cost measured.
        "without": any(_is_off(experiment, str(label)) for label in _labels(experiment)),
    }
    if done.empty:
        return out
    # Every cell in the order the matrix lists it, instrumented ones in the table.
    order = done[by].drop_duplicates().itertuples(index=False)
    most: list[tuple[str, float, str]] = []  # per instrumented cell: op, its time, the cell
    groups = {tuple(k): g for k, g in done.groupby(by, sort=False)}
    for key in order:
        key = tuple(key)
        g = groups[key]
        labels = dict(zip(by, key, strict=True))
        if _is_off(experiment, str(labels[instrument.AXIS])):
            continue
        medians = g.groupby("metric")["value"].median()
        runs = g[g["metric"] == COST_METRIC]["repeat"].nunique()
        row = [str(labels[a]) for a in by if a != instrument.AXIS] + [str(runs)]
        for op in ops:
            calls, time = medians.get(f"{op}.call"), medians.get(f"{op}.time")
            row.append(sig(float(calls)) if calls is not None else "n/a")
            row.append(format_seconds(float(time)) if time is not None else "n/a")
        wall = medians.get(COST_METRIC)
        row.append(format_seconds(float(wall)) if wall is not None else "n/a")
        out["rows"].append(row)
        times = {op: float(medians[f"{op}.time"]) for op in ops if f"{op}.time" in medians}
        if times:
            top = max(times, key=lambda op: times[op])
            name = ", ".join(f"{a}={labels[a]}" for a in by if a != instrument.AXIS)
            most.append((top, times[top], name or "all runs"))
    out["cost"] = _cost(done, experiment, by)
    if most:
        tops = {op for op, _, _ in most}
        if len(tops) == 1:
            op = tops.pop()
            peak = max(most, key=lambda m: m[1])
            out["most"] = (
                f"`{op}` took the most time in every instrumented cell (up to "
                f"{format_seconds(peak[1])}, {peak[2]}, summed over threads)"
            )
        else:
            out["most"] = "the most time went to " + "; ".join(
                f"`{op}` in {name} ({format_seconds(t)})" for op, t, name in most
            )
    return out


def _rules(experiment: Mapping[str, Any]) -> list[str]:
    axis = experiment["axes"].get(instrument.AXIS, {})
    names: list[str] = []
    for value in axis.values() if isinstance(axis, Mapping) else []:
        for name in value or []:
            if name not in names:
                names.append(name)
    return names


def _cost(done: pd.DataFrame, experiment: Mapping[str, Any], by: list[str]) -> list[dict]:
    """Each cell run both ways: its wall times with the agent against those without, as the
    ratio of medians and the Hodges-Lehmann ratio with its 95% interval (when the runs allow
    one), all of one experiment one family for Holm's correction."""
    wall = done[done["metric"] == COST_METRIC]
    rest = [a for a in by if a != instrument.AXIS]
    pairs = []
    for key, g in wall.groupby(rest, sort=False) if rest else [((), wall)]:
        key = key if isinstance(key, tuple) else (key,)
        labels = {
            str(lab): g[g[instrument.AXIS] == lab]["value"].tolist()
            for lab in g[instrument.AXIS].unique()
        }
        offs = [lab for lab in labels if _is_off(experiment, lab)]
        ons = [lab for lab in labels if not _is_off(experiment, lab)]
        for off in offs:
            for on in ons:
                name = ", ".join(f"{a}={v}" for a, v in zip(rest, key, strict=True))
                pairs.append((name or "all runs", on, labels[off], labels[on]))
    if not pairs:
        return []
    compared = stats.compare_all([(off, on, False) for _, _, off, on in pairs])
    out = []
    for (name, on, off_runs, on_runs), c in zip(pairs, compared, strict=True):
        m_off, m_on = float(np.median(off_runs)), float(np.median(on_runs))
        interval = (
            f"{1 + c.ci_low:.2f}x .. {1 + c.ci_high:.2f}x"
            if c.ci_low is not None and c.ci_high is not None
            else None
        )
        out.append(
            {
                "cell": name,
                "label": on,
                "with": format_seconds(m_on),
                "without": format_seconds(m_off),
                "n_with": len(on_runs),
                "n_without": len(off_runs),
                "ratio": f"{m_on / m_off:.2f}x" if m_off > 0 else "n/a",
                "hl": f"{1 + c.change:.2f}x" if c.change == c.change else "n/a",
                "interval": interval,
                "verdict": c.verdict,
            }
        )
    return out
