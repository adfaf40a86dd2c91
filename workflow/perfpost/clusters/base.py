"""What every cluster kind shares: its configuration and the pieces a deployment is made of.

A :class:`ClusterSpec` is one configuration of a system under test, as a cell needs it (axis
values filled in): the kind (``ozone``, ``hdfs``, ``yarn``), the release, which hosts run
which role, site keys per file, JVM options and environment per role. Its :meth:`id
<ClusterSpec.ident>` names it: cells with the same configuration share one cluster.

Here too: a host of a cluster (:class:`Node`) and a daemon on it (:class:`Daemon`), site files
(written, merged, their ``{id}`` filled, compared with the release's defaults), a daemon log's
telling lines (:func:`excerpt`) and the release a version command names (:func:`release`).
That configuration on its hosts, and the :class:`~perfpost.clusters.deployment.Kind` each kind
subclasses, are :mod:`perfpost.clusters.deployment`; starting and stopping it,
:mod:`perfpost.clusters.lifecycle`.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from perfpost.errors import PerfpostError
from perfpost.hostenv import LOCALHOST
from perfpost.shell import write_files_script

SITE_FILES = ("core-site", "hdfs-site", "ozone-site", "yarn-site", "mapred-site")
FRESH = ("configuration", "cell")
DEFAULT_DIR = "/var/tmp/perfpost"
STOP_GRACE = 20.0  # seconds a daemon gets to stop after TERM before KILL


class ClusterError(PerfpostError):
    """A cluster that could not be started or used; the message says which daemon and why,
    with what its log says of it (:func:`excerpt`)."""


# Lines of a daemon's log that tell why it failed: log4j's ERROR and FATAL, and an
# exception's own line ("java.net.BindException: ...", "Caused by: ...").
TELLING = re.compile(
    r" (ERROR|FATAL) |^(Caused by: |Exception in thread \S+ )?[A-Za-z_$][\w$]*(\.[\w$]+)+"
    r"(Exception|Error)\b"
)
# What a Hadoop daemon's log holds whatever went wrong: stack frames, and the banners it
# prints when it starts and when it exits (which end the log of every failed start).
HADOOP_QUIET = (
    r"^\s+at ",
    r"^\s+\.\.\. \d+ more$",
    r"STARTUP_MSG:",
    r"SHUTDOWN_MSG:",
    r"^/?\*{20,}/?$",
)


def excerpt(text: str, quiet: Iterable[str] = HADOOP_QUIET, first: int = 5, last: int = 6) -> str:
    """What a log says of a failure: its ``first`` telling lines (:data:`TELLING`: the
    first error is the cause, the next ones mostly its consequences), then its ``last``
    lines, leaving out the lines ``quiet`` matches; "..." where lines were skipped."""
    skip = [re.compile(q) for q in quiet]
    lines = [line for line in text.splitlines() if not any(q.search(line) for q in skip)]
    telling = [i for i, line in enumerate(lines) if TELLING.search(line)][:first]
    keep = sorted({*telling, *range(max(0, len(lines) - last), len(lines))})
    out: list[str] = []
    for n, i in enumerate(keep):
        if (n == 0 and i > 0) or (n > 0 and i != keep[n - 1] + 1):
            out.append("...")
        out.append(lines[i])
    return "\n".join(out)


def _escape(text: str) -> str:
    # What xml.sax.saxutils.escape does, without the 18 ms of imports (urllib.request, ssl,
    # email) it brings into every cell's process.
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def site_xml(props: dict[str, Any]) -> str:
    """A Hadoop ``*-site.xml`` of ``props``, values escaped."""
    body = "".join(
        f"  <property><name>{_escape(k)}</name><value>{_escape(str(v))}</value></property>\n"
        for k, v in props.items()
    )
    return f'<?xml version="1.0"?>\n<configuration>\n{body}</configuration>\n'


@dataclass(frozen=True)
class ClusterSpec:
    """One configuration of a system under test, rendered for a cell."""

    name: str  # the config's name for it (clusters.<name>)
    kind: str
    version: str
    roles: dict[str, list[str]]  # role -> hosts, in order
    site: dict[str, dict[str, str]] = field(default_factory=dict)  # "ozone-site" -> keys
    jvm: dict[str, str] = field(default_factory=dict)  # role (or "all") -> JVM options
    # role (or "all") -> a command its daemons start under (strace -f -c -o ..., perf stat)
    prefix: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    dir: str = DEFAULT_DIR
    home: str | None = None  # an install on every host; default: perfpost's provisioned one
    build: str | None = None  # a build of the user's (builds.py), staged at ``home``
    cache: str | None = None  # where perfpost provisions it (the config's tools cache)
    buckets: list[str] = field(default_factory=list)  # ozone: "volume/bucket" made after start
    fresh: str = "configuration"
    shared: bool = False  # cells of this cluster may run at the same time
    # A host's set-up (perfpost.run.hostsetup): its "setup" and "teardown" steps.
    steps: dict[str, list[Any]] = field(default_factory=dict)
    # Site keys for one side alone: "daemons" (their files only) or "clients" (the cells'
    # client configuration only) -> file -> keys. ``site`` reaches both.
    sides: dict[str, dict[str, dict[str, str]]] = field(default_factory=dict)

    def side_site(self, side: str) -> dict[str, dict[str, str]]:
        """The site keys that reach one side: those of both, then that side's own."""
        return merge_site(self.site, self.sides.get(side, {}))

    def identity(self) -> dict[str, Any]:
        """What makes two clusters the same: everything but the config's name for it, how
        cells share it and where perfpost keeps the release it provisions."""
        data = asdict(self)
        for k in ("name", "fresh", "shared", "cache"):
            data.pop(k)
        for k in ("build", "steps", "sides", "prefix"):  # as before they existed, where unused
            if not data.get(k):
                data.pop(k, None)
        return data

    def ident(self) -> str:
        """``<kind>-<hash>``: readable, stable, the same for the same configuration."""
        blob = json.dumps(self.identity(), sort_keys=True, separators=(",", ":"))
        return f"{self.kind}-{hashlib.sha256(blob.encode()).hexdigest()[:10]}"

    def hosts(self) -> list[str]:
        """Every host of the cluster, in role order, once."""
        seen: list[str] = []
        for hosts in self.roles.values():
            seen += [h for h in hosts if h not in seen]
        return seen

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ClusterSpec:
        return cls(**data)


