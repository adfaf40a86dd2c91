"""Provisioning as the rules see it: one rule per tool cache, each outcome a file named
after the install it makes, made again when it failed or its install is gone; and the
outcomes a cell waits for (only those it uses)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from perfpost import paths
from perfpost.plan.model import Plan


def cell_needs(plan: Plan, experiment: str, hosts: list[str], cell: str | None = None) -> list[str]:
    """The provisioning outcomes a cell needs: its tool's runtime (freon on localhost), its
    own clusters' and the agent's. Only what the cell uses: a runtime that cannot be
    provisioned fails its cells, not its neighbours'."""
    markers = {plan.provisioned_marker(experiment, h) for h in hosts} - {None}
    markers |= set(plan.cluster_markers(experiment, cell))
    markers |= set(plan.instrument_markers(experiment))
    return [provision_outcome(m) for m in sorted(markers)]


def cell_tools(plan: Plan, experiment: str, hosts: list[str], cell: str | None = None) -> list[Any]:
    """The provisioning outcomes a cell waits for: those it needs (:func:`cell_needs`), and
    for a cell against a cluster every cluster cell's too, so all of them are ready at once
    and their priorities alone order them, a configuration at a time: one waiting for its
    own tool let the next configuration's cells run while its cluster, shared with them,
    stayed up (the quiet host). It waits for the others but does not need them: a failed one
    fails only its own cells (the cell checks :func:`cell_needs`). Marked ancient:
    provisioning again, or a newer install, is no reason to re-run finished cells."""
    from snakemake.io import ancient

    outcomes = set(cell_needs(plan, experiment, hosts, cell))
    exp = plan.experiments[experiment]
    if cell is not None and exp.cluster_specs.get(cell):
        outcomes |= {provision_outcome(m) for m in _every_cluster_cells_markers(plan)}
    return [ancient(o) for o in sorted(outcomes)]


def _every_cluster_cells_markers(plan: Plan) -> set[str]:
    cached = getattr(plan, "_cluster_markers_all", None)
    if cached is None:
        cached = set()
        for name, exp in plan.experiments.items():
            if not exp.cluster_specs:
                continue
            cached |= {plan.provisioned_marker(name, h) for h in exp.hosts} - {None}
            cached |= set(plan.cluster_markers(name))
            cached |= set(plan.instrument_markers(name))
        plan._cluster_markers_all = cached  # type: ignore[attr-defined]
    return cached


def _cache_tag(cache: str | Path) -> str:
    import hashlib

    return hashlib.sha256(str(cache).encode()).hexdigest()[:8]


def provision_outcome(marker: str) -> str:
    """The outcome file of the provisioning that leaves ``marker``
    (<cache>/<tool>-<version>/COMPLETE-<pom>; no runtime's name has a dash)."""
    m = Path(marker)
    tool, version = m.parent.name.split("-", 1)
    pom = m.name.split("-", 1)[1]
    return paths.fill(
        paths.PROVISION, tool=tool, version=version, pom=pom, cache=_cache_tag(m.parents[1])
    )


def provision_rules(plan: Plan) -> list[tuple[str, str]]:
    """(output pattern, cache) of each provisioning rule, one per cache the config names
    (the tools may share one)."""
    from perfpost import provision

    # The default cache is always one: runtimes no experiment configures live there.
    caches = {provision.cache_dir(None)}
    caches |= {provision.cache_dir(plan.tools.get(t, {}).get("cache")) for t in plan.tools}
    out = []
    for c in sorted(caches):
        pattern = paths.PROVISION.replace("{cache}", _cache_tag(c))
        out.append((pattern, str(c)))
    return out


def provision_again_param(cache: str) -> Any:
    """The provisioning rule's ``again`` param for the rules of ``cache``."""

    def again(wildcards: Any, output: Any) -> str:
        return provision_again(output[0], cache, wildcards)

    return again


def provision_again(outcome: str, cache: str, wildcards: Any) -> str:
    """A param of the provisioning rule that changes when its outcome must be made again
    (Snakemake re-runs a job whose params changed): after a failure, and when the install it
    made is gone. Empty otherwise, as it was when the first outcome was made."""
    try:
        said = json.loads(Path(outcome).read_text())
    except (OSError, ValueError):
        return ""
    if said.get("status") == "failed":
        return f"failed at {os.stat(outcome).st_mtime_ns}"
    from perfpost import provision

    home = Path(cache) / f"{wildcards.tool}-{wildcards.version}"
    if not (home / f"{provision.COMPLETE}-{wildcards.pom}").exists():
        return "install gone"
    return ""


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
