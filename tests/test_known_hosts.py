"""trust_new_keys against real sshd hosts: known_hosts gains one line per new host, keeps
every other byte, and survives cells trusting hosts at the same time."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import pytest

from perfpost.run.hostkeys import KeyChanged, trust_key
from perfpost.run.remote import HostError, RemoteHost
from tests.conftest import host_spec


def new_key(path: Path) -> tuple[str, str]:
    """(key type, base64) of a fresh ed25519 key made by ssh-keygen."""
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)
    keytype, b64 = Path(f"{path}.pub").read_text().split()[:2]
    return keytype, b64


def host_line(bed, name: str) -> str:
    """The line OpenSSH writes for a new host: its name ([address]:port off port 22) and the
    key from the host's own public key file."""
    h = bed.host(name)
    keyname = h.address if h.port == 22 else f"[{h.address}]:{h.port}"
    pub = Path(h.config).parent / "ssh_host_ed25519_key.pub"
    keytype, b64 = pub.read_text().split()[:2]
    return f"{keyname} {keytype} {b64}\n"


def hashed(tmp_path: Path, line: str) -> str:
    """``line`` with its host name hashed by ssh-keygen -H, as HashKnownHosts writes it."""
    f = tmp_path / "to-hash"
    f.write_text(line)
    subprocess.run(["ssh-keygen", "-q", "-H", "-f", str(f)], check=True, capture_output=True)
    out = f.read_text()
    assert out.startswith("|1|")
    return out


def trust(bed, name: str, known: Path) -> None:
    host = RemoteHost(host_spec(bed, name, known_hosts=str(known), trust_new_keys=True))
    try:
        assert host.run("true", 30).exit_code == 0
    finally:
        host.close()


def test_trusting_a_new_host_appends_one_line_and_keeps_every_other_byte(testbed, tmp_path):
    ca = new_key(tmp_path / "ca")
    old = new_key(tmp_path / "old")
    other = new_key(tmp_path / "other")
    known = tmp_path / "known_hosts"
    before = (
        "# hosts of the lab, kept by hand\n"
        f"@cert-authority *.example.com {ca[0]} {ca[1]}\n"
        f"@revoked * {old[0]} {old[1]}\n"
        + hashed(tmp_path, f"db1.example.com {other[0]} {other[1]}\n")
        + f"build.example.com,10.9.9.9 {other[0]} {other[1]} build box\n"
    ).encode()
    known.write_bytes(before)
    trust(testbed, "h1", known)
    assert known.read_bytes() == before + host_line(testbed, "h1").encode()
    trust(testbed, "h1", known)  # known now: nothing more is written
    assert known.read_bytes() == before + host_line(testbed, "h1").encode()


def test_a_missing_known_hosts_is_created_private(testbed, tmp_path):
    known = tmp_path / "home" / ".ssh" / "known_hosts"
    trust(testbed, "h2", known)
    assert known.read_text() == host_line(testbed, "h2")
    assert known.stat().st_mode & 0o777 == 0o600
    assert known.parent.stat().st_mode & 0o777 == 0o700


def test_a_file_without_a_final_newline_gets_its_line_on_a_line_of_its_own(testbed, tmp_path):
    known = tmp_path / "known_hosts"
    known.write_bytes(b"# no newline at the end")
    trust(testbed, "h3", known)
    assert known.read_text() == "# no newline at the end\n" + host_line(testbed, "h3")


@pytest.mark.parametrize("same", [False, True], ids=["different-hosts", "one-host"])
def test_cells_trusting_hosts_at_once_lose_no_line_and_add_none_twice(testbed, tmp_path, same):
    known = tmp_path / "known_hosts"
    known.write_text("# kept\n")
    names = ["h1"] * 6 if same else ["h1", "h2", "h3"] * 2
    start = threading.Barrier(len(names))
    errors = []

    def one(name: str) -> None:
        try:
            start.wait()
            trust(testbed, name, known)
        except BaseException as e:  # collected: a thread's failure must fail the test
            errors.append(e)

    threads = [threading.Thread(target=one, args=(n,)) for n in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert errors == []
    lines = known.read_text().splitlines(keepends=True)
    assert lines[0] == "# kept\n"
    assert sorted(lines[1:]) == sorted(host_line(testbed, n) for n in dict.fromkeys(names))


def test_a_hashed_entry_counts_and_a_changed_or_revoked_key_is_refused(tmp_path):
    mine = new_key(tmp_path / "mine")
    other = new_key(tmp_path / "other")
    known = tmp_path / "known_hosts"
    text = hashed(tmp_path, f"[db1.example.com]:2222 {mine[0]} {mine[1]}\n")
    known.write_text(text)
    assert not trust_key(known, "[db1.example.com]:2222", *mine)  # already there, hashed
    with pytest.raises(KeyChanged, match="not the one in"):
        trust_key(known, "[db1.example.com]:2222", *other)
    assert known.read_text() == text
    known.write_text(f"@revoked * {other[0]} {other[1]}\n")
    with pytest.raises(KeyChanged, match="revoked"):
        trust_key(known, "db2.example.com", *other)
    assert issubclass(KeyChanged, HostError)
