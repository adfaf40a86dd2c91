"""Host keys as OpenSSH keeps them: known_hosts read (plain and hashed names, ``@revoked``
and ``@cert-authority`` lines kept) and, with ``trust_new_keys``, a new host's key appended as
one line. paramiko's own loader stops at the first line it cannot read and its AutoAddPolicy
(Fabric's default) accepts any key and rewrites the whole file: a connection gets this
module's policy instead (:func:`verify`)."""

from __future__ import annotations

import base64
import fcntl
import hashlib
import hmac
import os
from pathlib import Path
from typing import Any

from perfpost.errors import HostError


def known_hosts_paths(spec: dict[str, Any]) -> list[Path]:
    """The known_hosts file a host's keys are checked against (the inventory's, else the
    user's)."""
    if spec.get("known_hosts"):
        return [Path(os.path.expanduser(spec["known_hosts"]))]
    return [Path(os.path.expanduser("~/.ssh/known_hosts"))]


def key_name(host: str, port: int) -> str:
    """A host's name in known_hosts, as OpenSSH writes it (``[host]:port`` off port 22)."""
    return host if port == 22 else f"[{host}]:{port}"


def _names_match(names: str, hostname: str) -> bool:
    """Whether a known_hosts line's first field names ``hostname``: plainly (comma-separated)
    or hashed (``|1|salt|hmac``, as ``HashKnownHosts`` writes)."""
    for name in names.split(","):
        if name == hostname:
            return True
        if name.startswith("|1|"):
            try:
                salt, digest = (base64.b64decode(x) for x in name[3:].split("|", 1))
            except (ValueError, TypeError):
                continue
            mine = hmac.new(salt, hostname.encode(), hashlib.sha1).digest()
            if hmac.compare_digest(mine, digest):
                return True
    return False


def _known_lines(text: str) -> list[tuple[str, str, str, str]]:
    """(marker, names, key type, base64 key) of every host key line; comments, blank and
    unreadable lines are skipped (and kept in the file as they are)."""
    out = []
    for line in text.splitlines():
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        marker = fields.pop(0) if fields[0].startswith("@") else ""
        if len(fields) >= 3:
            out.append((marker, fields[0], fields[1], fields[2]))
    return out


class KeyChanged(HostError):
    """The host offers a key that known_hosts does not hold for it, or holds as revoked."""


def trust_key(path: Path, hostname: str, keytype: str, key: str) -> bool:
    """Append ``hostname keytype key`` to the known_hosts file ``path``, as OpenSSH writes a
    new host (``[host]:port`` for a port other than 22), unless it is there already.

    The file is never rewritten: every other line (``@cert-authority``, ``@revoked``,
    comments, hashed names) stays as it is, in its order. An exclusive lock is held while
    the file is re-read and appended to, so parallel cells trusting hosts at once neither
    lose a line nor add one twice. A key that differs from the one already recorded for
    the host, or is revoked, raises :class:`KeyChanged`. Returns whether a line was added.
    """
    if not path.parent.exists():
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(fd, "r+b") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)  # released when the file is closed
        data = fh.read()
        known = _known_lines(data.decode(errors="replace"))
        if any(m == "@revoked" and (t, k) == (keytype, key) for m, _, t, k in known):
            raise KeyChanged(f"host key rejected: the key of {hostname} is revoked in {path}")
        mine = [(t, k) for m, names, t, k in known if not m and _names_match(names, hostname)]
        if (keytype, key) in mine:
            return False  # another cell added it meanwhile
        if mine:
            raise KeyChanged(
                f"host key rejected: {hostname} offers a {keytype} key that is not the one "
                f"in {path}; if the host was reinstalled, remove the old line "
                f"(ssh-keygen -R '{hostname}') and add the new key after checking it"
            )
        sep = b"" if not data or data.endswith(b"\n") else b"\n"
        fh.write(sep + f"{hostname} {keytype} {key}\n".encode())
        fh.flush()
        os.fsync(fh.fileno())
    return True


class AppendNewKeys:
    """paramiko's missing-host-key policy for ``trust_new_keys``: the new key is appended to
    known_hosts by :func:`trust_key` (paramiko's own AutoAddPolicy rewrites the whole file,
    dropping the lines it cannot read, and races with other cells)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def missing_host_key(self, client: Any, hostname: str, key: Any) -> None:
        trust_key(self.path, hostname, key.get_name(), key.get_base64())
        client.get_host_keys().add(hostname, key.get_name(), key)


def load_known_hosts(client: Any, path: Path) -> None:
    """Load the plain host keys of ``path`` into ``client``. paramiko's own loader stops at
    the first line it cannot read (``@cert-authority``); those lines are skipped here, and a
    key a ``@revoked`` line names is not loaded."""
    from paramiko.hostkeys import HostKeyEntry

    try:
        text = path.read_text(errors="replace")
    except FileNotFoundError:
        return
    known = _known_lines(text)
    revoked = {(t, k) for m, _, t, k in known if m == "@revoked"}
    keys = client.get_host_keys()
    for marker, names, keytype, key in known:
        if marker or (keytype, key) in revoked:
            continue
        try:
            entry = HostKeyEntry.from_line(f"{names} {keytype} {key}")
        except Exception:  # an unknown key type: OpenSSH skips it too
            continue
        if entry is None:
            continue
        for name in entry.hostnames:
            keys.add(name, entry.key.get_name(), entry.key)


def verify(client: Any, spec: dict[str, Any]) -> None:
    """Give ``client`` (a paramiko SSHClient) the inventory's host-key policy: the keys of
    its known_hosts file, no unknown key unless ``trust_new_keys`` (then appended as one
    line), never a changed one."""
    from paramiko import RejectPolicy

    files = known_hosts_paths(spec)
    for path in files:
        load_known_hosts(client, path)
    if spec.get("trust_new_keys"):
        # An explicit opt-in: record a new host's key (a changed key is still refused).
        client.set_missing_host_key_policy(AppendNewKeys(files[0]))
    else:
        client.set_missing_host_key_policy(RejectPolicy())