SETUP = "setup"  # the kind of a host's set-up (perfpost.run.hostsetup), held as a cluster


def setup_specs(steps: dict[str, Any], host: str) -> list[ClusterSpec]:
    """The set-ups a cell's ``steps`` make: its own host's, and one for each other host a
    step names with ``host`` (an iperf3 server on the machine its client measures against),
    each held as its host's own set-up (:func:`setup_spec`), in the order first named."""
    by_host: dict[str, dict[str, list[Any]]] = {}
    for phase in ("setup", "teardown"):
        for step in steps.get(phase, []):
            target = step.get("host") or host
            mine = by_host.setdefault(target, {"setup": [], "teardown": []})
            mine[phase].append({k: v for k, v in step.items() if k != "host"})
    if host in by_host or not by_host:  # the cell's own host first, as before steps named one
        own = by_host.pop(host, {k: list(v) for k, v in steps.items()})
        return [setup_spec(own, host), *(setup_spec(v, h) for h, v in by_host.items())]
    return [setup_spec(v, h) for h, v in by_host.items()]


def setup_spec(steps: dict[str, Any], host: str) -> ClusterSpec:
    """The set-up of ``host`` with ``steps`` (``setup`` and ``teardown`` lists), held as a
    cluster of kind :data:`SETUP` with that one host: each host set up and restored on its
    own, and the same steps on the same host the same configuration."""
    return ClusterSpec(
        name=SETUP,
        kind=SETUP,
        version="",
        roles={"host": [host]},
        steps={k: list(v) for k, v in steps.items() if k in ("setup", "teardown")},
    )


