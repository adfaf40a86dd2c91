"""Clusters over the life of a run: started by the first cell that needs one, shared by the
cells of the same configuration, stopped after the last of them, and whatever ends the run.

A cell holds its clusters through :func:`lease`. The first cell of a configuration starts it
(fresh directories, readiness; a failed start is tried once more); the next ones find it up
and use it, one at a time unless the cluster is ``shared``. A cluster that could not start
fails every cell of it in this run with the same reason, without trying again. The cell
that leaves no other cell of this run for its cluster (:data:`perfpost.paths.CLUSTERS_PENDING`,
written when the run starts) stops it, copies the daemons' logs beside the cluster's state
and removes its directories; ``fresh: cell`` does so after every cell.

What the cells miss is stopped by the run: at its end (:func:`stop_owned`, Snakemake's
``onsuccess`` and ``onerror``), by its watcher when it is killed, and by the next run for any
cluster whose run is gone. Every start has a directory of its own
(``results/clusters/<id>/start-<n>/``): ``state.json`` (status, owner run, the daemons and
where they run, addresses, version), ``cluster.log`` (what perfpost did) and ``logs/`` (the
daemons' own logs), with secret settings masked in all three
(:func:`perfpost.run.clusterstate.public_state`); a later start never overwrites an earlier
one's. How a start is stopped and its directories removed is :mod:`perfpost.run.teardown`.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perfpost import builds, clusters, hostenv, paths, provision
from perfpost.clusters.base import ClusterError, ClusterSpec, fill_id, release
from perfpost.clusters.deployment import Deployment
from perfpost.clusters.lifecycle import start
from perfpost.run import hostsetup, lifeline
from perfpost.run.clusterstate import (
    cluster_log,
    flock,
    now,
    read_state,
    spec_secrets,
    start_numbers,
    write_state,
)
from perfpost.run.hosts import open_host
from perfpost.run.teardown import teardown

START_TIMEOUT = 300.0  # seconds a cluster may take to become ready
# A start that fails is tried once more, from fresh directories on new ports: daemons of a
# busy machine lose races of their own (Ozone 2.2.0's SCM can register its HA metrics twice
# when it is elected while it still starts, and then never serves). A configuration that
# cannot work fails twice, and its cells with the second reason; both starts keep their logs.
START_ATTEMPTS = 2
ACTIVE = ("starting", "up")


def owner() -> str:
    """The run this process belongs to (``$PERFPOST_RUN``), or this process alone."""
    return os.environ.get(lifeline.ENV) or lifeline.mark(os.getpid())


def _homes(spec: ClusterSpec) -> dict[str, str]:
    """The install each host runs the daemons from, as this machine names it: ``home`` when
    the config names one, else perfpost's provisioned runtime in the config's tools cache,
    which :func:`perfpost.clusters.lifecycle.start` delivers to remote hosts that lack it."""
    if spec.kind == hostsetup.KIND:  # no install: its steps are the host's own commands
        return {}
    if spec.build:  # the user's build, staged here once: delivered to the hosts at start
        home = str(builds.stage(Path(spec.build), spec.cache))
        return {h: home for h in spec.hosts()}
    if spec.home:
        return {h: spec.home for h in spec.hosts()}
    kind = clusters.get(spec.kind)
    launcher = provision.install(kind.RUNTIME, spec.version, spec.cache)
    home = str(launcher.resolve().parents[1])
    return {h: home for h in spec.hosts()}


@dataclass
class Held:
    """One cluster a cell holds: its configuration, its start and how it is reached."""

    spec: ClusterSpec
    start: int
    state: dict[str, Any]
    use_fd: int = -1
    root: Path = Path()  # the checkout whose results/clusters/ keeps its state

    @property
    def ident(self) -> str:
        return self.spec.ident()

    def record(self) -> dict[str, Any]:
        """What the cell's record says of the cluster it ran on: the release, as its own
        version output names it (the whole output, build details and all, is the post's)."""
        return {
            "name": self.spec.name,
            "kind": self.spec.kind,
            "id": self.ident,
            "start": self.start,
            "version": release(self.state["deployment"].get("version", ""), self.spec.version),
        }


@dataclass
class Lease:
    """The clusters a cell holds while it runs."""

    held: list[Held] = field(default_factory=list)

    def fields(self) -> dict[str, str]:
        """``{<name>.<field>}`` values for the cell's params; ``cluster.`` is the first."""
        out: dict[str, str] = {}
        for i, h in enumerate(self.held):
            # A secret field (an S3 secret key) is kept masked: its value is the kind's own.
            kind = h.spec.kind
            secret = clusters.get(kind).secret_fields(h.spec) if kind in clusters.NAMES else {}
            for k, v in h.state["deployment"].get("fields", {}).items():
                v = secret.get(k, v) if v == hostenv.MASK else v
                out[f"{h.spec.name}.{k}"] = v
                if i == 0:
                    out[f"cluster.{k}"] = v
        return out

    def client_site(self) -> dict[str, dict[str, str]]:
        """One client configuration for all the cell's clusters (Hadoop reads one dir).
        A secret setting's value comes from the cell's own configuration of the cluster:
        the state kept on disk has it masked."""
        out: dict[str, dict[str, str]] = {}
        for h in self.held:
            scope = Deployment.from_state(h.state["deployment"]).scope
            real = fill_id(h.spec.site, scope)
            for name, keys in h.state["deployment"].get("client", {}).items():
                # An empty file is kept: FsShell will not start without a core-site.xml.
                site = out.setdefault(name, {})
                for key, value in keys.items():
                    if hostenv.secret_setting(key) and key in real.get(name, {}):
                        value = real[name][key]
                    site[key] = value
        return out

    def records(self) -> list[dict[str, Any]]:
        return [h.record() for h in self.held]


def live(held: Held) -> Deployment:
    """The deployment ``held`` as a cell acts on it (a step that stops or starts one of its
    daemons): the cell's own configuration of it (the state on disk has secrets masked),
    and every change to its daemons saved into its state at once, so the run's stop finds
    a daemon a step started."""
    dep = Deployment.from_state(held.state["deployment"])
    dep.spec = held.spec
    dep.opener = open_host
    cdir = held.root / paths.fill(paths.CLUSTER_DIR, cluster=held.ident)
    sdir = cdir / f"start-{held.start}"

    def save(d: Deployment) -> None:
        daemons = d.to_state()["daemons"]
        held.state["deployment"]["daemons"] = daemons
        with flock(cdir / "start.lock"):
            state = read_state(sdir) or held.state
            state["deployment"]["daemons"] = daemons
            write_state(sdir, state, spec_secrets(held.spec))

    dep.on_change = save
    return dep


def _acquire(spec: ClusterSpec, hosts: dict[str, dict[str, Any]], root: Path) -> Held:
    cdir = root / paths.fill(paths.CLUSTER_DIR, cluster=spec.ident())
    cdir.mkdir(parents=True, exist_ok=True)
    use_fd = os.open(cdir / "use.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(use_fd, fcntl.LOCK_SH if spec.shared else fcntl.LOCK_EX)
        with flock(cdir / "start.lock"):
            held = _up(spec, hosts, cdir)
        held.use_fd = use_fd
        held.root = root
        return held
    except BaseException:
        os.close(use_fd)
        raise


def _up(spec: ClusterSpec, hosts: dict[str, dict[str, Any]], cdir: Path) -> Held:
    me = owner()
    starts = start_numbers(cdir)
    n = starts[-1] if starts else 0
    sdir = cdir / f"start-{n}"
    state = read_state(sdir) if n else None
    if state is not None and state["owner"] == me:
        if state["status"] == "up" and spec.fresh == "cell" and not spec.shared:
            # A cell of its own (a cell whose steps change the cluster): a start that served
            # other cells already is stopped, and this cell gets one from empty directories.
            if state.get("served"):
                teardown(sdir, state, "fresh: cell, and it served other cells", spec_secrets(spec))
        if state["status"] == "up":
            dep = Deployment.from_state(state["deployment"])
            dep.opener = open_host
            try:
                dead = dep.dead_daemon()
                reason = None
                if dead is not None:
                    reason = (
                        f"the {dead.label} on {dead.host} of cluster {spec.ident()} died "
                        f"after it started; {dead.log} says:\n"
                        f"{dep.log_excerpt(dead.host, dead.log)}"
                    )
            finally:
                dep.close()
            if reason is None:
                return Held(spec, n, state)
            state["reason"] = reason
            teardown(sdir, state, "a daemon died", spec_secrets(spec))
            state["status"] = "failed"
            write_state(sdir, state, spec_secrets(spec))
            raise ClusterError(reason)
        if state["status"] == "failed" and spec.kind == hostsetup.KIND:
            raise hostsetup.SetupError(
                f"{state.get('reason', 'unknown')}\n(in this run, see {sdir}/cluster.log)"
            )
        if state["status"] == "failed":
            raise ClusterError(
                f"cluster {spec.name} ({spec.ident()}) could not be started in this run "
                f"(see {sdir}/cluster.log): {state.get('reason', 'unknown')}"
            )
    if state is not None and state["status"] in ACTIVE:
        teardown(sdir, state, "left by an earlier run", spec_secrets(spec))
    attempt = 1
    # A host's set-up is not tried again: its steps are the user's, and they failed.
    attempts = 1 if spec.kind == hostsetup.KIND else START_ATTEMPTS
    while True:
        try:
            return _start(spec, hosts, cdir, n + attempt, last=attempt == attempts)
        except ClusterError:
            if attempt == attempts:
                raise
            attempt += 1


def _start(
    spec: ClusterSpec, hosts: dict[str, dict[str, Any]], cdir: Path, n: int, last: bool
) -> Held:
    """One start of the cluster, as ``start-<n>``; its failure is kept there and raised."""
    me = owner()
    sdir = cdir / f"start-{n}"
    sdir.mkdir()
    state = {
        "schema": 1,
        "status": "starting",
        "owner": me,
        "name": spec.name,
        "started": now(),
        "deployment": Deployment(spec, {h: hosts[h] for h in spec.hosts()}).to_state(),
    }
    write_state(sdir, state)
    with cluster_log(sdir, spec_secrets(spec)) as log:
        try:
            dep = Deployment(
                spec,
                {h: hosts[h] for h in spec.hosts()},
                home=_homes(spec),
                # The checkout's directory (cdir is <it>/results/clusters/<id>).
                tag=hashlib.sha256(str(cdir.resolve().parents[2]).encode()).hexdigest()[:6],
                opener=open_host,
            )

            def save(d: Deployment) -> None:
                state["deployment"] = d.to_state()
                write_state(sdir, state)

            dep.on_change = save
            what = (
                f"setting up {', '.join(spec.hosts())}"
                if spec.kind == hostsetup.KIND
                else f"starting {spec.kind} {spec.version} for {spec.name}"
            )
            print(f"{now()} {what}", file=log, flush=True)
            try:
                if spec.kind == hostsetup.KIND:
                    hostsetup.set_up(dep, state, log)
                else:
                    start(clusters.get(spec.kind), dep, START_TIMEOUT, log=log)
            finally:
                state["deployment"] = dep.to_state()
                dep.close()
        except BaseException as e:
            reason = str(e) if isinstance(e, Exception) else f"interrupted ({type(e).__name__})"
            state["reason"] = reason
            print(f"{now()} failed: {reason}", file=log, flush=True)
            if not last and isinstance(e, Exception):  # retried, as a ClusterError
                print(f"{now()} trying once more, as start-{n + 1}", file=log, flush=True)
            log.flush()
            teardown(sdir, state, "it could not start")
            state["status"] = "failed"
            write_state(sdir, state)
            if isinstance(e, Exception) and not isinstance(e, ClusterError):
                raise ClusterError(reason) from e
            raise
        state["status"] = "up"
        state["ready"] = now()
        write_state(sdir, state)
        print(f"{now()} up", file=log, flush=True)
    return Held(spec, n, state)


def _pending(root: Path, ident: str, mine: str | None) -> list[str]:
    """Records of this run's cells of cluster ``ident`` not written yet (``mine`` aside)."""
    try:
        data = json.loads((root / paths.CLUSTERS_PENDING).read_text())
    except (OSError, ValueError):
        return []
    if data.get("owner") != owner():
        return []
    return [
        p for p in data.get("clusters", {}).get(ident, []) if p != mine and not (root / p).exists()
    ]


def _release(held: Held, root: Path, record: str | None) -> None:
    cdir = root / paths.fill(paths.CLUSTER_DIR, cluster=held.ident)
    try:
        with flock(cdir / "start.lock"):
            sdir = cdir / f"start-{held.start}"
            state = read_state(sdir)
            # The runs it served, whichever experiment's: a post tells its reader what else
            # wrote into the cluster its numbers (and its datanodes' files) come from.
            if state is not None and record and record not in state.setdefault("served", []):
                state["served"].append(record)
                write_state(sdir, state, spec_secrets(held.spec))
            try:
                fcntl.flock(held.use_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return  # another cell of a shared cluster still uses it
            last = held.spec.fresh == "cell" or not _pending(root, held.ident, record)
            if not last:
                return
            if state is not None and state["status"] == "up":
                why = (
                    "fresh: cell"
                    if held.spec.fresh == "cell"
                    else "no other cell of this run needs it"
                )
                teardown(sdir, state, why, spec_secrets(held.spec))
    finally:
        os.close(held.use_fd)


@contextlib.contextmanager
def lease(
    specs: list[ClusterSpec],
    hosts: dict[str, dict[str, Any]],
    root: Path = Path(),
    record: str | None = None,
) -> Iterator[Lease]:
    """Hold the clusters ``specs`` (started if need be) for one cell whose record will be
    ``record``; released, and stopped when no other cell of the run needs them, after.
    Each spec names the cache its release was provisioned in (``ClusterSpec.cache``)."""
    got = Lease()
    try:
        for spec in sorted(specs, key=lambda s: s.ident()):
            got.held.append(_acquire(spec, hosts, root))
        yield got
    finally:
        for h in reversed(got.held):
            _release(h, root, record)


def stop_owned(
    root: Path = Path(), run: str | None = None, why: str = "the run ended"
) -> list[str]:
    """Stop every cluster still up that belongs to ``run`` (default: this one) or to a run
    that is gone. Returns what was stopped, one line each."""
    said = []
    base = root / paths.CLUSTERS_DIR
    if not base.is_dir():
        return said
    for cdir in sorted(p for p in base.iterdir() if p.is_dir()):
        starts = start_numbers(cdir)
        if not starts:
            continue
        with flock(cdir / "start.lock"):
            sdir = cdir / f"start-{starts[-1]}"
            state = read_state(sdir)
            if state is None or state.get("status") not in ACTIVE:
                continue
            theirs = state.get("owner", "")
            if theirs != (run or owner()) and lifeline.mark_alive(theirs):
                continue
            teardown(sdir, state, why)
            said.append(f"stopped cluster {state.get('name')} ({cdir.name}): {why}")
    return said


def settle(idents: Iterable[str], never: Callable[[str], bool], root: Path = Path()) -> list[str]:
    """Runs that will never come leave the pending list (``never`` says which: a cell whose
    precision was reached before its ``max`` runs), and a cluster of ``idents`` that no cell
    uses and none of this run's cells still needs is stopped now, not at the run's end."""
    said: list[str] = []
    path = root / paths.CLUSTERS_PENDING
    if not path.exists():
        return said
    with flock(path.with_name("pending.lock")):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            return said
        if data.get("owner") != owner():
            return said
        data["clusters"] = {
            k: [p for p in v if not never(p)] for k, v in data.get("clusters", {}).items()
        }
        write_pending(data["clusters"], root)
    for ident in idents:
        cdir = root / paths.fill(paths.CLUSTER_DIR, cluster=ident)
        starts = start_numbers(cdir)
        if not starts:
            continue
        use_fd = os.open(cdir / "use.lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            with flock(cdir / "start.lock"):
                try:
                    fcntl.flock(use_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue  # a cell uses it: the last one to release it stops it
                if _pending(root, ident, None):
                    continue
                sdir = cdir / f"start-{starts[-1]}"
                state = read_state(sdir)
                if state is not None and state["status"] == "up" and state.get("owner") == owner():
                    teardown(sdir, state, "no other cell of this run needs it")
                    said.append(f"stopped cluster {state.get('name')} ({ident})")
        finally:
            os.close(use_fd)
    return said


def write_pending(pending: dict[str, list[str]], root: Path = Path()) -> None:
    """Record this run's cells still to come, per cluster (the run's ``onstart``)."""
    path = root / paths.CLUSTERS_PENDING
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(".pending.json.new")
    tmp.write_text(json.dumps({"owner": owner(), "clusters": pending}, sort_keys=True) + "\n")
    tmp.replace(path)
