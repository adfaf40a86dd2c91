"""The hosts and systems under test a post describes: each host's environment (grouped where
hosts are alike), the clusters the cells ran on (roles, versions, the settings that differ
from the release's), and what perfpost delivered to hosts."""

from __future__ import annotations

import contextlib
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd

from perfpost import paths
from perfpost.clusters.base import SETUP
from perfpost.units import counted, format_bytes


def _host_env(env: dict[str, Any]) -> dict[str, Any]:
    if env.get("error"):
        return {"hostname": None, "error": env["error"]}
    cpu = env.get("cpu", {})
    topo = []
    if "sockets" in cpu:
        topo.append(counted(int(cpu["sockets"]), "socket"))
    if "cores" in cpu:
        topo.append(f"{cpu['cores']} cores")
    if "threads" in cpu:
        topo.append(f"{cpu['threads']} threads")
    disks = [
        f"{d['name']}: {d['model']}, {format_bytes(d['size_bytes'])}, "
        f"{'rotational' if d['rotational'] else 'non-rotational'}"
        for d in env.get("disks", [])
    ]
    return {
        "hostname": env.get("hostname"),
        "vendor": env.get("vendor"),
        "cpu": f"{cpu.get('model', 'unknown')} ({', '.join(topo)})"
        if topo
        else cpu.get("model", "unknown"),
        "memory": f"{env['memory_bytes'] / 2**30:.1f} GiB"
        if env.get("memory_bytes")
        else "unknown",
        "disks": disks or ["none reported"],
        "kernel": env.get("kernel") or "unknown",
        "os": env.get("os") or "unknown",
        "sysctl": env.get("sysctl", {}),
        "java": env.get("java"),
        "ozone": env.get("ozone_version"),
        "hadoop": env.get("hadoop_version"),
        "error": None,
    }


