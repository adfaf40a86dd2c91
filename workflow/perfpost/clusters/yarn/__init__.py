"""A single-node YARN: one ResourceManager and one NodeManager of a provisioned Hadoop release,
on free loopback ports, with all state in one directory.

It is the cluster perfpost's teragen-on-YARN path is tested against (the same daemons a
cluster runs, started from the Maven Central jars), and a way to try that path with no
cluster: ``perfpost yarn-single-node DIR`` prints the ResourceManager's URL and a client
configuration directory (``HADOOP_CONF_DIR``) for teragen's ``env``.

Layout of ``root``: ``conf/`` (the daemons' configuration), ``client-conf/`` (what a client
needs to submit MapReduce jobs here), ``logs/``, ``local/`` (NodeManager directories) and
``staging/`` (MapReduce staging). Containers run as the user running the daemons.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

from perfpost import provision
from perfpost.errors import PerfpostError

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
DAEMONS = ("resourcemanager", "nodemanager")
RM_PORTS = ("address", "scheduler.address", "resource-tracker.address", "admin.address")


def free_port() -> int:
    """A loopback port nothing listens on now (the daemons bind it a moment later)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def site_xml(props: dict[str, Any]) -> str:
    """A Hadoop ``*-site.xml`` of ``props``, values escaped."""
    body = "".join(
        f"  <property><name>{escape(k)}</name><value>{escape(str(v))}</value></property>\n"
        for k, v in props.items()
    )
    return f'<?xml version="1.0"?>\n<configuration>\n{body}</configuration>\n'


def java_home() -> str:
    """JAVA_HOME for the containers: the NodeManager launches ``$JAVA_HOME/bin/java``."""
    if os.environ.get("JAVA_HOME"):
        return os.environ["JAVA_HOME"]
    java = shutil.which("java")
    if not java:
        raise PerfpostError("no java on PATH: run scripts/setup")
    return str(Path(java).resolve().parents[1])