@dataclass
class Daemon:
    """One daemon process: which role, on which host, its pid (its process group) there."""

    role: str
    host: str
    index: int
    pid: int | None = None
    log: str = ""

    @property
    def label(self) -> str:
        return f"{self.role}-{self.index}" if self.index else self.role


def role_of(label: str) -> str:
    """The role of a :attr:`Daemon.label` (``datanode-2`` is a ``datanode``), also with the
    cluster before it (``ozone:datanode-2``): what a figure gives one colour."""
    return re.sub(r"-\d+$", "", label)


class Node:
    """One host of a cluster, through a :class:`perfpost.run.hosts.Host`."""

    def __init__(self, host: Any, spec: dict[str, Any]) -> None:
        self.host = host
        self.spec = spec
        self.name: str = spec["name"]

    @property
    def address(self) -> str:
        """Where daemons bind and clients reach them: loopback for ``localhost``; else the
        inventory's address, or the one SSH resolved (an ssh_config alias's HostName)."""
        if self.name == LOCALHOST:
            return "127.0.0.1"
        return str(self.spec.get("address") or getattr(self.host, "address", None) or self.name)

    def sh(self, script: str, timeout: float = 120.0, what: str = "") -> str:
        """Run ``script``; its standard output, or :class:`ClusterError` with its output."""
        result = self.host.run(script, timeout, force=True)
        if result.timed_out or result.exit_code != 0:
            said = (result.stderr or result.stdout or "").strip().splitlines()[-15:]
            how = "timed out" if result.timed_out else f"exit {result.exit_code}"
            raise ClusterError(
                f"{what or 'a command'} on {self.name} failed ({how})"
                + (":\n" + "\n".join(said) if said else "")
            )
        return str(result.stdout)

    def write(self, files: dict[str, str]) -> None:
        """Write ``files`` (path -> text) on the host, directories made as needed."""
        if files:
            self.sh(write_files_script(files, private=False), what="writing the configuration")

    def read(self, path: str) -> str:
        data = self.host.read(path)
        return "" if data is None else data.decode(errors="replace")

    def alive(self, pids: Iterable[int]) -> set[int]:
        """Which of ``pids`` still run there."""
        pids = [int(p) for p in pids]
        if not pids:
            return set()
        script = "; ".join(f"kill -0 {p} 2>/dev/null && echo {p}" for p in pids) + "; true"
        return {int(x) for x in self.sh(script, what="checking daemons").split()}

    def stop(self, pids: list[int], grace: float = STOP_GRACE) -> None:
        """TERM each process group, KILL those left after ``grace`` seconds."""
        if not pids:
            return
        groups = " ".join(str(int(p)) for p in pids)
        script = (
            f"for p in {groups}; do kill -TERM -$p 2>/dev/null; done; i=0; "
            f"while [ $i -lt {int(grace * 5)} ]; do left=; "
            f"for p in {groups}; do kill -0 -$p 2>/dev/null && left=1; done; "
            f'[ -z "$left" ] && exit 0; sleep 0.2; i=$((i+1)); done; '
            f"for p in {groups}; do kill -KILL -$p 2>/dev/null; done; exit 0"
        )
        self.sh(script, timeout=grace + 30, what="stopping daemons")


def classpath(home: str) -> str:
    """The jars of an install: perfpost's provisioned layout (``lib/``), or an Ozone or
    Hadoop distribution's (``share/...``)."""
    # An Ozone distribution's share/ozone/lib also holds the shaded file system clients
    # (ozone-filesystem-hadoop*.jar), which repeat Ozone's classes built against relocated
    # libraries (Ozone's own scripts list each daemon's jars instead): a daemon started with
    # them first failed with NoSuchMethodError in RatisHelper. They are left out.
    return (
        f'$(if [ -d {home}/lib ]; then echo "{home}/lib/*"; '
        f"elif [ -d {home}/share/ozone/lib ]; then for j in {home}/share/ozone/lib/*.jar; do "
        'case "${j##*/}" in ozone-filesystem-hadoop*) ;; *) printf "%s:" "$j" ;; esac; done; '
        f'else for d in {home}/share/hadoop/*; do printf "%s/*:%s/lib/*:" "$d" "$d"; done; fi)'
    )


