"""Tools from Maven Central for hosts that have none installed: Ozone's freon and vapor.

``ozone(version, cache)`` makes ``<cache>/ozone-<version>/`` with ``lib/`` (the jars),
``conf/log4j.properties`` and ``bin/ozone`` (a launcher for ``ozone freon|vapor``), using
Maven with the pom kept in ``envs/ozone`` and a local repository inside the cache. A finished
install has a ``COMPLETE`` file; with it, nothing runs and nothing is downloaded. Maven and a
JDK come from ``scripts/setup``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from perfpost.errors import PerfpostError

ENVS = Path(__file__).resolve().parents[2] / "envs" / "ozone"
DEFAULT_CACHE = "~/.cache/perfpost"
COMPLETE = "COMPLETE"


def cache_dir(cache: str | None = None) -> Path:
    return Path(os.path.expanduser(cache or os.environ.get("PERFPOST_CACHE") or DEFAULT_CACHE))


def ozone_home(version: str, cache: str | None = None) -> Path:
    return cache_dir(cache) / f"ozone-{version}"


def ozone_launcher(version: str, cache: str | None = None) -> Path:
    return ozone_home(version, cache) / "bin" / "ozone"


def marker(version: str, cache: str | None = None) -> Path:
    return ozone_home(version, cache) / COMPLETE


def _mvn(args: list[str], log) -> None:
    mvn = shutil.which("mvn")
    if not mvn:
        raise PerfpostError("Maven (mvn) is not installed: run scripts/setup")
    result = subprocess.run(
        [mvn, "-B", "-q", *args], stdout=log, stderr=subprocess.STDOUT, check=False
    )
    if result.returncode != 0:
        raise PerfpostError(
            f"mvn {' '.join(args[:1])} failed (exit {result.returncode}); "
            f"see {getattr(log, 'name', 'the log')}"
        )


def ozone(version: str, cache: str | None = None, log_path: str | None = None) -> Path:
    """The launcher of a provisioned freon/vapor ``version``; provisions it first if needed."""
    home = ozone_home(version, cache)
    if (home / COMPLETE).exists():
        return home / "bin" / "ozone"
    base = cache_dir(cache)
    base.mkdir(parents=True, exist_ok=True)
    repo = base / "m2"
    staging = Path(tempfile.mkdtemp(prefix=f".ozone-{version}-", dir=base))
    log = open(log_path, "a") if log_path else open(staging / "provision.log", "a")
    try:
        standin = staging / "hdds-hadoop-dependency-client.pom"
        standin.write_text(
            (ENVS / "hdds-hadoop-dependency-client.pom.in")
            .read_text()
            .replace("@VERSION@", version)
        )
        _mvn(
            [
                f"-Dmaven.repo.local={repo}",
                "install:install-file",
                f"-Dfile={standin}",
                f"-DpomFile={standin}",
                "-Dpackaging=pom",
                "-DgroupId=org.apache.ozone",
                "-DartifactId=hdds-hadoop-dependency-client",
                f"-Dversion={version}",
            ],
            log,
        )
        _mvn(
            [
                f"-Dmaven.repo.local={repo}",
                "-f",
                str(ENVS / "pom.xml"),
                f"-Dozone.version={version}",
                "dependency:copy-dependencies",
                "-DincludeScope=runtime",
                f"-DoutputDirectory={staging / 'lib'}",
            ],
            log,
        )
        jars = sorted(p.name for p in (staging / "lib").glob("*.jar"))
        if not any(j.startswith("ozone-freon-") for j in jars):
            raise PerfpostError(f"Maven resolved {len(jars)} jars but no ozone-freon {version}")
        (staging / "conf").mkdir()
        shutil.copy(ENVS / "log4j.properties", staging / "conf" / "log4j.properties")
        (staging / "bin").mkdir()
        shutil.copy(ENVS / "ozone", staging / "bin" / "ozone")
        (staging / "bin" / "ozone").chmod(0o755)
        (staging / "VERSION").write_text(version + "\n")
        (staging / COMPLETE).write_text(json.dumps({"version": version, "jars": len(jars)}) + "\n")
        # Readable by every user: test hosts log in as other users and share this path.
        for p in [staging, *staging.rglob("*")]:
            p.chmod(p.stat().st_mode | 0o044 | (0o011 if p.is_dir() else 0))
        shutil.rmtree(home, ignore_errors=True)
        staging.rename(home)  # atomic: a half-made install is never mistaken for a finished one
    finally:
        log.close()
        shutil.rmtree(staging, ignore_errors=True)
    return home / "bin" / "ozone"
