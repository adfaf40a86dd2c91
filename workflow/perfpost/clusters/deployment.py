"""A cluster configuration on its hosts, and the hooks each kind implements over it.

A :class:`Deployment` is a :class:`~perfpost.clusters.base.ClusterSpec` on its hosts: a
directory per host (``<dir>/perfpost-cluster-<id>-<host>``, with ``conf/``, ``logs/`` and the
daemons' data; named after the host too, so hosts that share ``dir`` keep apart), daemons
started detached (a session of their own, so a finished step does not take them along), and
what a client needs (addresses, a client configuration). Its state is plain JSON, so any
later process (the last cell, the run's end, the watcher of a killed run, the next run) can
stop it. Hosts are reached through :class:`perfpost.run.hosts.Host`, the same way as cells:
``localhost`` with ``sh``, others over SSH.

A kind (``clusters/<kind>/``) subclasses :class:`Kind`: which roles it has, the files it
writes, the order it starts its daemons in, when it is ready, what clients get.
"""

from __future__ import annotations

import json
import re
import shlex
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from perfpost import provision
from perfpost.clusters.base import (
    HADOOP_QUIET,
    ClusterError,
    ClusterSpec,
    Daemon,
    Node,
    classpath,
    excerpt,
    fill_id,
    merge_site,
)

# JVMs that run a step and exit (init, shell, version): start-up is all they do.
QUICK_JVM = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")


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
    # Fields given only where the cluster has so many hosts of a role: field -> (role, fewest).
    FIELD_ROLES: ClassVar[dict[str, tuple[str, int]]] = {}
    # Fields every kind gives besides its own.
    COMMON_FIELDS: ClassVar[dict[str, str]] = {
        "home": "the install the cluster runs, on its first host: a client there can run its "
        "jars (java -cp '{cluster.home}/lib/*' ..., the benchmarks in Hadoop's test jars)",
    }
    # What a daemon's log may say that changes what was measured (a setting it ignored):
    # (pattern, the post's sentence with the pattern's groups as {0}, {1}...), and where the
    # daemon ran another value than a setting asked, that setting's key: the pattern's groups
    # are then the value asked and the value that ran.
    NOTES: ClassVar[tuple[tuple[str, ...], ...]] = ()
    # Log lines that never tell why a daemon failed, left out of a failure's reason.
    QUIET: ClassVar[tuple[str, ...]] = HADOOP_QUIET
    # Each role's main class: what :meth:`start_instance` starts (a launch uses it too, so
    # a step that starts one instance again starts what the cluster's start did).
    MAINS: ClassVar[dict[str, str]] = {}
    # The site keys naming a role's data directories (comma-separated lists): what a
    # ``wipe`` step deletes of one instance. Metadata a daemon is known by (a datanode's id)
    # is not among them: wiped, it comes back as the same member with no data.
    ROLE_DIRS: ClassVar[dict[str, tuple[str, ...]]] = {}

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

    def instance_opts(self, role: str, index: int) -> tuple[list[str], dict[str, str]]:
        """The JVM options and variables one instance of ``role`` starts with."""
        return [], {}

    def start_instance(self, role: str, index: int) -> Daemon:
        """Start instance ``index`` of ``role`` (initialised already), as the launch does."""
        opts, env = self.instance_opts(role, index)
        return self.dep.start_daemon(role, index, self.MAINS[role], [], opts, env=env)

    def daemon_site(self, host: str) -> dict[str, dict[str, str]]:
        """The site files the daemons on ``host`` get: the cluster's, this host's own keys,
        then the config's keys for the daemons."""
        return merge_site(
            self.dep.site,
            self.host_site(host),
            fill_id(self.dep.spec.side_site("daemons"), self.dep.scope),
        )

    def http_url(self, role: str, index: int) -> str | None:
        """Where one instance of ``role`` serves its web pages (``/jmx``, ``/prom``):
        ``http://host:port``; None where it serves none."""
        from perfpost.clusters import metrics

        host = self.dep.spec.roles[role][index]
        key = metrics.port_key(self.KIND, role, host)
        if key is None or key not in self.dep.ports:
            return None
        return f"http://{self.dep.node(host).address}:{self.dep.ports[key]}"

    def instance_dirs(self, role: str, index: int) -> list[str]:
        """The data directories of one instance of ``role``, as its host's site files name
        them (a placement's own directories included); empty where the kind names none."""
        site = self.daemon_site(self.dep.spec.roles[role][index])
        out: list[str] = []
        for key in self.ROLE_DIRS.get(role, ()):
            for keys in site.values():
                for d in str(keys.get(key, "")).split(","):
                    d = d.strip().removeprefix("file://")
                    if d.startswith("/") and d not in out:
                        out.append(d)
        return out

    def client_site(self) -> dict[str, dict[str, str]]:
        """The site files a client of this cluster needs."""
        raise NotImplementedError

    def fields(self) -> dict[str, str]:
        """Values of :attr:`FIELDS` for this deployment."""
        raise NotImplementedError

    @classmethod
    def roles_problem(cls, roles: dict[str, list[str]]) -> tuple[str, str] | None:
        """A role's hosts this kind cannot run as given, and why; None when it can."""
        return None

    @classmethod
    def secret_fields(cls, spec: ClusterSpec) -> dict[str, str]:
        """The values of fields that are secrets by name (:func:`perfpost.hostenv.
        secret_setting`), from the configuration alone: the state kept on disk has them
        masked, and a cell takes them from here."""
        return {}

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


