"""Every cell ends with a record, whatever goes wrong on the way to its host and back: a
host without SFTP, a channel that closes mid-command, an exception nobody foresaw."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from pathlib import Path

import pytest
from paramiko.ssh_exception import SSHException

from perfpost import paths
from perfpost.plan.build import build_plan
from perfpost.records import read_record
from perfpost.run.hosts import LocalHost
from perfpost.run.remote import RemoteHost
from perfpost.run.runner import run_cell, run_together
from tests.conftest import host_spec
from tests.testbed import _descendants


def dd_cell(host: str, params: dict, hosts: dict | None = None, **exp):
    cfg = {
        "hosts": hosts or {},
        "experiments": {
            "e": {"tool": "dd", "hosts": [host], "repeats": 1, "params": params, **exp}
        },
    }
    return next(build_plan(cfg).jobs())


def inventory_entry(spec: dict) -> dict:
    return {k: v for k, v in spec.items() if k != "name"}


@pytest.fixture(scope="module")
def no_sftp_bed(tmp_path_factory):
    """One real sshd host whose config has no `Subsystem sftp` line."""
    from tests import testbed as tb

    bed = tb.start(1, tmp_path_factory.mktemp("nosftp"), sftp=False, quick_java=True)
    yield bed
    bed.stop()


def test_a_host_without_sftp_runs_a_cell_and_its_log_comes_back(no_sftp_bed, tmp_path):
    spec_h = host_spec(no_sftp_bed, "h1")
    assert "subsystem" not in Path(no_sftp_bed.host("h1").config).read_text().lower()
    probe = RemoteHost(spec_h)
    try:
        probe.run("true", 30)
        with pytest.raises(SSHException):  # the host really refuses SFTP
            probe.conn.client.open_sftp()
    finally:
        probe.close()
    spec = dd_cell(
        "h1",
        {"dir": f"/tmp/perfpost-nosftp-{uuid.uuid4().hex[:6]}", "bs": "4k", "count": 256},
        hosts={"h1": inventory_entry(spec_h)},
    )
    out = tmp_path / "attempt-1" / "record.json"
    host = RemoteHost(spec.host)
    try:
        rec = run_cell(spec, out, host)
    finally:
        host.close()
    assert rec["status"] == "done", rec["reason"]
    log = (out.parent / "raw" / "dd.log").read_text()
    # dd's own summary: 256 records of 4 KiB, 1048576 bytes.
    assert "256+0 records out" in log
    assert log.split("\n")[2].startswith("1048576 bytes")
    assert {m["name"]: m["value"] for m in rec["metrics"]}["bytes"] == 1048576


RUN_CELL_WITH_A_BUG = """
import sys
from perfpost import cli
from perfpost.run import {module}

def broken(*args, **kwargs):
    raise {exc}("{message}")

