"""Secrets and the environment of a cell's commands, on real localhost and sshd hosts.

The tool is dd behind a shim that first prints its whole environment (``env``) into dd's log,
as a tool that dumps its settings would: whatever perfpost hands a command shows up there.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from perfpost import hostenv, paths
from perfpost.plan.build import build_plan
from perfpost.run.hosts import LocalHost
from perfpost.run.runner import run_cell
from tests.conftest import host_spec

SHIM = r"""#!/bin/sh
# dd that prints its environment first; with KEEP_ENV_COPY it also leaves a copy of it in a
# read-only directory of the cell's scratch, as tools with read-only caches do.
case "$1" in --version) exec /bin/dd "$@" ;; esac
env >&2
if [ -n "${KEEP_ENV_COPY:-}" ]; then
  for a in "$@"; do case "$a" in of=*) d=$(dirname "${a#of=}") ;; esac; done
  mkdir -p "$d/cache" && env > "$d/cache/env.txt" && chmod 0555 "$d/cache"
fi
exec /bin/dd "$@"
"""
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
# Variables sh itself sets in every process it starts, whatever environment it was given.
SHELL_SET = {"PWD", "SHLVL", "_", "OLDPWD"}


@pytest.fixture
def shim(tmp_path_factory) -> Path:
    """The shim in a directory every user can read: the testbed's login user runs it too."""
    d = Path(f"/var/tmp/perfpost-test-shim-{uuid.uuid4().hex[:8]}")
    d.mkdir(mode=0o755)
    (d / "dd").write_text(SHIM)
    (d / "dd").chmod(0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def cell(host: str, params: dict, env: dict, hosts: dict | None = None, **exp):
    cfg = {
        "hosts": hosts or {},
        "experiments": {
            "s": {
                "tool": "dd",
                "hosts": [host],
                "repeats": 1,
                "params": params,
                "env": env,
                **exp,
            }
        },
    }
    return next(build_plan(cfg).jobs())


def env_lines(log: str) -> dict[str, str]:
    """The variables the shim printed (dd's own lines have no '=' before a space)."""
    out = {}
    for line in log.splitlines():
        name, sep, value = line.partition("=")
        if sep and name.replace("_", "").isalnum():
            out[name] = value
    return out


def files_holding(root: Path, needle: str) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and needle.encode() in p.read_bytes()]


