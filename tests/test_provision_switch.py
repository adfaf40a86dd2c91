"""A provisioned install is replaced beside the old one and switched into place, never removed
under a JVM that runs from it: a small runtime whose Maven step is faked (no download), and
perfpost's real launcher scripts with a `java` on PATH that reports what it was given."""

from __future__ import annotations

import concurrent.futures
import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from perfpost import provision
from tests.conftest import ROOT, env_with_venv

PACKAGE = ROOT / "workflow" / "perfpost"
# Every launcher perfpost installs, with arguments that make it start its JVM.
LAUNCHERS = {
    "tools/freon/ozone": ["freon", "dfsg"],
    "tools/teragen/yarn": ["jar", "some.jar", "teragen"],
    "clusters/hdfs/hdfs": ["namenode"],
    "clusters/yarn/yarn": ["resourcemanager"],
    "instrument/bmcheck": ["rules.btm"],
}

# A `java` that says it started, waits for $GO, then prints the jars of its class path's
# lib/ directories (their contents: each names the pom it was resolved from).
FAKE_JAVA = r"""#!/bin/sh
echo "$@" > "$STARTED"
while [ ! -e "$GO" ]; do sleep 0.05; done
while [ $# -gt 0 ]; do case "$1" in -cp) cp=$2; shift ;; esac; shift; done
set -f; IFS=:
for e in $cp; do case "$e" in */lib/\*) set +f; cat "${e%\*}"*.jar; set -f ;; esac; done
"""


def runtime(files: Path, launcher: str = "tools/freon/ozone") -> provision.Runtime:
    """A runtime like freon's, with the real launcher ``launcher`` of perfpost."""
    files.mkdir(parents=True, exist_ok=True)
    name = Path(launcher).name
    shutil.copy(PACKAGE / launcher, files / name)
    (files / "log4j.properties").write_text("log4j.rootLogger=INFO\n")
    if not (files / "pom.xml").exists():
        (files / "pom.xml").write_text("<project>first pom</project>\n")
    return provision.Runtime(
        name="fake",
        version="1.0",
        files=files,
        version_property="fake.version",
        launcher=name,
        expect_jar="fake-core-",
    )


@pytest.fixture
def maven(monkeypatch):
    """Maven faked: copy-dependencies writes one jar holding the pom it was given."""
    calls: list[str] = []

    def fake(args: list[str], log) -> None:
        out = Path(next(a.split("=", 1)[1] for a in args if a.startswith("-DoutputDirectory=")))
        pom = Path(args[args.index("-f") + 1]).read_text()
        out.mkdir(parents=True)
        (out / "fake-core-1.0.jar").write_text(pom)
        calls.append(pom)

    monkeypatch.setattr(provision, "_mvn", fake)
    return calls


def fake_java(tmp_path: Path) -> dict[str, str]:
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir()
    (bin_dir / "java").write_text(FAKE_JAVA)
    (bin_dir / "java").chmod(0o755)
    return {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "STARTED": str(tmp_path / "started"),
        "GO": str(tmp_path / "go"),
    }


