"""fio's own example job files through the whole workflow, for real: config/examples/
fio-jobfiles.yaml (five of fio's examples from Debian's fio-examples package, and a file of
this checkout with ${VAR}s), one run per cell. Every number of the tidy table is checked
against fio's JSON report kept with the run, read here with json and summed by hand."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tests.conftest import ROOT
from tests.e2e import make_checkout, notebook_of, snakemake

pytestmark = pytest.mark.e2e

EXAMPLES = Path("/usr/share/doc/fio/examples")
CONFIG = ROOT / "config" / "examples" / "fio-jobfiles.yaml"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    if not shutil.which("fio") or not (EXAMPLES / "ssd-test.fio").is_file():
        pytest.fail("fio and fio-examples are not installed: run scripts/setup --test")
    work = tmp_path_factory.mktemp("fiojobs")
    config = yaml.safe_load(CONFIG.read_text())
    for exp in config["experiments"].values():
        exp["params"]["dir"] = str(work / "target")
        exp["repeats"] = 1
    config["experiments"]["fio-refused"] = {
        "tool": "fio",
        "params": {
            "dir": str(work / "target"),
            "jobfile": str(EXAMPLES / "aio-read.fio"),
            "size": "1m",
            "sections": {"file2": {"iodepth": "deep"}},
        },
        "repeats": 1,
    }
    make_checkout(work, config)
    own = "config/examples/fio/reader-writer.fio"
    (work / own).parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / own, work / own)
    result = snakemake(work, "--cores", "2", "report", timeout=1200)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return work


def records(work: Path, experiment: str) -> list[dict]:
    paths = sorted((work / "results" / experiment / "cells").glob("*/*/r*/attempt-*/record.json"))
    return [{**json.loads(p.read_text()), "path": p} for p in paths]


def _by_hand(report: dict) -> dict[str, float]:
    """The tidy numbers perfpost should have, from fio's report: totals summed over every
    job fio reported, each job's own, and each reporting group's (fio's own numbers where
    the group is one entry, else its entries summed)."""
    jobs = report["jobs"]
    dirs = ("read", "write", "trim")
    want = {
        "jobs": len(jobs),
        "iops": sum(j[d]["iops"] for j in jobs for d in dirs),
        "throughput": sum(j[d]["bw_bytes"] for j in jobs for d in dirs),
        "bytes": sum(j[d]["io_bytes"] for j in jobs for d in dirs),
    }
    if len(jobs) == 1:
        return want
    seen: dict[str, int] = {}
    groups: dict[int, list[dict]] = {}
    for j in jobs:
        name = j["jobname"].replace(".", "_")
        seen[name] = seen.get(name, 0) + 1
        p = f"job.{name}.{seen[name]}."
        for d in dirs:
            if j[d]["total_ios"] or j[d]["io_bytes"]:
                want[f"{p}{d}.iops"] = j[d]["iops"]
                want[f"{p}{d}.bytes"] = j[d]["io_bytes"]
                want[f"{p}{d}.runtime"] = j[d]["runtime"] / 1000
                p99 = j[d]["clat_ns"]["percentile"]["99.000000"]
                want[f"{p}{d}.clat_p99"] = p99 / 1e9
        want[f"{p}iops"] = sum(j[d]["iops"] for d in dirs)
        groups.setdefault(j["groupid"], []).append(j)
    if len(groups) > 1:
        for members in groups.values():
            p = f"group.{members[0]['jobname'].replace('.', '_')}."
            want[f"{p}iops"] = sum(j[d]["iops"] for j in members for d in dirs)
            want[f"{p}throughput"] = sum(j[d]["bw_bytes"] for j in members for d in dirs)
    return want


@pytest.mark.parametrize(
    "experiment",
    ["fio-ssd-test", "fio-tiobench", "fio-aio-read", "fio-steadystate", "fio-rand-rw"],
)
def test_each_number_of_fios_own_example_is_the_one_in_its_report(run, experiment):
    tidy = pd.read_csv(run / "results" / experiment / "tidy.csv")
    got_records = records(run, experiment)
    assert got_records
    for r in got_records:
        assert r["status"] == "done", r["reason"]
        raw = r["path"].parent / "raw"
        report = json.loads((raw / "fio.log").read_text())
        rows = tidy[(tidy["cell"] == r["cell"]) & (tidy["repeat"] == r["repeat"])]
        value = dict(zip(rows["metric"], rows["value"], strict=True))
        want = _by_hand(report)
        assert len(want) > 3
        for metric, expected in want.items():
            assert value[metric] == pytest.approx(expected, rel=1e-9), (r["cell"], metric)
        # The file that ran is kept, each job's files went into the run's scratch.
        (kept,) = r["files"]
        text = (raw / kept).read_text()
        # Every line of the file as fio ships it, in its order, its own directory= lines
        # commented out (perfpost's replaces them), perfpost's lines between.
        lines = iter(text.replace("; replaced by perfpost: ", "").splitlines())
        assert all(any(x == y for y in lines) for x in (EXAMPLES / kept).read_text().splitlines())
        original = (EXAMPLES / kept).read_text().splitlines()
        sections = [ln for ln in original if ln.startswith("[") and ln.strip() != "[global]"]
        assert text.count(f"\ndirectory={r['workdir']}\n") == len(sections)


def test_the_overrides_and_the_axis_reached_fio(run):
    for r in records(run, "fio-ssd-test"):
        report = json.loads((r["path"].parent / "raw" / "fio.log").read_text())
        depth = r["cell"].rpartition("=")[2]
        assert [j["job options"]["iodepth"] for j in report["jobs"]] == [depth] * 4
        for j in report["jobs"]:
            assert j["job options"]["size"] == "16m"
            d = "read" if "read" in j["jobname"] else "write"
            assert j[d]["io_bytes"] <= 16 << 20


def test_the_variables_reached_fio_through_its_environment(run):
    got = records(run, "fio-reader-writer")
    assert sorted(r["cell"] for r in got) == ["read_bs=4k", "read_bs=64k"]
    for r in got:
        assert r["status"] == "done", r["reason"]
        report = json.loads((r["path"].parent / "raw" / "fio.log").read_text())
        reader = next(j for j in report["jobs"] if j["jobname"] == "reader")
        bs = {"4k": 4096, "64k": 65536}[r["cell"].partition("=")[2]]
        # Every read was one block of the axis's size: fio's bytes over its I/O count.
        assert reader["read"]["io_bytes"] == bs * reader["read"]["total_ios"]
        # The writer kept its file's own 1 MiB blocks.
        writer = next(j for j in report["jobs"] if j["jobname"] == "writer")
        assert writer["write"]["io_bytes"] == (1 << 20) * writer["write"]["total_ios"] > 0
        env, _, rest = r["command"].partition(" fio ")
        assert sorted(env.split()) == sorted(["env", "SIZE=16m", "RUNTIME=2", f"BS={bs // 1024}k"])
        assert rest.startswith("--output-format=json ")


def test_fios_steady_state_verdict_is_read_for_each_group(run):
    tidy = pd.read_csv(run / "results" / "fio-steadystate" / "tidy.csv")
    for r in records(run, "fio-steadystate"):
        report = json.loads((r["path"].parent / "raw" / "fio.log").read_text())
        rows = tidy[tidy["cell"] == r["cell"]]
        value = dict(zip(rows["metric"], rows["value"], strict=True))
        for k, j in enumerate(report["jobs"]):
            p = f"job.{j['jobname']}.1."
            ss = j["steadystate"]
            assert value[f"{p}steady.attained"] == (1 if ss["attained"] else 0)
            assert value[f"{p}steady.duration"] == ss["duration"] == 2
            if ss["attained"]:
                # When fio ended it: its runtime (ms; job_runtime sums a group's clones).
                ran = max(j[d]["runtime"] for d in ("read", "write", "trim"))
                assert value[f"{p}steady.at"] == ran / 1000
                assert ran <= 4000  # within the runtime the config gave
            else:
                assert f"{p}steady.at" not in value
            assert k == j["groupid"]


def test_a_file_fio_refuses_fails_its_cell_before_any_host_with_fios_message(run):
    (r,) = records(run, "fio-refused")
    assert r["status"] == "failed"
    assert r["reason"].startswith("fio refuses the job file aio-read.fio (fio --parse-only here)")
    assert "fio: failed parsing iodepth=deep" in r["reason"]
    assert "command" not in r or not r["command"]  # nothing ran


def test_the_posts_show_the_file_as_it_ran_and_are_by_group_or_job(run):
    post = notebook_of(run / "reports" / "fio-ssd-test" / "index.md")
    assert 'cat > "$WORK/ssd-test.fio" <<EOF' in post
    assert "directory=$WORK" in post
    assert "by group (`plot: {by: group}`)" in post
    data = pd.read_csv(run / "reports" / "fio-ssd-test" / "data.csv")
    assert set(data["group"]) == {"seq-read", "rand-read", "seq-write", "rand-write"}
    figures = json.loads(
        (run / "reports" / "fio-ssd-test" / "figures" / "figures.json").read_text()
    )
    assert any(f.get("metric") == "iops" for f in figures)
    post = notebook_of(run / "reports" / "fio-reader-writer" / "index.md")
    assert "`${BS}` from the `read_bs` axis" in post
    assert r"size=\${SIZE}" in post  # escaped in the here-document, as fio reads it
