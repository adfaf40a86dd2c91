"""Ozone: a Storage Container Manager, an Ozone Manager (or a ring of three or more, OM HA) and
datanodes of one release, and an S3 gateway where the config gives it a host (``roles: {s3g:
h1}``).

The daemons run from the same jars as freon (``tools/freon``'s runtime holds the SCM, OM,
datanode, shell and file system classes), so nothing more is fetched. Start order, as
Ozone's own scripts: ``scm --init``, the SCM, the datanodes (they retry until the SCM
answers), ``om --init`` on each OM (needs the running SCM), the OMs, the S3 gateway. Ready
when the SCM has left safe mode with every datanode HEALTHY and a pipeline OPEN, an OM's Ratis
role is LEADER_AND_READY with every other OM its FOLLOWER (JMX over HTTP), and the S3
gateway, if there is one, answers an S3 request (ListBuckets) with its XML. Then the config's
``buckets`` are created.

Every address is the role's host (loopback on ``localhost``) on a free port, chosen once per
start. One datanode means replication ONE (``ozone.replication=1``, given to clients too);
three or more, RATIS/THREE. Keys perfpost sets are in :meth:`Ozone.configure`; the config's
``ozone-site`` overrides any of them, and the post lists the keys that differ from Ozone's
defaults.
"""

from __future__ import annotations

import re
import shlex
from typing import Any, ClassVar

from perfpost import hostpool
from perfpost.clusters.base import ClusterError
from perfpost.clusters.deployment import Kind
from perfpost.clusters.ozone import rings, s3
from perfpost.clusters.ozone.rings import OM_SERVICE, SCM_PORTS, SCM_SERVICE
from perfpost.clusters.ozone.s3 import S3_ACCESS_KEY, S3_SECRET_KEY, S3_VOLUME
from perfpost.tools.freon import RUNTIME

SCM_MAIN = "org.apache.hadoop.hdds.scm.server.StorageContainerManagerStarter"
OM_MAIN = "org.apache.hadoop.ozone.om.OzoneManagerStarter"
DN_MAIN = "org.apache.hadoop.ozone.HddsDatanodeService"
SHELL_MAIN = "org.apache.hadoop.ozone.shell.OzoneShell"
VERSION_MAIN = "org.apache.hadoop.ozone.util.OzoneVersionInfo"  # what `ozone version` runs
S3G_MAIN = "org.apache.hadoop.ozone.s3.Gateway"  # what `ozone s3g` runs

# Java 17: Ozone's own module access flags (OZONE_MODULE_ACCESS_ARGS of its scripts) and
# the Ratis netty option its launcher adds.
OPENS = [
    "--add-opens=java.management/com.sun.jmx.mbeanserver=ALL-UNNAMED",
    "--add-exports=java.management/com.sun.jmx.mbeanserver=ALL-UNNAMED",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
    "-Dorg.apache.ratis.thirdparty.io.netty.tryReflectionSetAccessible=true",
]
HEAP = "-Xmx512m"

SCM_INFO = (
    "Hadoop:service=StorageContainerManager,name=StorageContainerManagerInfo,"
    "component=ServerRuntime"
)
SCM_NODES = "Hadoop:service=SCMNodeManager,name=SCMNodeManagerInfo"
SCM_PIPELINES = "Hadoop:service=SCMPipelineManager,name=SCMPipelineManagerInfo"
OM_INFO = "Hadoop:service=OzoneManager,name=OzoneManagerInfo,component=ServerRuntime"
DN_INFO = "Hadoop:service=HddsDatanodeService,name=HddsDatanodeServiceInfo,component=ServerRuntime"

OM_PORTS = ("rpc", "http", "https", "ratis", "grpc")
DN_PORTS = ("ipc", "ratis.ipc", "ratis.admin", "ratis.server", "ratis.ds", "client", "http")
DN_PORTS += ("https", "replication")
S3G_PORTS = ("http", "https", "webadmin", "webadmin.https")


# The single SCM's keys a ring replaces with each node's (suffixed), and what it binds.
_SCM_ONE = (".address", ".port", "http-address", "https-address")
_SCM_BINDS = ("client", "block.client", "datanode", "security.service")
_SCM_CLIENT_KEYS = ("address", "client.port", "block.client.port")


