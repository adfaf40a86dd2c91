"""A build the user has (a distribution directory or tarball) as a cluster's software.

``clusters.<name>.build`` names a directory or a ``.tar.gz``/``.tgz``/``.tar`` on this
machine: an Ozone or Hadoop distribution made from a source tree, or an install in
perfpost's layout. Before the cluster starts it is staged into perfpost's cache,
``<cache>/builds/<name>-<stamp>/``, once per content stamp (the source's path, and its
files' sizes and times, so a rebuilt tarball is a new build): a tarball unpacked there (its
one top-level directory taken off), a directory copied. Staging happens in a directory of
its own and is renamed into place when finished, with a ``.perfpost-build`` mark, so a half
staged build is never used; :mod:`perfpost.deliver` then ships it to the hosts that run it,
like perfpost's own installs. The staged path is known when the plan is made (from ``stat``
alone), so the cluster's identity, and the client a cell runs from the same build, are too.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tarfile
import tempfile
from pathlib import Path

from perfpost import provision
from perfpost.errors import ConfigError, PerfpostError

MARK = ".perfpost-build"  # deliver.BUILD_MARK: the staged build's root
TARBALL = (".tar.gz", ".tgz", ".tar")


def _stamp(source: Path) -> str:
    """What identifies the source's content without reading it: its path, and each file's
    relative path, size and modification time."""
    h = hashlib.sha256(str(source).encode())
    if source.is_file():
        st = source.stat()
        h.update(f"{st.st_size} {st.st_mtime_ns}".encode())
    else:
        for dirpath, dirnames, filenames in os.walk(source):
            dirnames.sort()
            for name in sorted(filenames):
                p = Path(dirpath) / name
                st = p.lstat()
                h.update(f"{p.relative_to(source)} {st.st_size} {st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:12]


def _name(source: Path) -> str:
    name = source.name
    for suffix in TARBALL:
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return re.sub(r"[^A-Za-z0-9._-]", "_", name).lstrip(".") or "build"


def check(value: str, where: str) -> Path:
    """The build a config names, as an absolute path; a clear error when it is not there or
    not a directory or tarball."""
    source = Path(os.path.expanduser(value)).resolve()
    if not source.exists():
        raise ConfigError(where, f"no such build: {source}")
    if source.is_file() and not source.name.endswith(TARBALL):
        raise ConfigError(where, f"{source} is neither a directory nor a tarball ({TARBALL})")
    return source


def staged_path(source: Path, cache: str | None = None) -> Path:
    """Where ``source`` is (or will be) staged: the cluster's ``home``."""
    return provision.cache_dir(cache) / "builds" / f"{_name(source)}-{_stamp(source)}"


def stage(source: Path, cache: str | None = None) -> Path:
    """Stage ``source`` (once) and return the staged build's root."""
    target = staged_path(source, cache)
    if (target / MARK).is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        root = staging / "build"
        if source.is_dir():
            shutil.copytree(source, root, symlinks=True)
        else:
            _unpack(source, staging / "unpacked")
            tops = list((staging / "unpacked").iterdir())
            top = tops[0] if len(tops) == 1 and tops[0].is_dir() else staging / "unpacked"
            top.rename(root)
        if not any((root / p).exists() for p in ("bin", "lib", "share")):
            raise PerfpostError(
                f"build {source} has no bin/, lib/ or share/: not a distribution or install"
            )
        (root / MARK).write_text(json.dumps({"source": str(source)}) + "\n")
        try:
            root.rename(target)
        except OSError:
            if not (target / MARK).is_file():
                raise
    except (OSError, tarfile.TarError) as e:
        raise PerfpostError(f"staging build {source} failed: {e}") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def _unpack(tarball: Path, into: Path) -> None:
    into.mkdir()
    with tarfile.open(tarball) as tar:
        tar.extractall(into, filter="tar")


def source_of(home: str) -> str | None:
    """The source a staged build was made from (its mark), or None."""
    try:
        return str(json.loads((Path(home) / MARK).read_text())["source"])
    except (OSError, ValueError, KeyError):
        return None
