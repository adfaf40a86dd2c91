"""A cluster's life: started from nothing (fresh directories, configuration, daemons in
order, readiness, what cells need; on failure every daemon started is stopped again), stopped
all at once, and up for the length of a ``with`` block.
"""

from __future__ import annotations

import contextlib
import shlex
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from perfpost import deliver, hostpool
from perfpost.clusters.base import (
    STOP_GRACE,
    ClusterError,
    ClusterSpec,
    Daemon,
    changed_keys,
    client_site,
    fill_id,
    merge_site,
    site_defaults,
    site_xml,
)
from perfpost.clusters.deployment import Deployment, Kind

# Hadoop's metrics system takes a snapshot of every source once a period (10 s by default),
# and its JMX and Prometheus views show the last one: a period of 1 s lets perfpost follow a
# run of a few seconds.
METRICS2 = "# perfpost: snapshots every second\n*.period=1\n"


def await_ready(kind: Kind, timeout: float) -> None:
    """Wait until ``kind``'s cluster serves clients; a daemon that exits meanwhile, or
    ``timeout`` seconds, raises :class:`ClusterError` with what its log says."""
    dep = kind.dep
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
            return
        waiting = missing
        time.sleep(1.0)
    tails = "\n".join(
        f"--- {d.label} ({d.log}):\n{dep.log_excerpt(d.host, d.log, 3, 4)}" for d in dep.daemons
    )
    raise ClusterError(f"not ready after {timeout:g} s: still waiting for {waiting}\n{tails}")


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
        dep.site = merge_site(kind.configure(), fill_id(dep.spec.side_site("daemons"), dep.scope))
        for host in dep.spec.hosts():
            site = kind.daemon_site(host)
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
        await_ready(kind, timeout)
        say(f"ready after {time.monotonic() - t0:.1f} s")
        kind.prepare()
        dep.client = client_site(
            kind.client_site(), fill_id(dep.spec.side_site("clients"), dep.scope)
        )
        first = dep.spec.hosts()[0]
        dep.values = {"home": dep.home[first], **kind.fields()}
        dep.version = kind.version_text(
            dep.node(first).sh(kind.version_command(dep.home[first]), what="version")
        )
        dep.changed = changed_keys(
            dep.site,
            site_defaults(local[first]),
            {side: fill_id(keys, dep.scope) for side, keys in dep.spec.sides.items()},
        )
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
        for host, (d, path) in hostpool.each(one, hosts):
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

    said = hostpool.each(one, list(by_host))
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