def release(version_output: str, fallback: str = "") -> str:
    """The release a ``version`` command's output names (``Hadoop 3.4.2`` and its build
    details: ``3.4.2``; Ozone's logo, then ``2.2.0(Katmai)``: ``2.2.0``); ``fallback``
    when it names none."""
    m = re.search(r"(?<![\w.])(\d+\.\d+(?:\.\d+)*)", version_output)
    return m.group(1) if m else fallback


def site_defaults(home: str) -> dict[str, str]:
    """Every key's default as the release ships it (the ``*-default.xml`` files in its jars),
    when the install is on this machine; empty otherwise."""
    import xml.etree.ElementTree as ET
    import zipfile

    out: dict[str, str] = {}
    lib = Path(home) / "lib"
    if not lib.is_dir():
        return out
    for jar in sorted(lib.glob("*.jar")):
        try:
            with zipfile.ZipFile(jar) as z:
                for name in z.namelist():
                    if "/" in name or not name.endswith("-default.xml"):
                        continue
                    for prop in ET.fromstring(z.read(name)).iter("property"):
                        key, value = prop.findtext("name"), prop.findtext("value")
                        if key and key not in out:
                            out[key.strip()] = (value or "").strip()
        except (OSError, zipfile.BadZipFile, ET.ParseError):
            continue
    return out


def changed_keys(
    site: dict[str, dict[str, str]],
    defaults: dict[str, str],
    sides: dict[str, dict[str, dict[str, str]]] | None = None,
) -> list[dict[str, Any]]:
    """The site keys whose value is not the release's default: the post's "Default settings
    used except" list (file, key, value, default or None when the release has none). With
    ``sides`` (the config's keys for one side alone), each says the side it reached: a key
    for the daemons alone is ``daemons``, one for the clients alone (not in ``site``, the
    daemons' files) is added as ``clients``; the rest reached ``both``."""
    sides = sides or {}
    daemons = {(f, k) for f, keys in sides.get("daemons", {}).items() for k in keys}
    # The daemons' files (each key both sides' unless the daemons' alone), then the clients'.
    layers = [(site, lambda f, k: "daemons" if (f, k) in daemons else None)]
    layers.append((sides.get("clients", {}), lambda f, k: "clients"))
    out = []
    for files, side_of in layers:
        for name, keys in files.items():
            for key, value in sorted(keys.items()):
                if defaults.get(key) == str(value):
                    continue
                side = side_of(name, key)
                out.append(
                    {
                        "file": name,
                        "key": key,
                        "value": str(value),
                        "default": defaults.get(key),
                        **({"side": side} if side else {}),
                    }
                )
    return out


def fill_id(site: dict[str, dict[str, str]], ident: str) -> dict[str, dict[str, str]]:
    """The config's site keys with ``{id}`` (the cluster's id) filled in."""
    return {
        f: {k: str(v).replace("{id}", ident) for k, v in keys.items()} for f, keys in site.items()
    }


def merge_site(*layers: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
    """Site files, later layers' keys over earlier ones'."""
    out: dict[str, dict[str, str]] = {}
    for layer in layers:
        for name, keys in layer.items():
            out.setdefault(name, {}).update({k: str(v) for k, v in keys.items()})
    return out


def client_site(
    own: dict[str, dict[str, str]], configured: dict[str, dict[str, str]]
) -> dict[str, dict[str, str]]:
    """A cluster's client configuration: what its clients need to find it (``own``: the
    kind's addresses, replication), an empty core-site (Hadoop's FsShell refuses to start
    without one), and every key the config set in its site files (``configured``), as one
    configuration directory shared by daemons and clients gives them in a real deployment:
    a client-side key (``dfs.checksum.type``, read by the HDFS client) set in ``hdfs-site``
    must reach the client, or the run measures the default while the post says otherwise."""
    return merge_site({"core-site": {}}, own, configured)