def wait_for(path: Path, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def test_a_jvm_started_before_a_new_install_keeps_its_own_jars(tmp_path, maven):
    cache = tmp_path / "cache"
    rt = runtime(tmp_path / "files")
    launcher = provision.install(rt, cache=str(cache))
    old = Path(os.path.realpath(launcher)).parents[1]
    env = fake_java(tmp_path)
    jvm = subprocess.Popen(
        [str(launcher), "freon", "dfsg"], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        wait_for(tmp_path / "started")  # the launcher chose its jars and started its JVM
        held = open(old / "lib" / "fake-core-1.0.jar")  # a jar the JVM has open
        (rt.files / "pom.xml").write_text("<project>second pom</project>\n")
        again = provision.install(rt, cache=str(cache))
        (tmp_path / "go").touch()
        out, _ = jvm.communicate(timeout=20)
    finally:
        if jvm.poll() is None:
            jvm.kill()
            jvm.wait()
    assert len(maven) == 2  # the changed pom was resolved again
    # The JVM's class path is the install it started from, whole, after the switch.
    assert out == "<project>first pom</project>\n"
    assert held.read() == "<project>first pom</project>\n"
    held.close()
    # That install is still there, beside the new one, which the launcher's path now names.
    assert (old / "lib" / "fake-core-1.0.jar").read_text() == "<project>first pom</project>\n"
    home = provision.home("fake", "1.0", str(cache))
    assert again == home / "bin" / "ozone"
    assert home.is_symlink()
    new = Path(os.path.realpath(home))
    assert new != old
    assert new.parent == old.parent
    assert (new / "lib" / "fake-core-1.0.jar").read_text() == "<project>second pom</project>\n"
    assert provision.marker(rt, "1.0", str(cache)).exists()


@pytest.mark.parametrize("launcher", sorted(LAUNCHERS))
def test_every_launcher_runs_its_jvm_from_its_installs_own_directory(tmp_path, maven, launcher):
    """Each launcher resolves the directory it was started from (the symlink perfpost keeps
    at <name>-<version>) to the install it names: its class path names no link."""
    cache = tmp_path / "cache"
    path = provision.install(runtime(tmp_path / "files", launcher), cache=str(cache))
    env = fake_java(tmp_path)
    (tmp_path / "go").touch()
    got = subprocess.run(
        [str(path), *LAUNCHERS[launcher]], env=env, capture_output=True, text=True, timeout=20
    )
    assert got.returncode == 0, got.stderr
    args = (tmp_path / "started").read_text().split()
    cp = args[args.index("-cp") + 1]
    physical = os.path.realpath(path.parents[1])
    assert f"{physical}/lib/*" in cp.split(":"), cp
    assert str(path.parents[1]) + "/" not in cp, cp


CHILD = """
import sys, time
from pathlib import Path
from perfpost import provision

files, cache, flag = map(Path, sys.argv[1:4])
def mvn(args, log):
    out = Path(next(a.split("=", 1)[1] for a in args if a.startswith("-DoutputDirectory=")))
    out.mkdir(parents=True)
    (out / "fake-core-1.0.jar").write_text("from the interrupted install")
    flag.touch()
    time.sleep(300)
provision._mvn = mvn
rt = provision.Runtime("fake", "1.0", files, "fake.version", "ozone", "fake-core-")
provision.install(rt, cache=str(cache))
"""


def test_an_install_interrupted_midway_is_never_used(tmp_path, maven):
    cache = tmp_path / "cache"
    rt = runtime(tmp_path / "files")
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(rt.files), str(cache), str(tmp_path / "resolved")],
        env=env_with_venv(),
    )
    try:
        wait_for(tmp_path / "resolved")
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    (staging,) = [p for p in cache.iterdir() if p.name != "m2"]
    # Killed before it finished, as if right before its last step: even markers would not do.
    (staging / provision.COMPLETE).write_text(json.dumps({"tool": "fake"}))
    (staging / f"{provision.COMPLETE}-{provision._pom_hash(rt)}").write_text("")
    home = provision.home("fake", "1.0", str(cache))
    assert not os.path.lexists(home)
    assert not provision.marker(rt, "1.0", str(cache)).exists()
    launcher = provision.install(rt, cache=str(cache))
    assert maven == ["<project>first pom</project>\n"]  # resolved anew, not taken over
    installed = Path(os.path.realpath(launcher)).parents[1]
    assert installed != staging
    assert (installed / "lib" / "fake-core-1.0.jar").read_text() == maven[0]


def test_provisionings_into_one_cache_take_turns_with_its_maven_repository(tmp_path, monkeypatch):
    """Two runtimes, and one runtime twice, provisioned into one cache at once (threads here;
    two runs or the suite's workers sharing a cache): Maven, which does not lock its local
    repository, runs for one at a time, and a runtime made while another waited is not made
    again."""
    inside, most, calls = [0], [0], []
    guard = threading.Lock()

    def slow(args: list[str], log) -> None:
        with guard:
            inside[0] += 1
            most[0] = max(most[0], inside[0])
        time.sleep(0.3)
        out = Path(next(a.split("=", 1)[1] for a in args if a.startswith("-DoutputDirectory=")))
        out.mkdir(parents=True)
        (out / "fake-core-1.0.jar").write_text("jar")
        calls.append(out)
        with guard:
            inside[0] -= 1

    monkeypatch.setattr(provision, "_mvn", slow)
    cache = str(tmp_path / "cache")
    one = runtime(tmp_path / "files")
    other = dataclasses.replace(one, name="other")
    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        got = list(pool.map(lambda rt: provision.install(rt, cache=cache), [one, other, one]))
    assert most[0] == 1
    assert len(calls) == 2  # one build each
    assert got[0] == got[2] == provision.launcher(one, "1.0", cache)
    assert got[1] == provision.launcher(other, "1.0", cache)


