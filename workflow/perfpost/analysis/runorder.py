"""The order the runs were made in, as the post states it: the plan's (plan.order) and what
``cells.csv`` says happened, each host's runs sorted by their start."""

from __future__ import annotations

import itertools
import json
import math
import statistics
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from perfpost import paths
from perfpost.plan import order as plan_order
from perfpost.units import counted


def made(cells: pd.DataFrame) -> dict[str, list[tuple[str, int]]]:
    """Each host's runs, (cell, repeat), in the order they started; a run retried keeps its
    place in the order of its first attempt."""
    timed = cells.dropna(subset=["start"])
    out: dict[str, list[tuple[str, int]]] = {}
    for host, rows in timed.groupby("host", sort=True):
        rows = rows.assign(t=pd.to_datetime(rows["start"], utc=True, format="ISO8601"))
        first = rows.sort_values("t", kind="stable").drop_duplicates(["cell", "repeat"])
        out[str(host)] = [
            (str(c), int(r)) for c, r in zip(first["cell"], first["repeat"], strict=True)
        ]
    return out


def _switches(seq: list[tuple[str, int]]) -> int:
    return sum(a[0] != b[0] for a, b in itertools.pairwise(seq))


def restart_cost(starts: list[Mapping[str, Any]]) -> str:
    """What the restarts cost: each cluster start's time from start to ready."""
    took = []
    for c in starts:
        try:
            a = pd.Timestamp(c["started"])
            b = pd.Timestamp(c["ready"])
        except (KeyError, TypeError, ValueError):
            continue
        took.append((b - a).total_seconds())
    if not took:
        return ""
    took.sort()
    mid = statistics.median(took)
    spread = (
        f"each {mid:.0f} s"
        if took[0] == took[-1]
        else f"median {mid:.0f} s (from {took[0]:.0f} to {took[-1]:.0f} s)"
    )
    return (
        f" Each restart cost a cluster start: {len(took)} starts, {spread} from start to"
        " ready (state.json's times, to the second), none of it inside a measured step."
    )


def sentence(
    experiment: Mapping[str, Any],
    cells: pd.DataFrame,
    starts: list[Mapping[str, Any]] | None = None,
) -> str:
    """What was planned, and how closely the runs kept to it; for clusters, how they were
    kept (``starts``: each cluster start's ``started`` and ``ready``)."""
    order = experiment.get("order")
    said = plan_order.describe(order)
    kept_how = experiment.get("cluster_order")
    if kept_how:
        said += " " + plan_order.describe_clusters(
            kept_how["mode"], kept_how["why"], kept_how["configs"]
        )
        if kept_how["mode"] == plan_order.RESTARTS:
            said += restart_cost(starts or [])
    by_host = made(cells)
    if not by_host:
        return said
    if order is None:
        runs = sum(len(s) for s in by_host.values())
        switches = sum(_switches(s) for s in by_host.values())
        fewest = sum(max(0, len({c for c, _ in s}) - 1) for s in by_host.values())
        return (
            f"{said} In the order they started, the {runs} runs moved from one cell to another "
            f"{counted(switches, 'time')} (cell after cell: {fewest}); `order: interleaved` "
            "alternates them."
        )
    precision = experiment.get("precision")
    most = int(precision["max"]) if precision else int(experiment["repeats"])
    planned = plan_order.sequence(order, experiment["order_cells"], most)
    kept = sum(plan_order.followed(planned, s) for s in by_host.values())
    runs = sum(len(s) for s in by_host.values())
    where = f" on each of {len(by_host)} hosts" if len(by_host) > 1 else ""
    return (
        f"{said} In the order they started{where}, {kept} of the {runs} runs came where the "
        "plan put them (`start` in the data)."
    )


def state_slack(stamp: str) -> float:
    """How long after a cluster's noted stop it may still have been stopping: its state
    gives times to the millisecond (an older perfpost's to the second, so a run within a
    second of that stop may have met its last moments)."""
    return 0.001 if "." in stamp else 1.0


