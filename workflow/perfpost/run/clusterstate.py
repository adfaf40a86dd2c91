"""What a cluster's start keeps on disk, and what of it is secret.

Every start has a directory of its own (``results/clusters/<id>/start-<n>/``, numbered by
:func:`start_numbers`): ``state.json`` (:func:`read_state`, :func:`write_state`, which keeps
it as :func:`public_state` has it: secret settings masked, a changed secret key kept as a
fingerprint) and ``cluster.log`` (:func:`cluster_log`, secrets masked in what is written).
Starts and uses of a cluster are serialised with file locks (:func:`flock`).
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import json
import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TextIO

from perfpost import hostenv
from perfpost.clusters.base import ClusterSpec
from perfpost.clusters.deployment import Deployment


def start_numbers(cdir: Path) -> list[int]:
    found = []
    for entry in cdir.glob("start-*"):
        m = re.fullmatch(r"start-([1-9][0-9]*)", entry.name)
        if m:
            found.append(int(m.group(1)))
    return sorted(found)


def read_state(sdir: Path) -> dict[str, Any] | None:
    try:
        return json.loads((sdir / "state.json").read_text())
    except (OSError, ValueError):
        return None


def write_state(sdir: Path, state: dict[str, Any], known: Iterable[str] = ()) -> None:
    """Keep ``state`` as :func:`public_state` has it (``known``: secrets its text may quote
    that it no longer holds itself, having been read back)."""
    tmp = sdir / ".state.json.new"
    tmp.write_text(json.dumps(public_state(state, known), indent=2, sort_keys=True) + "\n")
    tmp.replace(sdir / "state.json")


def state_secrets(state: dict[str, Any]) -> list[str]:
    """The secret settings' values a cluster's state holds: all of them while the run has
    the state it started the cluster with, none once it was read back from disk."""
    dep = state.get("deployment") or {}
    spec = dep.get("spec") or {}
    changed = {c.get("key", ""): c.get("value") for c in dep.get("changed", [])}
    return hostenv.setting_secrets(
        dep.get("site"),
        dep.get("client"),
        dep.get("fields"),
        spec.get("site"),
        spec.get("jvm"),
        spec.get("env"),
        changed,
    )


def spec_secrets(spec: ClusterSpec) -> list[str]:
    """The secret settings' values of a cluster's configuration."""
    return hostenv.setting_secrets(spec.site, spec.jvm, spec.env)


def public_state(state: dict[str, Any], known: Iterable[str] = ()) -> dict[str, Any]:
    """``state`` as perfpost keeps it (``state.json``, which posts and ``perfpost compare``
    read): each secret setting's value masked in the site files, the client's, the spec's
    and its JVM options; a key of ``changed`` that holds one keeps a fingerprint of it
    instead (:func:`perfpost.hostenv.fingerprint`: two runs' values compared, neither
    shown); and a copy of one in free text (a reason quoting a daemon's log) masked too.
    ``state`` itself is not changed: the run configured the daemons from it."""
    redact = hostenv.Redactor([*state_secrets(state), *known])
    out = dict(state)
    if isinstance(out.get("reason"), str):
        out["reason"] = redact.text(out["reason"])
    dep = dict(state.get("deployment") or {})
    if not dep:
        return out
    for k in ("site", "client", "fields"):
        if k in dep:
            dep[k] = hostenv.mask_settings(dep[k])
    if isinstance(dep.get("spec"), dict):
        spec = dict(dep["spec"])
        for k in ("site", "jvm", "env"):
            if k in spec:
                spec[k] = hostenv.mask_settings(spec[k])
        dep["spec"] = spec
    dep["changed"] = [_public_change(c) for c in dep.get("changed", [])]
    dep["notes"] = [redact.text(str(n)) for n in dep.get("notes", [])]
    dep["overridden"] = [
        {k: redact.text(str(v)) for k, v in o.items()} for o in dep.get("overridden", [])
    ]
    if isinstance(dep.get("version"), str):
        dep["version"] = redact.text(dep["version"])
    out["deployment"] = dep
    return out


def _public_change(change: dict[str, Any]) -> dict[str, Any]:
    if not hostenv.secret_setting(str(change.get("key", ""))) or change.get("value") in (
        hostenv.MASK,
        None,
        "",
    ):
        return change
    fingerprint = hostenv.fingerprint(str(change["value"]))
    return {**change, "value": hostenv.MASK, "secret": fingerprint}


def conf_secrets(node: Any, dep: Deployment, host: str) -> list[str]:
    """The secret settings' values in the site files the daemons on ``host`` were given:
    the state kept of a cluster holds them masked, and its daemons' logs may print them."""
    import xml.etree.ElementTree as ET

    found = []
    for name in dep.site:
        try:
            root = ET.fromstring(node.read(f"{dep.conf_dir(host)}/{name}.xml"))
        except Exception:  # not there, not XML, the host gone: nothing to learn from it
            continue
        for prop in root.iter("property"):
            key, value = prop.findtext("name"), prop.findtext("value")
            if key and value and hostenv.secret_setting(key.strip()):
                found.append(value)
    return found


@contextlib.contextmanager
def flock(path: Path, mode: int = fcntl.LOCK_EX) -> Iterator[int]:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, mode)
        yield fd
    finally:
        os.close(fd)


def now() -> str:
    """The time a cluster's state notes (started, ready, stopped), to the millisecond: a
    cell that began a fraction of a second after a stop is no cell measured beside it, and
    whole seconds could not tell the two apart."""
    return datetime.datetime.now().astimezone().isoformat(timespec="milliseconds")


@contextlib.contextmanager
def cluster_log(sdir: Path, secrets: Iterable[str] = ()) -> Iterator[TextIO]:
    """The start's ``cluster.log``, ``secrets`` masked in what is written to it (a daemon's
    error quoting its configuration)."""
    with open(sdir / "cluster.log", "a") as f:
        redactor = hostenv.Redactor(secrets)
        yield hostenv.RedactingStream(f, redactor) if redactor else f  # type: ignore[misc]