{module}.{attribute} = broken
sys.exit(cli.main(sys.argv[1:]))
"""


@pytest.mark.parametrize(
    ("module", "attribute", "exc", "where"),
    [
        ("hostscript", "parse_markers", "RuntimeError", "while the cell ran"),
        ("hosts", "LocalHost.read", "KeyError", "fetching the log"),
        ("hosts", "open_host", "RuntimeError", "opening the host"),
    ],
)
def test_an_unforeseen_exception_fails_the_cell_with_a_record_and_run_cell_exits_0(
    tmp_path, module, attribute, exc, where
):
    message = f"unforeseen-{uuid.uuid4().hex[:8]}"
    scratch = tmp_path / "target"
    scratch.mkdir()
    spec = dd_cell("localhost", {"dir": str(scratch), "bs": "4k", "count": 16})
    out = tmp_path / paths.record(spec.experiment, spec.cell, "localhost", 1, 1)
    code = RUN_CELL_WITH_A_BUG.format(module=module, attribute=attribute, exc=exc, message=message)
    got = subprocess.run(
        [sys.executable, "-c", code, "run-cell", "--spec", spec.to_json(), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert got.returncode == 0, got.stderr
    rec = read_record(out)
    assert rec["status"] == "failed", where
    assert message in rec["reason"], rec["reason"]
    assert exc in rec["reason"], rec["reason"]
    assert f"{rec['status']} (" in got.stdout  # the job's log says it, with the reason
    assert message in got.stderr  # and keeps the traceback for whoever debugs it
    assert list(scratch.iterdir()) == []  # scratch removed all the same


class Exploding:
    """A host whose copies fail with an error no one foresaw (a bug's KeyError)."""

    def __init__(self, host) -> None:
        self.host, self.name = host, host.name

    def run(self, *args, **kwargs):
        return self.host.run(*args, **kwargs)

    def guard(self, abandon):
        return self.host.guard(abandon)

    def read(self, path):
        raise KeyError(f"no such key: {path}")

    def fetch(self, *args):
        raise KeyError("fetch")

    def close(self) -> None:
        pass


def test_an_exception_on_one_host_of_a_together_cell_leaves_the_others_done(tmp_path):
    scratch = tmp_path / "target"
    scratch.mkdir()
    cfg = {
        "hosts": {"localhost": {}},
        "experiments": {
            "e": {
                "tool": "dd",
                "hosts": ["localhost"],
                "repeats": 1,
                "params": {"dir": str(scratch), "bs": "4k", "count": 16},
            }
        },
    }
    spec = next(build_plan(cfg).jobs())
    outs = [tmp_path / f"{i}" / "attempt-1" / "record.json" for i in range(3)]
    hosts = [LocalHost(), Exploding(LocalHost()), LocalHost()]
    recs = run_together([spec] * 3, outs, hosts)
    assert [r["status"] for r in recs] == ["done", "failed", "done"]
    assert recs[1]["reason"].startswith("internal error: KeyError: ")
    assert "no such key" in recs[1]["reason"]
    assert [read_record(o)["status"] for o in outs] == ["done", "failed", "done"]
    assert list(scratch.iterdir()) == []


def test_a_channel_closed_mid_command_fails_the_cell_with_a_record(testbed, tmp_path):
    """The sshd process serving perfpost's connection is killed while dd runs."""
    spec_h = host_spec(testbed, "h3")
    count = 10**11 + uuid.uuid4().int % 10**6  # a dd no other test runs
    spec = dd_cell(
        "h3",
        {"dir": f"/tmp/perfpost-cut-{uuid.uuid4().hex[:6]}", "bs": "1", "count": count},
        hosts={"h3": inventory_entry(spec_h)},
        timeout=120,
    )
    out = tmp_path / "attempt-1" / "record.json"
    h3 = testbed.host("h3")

    def sessions() -> list[int]:
        """sshd's per-connection processes (`sshd: user@notty`), not the listener."""
        out = []
        for pid in _descendants(h3.pid):
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            # OpenSSH 9 names its listener "sshd: /usr/sbin/sshd ... [listener]": keep it.
            if cmd.startswith(b"sshd: ") and b"[listener]" not in cmd:
                out.append(pid)
        return out

    def running(marker: str) -> bool:
        for pid in _descendants(h3.pid):
            try:
                if marker.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                    return True
            except OSError:
                pass
        return False

    done: dict = {}
    host = RemoteHost(spec.host)
    worker = threading.Thread(target=lambda: done.update(rec=run_cell(spec, out, host)))
    worker.start()
    try:
        deadline = time.monotonic() + 60
        while not running(f"count={count}"):
            assert time.monotonic() < deadline, "dd never started on the host"
            time.sleep(0.1)
        for pid in sessions():
            with contextlib.suppress(ProcessLookupError):  # a child of one killed before
                os.kill(pid, signal.SIGKILL)
        worker.join(120)
        assert not worker.is_alive()
    finally:
        host.close()
    rec = done["rec"]
    assert rec == json.loads(out.read_text())
    assert rec["status"] == "failed"
    assert rec["reason"].startswith("connection to "), rec["reason"]
    assert " lost: " in rec["reason"], rec["reason"]
    deadline = time.monotonic() + 15
    while running(f"count={count}") and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not running(f"count={count}")  # the tool died with its channel


@pytest.mark.e2e
def test_the_post_is_written_when_a_cell_hits_an_unforeseen_exception(tmp_path):
    """Through Snakemake: one cell's run-cell meets a bug, the others and the post go on."""
    from tests.conftest import env_with_venv, snakemake_bin
    from tests.e2e import make_checkout, notebook_of

    scratch = str(tmp_path / "scratch")  # removed with tmp_path
    cfg = {
        "experiments": {
            "bug": {
                "tool": "dd",
                "hosts": ["localhost"],
                "repeats": 1,
                "axes": {"count": [16, 17]},
                "params": {"dir": scratch, "bs": "4k"},
            }
        }
    }
    work = make_checkout(tmp_path / "w", cfg)
    # A bug in the parser, hit only by the 17-record cell (via a sitecustomize on the path).
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        textwrap.dedent(
            """
            from perfpost.tools import dd
            real = dd.parse_cell
            def parse_cell(texts, **kw):
                if any("17+0 records" in t for t in texts.values()):
                    raise RuntimeError("a bug nobody foresaw")
                return real(texts, **kw)
            dd.parse_cell = parse_cell
            """
        )
    )
    result = subprocess.run(
        [snakemake_bin(), "--cores", "2", "report"],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=600,
        env={**env_with_venv(), "PYTHONPATH": str(site)},
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    recs = [json.loads(p.read_text()) for p in work.glob("results/bug/cells/*/*/r1/*/record.json")]
    assert sorted(r["status"] for r in recs) == ["done", "failed"]
    failed = next(r for r in recs if r["status"] == "failed")
    assert failed["reason"] == "internal error: RuntimeError: a bug nobody foresaw"
    post = notebook_of(work / "reports" / "bug" / "index.md")
    assert "a bug nobody foresaw" in post
