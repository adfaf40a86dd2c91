"""The clusters a cell runs against, from the config's ``clusters:``: each configuration with
the cell's axis values filled in, roles completed and hosts checked (:func:`cluster_spec`), and,
for interleaved runs, whether their configurations fit up side by side (:func:`cluster_order`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from perfpost import builds, clusters
from perfpost.clusters.base import ClusterSpec
from perfpost.errors import ConfigError
from perfpost.hostenv import LOCALHOST
from perfpost.plan import matrix
from perfpost.plan import order as order_
from perfpost.plan.model import Experiment
from perfpost.plan.params import cluster_fields, render

# Tools' config keys whose version (and cache) a cluster kind takes by default.
_VERSION_FROM = {"ozone": "ozone", "hdfs": "hadoop", "yarn": "hadoop"}


def cluster_cache(tools_cfg: Mapping[str, Any], kind: str) -> str | None:
    """Where a cluster of ``kind`` is provisioned: its tool's ``cache`` (``tools.hadoop``
    for HDFS and YARN, ``tools.ozone`` for Ozone); None for the default cache."""
    return tools_cfg.get(_VERSION_FROM[kind], {}).get("cache")


def cluster_spec(
    name: str,
    raw: dict[str, Any],
    values: Mapping[str, Any],
    hosts: Mapping[str, Any],
    tools_cfg: Mapping[str, Any],
    where: str,
) -> ClusterSpec:
    """One cluster configuration for a cell: ``raw`` (``clusters.<name>``) with the cell's
    axis ``values`` filled in, roles completed, hosts checked. ``{id}`` stays for the
    cluster's own id (a directory of its own: "/dev/shm/perfpost/ratis-{id}")."""
    here = f"clusters.{name}"
    kind = clusters.get(raw["kind"])
    filled = render({k: v for k, v in raw.items() if k != "prefix"}, {**values, "id": "{id}"}, here)
    if "prefix" in raw:
        # Its {logs} and {daemon} are each daemon's own, filled as it starts.
        filled["prefix"] = render(
            {"prefix": raw["prefix"]},
            {**values, "id": "{id}", "logs": "{logs}", "daemon": "{daemon}"},
            here,
        )["prefix"]
    roles: dict[str, list[str]] = {}
    for role, (fewest, most) in kind.ROLES.items():
        given = filled.get("roles", {}).get(role, [LOCALHOST] * fewest)
        given = [given] if isinstance(given, str) else list(given)
        if not given and not fewest:  # an optional role not asked for (Ozone's s3g)
            continue
        if len(given) < fewest or (most is not None and len(given) > most):
            span = f"{fewest}" if fewest == most else f"{fewest} to {most or 'any number of'}"
            raise ConfigError(f"{here}.roles.{role}", f"needs {span} host(s), got {len(given)}")
        problem = kind.roles_problem({role: given})
        if problem:
            raise ConfigError(f"{here}.roles.{problem[0]}", problem[1])
        for h in given:
            if h not in hosts:
                raise ConfigError(
                    f"{here}.roles.{role}", f"unknown host {h!r} (known: {sorted(hosts)})"
                )
        if len(set(given)) != len(given):
            raise ConfigError(f"{here}.roles.{role}", "a host is listed twice")
        roles[role] = given
    for role in filled.get("roles", {}):
        if role not in kind.ROLES:
            raise ConfigError(
                f"{here}.roles.{role}",
                f"{raw['kind']} has no role {role!r} (roles: {', '.join(kind.ROLES)})",
            )

    def per_role(key: str) -> dict[str, Any]:
        """One string for every daemon (``all``), or one per role of the kind."""
        given = filled.get(key, {})
        given = {"all": given} if isinstance(given, str) else given
        for role in given:
            if role != "all" and role not in kind.ROLES:
                raise ConfigError(f"{here}.{key}.{role}", f"{raw['kind']} has no role {role!r}")
        return given

    jvm, prefix = per_role("jvm"), per_role("prefix")
    site = {f: {k: str(v) for k, v in filled[f].items()} for f in SITE_KEYS if filled.get(f)}
    sides = {}
    for side in ("daemons", "clients"):
        given = filled.get(f"{side}_only") or {}
        keys = {f: {k: str(v) for k, v in given[f].items()} for f in SITE_KEYS if given.get(f)}
        if keys:
            sides[side] = keys
    for f, keys in sides.get("daemons", {}).items():
        for key in keys:
            if CLIENT_READS.match(key):
                raise ConfigError(
                    f"{here}.daemons_only.{f}.{key}",
                    "a key the clients read: given to the daemons alone, the cells' clients "
                    f"would run with its default while the post listed it; put it in {f} "
                    "(both sides) or clients_only",
                )
    if filled.get("buckets") and raw["kind"] != "ozone":
        raise ConfigError(f"{here}.buckets", "only Ozone has buckets")
    version = str(
        filled.get("version")
        or tools_cfg.get(_VERSION_FROM[raw["kind"]], {}).get("version")
        or kind.RUNTIME.version
    )
    home, build = filled.get("home"), filled.get("build")
    if build is not None:
        if home:
            raise ConfigError(f"{here}.build", "a cluster runs a build or a `home`, not both")
        source = builds.check(str(build), f"{here}.build")
        build = str(source)
        # Staged (by the cluster's start) where the plan can name it now: its identity.
        home = str(builds.staged_path(source, cluster_cache(tools_cfg, raw["kind"])))
        version = f"build {source.name}"
    spec = ClusterSpec(
        name=name,
        kind=raw["kind"],
        version=version,
        roles=roles,
        site=site,
        jvm={k: str(v) for k, v in jvm.items()},
        prefix={k: str(v) for k, v in prefix.items()},
        env={k: str(v) for k, v in filled.get("env", {}).items()},
        dir=filled.get("dir", "/var/tmp/perfpost"),
        home=home,
        build=build,
        # Where the provision step put it (cluster_markers): the run's daemons start from there.
        cache=cluster_cache(tools_cfg, raw["kind"]),
        buckets=list(filled.get("buckets", [])),
        fresh=filled.get("fresh", "configuration"),
        shared=bool(filled.get("shared", False)),
        sides=sides,
    )
    del where
    return spec


