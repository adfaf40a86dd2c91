"""Any program as the tool, for real: config/examples/command.yaml (a shell loop that prints
its own rate; strace -f -c around dd) through the workflow, and a declared metric its command
never prints. Expected values are the tools' own: the rate the loop printed and 200 files over
the time it printed, strace's own table read column by column here."""

from __future__ import annotations

import re
import shutil

import pandas as pd
import pytest
import yaml

from tests.conftest import ROOT
from tests.e2e import make_checkout, notebook_of, records, snakemake

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    if not shutil.which("strace"):
        pytest.fail("strace is not installed: run scripts/setup --test")
    work = tmp_path_factory.mktemp("command")
    target = work / "target"
    config = yaml.safe_load((ROOT / "config" / "examples" / "command.yaml").read_text())
    for exp in config["experiments"].values():
        exp["params"]["dir"] = str(target)
    config["experiments"]["silent"] = {
        "tool": "command",
        "params": {
            "dir": str(target),
            "run": "echo starting; echo 'done in 3 s'",
            "metrics": {"ops": {"regex": r"(?P<value>\d+) ops/s", "unit": "1/s"}},
        },
        "repeats": 1,
    }
    make_checkout(work, config)
    result = snakemake(work, "--cores", "2", "report", timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return work


def values(work, experiment: str, rec: dict) -> dict[str, float]:
    tidy = pd.read_csv(work / "results" / experiment / "tidy.csv")
    rows = tidy[(tidy["cell"] == rec["cell"]) & (tidy["repeat"] == rec["repeat"])]
    return dict(zip(rows["metric"], rows["value"], strict=True))


def test_the_loops_rate_is_the_one_it_printed(run):
    got = records(run, "small-files")
    assert len(got) == 10
    for r in got:
        assert r["status"] == "done", r["reason"]
        said = (r["path"].parent / "raw" / "command.log").read_text().split()
        # "created 200 files in T s: R files/s"
        t, rate = float(said[said.index("in") + 1]), float(said[said.index("files/s") - 1])
        v = values(run, "small-files", r)
        assert v["files_per_s"] == rate
        assert v["loop_time"] == t
        # The loop printed its rate to 0.1 (at most 0.05 off 200 / its time) and its time to
        # a microsecond (at most 5e-7 s off, which moves 200 / t by up to 200 * 5e-7 / t^2:
        # 0.004 at 1,280 files/s, where a bound of 0.051 alone failed once).
        assert v["files_per_s"] == pytest.approx(200 / t, abs=0.05 + 200 * 5e-7 / t**2 + 1e-9)
        assert 0 < v["loop_time"] < v["wall_time"]


def strace_calls(text: str, syscall: str) -> int:
    for line in text.splitlines():
        cols = line.split()
        if cols and cols[-1] == syscall and cols[0][0].isdigit():
            return int(cols[3])
    return 0  # strace lists only the calls made


def test_straces_counts_are_its_own_table(run):
    got = records(run, "strace-dd")
    assert len(got) == 10
    for r in got:
        assert r["status"] == "done", r["reason"]
        assert r["tool_version"].startswith("strace -- version")
        (kept,) = (r["path"].parent / "raw").glob("output-*strace.txt")
        table = kept.read_text()
        v = values(run, "strace-dd", r)
        assert v["fsync_calls"] == strace_calls(table, "fsync")
        assert v["write_calls"] == strace_calls(table, "write")
        # dd's own count: 64 blocks written, whichever flag.
        assert v["write_calls"] >= 64
        assert v["fsync_calls"] == (1 if "fsync-at-end" in r["cell"] else 0)


def test_a_metric_its_command_never_printed_fails_the_run_with_the_pattern(run):
    (r,) = records(run, "silent")
    assert r["status"] == "failed"
    assert "metric ops:" in r["reason"]
    assert r"(?P<value>\d+) ops/s" in r["reason"]
    assert "done in 3 s" in r["reason"]  # the output's end, as the command printed it


def test_the_post_shows_the_script_as_written_and_where_each_number_came_from(run):
    post = (run / "reports" / "small-files" / "index.md").read_text()
    listing = re.search(r"```sh\n(.*?)```", post, re.S)[1]
    assert "for i in $(seq 1 200); do\n" in listing
    assert "sh -c" not in listing
    assert "# flag=unsynced: the same with conv=notrunc instead of oflag=dsync" in listing
    # The comparison answered in words, a claim or not (a scratch dir on tmpfs makes the
    # sync per file nothing): "Unsynced: ... faster" or "Unsynced and synced did not differ".
    assert re.search(r"^- Unsynced(: | and synced )", post, re.M), post
    notebook = notebook_of(run / "reports" / "small-files" / "index.md")
    assert "`files_per_s` (1/s) by the regular expression" in notebook
    strace_post = (run / "reports" / "strace-dd" / "index.md").read_text()
    assert "| `flag=fsync-at-end` | 5 | 1 | 1 .. 1 |" in strace_post
    assert "| `flag=dsync-each` | 5 | 0 | 0 .. 0 |" in strace_post
    # The scratch directories are gone, the loop's files with them.
    assert list((run / "target").iterdir()) == []
