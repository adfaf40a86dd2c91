"""Tearing down a cluster's start: its daemons stopped, their logs kept beside its state
(secret settings masked: the state's, the configuration's and those of the daemons' own site
files), what the kind reads of the files the daemons left noted, and the directories the
start owns removed, nothing outside them (:func:`own_directories`).
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from perfpost import clusters, hostenv
from perfpost.clusters.deployment import Deployment
from perfpost.clusters.lifecycle import stop
from perfpost.run import hostsetup
from perfpost.run.clusterstate import (
    cluster_log,
    conf_secrets,
    now,
    state_secrets,
    write_state,
)
from perfpost.run.hosts import open_host


def own_directories(value: str, ident: str) -> list[str]:
    """The directories a site value gives the cluster ``ident``, which its clean-up removes
    with what is under them: of each path in the (comma-separated) value, the first
    directory whose own name holds the id, once ``.`` and ``..`` are resolved (lexically, as
    ``rm`` on the host would walk them). A ``file:`` URI counts by its path; a value of
    another scheme (``hdfs://``, ``ofs://``), of another host, or relative (under the
    daemon's working directory, the cluster's root, which goes anyway) gives none, and so
    does a path whose id lies only on its way elsewhere (``/data/ozone-<id>/../../etc``).
    The id counts only as a name of its own, not glued to a letter or digit (``ratis-<id>``,
    ``<id>.d``, ``data_<id>``; not ``x<id>`` nor ``<id>0``, another name that holds it)."""
    import urllib.parse

    own = re.compile(rf"(?<![A-Za-z0-9]){re.escape(ident)}(?![A-Za-z0-9])")
    out: list[str] = []
    for part in str(value).split(","):
        path = part.strip()
        if path.startswith("file:"):
            uri = urllib.parse.urlsplit(path)
            if uri.netloc not in ("", "localhost"):
                continue
            path = urllib.parse.unquote(uri.path)
        if not path.startswith("/"):
            continue  # relative, or another scheme's
        names = [n for n in posixpath.normpath(path).split("/") if n]
        for i, name in enumerate(names):
            if own.search(name):
                found = "/" + "/".join(names[: i + 1])
                if found not in out:
                    out.append(found)
                break
    return out


def teardown(sdir: Path, state: dict[str, Any], why: str, known: Iterable[str] = ()) -> None:
    """Stop a start's daemons, keep their logs beside its state, remove its directories.
    Secret settings are masked in the logs kept: those of the state, ``known`` (the
    configuration's, when the caller has it) and those of the daemons' own site files."""
    dep = Deployment.from_state(state["deployment"])
    dep.opener = open_host
    known = [*state_secrets(state), *known]
    if dep.spec.kind == hostsetup.KIND:
        with cluster_log(sdir, known) as log:
            print(f"{now()} restoring ({why})", file=log, flush=True)
            try:
                hostsetup.restore(dep, state, log)
            finally:
                dep.close()
            print(f"{now()} restored", file=log, flush=True)
        _stopped(sdir, state, why, known)
        return
    kind = clusters.get(dep.spec.kind)
    with cluster_log(sdir, known) as log:
        print(f"{now()} stopping ({why})", file=log, flush=True)
        stop(dep, kind.START_ORDER, log=log)
        for host in dep.spec.hosts():
            try:
                node = dep.node(host)
                root = dep.root(host)
                names = node.sh(f"ls {shlex.quote(root)}/logs 2>/dev/null; true").split()
                out = sdir / "logs" / host
                out.mkdir(parents=True, exist_ok=True)
                redactor = hostenv.Redactor([*known, *conf_secrets(node, dep, host)])
                # The daemons' logs and what a command they started under wrote there
                # (a prefix's strace summary, ``{logs}/{daemon}.strace``).
                for name in names:
                    if re.fullmatch(r"[\w.+-]+\.\w+", name):
                        redactor.write(out / name, node.read(f"{root}/logs/{name}"))
                if kind.NOTES:
                    dep.read_notes(
                        kind.NOTES,
                        {
                            f"{d.label} on {d.host}": (out / Path(d.log).name).read_text()
                            for d in dep.daemons
                            if d.host == host and (out / Path(d.log).name).exists()
                        },
                    )
                doomed = own_directories(root, dep.scope) or [root]  # `dir` may be relative
                for keys in dep.site.values():
                    for value in keys.values():
                        doomed += own_directories(value, dep.scope)
                doomed = list(dict.fromkeys(doomed))
                look = kind(dep).on_disk_script(host, doomed)
                if look is not None:  # what the daemons wrote, before it goes
                    note = kind(dep).on_disk_note(host, node.sh(look, what="listing files"))
                    if note and note not in dep.notes:
                        dep.notes.append(note)
                node.sh("rm -rf -- " + " ".join(shlex.quote(p) for p in doomed), what="clean-up")
            except Exception as e:  # a host that is gone: its daemons went with it
                print(f"{now()} clean-up on {host}: {e}", file=log, flush=True)
        dep.close()
        state["deployment"]["notes"] = dep.notes
        state["deployment"]["overridden"] = dep.overridden
        print(f"{now()} stopped", file=log, flush=True)
    _stopped(sdir, state, why, known)


def _stopped(sdir: Path, state: dict[str, Any], why: str, known: Iterable[str]) -> None:
    """The state of a start once stopped: ``stopped`` (``failed`` if it never came up)."""
    state["status"] = "stopped" if state["status"] == "up" else state["status"]
    if state["status"] == "starting":
        state["status"] = "failed"
        state.setdefault("reason", why)
    state["stopped"] = now()
    write_state(sdir, state, known)