def cluster_lifetimes(root: Path = Path()) -> list[dict[str, Any]]:
    """Every cluster start perfpost made in this directory's results, with its hosts and the
    span from the start's beginning to the end of its stop (still up: to now)."""
    out = []
    # Every start of every cluster: the glob is the pattern's, under the clusters' folder
    # (a "*" in the folder's own path would be taken as a name).
    for state_file in sorted((root / paths.CLUSTERS_DIR).glob("*/start-*/state.json")):
        try:
            state = json.loads(state_file.read_text())
            spec = state["deployment"]["spec"]
            t0 = pd.Timestamp(state["started"]).timestamp()
        except (OSError, ValueError, KeyError, TypeError):
            continue
        stopped = state.get("stopped")
        t1 = pd.Timestamp(stopped).timestamp() + state_slack(stopped) if stopped else math.inf
        hosts = sorted({h for hs in spec.get("roles", {}).values() for h in hs})
        out.append(
            {
                "ref": f"{state_file.parent.parent.name}/{state_file.parent.name}",
                "name": spec.get("name", ""),
                "shared": bool(spec.get("shared")),
                "hosts": hosts,
                "from": t0,
                "to": t1,
            }
        )
    return out


def others_up(
    cells: pd.DataFrame, lifetimes: list[dict[str, Any]]
) -> dict[tuple[str, str, int], list[str]]:
    """(cell, host, repeat) -> the clusters the run did not use that were starting, up or
    stopping on its host while it measured (a ``shared`` cluster may be up)."""
    out: dict[tuple[str, str, int], list[str]] = {}
    timed = cells[cells["status"] == "done"].dropna(subset=["start", "end"])
    for r in timed.itertuples(index=False):
        mine = set(str(getattr(r, "clusters", "") or "").split())
        t0 = pd.Timestamp(r.start).timestamp()
        t1 = pd.Timestamp(r.end).timestamp()
        found = [
            c["name"]
            for c in lifetimes
            if c["ref"] not in mine
            and not c["shared"]
            and str(r.host) in c["hosts"]
            and c["from"] < t1
            and t0 < c["to"]
        ]
        said = getattr(r, "others_up", None)
        if isinstance(said, str) and said:  # what the run's own record found
            found += [x.split(" (")[0] for x in said.split("; ")]
        if found:
            out[(str(r.cell), str(r.host), int(r.repeat))] = sorted(set(found))
    return out


def design_sentence(
    experiment: Mapping[str, Any],
    cells: pd.DataFrame,
    up: dict[tuple[str, str, int], list[str]],
    overlap_most: int,
) -> str:
    """How the runs were made, in one sentence for the post: runs a cell, the order, and
    what else was up on the hosts while they measured (from the records and the clusters'
    times)."""
    done = cells[cells["status"] == "done"]
    per = done.groupby("cell").size()
    n_cells = cells["cell"].nunique()
    if per.empty:
        runs = "no run finished"
    elif per.min() == per.max():
        runs = f"{per.min()} run" + ("s" if per.min() != 1 else "")
    else:
        runs = f"{per.min()} to {per.max()} runs"
    order = experiment.get("order")
    how = (
        "in the workflow's own order"
        if order is None
        else "back to back"
        if order == plan_order.BACK_TO_BACK
        else "interleaved"
    )
    hosts = sorted(set(map(str, cells["host"])))
    where = ", ".join(f"`{h}`" for h in hosts)
    alone = "one at a time" if overlap_most <= 1 else f"up to {overlap_most} at once"
    if up:
        names = sorted({n for v in up.values() for n in v})
        quiet = (
            f"{len(up)} of {len(done)} runs measured while a cluster they did not use was up on "
            f"their host ({', '.join(names)}; see the caveats)"
        )
    else:
        quiet = "no other cluster was starting, up or stopping on its host while a run measured"
    each = f"Each of the {n_cells} cells" if n_cells != 1 else "The one cell"
    return f"{each} ran {runs}, {how}, measuring {alone} on {where}; {quiet}."
