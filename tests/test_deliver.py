"""Delivery of perfpost's installs to hosts that share nothing with this machine: on testbed
hosts with their own disks (no SFTP), hosts in parallel, once, resumable, never used half-done.

Expected values come from outside the module: digests by hashlib and by the host's own
``sha256sum``, sizes from the files written here, what the host has from ``ls`` over SSH.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from perfpost import deliver, provision
from perfpost.run.remote import RemoteHost
from tests.conftest import host_spec


@pytest.fixture(autouse=True)
def own_memo(tmp_path, monkeypatch):
    """Each test its own digest memo and its own idea of what hosts have."""
    monkeypatch.setenv("PERFPOST_CACHE", str(tmp_path / "cache"))
    deliver._KNOWN.clear()
    yield
    deliver._KNOWN.clear()


def make_install(where: Path, name: str = "tool-1.0-abc", big: int = 0) -> Path:
    """An install as provision leaves one: COMPLETE, jars, a launcher, a symlink, and what
    is this machine's own (the rule checker's memos, the provisioning log)."""
    root = where / name
    (root / "lib").mkdir(parents=True)
    (root / "bin").mkdir()
    (root / "checks").mkdir()
    (root / provision.COMPLETE).write_text(json.dumps({"tool": "tool"}) + "\n")
    (root / "lib" / "a.jar").write_bytes(os.urandom(50_000))
    (root / "lib" / "b.jar").write_bytes(b"b" * 1234)
    for i in range(big):
        (root / "lib" / f"big-{i}.jar").write_bytes(os.urandom(4 << 20))
    launcher = root / "bin" / "tool"
    launcher.write_text("#!/bin/sh\necho tool 1.0\n")
    launcher.chmod(0o755)
    (root / "lib" / "current.jar").symlink_to("a.jar")
    (root / "checks" / "memo").write_text("here only")
    (root / "provision.log").write_text("here only")
    (root / "lib" / ".a.jar.new").write_text("a temporary file")
    return root


def test_the_manifest_holds_what_is_shipped_with_hashlibs_digests(tmp_path):
    root = make_install(tmp_path)
    entries = {e.path: e for e in deliver.manifest(root)}
    assert set(entries) == {"COMPLETE", "bin/tool", "lib/a.jar", "lib/b.jar", "lib/current.jar"}
    assert entries["lib/b.jar"].sha256 == hashlib.sha256(b"b" * 1234).hexdigest()
    assert entries["lib/b.jar"].size == 1234
    assert entries["bin/tool"].mode == 0o755
    assert entries["lib/current.jar"].kind == "l"
    assert entries["lib/current.jar"].sha256 == "a.jar"


def test_a_changed_launcher_is_a_new_key_and_the_memo_is_not_fooled(tmp_path):
    root = make_install(tmp_path)
    before = deliver.key_of(root, deliver.manifest(root))
    assert before.startswith("tool-1.0-abc-")
    assert deliver.key_of(root, deliver.manifest(root)) == before  # from the memo: the same
    launcher = root / "bin" / "tool"
    launcher.write_text("#!/bin/sh\necho tool 1.0 refreshed\n")
    after = deliver.key_of(root, deliver.manifest(root))
    assert after != before
    # The rule checker's memos are this machine's: they change nothing.
    (root / "checks" / "another").write_text("x")
    assert deliver.key_of(root, deliver.manifest(root)) == after


def test_paths_into_an_install_are_found_and_rewritten(tmp_path):
    root = make_install(tmp_path)
    link = tmp_path / "tool-1.0"
    link.symlink_to(root.name)
    params = {
        "launcher": f"{link}/bin/tool",
        "java_opts": f"-javaagent:{root}/lib/a.jar=script:/tmp/x.btm -Xmx1g",
        "dir": "/tmp/perfpost",
        "list": [f"{root}/lib/b.jar"],
    }
    assert deliver.roots([params]) == [root]
    mapping = dict.fromkeys(deliver.prefixes(root), "/home/u/.cache/perfpost/K")
    got = deliver.localize(params, mapping)
    assert got == {
        "launcher": "/home/u/.cache/perfpost/K/bin/tool",
        "java_opts": "-javaagent:/home/u/.cache/perfpost/K/lib/a.jar=script:/tmp/x.btm -Xmx1g",
        "dir": "/tmp/perfpost",
        "list": ["/home/u/.cache/perfpost/K/lib/b.jar"],
    }
    # A sibling whose name starts alike is another install, untouched.
    assert deliver.localize(f"{link}-other/bin/tool", mapping) == f"{link}-other/bin/tool"


def test_localhost_gets_the_install_where_it_is(tmp_path):
    from perfpost.run.hosts import LocalHost

    root = make_install(tmp_path)
    d = deliver.ensure(LocalHost(), root)
    assert d.path == str(root)
    assert d.files == 0
    assert deliver.deliver_for(LocalHost(), [{"launcher": f"{root}/bin/tool"}]) == ({}, [])


# -- on hosts that share nothing ---------------------------------------------------------


@pytest.fixture(scope="module")
def bare(tmp_path_factory):
    """Three hosts with their own disks and no SFTP subsystem."""
    from tests import testbed as tb

    bed = tb.start(3, tmp_path_factory.mktemp("deliver"), sftp=False, quick_java=True)
    yield bed
    bed.stop()


def remote_digests(host: RemoteHost, path: str) -> dict[str, str]:
    got = host.run(f"cd {path} && find . -type f -printf '%P\\n' | xargs sha256sum", 60)
    assert got.exit_code == 0, got.stderr
    return {ln.split()[1]: ln.split()[0] for ln in got.stdout.splitlines()}


def test_an_install_reaches_three_hosts_in_parallel_and_a_second_run_ships_nothing(bare, tmp_path):
    root = make_install(tmp_path, "par-1.0-abc")
    hosts = [RemoteHost(host_spec(bare, f"h{i}")) for i in (1, 2, 3)]
    try:
        # This machine's copy is invisible there: the hosts share no path with it.
        seen = hosts[0].run(f"ls {root}", 30)
        assert seen.exit_code != 0
        with ThreadPoolExecutor(3) as pool:
            done = list(pool.map(lambda h: deliver.ensure(h, root), hosts))
        local = {
            str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in root.rglob("*")
            if p.is_file() and not p.is_symlink()
        }
        shipped = {k: v for k, v in local.items() if deliver._shipped(k)}
        for h, d in zip(hosts, done, strict=True):
            assert d.files == len(shipped) + 1  # and the symlink
            assert d.bytes == sum((root / k).stat().st_size for k in shipped)
            there = remote_digests(h, d.path)
            assert {k: v for k, v in there.items() if not k.startswith(".")} == shipped
            assert h.run(f"readlink {d.path}/lib/current.jar", 30).stdout.strip() == "a.jar"
            assert h.run(f"{d.path}/bin/tool", 30).stdout.strip() == "tool 1.0"
            # Under the login user's own cache, in its own home on that host.
            home = h.run('printf %s "$HOME"', 30).stdout
            assert d.path == f"{home}/.cache/perfpost/{d.key}"
        deliver._KNOWN.clear()  # a new run: it asks the hosts again
        again = [deliver.ensure(h, root) for h in hosts]
        assert [(d.files, d.bytes) for d in again] == [(0, 0)] * 3
        assert [d.path for d in again] == [d.path for d in done]
    finally:
        for h in hosts:
            h.close()


def test_a_copy_killed_mid_way_is_never_used_and_the_next_one_resumes(bare, tmp_path):
    root = make_install(tmp_path, "big-1.0-abc", big=12)  # 48 MiB of jars
    spec = host_spec(bare, "h2")
    script = (
        "import json, sys; from pathlib import Path; from perfpost import deliver;"
        "from perfpost.run.remote import RemoteHost;"
        f"deliver.ensure(RemoteHost(json.loads(sys.argv[1])), Path({str(root)!r}))"
    )
    host = RemoteHost(spec)
    try:
        key = deliver.key_of(root, deliver.manifest(root))
        home = host.run('printf %s "$HOME"', 30).stdout
        partial = f"{home}/.cache/perfpost/.{key}.partial"
        proc = subprocess.Popen(
            [sys.executable, "-c", script, json.dumps(spec)], env=os.environ.copy()
        )
        # Killed once some, not all, of it arrived.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            got = host.run(f"du -sb {partial} 2>/dev/null | cut -f1", 30).stdout.strip()
            if got.isdigit() and int(got) > 8 << 20:
                break
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        had = host.run(f"find {partial} -type f | wc -l", 30).stdout.strip()
        assert 0 < int(had) < 15, had
        # Half-done is never the install: its name does not exist yet.
        assert host.run(f"test -e {home}/.cache/perfpost/{key}", 30).exit_code == 1
        # A file of the right size but wrong bytes is caught by the check, and replaced.
        host.run(f"cd {partial} && printf X | dd of=lib/b.jar bs=1 seek=7 conv=notrunc", 30)
        d = deliver.ensure(host, root)
        total = len([e for e in deliver.manifest(root)])
        assert 0 < d.files < total  # resumed: what arrived before was not sent again
        local = hashlib.sha256((root / "lib" / "b.jar").read_bytes()).hexdigest()
        assert remote_digests(host, d.path)["lib/b.jar"] == local
        assert host.run(f"test -e {partial}", 30).exit_code == 1
    finally:
        host.close()


def test_a_delivered_install_outlives_the_host_going_down_and_up(bare, tmp_path):
    root = make_install(tmp_path, "keep-1.0-abc")
    host = RemoteHost(host_spec(bare, "h3"))
    try:
        first = deliver.ensure(host, root)
        assert first.files > 0
    finally:
        host.close()
    bare.stop_host("h3")
    bare.start_host("h3")
    deliver._KNOWN.clear()
    host = RemoteHost(host_spec(bare, "h3"))
    try:
        assert deliver.ensure(host, root).files == 0
    finally:
        host.close()
