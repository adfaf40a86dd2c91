"""Runtimes from Maven Central for hosts that have none installed: how any of them is fetched.

What is fetched is declared where it is used, as a :class:`Runtime` beside its pom, log4j
settings and launcher: Ozone's freon and vapor in ``tools/freon/``, a Hadoop client for teragen
in ``tools/teragen/``, a single-node YARN in ``clusters/yarn/``.

``install(runtime, version, cache)`` makes ``<cache>/<name>-<version>-<pom hash>/`` with
``lib/`` (the jars), ``conf/log4j.properties`` and ``bin/<launcher>`` (``ozone freon|vapor
...`` or ``yarn jar ...``), using Maven with the runtime's pom and a local repository inside
the cache, and points the symlink ``<cache>/<name>-<version>`` at it: the path every launcher,
marker and class path names. A finished install has a ``COMPLETE`` file; with it, nothing runs
and nothing is downloaded. Maven and a JDK come from ``scripts/setup``. Provisionings into one
cache take turns, since Maven does not lock its local repository.

An install is never removed nor changed under a JVM that runs from it (another checkout's, a
cluster's daemons): a changed pom gets an install of its own beside the old one, made under a
temporary name and renamed when finished (an interrupted one is never used), and the symlink is
replaced by rename(2), at once. Every launcher resolves its own physical directory
(``cd -P``), so a JVM started before the switch keeps one consistent set of jars. Older
installs stay in the cache until removed by hand. An install an older perfpost made in
``<cache>/<name>-<version>`` itself, a directory, is used as it is while its pom is current;
once it is not, it is renamed beside the new one (``<name>-<version>-<its pom hash>``) and the
symlink takes its place.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfpost import paths
from perfpost.errors import PerfpostError

DEFAULT_CACHE = "~/.cache/perfpost"
COMPLETE = "COMPLETE"


@dataclass(frozen=True)
class Runtime:
    """A runtime perfpost can fetch: ``files`` holds its ``pom.xml``, ``log4j.properties`` and
    launcher (package data beside the module that uses it); ``expect_jar`` checks the result."""

    name: str  # in the cache: <cache>/<name>-<version>/
    version: str  # the release fetched unless the config or command line names another
    files: Path
    version_property: str
    launcher: str
    expect_jar: str  # a jar whose absence means the resolution went wrong
    standin_parent: bool = False  # Ozone: a parent pom Maven Central lacks
    log4j: bool = True  # a conf/log4j.properties of perfpost's (not for an agent)
    # Built from perfpost's sources after the jars are resolved (Byteman's helper): called
    # with the staging directory and the log; ``sources`` are its inputs, part of the marker.
    build: Callable[[Path, Any], None] | None = None
    sources: tuple[str, ...] = ()


def configured(runtime: Runtime, tools: Mapping[str, Any]) -> tuple[str, str | None]:
    """The version and cache of ``runtime`` as the config's ``tools:`` sets them (its own
    version and the default cache otherwise)."""
    settings = tools.get(runtime.name, {})
    return str(settings.get("version", runtime.version)), settings.get("cache")


def configured_home(runtime: Runtime, tools: Mapping[str, Any]) -> Path:
    """Where the config's ``tools:`` has ``runtime`` provisioned."""
    return home(runtime.name, *configured(runtime, tools))


def configured_marker(runtime: Runtime, tools: Mapping[str, Any]) -> Path:
    """The finished-install marker of ``runtime`` where the config's ``tools:`` puts it."""
    return marker(runtime, *configured(runtime, tools))


def cache_dir(cache: str | None = None) -> Path:
    return Path(os.path.expanduser(cache or os.environ.get("PERFPOST_CACHE") or DEFAULT_CACHE))


def caches(tools: Mapping[str, Any]) -> list[str]:
    """Every cache a config's runtimes are provisioned into: the default one (or
    ``$PERFPOST_CACHE``) and each ``tools.<runtime>.cache``."""
    found = {str(cache_dir(None))}
    found |= {str(cache_dir(s.get("cache"))) for s in tools.values() if isinstance(s, Mapping)}
    return sorted(found)


