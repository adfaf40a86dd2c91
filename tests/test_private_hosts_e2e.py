"""Three testbed hosts that share nothing with this machine but OS packages (their own /tmp,
/var/tmp, /opt, home; the checkout hidden): an Ozone on h1, freon on h2 against it, fio on
h3, through the workflow from a new checkout. perfpost delivers the Ozone runtime to the
hosts that lack it; a second checkout's run on the same hosts ships nothing.

Expected values: freon's own count in its log, fio's own JSON, what the hosts hold asked
over SSH (``ls``), the processes in each host's namespace.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.e2e import QUICK_DAEMONS, make_checkout, notebook_of, snakemake

pytestmark = pytest.mark.e2e

N = 50  # keys freon writes


def config(testbed, cache: Path) -> dict:
    inventory = yaml.safe_load(Path(testbed.inventory).read_text())
    inventory["hosts"]["h2"]["ozone"] = "provisioned"
    return {
        **inventory,
        "tools": {"ozone": {"version": "2.2.0", "cache": str(cache)}},
        "clusters": {
            "one": {
                "kind": "ozone",
                "roles": {"scm": "h1", "om": "h1", "datanode": "h1"},
                "dir": "/tmp/perfpost-private-cluster",
                "buckets": ["vol1/bucket1"],
                "jvm": QUICK_DAEMONS,
            }
        },
        "experiments": {
            "keys": {
                "tool": "freon",
                "cluster": "one",
                "hosts": ["h2"],
                "repeats": 1,
                # A flight recording of freon on h2 and of the datanode on h1, for the run.
                "profile": {"daemons": ["datanode"]},
                "params": {
                    "subcommand": "ockg",
                    "dir": "/tmp/perfpost-private-freon",
                    "options": {
                        "n": N,
                        "s": 1024,
                        "t": 2,
                        "v": "{cluster.volume}",
                        "b": "{cluster.bucket}",
                        "p": "{run}",
                    },
                },
            },
            "disk": {
                "tool": "fio",
                "hosts": ["h3"],
                "repeats": 1,
                "params": {
                    "dir": "/var/tmp/perfpost-private-fio",
                    "name": "w",
                    "rw": "write",
                    "bs": "64k",
                    "size": "8M",
                },
            },
        },
    }


def cache_of(work: Path) -> str:
    """The tools cache the config names (this machine's)."""
    return yaml.safe_load((work / "config" / "config.yaml").read_text())["tools"]["ozone"]["cache"]


def record(work: Path, experiment: str) -> dict:
    (path,) = sorted((work / "results" / experiment).glob("cells/*/*/r*/attempt-*/record.json"))
    return json.loads(path.read_text())


def java_on(testbed) -> dict[str, list[str]]:
    out = {}
    for h in testbed.hosts:
        pids = subprocess.run(
            ["ip", "netns", "pids", h.netns], capture_output=True, text=True, check=True
        ).stdout.split()
        cmds = []
        for p in pids:
            try:
                cmd = Path(f"/proc/{p}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if "java" in cmd:
                cmds.append(cmd)
        out[h.name] = cmds
    return out


@pytest.fixture(scope="module")
def testbed(tmp_path_factory):
    """Three hosts of this module's own, their disks empty, as new machines' are (the
    session's testbed hosts have what earlier tests delivered)."""
    import os

    from tests import testbed as tb

    if os.geteuid() != 0:
        pytest.skip("hosts with their own filesystems need network namespaces, as root")
    bed = tb.start(3, tmp_path_factory.mktemp("private-bed"), quick_java=True)
    yield bed
    bed.stop()


@pytest.fixture(scope="module")
def runs(testbed, ozone_cache, tmp_path_factory):
    cache, _ = ozone_cache
    cfg = config(testbed, cache)
    out = []
    for name in ("first", "second"):
        work = tmp_path_factory.mktemp(f"private-{name}")
        make_checkout(work, cfg)
        result = snakemake(work, "--cores", "3", "report", timeout=1800)
        assert result.returncode == 0, result.stderr[-5000:]
        out.append(work)
    return out


def test_an_ozone_on_h1_freon_on_h2_and_fio_on_h3_all_ran(runs, testbed):
    first, _ = runs
    keys = record(first, "keys")
    assert keys["status"] == "done", keys["reason"]
    log = Path(first / "results" / "keys").glob("cells/*/*/r*/attempt-*/raw/freon.log")
    text = next(iter(log)).read_text()
    assert f"Successful executions: {N}" in text
    disk = record(first, "disk")
    assert disk["status"] == "done", disk["reason"]
    (fio_log,) = (first / "results" / "disk").glob("cells/*/*/r*/attempt-*/raw/fio.log")
    report = json.loads(fio_log.read_text())
    assert report["jobs"][0]["write"]["io_bytes"] == 8 << 20  # fio's own count: size 8M
    # freon ran from h2's own copy of the runtime, under its login user's home there.
    (delivered,) = keys["delivered"]
    assert delivered["host"] == "h2"
    assert "/.cache/perfpost/ozone-2.2.0" in delivered["path"]
    assert delivered["path"] + "/bin/ozone" in keys["command"], keys["command"]
    assert str(cache_of(first)) not in keys["command"]
    # No daemon is left on any host.
    assert java_on(testbed) == {h.name: [] for h in testbed.hosts}


def test_the_runtime_reached_only_the_hosts_that_run_it_and_the_post_says_so(runs, testbed):
    first, _ = runs
    from tests.test_clusters_remote import on_host

    homes = {}
    for state in (first / "results" / "clusters").glob("*/start-*/state.json"):
        homes = json.loads(state.read_text())["deployment"]["home"]
    assert set(homes) == {"h1"}
    listing = {
        h: on_host(testbed, h, "ls -A ~/.cache/perfpost 2>/dev/null; true").split()
        for h in ("h1", "h2", "h3")
    }
    assert any(x.startswith("ozone-2.2.0") for x in listing["h1"]), listing
    assert any(x.startswith("ozone-2.2.0") for x in listing["h2"]), listing
    assert listing["h3"] == [], listing  # fio needs nothing but the OS's package
    post = notebook_of(first / "reports" / "keys" / "index.md")
    assert re.search(r"Delivered by perfpost over SSH.*`ozone-2\.2\.0-[^`]+` to h2 \(", post), post


def test_a_second_run_on_the_same_hosts_ships_nothing(runs):
    _, second = runs
    keys = record(second, "keys")
    assert keys["status"] == "done", keys["reason"]
    assert [d["files"] for d in keys["delivered"]] == [0] * len(keys["delivered"])
    for state in (second / "results" / "clusters").glob("*/start-*/state.json"):
        assert json.loads(state.read_text())["deployment"]["delivered"] == []
    post = notebook_of(second / "reports" / "keys" / "index.md")
    assert "nothing this time; already there: `ozone-2.2.0-" in post


def test_flight_recordings_of_the_client_and_the_datanode_came_back(runs):
    """JFR in freon's JVM on h2 and, through h1's jcmd, in the datanode for the measured step:
    each recording is a JFR file (its format's magic, "FLR\\0") kept with the record, with
    execution samples; the post lists the hottest methods."""
    first, _ = runs
    (path,) = (first / "results" / "keys").glob("cells/*/*/r*/attempt-*/record.json")
    keys = json.loads(path.read_text())
    assert set(keys["profile"]) == {"client", "one:datanode"}, keys.get("warnings")
    for who, got in keys["profile"].items():
        assert "error" not in got, got
        assert (path.parent / got["raw"]).read_bytes()[:4] == b"FLR\0", who
        assert got["samples"] > 0, who
        assert got["top"], got
        assert all(n > 0 for _, n in got["top"]), got
    post = notebook_of(first / "reports" / "keys" / "index.md")
    assert "### Where the JVMs' CPU went" in post
    assert ", one:datanode (" in post
    assert ", client (" in post
