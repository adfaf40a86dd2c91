"""Secret settings over two real runs: a single-node Ozone perfpost deploys, with a secret
site key and a secret `-D` in its OM's JVM options, and a cell whose tool gets a secret `-D`
setting. The daemons and the tool get the real values; no file under results/ or reports/
holds one, and `perfpost compare` of the two runs says the secret changed without either.

The tool is freon's launcher as a shim (no client JVM): it notes what it got, and what the
cluster's daemons got (their logs, which print Ozone's configuration; the OM's command
line), outside results/, then prints a real freon log."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.conftest import ROOT, env_with_venv
from tests.e2e import QUICK_DAEMONS, make_checkout, notebook_of, snakemake
from tests.test_clusters_e2e import daemons

pytestmark = pytest.mark.e2e

RUN_TIMEOUT = 1500.0  # an Ozone start is 30-90 s on two busy cores, more beside the default run

SHIM = """#!/bin/sh
case "$1" in version) echo "Ozone freon 2.2.0 (shim)"; exit 0 ;; esac
printf '%s\\n' "$@" > {seen}/tool-argv
python3 {probe} {clusters} {seen}
echo "freon started with: $*"
cat {log}
"""
# What the cluster's daemons were given, asked of them while the cell runs: the OM's own
# configuration (its /conf page) and its JVM's command line. The secrets it looks for are
# read from files, so that no command line but the OM's holds them.
PROBE = """
import glob, re, sys, urllib.request
clusters, seen = sys.argv[1:3]
for conf in glob.glob(clusters + "/*/conf/ozone-site.xml"):
    xml = open(conf).read()
    addr = re.search("<name>ozone.om.http-address</name><value>([^<]+)<", xml).group(1)
    url = "http://" + addr + "/conf?name=perfpost.bench.token"
    body = urllib.request.urlopen(url, timeout=20).read().decode()
    open(seen + "/daemon-conf", "w").write(body)
needle = open(seen + "/jvm-needle").read()
for path in glob.glob("/proc/[0-9]*/cmdline"):
    try:
        cmd = open(path, "rb").read().decode(errors="replace")
    except OSError:
        continue
    if "OzoneManager" in cmd and needle in cmd:
        open(seen + "/daemon-cmdline", "w").write(path)
"""


def config(scratch: Path, clusters: Path, shim: Path, secrets: dict[str, str]) -> dict:
    return {
        "experiments": {
            "secrets": {
                "tool": "freon",
                "cluster": "ozone",
                "params": {
                    "subcommand": "dfsg",
                    "dir": str(scratch),
                    "launcher": str(shim),
                    "generic": {"fs.s3a.secret.key": secrets["tool"]},
                    "options": {"n": 300, "path": "ofs://{cluster.om}/vol1/bucket1"},
                },
                "repeats": 1,
            }
        },
        "clusters": {
            "ozone": {
                "kind": "ozone",
                "dir": str(clusters),
                "ozone-site": {"perfpost.bench.token": secrets["site"]},
                # A role's options replace `all`'s: the OM keeps the quick ones beside its -D.
                "jvm": {
                    "all": QUICK_DAEMONS,
                    "om": f"{QUICK_DAEMONS} -Dperfpost.om.password={secrets['jvm']}",
                },
            }
        },
    }


def files_holding(root: Path, needle: str) -> list[str]:
    return [
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.is_file() and needle.encode() in p.read_bytes()
    ]


@pytest.fixture
def clusters(tmp_path):
    d = tmp_path / "clusters"
    d.mkdir()
    yield d
    left = daemons(d)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert not left, f"daemons left (now killed): {left}"


def run_side(tmp_path: Path, clusters: Path, side: str, secrets: dict[str, str]) -> Path:
    seen = tmp_path / f"seen-{side}"
    seen.mkdir()
    (seen / "jvm-needle").write_text(secrets["jvm"])
    probe, shim = tmp_path / "probe.py", tmp_path / f"ozone-{side}"
    probe.write_text(PROBE)
    log = ROOT / "tests" / "data" / "freon" / "dfsg.log"
    shim.write_text(SHIM.format(seen=seen, probe=probe, clusters=clusters, log=log))
    shim.chmod(0o755)
    cfg = config(tmp_path / f"scratch-{side}", clusters, shim, secrets)
    work = make_checkout(tmp_path / side, cfg)
    done = snakemake(work, "--cores", "2", "report", timeout=RUN_TIMEOUT)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert not daemons(clusters), "the cluster outlived its run"
    # The tool and the daemons got the real values.
    assert f"fs.s3a.secret.key={secrets['tool']}" in (seen / "tool-argv").read_text()
    assert secrets["site"] in (seen / "daemon-conf").read_text()
    assert (seen / "daemon-cmdline").exists(), "the OM was not given its -D"
    return work


def test_secret_settings_reach_the_daemons_and_the_tool_and_nothing_perfpost_keeps(
    tmp_path, clusters
):
    sides = {
        side: {k: f"{k}-{side}-{uuid.uuid4().hex}" for k in ("site", "tool", "jvm")}
        for side in ("a", "b")
    }
    works = {side: run_side(tmp_path, clusters, side, s) for side, s in sides.items()}
    values = [v for s in sides.values() for v in s.values()]
    for work in works.values():
        for where in ("results", "reports"):
            for value in values:
                assert files_holding(work / where, value) == [], (where, value)
    work = works["a"]
    post = notebook_of(work / "reports" / "secrets" / "index.md")
    assert "| ozone-site | `perfpost.bench.token` | `***` |" in post
    assert "fs.s3a.secret.key=***" in post  # the commands
    got = subprocess.run(
        [
            sys.executable,
            "-m",
            "perfpost",
            "compare",
            str(works["a"] / "results" / "secrets" / "tidy.csv"),
            str(works["b"] / "results" / "secrets" / "tidy.csv"),
        ],
        capture_output=True,
        text=True,
        env=env_with_venv(),
        timeout=120,
    )
    assert got.returncode == 0, got.stderr
    shown = got.stdout + got.stderr
    for value in values:
        assert value not in shown
    assert "`cluster.ozone.conf.perfpost.bench.token`: changed (a secret" in shown, shown
