"""The build under test as a matrix axis: Ozone 2.2.0 from Maven Central against a build made
here from it (one resource of ozone-common changed: its version and git revision), given once
as a directory and once as a tarball, each deployed on h1 and written to by freon on h2, hosts
that share nothing with this machine. perfpost stages each build, delivers it to the hosts
that run it, runs freon from the same build as the cluster, and writes one post comparing
them, each build's version block (its revision) in it.

Expected values: the revisions are read by the test from the jars themselves (zipfile), freon's
own count from its log, and the delivered copies' digests compared between the two forms of
one build (the same bytes, however given).
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import tarfile
import zipfile
from pathlib import Path

import pytest
import yaml

from tests.e2e import QUICK_DAEMONS, make_checkout, notebook_of, snakemake

pytestmark = pytest.mark.e2e

N = 20
PROPS = "ozone-version-info.properties"
REVISION = hashlib.sha1(b"perfpost's test build").hexdigest()


# The build's bin/ozone, in the manner of a distribution's (hadoop-ozone/dist's ozone and
# ozone-functions.sh): the JVM is $JAVA_HOME/bin/java, never the java on PATH, and without
# JAVA_HOME there is none; the configuration is read from OZONE_CONF_DIR (else the build's
# etc/hadoop); the launcher's log directory, OZONE_LOG_DIR (else the build's logs/), is made
# and written to. The testbed's hosts, like a stock Debian host over SSH, have java on their
# PATH and no JAVA_HOME.
DIST_LAUNCHER = r"""#!/bin/sh
OZONE_HOME=$(cd -P "$(dirname "$0")/.." && pwd -P)
if [ -z "${JAVA_HOME:-}" ]; then
  echo "ERROR: JAVA_HOME is not set and could not be found." >&2; exit 1
fi
if [ ! -x "$JAVA_HOME/bin/java" ]; then
  echo "ERROR: JAVA_HOME $JAVA_HOME does not exist." >&2; exit 1
fi
OZONE_CONF_DIR=${OZONE_CONF_DIR:-$OZONE_HOME/etc/hadoop}
OZONE_LOG_DIR=${OZONE_LOG_DIR:-$OZONE_HOME/logs}
if ! mkdir -p "$OZONE_LOG_DIR" || ! echo "$*" >> "$OZONE_LOG_DIR/ozone-launcher.log"; then
  echo "ERROR: Unable to write in $OZONE_LOG_DIR. Aborting." >&2; exit 1
fi
case "${1:-}" in
  freon) main=org.apache.hadoop.ozone.freon.Freon ;;
  vapor) main=org.apache.hadoop.ozone.freon.Vapor ;;
  version) echo "Ozone $(cat "$OZONE_HOME/VERSION") (a distribution's launcher)"; exit 0 ;;
  *) echo "Usage: ozone freon|vapor|version" >&2; exit 1 ;;
