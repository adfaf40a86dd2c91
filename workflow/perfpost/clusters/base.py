"""What every cluster kind shares: its configuration, its daemons on hosts, start and stop.

A :class:`ClusterSpec` is one configuration of a system under test, as a cell needs it (axis
values filled in): the kind (``ozone``, ``hdfs``, ``yarn``), the release, which hosts run
which role, site keys per file, JVM options and environment per role. Its :meth:`id
<ClusterSpec.ident>` names it: cells with the same configuration share one cluster.

A :class:`Deployment` is that configuration on its hosts: a directory per host
(``<dir>/perfpost-cluster-<id>-<host>``, with ``conf/``, ``logs/`` and the daemons' data;
named after the host too, so hosts that share ``dir`` keep apart), daemons
started detached (a session of their own, so a finished step does not take them along), and
what a client needs (addresses, a client configuration). Its state is plain JSON, so any
later process (the last cell, the run's end, the watcher of a killed run, the next run) can
stop it. Hosts are reached through :class:`perfpost.run.hosts.Host`, the same way as cells:
``localhost`` with ``sh``, others over SSH.

A kind (``clusters/<kind>/``) subclasses :class:`Kind`: which roles it has, the files it
writes, the order it starts its daemons in, when it is ready, what clients get.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import hashlib
import json
import re
import shlex
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from perfpost import deliver, provision
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
    env: dict[str, str] = field(default_factory=dict)
    dir: str = DEFAULT_DIR
    home: str | None = None  # an install on every host; default: perfpost's provisioned one
    build: str | None = None  # a build of the user's (builds.py), staged at ``home``
    cache: str | None = None  # where perfpost provisions it (the config's tools cache)
    buckets: list[str] = field(default_factory=list)  # ozone: "volume/bucket" made after start
    fresh: str = "configuration"
    shared: bool = False  # cells of this cluster may run at the same time

    def identity(self) -> dict[str, Any]:
        """What makes two clusters the same: everything but the config's name for it, how
        cells share it and where perfpost keeps the release it provisions."""
        data = asdict(self)
        for k in ("name", "fresh", "shared", "cache"):
            data.pop(k)
        if data.get("build") is None:  # as before builds existed: the same ids
            data.pop("build", None)
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


# JVMs that run a step and exit (init, shell, version): start-up is all they do.
QUICK_JVM = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")
# Hadoop's metrics system takes a snapshot of every source once a period (10 s by default),
# and its JMX and Prometheus views show the last one: a period of 1 s lets perfpost follow a
# run of a few seconds.
METRICS2 = "# perfpost: snapshots every second\n*.period=1\n"

# The step that starts a daemon ends with its process group killed: wait until the daemon
# has its own session (its pid is its session id) before the step ends.
_WAIT_SESSION = (
    'i=0; while [ $i -lt 200 ] && [ "$(cut -d\' \' -f6 /proc/$p/stat 2>/dev/null)" != "$p" ]'
    " && kill -0 $p 2>/dev/null; do sleep 0.05; i=$((i+1)); done"
)


class Kind:
    """A kind of cluster. Subclasses set the class attributes and implement the hooks; the
    instance holds one deployment's ports and addresses."""

    KIND: ClassVar[str]
    RUNTIME: ClassVar[provision.Runtime]  # what perfpost provisions for its daemons
    ROLES: ClassVar[dict[str, tuple[int, int | None]]]  # role -> (fewest, most hosts)
    START_ORDER: ClassVar[tuple[str, ...]]  # roles, in the order they are started
    FIELDS: ClassVar[dict[str, str]]  # what `{<cluster>.<field>}` gives a cell's params
    # What a daemon's log may say that changes what was measured (a setting it ignored):
    # (pattern, the post's sentence with the pattern's groups as {0}, {1}...).
    NOTES: ClassVar[tuple[tuple[str, str], ...]] = ()
    # Log lines that never tell why a daemon failed, left out of a failure's reason.
    QUIET: ClassVar[tuple[str, ...]] = HADOOP_QUIET

    def __init__(self, dep: Deployment) -> None:
        self.dep = dep

    # -- hooks --------------------------------------------------------------------------
    def configure(self) -> dict[str, dict[str, str]]:
        """The site files every daemon gets (perfpost's keys, then the spec's over them):
        addresses and ports chosen here, kept in ``dep.ports``."""
        raise NotImplementedError

    def host_site(self, host: str) -> dict[str, dict[str, str]]:
        """Keys that differ on ``host`` (a worker's own address); over :meth:`configure`'s."""
        return {}

    def launch(self) -> None:
        """Initialize and start the daemons (``dep.start_daemon``) in order."""
        raise NotImplementedError

    def ready(self) -> str | None:
        """None once the cluster serves clients; otherwise what it still waits for."""
        raise NotImplementedError

    def prepare(self) -> None:
        """What cells need once it is ready (Ozone's volumes and buckets)."""

    def client_site(self) -> dict[str, dict[str, str]]:
        """The site files a client of this cluster needs."""
        raise NotImplementedError

    def fields(self) -> dict[str, str]:
        """Values of :attr:`FIELDS` for this deployment."""
        raise NotImplementedError

    def version_command(self, home: str) -> str:
        """A shell command printing the release as the system's own ``version`` does."""
        raise NotImplementedError

    def version_text(self, printed: str) -> str:
        """What the post shows of :meth:`version_command`'s output."""
        return printed.strip()

    def on_disk_script(self, host: str, dirs: list[str]) -> str | None:
        """A shell command listing what the daemons on ``host`` left in ``dirs`` (the
        cluster's own directories) that tells what they really did, run before they are
        removed; None when there is nothing to look at."""
        return None

    def on_disk_note(self, host: str, printed: str) -> str | None:
        """The post's sentence on :meth:`on_disk_script`'s output, from the files alone."""
        return None


