"""Rings of Ozone daemons (OM HA, SCM HA): the keys every daemon and client gets, by which
each daemon of a ring finds its own node and each client finds the ring's leader."""

from __future__ import annotations

from typing import Any

# Their service ids, as Ozone's own examples name them; each node's id is om1, om2, ... (scm1,
# ...) in the order of roles.om (roles.scm); the first SCM is the primordial one.
OM_SERVICE = "omservice"
SCM_SERVICE = "scmservice"
SCM_PORTS = ("client", "block", "datanode", "security", "http", "https", "grpc", "ratis")


def om_keys(kind: Any) -> dict[str, str]:
    """OM HA as Ozone's own ozone-ha example configures it: a service id, its nodes, each
    node's addresses by keys suffixed with both; every OM finds its own among them by
    its host's address (so each OM has a host of its own). Ozone's own election timeout:
    at 1 s, Ratis groups of three on a busy machine lost their leader over and over."""
    dep, p = kind.dep, kind.dep.ports
    ids = [f"om{i + 1}" for i in range(len(kind._oms))]
    keys = {"ozone.om.service.ids": OM_SERVICE, f"ozone.om.nodes.{OM_SERVICE}": ",".join(ids)}
    for i, (h, nid) in enumerate(zip(kind._oms, ids, strict=True)):
        a, suffix = dep.node(h).address, f"{OM_SERVICE}.{nid}"
        keys.update(
            {
                f"ozone.om.address.{suffix}": f"{a}:{p[kind._om_port(i, 'rpc')]}",
                f"ozone.om.http-address.{suffix}": f"{a}:{p[kind._om_port(i, 'http')]}",
                f"ozone.om.https-address.{suffix}": f"{a}:{p[kind._om_port(i, 'https')]}",
                f"ozone.om.ratis.port.{suffix}": str(p[kind._om_port(i, "ratis")]),
            }
        )
    keys["ozone.om.ratis.minimum.timeout"] = "5s"
    return keys


def scm_keys(kind: Any) -> dict[str, str]:
    """SCM HA as Ozone's own ozone-ha example configures it: a service id, its nodes,
    each node's address and ports by keys suffixed with both (SCMNodeInfo reads the
    ports so), the first SCM the primordial one; every SCM finds its own node by its
    host's address."""
    dep, p = kind.dep, kind.dep.ports
    ids = [f"scm{i + 1}" for i in range(len(kind._scms))]
    keys = {
        "ozone.scm.service.ids": SCM_SERVICE,
        f"ozone.scm.nodes.{SCM_SERVICE}": ",".join(ids),
        "ozone.scm.primordial.node.id": ids[0],
        # Ozone's own election timeout for a group of three (see om_keys).
        "ozone.scm.ha.ratis.leader.election.timeout": "5s",
    }
    for i, (h, nid) in enumerate(zip(kind._scms, ids, strict=True)):
        a, sfx = dep.node(h).address, f"{SCM_SERVICE}.{nid}"
        port = {n: p[kind._scm_port(i, n)] for n in SCM_PORTS}
        keys.update(
            {
                f"ozone.scm.address.{sfx}": a,
                f"ozone.scm.client.port.{sfx}": str(port["client"]),
                f"ozone.scm.block.client.port.{sfx}": str(port["block"]),
                f"ozone.scm.datanode.port.{sfx}": str(port["datanode"]),
                f"ozone.scm.security.service.port.{sfx}": str(port["security"]),
                f"ozone.scm.ratis.port.{sfx}": str(port["ratis"]),
                f"ozone.scm.grpc.port.{sfx}": str(port["grpc"]),
                f"ozone.scm.http-address.{sfx}": f"{a}:{port['http']}",
                f"ozone.scm.https-address.{sfx}": f"{a}:{port['https']}",
            }
        )
    return keys