esac
shift
cp="$OZONE_CONF_DIR:$OZONE_HOME/conf:$OZONE_HOME/lib/*"
exec "$JAVA_HOME/bin/java" ${OZONE_OPTS:-} -cp "$cp" "$main" "$@"
"""


def jar_props(jar: Path) -> dict[str, str]:
    with zipfile.ZipFile(jar) as z:
        text = z.read(PROPS).decode()
    return dict(ln.split("=", 1) for ln in text.splitlines() if "=" in ln and ln[0] != "#")


def make_build(release: Path, dest: Path, fs_jar: Path) -> Path:
    """A copy of the release's install whose ozone-common reports another version and git
    revision, as a build from a patched source tree would."""
    build = dest / "ozone-2.2.0-local"
    shutil.copytree(release, build, symlinks=True, ignore=shutil.ignore_patterns("COMPLETE*"))
    (jar,) = (build / "lib").glob("ozone-common-2.2.0.jar")
    tmp = jar.with_suffix(".new")
    with zipfile.ZipFile(jar) as src, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as out:
        for item in src.infolist():
            data = src.read(item)
            if item.filename == PROPS:
                text = data.decode()
                text = re.sub(r"(?m)^version=.*$", "version=2.2.0-local", text)
                text = re.sub(r"(?m)^revision=.*$", f"revision={REVISION}", text)
                data = text.encode()
            out.writestr(item, data)
    tmp.replace(jar)
    (build / "VERSION").write_text("2.2.0-local\n")
    launcher = build / "bin" / "ozone"
    launcher.unlink()
    launcher.write_text(DIST_LAUNCHER)
    launcher.chmod(0o755)
    # Its Hadoop file system client where a distribution ships it, apart from the daemons'
    # jars (teragen loads it; it repeats Ozone's classes built against shaded libraries).
    (build / "share" / "ozone" / "lib").mkdir(parents=True)
    shutil.copy(fs_jar, build / "share" / "ozone" / "lib" / fs_jar.name)
    return build


@pytest.fixture(scope="module")
def builds_run(testbed, ozone_cache, tmp_path_factory):
    if testbed.mode != "netns":
        pytest.skip("hosts with their own filesystems need network namespaces, as root")
    from perfpost import provision
    from perfpost.tools import teragen

    cache, launcher = ozone_cache
    release = launcher.resolve().parents[1]
    made = tmp_path_factory.mktemp("builds")
    hadoop = provision.install(teragen.RUNTIME, None, str(cache), str(cache / "provision.log"))
    (fs_jar,) = (hadoop.resolve().parents[1] / "lib").glob("ozone-filesystem-hadoop3-*.jar")
    build = make_build(release, made, fs_jar)
    tarball = made / "ozone-2.2.0-local.tar.gz"
    with tarfile.open(tarball, "w:gz") as tar:
        tar.add(build, arcname=build.name)
    inventory = yaml.safe_load(Path(testbed.inventory).read_text())
    inventory["hosts"]["h2"]["ozone"] = "provisioned"  # the release's client, for its cells
    inventory["hosts"]["h2"]["yarn"] = "provisioned"  # teragen's Hadoop client, from here
    one = {"scm": "h1", "om": "h1", "datanode": "h1"}
    cluster = {
        "kind": "ozone",
        "roles": one,
        "dir": "/tmp/pp-builds",
        "buckets": ["vol1/bucket1"],
        "jvm": QUICK_DAEMONS,
    }
    cfg = {
        **inventory,
        "tools": {
            "ozone": {"version": "2.2.0", "cache": str(cache)},
            "hadoop": {"cache": str(cache)},
        },
        "clusters": {
            "rel": cluster,
            "dir": {**cluster, "build": str(build)},
            "tar": {**cluster, "build": str(tarball)},
        },
        "experiments": {
            "builds": {
                "tool": "freon",
                "cluster": "{build}",
                "hosts": ["h2"],
                "repeats": 1,
                "params": {
                    "subcommand": "ockg",
                    "dir": "/tmp/pp-builds-freon",
                    "options": {
                        "n": N,
                        "s": 1024,
                        "t": 2,
                        "v": "vol1",
                        "b": "bucket1",
                        "p": "{run}",
                    },
                },
                "axes": {"build": {"release": "rel", "local-dir": "dir", "local-tarball": "tar"}},
                "compare": [
                    {
                        "name": "local build vs release",
                        "baseline": {"build": "release"},
                        "candidate": {"build": "local-dir"},
                    }
                ],
            },
            # teragen into the build's Ozone loads that build's file system client; the JVM
            # says where each class came from (-verbose:class).
            "fs": {
                "tool": "teragen",
                "cluster": "{build}",
                "hosts": ["h2"],
                "repeats": 1,
                "params": {
                    "size": "1M",
                    "local": True,
                    "dir": "/tmp/pp-builds-teragen",
                    "output": "{cluster.fs}",
                    "java_opts": "-Xmx512m -verbose:class",
                },
                "axes": {"build": {"release": "rel", "local-tarball": "tar"}},
            },
        },
    }
    work = tmp_path_factory.mktemp("builds-run")
    make_checkout(work, cfg)
    # 699 s of it beside the rest of the suite on 2 cores: three Ozone starts on a testbed host.
    result = snakemake(work, "--cores", "3", "report", timeout=3600)
    assert result.returncode == 0, result.stderr[-5000:]
    return work, release, build, tarball


def records(work: Path, experiment: str = "builds") -> dict[str, dict]:
    out = {}
    for path in (work / "results" / experiment).glob("cells/*/*/r*/attempt-*/record.json"):
        rec = json.loads(path.read_text())
        out[rec["labels"]["build"]] = {**rec, "path": path}
    return out


def test_every_build_s_cell_ran_freon_from_that_build_on_a_host_that_got_it(builds_run):
    work, *_ = builds_run
    recs = records(work)
    assert set(recs) == {"release", "local-dir", "local-tarball"}
    for label, rec in recs.items():
        assert rec["status"] == "done", (label, rec["reason"])
        log = (rec["path"].parent / "raw" / "freon.log").read_text()
        assert f"Successful executions: {N}" in log
        (d,) = rec["delivered"]  # freon's runtime, the only install the cell names
        assert d["host"] == "h2"
        assert f"{d['path']}/bin/ozone freon ockg" in rec["command"], rec["command"]
        local = d["what"].startswith("ozone-2.2.0-local-")
        assert local == (label != "release"), d
    # The client is the cluster's own build: its launcher says which.
    release = "Ozone freon/vapor 2.2.0 (provisioned by perfpost from Maven Central)"
    local = "Ozone 2.2.0-local (a distribution's launcher)"
    assert recs["release"]["tool_version"] == release
    assert recs["local-dir"]["tool_version"] == local
    assert recs["local-tarball"]["tool_version"] == local
    # The directory and the tarball are one build: the same bytes reached h2 (the key's
    # hash is over every file's sha256), under the names of two staged builds.
    keys = {
        label: next(d["key"] for d in rec["delivered"] if "local" in d["what"])
        for label, rec in recs.items()
        if label != "release"
    }
    assert keys["local-dir"].rsplit("-", 1)[1] == keys["local-tarball"].rsplit("-", 1)[1]


def test_the_post_shows_each_build_s_version_block_and_compares_them(builds_run):
    work, release, build, tarball = builds_run
    post = notebook_of(work / "reports" / "builds" / "index.md")
    released = jar_props(next((release / "lib").glob("ozone-common-2.2.0.jar")))["revision"]
    assert re.fullmatch(r"[0-9a-f]{40}", released)
    assert released != REVISION
    sections = post.split("### Ozone `")
    by_name = {s.split("`", 1)[0]: s for s in sections[1:]}
    assert set(by_name) == {"rel", "dir", "tar"}
    assert released in by_name["rel"]
    for name, source in (("dir", build), ("tar", tarball)):
        assert REVISION in by_name[name], by_name[name]
        assert "2.2.0-local" in by_name[name]
        assert f"- Build: `{source}`" in by_name[name]
    assert "Build:" not in by_name["rel"]
    assert "local build vs release" in post
    assert re.search(r"local-dir.*release|release.*local-dir", post)


def test_teragen_loads_the_file_system_client_of_the_build_its_ozone_runs(builds_run):
    """The class that serves ofs:// came, by the JVM's own account (-verbose:class), from the
    cluster's build as delivered to h2, and from the release's Hadoop client for the release."""
    work, *_ = builds_run
    recs = records(work, "fs")
    assert set(recs) == {"release", "local-tarball"}
    for label, rec in recs.items():
        assert rec["status"] == "done", (label, rec["reason"])
        log = (rec["path"].parent / "raw" / "teragen.log").read_text()
        (loaded,) = re.findall(
            r"\[class,load\] org\.apache\.hadoop\.fs\.ozone\.RootedOzoneFileSystem source: (\S+)",
            log,
        )
        build = next((d for d in rec.get("delivered", []) if "local" in d["what"]), None)
        if label == "release":
            assert build is None
            assert "/hadoop-3.4.2" in loaded, loaded
        else:
            assert build is not None, rec.get("delivered")
            where = f"file:{build['path']}/share/ozone/lib/ozone-filesystem-hadoop3-"
            assert loaded.startswith(where), loaded


def test_a_distribution_s_launcher_got_the_jdk_its_configuration_and_a_log_directory(
    builds_run, testbed
):
    """h2 has java on its PATH and no JAVA_HOME, as a stock host reached over SSH: the build's
    launcher, which refuses to start without one, ran freon with the JDK that java belongs to
    (read here over plain ssh, not through perfpost), the cell's client configuration, and
    a log directory of the cell's own; the build on h2 stays as it was delivered."""
    import subprocess

    work, *_ = builds_run
    h = testbed.host("h2")
    ssh = [
        "ssh", "-i", testbed.key, "-p", str(h.port), "-o", "BatchMode=yes",
        "-o", f"UserKnownHostsFile={testbed.known_hosts}", f"{testbed.user}@{h.address}",
    ]  # fmt: skip
    said = subprocess.run(
        [*ssh, 'echo "JAVA_HOME=${JAVA_HOME-unset}"; readlink -f "$(command -v java)"'],
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout.split()  # fmt: skip
    assert said[0] == "JAVA_HOME=unset", said
    assert said[1].endswith("/bin/java"), said
    jdk = said[1][: -len("/bin/java")]
    recs = records(work)
    for label, rec in recs.items():
        env = rec["launcher_env"]
        assert env["JAVA_HOME"] == jdk, (label, env)
        assert env["OZONE_CONF_DIR"] == env["HADOOP_CONF_DIR"], env
        assert env["OZONE_LOG_DIR"].startswith(env["OZONE_CONF_DIR"].rsplit("/", 1)[0]), env
    for label in ("local-dir", "local-tarball"):
        (d,) = recs[label]["delivered"]
        listed = subprocess.run(
            [*ssh, f"ls -A {d['path']}"], capture_output=True, text=True, timeout=60, check=True
        ).stdout.split()
        assert "logs" not in listed, listed  # its log went to the cell's own directory
        assert "bin" in listed, listed
