"""The hosts a cell involves, as what runs beside it sees them: the cell's own first, then
each other host of its clusters, with the daemons each runs there, the directories whose disks
matter there, and the daemons' own metrics to read."""

from __future__ import annotations

from typing import Any

from perfpost.clusters import metrics as daemon_metrics
from perfpost.clusters.base import Node
from perfpost.clusters.deployment import Deployment
from perfpost.errors import unforeseen
from perfpost.instrument import beside
from perfpost.plan.specs import CellSpec
from perfpost.run import deploy
from perfpost.run.hosts import Host, open_host


def _site_dirs(site: dict[str, dict[str, str]]) -> list[str]:
    """Absolute directories a cluster's configuration names (``*.dir``, ``*.dirs`` keys:
    where a placement put a datanode's Ratis log, say), each once."""
    out: list[str] = []
    for keys in site.values():
        for key, value in keys.items():
            if not key.endswith((".dir", ".dirs")):
                continue
            for d in str(value).split(","):
                d = d.strip().removeprefix("file://")
                if d.startswith("/") and d not in out:
                    out.append(d)
    return out


def host_seats(
    cell_spec: CellSpec,
    cell_host: Host,
    lease: deploy.Lease | None,
    record: dict[str, Any],
    opened_hosts: list[Host],
) -> list[beside.HostSeat]:
    """The hosts the cell of ``cell_spec`` on ``cell_host`` involves, its own first, then
    each other host of ``lease``'s clusters (if any),
    with the daemons each runs (pid -> ``<cluster>:<daemon>``) and the directories whose disks
    matter there (the cell's work directory; a cluster's directories). A host that cannot be
    opened is a warning in ``record``; those opened join ``opened_hosts``, for the cell to
    close."""
    own = beside.HostSeat(cell_spec.host["name"], cell_host, True, roles=["client"])
    if cell_spec.params.get("dir"):
        own.dirs.append(str(cell_spec.params["dir"]))
    seats = {own.name: own}
    for held in lease.held if lease is not None else []:
        dep = Deployment.from_state(held.state["deployment"])
        dirs = _site_dirs(dep.site)
        for host in dep.spec.hosts():
            seat = seats.get(host)
            if seat is None:
                try:
                    opened = open_host(dep.hosts[host])
                except Exception as e:  # telemetry is evidence, never the measurement
                    record.setdefault("warnings", []).append(
                        f"resources on {host}: cannot open the host: {unforeseen(e)}"
                    )
                    continue
                opened_hosts.append(opened)
                seat = seats[host] = beside.HostSeat(host, opened, False)
            for d in [dep.root(host), *dirs]:
                if d not in seat.dirs:
                    seat.dirs.append(d)
        for d in dep.daemons:
            if d.host not in seats or not d.pid:
                continue
            seat, label = seats[d.host], f"{held.spec.name}:{d.label}"
            seat.daemons[d.pid] = label
            seat.roles.append(f"{held.spec.name} {d.label}")
            key = daemon_metrics.port_key(dep.spec.kind, d.role, d.host)
            found = daemon_metrics.sources(dep.spec.kind, d.role)
            if key in dep.ports and found:
                spec = dep.hosts.get(d.host) or cell_spec.host
                address = Node(seat.host, {"name": d.host, **spec}).address
                base = f"http://{address}:{dep.ports[key]}"
                seat.scrapes.append((label, daemon_metrics.urls(base, found)))
                seat.sources[label] = found
    return list(seats.values())
