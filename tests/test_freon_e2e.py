"""freon and vapor for real: provisioned from Maven Central, run by the workflow on localhost
and on a real sshd host, into the table and the post."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from perfpost import provision
from perfpost.analysis import steady
from tests.e2e import image_links, make_checkout, notebook_of, sections, snakemake

pytestmark = pytest.mark.e2e

DATANODE = {
    "hdds.datanode.dir": "{work}/data",
    "ozone.metadata.dirs": "{work}/meta",
    "hdds.datanode.container.schema.v3.enabled": "false",
    "hdds.datanode.volume.min.free.space": "1MB",
    "hdds.datanode.volume.min.free.space.percent": "0",
    "hdds.datanode.volume.min.free.space.hard.limit.percent": "0",
}


def test_provisioning_from_an_empty_cache_gives_a_working_freon(ozone_cache):
    cache, launcher = ozone_cache
    home = provision.home("ozone", "2.2.0", str(cache))
    assert json.loads((home / provision.COMPLETE).read_text())["jars"] > 150
    assert any(p.name.startswith("ozone-freon-2.2.0") for p in (home / "lib").iterdir())
    assert any(p.name.startswith("ozone-vapor-2.2.0") for p in (home / "lib").iterdir())
    help_ = subprocess.run(
        [str(launcher), "freon", "--help"], capture_output=True, text=True, timeout=120
    )
    assert help_.returncode == 0, help_.stderr[-2000:]
    assert "dfsg" in help_.stdout + help_.stderr
    # The provisioning log says what was fetched, for a person: no terminal escapes, and
    # the count of jars that are in lib/.
    said = (cache / "provision.log").read_text()
    assert "\x1b" not in said
    jars = len(list((home / "lib").glob("*.jar")))
    assert re.search(
        rf"^ozone 2\.2\.0: {jars} jars resolved by Maven into \S+ in \d+ s$", said, re.M
    )


def test_a_second_provisioning_reuses_the_cache_without_network_or_maven(ozone_cache):
    cache, launcher = ozone_cache
    argv = [sys.executable, "-m", "perfpost", "provision", "ozone", "--cache", str(cache)]
    if os.geteuid() == 0 and shutil.which("unshare"):
        # A network namespace with no network at all.
        argv = [shutil.which("unshare"), "--net", *argv]
    env = {**os.environ, "PATH": "/nonexistent"}  # and no mvn to call
    result = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(launcher)


@pytest.fixture(scope="module")
def freon_run(ozone_cache, testbed, tmp_path_factory, host_dir):
    cache, _ = ozone_cache
    work = tmp_path_factory.mktemp("freon")
    inventory = yaml.safe_load(Path(testbed.inventory).read_text())
    inventory["hosts"] = {"h1": {**inventory["hosts"]["h1"], "ozone": "provisioned"}}
    cfg = {
        **inventory,
        "tools": {"ozone": {"version": "2.2.0", "cache": str(cache)}},
        "experiments": {
            "cmdw": {
                "tool": "freon",
                "hosts": ["localhost", "h1"],
                "repeats": 1,
                "after": ["sync"],
                "params": {
                    "program": "vapor",
                    "subcommand": "cmdw",
                    "dir": str(host_dir),
                    "generic": DATANODE,
                    "options": {"n": 3000, "s": 1024, "t": 2, "l": "{layout}"},
                },
                "axes": {"layout": ["FILE_PER_CHUNK", "FILE_PER_BLOCK"]},
            },
            "dfsg": {
                "tool": "freon",
                "hosts": ["localhost", "h1"],
                "repeats": 1,
                "params": {
                    "subcommand": "dfsg",
                    "dir": str(host_dir),
                    "env": {"HADOOP_USER_NAME": "perfpost"},
                    "options": {"path": "file://{work}/fs", "n": 100, "s": 4096, "t": 2},
                },
            },
        },
    }
    make_checkout(work, cfg)
    result = snakemake(work, "--cores", "6", "report", timeout=1800)
    return work, result


def records(work: Path, exp: str) -> list[dict]:
    return [
        json.loads(p.read_text())
        for p in (work / "results" / exp).glob("cells/*/*/r*/attempt-*/record.json")
    ]


def test_cmdw_and_dfsg_run_on_localhost_and_a_remote_host(freon_run):
    work, result = freon_run
    assert result.returncode == 0, result.stderr[-4000:]
    for exp, n in (("cmdw", 2 * 2), ("dfsg", 2)):
        recs = records(work, exp)
        assert len(recs) == n
        assert {r["status"] for r in recs} == {"done"}, [r["reason"] for r in recs]
        assert {r["host"] for r in recs} == {"localhost", "h1"}
        for r in recs:
            assert r["tool_version"].startswith("Ozone freon/vapor 2.2.0")
            m = {x["name"]: x["value"] for x in r["metrics"]}
            assert m["successful_executions"] == (3000 if exp == "cmdw" else 100)
            if "rate_source_progress_window" in m:
                # A slow run printed progress lines: its rate is over the measured phase
                # they bound, inside freon's own start-to-summary time.
                assert m["rate"] == pytest.approx(m["rate_operations"] / m["rate_time"])
                assert m["rate_operations"] <= m["operations"]
                assert m["rate_time"] <= m["elapsed"]
            else:
                assert m["rate"] == pytest.approx(m["operations"] / m["elapsed"])
            assert m["elapsed"] <= m["wall_time"]  # freon's own clock excludes JVM start
    dfsg = records(work, "dfsg")[0]
    assert "env HADOOP_USER_NAME=perfpost" in dfsg["command"]


def test_freon_metrics_series_and_post(freon_run):
    work, _ = freon_run
    tidy = pd.read_csv(work / "results" / "cmdw" / "tidy.csv")
    done = tidy[tidy["status"] == "done"]
    assert set(done["host"]) == {"localhost", "h1"}
    assert {
        "chunk-write.mean",
        "chunk-write.p99",
        "chunk-write.mean_rate",
        "rate",
        "rate_adjusted",
        "total_execution_time",
        "sync_time",
    } <= set(done["metric"])
    assert set(done[done["metric"] == "chunk-write.mean"]["unit"]) == {"s"}
    assert set(done[done["metric"] == "rate"]["unit"]) == {"1/s"}
    series = pd.read_csv(work / "results" / "cmdw" / "series.csv")
    assert set(series["host"]) == {"localhost", "h1"}
    assert (series.groupby(["cell", "host"])["completed"].max() == 3000).all()
    # These runs take seconds: far fewer than the 50 rates a steady-state verdict needs.
    found = steady.read(work / "results" / "cmdw" / "steady.csv")
    runs = series[["cell", "host", "repeat"]].drop_duplicates()
    assert len(found) == len(runs)
    assert set(found["verdict"]) == {steady.SHORT}
    assert (found["samples"] < steady.MIN_SAMPLES).all()
    post = notebook_of(work / "reports" / "cmdw" / "index.md")
    assert "Summary of the runs" in sections(post)
    assert "Every run:" in post
    assert post.count("| localhost | 1 |") >= 2
    assert "rate_over_time.png" in post
    assert f"0 of {len(runs)} runs with a progress series reached one" in post
    assert (work / "reports" / "cmdw" / "steady.csv").is_file()  # the bundle's own copy
    for link in image_links(post):
        assert (work / "reports" / "cmdw" / link).is_file()
    assert "-D hdds.datanode.dir=$WORK/data" in post  # {work} became the run's directory


def test_the_tool_cache_at_another_path_runs_nothing_again(freon_run, ozone_cache, tmp_path):
    """The finished run with its tool cache named by another path, as a cache moved, or
    named by $PERFPOST_CACHE or another user's would be (here a symlink to it, so nothing is
    copied): no job runs, on localhost or on the remote host, and every record and log
    stays byte for byte."""
    work, _ = freon_run
    cache, _ = ozone_cache
    moved = tmp_path / "moved-cache"
    moved.symlink_to(cache)
    config = work / "config" / "config.yaml"
    kept = config.read_text()
    cfg = yaml.safe_load(kept)
    cfg["tools"]["ozone"]["cache"] = str(moved)
    config.write_text(yaml.safe_dump(cfg, sort_keys=False))
    found = sorted((work / "results").glob("*/cells/*/*/r*/attempt-*/*.*"))
    before = {p: p.read_bytes() for p in found}
    assert len([p for p in found if p.name == "record.json"]) == 6  # cmdw 2 x 2 hosts, dfsg 2
    try:
        dry = snakemake(work, "-n", "--cores", "2", "report")
        assert dry.returncode == 0, dry.stdout[-3000:] + dry.stderr[-3000:]
        assert "Nothing to be done" in dry.stdout + dry.stderr, dry.stdout[-3000:]
        again = snakemake(work, "--cores", "2", "report")
        assert again.returncode == 0, again.stderr[-3000:]
    finally:
        config.write_text(kept)
    assert sorted((work / "results").glob("*/cells/*/*/r*/attempt-*/*.*")) == found
    assert {p: p.read_bytes() for p in found} == before
