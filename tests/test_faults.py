"""The fault suite: each fault injected into real runs, and what perfpost kept afterwards.

Every test adds a row to the table printed at the end of the session (conftest's
``FAULTS``): the fault, how it was injected, and the outcome that was checked.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.conftest import FAULTS, ROOT, env_with_venv, put_on_host, snakemake_bin
from tests.e2e import interruptible, make_checkout, notebook_of, planned_records, snakemake
from tests.mistakes import GOOD, MISTAKES, config_text

pytestmark = pytest.mark.e2e

PERFPOST = str(Path(snakemake_bin()).with_name("perfpost"))


def records(work: Path) -> dict[str, dict]:
    return {
        str(p.relative_to(work)): json.loads(p.read_text())
        for p in sorted(work.glob("results/*/cells/*/*/r*/attempt-*/record.json"))
    }


def digests(work: Path) -> dict[str, str]:
    return {
        str(p.relative_to(work)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(work.glob("results/*/cells/*/*/r*/attempt-*/**/*"))
        if p.is_file()
    }


def cells(work: Path) -> list[dict]:
    got = subprocess.run(
        [PERFPOST, "cells"], cwd=work, capture_output=True, text=True, env=env_with_venv()
    )
    assert got.returncode == 0, got.stderr
    import csv
    import io

    return list(csv.DictReader(io.StringIO(got.stdout)))


def tool_processes(marker: str) -> list[str]:
    out = subprocess.run(["pgrep", "-af", marker], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if "pgrep" not in line]


def wait_for(check, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.1)
    pytest.fail(f"{what} did not happen within {timeout:g} s")


@pytest.fixture
def scratch() -> Iterator[str]:
    """A directory for cells' scratch directories; the cells remove their own, the test this."""
    path = f"/tmp/perfpost-fault-{uuid.uuid4().hex[:8]}"
    yield path
    shutil.rmtree(path, ignore_errors=True)


def slow_dd(scratch: str, counts: list[int], repeats: int = 2) -> dict:
    """dd cells of ~1-3 s each on localhost: long enough to be caught mid-run."""
    return {
        "tool": "dd",
        "hosts": ["localhost"],
        "repeats": repeats,
        "axes": {"count": counts},
        "params": {"dir": scratch, "bs": "4k", "oflag": ["dsync"]},
    }