# An install's path inside a cache: <name>-<version>[-<pom hash>]/... or builds/<name>-<stamp>/
_INSTALL = r"/(?=[A-Za-z][\w.]*-\d|builds/)"
_BOUNDARY = r"(?<![^\s:=,;\"'])"  # a path's start: the string's, or after a separator


def cache_free(value: Any, in_caches: list[str]) -> Any:
    """``value`` (a JSON-like tree) with every path of an install in one of ``in_caches``
    written as in the default cache: where the installs live is not what a run measured, so
    a cache moved, named by ``$PERFPOST_CACHE`` or another user's leaves a measurement's
    identity as it was. Other paths are left as they are, those inside a cache too (a data
    directory there is another directory when the cache moves)."""
    if not in_caches:
        return value
    default = os.path.expanduser(DEFAULT_CACHE).rstrip("/")
    alternatives = "|".join(
        re.escape(c.rstrip("/")) for c in sorted(in_caches, key=len, reverse=True)
    )
    pattern = re.compile(_BOUNDARY + "(?:" + alternatives + ")" + _INSTALL)

    def walk(v: Any) -> Any:
        if isinstance(v, str):
            return pattern.sub(lambda _m: default + "/", v)
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x) for x in v]
        return v

    return walk(value)


def home(tool: str, version: str, cache: str | None = None) -> Path:
    """The path of the current install of ``tool`` (the symlink :func:`switch` keeps, or an
    older perfpost's install): what launchers, markers and class paths name."""
    return cache_dir(cache) / f"{tool}-{version}"


def launcher(runtime: Runtime, version: str, cache: str | None = None) -> Path:
    return home(runtime.name, version, cache) / "bin" / runtime.launcher


def marker(runtime: Runtime, version: str, cache: str | None = None) -> Path:
    """The file a finished install of this perfpost's pom leaves (``COMPLETE-<pom hash>``):
    a pom that changed (a jar added) has no marker yet, so the install is made again."""
    return home(runtime.name, version, cache) / f"{COMPLETE}-{_pom_hash(runtime)}"


def _mvn(args: list[str], log: Any) -> None:
    mvn = shutil.which("mvn")
    if not mvn:
        raise PerfpostError("Maven (mvn) is not installed: run scripts/setup")
    result = subprocess.run(
        [mvn, "-B", "-q", *args], capture_output=True, text=True, errors="replace", check=False
    )
    # Maven 3.8 prints colour resets even in batch mode; the log is for reading.
    text = re.sub(r"\x1b\[[0-9;]*m", "", result.stdout + result.stderr)
    log.write(text)
    log.flush()
    if result.returncode != 0:
        said = _maven_error(text)
        raise PerfpostError(
            f"mvn {args[-1] if args else ''} failed (exit {result.returncode})"
            + (f": {said}" if said else "")
            + f"; see {getattr(log, 'name', 'the log')}"
        )


def _maven_error(text: str) -> str:
    """Maven's first ERROR line (of its output, colour codes removed): the one that names
    what it could not get."""
    for line in text.splitlines():
        if line.startswith("[ERROR]") and line[7:].strip():
            said = line[7:].strip()
            return said if len(said) <= 400 else said[:400] + "..."
    return ""


# A provisioning step's outcome, written where the workflow waits for it (paths.PROVISION):
# cells read it, so a runtime that cannot be provisioned fails the cells that need it, each
# with a record and the reason, and the rest of the run goes on.
OUTCOME_SCHEMA = 1


