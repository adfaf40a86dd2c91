"""Provisioning as the rules see it: one rule, each outcome a file named after the install
it makes (not after its cache), made again by the next cell that needs it when it failed or
its install is not where the config wants it (:func:`perfpost.provision.failed_outcomes`);
and the outcomes a cell waits for (only those it uses)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from perfpost.errors import PerfpostError
from perfpost.plan.model import Plan
from perfpost.provision import outcome_path as provision_outcome


def cell_needs(plan: Plan, experiment: str, hosts: list[str], cell: str | None = None) -> list[str]:
    """The installs a cell needs, by their markers: its tool's runtime (freon on localhost),
    its own clusters' and the agent's. Only what the cell uses: a runtime that cannot be
    provisioned fails its cells, not its neighbours'."""
    markers = {plan.provisioned_marker(experiment, h) for h in hosts} - {None}
    markers |= set(plan.cluster_markers(experiment, cell))
    markers |= set(plan.instrument_markers(experiment))
    return sorted(markers)


def cell_tools(plan: Plan, experiment: str, hosts: list[str], cell: str | None = None) -> list[Any]:
    """The provisioning outcomes a cell waits for: those it needs (:func:`cell_needs`), and
    for a cell against a cluster every cluster cell's too, so all of them are ready at once
    and their priorities alone order them, a configuration at a time: one waiting for its
    own tool let the next configuration's cells run while its cluster, shared with them,
    stayed up (the quiet host). It waits for the others but does not need them: a failed one
    fails only its own cells (the cell checks :func:`cell_needs`). Marked ancient:
    provisioning again, or a newer install, is no reason to re-run finished cells."""
    from snakemake.io import ancient

    outcomes = {provision_outcome(m) for m in cell_needs(plan, experiment, hosts, cell)}
    exp = plan.experiments[experiment]
    if cell is not None and exp.cluster_specs.get(cell):
        outcomes |= {provision_outcome(m) for m in _markers(plan, clusters_only=True)}
    return [ancient(o) for o in sorted(outcomes)]


def _markers(plan: Plan, clusters_only: bool = False) -> set[str]:
    """The install markers of every experiment's cells (of those against a cluster only)."""
    key = "_cluster_markers_all" if clusters_only else "_markers_all"
    cached = getattr(plan, key, None)
    if cached is None:
        cached = set()
        for name, exp in plan.experiments.items():
            if clusters_only and not exp.cluster_specs:
                continue
            cached |= set(cell_needs(plan, name, exp.hosts))
        setattr(plan, key, cached)
    return cached


def outcome_caches(markers: set[str] | list[str]) -> dict[str, str]:
    """The cache each outcome's install goes into, by outcome: the one its marker names. A
    runtime has one cache in a config (``tools.<runtime>.cache``), so two for one outcome
    are an error of perfpost's own."""
    out: dict[str, str] = {}
    for m in sorted(markers):
        outcome, cache = provision_outcome(m), str(Path(m).parents[1])
        if out.setdefault(outcome, cache) != cache:
            raise PerfpostError(f"{outcome} is wanted in two caches: {out[outcome]} and {cache}")
    return out


def provision_cache(plan: Plan) -> Any:
    """The provisioning rule's ``cache`` param: where its outcome's install goes (the
    default cache for one no cell of the config names). A function of ``output``, so one
    Snakemake does not record: a recorded param that changed (the cache at another path)
    would run the job again, and hide every cell after it that run (see
    :func:`perfpost.provision.failed_outcomes`); the cells provision it there instead."""
    from perfpost import provision

    caches: list[dict[str, str]] = []  # worked out at the first job, not as the rules load

    def cache(wildcards: Any, output: Any) -> str:
        if not caches:
            caches.append(outcome_caches(_markers(plan)))
        return caches[0].get(str(output[0]), str(provision.cache_dir(None)))

    return cache


def provisioned_names() -> str:
    """A wildcard pattern for the runtimes the tools have perfpost provision."""
    return "|".join(re.escape(n) for n in sorted(runtimes()))


def runtimes() -> dict[str, Any]:
    """Everything perfpost can provision, by name: the tools' runtimes and the clusters'."""
    from perfpost import clusters, instrument, tools

    out = dict(tools.runtimes())
    out[instrument.RUNTIME.name] = instrument.RUNTIME
    for kind in clusters.NAMES:
        runtime = clusters.get(kind).RUNTIME
        out[runtime.name] = runtime
    return out