def _entry(value: Any, key: str) -> Any:
    """A JMX map's value: maps come back as [{"key": k, "value": v}, ...] or as dicts."""
    if isinstance(value, dict):
        return value.get(key)
    for e in value or []:
        if isinstance(e, dict) and e.get("key") == key:
            return e.get("value")
    return None


def healthy_nodes(bean: dict[str, Any]) -> int:
    """HEALTHY datanodes in an SCMNodeManagerInfo bean: its NodeCount maps each operational
    state (IN_SERVICE, DECOMMISSIONING, ...) to counts per health (HEALTHY, STALE, ...)."""
    total = 0
    for state in bean.get("NodeCount") or []:
        if isinstance(state, dict):
            total += int(_entry(state.get("value"), "HEALTHY") or 0)
    return total


class Ozone(Kind):
    KIND = "ozone"
    RUNTIME = RUNTIME
    ROLES: ClassVar[dict[str, tuple[int, int | None]]] = {
        "scm": (1, None),  # one, or a ring of three or more (SCM HA)
        "om": (1, None),  # one, or a ring of three or more (OM HA)
        "datanode": (1, None),
        "s3g": (0, 1),
    }
    START_ORDER = ("scm", "datanode", "om", "s3g")
    MAINS: ClassVar[dict[str, str]] = {
        "scm": SCM_MAIN,
        "om": OM_MAIN,
        "datanode": DN_MAIN,
        "s3g": S3G_MAIN,
    }
    ROLE_DIRS: ClassVar[dict[str, tuple[str, ...]]] = {
        "datanode": ("hdds.datanode.dir", "hdds.container.ratis.datanode.storage.dir"),
        "om": ("ozone.om.db.dirs", "ozone.om.ratis.storage.dir"),
        "scm": ("ozone.scm.db.dirs", "ozone.scm.ha.ratis.storage.dir"),
    }
    FIELDS: ClassVar[dict[str, str]] = {
        "om": "the Ozone Manager's address (host:port), as ozone.om.address; with several "
        "OMs, their service id (as ofs://<om>/ takes it)",
        "om_service": "the OMs' service id, with several OMs (freon --om-service-id)",
        "scm_service": "the SCMs' service id, with several SCMs (SCM HA)",
        "datanode_ratis": "the first datanode's Ratis address (host:port of "
        "hdds.container.ratis.ipc.port, the port vapor falg's --server-address means)",
        "datanode_id": "the first datanode's UUID, its Ratis peer id (vapor --raft-peer), as "
        "the datanode wrote it in its datanode.id",
        "datanode_host": "the first datanode's host name as it registered with the SCM (its "
        "own JMX says it): the name freon dcg --datanodes matches pipelines by",
        "ofs": "the ofs:// root of the cluster (ofs://host:port)",
        "fs": "the first bucket as a file system: ofs://host:port/volume/bucket",
        "o3fs": "the first bucket as o3fs://bucket.volume.host:port",
        "volume": "the first bucket's volume",
        "bucket": "the first bucket",
        "scm": "the SCM's client address (host:port); with several, the first's",
        "s3": "the S3 gateway's endpoint (http://host:port), with an s3g role",
        "s3_access_key": "an access key the S3 gateway takes (AWS_ACCESS_KEY_ID): without "
        "Kerberos Ozone checks no signature, and names the user by it",
        "s3_secret_key": "a secret key to sign with (AWS_SECRET_ACCESS_KEY), any value "
        "without Kerberos; given in `env`, it is masked wherever perfpost keeps it",
    }
    FIELD_ROLES: ClassVar[dict[str, tuple[str, int]]] = {
        "s3": ("s3g", 1),
        "s3_access_key": ("s3g", 1),
        "s3_secret_key": ("s3g", 1),
        "om_service": ("om", 3),
        "scm_service": ("scm", 3),
    }

    @classmethod
    def roles_problem(cls, roles: dict[str, list[str]]) -> tuple[str, str] | None:
        """Two OMs are no ring: a majority of two is both, so losing either stops it."""
        if len(roles.get("om", [])) == 2:
            return "om", "one OM, or a ring of three or more (OM HA); two cannot lose either"
        if len(roles.get("scm", [])) == 2:
            return "scm", "one SCM, or a ring of three or more (SCM HA); two cannot lose either"
        return None

    NOTES = (
        (
            r"(FILE_PER_\w+) layout is not supported\. Falling back to default : (FILE_PER_\w+)",
            "{0} is not supported by this release; the datanode used {1}",
            "ozone.scm.container.layout",
        ),
    )

    def on_disk_script(self, host: str, dirs: list[str]) -> str | None:
        """Counts of the chunk files under the datanode's containers, by their names' form:
        ``<block id>.block`` (one file per block), ``<block id>_chunk_<n>`` (one per chunk),
        other."""
        if host not in self.dep.spec.roles["datanode"] or not dirs:
            return None
        where = " ".join(shlex.quote(d) for d in dirs)
        return (
            f"find {where} -path '*/chunks/*' -type f 2>/dev/null | sed 's|.*/||' | awk "
            "'/^[0-9]+[.]block$/{b++; next} /^[0-9]+_chunk_[0-9]+$/{c++; next} {o++} "
            "END{print b+0, c+0, o+0}'"
        )

    def on_disk_note(self, host: str, printed: str) -> str | None:
        """Which chunk layout the datanode wrote, from its files' names alone."""
        counts = printed.split()
        if len(counts) != 3 or not all(c.isdigit() for c in counts):
            return None
        return chunk_layout_note(host, *(int(c) for c in counts))

    def _one(self, role: str) -> str:
        return self.dep.spec.roles[role][0]

    @property
    def _oms(self) -> list[str]:
        return self.dep.spec.roles["om"]

    @property
    def ha(self) -> bool:
        return len(self._oms) > 1

    @property
    def _scms(self) -> list[str]:
        return self.dep.spec.roles["scm"]

    @property
    def scm_ha(self) -> bool:
        return len(self._scms) > 1

    @staticmethod
    def _scm_port(i: int, name: str) -> str:
        """The name of the i-th SCM's port ``name`` (the first's as with one SCM)."""
        return f"scm.{name}" if i == 0 else f"scm{i + 1}.{name}"

    @staticmethod
    def _om_port(i: int, name: str) -> str:
        """The name of the i-th OM's port ``name`` (the first's as with one OM)."""
        return f"om.{name}" if i == 0 else f"om{i + 1}.{name}"

    @property
    def replication(self) -> str:
        return "3" if len(self.dep.spec.roles["datanode"]) >= 3 else "1"

    def configure(self) -> dict[str, dict[str, str]]:
        dep = self.dep
        scm, om = self._one("scm"), self._one("om")
        for i, h in enumerate(self._scms):
            dep.free_ports(h, [self._scm_port(i, p) for p in SCM_PORTS])
        for i, h in enumerate(self._oms):
            dep.free_ports(h, [self._om_port(i, p) for p in OM_PORTS])
        for h in dep.spec.roles["datanode"]:
            dep.free_ports(h, [f"dn.{h}.{p}" for p in DN_PORTS])
        s, o, p = dep.node(scm).address, dep.node(om).address, dep.ports
        dn_count = len(dep.spec.roles["datanode"])
        keys = {
            "ozone.scm.names": s,
            # Both forms: datanodes find the SCM by ozone.scm.names and the *.port keys.
            "ozone.scm.client.address": f"{s}:{p['scm.client']}",
            "ozone.scm.client.port": str(p["scm.client"]),
            "ozone.scm.block.client.address": f"{s}:{p['scm.block']}",
            "ozone.scm.block.client.port": str(p["scm.block"]),
            "ozone.scm.datanode.address": f"{s}:{p['scm.datanode']}",
            "ozone.scm.datanode.port": str(p["scm.datanode"]),
            "ozone.scm.security.service.address": f"{s}:{p['scm.security']}",
            "ozone.scm.security.service.port": str(p["scm.security"]),
            "ozone.scm.http-address": f"{s}:{p['scm.http']}",
            "ozone.scm.https-address": f"{s}:{p['scm.https']}",
            "ozone.scm.grpc.port": str(p["scm.grpc"]),
            "ozone.scm.ratis.port": str(p["scm.ratis"]),
            "ozone.om.address": f"{o}:{p['om.rpc']}",
            "ozone.om.http-address": f"{o}:{p['om.http']}",
            "ozone.om.https-address": f"{o}:{p['om.https']}",
            "ozone.om.ratis.port": str(p["om.ratis"]),
            "ozone.om.grpc.port": str(p["om.grpc"]),  # default: a fixed 8981
            # The S3 gateway talks to the OM over Hadoop RPC (its default transport).
            "ozone.om.s3.grpc.server_enabled": "false",
            # As many datanodes as the config has: the SCM leaves safe mode with all of them.
            "hdds.scm.safemode.min.datanode": str(dn_count),
            "hdds.scm.wait.time.after.safemode.exit": "1s",
            "ozone.replication": self.replication,
            "ozone.server.default.replication": self.replication,
            # Readiness in seconds rather than minutes: heartbeats and reports every second or
            # two, the pipeline created 2 s after a datanode registers (a datanode that
            # registers before the SCM leads is otherwise passed over for 120 s), and one
            # election timeout of 1 s for the single-member Ratis groups.
            "hdds.heartbeat.initial-interval": "500ms",
            "hdds.heartbeat.interval": "1s",
            "hdds.node.report.interval": "2s",
            "hdds.pipeline.report.interval": "2s",
            "hdds.command.status.report.interval": "2s",
            "ozone.scm.heartbeat.thread.interval": "500ms",
            "ozone.scm.heartbeat.rpc-retry-interval": "250ms",
            "ozone.scm.pipeline.creation.interval": "2s",
            "ozone.scm.ha.ratis.leader.election.timeout": "1s",
            "ozone.om.ratis.minimum.timeout": "1s",
            # Not below 1 s: om --init divides it by 1000 in whole seconds.
            "hdds.scmclient.failover.retry.interval": "1s",
            # The native snapshot library needs a newer libstdc++ than many hosts have; its
            # load failure is only noise in the OM's log.
            "ozone.om.snapshot.load.native.lib": "false",
            # Small test machines: containers of 1 GB, little free space demanded.
            "ozone.scm.container.size": "1GB",
            "hdds.datanode.volume.min.free.space": "100MB",
            "hdds.datanode.volume.min.free.space.percent": "0",
            "hdds.datanode.volume.min.free.space.hard.limit.percent": "0",
            "ozone.scm.datanode.ratis.volume.free-space.min": "10MB",
        }
        if dn_count < 3:
            # A pipeline of one datanode elects itself; one of three keeps Ozone's own
            # timeout: at 1 s, three datanodes on a busy machine lost their leader over and
            # over and freon's writes stalled on NotLeaderException.
            keys["hdds.ratis.leader.election.minimum.timeout.duration"] = "1s"
        if self.ha:  # each OM's own keys instead of one's
            for k in ("address", "http-address", "https-address", "ratis.port", "grpc.port"):
                del keys[f"ozone.om.{k}"]
            keys.update(rings.om_keys(self))
        if self.scm_ha:  # each SCM's own keys instead of one's
            for k in [k for k in keys if k.startswith("ozone.scm.") and k.endswith(_SCM_ONE)]:
                del keys[k]
            del keys["ozone.scm.names"]
            keys.update(rings.scm_keys(self))
        for role, host in (("scm", scm), ("om", om)):
            if role == "scm" and self.scm_ha:
                continue  # each SCM binds its own host's address (host_site)
            addr = dep.node(host).address
            keys.update(
                {
                    f"ozone.{role}.http-bind-host": addr,
                    f"ozone.{role}.https-bind-host": addr,
                }
            )
        if not self.scm_ha:
            keys.update({f"ozone.scm.{k}.bind.host": s for k in _SCM_BINDS})
        for h in dep.spec.roles.get("s3g", []):
            dep.free_ports(h, [f"s3g.{p}" for p in S3G_PORTS])
            g = dep.node(h).address
            for name, key in (
                ("http", "http"),
                ("https", "https"),
                ("webadmin", "webadmin.http"),
                ("webadmin.https", "webadmin.https"),
            ):
                keys[f"ozone.s3g.{key}-address"] = f"{g}:{p['s3g.' + name]}"
                keys[f"ozone.s3g.{key}-bind-host"] = g
        return {"ozone-site": keys}

    def host_site(self, host: str) -> dict[str, dict[str, str]]:
        dep = self.dep
        root = dep.root(host)
        keys = {
            "ozone.metadata.dirs": f"{root}/data/meta",
            "ozone.scm.db.dirs": f"{root}/data/scm/db",
            "ozone.scm.ha.ratis.storage.dir": f"{root}/data/scm/ratis",
            "ozone.om.db.dirs": f"{root}/data/om/db",
            "ozone.om.ratis.storage.dir": f"{root}/data/om/ratis",
            "hdds.datanode.dir": f"{root}/data/dn/data",
            "hdds.container.ratis.datanode.storage.dir": f"{root}/data/dn/ratis",
            "ozone.scm.datanode.id.dir": f"{root}/data/dn",
        }
        if self.scm_ha and host in self._scms:
            i, a = self._scms.index(host), dep.node(host).address
            keys.update({f"ozone.scm.{k}.bind.host": a for k in _SCM_BINDS})
            keys.update(
                {
                    "ozone.scm.http-bind-host": a,
                    "ozone.scm.https-bind-host": a,
                    # Its own web ports where its node's suffixed keys are not read.
                    "ozone.scm.http-address": f"{a}:{dep.ports[self._scm_port(i, 'http')]}",
                    "ozone.scm.https-address": f"{a}:{dep.ports[self._scm_port(i, 'https')]}",
                }
            )
        if self.ha and host in self._oms:
            i, a = self._oms.index(host), dep.node(host).address
            keys.update(
                {
                    "ozone.om.http-bind-host": a,
                    "ozone.om.https-bind-host": a,
                    "ozone.om.grpc.port": str(dep.ports[self._om_port(i, "grpc")]),
                }
            )
        if host in dep.spec.roles["datanode"]:
            a, p = dep.node(host).address, dep.ports
            q = f"dn.{host}."
            keys.update(
                {
                    "hdds.container.ipc.port": str(p[q + "ipc"]),
                    "hdds.container.ratis.ipc.port": str(p[q + "ratis.ipc"]),
                    "hdds.container.ratis.admin.port": str(p[q + "ratis.admin"]),
                    "hdds.container.ratis.server.port": str(p[q + "ratis.server"]),
                    "hdds.container.ratis.datastream.port": str(p[q + "ratis.ds"]),
                    "hdds.datanode.client.address": f"{a}:{p[q + 'client']}",
                    "hdds.datanode.client.bind.host": a,
                    "hdds.datanode.http-address": f"{a}:{p[q + 'http']}",
                    "hdds.datanode.http-bind-host": a,
                    "hdds.datanode.https-address": f"{a}:{p[q + 'https']}",
                    "hdds.datanode.https-bind-host": a,
                    "hdds.datanode.replication.port": str(p[q + "replication"]),
                    "hdds.ratis.raft.grpc.server.host": a,
                    "hdds.ratis.raft.grpc.admin.host": a,
                    "hdds.ratis.raft.grpc.client.host": a,
                }
            )
        return {"ozone-site": keys}

    def _opts(self) -> list[str]:
        return [HEAP, *OPENS]

    def instance_opts(self, role: str, index: int) -> tuple[list[str], dict[str, str]]:
        return self._opts(), {}

    def http_url(self, role: str, index: int) -> str | None:
        if role in ("om", "scm") and index > 0:  # each of a ring has ports of its own
            key = (self._om_port if role == "om" else self._scm_port)(index, "http")
            host = self.dep.spec.roles[role][index]
            return f"http://{self.dep.node(host).address}:{self.dep.ports[key]}"
        return super().http_url(role, index)

    def launch(self) -> None:
        dep = self.dep
        scm = self._one("scm")
        dep.run_java(scm, "scm", SCM_MAIN, ["--init"], self._opts(), "scm init")
        self.start_instance("scm", 0)
        if self.scm_ha:
            # The others join the primordial SCM's ring: each bootstraps from it (its
            # cluster id, its Ratis group) once it serves, then starts.
            dep.wait_for(lambda: dep.jmx("scm", "scm.http", SCM_INFO) != {}, 180.0, "the SCM")
            for i, h in enumerate(self._scms[1:], start=1):
                dep.run_java(
                    h, "scm", SCM_MAIN, ["--bootstrap"], self._opts(), f"scm {i} bootstrap",
                    timeout=120.0,
                )  # fmt: skip
                self.start_instance("scm", i)
        # Datanodes retry until the SCM answers: started now, they register sooner.
        for i, _ in enumerate(dep.spec.roles["datanode"]):
            self.start_instance("datanode", i)
        dep.wait_for(lambda: dep.jmx("scm", "scm.http", SCM_INFO) != {}, 180.0, "the SCM")
        # om --init retries an SCM that does not serve for ten minutes; a working one answers
        # it within seconds, so a start that waits longer is given up (and tried again).
        # Every OM of a ring is initialised (its own database, registered with the SCM), then
        # all are started: they elect a leader among themselves.
        hostpool.each(
            lambda h: dep.run_java(
                h, "om", OM_MAIN, ["--init"], self._opts(), "om init", timeout=120.0
            ),
            self._oms,
        )
        for i, _ in enumerate(self._oms):
            self.start_instance("om", i)
        # The gateway reaches the OM on each request: it may start before the OM serves.
        for i, _ in enumerate(dep.spec.roles.get("s3g", [])):
            self.start_instance("s3g", i)

    def ready(self) -> str | None:
        dep = self.dep
        want = len(dep.spec.roles["datanode"])
        healthy = healthy_nodes(dep.jmx("scm", "scm.http", SCM_NODES))
        if healthy < want:
            return f"{want} HEALTHY datanode(s) in the SCM ({healthy} so far)"
        pipelines = int(
            _entry(dep.jmx("scm", "scm.http", SCM_PIPELINES).get("PipelineInfo"), "OPEN") or 0
        )
        if pipelines < 1:
            return "an OPEN pipeline"
        info = dep.jmx("scm", "scm.http", SCM_INFO)
        if info.get("InSafeMode") is not False:
            return "the SCM to leave safe mode"
        if self.scm_ha:
            roles = str(info.get("ScmRatisRoles", ""))
            n = len(self._scms)
            if roles.count("LEADER") != 1 or roles.count("FOLLOWER") < n - 1:
                return f"a leading SCM with {n - 1} followers (the first SCM's view: {roles})"
        oms = len(self._oms)
        roles = [
            str(dep.jmx("om", self._om_port(i, "http"), OM_INFO, i).get("RatisRoles", ""))
            for i in range(oms)
        ]
        leader = next((r for r in roles if "LEADER_AND_READY" in r), None)
        if leader is None:
            return "the OM to be LEADER_AND_READY" if oms == 1 else "an OM to lead the ring"
        if oms > 1 and leader.count("FOLLOWER") < oms - 1:
            return f"the leading OM to have {oms - 1} followers (its view: {leader})"
        if dep.spec.roles.get("s3g") and not self._s3_answers():
            return "the S3 gateway to answer an S3 request"
        return None

    @property
    def _s3_endpoint(self) -> str:
        return "http://" + self.dep.site["ozone-site"]["ozone.s3g.http-address"]

    def _s3_answers(self) -> bool:
        return s3.answers(self._s3_endpoint)

    def prepare(self) -> None:
        dep = self.dep
        om = self._one("om")
        made = {S3_VOLUME}  # the OM makes the S3 gateway's volume when it starts
        commands: list[list[str]] = []
        for pair in dep.spec.buckets:
            volume, bucket = pair.split("/")
            steps = ([] if volume in made else [["volume", "create", f"/{volume}"]]) + [
                ["bucket", "create", f"/{volume}/{bucket}"]
            ]
            made.add(volume)
            commands += steps
        # One JVM for them all (the shell's batch mode, Ozone 2.0 on, stops at the first that
        # fails), not a start of 2 CPU-s each; a shell without it refuses before running any.
        opts, what = self._client_opts(), "create " + " ".join(c[-1] for c in commands)
        batch = [a for c in commands for a in ("--execute", " ".join(c))]
        try:
            if commands:
                dep.run_java(om, "", SHELL_MAIN, batch, opts, what)
            return
        except ClusterError as e:
            if not re.search(r"Unknown options?: '--execute", str(e)):
                raise
        for args in commands:
            dep.run_java(om, "", SHELL_MAIN, args, opts, f"create {args[-1]}")

    def _client_opts(self) -> list[str]:
        return ["-Xmx256m", *OPENS]

    def client_site(self) -> dict[str, dict[str, str]]:
        site = self.dep.site["ozone-site"]
        keys = {
            k: site[k]
            for k in (
                "ozone.om.address",
                "ozone.scm.names",
                "ozone.scm.client.address",
                "ozone.scm.block.client.address",
                "ozone.replication",
            )
            if k in site
        }
        # With several OMs: the ring's id, nodes and addresses, by which a client finds its
        # leader.
        ring = ("ozone.om.service.ids", "ozone.om.nodes.", f"ozone.om.address.{OM_SERVICE}.")
        keys.update({k: v for k, v in site.items() if k.startswith(ring)})
        # With several SCMs: theirs, with each one's client ports (freon dcg asks the SCM).
        scms = ("ozone.scm.service.ids", "ozone.scm.nodes.", "ozone.scm.primordial.")
        scms += tuple(f"ozone.scm.{k}.{SCM_SERVICE}." for k in _SCM_CLIENT_KEYS)
        keys.update({k: v for k, v in site.items() if k.startswith(scms)})
        # Every key the config set reaches clients too (perfpost.clusters.base.client_site).
        return {"ozone-site": keys}

    def fields(self) -> dict[str, str]:
        om = OM_SERVICE if self.ha else self.dep.site["ozone-site"]["ozone.om.address"]
        out = {
            "om": om,
            "ofs": f"ofs://{om}",
            "scm": self._scm_client(),
        }
        if self.dep.spec.buckets:
            volume, bucket = self.dep.spec.buckets[0].split("/")
            out.update(
                volume=volume,
                bucket=bucket,
                fs=f"ofs://{om}/{volume}/{bucket}",
                o3fs=f"o3fs://{bucket}.{volume}.{om}",
            )
        if self.ha:
            out["om_service"] = OM_SERVICE
        if self.scm_ha:
            out["scm_service"] = SCM_SERVICE
        dn = self.dep.spec.roles["datanode"][0]
        server = self.dep.ports[f"dn.{dn}.ratis.ipc"]
        out["datanode_ratis"] = f"{self.dep.node(dn).address}:{server}"
        out["datanode_id"] = self._datanode_id(dn)
        info = self.dep.jmx("datanode", f"dn.{dn}.http", DN_INFO)
        out["datanode_host"] = str(info.get("Hostname", ""))
        if self.dep.spec.roles.get("s3g"):
            out["s3"] = self._s3_endpoint
            out.update(self.secret_fields(self.dep.spec))
        return out

    def _scm_client(self) -> str:
        """The first SCM's client address (host:port), with one SCM or a ring."""
        site = self.dep.site["ozone-site"]
        if not self.scm_ha:
            return site["ozone.scm.client.address"]
        sfx = f"{SCM_SERVICE}.scm1"
        return f"{site['ozone.scm.address.' + sfx]}:{site['ozone.scm.client.port.' + sfx]}"

    def _datanode_id(self, host: str) -> str:
        """The UUID a datanode chose at its first start, from the file it keeps it in
        (``datanode.id`` in ``ozone.scm.datanode.id.dir``, YAML with ``uuid:``)."""
        key = "ozone.scm.datanode.id.dir"  # the config's, else perfpost's for the host
        where = self.dep.site["ozone-site"].get(key) or self.host_site(host)["ozone-site"][key]
        text = self.dep.node(host).read(f"{where}/datanode.id")
        found = re.search(r"\buuid:\s*['\"]?([0-9a-fA-F-]{36})", text)  # block or flow style
        return found.group(1) if found else ""

    @classmethod
    def secret_fields(cls, spec: Any) -> dict[str, str]:
        if not spec.roles.get("s3g"):
            return {}
        return {"s3_access_key": S3_ACCESS_KEY, "s3_secret_key": S3_SECRET_KEY}

    def version_command(self, home: str) -> str:
        return self.dep.java_command(self._one("scm"), VERSION_MAIN)

    def version_text(self, printed: str) -> str:
        """``ozone version`` without the ASCII-art logo it opens with: from the release line
        (``2.2.0(Katmai)``) on."""
        lines = printed.strip().splitlines()
        start = next((i for i, ln in enumerate(lines) if re.match(r"^\d+\.\d+", ln)), 0)
        return "\n".join(lines[start:]).strip()


def chunk_layout_note(host: str, blocks: int, chunks: int, other: int) -> str:
    """The post's sentence on a datanode's chunk files, counted by their names' form."""
    said = (
        f"datanode on {host}, its own files when the cluster stopped (after every cell it served): "
    )
    if not blocks + chunks + other:
        return said + "no chunk files (nothing was written to it)"
    found = f"{blocks} per-block files (`<id>.block`), {chunks} per-chunk files (`<id>_chunk_<n>`)"
    if other:
        found += f", {other} other files"
    if blocks and not chunks:
        return f"{said}{found}: FILE_PER_BLOCK"
    if chunks and not blocks:
        return f"{said}{found}: FILE_PER_CHUNK"
    return f"{said}{found}"


KIND = Ozone