def _env_groups(envs: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Hosts with the same environment (all but the hostname) share one block in the post."""
    groups: list[dict[str, Any]] = []
    for host, raw in envs.items():
        env = _host_env(raw)
        key = json.dumps(
            {k: v for k, v in env.items() if k != "hostname"}, sort_keys=True, default=str
        )
        group = next((g for g in groups if g["key"] == key and not env["error"]), None)
        if group is None:
            groups.append({"key": key, "hosts": [host], "hostnames": [env["hostname"]], **env})
        else:
            group["hosts"].append(host)
            group["hostnames"].append(env["hostname"])
    for g in groups:
        shown = [n for h, n in zip(g["hosts"], g["hostnames"], strict=True) if n and n != h]
        g["title"] = ", ".join(g["hosts"]) + (f" (hostname {', '.join(shown)})" if shown else "")
    return groups


def _env_differences(envs: dict[str, dict[str, Any]]) -> list[str]:
    if len(envs) < 2:
        return []
    diffs = []
    envs = {h: e for h, e in envs.items() if not e.get("error")}
    if len(envs) < 2:
        return []
    for key in ("vendor", "cpu", "memory", "disks", "kernel", "os", "sysctl", "java"):
        values = {h: str(e.get(key)) for h, e in envs.items()}
        if len(set(values.values())) > 1:
            diffs.append(key)
    return diffs


_PLACEMENT = re.compile(
    r"(address|\.port|bind\.host|bind-host|hostname|\.names|\.dirs?|dir\.\w+|tmp\.dir|"
    r"staging-dir|local-dirs|log-dirs|classpath|fs\.defaultFS)$"
)


def _split_changed(
    changed: list[dict[str, Any]], configured: set[str]
) -> tuple[list[dict[str, Any]], int]:
    """The keys that change how the system behaves, and how many of perfpost's own only
    place it (addresses, ports, directories, class paths: in the cluster's state.json). A
    key the config set is always shown: it is what the experiment chose."""
    settings = [
        {**k, "configured": k["key"] in configured}
        for k in changed
        if k["key"] in configured or not _PLACEMENT.search(k["key"])
    ]
    return settings, len(changed) - len(settings)


def _role_order(kind: str, roles: dict[str, Any]) -> list[str]:
    """Roles in the order the kind starts them (SCM, datanodes, OM), not alphabetically."""
    from perfpost import clusters

    try:
        order = list(clusters.get(kind).START_ORDER)
    except KeyError:
        order = []
    return [r for r in order if r in roles] + [r for r in roles if r not in order]


# A served run's record path names its experiment: results/<experiment>/cells/...
_SERVED = re.compile(r"(?:^|/)" + re.escape(paths.RESULTS) + r"/([^/]+)/cells/")


def clusters_of(cells: pd.DataFrame, root: Path = Path()) -> list[dict[str, Any]]:
    """The systems under test the cells ran on, one entry per cluster start: its
    configuration, hosts per role, JVM options, version output and the keys that differ
    from the release's defaults, from the state perfpost kept of it."""
    if "clusters" not in cells:
        return []
    out = []
    seen: dict[str, list[str]] = {}
    for r in cells.itertuples(index=False):
        for ref in str(r.clusters or "").split():
            if ref == "nan":
                continue
            seen.setdefault(ref, [])
            if r.cell not in seen[ref]:
                seen[ref].append(r.cell)
    for ref, cell_ids in seen.items():
        ident, _, start = ref.partition("/")
        sdir = root / paths.fill(paths.CLUSTER_DIR, cluster=ident) / start
        try:
            state = json.loads((sdir / "state.json").read_text())
        except (OSError, ValueError):
            out.append({"ref": ref, "error": f"no state in {sdir}", "cells": cell_ids})
            continue
        dep = state["deployment"]
        spec = dep["spec"]
        if spec.get("kind") == SETUP:  # a host's set-up: its steps, what they did, when
            out.append(
                {
                    "ref": ref,
                    "kind": SETUP,
                    "id": ident,
                    "cells": cell_ids,
                    "host": (spec.get("roles", {}).get("host") or [""])[0],
                    "steps": spec.get("steps", {}),
                    "setup": state.get("setup") or [],
                    "teardown": state.get("teardown") or [],
                    "status": state.get("status"),
                    "started": state.get("started"),
                    "stopped": state.get("stopped"),
                    "state": str(sdir / "state.json"),
                }
            )
            continue
        # Runs of other experiments on the same start (one configuration serves them all).
        mine = set(cells["experiment"]) if "experiment" in cells else set()
        others = Counter(
            m.group(1)
            for p in state.get("served", [])
            if (m := _SERVED.search(str(p))) and m.group(1) not in mine
        )
        configured = {k for keys in spec.get("site", {}).values() for k in keys}
        configured |= {
            k
            for files in (spec.get("sides") or {}).values()
            for keys in files.values()
            for k in keys
        }
        settings, placement = _split_changed(dep.get("changed", []), configured)
        out.append(
            {
                "ref": ref,
                "name": spec["name"],
                "kind": spec["kind"],
                "id": ident,
                "cells": cell_ids,
                "others": [{"experiment": e, "runs": n} for e, n in sorted(others.items())],
                "roles": {
                    role: ", ".join(spec["roles"][role])
                    for role in _role_order(spec["kind"], spec["roles"])
                },
                "jvm": spec.get("jvm", {}),
                "prefix": spec.get("prefix", {}),
                "env": spec.get("env", {}),
                "version": dep.get("version", ""),
                "build": spec.get("build"),
                "changed": settings,
                "placement": placement,
                "dir": spec.get("dir", ""),
                "notes": dep.get("notes", []),
                # Settings a daemon did not take (a value the release does not support).
                "overridden": dep.get("overridden", []),
                # Every site setting the daemons ran with, whatever file it is in.
                "site": {
                    k: v for keys in (dep.get("site") or {}).values() for k, v in keys.items()
                },
                "state": str(sdir / "state.json"),
                "started": state.get("started"),
                "ready": state.get("ready"),
                "logs": str(sdir / "logs"),
                "status": state.get("status"),
                "delivered": dep.get("delivered", []),
            }
        )
    return out


def deliveries(cells: pd.DataFrame, clusters: list[dict[str, Any]]) -> dict[str, list[str]]:
    """What perfpost shipped to hosts (run.deliver), for the method: per host and install,
    the bytes, files and seconds it took; and which hosts had what they needed already."""
    shipped: dict[tuple[str, str], dict[str, Any]] = {}
    had: set[tuple[str, str]] = set()
    entries: list[dict[str, Any]] = [d for c in clusters for d in c.get("delivered", [])]
    if "delivered" in cells:
        for text in cells["delivered"].dropna():
            with contextlib.suppress(ValueError, TypeError):
                entries += json.loads(text)
    for d in entries:
        k = (str(d["host"]), str(d["key"]))
        if d.get("files"):
            shipped.setdefault(k, d)
        else:
            had.add(k)
    return {
        "shipped": [
            f"`{key}` to {host} ({d['bytes'] / 1e6:.1f} MB in {d['files']} files, "
            f"{d['seconds']:.1f} s)"
            for (host, key), d in sorted(shipped.items())
        ],
        "had": [f"`{key}` on {host}" for host, key in sorted(had - set(shipped))],
    }
