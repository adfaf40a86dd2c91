"""HDFS: a NameNode and DataNodes of one Hadoop release.

Fetched from Maven Central (``pom.xml`` here): hadoop-hdfs, its client and hadoop-common,
plus hadoop-hdfs's ``tests`` jar, the only published jar carrying ``webapps/hdfs``, without
which the NameNode does not start. The NameNode is formatted, started, then the DataNodes.
Ready when the NameNode counts every DataNode live and has left safe mode (JMX over HTTP).

Every address is the role's host (loopback on ``localhost``) on a free port. Replication is
the number of DataNodes, up to 3 (``dfs.replication``, given to clients too). Keys perfpost
sets are in :meth:`Hdfs.configure`; the config's ``hdfs-site`` and ``core-site`` override
any of them, and the post lists the keys that differ from Hadoop's defaults.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from perfpost import provision
from perfpost.clusters.deployment import Kind

VERSION = "3.4.2"
RUNTIME = provision.Runtime(
    name="hdfs",
    version=VERSION,
    files=Path(__file__).resolve().parent,
    version_property="hadoop.version",
    launcher="hdfs",
    expect_jar="hadoop-hdfs-",
)

NN_MAIN = "org.apache.hadoop.hdfs.server.namenode.NameNode"
DN_MAIN = "org.apache.hadoop.hdfs.server.datanode.DataNode"
VERSION_MAIN = "org.apache.hadoop.util.VersionInfo"  # what `hadoop version` runs
OPENS = ["--add-opens=java.base/java.lang=ALL-UNNAMED"]
HEAP = "-Xmx512m"
NN_STATE = "Hadoop:service=NameNode,name=FSNamesystemState"
NN_INFO = "Hadoop:service=NameNode,name=NameNodeInfo"


class Hdfs(Kind):
    KIND = "hdfs"
    RUNTIME = RUNTIME
    ROLES: ClassVar[dict[str, tuple[int, int | None]]] = {"namenode": (1, 1), "datanode": (1, None)}
    START_ORDER = ("namenode", "datanode")
    MAINS: ClassVar[dict[str, str]] = {"namenode": NN_MAIN, "datanode": DN_MAIN}
    ROLE_DIRS: ClassVar[dict[str, tuple[str, ...]]] = {
        "namenode": ("dfs.namenode.name.dir",),
        "datanode": ("dfs.datanode.data.dir",),
    }
    FIELDS: ClassVar[dict[str, str]] = {
        "uri": "the file system's URI (hdfs://host:port), as fs.defaultFS",
        "fs": "the same: where a test's files go",
        "nn": "the NameNode's RPC address (host:port)",
    }

    def _nn(self) -> str:
        return self.dep.spec.roles["namenode"][0]

    @property
    def replication(self) -> str:
        return str(min(3, len(self.dep.spec.roles["datanode"])))

    def configure(self) -> dict[str, dict[str, str]]:
        dep = self.dep
        nn = self._nn()
        dep.free_ports(nn, ["nn.rpc", "nn.http", "nn.https"])
        # A DataNode's web port is chosen, not left to it: perfpost reads its metrics there.
        for h in dep.spec.roles["datanode"]:
            dep.free_ports(h, [f"dn.{h}.http"])
        a, p = dep.node(nn).address, dep.ports
        # Where the NameNode serves clients, as the config may set it: the file system's URI
        # (fs.defaultFS, a cell's {cluster.fs}) follows it.
        rpc = dep.spec.site.get("hdfs-site", {}).get("dfs.namenode.rpc-address")
        rpc = rpc or f"{a}:{p['nn.rpc']}"
        core = {"fs.defaultFS": f"hdfs://{rpc}"}
        hdfs = {
            "dfs.namenode.rpc-address": rpc,
            "dfs.namenode.http-address": f"{a}:{p['nn.http']}",
            "dfs.namenode.https-address": f"{a}:{p['nn.https']}",
            "dfs.namenode.secondary.http-address": f"{a}:0",
            "dfs.namenode.secondary.https-address": f"{a}:0",
            "dfs.replication": self.replication,
            # Leave safe mode as soon as every DataNode reported, not 30 s later.
            "dfs.namenode.safemode.extension": "0",
            "dfs.namenode.safemode.min.datanodes": str(len(dep.spec.roles["datanode"])),
            "dfs.permissions.enabled": "false",
            # Hosts are reached at the inventory's addresses, often IPs with no name that
            # resolves back: the NameNode would refuse every DataNode on another host.
            "dfs.namenode.datanode.registration.ip-hostname-check": "false",
        }
        return {"core-site": core, "hdfs-site": hdfs}

    def host_site(self, host: str) -> dict[str, dict[str, str]]:
        dep = self.dep
        root = dep.root(host)
        keys = {
            "hadoop.tmp.dir": f"{root}/tmp",
            "dfs.namenode.name.dir": f"{root}/data/name",
            "dfs.datanode.data.dir": f"{root}/data/data",
        }
        if host in dep.spec.roles["datanode"]:
            # Port 0: a DataNode tells the NameNode the ports it got, so none can be taken.
            a = dep.node(host).address
            keys.update(
                {
                    "dfs.datanode.address": f"{a}:0",
                    "dfs.datanode.ipc.address": f"{a}:0",
                    "dfs.datanode.http.address": f"{a}:{dep.ports[f'dn.{host}.http']}",
                    "dfs.datanode.https.address": f"{a}:0",
                }
            )
        return {"hdfs-site": keys}

    def _opts(self) -> list[str]:
        return [HEAP, *OPENS]

    def launch(self) -> None:
        dep = self.dep
        nn = self._nn()
        dep.run_java(
            nn,
            "namenode",
            NN_MAIN,
            ["-format", "-force", "-nonInteractive"],
            self._opts(),
            "namenode format",
        )
        self.start_instance("namenode", 0)
        for i, _ in enumerate(dep.spec.roles["datanode"]):
            self.start_instance("datanode", i)

    def instance_opts(self, role: str, index: int) -> tuple[list[str], dict[str, str]]:
        if role != "datanode":
            return self._opts(), {}
        # DataNodes retry the NameNode every 100 ms rather than every second (then 5 s).
        retry = ["-Dipc.client.connect.retry.interval=100", "-Dipc.client.connect.max.retries=600"]
        return [*self._opts(), *retry], {}

    def ready(self) -> str | None:
        dep = self.dep
        want = len(dep.spec.roles["datanode"])
        state = dep.jmx("namenode", "nn.http", NN_STATE)
        live = int(state.get("NumLiveDataNodes") or 0)
        if live < want:
            return f"{want} live DataNode(s) in the NameNode ({live} so far)"
        if not int(state.get("CapacityRemaining") or 0):
            return "the DataNodes' storage reports"
        safemode = dep.jmx("namenode", "nn.http", NN_INFO).get("Safemode")
        if safemode != "":
            return "the NameNode to leave safe mode"
        return None

    def client_site(self) -> dict[str, dict[str, str]]:
        hdfs = self.dep.site["hdfs-site"]
        # Every key the config set reaches clients too (perfpost.clusters.base.client_site).
        return {"hdfs-site": {"dfs.replication": hdfs["dfs.replication"]}}

    def fields(self) -> dict[str, str]:
        uri = self.dep.site["core-site"]["fs.defaultFS"]
        return {"uri": uri, "fs": uri, "nn": self.dep.site["hdfs-site"]["dfs.namenode.rpc-address"]}

    def version_command(self, home: str) -> str:
        return self.dep.java_command(self._nn(), VERSION_MAIN)


KIND = Hdfs