def older_perfpost_install(cache: Path, rt: provision.Runtime) -> Path:
    """<cache>/fake-1.0 as perfpost made it before installs were switched by a symlink: a
    directory of its own, with the markers of the pom it was made from."""
    home = cache / "fake-1.0"
    (home / "lib").mkdir(parents=True)
    (home / "bin").mkdir()
    (home / "conf").mkdir()
    (home / "lib" / "fake-core-1.0.jar").write_text("older perfpost's jar")
    shutil.copy(rt.files / "ozone", home / "bin" / "ozone")
    pom = provision._pom_hash(rt)
    (home / provision.COMPLETE).write_text(
        json.dumps({"tool": "fake", "version": "1.0", "jars": 1, "pom": pom}) + "\n"
    )
    (home / f"{provision.COMPLETE}-{pom}").write_text("")
    return home


def test_an_older_perfposts_install_of_the_same_pom_is_used_as_it_is(tmp_path, maven):
    cache = tmp_path / "cache"
    rt = runtime(tmp_path / "files")
    home = older_perfpost_install(cache, rt)
    launcher = provision.install(rt, cache=str(cache))
    assert maven == []  # nothing resolved, nothing downloaded
    assert launcher == home / "bin" / "ozone"
    assert home.is_dir()
    assert not home.is_symlink()
    assert (home / "lib" / "fake-core-1.0.jar").read_text() == "older perfpost's jar"
    # It takes this perfpost's launcher, as any finished install does.
    assert (home / "bin" / "ozone").read_bytes() == (PACKAGE / "tools/freon/ozone").read_bytes()


@pytest.mark.parametrize("exchange", [True, False], ids=["renameat2", "two-renames"])
def test_an_older_perfposts_install_of_another_pom_is_kept_beside_the_new_one(
    tmp_path, maven, monkeypatch, exchange
):
    if not exchange:  # a C library or file system without RENAME_EXCHANGE
        monkeypatch.setattr(provision, "_exchange", lambda a, b: False)
    else:
        swapped: list[bool] = []
        real = provision._exchange

        def spy(a: Path, b: Path) -> bool:
            swapped.append(real(a, b))
            return swapped[-1]

        monkeypatch.setattr(provision, "_exchange", spy)
    cache = tmp_path / "cache"
    rt = runtime(tmp_path / "files")
    home = older_perfpost_install(cache, rt)
    before = provision._pom_hash(rt)
    held = open(home / "lib" / "fake-core-1.0.jar")
    (rt.files / "pom.xml").write_text("<project>second pom</project>\n")
    launcher = provision.install(rt, cache=str(cache))
    assert maven == ["<project>second pom</project>\n"]
    assert launcher == home / "bin" / "ozone"
    assert home.is_symlink()
    # The older install is not removed: it goes beside the new one, named by its own pom.
    kept = cache / f"fake-1.0-{before}"
    assert (kept / "lib" / "fake-core-1.0.jar").read_text() == "older perfpost's jar"
    assert held.read() == "older perfpost's jar"
    held.close()
    assert (home / "lib" / "fake-core-1.0.jar").read_text() == "<project>second pom</project>\n"
    if exchange:
        assert swapped == [True]  # this machine's file system swapped the names at once


def test_an_empty_directory_in_the_installs_place_makes_way(tmp_path, maven):
    """Snakemake makes the directory of the marker it waits for before the step runs."""
    cache = tmp_path / "cache"
    rt = runtime(tmp_path / "files")
    home = provision.home("fake", "1.0", str(cache))
    home.mkdir(parents=True)
    launcher = provision.install(rt, cache=str(cache))
    assert home.is_symlink()
    assert launcher.exists()
    assert provision.marker(rt, "1.0", str(cache)).exists()


def test_a_pom_changed_back_switches_to_its_install_again_without_maven(tmp_path, maven):
    cache = tmp_path / "cache"
    rt = runtime(tmp_path / "files")
    first = os.path.realpath(provision.install(rt, cache=str(cache)))
    (rt.files / "pom.xml").write_text("<project>second pom</project>\n")
    second = os.path.realpath(provision.install(rt, cache=str(cache)))
    (rt.files / "pom.xml").write_text("<project>first pom</project>\n")
    again = os.path.realpath(provision.install(rt, cache=str(cache)))
    assert len(maven) == 2
    assert again == first != second
    assert Path(second).exists()