def start(work: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [snakemake_bin(), "--cores", "2", *args, "report"],
        cwd=work,
        env=env_with_venv(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
        preexec_fn=interruptible,  # Ctrl-C reaches it even where pytest's start ignored it
    )


@pytest.mark.parametrize(
    ("how", "sig", "group"),
    [
        ("kill -9 of snakemake alone", signal.SIGKILL, False),
        ("kill -9 of snakemake and every job (its process group)", signal.SIGKILL, True),
        ("Ctrl-C (SIGINT to the process group)", signal.SIGINT, True),
        ("SIGTERM to snakemake", signal.SIGTERM, False),
    ],
)
def test_an_interrupted_run_resumes_with_nothing_lost_or_half_done(
    tmp_path, scratch, how, sig, group
):
    work = make_checkout(
        tmp_path / "w",
        {"experiments": {"slow": slow_dd(scratch, [3000, 3001, 3002])}},
    )
    proc = start(work)
    try:
        # Mid-run: at least one cell finished and a dd of another one is writing.
        wait_for(lambda: records(work) and tool_processes(f"of={scratch}/"), 180, "a cell mid-run")
        before = {k: v for k, v in digests(work).items() if "/raw/" in k or "record" in k}
        finished_before = set(records(work))
        (os.killpg if group else os.kill)(proc.pid, sig)
        proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    # The tool died with its job (SIGTERM: Snakemake lets running jobs finish first), and
    # the killed cell's scratch went with it.
    wait_for(lambda: not tool_processes(f"of={scratch}/"), 20, "the dd to end")
    wait_for(lambda: not os.listdir(scratch), 10, "the scratch to be removed")
    status = {c["id"]: c for c in cells(work)}
    assert set(status) == {
        f"slow/count={n}/localhost/r{r}" for n in (3000, 3001, 3002) for r in (1, 2)
    }
    for c in status.values():
        # Never a half result: a run is done with a record, or has none at all.
        assert c["status"] in {"done", "incomplete", "missing"}, c
    # The next run plans exactly the runs without a finished record, then completes.
    unfinished = sorted(i for i, c in status.items() if c["status"] != "done")
    planned = planned_records(work)
    assert sorted(p.split("/cells/")[1].rsplit("/attempt-", 1)[0] for p in planned) == sorted(
        i.split("/", 1)[1] for i in unfinished
    )
    again = snakemake(work, "--cores", "2", "report")
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert {c["status"] for c in cells(work)} == {"done"}
    after = digests(work)
    for path, digest in before.items():  # finished attempts were never touched again
        assert after.get(path) == digest, path
    assert finished_before <= set(records(work))
    assert not list(work.glob(".snakemake/locks/*"))
    interrupted = [i for i in unfinished if status[i]["status"] == "incomplete"]
    FAULTS.append(
        (
            "interrupt mid-run",
            how,
            f"{len(finished_before)} finished records untouched, {len(interrupted)} "
            f"interrupted attempt(s) kept without a record, resume completed "
            f"{len(unfinished)} run(s), no dd or scratch left",
        )
    )


def test_kill_9_of_the_whole_run_leaves_no_tool_on_remote_hosts(testbed, tmp_path):
    """SIGKILL to snakemake and every perfpost job: nothing is left to clean up on the hosts'
    side, yet the dd there stops, because its SSH channel (the lifeline) closed."""
    from perfpost.run.remote import RemoteHost
    from tests.test_remote import processes

    inv = yaml.safe_load(Path(testbed.inventory).read_text())
    # On the hosts' /var/tmp, as on a machine's disk: dsync writes there last a while.
    scratch = f"/var/tmp/perfpost-fault-{uuid.uuid4().hex[:8]}"
    exp = {**slow_dd(scratch, [5000, 5001], repeats=1), "hosts": ["h1", "h2"]}
    work = make_checkout(tmp_path / "w", {**inv, "experiments": {"far": exp}})
    hosts = [RemoteHost(testbed.spec(h)) for h in ("h1", "h2")]

    def running() -> list[str]:
        return [p for h in hosts for p in processes(h) if f"of={scratch}/" in p]

    def running_dd() -> int:
        """How many hosts run a dd of this test."""
        return sum(
            any(p.startswith("dd ") and f"of={scratch}/" in p for p in processes(h)) for h in hosts
        )

    proc = start(work)
    try:
        busy = wait_for(running_dd, 180, "dd running on a host")
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=60)
        t0 = time.monotonic()
        wait_for(lambda: not running(), 30, "the remote dd processes to end")
        gone_after = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        for h in hosts:
            h.close()

    # Nor any scratch: the hosts removed the killed cells' files by themselves, once the
    # watcher's TERM-then-KILL (a second apart) was done.
    def left_on_hosts() -> dict[str, str]:
        out = {}
        for spec in (testbed.spec(h) for h in ("h1", "h2")):
            host = RemoteHost(spec)
            try:
                cmd = f"ls -A {scratch}; ls -d /tmp/perfpost-*-logs; true"
                out[spec["name"]] = host.run(cmd, 30).stdout.strip()
            finally:
                host.close()
        return {name: left for name, left in out.items() if left}

    deadline = time.monotonic() + 15
    while (left := left_on_hosts()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not left, f"left on the hosts 15 s after the kill: {left}"
    cleaned_after = time.monotonic() - t0
    again = snakemake(work, "--cores", "2", "report")
    assert again.returncode == 0, again.stderr[-3000:]
    assert {c["status"] for c in cells(work)} == {"done"}
    # The hosts' /var/tmp is their own disk's: the testbed removes it with them.
    FAULTS.append(
        (
            "interrupt mid-run",
            f"kill -9 of snakemake and every job, dd running on {busy} SSH host(s)",
            f"remote dd gone {gone_after:.1f} s later, scratch {cleaned_after:.1f} s later; "
            "resume completed 4 runs",
        )
    )


# `perfpost run-cell` that stops for good where the measured step is over and its log not yet
# asked for: no command of the cell runs on the host then. It says where it stopped and
# which scratch the cell has.
PAUSED_BETWEEN_STEPS = """
import os, sys, threading
from perfpost.cli import main
from perfpost.run import runner

def pause(self, *args):
    with open(os.environ["PAUSED_AT"], "w") as f:
        f.write(self.workdir + "\\n" + self.logdir + "\\n")
    threading.Event().wait()

runner._CellRun._read_log = pause
sys.exit(main(sys.argv[1:]))
"""

# A dd whose log is large (256 MiB): copying it back takes seconds (5 s on the testbed).
BIG_LOG_DD = r"""#!/bin/sh
case "$1" in --version) exec /bin/dd "$@" ;; esac
/bin/dd "$@"; rc=$?
head -c 268435456 /dev/zero >&2
exit $rc
"""


def cell_job(host: str, spec: dict, scratch: str, **exp) -> str:
    from perfpost.plan.build import build_plan

    cfg = {
        "hosts": {host: {k: v for k, v in spec.items() if k != "name"}},
        "experiments": {
            "killed": {
                "tool": "dd",
                "hosts": [host],
                "repeats": 1,
                "params": {"dir": scratch, "bs": "4k", "count": 100},
                **exp,
            }
        },
    }
    return next(build_plan(cfg).jobs()).to_json()


class OnHost:
    """Files and processes on a cell's host: localhost directly, a testbed host over SSH."""

    def __init__(self, testbed, name: str) -> None:
        from perfpost.run.remote import RemoteHost

        self.remote = RemoteHost(testbed.spec(name)) if name != "localhost" else None

    def existing(self, *paths: str) -> list[str]:
        if self.remote is None:
            return [p for p in paths if os.path.lexists(p)]
        got = self.remote.run(f"ls -d {' '.join(paths)} 2>/dev/null; true", 30)
        return got.stdout.split()

    def processes(self) -> list[str]:
        if self.remote is None:
            out = subprocess.run(["ps", "-eo", "args="], capture_output=True, text=True).stdout
            return out.splitlines()
        from tests.test_remote import processes

        return processes(self.remote)

    def remove(self, *paths: str) -> None:
        if self.remote is None:
            for p in paths:
                shutil.rmtree(p, ignore_errors=True)
        else:
            self.remote.run(f"rm -rf {' '.join(paths)}", 30)

    def close(self) -> None:
        if self.remote is not None:
            self.remote.close()


def scratch_gone_after_kill(on: OnHost, workdir: str, logdir: str) -> float:
    """Seconds until the cell's scratch and every process naming it are gone from the host
    (at most 10: the tool is given 1 s to die before its scratch goes)."""
    token = Path(workdir).name
    t0 = time.monotonic()
    try:
        deadline = t0 + 10
        while time.monotonic() < deadline:
            left = on.existing(workdir, logdir)
            running = [p for p in on.processes() if token in p and "/proc/" not in p]
            if not left and not running:
                return time.monotonic() - t0
            time.sleep(0.2)
        pytest.fail(f"10 s after the kill the host still has {left} and runs {running}")
    finally:
        on.remove(workdir, logdir)  # the next tests expect no scratch on the host


@pytest.mark.parametrize("host", ["localhost", "h1"])
def test_kill_9_of_a_cell_between_two_steps_leaves_no_scratch(testbed, tmp_path, host):
    """perfpost dies while no command of the cell runs on the host: the host removes the
    cell's scratch all the same."""
    spec = {"name": "localhost"} if host == "localhost" else testbed.spec(host)
    scratch = f"/tmp/perfpost-fault-{uuid.uuid4().hex[:8]}"  # on h1, that host's own /tmp
    paused = tmp_path / "paused"
    out = tmp_path / "attempt-1" / "record.json"
    job = cell_job(host, spec, scratch)
    on = OnHost(testbed, host)
    proc = subprocess.Popen(
        [sys.executable, "-c", PAUSED_BETWEEN_STEPS, "run-cell", "--spec", job, "--out", str(out)],
        env={**env_with_venv(), "PAUSED_AT": str(paused)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        wait_for(lambda: paused.exists() and paused.read_text().count("\n") == 2, 60, "pause")
        workdir, logdir = paused.read_text().split()
        assert set(on.existing(workdir, logdir)) == {workdir, logdir}  # the cell has its scratch
        proc.kill()
        proc.wait(10)
        took = scratch_gone_after_kill(on, workdir, logdir)
    finally:
        if proc.poll() is None:
            proc.kill()
        on.close()
        shutil.rmtree(scratch, ignore_errors=True)
    assert not out.exists()
    FAULTS.append(
        (
            "interrupt between steps",
            f"kill -9 of run-cell on {host} after the measured step, before the copy-back",
            f"scratch and its guard gone {took:.1f} s later",
        )
    )


def test_kill_9_of_a_cell_while_its_log_is_copied_back_leaves_no_scratch(testbed, tmp_path):
    spec = testbed.spec("h1")
    # The shim is read on the host: written there over SSH (the host shares no path).
    shim = Path(f"/var/tmp/perfpost-shim-{uuid.uuid4().hex[:8]}")
    put_on_host(testbed, "h1", {f"{shim}/dd": BIG_LOG_DD})
    scratch = f"/tmp/perfpost-fault-{uuid.uuid4().hex[:8]}"
    path = f"{shim}:/usr/local/bin:/usr/bin:/bin"
    job = cell_job("h1", spec, scratch, env={"PATH": path})
    out = tmp_path / "attempt-1" / "record.json"
    on = OnHost(testbed, "h1")

    def copying() -> list[str]:
        return [
            p.split()[2]
            for p in on.processes()
            if p.startswith("cat -- /tmp/perfpost-") and p.split()[2].endswith("-logs/dd.log")
        ]

    proc = subprocess.Popen(
        [PERFPOST, "run-cell", "--spec", job, "--out", str(out)],
        env=env_with_venv(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        log = wait_for(copying, 60, "the copy of dd's log")[0]
        proc.kill()
        proc.wait(10)
        logdir = str(Path(log).parent)
        workdir = f"{scratch}/{Path(logdir).name.removesuffix('-logs')}"
        took = scratch_gone_after_kill(on, workdir, logdir)
    finally:
        if proc.poll() is None:
            proc.kill()
        on.close()
    assert not out.exists()
    FAULTS.append(
        (
            "interrupt during a copy",
            "kill -9 of run-cell while h1 sends back a 256 MiB raw log",
            f"scratch and its guard gone {took:.1f} s later",
        )
    )


SHIM = r"""#!/bin/sh
# A dd that misbehaves as $PERFPOST_FAULT says, for the fault suite.
case "$1" in --version) exec /bin/dd "$@" ;; esac
case "${PERFPOST_FAULT:-}" in
  garbled) /bin/dd "$@" 2>&1 | tr '0-9' 'x' >&2 ;;
  truncated) /bin/dd "$@" 2>&1 | head -c 30 >&2 ;;
  empty) /bin/dd "$@" 2>/dev/null ;;
  foreign) /bin/dd "$@" 2>/dev/null
    echo "Exception in thread main java.lang.NoClassDefFoundError" >&2 ;;
  flaky)
    # Fails the first time, then behaves.
    state="$PERFPOST_STATE/flaky-failed-once"
    if [ ! -e "$state" ]; then
      : > "$state"; echo "dd: error writing: Input/output error" >&2; exit 1
    fi
    exec /bin/dd "$@" ;;
  secret)
    echo "token in the tool's own output: $PERFPOST_TOKEN" >&2
    printf %s "$PERFPOST_TOKEN" | sha256sum | cut -d' ' -f1 > "$PERFPOST_STATE/seen"
    exec /bin/dd "$@" ;;
  *) exec /bin/dd "$@" ;;
esac
"""


@pytest.fixture(scope="module")
def shim_run(tmp_path_factory):
    """One run with a misbehaving dd per experiment, a secret and one retry allowed."""
    base = tmp_path_factory.mktemp("faults")
    shim = base / "shim"
    shim.mkdir()
    (shim / "dd").write_text(SHIM)
    (shim / "dd").chmod(0o755)
    state = base / "state"
    state.mkdir()
    token = "tok-" + uuid.uuid4().hex
    path = f"{shim}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    scratch = f"/tmp/perfpost-fault-{uuid.uuid4().hex[:8]}"

    def exp(fault: str, **env) -> dict:
        return {
            "tool": "dd",
            "hosts": ["localhost"],
            "repeats": 1,
            "params": {"dir": scratch, "bs": "4k", "count": 64},
            "env": {"PERFPOST_FAULT": fault, "PERFPOST_STATE": str(state), **env},
        }

    cfg = {
        "hosts": {"localhost": {"env": {"PATH": path}}},
        "experiments": {
            "garbled": exp("garbled"),
            "truncated": exp("truncated"),
            "empty": exp("empty"),
            "foreign": exp("foreign"),
            "flaky": exp("flaky"),
            "hung": {
                **exp("none"),
                "params": {"dir": scratch, "bs": "4k", "count": 10**9},
                "timeout": 2,
            },
            "secret": exp("secret", PERFPOST_TOKEN={"secret": "PERFPOST_FAULT_TOKEN"}),
        },
    }
    work = make_checkout(base / "w", cfg)
    env = {**env_with_venv(), "PERFPOST_FAULT_TOKEN": token}
    result = subprocess.run(
        [snakemake_bin(), "--cores", "2", "--retries", "1", "report"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    yield work, result, token, state, env
    shutil.rmtree(scratch, ignore_errors=True)


@pytest.mark.parametrize(
    ("exp", "what", "fragment"),
    [
        ("garbled", "digits of dd's output replaced", "unparseable log: raw/"),
        ("truncated", "dd's output cut after 30 bytes", "unparseable log: raw/"),
        ("empty", "dd printed nothing", "unparseable log: raw/"),
        ("foreign", "a Java stack trace instead of dd's output", "unparseable log: raw/"),
    ],
)
def test_a_corrupted_log_fails_its_cell_with_the_place_and_keeps_the_log(
    shim_run, exp, what, fragment
):
    work, result, *_ = shim_run
    assert result.returncode == 0, result.stderr[-3000:]
    recs = [r for p, r in records(work).items() if f"results/{exp}/" in p]
    assert len(recs) == 2  # the first attempt and its retry
    for rec in recs:
        assert rec["status"] == "failed"
        assert rec["reason"].startswith(fragment), rec["reason"]
        assert rec["metrics"] == [] or all(m["name"] != "throughput" for m in rec["metrics"])
    log = next(work.glob(f"results/{exp}/cells/*/localhost/r1/attempt-1/raw/*.log"))
    assert log.exists()  # the log that could not be read is kept for diagnosis
    place = recs[0]["reason"].split(": ", 2)[1]
    assert place.startswith("raw/"), recs[0]["reason"]
    assert ":" in place or exp == "empty", recs[0]["reason"]  # the line, where there is one
    post = notebook_of(work / "reports" / exp / "index.md")
    assert "unparseable log" in post.split("## Failed cells")[1]
    assert not (work / "results" / exp / "tidy.csv").read_text().count(",throughput,")
    FAULTS.append(("corrupted log", what, f"cell failed: {recs[0]['reason'][:70]}; log kept"))


def test_a_hung_command_is_killed_at_its_timeout(shim_run):
    work, *_ = shim_run
    recs = [r for p, r in records(work).items() if "results/hung/" in p]
    assert recs
    assert all(r["status"] == "failed" for r in recs)
    assert all(r["reason"] == "timed out after 2 s" for r in recs), recs
    left = tool_processes("count=1000000000")
    assert not left
    timed_out = [s["step"] for r in recs for s in r["steps"] if s.get("timed_out")]
    assert len(timed_out) == len(recs), [r["steps"] for r in recs]
    FAULTS.append(
        (
            "hung command",
            "dd of 4 TB with a 2 s timeout",
            f"{len(recs)} attempt(s) failed ({recs[0]['reason']}; timed-out step: "
            f"{timed_out[0]}), {len(left)} dd left",
        )
    )


def test_a_flaky_cell_is_retried_as_a_new_attempt_and_both_are_kept(shim_run):
    work, *_ = shim_run
    recs = {p: r for p, r in records(work).items() if "results/flaky/" in p}
    first = [r for p, r in recs.items() if "/attempt-1/" in p]
    second = [r for p, r in recs.items() if "/attempt-2/" in p]
    assert [r["status"] for r in first] == ["failed"]
    assert [r["status"] for r in second] == ["done"]
    logs = sorted(work.glob("results/flaky/cells/*/localhost/r1/attempt-*/perfpost.log"))
    assert len(logs) == 2
    assert "retry 1 of 1" in logs[0].read_text()
    assert "attempt 2: retry 1 of 1 after attempt 1" in logs[1].read_text()
    import pandas as pd

    tidy = pd.read_csv(work / "results" / "flaky" / "tidy.csv")
    assert set(tidy["attempt"]) == {2}  # the table follows the retry, not the failure
    assert "throughput" in set(tidy["metric"])
    post = notebook_of(work / "reports" / "flaky" / "index.md")
    assert "None: every run finished." in post
    FAULTS.append(
        (
            "transient tool failure",
            "dd exits 1 once; profile retries: 1",
            f"attempt 1 {first[0]['status']} and kept ({first[0]['reason'][:40]}), "
            f"attempt 2 {second[0]['status']}; table rows from attempt(s) "
            f"{sorted(set(tidy['attempt']))}",
        )
    )


def test_a_secret_never_reaches_results_reports_or_snakemake_metadata(shim_run):
    work, result, token, state, _ = shim_run
    rec = next(r for p, r in records(work).items() if "results/secret/" in p)
    assert rec["status"] == "done", rec["reason"]
    # It reached the tool on the host...
    assert (state / "seen").read_text().strip() == hashlib.sha256(token.encode()).hexdigest()
    # ...and nowhere perfpost or Snakemake wrote.
    searched = 0
    for top in ("results", "reports", ".snakemake"):
        for p in (work / top).rglob("*"):
            if p.is_file():
                searched += 1
                assert token.encode() not in p.read_bytes(), p
    assert token not in result.stdout + result.stderr
    raw = next(work.glob("results/secret/cells/*/localhost/r1/attempt-1/raw/*.log")).read_text()
    assert "token in the tool's own output: ***" in raw
    assert rec["env"]["PERFPOST_TOKEN"] == "(secret, from $PERFPOST_FAULT_TOKEN)"
    FAULTS.append(
        (
            "secret in the environment",
            "env {secret: VAR}, and the tool prints it",
            f"reached the tool; absent from {searched} files under results/, reports/, "
            ".snakemake/ (masked as ***)",
        )
    )


def test_rerun_makes_a_new_attempt_of_chosen_cells_only(shim_run):
    work, _, _, _, env = shim_run
    before = digests(work)
    got = subprocess.run(
        [PERFPOST, "rerun", "secret/default", "--cores", "2"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert got.returncode == 0, got.stdout[-3000:] + got.stderr[-3000:]
    assert "secret/default/localhost/r1: attempt 2" in got.stdout
    after = digests(work)
    assert all(after.get(p) == d for p, d in before.items())  # nothing earlier overwritten
    new = sorted(set(after) - set(before))
    # The chosen finished cell ran again; the other finished one (flaky) did not. (The run
    # also retried the cells that had failed, as every run does.)
    assert any(p.startswith("results/secret/cells/default/localhost/r1/attempt-2/") for p in new)
    assert not [p for p in new if p.startswith("results/flaky/")]
    status = {c["id"]: c for c in cells(work)}
    assert status["secret/default/localhost/r1"]["attempt"] == "2"
    assert status["secret/default/localhost/r1"]["status"] == "done"
    bad = subprocess.run(
        [PERFPOST, "rerun", "secrt/default"], cwd=work, capture_output=True, text=True, env=env
    )
    assert bad.returncode == 2
    assert "'secrt/default' names no run of the config; did you mean secret/default" in bad.stderr
    kept = sum(after.get(p) == d for p, d in before.items())
    FAULTS.append(
        (
            "re-run of a finished cell",
            "perfpost rerun secret/default",
            f"attempt {status['secret/default/localhost/r1']['attempt']} "
            f"{status['secret/default/localhost/r1']['status']}; {kept} of {len(before)} earlier "
            f"files byte-identical; {len([p for p in new if p.startswith('results/flaky/')])} "
            "new files for the other finished cell",
        )
    )


def test_a_host_down_fails_its_cells_and_the_next_run_does_only_them(testbed, tmp_path, scratch):
    inv = yaml.safe_load(Path(testbed.inventory).read_text())
    exp = {
        "tool": "dd",
        "hosts": ["h1", "h3"],
        "repeats": 1,
        "axes": {"count": [100, 200]},
        "params": {"dir": scratch, "bs": "4k"},
    }
    work = make_checkout(tmp_path / "w", {**inv, "experiments": {"down": exp}})
    testbed.stop_host("h3")
    try:
        first = snakemake(work, "--cores", "2", "report")
    finally:
        testbed.start_host("h3")
    assert first.returncode == 0, first.stderr[-3000:]
    status = {c["id"]: c for c in cells(work)}
    assert {c["status"] for i, c in status.items() if "/h1/" in i} == {"done"}
    down = [c for i, c in status.items() if "/h3/" in i]
    assert len(down) == 2
    assert all(c["status"] == "failed" for c in down)
    assert all(c["reason"].startswith("unreachable:") for c in down), down
    planned = planned_records(work)
    assert len(planned) == 2
    assert all("/h3/" in p and "/attempt-2/" in p for p in planned)
    again = snakemake(work, "--cores", "2", "report")
    assert again.returncode == 0, again.stderr[-3000:]
    assert {c["status"] for c in cells(work)} == {"done"}
    FAULTS.append(
        (
            "host down",
            "sshd of h3 stopped for the first run",
            f"h3's {len(down)} cells failed ({down[0]['reason'][:40]}...), h1's done; next "
            f"run planned {len(planned)} record(s), all h3's; then {len(cells(work))} runs done",
        )
    )


@pytest.mark.parametrize("how", ["sshd frozen", "link down"])
def test_a_host_that_stops_answering_mid_run_is_named_and_a_rerun_completes_it(
    testbed, tmp_path, how
):
    """fio of 6 s (timeout 30) on h2, whose sshd and sessions are frozen with SIGSTOP, or
    whose network namespace loses its link, while fio runs: a partition as this machine sees
    it (connections open, nothing comes back, fio runs on). The cell fails on its own within
    the timeout plus 20 s of the cut, its record says which host stopped answering and when,
    keeps the run's start, and leaves its end unknown; once the host answers again, the
    next run completes the cell."""
    from perfpost.errors import HostError
    from perfpost.run.remote import RemoteHost
    from tests.test_remote import processes

    if how == "link down" and testbed.mode != "netns":
        pytest.skip("a host's link needs network namespaces (root)")
    inv = yaml.safe_load(Path(testbed.inventory).read_text())
    scratch = f"/var/tmp/perfpost-fault-{uuid.uuid4().hex[:8]}"
    exp = {
        "tool": "fio",
        "hosts": ["h2"],
        "repeats": 1,
        "timeout": 30,
        "params": {
            "dir": scratch,
            "name": "silent",
            "rw": "write",
            "bs": "64k",
            "size": "8M",
            "runtime": 6,
            "time_based": True,
        },
    }
    work = make_checkout(tmp_path / "w", {**inv, "experiments": {"silent": exp}})
    watch = RemoteHost(testbed.spec("h2"))
    proc = start(work)
    frozen: list[int] = []
    try:
        wait_for(
            lambda: any(f"--directory={scratch}/" in p for p in processes(watch)),
            240,
            "fio running on h2",
        )
        watch.close()
        cut_at = time.time()
        if how == "sshd frozen":
            frozen = testbed.freeze_host("h2")
        else:
            testbed.set_link("h2", up=False)
        record = wait_for(lambda: list(work.glob("results/silent/**/record.json")), 120, "a record")
        written = record[0].stat().st_mtime - cut_at
        out, _ = proc.communicate(timeout=300)
        ended = time.time() - cut_at
    finally:
        testbed.thaw_host(frozen)
        if how == "link down":
            testbed.set_link("h2", up=True)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        watch.close()
    assert proc.returncode == 0, out[-3000:]
    rec = json.loads(record[0].read_text())
    assert rec["status"] == "failed"
    assert written <= 30 + 20, written
    reason = rec["reason"]
    m = re.match(r"h2 stopped answering at (\d\d):(\d\d):(\d\d) \(no reply for (\d+) s\) ", reason)
    assert m, reason
    assert reason.endswith(
        "while fio ran; what ran there may have finished; nothing was read back"
    ), reason
    # Last heard within one keepalive interval (5 s) before the cut, silent for 15 s after.
    heard = time.localtime(cut_at)
    said = int(m[1]) * 3600 + int(m[2]) * 60 + int(m[3])
    cut = heard.tm_hour * 3600 + heard.tm_min * 60 + heard.tm_sec
    assert -5 - 2 <= (said - cut + 43200) % 86400 - 43200 <= 1, (reason, cut_at)
    assert int(m[4]) >= 15
    # The attempt's start, before fio began (the host never said when its step ran).
    from datetime import datetime

    assert datetime.fromisoformat(rec["start"]).timestamp() < cut_at
    assert rec["end"] is None
    assert not rec["metrics"]

    # Once it answers again: the scratch fio wrote goes (its lifeline closed), and the next
    # run plans that cell alone and completes it.
    def scratch_left() -> str:
        host = RemoteHost(testbed.spec("h2"))
        try:
            return host.run(f"ls -A {scratch} 2>/dev/null; true", 60).stdout.strip()
        except HostError as e:
            # The link just up again: its neighbour entry, failed while it was down, can
            # answer "No route to host" for a few seconds more.
            return f"not answering yet: {e}"
        finally:
            host.close()

    wait_for(lambda: not scratch_left(), 30, "the scratch on h2 to be removed")
    planned = planned_records(work)
    assert [p.split("/cells/")[1] for p in planned] == ["default/h2/r1/attempt-2/record.json"]
    again = snakemake(work, "--cores", "2", "report")
    assert again.returncode == 0, again.stderr[-3000:]
    assert [c["status"] for c in cells(work)] == ["done"]
    FAULTS.append(
        (
            "host stops answering",
            f"h2 {'sshd and sessions SIGSTOPped' if how == 'sshd frozen' else 'link down'} "
            "while fio (6 s, timeout 30) ran",
            f"record written {written:.0f} s after the cut ('{reason[:58]}...'), start kept, "
            f"end unknown; run ended {ended:.0f} s after the cut; scratch removed once the "
            "host answered; re-run completed the cell",
        )
    )


def test_config_mistakes_are_refused_before_any_job_starts(tmp_path):
    """Each mistake: snakemake exits non-zero at once, its message names the key path and the
    reason, and nothing was run (no results/ directory)."""
    from concurrent.futures import ThreadPoolExecutor

    # The documentation promises the fault table's count of config mistakes: keep it true.
    page = (ROOT / "docs" / "layout.md").read_text()
    promised = int(re.search(r"(\d+) config mistakes", page).group(1))
    assert promised == len({m[0] for m in MISTAKES}) == len(MISTAKES)

    def attempt(i_mistake):
        i, (name, change, where, fragment) = i_mistake
        work = make_checkout(tmp_path / f"m{i}", config_text(GOOD, change))
        got = snakemake(work, "--cores", "1", "report", timeout=300)
        return name, where, fragment, work, got

    with ThreadPoolExecutor(max_workers=4) as pool:
        outcomes = list(pool.map(attempt, enumerate(MISTAKES)))
    messages: set[str] = set()
    refused: list[str] = []
    for name, where, fragment, work, got in outcomes:
        said = got.stdout + got.stderr
        assert got.returncode != 0, name
        assert where in said, f"{name}: {said[-1500:]}"
        assert fragment in said, f"{name}: {said[-1500:]}"
        assert not (work / "results").exists(), name
        line = next(line for line in said.splitlines() if where in line)
        # One message a person reads, not Snakemake's wrapper naming a rule file.
        assert line.startswith("perfpost: "), f"{name}: {line}"
        assert "WorkflowError" not in said, f"{name}: {said[-1500:]}"
        messages.add(line.strip())
        refused.append(name)
    assert len(messages) == len(MISTAKES)  # each mistake has its own message
    FAULTS.append(
        (
            "bad config",
            f"{len(MISTAKES)} distinct mistakes, each through snakemake",
            f"{len(refused)} refused before any job with {len(messages)} distinct messages "
            "naming key path and reason; no results/ in any",
        )
    )