# The daemons' ports, chosen on their host (``python3 -c PORT_CHOOSER <address> <count> <taken>``):
# free ones below the host's ephemeral range (ip_local_port_range, 32768-60999 by default),
# in random order from 10000 (above most of Hadoop's and Ozone's default ports; one that
# listens is skipped as any port in use is). A port the kernel hands out for port 0 is from
# the ephemeral range, where every outgoing connection on the host takes its local port too:
# one taken between its choice and the daemon's bind failed a datanode's start ("Address
# already in use") on a host busy with other clients. Each is held until all are chosen, so
# none is chosen twice, and the ports the deployment chose before (``<taken>``, comma-separated:
# its other daemons', not bound yet) are left alone; only where the range below leaves too few
# does the kernel choose.
PORT_CHOOSER = """import random, socket, sys
n = int(sys.argv[2])
taken = {int(p) for p in sys.argv[3].split(",") if p} if len(sys.argv) > 3 else set()
held = []
try:
    low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
except (OSError, ValueError, IndexError):
    low = 0
ports = [p for p in range(10000, low) if p not in taken]
random.shuffle(ports)
for port in ports:
    if len(held) == n:
        break
    s = socket.socket()
    try:
        s.bind(("", port))
        held.append(s)
    except OSError:
        s.close()
while len(held) < n:
    s = socket.socket()
    s.bind((sys.argv[1], 0))
    held.append(s)
print(*[s.getsockname()[1] for s in held])
"""


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
    # Settings the daemons did not take: key, the value asked, the value that ran, who said.
    overridden: list[dict[str, str]] = field(default_factory=list)
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
        restart keeps them (Ratis state records its peers). See :data:`PORT_CHOOSER`."""
        wanted = [n for n in names if n not in self.ports]
        if not wanted:
            return
        script = (
            f"python3 -c {shlex.quote(PORT_CHOOSER)} "
            f"{shlex.quote(self.node(host).address)} {len(wanted)} "
            + ",".join(str(p) for p in sorted(set(self.ports.values())))
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

    def prefix(self, d: Daemon) -> str:
        """The command ``d`` starts under (the config's ``prefix`` for its role, else for
        ``all``), its ``{logs}`` the daemon's log directory (kept with the cluster's logs)
        and ``{daemon}`` its name; empty where none was given."""
        text = self.spec.prefix.get(d.role, self.spec.prefix.get("all", ""))
        given = {"logs": str(Path(d.log).parent), "daemon": d.label}
        return re.sub(r"\{(logs|daemon)\}", lambda m: shlex.quote(given[m.group(1)]), text)

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
        prefix = self.prefix(d)
        if prefix:
            cmd = f"{prefix} {cmd}"
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
        # An instance started again (a step's restart) replaces its earlier self.
        self.daemons = [x for x in self.daemons if (x.role, x.index) != (role, index)]
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

    def read_notes(self, patterns: tuple[tuple[str, ...], ...], logs: dict[str, str]) -> None:
        """Add what ``logs`` (daemon label -> text) say that ``patterns`` look for; a
        pattern naming a setting's key also records that the setting did not take effect
        (``overridden``: the key, the value asked, the value that ran, which daemon said so)."""
        for label, text in logs.items():
            for pattern, sentence, *key in patterns:
                for m in re.finditer(pattern, text):
                    note = f"{label}: " + sentence.format(*m.groups())
                    if note not in self.notes:
                        self.notes.append(note)
                    if not key:
                        continue
                    daemon, _, host = label.partition(" on ")
                    start = text.rfind("\n", 0, m.start()) + 1
                    end = text.find("\n", m.end())
                    entry = {
                        "key": key[0],
                        "asked": m.group(1),
                        "ran": m.group(2),
                        "daemon": daemon,
                        "host": host,
                        "evidence": text[start : end if end >= 0 else len(text)].strip(),
                    }
                    if entry not in self.overridden:
                        self.overridden.append(entry)

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
            "overridden": self.overridden,
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
            overridden=state.get("overridden", []),
            delivered=state.get("delivered", []),
            tag=state.get("tag", ""),
            known_ident=state.get("id", ""),
        )