def test_a_cell_provisions_again_what_failed_or_is_gone_and_nothing_else(
    tmp_path, maven, monkeypatch
):
    """The outcome of an install a cell needs says failed (Maven could not, in an earlier
    run), or done while the install is not in the cache the config names (removed, or the
    cache moved): the cell provisions it there and rewrites the outcome. A done outcome
    with its install in place costs no Maven call, and nor does a failure of the cell's own
    run (the rule's, or an earlier cell's): one try a run, not one a cell."""
    monkeypatch.chdir(tmp_path)  # the workflow's directory: outcomes are under results/
    rt = runtime(tmp_path / "files")
    cache = tmp_path / "cache"
    marker = str(provision.marker(rt, "1.0", str(cache)))
    outcome = Path(provision.outcome_path(marker))
    assert outcome.parent == Path("results/tools")
    outcome.parent.mkdir(parents=True)
    what = {"tool": "fake", "version": "1.0", "cache": str(cache), "run": "host:1:100"}
    provision.write_outcome(outcome, status="failed", reason="mvn: no network", **what)
    runtimes = {"fake": rt}
    said = "provisioning fake 1.0 failed: mvn: no network"

    assert provision.failed_outcomes([marker]) == said
    assert provision.failed_outcomes([marker], runtimes, "host:1:100") == said
    assert maven == []  # that run's own failure
    assert provision.failed_outcomes([marker], runtimes, "host:2:200") is None
    assert len(maven) == 1
    done = json.loads(outcome.read_text())
    assert done["status"] == "done"
    assert done["run"] == "host:2:200"
    assert Path(done["launcher"]).is_file()
    # Maven's output goes to the provisioning rule's log: <tool>-<version>-<pom>.log
    assert outcome.with_suffix(".log").exists()

    assert provision.failed_outcomes([marker], runtimes, "host:3:300") is None
    assert len(maven) == 1  # in place: nothing to do

    shutil.rmtree(cache)
    assert provision.failed_outcomes([marker], runtimes, "host:3:300") is None
    assert len(maven) == 2
    assert Path(marker).exists()

    moved = str(provision.marker(rt, "1.0", str(tmp_path / "moved")))
    assert provision.outcome_path(moved) == str(outcome)
    assert provision.failed_outcomes([moved], runtimes, "host:3:300") is None
    assert len(maven) == 3
    assert json.loads(outcome.read_text())["cache"] == str(tmp_path / "moved")

    def broken(args: list[str], log) -> None:
        maven.append("broken")
        raise provision.PerfpostError("mvn dependency:copy-dependencies failed (exit 1)")

    monkeypatch.setattr(provision, "_mvn", broken)
    shutil.rmtree(tmp_path / "moved")
    said = "provisioning fake 1.0 failed: mvn dependency:copy-dependencies failed (exit 1)"
    assert provision.failed_outcomes([moved], runtimes, "host:4:400") == said
    assert json.loads(outcome.read_text())["status"] == "failed"
    assert len(maven) == 4
    # The run's next cell takes its failure as it is; the next run tries again.
    assert provision.failed_outcomes([moved], runtimes, "host:4:400") == said
    assert len(maven) == 4
    assert provision.failed_outcomes([moved], runtimes, "host:5:500") == said
    assert len(maven) == 5


def test_an_outcome_named_after_its_cache_by_an_older_perfpost_keeps_its_name(
    tmp_path, monkeypatch
):
    """Outcomes were named after their cache (8 hex digits of sha256 of its path, by hand
    below); a result directory that has one keeps using it, so no finished cell's input
    changes when perfpost is upgraded. Another cache's, or none, gets the plain name."""
    import hashlib

    monkeypatch.chdir(tmp_path)
    cache = "/home/someone/.cache/perfpost"
    marker = f"{cache}/ozone-2.2.0/COMPLETE-0123456789abcdef"
    plain = "results/tools/ozone-2.2.0-0123456789abcdef.json"
    assert provision.outcome_path(marker) == plain
    tag = hashlib.sha256(cache.encode()).hexdigest()[:8]
    older = Path(f"results/tools/ozone-2.2.0-0123456789abcdef.{tag}.json")
    older.parent.mkdir(parents=True)
    older.write_text("{}")
    assert provision.outcome_path(marker) == str(older)
    assert provision.outcome_path(marker.replace(cache, "/elsewhere")) == plain