SITE_KEYS = ("core-site", "hdfs-site", "ozone-site", "yarn-site", "mapred-site")
# Keys a Hadoop or Ozone client reads for what it does itself: its checksums, block size and
# replication of what it writes, its buffers and its own settings.
CLIENT_READS = re.compile(
    r"^(dfs\.client\.|ozone\.client\.|dfs\.checksum\.|fs\.|dfs\.bytes-per-checksum$"
    r"|dfs\.blocksize$|dfs\.replication$|ozone\.replication(\.type)?$"
    r"|io\.file\.buffer\.size$)"
)


def cell_clusters(
    plan_clusters: Mapping[str, Any],
    hosts: Mapping[str, Any],
    tools_cfg: Mapping[str, Any],
    exp: Experiment,
    cell: matrix.Cell,
    params: dict[str, Any],
    where: str,
) -> list[dict[str, Any]]:
    """The clusters a cell runs against, and a check that its params' cluster fields name
    one of them and a field it has."""
    names = exp.cluster if isinstance(exp.cluster, list) else [exp.cluster] if exp.cluster else []
    specs = []
    for i, raw_name in enumerate(names):
        name = str(render(raw_name, cell.value_map, f"{where}.cluster"))
        if name not in plan_clusters:
            raise ConfigError(
                f"{where}.cluster" + (f"[{i}]" if isinstance(exp.cluster, list) else ""),
                f"no cluster {name!r} under `clusters:` (known: {sorted(plan_clusters) or 'none'})",
            )
        specs.append(
            cluster_spec(name, plan_clusters[name], cell.value_map, hosts, tools_cfg, where)
        )
    by_name = {s.name: s for s in specs}
    if specs:
        by_name.setdefault("cluster", specs[0])
    for f in cluster_fields(params):
        prefix, _, attr = f.partition(".")
        spec = by_name.get(prefix)
        if spec is None:
            raise ConfigError(
                f"{where}.params",
                f"{{{f}}} names no cluster of this cell (its clusters: "
                f"{', '.join(s.name for s in specs) or 'none; set cluster:'})",
            )
        kind = clusters.get(spec.kind)
        known = {**kind.FIELDS, **kind.COMMON_FIELDS}
        if attr not in known:
            raise ConfigError(
                f"{where}.params",
                f"{{{f}}}: a {spec.kind} cluster has no field {attr!r} (fields: "
                f"{', '.join(sorted(known))})",
            )
        role, fewest = kind.FIELD_ROLES.get(attr, ("", 0))
        if len(spec.roles.get(role, [])) < fewest:
            raise ConfigError(
                f"{where}.params",
                f"{{{f}}}: needs {fewest} or more {role} host(s) in the cluster "
                f"{spec.name!r}, which has {len(spec.roles.get(role, []))} "
                f"(clusters.{spec.name}.roles.{role})",
            )
    return [s.to_dict() for s in specs]


def _memory_here() -> int | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def cluster_order(exp: Experiment) -> dict[str, Any]:
    """Interleaved runs against clusters: their configurations kept up side by side, or
    alternated with a restart before every run (``fresh: cell`` on every cell's clusters)
    where their daemons would not fit in this machine's memory together."""
    configs: dict[str, dict[str, Any]] = {}
    for specs in exp.cluster_specs.values():
        for c in specs:
            configs.setdefault(ClusterSpec.from_dict(c).ident(), c)
    here = _memory_here()
    mode, why = order_.cluster_mode(configs.values(), lambda h: here if h == "localhost" else None)
    if mode == order_.RESTARTS:
        for specs in exp.cluster_specs.values():
            for c in specs:
                c["fresh"] = "cell"  # the cluster's identity leaves fresh out
    return {"mode": mode, "why": why, "configs": len(configs)}