@dataclass
class Deployment:
    """A cluster configuration on its hosts; see the module's docstring."""

    spec: ClusterSpec
    hosts: dict[str, dict[str, Any]]  # host name -> inventory spec (how to reach it)
    home: dict[str, str] = field(default_factory=dict)  # host -> install
    ports: dict[str, int] = field(default_factory=dict)
    daemons: list[Daemon] = field(default_factory=list)
    site: dict[str, dict[str, str]] = field(default_factory=dict)
    client: dict[str, dict[str, str]] = field(default_factory=dict)
    values: dict[str, str] = field(default_factory=dict)  # FIELDS' values
    version: str = ""
    changed: list[dict[str, Any]] = field(default_factory=list)  # keys not at their default
    notes: list[str] = field(default_factory=list)  # what the daemons said of the config
    # What perfpost delivered to the hosts for this start (run.deliver.Delivery.record()).
    delivered: list[dict[str, Any]] = field(default_factory=list)
    tag: str = ""  # who deployed it (a short hash of the controller's directory)
    # The id, as the configuration had it when it started: a state read back keeps its spec
    # with secret settings masked (:func:`perfpost.hostenv.mask_settings`), which hashes to
    # another id, and the id names the cluster's directories.
    known_ident: str = ""
    # How a host is reached (:func:`perfpost.run.hosts.open_host`), given by the run.
    opener: Any = field(default=None, repr=False)
    # Called with the deployment whenever a daemon was started, so its state is saved.
    on_change: Any = field(default=None, repr=False)
    _nodes: dict[str, Node] = field(default_factory=dict, repr=False)

    @property
    def ident(self) -> str:
        return self.known_ident or self.spec.ident()

    @property
    def scope(self) -> str:
        """The id, and whose it is: two checkouts running one configuration at once (same
        id, same ``dir``) must not share, or remove, each other's directories."""
        return f"{self.ident}-{self.tag}" if self.tag else self.ident

    def root(self, host: str) -> str:
        # The host's name too: hosts may share `dir` (a network file system, one machine
        # under two names), and each writes its own configuration there.
        return f"{self.spec.dir.rstrip('/')}/perfpost-cluster-{self.scope}-{host}"

    def node(self, host: str) -> Node:
        if host not in self._nodes:
            if self.opener is None:
                raise ClusterError("no way to reach the cluster's hosts was given")
            self._nodes[host] = Node(self.opener(self.hosts[host]), self.hosts[host])
        return self._nodes[host]

    def address(self, role: str, index: int = 0) -> str:
        return self.node(self.spec.roles[role][index]).address

    def close(self) -> None:
        for n in self._nodes.values():
            try:
                n.host.close()
            except Exception:
                pass
        self._nodes.clear()

    # -- what kinds use -----------------------------------------------------------------
    def free_ports(self, host: str, names: list[str]) -> None:
        """Choose a port nothing listens on for each of ``names`` on ``host``, once: a
        restart keeps them (Ratis state records its peers)."""
        wanted = [n for n in names if n not in self.ports]
        if not wanted:
            return
        script = (
            "python3 -c 'import socket,sys\n"
            "ss=[socket.socket() for _ in range(int(sys.argv[2]))]\n"
            "[s.bind((sys.argv[1],0)) for s in ss]\n"
            "print(*[s.getsockname()[1] for s in ss])' "
            f"{shlex.quote(self.node(host).address)} {len(wanted)}"
        )
        got = self.node(host).sh(script, what="choosing free ports").split()
        self.ports.update(zip(wanted, (int(p) for p in got), strict=True))

    def jvm(self, role: str) -> list[str]:
        """The config's JVM options of ``role`` (after perfpost's: the last -Xmx wins)."""
        if not role:
            return []
        opts = self.spec.jvm.get(role, self.spec.jvm.get("all", ""))
        return shlex.split(opts)

    def conf_dir(self, host: str) -> str:
        return f"{self.root(host)}/conf"

    def run_java(
        self,
        host: str,
        role: str,
        main: str,
        args: list[str],
        opts: list[str],
        what: str,
        timeout: float = 300.0,
    ) -> str:
        """Run a JVM of this cluster to its end (an init step, a client command), its output
        in a log of its own; a failure says what that log says of it.

        These JVMs are not measured: they start with the client compiler only (half their
        CPU time on a small machine). The daemons keep the JVM's defaults."""
        cmd = self._shell_java(host, role, main, args, [*opts, *QUICK_JVM])
        log = f"{self.root(host)}/logs/{re.sub(r'[^A-Za-z0-9._-]+', '-', what).strip('-')}.log"
        try:
            return self.node(host).sh(
                f"cd {shlex.quote(self.root(host))} && {self._env(role)} {cmd} >{log} 2>&1",
                timeout=timeout,
                what=what,
            )
        except ClusterError as e:
            raise ClusterError(f"{e}; {log} says:\n{self.log_excerpt(host, log)}") from None

    def _env(self, role: str) -> str:
        return "env " + " ".join(shlex.quote(f"{k}={v}") for k, v in self.spec.env.items())

    def _shell_java(self, host: str, role: str, main: str, args: list[str], opts: list[str]) -> str:
        cp = f"{self.conf_dir(host)}:{classpath(self.home[host])}"
        # Jetty unpacks web UIs into java.io.tmpdir and never removes them: the cluster's own.
        tmp = f"-Djava.io.tmpdir={self.root(host)}/tmp"
        quoted = [shlex.quote(a) for a in [*opts, tmp, *self.jvm(role)]]
        return " ".join(
            ["java", *quoted, "-cp", f'"{cp}"', shlex.quote(main), *(shlex.quote(a) for a in args)]
        )

    def java_command(self, host: str, main: str, args: list[str] = ()) -> str:  # type: ignore[assignment]
        """A shell command running ``main`` of the install on ``host`` (a client step)."""
        return self._shell_java(host, "", main, list(args), list(QUICK_JVM))

    def start_daemon(
        self,
        role: str,
        index: int,
        main: str,
        args: list[str],
        opts: list[str],
        env: dict[str, str] | None = None,
    ) -> Daemon:
        """Start one daemon detached; recorded at once, so a stop finds it whatever follows."""
        host = self.spec.roles[role][index]
        d = Daemon(role, host, index, log=f"{self.root(host)}/logs/{role}-{index}.log")
        cmd = self._shell_java(host, role, main, args, opts)
        envs = " ".join(
            shlex.quote(f"{k}={v}") for k, v in {**(env or {}), **self.spec.env}.items()
        )
        script = (
            f"mkdir -p {shlex.quote(str(Path(d.log).parent))} && "
            f"cd {shlex.quote(self.root(host))} && "
            f"setsid sh -c {shlex.quote(f'exec env {envs} {cmd}')} "
            f"</dev/null >>{shlex.quote(d.log)} 2>&1 & p=$!; {_WAIT_SESSION}; echo $p"
        )
        out = self.node(host).sh(script, what=f"starting the {d.label}").split()
        d.pid = int(out[-1])
        self.daemons.append(d)
        if self.on_change is not None:
            self.on_change(self)
        return d

    def wait_for(self, ready: Any, timeout: float, what: str) -> None:
        """Wait until ``ready()``; a daemon that exits meanwhile fails the start at once."""
        deadline = time.monotonic() + timeout
        while not ready():
            dead = self.dead_daemon()
            if dead is not None:
                raise ClusterError(
                    f"the {dead.label} on {dead.host} exited while the cluster started; "
                    f"{dead.log} says:\n{self.log_excerpt(dead.host, dead.log)}"
                )
            if time.monotonic() > deadline:
                raise ClusterError(f"{what} did not answer within {timeout:g} s")
            time.sleep(0.5)

    def get_json(self, role: str, port: str, path: str, index: int = 0) -> Any:
        """A daemon's HTTP JSON (``/jmx?qry=...``, REST), or None while it does not answer."""
        url = f"http://{self.address(role, index)}:{self.ports[port]}{path}"
        import urllib.error
        import urllib.request  # here: http.client and email cost each run-cell 30 ms

        req = urllib.request.Request(url, headers={"Accept": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=3.0) as resp:
                return json.load(resp)
        except (OSError, ValueError, urllib.error.URLError):
            return None

    def jmx(self, role: str, port: str, bean: str, index: int = 0) -> dict[str, Any]:
        data = self.get_json(role, port, f"/jmx?qry={bean}", index) or {}
        beans = data.get("beans") or [{}]
        return beans[0]

    def log_excerpt(self, host: str, path: str, first: int = 5, last: int = 6) -> str:
        """What the log ``path`` on ``host`` says of a failure (:func:`excerpt`), without
        the lines this kind's daemons print whatever happens."""
        from perfpost import clusters

        try:
            text = self.node(host).read(path)
        except Exception as e:  # the host itself is gone
            return f"(cannot read {path}: {e})"
        return excerpt(text, clusters.get(self.spec.kind).QUIET, first, last)

    def read_notes(self, patterns: tuple[tuple[str, str], ...], logs: dict[str, str]) -> None:
        """Add what ``logs`` (daemon label -> text) say that ``patterns`` look for."""
        for label, text in logs.items():
            for pattern, sentence in patterns:
                for m in re.finditer(pattern, text):
                    note = f"{label}: " + sentence.format(*m.groups())
                    if note not in self.notes:
                        self.notes.append(note)

    def daemon_logs(self) -> dict[str, str]:
        """Every daemon's whole log, by its label and host."""
        out = {}
        for d in self.daemons:
            try:
                out[f"{d.label} on {d.host}"] = self.node(d.host).read(d.log)
            except Exception:
                continue
        return out

    def dead_daemon(self) -> Daemon | None:
        """A daemon that exited; None while all run."""
        by_host: dict[str, list[Daemon]] = {}
        for d in self.daemons:
            by_host.setdefault(d.host, []).append(d)
        for host, ds in by_host.items():
            alive = self.node(host).alive(d.pid for d in ds if d.pid)
            for d in ds:
                if d.pid not in alive:
                    return d
        return None

    # -- state --------------------------------------------------------------------------
    def to_state(self) -> dict[str, Any]:
        return {
            "spec": self.spec.to_dict(),
            "hosts": self.hosts,
            "home": self.home,
            "ports": self.ports,
            "daemons": [asdict(d) for d in self.daemons],
            "site": self.site,
            "client": self.client,
            "fields": self.values,
            "version": self.version,
            "changed": self.changed,
            "notes": self.notes,
            "delivered": self.delivered,
            "tag": self.tag,
            "id": self.ident,
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> Deployment:
        return cls(
            spec=ClusterSpec.from_dict(state["spec"]),
            hosts=state["hosts"],
            home=state.get("home", {}),
            ports=state.get("ports", {}),
            daemons=[Daemon(**d) for d in state.get("daemons", [])],
            site=state.get("site", {}),
            client=state.get("client", {}),
            values=state.get("fields", {}),
            version=state.get("version", ""),
            changed=state.get("changed", []),
            notes=state.get("notes", []),
            delivered=state.get("delivered", []),
            tag=state.get("tag", ""),
            known_ident=state.get("id", ""),
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


def changed_keys(site: dict[str, dict[str, str]], defaults: dict[str, str]) -> list[dict[str, Any]]:
    """The site keys whose value is not the release's default: the post's "Default settings
    used except" list (file, key, value, default or None when the release has none)."""
    out = []
    for name, keys in site.items():
        for key, value in sorted(keys.items()):
            if defaults.get(key) != str(value):
                out.append(
                    {"file": name, "key": key, "value": str(value), "default": defaults.get(key)}
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


def start(kind_cls: type[Kind], dep: Deployment, timeout: float, log: Any = None) -> None:
    """Start ``dep`` from nothing: fresh directories, configuration, daemons, readiness,
    what cells need. On failure every daemon started is stopped and :class:`ClusterError`
    names the daemon, the reason and the end of its log."""
    kind = kind_cls(dep)

    def say(text: str) -> None:
        if log is not None:
            print(f"{time.strftime('%H:%M:%S')} {dep.ident}: {text}", file=log, flush=True)

    t0 = time.monotonic()
    try:
        # The install each host runs (perfpost's, on this machine) is put on hosts that lack
        # it first; the jars' defaults are read from this machine's copy.
        local = deliver_homes(dep, say)
        for host in dep.spec.hosts():
            root = shlex.quote(dep.root(host))
            dep.node(host).sh(
                f"rm -rf {root} && mkdir -p {root}/logs {root}/conf {root}/tmp",
                what="fresh directories",
            )
        dep.site = merge_site(kind.configure(), fill_id(dep.spec.site, dep.scope))
        for host in dep.spec.hosts():
            site = merge_site(dep.site, kind.host_site(host), fill_id(dep.spec.site, dep.scope))
            files = {f"{dep.conf_dir(host)}/{n}.xml": site_xml(keys) for n, keys in site.items()}
            log4j = kind_cls.RUNTIME.files / "log4j.properties"
            own = Path(__file__).parent / kind_cls.KIND / "log4j.properties"
            files[f"{dep.conf_dir(host)}/log4j.properties"] = (
                own if own.exists() else log4j
            ).read_text()
            # The daemons' own metrics, as perfpost reads them while a cell measures
            # (perfpost.clusters.metrics): refreshed every second, not every ten.
            files[f"{dep.conf_dir(host)}/hadoop-metrics2.properties"] = METRICS2
            dep.node(host).write(files)
        say("configured; starting daemons")
        kind.launch()
        deadline = time.monotonic() + timeout
        waiting = "the daemons"
        while time.monotonic() < deadline:
            dead = dep.dead_daemon()
            if dead is not None:
                raise ClusterError(
                    f"the {dead.label} on {dead.host} exited while the cluster started; "
                    f"{dead.log} says:\n{dep.log_excerpt(dead.host, dead.log)}"
                )
            missing = kind.ready()
            if missing is None:
                break
            waiting = missing
            time.sleep(1.0)
        else:
            tails = "\n".join(
                f"--- {d.label} ({d.log}):\n{dep.log_excerpt(d.host, d.log, 3, 4)}"
                for d in dep.daemons
            )
            raise ClusterError(
                f"not ready after {timeout:g} s: still waiting for {waiting}\n{tails}"
            )
        say(f"ready after {time.monotonic() - t0:.1f} s")
        kind.prepare()
        # Hadoop's FsShell (`hdfs dfs`, `hadoop fs`, teragen's clean-up) refuses to start
        # without a core-site.xml on its classpath, as every install has one: so does this.
        dep.client = merge_site({"core-site": {}}, kind.client_site())
        dep.values = kind.fields()
        first = dep.spec.hosts()[0]
        dep.version = kind.version_text(
            dep.node(first).sh(kind.version_command(dep.home[first]), what="version")
        )
        dep.changed = changed_keys(dep.site, site_defaults(local[first]))
        if kind_cls.NOTES:
            dep.read_notes(kind_cls.NOTES, dep.daemon_logs())
    except BaseException:
        stop(dep, kind_cls.START_ORDER, log=log)
        raise


def deliver_homes(dep: Deployment, say: Any) -> dict[str, str]:
    """Deliver each host's install to it when it is perfpost's on this machine (hosts in
    parallel) and point ``dep.home`` at the copies; returns the homes as they were (here)."""
    local = dict(dep.home)
    hosts = [h for h in dep.spec.hosts() if deliver.install_root(dep.home.get(h, ""))]

    def one(host: str) -> tuple[str, Any]:
        path = dep.home[host]
        root = deliver.install_root(path)
        assert root is not None
        d = deliver.ensure(dep.node(host).host, root)
        return host, (d, deliver.localize(path, dict.fromkeys(deliver.prefixes(root), d.path)))

    if hosts:
        with concurrent.futures.ThreadPoolExecutor(max_workers=len(hosts)) as pool:
            for host, (d, path) in pool.map(one, hosts):
                dep.home[host] = path
                if d.files:
                    dep.delivered.append(d.record())
                    say(d.said())
    return local


def stop(
    dep: Deployment, order: tuple[str, ...] = (), log: Any = None, grace: float = STOP_GRACE
) -> list[str]:
    """Stop every daemon: TERM to all of them at once, KILL to those left after ``grace``.

    All at once, hosts in parallel, because each daemon's shutdown hooks take seconds and
    the cluster's data is discarded anyway; one role after another made every stop of a
    three-daemon Ozone take ten seconds. ``order`` (the start order) only orders the report.
    Returns what was done."""
    order = order or tuple(dep.spec.roles)
    rank = {r: i for i, r in enumerate(order)}
    by_host: dict[str, list[Daemon]] = {}
    for d in dep.daemons:
        if d.pid:
            by_host.setdefault(d.host, []).append(d)

    def one(host: str) -> str:
        roles = sorted({d.role for d in by_host[host]}, key=lambda r: -rank.get(r, 0))
        try:
            dep.node(host).stop([d.pid for d in by_host[host]], grace)
            return f"stopped {', '.join(roles)} on {host}"
        except Exception as e:  # a host that is gone takes its daemons with it
            return f"could not stop {', '.join(roles)} on {host}: {e}"

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(by_host))) as pool:
        said = list(pool.map(one, list(by_host)))
    if log is not None:
        for s in said:
            print(f"{time.strftime('%H:%M:%S')} {dep.ident}: {s}", file=log, flush=True)
    return said


@contextlib.contextmanager
def running(
    spec: ClusterSpec,
    hosts: dict[str, dict[str, Any]],
    home: dict[str, str],
    opener: Any,
    timeout: float = 300.0,
    log: Any = None,
) -> Iterator[Deployment]:
    """A cluster up for the ``with`` block and stopped after it, whatever happens: for a
    person trying a system (``perfpost yarn-single-node``) and for tests."""
    from perfpost import clusters

    kind = clusters.get(spec.kind)
    dep = Deployment(spec, hosts, home=home, opener=opener)
    try:
        start(kind, dep, timeout, log=log)  # stops what it started if it fails
        try:
            yield dep
        finally:
            stop(dep, kind.START_ORDER, log=log)
    finally:
        dep.close()


def write_client_conf(dep: Deployment, directory: Path) -> Path:
    """The deployment's client configuration as ``*-site.xml`` files in ``directory`` here."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, keys in dep.client.items():
        (directory / f"{name}.xml").write_text(site_xml(keys))
    return directory
