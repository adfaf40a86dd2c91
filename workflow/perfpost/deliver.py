"""What a host runs, delivered to it over its SSH connection when it lacks it.

A cell's or a cluster's params name perfpost's installs on this machine (an Ozone, a Hadoop,
Byteman: ``<cache>/<name>-<version>/...``). A remote host shares no path with the
controller, so before anything runs there, :func:`ensure` makes the same install exist on it:

- content-addressed: the install's key is a hash of every file shipped (path, mode, size,
  sha256), so a changed launcher is a new install beside the old one, and a host that has the
  key has exactly these bytes;
- once per host and key, however many cells use it: a host that has it answers in one
  exec channel (``.perfpost-delivered`` present), and a process asks a host once;
- installed beside and switched into place: files land in ``<cache>/.<key>.partial/``, are
  checked against the manifest (``sha256sum -c``) and the directory is renamed to
  ``<cache>/<key>/`` only then, so a half-copied install is never used;
- resumable: an interrupted copy leaves its files in the partial directory; the next try
  ships only the files missing there or of the wrong size (a file of the right size but
  wrong content fails the check, is removed, and is shipped again);
- one writer per host and key (``flock`` on the host), whichever controller or cell asks;
- with ``tar`` over the exec channel's input: no SFTP, nothing but OS packages on the host.

Where the host keeps deliveries is the inventory's ``cache`` (default ``~/.cache/perfpost``
of the login user). :func:`localize` then rewrites the params' paths to the host's copy.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shlex
import sys
import tarfile
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfpost import builds, provision
from perfpost.errors import PerfpostError

MANIFEST = ".perfpost-manifest.sha256"
DELIVERED = ".perfpost-delivered"
LOCK_WAIT = 900  # seconds a delivery waits for another one of the same install to the host
READ_WAIT = 300  # seconds the host may take without reading or saying anything (the check)
# What of an install is this machine's own, never shipped: the rule checker's memos
# (instrument.check writes them into Byteman's install) and the provisioning log.
EXCLUDED_TOP = {"checks", "provision.log"}
# The mark of a user's build perfpost staged (builds.py).
BUILD_MARK = builds.MARK


class DeliveryError(PerfpostError):
    pass


@dataclass(frozen=True)
class Entry:
    path: str  # relative to the install
    kind: str  # "f" file, "l" symlink
    mode: int
    size: int
    sha256: str  # a file's digest; a symlink's target


@dataclass
class Delivery:
    """One install on one host: where it is there, and what this call shipped for it."""

    host: str
    what: str  # the install's name here (ozone-2.2.0-...)
    key: str
    path: str  # the install on the host
    files: int = 0  # shipped by this call (0: the host had it)
    bytes: int = 0
    seconds: float = 0.0

    def record(self) -> dict[str, Any]:
        return {
            "host": self.host,
            "what": self.what,
            "key": self.key,
            "path": self.path,
            "files": self.files,
            "bytes": self.bytes,
            "seconds": round(self.seconds, 3),
        }

    def said(self) -> str:
        if not self.files:
            return f"{self.what} on {self.host}: there already ({self.path})"
        mb = self.bytes / 1e6
        return (
            f"delivered {self.what} to {self.host}: {self.files} files, {mb:.1f} MB in "
            f"{self.seconds:.1f} s ({self.path})"
        )


def install_root(value: str) -> Path | None:
    """The install a path lies in (the nearest directory above it with provision's
    ``COMPLETE`` or a build's mark), resolved; None for any other path."""
    if not value.startswith("/"):
        return None
    p = Path(value)
    for d in (p, *p.parents):
        if d == Path("/"):
            return None
        if (d / provision.COMPLETE).is_file() or (d / BUILD_MARK).is_file():
            return d.resolve()
    return None


def _shipped(rel: str) -> bool:
    parts = rel.split("/")
    return parts[0] not in EXCLUDED_TOP and not any(p.startswith(".") for p in parts)


def _memo_path(root: Path) -> Path:
    tag = hashlib.sha256(str(root).encode()).hexdigest()[:16]
    return provision.cache_dir() / "deliver" / f"{root.name}-{tag}.json"


def manifest(root: Path) -> list[Entry]:
    """Every file and symlink of the install that is shipped, sorted. Digests are kept on
    disk by (size, mtime): a run hashes only what changed (the launcher provision refreshes),
    not the install's hundreds of megabytes of jars."""
    memo_file = _memo_path(root)
    try:
        memo = json.loads(memo_file.read_text())
    except (OSError, ValueError):
        memo = {}
    entries: list[Entry] = []
    fresh: dict[str, list[Any]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        for name in sorted(filenames + [d for d in dirnames if (here / d).is_symlink()]):
            p = here / name
            rel = str(p.relative_to(root))
            if not _shipped(rel):
                continue
            st = p.lstat()
            if p.is_symlink():
                entries.append(Entry(rel, "l", 0o777, 0, os.readlink(p)))
                continue
            if not p.is_file():
                continue
            stamp = [st.st_size, st.st_mtime_ns]
            known = memo.get(rel)
            if known and known[:2] == stamp:
                digest = known[2]
            else:
                h = hashlib.sha256()
                with open(p, "rb") as f:
                    for chunk in iter(lambda: f.read(1 << 20), b""):
                        h.update(chunk)
                digest = h.hexdigest()
            fresh[rel] = [*stamp, digest]
            entries.append(Entry(rel, "f", st.st_mode & 0o777, st.st_size, digest))
    if fresh != memo:
        with contextlib.suppress(OSError):
            memo_file.parent.mkdir(parents=True, exist_ok=True)
            tmp = memo_file.with_name(f".{memo_file.name}.{os.getpid()}")
            tmp.write_text(json.dumps(fresh))
            tmp.replace(memo_file)
    return sorted(entries, key=lambda e: e.path)


def key_of(root: Path, entries: list[Entry]) -> str:
    """The install's name on hosts: its name here and a hash of what is shipped."""
    text = "\n".join(f"{e.kind} {e.mode:o} {e.size} {e.sha256} {e.path}" for e in entries)
    name = re.sub(r"[^A-Za-z0-9._-]", "_", root.name).lstrip(".") or "install"
    return f"{name}-{hashlib.sha256(text.encode()).hexdigest()[:12]}"


def host_cache(host: Any) -> str:
    """The host's delivery directory as a shell word (``~`` is the login user's home)."""
    value = str((getattr(host, "spec", None) or {}).get("cache") or provision.DEFAULT_CACHE)
    if value == "~" or value.startswith("~/"):
        return '"$HOME"' + shlex.quote(value[1:]) if value != "~" else '"$HOME"'
    return shlex.quote(value)


def _script(cache: str, key: str) -> str:
    """The host's side: wait for the install's lock; say it is there, or list what a
    partial copy has, take a tar of the rest, check every file, rename into place."""
    k = key  # [A-Za-z0-9._-] only (key_of): a shell word as it is
    return f"""set -e; umask 022
mkdir -p {cache}; cd {cache}; R=$(pwd -P)
exec 9>>"$R/.{key}.lock"
flock -w {LOCK_WAIT} 9 || {{ echo "waited {LOCK_WAIT} s for another delivery" >&2; exit 3; }}
if [ -f "$R"/{k}/{DELIVERED} ]; then echo "@done $R/{key}"; exit 0; fi
mkdir -p "$R"/.{k}.partial; cd "$R"/.{k}.partial
echo @have; find . \\( -type f -o -type l \\) -printf '%s %P\\n'; echo @send
tar -x -f - --no-same-owner
if ! sha256sum -c --quiet {MANIFEST} >.perfpost-check 2>/dev/null; then
  sed -n 's/: FAILED.*$//p' .perfpost-check | while IFS= read -r f; do rm -f -- "$f"; done
  echo "@bad $(grep -c FAILED .perfpost-check)"; exit 4
fi
rm -f .perfpost-check; touch {DELIVERED}; cd "$R"
mv -T .{k}.partial {k} 2>/dev/null || rm -rf .{k}.partial
echo "@done $R/{key}"
"""


class _Tar:
    """The file object tarfile writes a stream to: the exec channel."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream

    def write(self, data: bytes) -> int:
        return int(self.stream.write(data))


# What this process knows a host has: (host, key) -> its path there.
_KNOWN: dict[tuple[str, str], str] = {}
_LOCK = threading.Lock()


def _local_lock(where: str, key: str) -> Any:
    """One delivery of ``key`` to ``where`` at a time from this machine (cells run in
    processes of their own): the others wait and then find it there."""
    d = provision.cache_dir() / "deliver" / "locks"
    d.mkdir(parents=True, exist_ok=True)
    name = hashlib.sha256(f"{where} {key}".encode()).hexdigest()[:20]
    return open(d / f"{name}.lock", "a")


def ensure(host: Any, root: Path, log: Any = None) -> Delivery:
    """The install ``root`` (of this machine) on ``host``, delivered if it lacks it. On
    this machine itself nothing moves."""
    root = root.resolve()
    name = getattr(host, "name", "?")
    if not hasattr(host, "stream"):
        return Delivery(name, root.name, root.name, str(root))
    entries = manifest(root)
    key = key_of(root, entries)
    where = str(getattr(host, "where", name))
    with _LOCK:
        known = _KNOWN.get((where, key))
    if known:
        return Delivery(name, root.name, key, known)
    with _local_lock(where, key) as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        began = time.monotonic()
        total = Delivery(name, root.name, key, "")
        for attempt in (1, 2):
            got = _once(host, root, entries, key)
            total.files += got.files
            total.bytes += got.bytes
            if got.path:
                total.path = got.path
                break
            if attempt == 2:
                raise DeliveryError(
                    f"delivering {root.name} to {name} failed: files arrived different from "
                    "what was sent, twice"
                )
        total.seconds = time.monotonic() - began
    with _LOCK:
        _KNOWN[(where, key)] = total.path
    if log is not None and total.files:
        print(total.said(), file=log, flush=True)
    return total


def _once(host: Any, root: Path, entries: list[Entry], key: str) -> Delivery:
    """One conversation: the host has it, or gets what it lacks; ``path`` is empty when the
    check failed (the bad files are gone: the next try ships them)."""
    name = getattr(host, "name", "?")
    out = Delivery(name, root.name, key, "")
    with host.stream(_script(host_cache(host), key)) as s:
        s.settimeout(LOCK_WAIT + 60)  # the host may first wait for another delivery's lock
        first = s.readline()
        s.settimeout(READ_WAIT)
        if first.startswith("@done "):
            out.path = first[6:]
            s.finish()
            return out
        have: dict[str, int] = {}
        listed = False
        if first == "@have":
            while line := s.readline():
                if line == "@send":
                    listed = True
                    break
                size, _, rel = line.partition(" ")
                if size.isdigit():
                    have[rel] = int(size)
        if not listed:
            code, rest, err = s.finish()
            raise DeliveryError(
                f"delivering {root.name} to {name} failed (exit {code}): "
                + (err.strip().splitlines() or rest or [first or "no answer"])[-1]
            )
        todo = [e for e in entries if e.kind == "l" or have.get(e.path) != e.size]
        sums = "".join(f"{e.sha256}  {e.path}\n" for e in entries if e.kind == "f")
        with tarfile.open(fileobj=_Tar(s), mode="w|", format=tarfile.GNU_FORMAT) as tar:
            for e in todo:
                tar.add(root / e.path, arcname=e.path, recursive=False)
                out.files += 1
                out.bytes += e.size
            info = tarfile.TarInfo(MANIFEST)
            info.size = len(sums.encode())
            info.mode = 0o644
            info.mtime = int(time.time())
            tar.addfile(info, _Bytes(sums.encode()))
        code, rest, err = s.finish()
    said = [ln for ln in rest if ln.startswith("@")]
    if code == 0 and said and said[-1].startswith("@done "):
        out.path = said[-1][6:]
        return out
    if code == 4:
        return out
    raise DeliveryError(
        f"delivering {root.name} to {name} failed (exit {code}): "
        + ((err.strip().splitlines() or ["no reason given"])[-1])
    )


class _Bytes:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.at = 0

    def read(self, n: int = -1) -> bytes:
        end = len(self.data) if n < 0 else self.at + n
        chunk = self.data[self.at : end]
        self.at += len(chunk)
        return chunk


def roots(values: Iterable[Any]) -> list[Path]:
    """The installs the string values (params, recursively) name, once each, in order."""
    found: list[Path] = []

    def walk(v: Any) -> None:
        if isinstance(v, str):
            for word in v.replace("=", " ").replace(":", " ").split():
                r = install_root(word)
                if r is not None and r not in found:
                    found.append(r)
        elif isinstance(v, Mapping):
            for x in v.values():
                walk(x)
        elif isinstance(v, list | tuple):
            for x in v:
                walk(x)

    for v in values:
        walk(v)
    return found


def prefixes(root: Path) -> list[str]:
    """The names a path into ``root`` may start with here: provision's symlink
    (``<cache>/<name>-<version>``) as well as the install itself."""
    names = {str(root)}
    parent = root.parent
    with contextlib.suppress(OSError):
        for p in parent.iterdir():
            if p.is_symlink() and p.resolve() == root:
                names.add(str(p))
    return sorted(names, key=len, reverse=True)


def localize(value: Any, mapping: Mapping[str, str]) -> Any:
    """``value`` (params, recursively) with every path into a local install (a key of
    ``mapping``, a prefix) rewritten to the install on the host."""
    if isinstance(value, str):
        for local, remote in sorted(mapping.items(), key=lambda kv: -len(kv[0])):
            if value == local:
                value = remote
            value = value.replace(local + "/", remote + "/")
        return value
    if isinstance(value, Mapping):
        return {k: localize(v, mapping) for k, v in value.items()}
    if isinstance(value, list):
        return [localize(v, mapping) for v in value]
    if isinstance(value, tuple):
        return tuple(localize(v, mapping) for v in value)
    return value


def deliver_for(
    host: Any, values: Iterable[Any], log: Any = None
) -> tuple[dict[str, str], list[Delivery]]:
    """Deliver every install ``values`` name to ``host``: the prefix mapping for
    :func:`localize`, and what was done. Nothing for this machine itself."""
    if not hasattr(host, "stream"):
        return {}, []
    mapping: dict[str, str] = {}
    done = []
    for root in roots(values):
        d = ensure(host, root, log=log or sys.stderr)
        done.append(d)
        for p in prefixes(root):
            mapping[p] = d.path
    return mapping, done