def get_json(url: str, timeout: float = 5.0) -> Any:
    """The JSON body of ``url`` (a loopback REST endpoint)."""
    req = urllib.request.Request(url, headers={"Accept": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return json.load(resp)


@dataclass
class SingleNodeYarn:
    """One ResourceManager and one NodeManager under ``root``, run by ``launcher``
    (``bin/yarn`` of a provisioned ``yarn`` runtime)."""

    launcher: Path
    root: Path
    memory_mb: int = 4096
    vcores: int = 4
    ports: dict[str, int] = field(default_factory=dict)
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def lib(self) -> Path:
        return self.launcher.resolve().parents[1] / "lib"

    @property
    def client_conf(self) -> Path:
        return self.root / "client-conf"

    @property
    def rm_url(self) -> str:
        return f"http://127.0.0.1:{self.ports['rm.webapp']}"

    @property
    def rm_address(self) -> str:
        return f"127.0.0.1:{self.ports['rm.address']}"

    def _write_conf(self) -> None:
        names = [f"rm.{p}" for p in RM_PORTS] + ["rm.webapp", "nm", "nm.localizer", "nm.webapp"]
        self.ports = {n: free_port() for n in [*names, "shuffle"]}
        classpath = f"{self.root / 'conf'},{self.lib}/*"
        rm = {f"yarn.resourcemanager.{p}": f"127.0.0.1:{self.ports['rm.' + p]}" for p in RM_PORTS}
        rm["yarn.resourcemanager.webapp.address"] = f"127.0.0.1:{self.ports['rm.webapp']}"
        core = {
            "fs.defaultFS": "file:///",
            "hadoop.tmp.dir": str(self.root / "tmp"),
        }
        yarn = {
            "yarn.resourcemanager.hostname": "127.0.0.1",
            **rm,
            # FIFO: the capacity scheduler refuses to start without a queue file.
            "yarn.resourcemanager.scheduler.class": (
                "org.apache.hadoop.yarn.server.resourcemanager.scheduler.fifo.FifoScheduler"
            ),
            "yarn.nodemanager.hostname": "127.0.0.1",
            "yarn.nodemanager.address": f"127.0.0.1:{self.ports['nm']}",
            "yarn.nodemanager.localizer.address": f"127.0.0.1:{self.ports['nm.localizer']}",
            "yarn.nodemanager.webapp.address": f"127.0.0.1:{self.ports['nm.webapp']}",
            "yarn.nodemanager.local-dirs": str(self.root / "local" / "dirs"),
            "yarn.nodemanager.log-dirs": str(self.root / "local" / "logs"),
            "yarn.nodemanager.resource.memory-mb": self.memory_mb,
            "yarn.nodemanager.resource.cpu-vcores": self.vcores,
            "yarn.scheduler.minimum-allocation-mb": 128,
            # One small machine: no memory policing, and a nearly full disk stays usable.
            "yarn.nodemanager.vmem-check-enabled": "false",
            "yarn.nodemanager.pmem-check-enabled": "false",
            "yarn.nodemanager.disk-health-checker.max-disk-utilization-per-disk-percentage": 99.9,
            "yarn.nodemanager.aux-services": "mapreduce_shuffle",
            "yarn.nodemanager.aux-services.mapreduce_shuffle.class": (
                "org.apache.hadoop.mapred.ShuffleHandler"
            ),
            "yarn.nodemanager.env-whitelist": "JAVA_HOME,PATH,LANG,TZ",
            "yarn.application.classpath": classpath,
        }
        mapred = {
            "mapreduce.framework.name": "yarn",
            # The shuffle service reads mapred-default.xml, which would override yarn-site.
            "mapreduce.shuffle.port": self.ports["shuffle"],
            "yarn.app.mapreduce.am.staging-dir": str(self.root / "staging"),
            "mapreduce.application.classpath": classpath,
            "yarn.app.mapreduce.am.resource.mb": 512,
            "yarn.app.mapreduce.am.command-opts": "-Xmx384m",
            "yarn.app.mapreduce.am.admin-command-opts": OPENS,
            "mapreduce.admin.map.child.java.opts": OPENS,
            "mapreduce.admin.reduce.child.java.opts": OPENS,
            "mapreduce.map.memory.mb": 512,
            "mapreduce.map.java.opts": "-Xmx384m",
            "mapreduce.reduce.memory.mb": 512,
            "mapreduce.reduce.java.opts": "-Xmx384m",
        }
        for d in ("conf", "client-conf"):
            conf = self.root / d
            conf.mkdir(parents=True, exist_ok=True)
            (conf / "core-site.xml").write_text(site_xml(core))
            (conf / "yarn-site.xml").write_text(site_xml(yarn))
            (conf / "mapred-site.xml").write_text(site_xml(mapred))
        (self.root / "conf" / "log4j.properties").write_text(
            (self.launcher.resolve().parents[1] / "conf" / "log4j.properties").read_text()
        )

    def start(self, timeout: float = 120.0) -> SingleNodeYarn:
        """Start both daemons; returns once the NodeManager is RUNNING in the RM's view."""
        self.root.mkdir(parents=True, exist_ok=True)
        self._write_conf()
        (self.root / "logs").mkdir(exist_ok=True)
        env = {
            **os.environ,
            "HADOOP_CONF_DIR": str(self.root / "conf"),
            "JAVA_HOME": java_home(),
            "YARN_OPTS": f"-Xmx512m -Dhadoop.log.dir={self.root / 'logs'}",
        }
        for daemon in DAEMONS:
            with open(self.root / "logs" / f"{daemon}.log", "ab") as log:
                self.procs[daemon] = subprocess.Popen(
                    [str(self.launcher), daemon],
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=env,
                    cwd=self.root,
                    start_new_session=True,  # its own group: stop() kills all it started
                )
        (self.root / "pids").write_text("".join(f"{d} {p.pid}\n" for d, p in self.procs.items()))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for daemon, proc in self.procs.items():
                if proc.poll() is not None:
                    tail = self.log_tail(daemon)
                    self.stop()
                    raise PerfpostError(
                        f"the {daemon} exited (code {proc.returncode}) while starting; "
                        f"{self.root / 'logs' / (daemon + '.log')} ends:\n{tail}"
                    )
            if self.running_nodes():
                return self
            time.sleep(0.5)
        self.stop()
        raise PerfpostError(
            f"no NodeManager RUNNING at {self.rm_url} after {timeout:g} s; see {self.root}/logs"
        )

    def running_nodes(self) -> list[str]:
        try:
            nodes = get_json(f"{self.rm_url}/ws/v1/cluster/nodes", timeout=2.0)
        except (OSError, ValueError):
            return []
        listed = (nodes.get("nodes") or {}).get("node", [])
        return [n["id"] for n in listed if n["state"] == "RUNNING"]

    def log_tail(self, daemon: str, lines: int = 15) -> str:
        path = self.root / "logs" / f"{daemon}.log"
        text = path.read_text(errors="replace") if path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def stop(self, grace: float = 20.0) -> None:
        """Stop the daemons (TERM, then KILL after ``grace``) and any container left over.

        The NodeManager goes first: stopping, it unregisters from the ResourceManager and
        retries for 30 s when that is already gone."""
        for daemon in reversed(DAEMONS):
            proc = self.procs.get(daemon)
            if proc is None:
                continue
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
            try:
                proc.wait(grace)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        self._kill_strays()

    def _kill_strays(self) -> None:
        """Containers run in sessions of their own: any process still working inside the
        NodeManager's directories is one the NodeManager did not stop."""
        local = str((self.root / "local").resolve())
        for pid_dir in Path("/proc").iterdir():
            if not pid_dir.name.isdigit():
                continue
            try:
                cwd = os.readlink(pid_dir / "cwd")
            except OSError:
                continue
            if cwd.startswith(local):
                try:
                    os.kill(int(pid_dir.name), signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def __enter__(self) -> SingleNodeYarn:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
