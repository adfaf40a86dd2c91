"""YARN: a ResourceManager and NodeManagers of a provisioned Hadoop release.

What teragen on YARN runs against. Daemons bind each host's address (loopback on
``localhost``) on free ports; containers run as the user running the NodeManager, with the
install's jars (and the client configuration) on their class path. Ready once every
NodeManager is RUNNING in the ResourceManager's view. A client gets ``yarn-site`` and
``mapred-site`` (``mapreduce.framework.name=yarn``), so ``teragen`` with ``local: false``
submits here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from perfpost import provision
from perfpost.clusters.deployment import Kind

# The Hadoop release whose ResourceManager and NodeManager perfpost fetches.
VERSION = "3.4.2"
RUNTIME = provision.Runtime(
    name="yarn",
    version=VERSION,
    files=Path(__file__).resolve().parent,
    version_property="hadoop.version",
    launcher="yarn",
    expect_jar="hadoop-yarn-server-resourcemanager-",
)

# Hadoop 3.4 on Java 17: the daemons and every task JVM need java.lang opened to Hadoop.
OPENS = "--add-opens java.base/java.lang=ALL-UNNAMED"
RM_PORTS = ("address", "scheduler.address", "resource-tracker.address", "admin.address")
RM_MAIN = "org.apache.hadoop.yarn.server.resourcemanager.ResourceManager"
NM_MAIN = "org.apache.hadoop.yarn.server.nodemanager.NodeManager"
HEAP = "-Xmx512m"
# The NodeManager's own install, in its environment for the containers' class path.
HOME_VAR = "HADOOP_YARN_HOME"


class Yarn(Kind):
    KIND = "yarn"
    RUNTIME = RUNTIME
    ROLES: ClassVar[dict[str, tuple[int, int | None]]] = {
        "resourcemanager": (1, 1),
        "nodemanager": (1, None),
    }
    START_ORDER = ("resourcemanager", "nodemanager")
    MAINS: ClassVar[dict[str, str]] = {"resourcemanager": RM_MAIN, "nodemanager": NM_MAIN}
    FIELDS: ClassVar[dict[str, str]] = {
        "rm": "the ResourceManager's address (host:port), as yarn.resourcemanager.address",
        "url": "the ResourceManager's web address (http://host:port), for its REST API",
        "web": "the same without the scheme (host:port): teragen's resourcemanager is "
        '"http://{yarn.web}"',
    }
    MEMORY_MB = 4096
    VCORES = 4

    def _rm(self) -> str:
        return self.dep.spec.roles["resourcemanager"][0]

    def configure(self) -> dict[str, dict[str, str]]:
        dep = self.dep
        rm = self._rm()
        dep.free_ports(rm, [f"rm.{p}" for p in RM_PORTS] + ["rm.webapp"])
        for h in dep.spec.roles["nodemanager"]:
            dep.free_ports(h, [f"nm.{h}", f"nm.localizer.{h}", f"nm.webapp.{h}", f"shuffle.{h}"])
        addr = dep.node(rm).address
        # Each NodeManager's own install and configuration (the hosts' paths may differ: a
        # delivered install lives in each login user's cache), expanded where a container starts.
        classpath = f"$HADOOP_CONF_DIR,${HOME_VAR}/lib/*"
        root = dep.root(rm)
        core = {"fs.defaultFS": "file:///"}
        yarn = {
            "yarn.resourcemanager.hostname": addr,
            **{f"yarn.resourcemanager.{p}": f"{addr}:{dep.ports['rm.' + p]}" for p in RM_PORTS},
            "yarn.resourcemanager.webapp.address": f"{addr}:{dep.ports['rm.webapp']}",
            # FIFO: the capacity scheduler refuses to start without a queue file.
            "yarn.resourcemanager.scheduler.class": (
                "org.apache.hadoop.yarn.server.resourcemanager.scheduler.fifo.FifoScheduler"
            ),
            "yarn.nodemanager.resource.memory-mb": str(self.MEMORY_MB),
            "yarn.nodemanager.resource.cpu-vcores": str(self.VCORES),
            "yarn.scheduler.minimum-allocation-mb": "128",
            # Small machines: no memory policing, and a nearly full disk stays usable.
            "yarn.nodemanager.vmem-check-enabled": "false",
            "yarn.nodemanager.pmem-check-enabled": "false",
            "yarn.nodemanager.disk-health-checker.max-disk-utilization-per-disk-percentage": "99.9",
            "yarn.nodemanager.aux-services": "mapreduce_shuffle",
            "yarn.nodemanager.aux-services.mapreduce_shuffle.class": (
                "org.apache.hadoop.mapred.ShuffleHandler"
            ),
            "yarn.nodemanager.env-whitelist": f"JAVA_HOME,HADOOP_CONF_DIR,{HOME_VAR},PATH,LANG,TZ",
            "yarn.application.classpath": classpath,
        }
        mapred = {
            "mapreduce.framework.name": "yarn",
            "yarn.app.mapreduce.am.staging-dir": f"{root}/staging",
            "mapreduce.application.classpath": classpath,
            "yarn.app.mapreduce.am.resource.mb": "512",
            "yarn.app.mapreduce.am.command-opts": "-Xmx384m",
            "yarn.app.mapreduce.am.admin-command-opts": OPENS,
            "mapreduce.admin.map.child.java.opts": OPENS,
            "mapreduce.admin.reduce.child.java.opts": OPENS,
            "mapreduce.map.memory.mb": "512",
            "mapreduce.map.java.opts": "-Xmx384m",
            "mapreduce.reduce.memory.mb": "512",
            "mapreduce.reduce.java.opts": "-Xmx384m",
        }
        return {"core-site": core, "yarn-site": yarn, "mapred-site": mapred}

    def host_site(self, host: str) -> dict[str, dict[str, str]]:
        # Each host's own directory: hosts may share the cluster's `dir`.
        root = self.dep.root(host)
        core = {"core-site": {"hadoop.tmp.dir": f"{root}/tmp"}}
        if host not in self.dep.spec.roles["nodemanager"]:
            return core
        addr, ports = self.dep.node(host).address, self.dep.ports
        return {
            **core,
            "yarn-site": {
                "yarn.nodemanager.local-dirs": f"{root}/local/dirs",
                "yarn.nodemanager.log-dirs": f"{root}/local/logs",
                "yarn.nodemanager.hostname": addr,
                "yarn.nodemanager.address": f"{addr}:{ports['nm.' + host]}",
                "yarn.nodemanager.localizer.address": f"{addr}:{ports['nm.localizer.' + host]}",
                "yarn.nodemanager.webapp.address": f"{addr}:{ports['nm.webapp.' + host]}",
            },
            # The shuffle service reads mapred-default.xml, which would override yarn-site.
            "mapred-site": {"mapreduce.shuffle.port": str(ports["shuffle." + host])},
        }

    def launch(self) -> None:
        dep = self.dep
        for host in dep.spec.hosts():
            dep.node(host).sh(f"mkdir -p {dep.root(host)}/local {dep.root(host)}/staging")
        self.start_instance("resourcemanager", 0)
        for i, _ in enumerate(dep.spec.roles["nodemanager"]):
            self.start_instance("nodemanager", i)

    def instance_opts(self, role: str, index: int) -> tuple[list[str], dict[str, str]]:
        # The NodeManager launches its containers' `$JAVA_HOME/bin/java`: every step on a host
        # is given the JDK its own `java` resolves into (hostscript.JAVA_HOME_FALLBACK).
        if role != "nodemanager":
            return [HEAP, *OPENS.split()], {}
        host = self.dep.spec.roles[role][index]
        # What the containers' class path names, as this host has it.
        mine = {"HADOOP_CONF_DIR": self.dep.conf_dir(host), HOME_VAR: self.dep.home[host]}
        return [HEAP, *OPENS.split()], mine

    def running_nodes(self) -> list[str]:
        data = self.dep.get_json("resourcemanager", "rm.webapp", "/ws/v1/cluster/nodes") or {}
        listed = (data.get("nodes") or {}).get("node", [])
        return [n["id"] for n in listed if n.get("state") == "RUNNING"]

    def ready(self) -> str | None:
        want = len(self.dep.spec.roles["nodemanager"])
        got = len(self.running_nodes())
        return None if got >= want else f"{want} NodeManager(s) RUNNING ({got} so far)"

    def client_site(self) -> dict[str, dict[str, str]]:
        yarn = {
            k: v
            for k, v in self.dep.site["yarn-site"].items()
            if k.startswith("yarn.resourcemanager.")
        }
        mapred = {
            k: v
            for k, v in self.dep.site["mapred-site"].items()
            if not k.startswith("mapreduce.shuffle")
        }
        return {"yarn-site": yarn, "mapred-site": mapred}

    def fields(self) -> dict[str, str]:
        addr = self.dep.address("resourcemanager")
        web = f"{addr}:{self.dep.ports['rm.webapp']}"
        return {"rm": f"{addr}:{self.dep.ports['rm.address']}", "url": f"http://{web}", "web": web}

    def version_command(self, home: str) -> str:
        return self.dep.java_command(self._rm(), "org.apache.hadoop.util.VersionInfo")


KIND = Yarn


def get_json(url: str, timeout: float = 5.0) -> Any:
    """The JSON body of ``url`` (a loopback REST endpoint)."""
    import json
    import urllib.request

    req = urllib.request.Request(url, headers={"Accept": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return json.load(resp)