def test_a_localhost_command_gets_the_declared_env_and_the_base_only(tmp_path, shim):
    """`perfpost run-cell` with a secret's source and another variable in its environment:
    neither reaches the tool; the declared secret does, and is masked wherever it is kept."""
    secret = "s3-" + uuid.uuid4().hex
    scratch = tmp_path / "target"
    scratch.mkdir()
    spec = cell(
        "localhost",
        {"dir": str(scratch), "bs": "4k", "count": 16},
        {
            "PATH": f"{shim}:{SYSTEM_PATH}",
            "AWS_SECRET_ACCESS_KEY": {"secret": "PERF_S3_KEY"},
            "PLAIN": "visible",
        },
    )
    results = tmp_path / "results"
    out = results / paths.record(spec.experiment, spec.cell, "localhost", 1, 1)
    env = {
        **os.environ,
        "PERF_S3_KEY": secret,
        "PERFPOST_NOT_DECLARED": "from-perfpost",
        "LANG": "C.UTF-8",
    }
    got = subprocess.run(
        [sys.executable, "-m", "perfpost", "run-cell", "--spec", spec.to_json(), "--out", out],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert got.returncode == 0, got.stderr
    rec = json.loads(out.read_text())
    assert rec["status"] == "done", rec["reason"]
    seen = env_lines((out.parent / "raw" / "dd.log").read_text())
    # Declared: reached the tool (the secret masked in the log kept of it).
    assert seen["AWS_SECRET_ACCESS_KEY"] == hostenv.MASK
    assert seen["PLAIN"] == "visible"
    assert seen["PATH"] == f"{shim}:{SYSTEM_PATH}"
    # Not declared: perfpost's own variables, the secret's source among them, stay home.
    assert "PERF_S3_KEY" not in seen
    assert "PERFPOST_NOT_DECLARED" not in seen
    assert seen["LANG"] == "C.UTF-8"  # part of the documented base
    assert seen["LC_ALL"] == "C"
    assert set(seen) - SHELL_SET <= {*hostenv.BASE_ENV, "LC_ALL", "AWS_SECRET_ACCESS_KEY", "PLAIN"}
    # The secret is in no file perfpost wrote, nor in its output.
    assert files_holding(results, secret) == []
    assert secret not in got.stdout + got.stderr
    # Nor on the host: the cell's scratch (work directory and logs) is gone.
    assert list(scratch.iterdir()) == []
    assert not Path(f"/tmp/{Path(rec['workdir']).name}-logs").exists()


class Watched:
    """A host that, before every command or copy, checks that no file under ``root`` holds
    ``secret``: a log written unmasked and masked later would be caught on disk."""

    def __init__(self, host, root: Path, secret: str) -> None:
        self.host, self.root, self.secret = host, root, secret
        self.name = host.name
        self.checks = 0

    def _check(self) -> None:
        self.checks += 1
        assert files_holding(self.root, self.secret) == []

    def run(self, *args, **kwargs):
        self._check()
        return self.host.run(*args, **kwargs)

    def guard(self, abandon):
        self._check()
        return self.host.guard(abandon)

    def read(self, path):
        self._check()
        return self.host.read(path)

    def close(self) -> None:
        self.host.close()


def test_a_raw_log_never_holds_a_secret_on_disk_even_for_a_moment(tmp_path, shim):
    secret = "tok-" + uuid.uuid4().hex
    scratch = tmp_path / "target"
    scratch.mkdir()
    spec = cell(
        "localhost",
        {"dir": str(scratch), "bs": "4k", "count": 16},
        {"PATH": f"{shim}:{SYSTEM_PATH}", "TOKEN": secret},
        after=["sync"],  # a step after the logs are fetched: the disk is checked then too
    )
    values, _ = hostenv.resolve(spec.cell_env())
    results = tmp_path / "results"
    host = Watched(LocalHost(values), results, secret)
    rec = run_cell(spec, results / "attempt-1" / "record.json", host, hostenv.Redactor([secret]))
    assert rec["status"] == "done", rec["reason"]
    assert host.checks >= 5  # version, prepare, measure, log, sync, clean-up
    assert env_lines((results / "attempt-1" / "raw" / "dd.log").read_text())["TOKEN"] == "***"
    assert files_holding(results, secret) == []


def test_the_redactor_masks_what_it_writes_before_it_reaches_the_disk(tmp_path, monkeypatch):
    secret = "pw-" + uuid.uuid4().hex
    written = []
    real = hostenv.write_bytes_atomic

    def spy(path, data):
        written.append(data)
        real(path, data)

    monkeypatch.setattr(hostenv, "write_bytes_atomic", spy)
    target = tmp_path / "raw" / "tool.log"
    hostenv.Redactor([secret]).write(
        target, b"key=" + secret.encode() + b"\n\xff " + secret.encode() * 2
    )
    # Masked in memory: the only bytes handed to the disk are already masked.
    assert written == [b"key=***\n\xff ******"]
    assert target.read_bytes() == b"key=***\n\xff ******"


def test_a_remote_command_gets_the_declared_env_and_nothing_of_perfpost(testbed, monkeypatch):
    from perfpost.run.remote import RemoteHost

    monkeypatch.setenv("PERFPOST_NOT_DECLARED", "from-perfpost")
    host = RemoteHost(host_spec(testbed, "h1"), {"DECLARED": "yes"})
    try:
        seen = env_lines(host.run("env", 30).stdout)
    finally:
        host.close()
    assert seen["DECLARED"] == "yes"
    assert "PERFPOST_NOT_DECLARED" not in seen
    assert not [k for k in seen if k.startswith("PERF")]


def test_no_copy_of_a_secret_stays_in_the_remote_hosts_scratch(testbed, shim, tmp_path):
    """The tool leaves its environment in a directory it made read-only (the testbed's login
    user is no root, so a plain `rm -rf` cannot empty it): the scratch still goes."""
    from perfpost.run.remote import RemoteHost
    from tests.conftest import put_on_host

    put_on_host(testbed, "h2", {f"{shim}/dd": SHIM})  # h2 has its own /var/tmp

    secret = "key-" + uuid.uuid4().hex
    spec_h = host_spec(testbed, "h2")
    where = f"/tmp/perfpost-secret-{uuid.uuid4().hex[:6]}"
    spec = cell(
        "h2",
        {"dir": where, "bs": "4k", "count": 16},
        {
            "PATH": f"{shim}:{SYSTEM_PATH}",
            "TOKEN": {"secret": "PERFPOST_TEST_TOKEN"},
            "KEEP_ENV_COPY": "1",
        },
        hosts={"h2": {k: v for k, v in spec_h.items() if k != "name"}},
    )
    values, hidden = hostenv.resolve(spec.cell_env(), {"PERFPOST_TEST_TOKEN": secret})
    out = tmp_path / "attempt-1" / "record.json"
    host = RemoteHost(spec.host, values)
    try:
        rec = run_cell(spec, out, host, hostenv.Redactor(hidden))
        assert rec["status"] == "done", rec["reason"]
        left = host.run(
            f"ls -A {where}; grep -rl {secret} {where} /tmp/{Path(rec['workdir']).name}-logs"
            " 2>/dev/null; true",
            30,
        ).stdout
    finally:
        host.run(f"chmod -R u+w {where}; rm -rf {where}", 30, force=True)
        host.close()
    assert left == ""
    assert "warnings" not in rec
    assert files_holding(tmp_path, secret) == []
