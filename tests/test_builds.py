"""A user's build (a distribution directory or tarball) staged as a cluster's software: what
the plan names before anything is staged, staging once and atomically, and mistakes named
with their key. Expected values: the files written here, their sha256 by hashlib."""

from __future__ import annotations

import copy
import hashlib
import os
import tarfile
from pathlib import Path

import pytest

from perfpost import builds
from perfpost.errors import ConfigError, PerfpostError
from perfpost.plan.build import build_plan


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PERFPOST_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def distribution(where: Path, name: str = "ozone-9.9.9-SNAPSHOT") -> Path:
    d = where / name
    (d / "share" / "ozone" / "lib").mkdir(parents=True)
    (d / "bin").mkdir()
    (d / "share" / "ozone" / "lib" / "a.jar").write_bytes(os.urandom(5000))
    (d / "bin" / "ozone").write_text("#!/bin/sh\necho 9.9.9\n")
    (d / "bin" / "ozone").chmod(0o755)
    return d


def digests(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in root.rglob("*")
        if p.is_file() and p.name != builds.MARK
    }


def test_a_tarball_and_its_directory_stage_to_the_same_files(tmp_path):
    src = distribution(tmp_path)
    tarball = tmp_path / "ozone-9.9.9-SNAPSHOT.tar.gz"
    with tarfile.open(tarball, "w:gz") as tar:
        tar.add(src, arcname=src.name)
    from_dir = builds.stage(src)
    from_tar = builds.stage(tarball)
    assert from_dir != from_tar  # two sources, two staged builds
    assert digests(from_dir) == digests(src) == digests(from_tar)
    assert os.access(from_tar / "bin" / "ozone", os.X_OK)
    assert builds.source_of(str(from_tar)) == str(tarball)
    # The plan named the same path before staging (stat only).
    assert builds.staged_path(tarball) == from_tar


def test_a_changed_build_is_another_build_and_staging_is_done_once(tmp_path):
    src = distribution(tmp_path)
    first = builds.stage(src)
    marker = (first / builds.MARK).stat().st_mtime_ns
    assert builds.stage(src) == first
    assert (first / builds.MARK).stat().st_mtime_ns == marker  # not staged again
    (src / "bin" / "ozone").write_text("#!/bin/sh\necho 9.9.10\n")
    second = builds.stage(src)
    assert second != first
    assert (second / "bin" / "ozone").read_text().endswith("9.9.10\n")
    assert (first / "bin" / "ozone").read_text().endswith("9.9.9\n")  # untouched


def test_what_is_no_distribution_is_never_staged(tmp_path):
    bad = tmp_path / "notes.tar"
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "README").write_text("hello")
    with tarfile.open(bad, "w") as tar:
        tar.add(tmp_path / "notes", arcname="notes")
    with pytest.raises(PerfpostError, match="no bin/, lib/ or share/"):
        builds.stage(bad)
    target = builds.staged_path(bad)
    assert not target.exists()
    assert list(target.parent.iterdir()) == []  # no half-staged directory left


CFG = {
    "clusters": {"oz": {"kind": "ozone", "buckets": ["vol1/bucket1"]}},
    "experiments": {
        "e": {
            "tool": "freon",
            "cluster": "oz",
            "params": {"subcommand": "ockg", "dir": "/tmp/x", "options": {"n": 10}},
        }
    },
}


def plan_with(cluster: dict):
    cfg = copy.deepcopy(CFG)
    cfg["clusters"]["oz"].update(cluster)
    return build_plan(cfg)


def test_a_build_is_the_cluster_s_home_and_the_freon_client_s_launcher(tmp_path):
    src = distribution(tmp_path)
    plan = plan_with({"build": str(src)})
    spec = next(plan.jobs())
    (cluster,) = spec.clusters
    staged = str(builds.staged_path(src))
    assert cluster["build"] == str(src)
    assert cluster["home"] == staged
    assert spec.params["launcher"] == f"{staged}/bin/ozone"
    # Without a build the client is the host's, as before.
    spec = next(plan_with({}).jobs())
    assert spec.params["launcher"] != f"{staged}/bin/ozone"
    assert "build" not in spec.clusters[0] or spec.clusters[0]["build"] is None


@pytest.mark.parametrize(
    ("cluster", "said"),
    [
        ({"build": "/nonexistent/ozone.tar.gz"}, "no such build: /nonexistent/ozone.tar.gz"),
        ({"build": "{here}", "home": "/opt/ozone"}, "a build or a `home`, not both"),
    ],
)
def test_mistakes_name_their_key(tmp_path, cluster, said):
    cluster = {k: v.replace("{here}", str(tmp_path)) for k, v in cluster.items()}
    with pytest.raises(ConfigError) as e:
        plan_with(cluster)
    assert "clusters.oz.build" in str(e.value)
    assert said in str(e.value)


def test_a_distributions_daemons_leave_its_shaded_file_system_client_out(tmp_path):
    """An Ozone distribution's share/ozone/lib holds the shaded ozone-filesystem-hadoop3 jar
    beside the daemons' jars; it repeats Ozone's classes against relocated libraries, and a
    daemon that loaded it first failed (NoSuchMethodError in RatisHelper)."""
    import subprocess

    from perfpost.clusters.base import classpath

    lib = tmp_path / "share" / "ozone" / "lib"
    lib.mkdir(parents=True)
    for name in ("hdds-common-2.3.0.jar", "ozone-filesystem-hadoop3-2.3.0.jar", "ratis-x.jar"):
        (lib / name).touch()
    got = subprocess.run(
        ["sh", "-c", f'echo "{classpath(str(tmp_path))}"'], capture_output=True, text=True
    ).stdout.strip()
    assert sorted(p for p in got.split(":") if p) == [
        f"{lib}/hdds-common-2.3.0.jar",
        f"{lib}/ratis-x.jar",
    ]