def write_outcome(path: str | Path, **fields: Any) -> None:
    """Write an outcome (``status``: done or failed, ``reason``, ...) in one rename."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}")
    tmp.write_text(json.dumps({"schema_version": OUTCOME_SCHEMA, **fields}, indent=1) + "\n")
    os.replace(tmp, target)


def outcome_path(marker: str | Path) -> str:
    """The outcome file of the provisioning that leaves ``marker``
    (<cache>/<tool>-<version>/COMPLETE-<pom>; no runtime's name has a dash), relative to the
    workflow's directory. Named without the cache: cells take it as input, and Snakemake
    runs a finished cell again (in place, its log replaced) when its input files are others.

    For the same reason an outcome an older perfpost named after its cache
    (``<tool>-<version>-<pom>.<sha256 of the cache's path, 8 digits>.json``) keeps its name
    where it exists: its finished cells would otherwise all run again once."""
    import hashlib

    path = paths.fill(paths.PROVISION, **_install_of(marker))
    tag = hashlib.sha256(str(Path(marker).parents[1]).encode()).hexdigest()[:8]
    older = f"{path.removesuffix('.json')}.{tag}.json"
    return older if os.path.exists(older) else path


def failed_outcomes(
    markers: list[str], again: Mapping[str, Runtime] | None = None, run: str | None = None
) -> str | None:
    """Why a cell cannot run, from the outcomes of the installs it needs (by their
    ``markers``): None when every runtime it needs was provisioned. With ``again`` (the
    runtimes by name), each one whose outcome says it failed in another run than ``run``
    (the mark of the run the cell is part of), or whose install is not in the cache the
    config names (one emptied or moved, ``$PERFPOST_CACHE``), is provisioned again first,
    here, and its outcome rewritten.

    The provisioning rule cannot do that: Snakemake runs a job whose output exists again
    only for a changed recorded param, and a job so run hides every job after it whose input
    is ``ancient`` (the cells, which must not run again for a newer outcome), which would not
    run at all that time (Snakemake 9.27's ``DAG.update_needrun`` masks the jobs after a job
    it will run, then skips those whose input is ancient; snakemake/snakemake#4166). So the
    first cell of a run that needs the runtime tries, as the rule would have (Maven's output
    appended to the rule's log); a failure it meets is this run's, and the run's other cells
    take it as it is rather than each asking Maven again."""
    reasons = []
    for marker in markers:
        path = Path(outcome_path(marker))
        try:
            outcome = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        runtime = (again or {}).get(str(outcome.get("tool")))
        if outcome.get("status") == "failed":
            stale = outcome.get("run") != run
        else:
            stale = not Path(marker).exists()
        if runtime is not None and stale:
            outcome = _provision_again(runtime, marker, path, run)
        if outcome.get("status") == "failed":
            what = f"{outcome.get('tool', '?')} {outcome.get('version', '')}".strip()
            reasons.append(f"provisioning {what} failed: {outcome.get('reason', '')}")
    return "; ".join(reasons) or None


def _install_of(marker: str | Path) -> dict[str, str]:
    """The tool, version and pom of the install ``marker`` (<cache>/<tool>-<version>/
    COMPLETE-<pom>) leaves: what its outcome and log are named by."""
    m = Path(marker)
    tool, version = m.parent.name.split("-", 1)
    return {"tool": tool, "version": version, "pom": m.name.split("-", 1)[1]}


def _provision_again(runtime: Runtime, marker: str, path: Path, run: str | None) -> dict[str, Any]:
    version, cache = _install_of(marker)["version"], str(Path(marker).parents[1])
    what = {"tool": runtime.name, "version": version, "cache": cache, "run": run or ""}
    log = paths.fill(paths.PROVISION_LOG, **_install_of(marker))
    try:
        launcher = install(runtime, version, cache, log)
    except (PerfpostError, OSError, subprocess.SubprocessError) as e:
        write_outcome(path, status="failed", reason=str(e), **what)
    else:
        write_outcome(path, status="done", launcher=str(launcher), **what)
    return json.loads(path.read_text())


def _small_files(runtime: Runtime) -> dict[str, Path]:
    """perfpost's own files in an install (launcher, log4j), by their path in it."""
    out = {f"bin/{runtime.launcher}": runtime.files / runtime.launcher}
    if runtime.log4j:
        out["conf/log4j.properties"] = runtime.files / "log4j.properties"
    return out


def _refresh(runtime: Runtime, target: Path) -> None:
    """A finished install keeps its jars, but takes this perfpost's launcher and log4j
    settings: they change with perfpost, not with the tool."""
    for rel, src in _small_files(runtime).items():
        dst = target / rel
        if not dst.exists() or dst.read_bytes() != src.read_bytes():
            tmp = dst.with_name(f".{dst.name}.new")
            shutil.copy(src, tmp)
            tmp.chmod(0o755 if rel.startswith("bin/") else 0o644)
            tmp.replace(dst)


def _pom_hash(runtime: Runtime) -> str:
    import hashlib

    digest = hashlib.sha256((runtime.files / "pom.xml").read_bytes())
    for name in runtime.sources:  # what perfpost builds into the install
        digest.update((runtime.files / name).read_bytes())
    return digest.hexdigest()[:16]


def refresh_launcher(launcher_path: str | None, runtimes: Mapping[str, Runtime]) -> None:
    """Bring the install a cell's launcher belongs to up to date with this perfpost (see
    :func:`_refresh`); a launcher that is not a finished local install of one of ``runtimes``
    (by name) is left alone."""
    if not launcher_path:
        return
    target = Path(launcher_path).parent.parent
    try:
        tool = json.loads((target / COMPLETE).read_text())["tool"]
    except (OSError, ValueError, KeyError):
        return
    if tool in runtimes:
        _refresh(runtimes[tool], target)


def install_dir(runtime: Runtime, version: str, cache: str | None = None) -> Path:
    """Where the install of this perfpost's pom of ``runtime`` lives; ``home`` points at it."""
    return cache_dir(cache) / f"{runtime.name}-{version}-{_pom_hash(runtime)}"


def _finished(target: Path, pom: str) -> bool:
    """Whether ``target`` is a finished install of the pom hashed ``pom``."""
    return (target / COMPLETE).exists() and (target / f"{COMPLETE}-{pom}").exists()


def _exchange(a: Path, b: Path) -> bool:
    """Swap the names ``a`` and ``b`` at once (renameat2 with RENAME_EXCHANGE); False where
    the C library or the file system cannot."""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    return renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0


def _aside(home: Path) -> Path:
    """A free name beside ``home`` for an older perfpost's install there: the name this
    perfpost would give it (``<name>-<version>-<its pom hash>``), or a numbered one."""
    try:
        pom = str(json.loads((home / COMPLETE).read_text())["pom"])
    except (OSError, ValueError, KeyError, TypeError):
        pom = ""
    if re.fullmatch(r"[0-9a-f]{16}", pom) and not os.path.lexists(f"{home}-{pom}"):
        return Path(f"{home}-{pom}")
    n = 1
    while os.path.lexists(f"{home}-older-{n}"):
        n += 1
    return Path(f"{home}-older-{n}")


def switch(home: Path, target: Path) -> None:
    """Point the symlink ``home`` at ``target`` (a sibling), replacing the link by rename(2):
    a process resolving ``home`` finds the old install or the new one, never neither. What
    was there stays: an older perfpost's install (a directory at ``home``) is renamed beside
    it, not removed; only an empty directory (Snakemake makes the marker's) is."""
    if os.path.islink(home) and os.readlink(home) == target.name:
        return
    tmp = home.with_name(f".{home.name}.link-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    os.symlink(target.name, tmp)
    try:
        if home.is_dir() and not home.is_symlink():
            try:
                home.rmdir()  # empty: nothing can run from it
            except OSError:
                aside = _aside(home)
                if _exchange(tmp, home):  # the link in place at once; the directory at tmp
                    tmp.rename(aside)
                    return
                home.rename(aside)
        elif os.path.lexists(home) and not home.is_symlink():
            raise PerfpostError(f"{home} is neither an install nor a link to one: remove it")
        tmp.replace(home)
    finally:
        if os.path.lexists(tmp):
            tmp.unlink()


def install(
    runtime: Runtime,
    version: str | None = None,
    cache: str | None = None,
    log_path: str | None = None,
) -> Path:
    """The launcher of a provisioned ``runtime`` (its own version unless ``version`` names
    another); provisions it first if needed."""
    version = version or runtime.version
    home_dir = home(runtime.name, version, cache)
    pom = _pom_hash(runtime)
    if not _finished(home_dir, pom):
        target = install_dir(runtime, version, cache)
        with _maven_repository(cache):
            if not _finished(target, pom):  # made by another provisioning while this waited
                _build(runtime, version, target, cache, log_path)
        switch(home_dir, target)
    _refresh(runtime, home_dir)
    return home_dir / "bin" / runtime.launcher


@contextlib.contextmanager
def _maven_repository(cache: str | None) -> Iterator[None]:
    """The cache's Maven repository for one provisioning at a time (``flock``): Maven 3.8
    does not lock its local repository, and two provisionings into one cache (two runs
    sharing it, or one run's steps for two runtimes on hosts other than this one) would
    otherwise write the same artifacts at once."""
    repo = cache_dir(cache) / "m2"
    repo.mkdir(parents=True, exist_ok=True)
    with open(repo / ".perfpost-provision.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _build(
    runtime: Runtime, version: str, target: Path, cache: str | None, log_path: str | None
) -> None:
    """Make the install ``target``: in a directory of its own, renamed to ``target`` only
    once finished, so an interrupted one is never taken for an install."""
    spec = runtime
    tool = runtime.name
    base = cache_dir(cache)
    base.mkdir(parents=True, exist_ok=True)
    repo = base / "m2"
    envs = runtime.files
    staging = Path(tempfile.mkdtemp(prefix=f".{tool}-{version}-", dir=base))
    log = open(log_path or staging / "provision.log", "a")
    began = time.monotonic()
    try:
        if spec.standin_parent:
            standin = staging / "hdds-hadoop-dependency-client.pom"
            standin.write_text(
                (envs / "hdds-hadoop-dependency-client.pom.in")
                .read_text()
                .replace("@VERSION@", version)
            )
            _mvn(
                [
                    f"-Dmaven.repo.local={repo}",
                    f"-Dfile={standin}",
                    f"-DpomFile={standin}",
                    "-Dpackaging=pom",
                    "-DgroupId=org.apache.ozone",
                    "-DartifactId=hdds-hadoop-dependency-client",
                    f"-Dversion={version}",
                    "install:install-file",
                ],
                log,
            )
        _mvn(
            [
                f"-Dmaven.repo.local={repo}",
                "-f",
                str(envs / "pom.xml"),
                f"-D{spec.version_property}={version}",
                "-DincludeScope=runtime",
                f"-DoutputDirectory={staging / 'lib'}",
                "dependency:copy-dependencies",
            ],
            log,
        )
        jars = sorted(p.name for p in (staging / "lib").glob("*.jar"))
        if not any(j.startswith(spec.expect_jar) for j in jars):
            raise PerfpostError(
                f"Maven resolved {len(jars)} jars but no {spec.expect_jar}{version}"
            )
        (staging / "conf").mkdir()
        (staging / "bin").mkdir()
        if spec.build is not None:
            spec.build(staging, log)
        _refresh(runtime, staging)
        (staging / "VERSION").write_text(version + "\n")
        (staging / COMPLETE).write_text(
            json.dumps(
                {"tool": tool, "version": version, "jars": len(jars), "pom": _pom_hash(runtime)}
            )
            + "\n"
        )
        (staging / f"{COMPLETE}-{_pom_hash(runtime)}").write_text("")
        # Readable by every user: a cluster's daemons may run as another user here.
        for p in [staging, *staging.rglob("*")]:
            p.chmod(p.stat().st_mode | 0o044 | (0o011 if p.is_dir() else 0))
        try:
            staging.rename(target)  # atomic: a half-made install never has the name
        except OSError:
            if not _finished(target, _pom_hash(runtime)):
                raise
            # Another checkout made the same install meanwhile: it is the same, and in use.
        print(
            f"{tool} {version}: {len(jars)} jars resolved by Maven into {target} "
            f"in {time.monotonic() - began:.0f} s",
            file=log,
            flush=True,
        )
    finally:
        log.close()
        shutil.rmtree(staging, ignore_errors=True)  # this call's own, used by nobody
