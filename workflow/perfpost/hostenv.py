"""Environment variables for a cell's commands, some of them secret.

The config sets variables per host and per experiment (``env:``). A plain value is part of the
benchmark's description and shows in records and posts. A value marked secret
(``{secret: VAR}``) is never in the config: it is read from perfpost's own environment
variable ``VAR`` when the cell runs, reaches the host's commands through their standard input
(never a command line), and is replaced by ``***`` in every log, record and post perfpost
writes. The cell spec, which Snakemake stores in its metadata, holds only the variable's name.

Nothing else of perfpost's environment reaches a command: on ``localhost`` it starts from
:data:`BASE_ENV` only, so the source variable of a secret (``PERF_S3_KEY``) or any other
variable perfpost happens to have is not handed to experiments that did not declare it. Over
SSH a command gets the login environment sshd gives (perfpost sends no variables), plus
``env``.

Settings can hold secrets too: a cluster's site keys (``fs.s3a.secret.key`` in ``core-site``)
and a tool's ``-D`` options (freon's ``generic``, teragen's ``defines``, ``-D`` in JVM
options). Those are given in the config itself; :func:`secret_setting` says which keys hold
one, and what perfpost keeps or shows of them (records, raw logs, a cluster's state and logs,
posts, ``perfpost compare``) has ``***`` for their values (:func:`mask_settings`, and the
values themselves, :func:`setting_secrets`, for a :class:`Redactor`). The tool and the daemons
get the real value.
"""

from __future__ import annotations

import functools
import itertools
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from perfpost.errors import PerfpostError
from perfpost.records import write_bytes_atomic

MASK = "***"

# The host name that means this machine: commands run here without SSH, from BASE_ENV.
LOCALHOST = "localhost"

# What a localhost command inherits from perfpost's environment, when set there: where to find
# programs (PATH, and the JVM through JAVA_HOME), who and where it is (HOME, USER, LOGNAME,
# TMPDIR), and the locale (LANG; LC_ALL is then set to C so tools print numbers one way).
# Everything else a command needs is declared with `env:`. TERM is left out: no command has
# a terminal.
BASE_ENV = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "TMPDIR", "JAVA_HOME")


def base(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The part of ``environ`` a localhost command starts from: :data:`BASE_ENV` and
    ``LC_ALL=C``, nothing else."""
    out = {name: environ[name] for name in BASE_ENV if name in environ}
    out["LC_ALL"] = "C"
    return out


def is_secret(value: Any) -> bool:
    return isinstance(value, dict) and "secret" in value


def public(env: Mapping[str, Any]) -> dict[str, str]:
    """What records and posts show: plain values as they are, secrets by their source only."""
    return {
        name: f"(secret, from ${value['secret']})" if is_secret(value) else str(value)
        for name, value in env.items()
    }


def missing(env: Mapping[str, Any], environ: Mapping[str, str] = os.environ) -> list[str]:
    """Names of the variables whose secret is not set in ``environ``."""
    return [n for n, v in env.items() if is_secret(v) and v["secret"] not in environ]


def resolve(
    env: Mapping[str, Any], environ: Mapping[str, str] = os.environ
) -> tuple[dict[str, str], list[str]]:
    """The values to export on the host, and the secret ones among them (for redaction)."""
    values: dict[str, str] = {}
    secrets: list[str] = []
    for name, value in env.items():
        if is_secret(value):
            source = value["secret"]
            if source not in environ:
                raise PerfpostError(
                    f"env.{name}: its secret comes from the environment variable {source}, "
                    "which is not set for perfpost"
                )
            values[name] = environ[source]
            if environ[source]:
                secrets.append(environ[source])
        else:
            values[name] = str(value)
    return values, secrets


# What the last part of a setting's key (dot-separated, lower case, '-' and '_' dropped) ends
# with when its value is a secret: passwords (``ssl.server.keystore.password``,
# ``javax.net.ssl.trustStorePassword``), secrets (``hadoop.http.authentication.signature.
# secret``), tokens (``fs.s3a.session.token``), credentials, and keys named for what they
# are (``aws.secretKey``, ``aws.accessKeyId``).
_SECRET_ENDS = (
    "password",
    "passwd",
    "secret",
    "token",
    "credential",
    "credentials",
    "secretkey",
    "accesskey",
    "accesskeyid",
    "apikey",
    "privatekey",
)
# A last part that is one of these is a secret whole (``ssl.keystore.pass``).
_SECRET_NAMES = ("pass", "pwd")
# ``<kind>.key`` as the last two parts: ``fs.s3a.secret.key``, ``fs.s3a.access.key``,
# ``fs.s3a.encryption.key``, ``fs.s3a.server-side-encryption.key``.
_KEY_KINDS = ("secret", "access", "encryption", "private", "session", "signing", "api", "account")
# ``-Dkey=value`` in a string of JVM or command-line options.
_DEFINE = re.compile(r"(?<![^\s=])-D\s*([^\s=]+)=(\S*)")


def secret_setting(key: str) -> bool:
    """Whether the setting ``key`` (a site key, a ``-D`` property) holds a secret as its
    value: one rule for every place perfpost keeps or shows settings.

    Its last part names a password, secret, token or credential (``*.password``,
    ``*password``, ``*.pass``, ``*.secret``, ``*.token``, ``*.credential(s)``,
    ``*secretKey``, ``*accessKeyId``), or its last two are ``<secret|access|encryption|
    private|session|signing|api|account>.key``, or it is an Azure account key
    (``fs.azure.account.key.<account>...``). A key that only speaks of a secret is not one,
    since its value is not: whether it is on, its algorithm, lifetime, file or provider
    (``hdds.block.token.enabled``, ``hdds.secret.key.algorithm``,
    ``hadoop.security.credential.provider.path``); the post shows those. Environment
    variables follow the same rule where they are settings (a cluster's ``env``)."""
    parts = [re.sub(r"[-_]", "", p) for p in key.lower().split(".")]
    last = parts[-1]
    if last in _SECRET_NAMES or last.endswith(_SECRET_ENDS):
        return True
    if last == "key" and len(parts) > 1 and parts[-2].endswith(_KEY_KINDS):
        return True
    return any(pair == ("account", "key") for pair in itertools.pairwise(parts))


def _masked(value: Any, found: list[str]) -> Any:
    """``value`` with every secret setting's value as :data:`MASK`; the values go to
    ``found``. Mappings by their keys, strings by their ``-Dkey=value`` options, lists (a
    command line) by their items and by ``-D`` followed by ``key=value``."""
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if isinstance(k, str) and secret_setting(k) and _scalar(v):
                if str(v):
                    found.append(str(v))
                    v = MASK
            else:
                v = _masked(v, found)
            out[k] = v
        return out
    if isinstance(value, list | tuple):
        items: list[Any] = []
        for i, v in enumerate(value):
            if isinstance(v, str) and i and value[i - 1] == "-D" and "=" in v:
                v = _define(v, found)  # freon's `-D key=value`
            elif isinstance(v, str) and v.startswith("-D") and "=" in v:
                v = "-D" + _define(v[2:], found)  # a whole argument: the value may hold spaces
            else:
                v = _masked(v, found)
            items.append(v)
        return items
    if isinstance(value, str) and "-D" in value:

        def one(m: re.Match[str]) -> str:
            if not secret_setting(m.group(1)) or not m.group(2):
                return m.group(0)
            found.append(m.group(2))
            return f"-D{m.group(1)}={MASK}"

        return _DEFINE.sub(one, value)
    return value


def _scalar(value: Any) -> bool:
    return isinstance(value, str | int | float) and not isinstance(value, bool)


def _define(text: str, found: list[str]) -> str:
    """``key=value`` with the value masked if the key holds a secret."""
    key, _, value = text.partition("=")
    if not secret_setting(key.strip()) or not value:
        return text
    found.append(value)
    return f"{key}={MASK}"


def mask_settings(value: Any) -> Any:
    """``value`` (site files, ``-D`` maps, a tool's params, JVM options, a command line as a
    list) as perfpost keeps and shows it: each secret setting's value (:func:`secret_setting`)
    replaced by :data:`MASK`. ``value`` itself is not changed: it is what the tool gets."""
    return _masked(value, [])


def setting_secrets(*values: Any) -> list[str]:
    """The secret settings' values in ``values``, for a :class:`Redactor`: wherever a tool or
    a daemon prints one (its log, an error), it is masked too."""
    found: list[str] = []
    for value in values:
        _masked(value, found)
    return list(dict.fromkeys(found))


def fingerprint(value: str) -> str:
    """A keyed digest of a secret setting's value, kept in its place so that two runs can be
    told to have had the same value or not without either being kept: an HMAC with a key of
    this user's (``$XDG_CONFIG_HOME/perfpost/mask.key``, made on first use, mode 0600), so
    that a weak password cannot be found from it by trying candidates. ``<key id>:<digest>``;
    digests made with different keys (on another machine) cannot be compared."""
    import hashlib
    import hmac

    key = _mask_key()
    digest = hmac.new(key, value.encode(), hashlib.sha256).hexdigest()[:24]
    return f"{hashlib.sha256(key).hexdigest()[:8]}:{digest}"


@functools.cache
def _mask_key() -> bytes:
    """This user's fingerprint key, made on first use; one of this process alone where none
    can be kept (its fingerprints then compare with no other run's)."""
    import secrets

    base = os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")
    path = Path(base) / "perfpost" / "mask.key"
    try:
        return path.read_bytes()
    except FileNotFoundError:
        pass
    except OSError:
        return secrets.token_bytes(32)
    tmp = path.with_name(f".mask.key.{os.getpid()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, secrets.token_bytes(32))
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)  # the first process to make one wins; the others read it
        except FileExistsError:
            pass
        finally:
            tmp.unlink()
        return path.read_bytes()
    except OSError:
        return secrets.token_bytes(32)


class Redactor:
    """Replaces secret values by ``***`` in text, JSON-like data and files."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        # Longest first: a secret that contains another is masked whole.
        self.secrets = sorted({s for s in secrets if s}, key=len, reverse=True)

    def __bool__(self) -> bool:
        return bool(self.secrets)

    def adding(self, secrets: Iterable[str]) -> Redactor:
        """A redactor that masks ``secrets`` too."""
        return Redactor([*self.secrets, *secrets])

    def text(self, text: str) -> str:
        for s in self.secrets:
            text = text.replace(s, MASK)
        return text

    def bytes(self, data: bytes) -> bytes:
        """Masked bytes: secrets are matched as their UTF-8 encoding, whatever else the
        output holds (a tool's log need not be valid text)."""
        for s in self.secrets:
            data = data.replace(s.encode(), MASK.encode())
        return data

    def write(self, path: str | Path, data: str | bytes) -> None:
        """Write a log perfpost keeps: masked in memory first, then written atomically, so
        no file under results ever holds a secret, not even for a moment."""
        raw = data.encode() if isinstance(data, str) else data
        write_bytes_atomic(path, self.bytes(raw))

    def data(self, value: Any) -> Any:
        if not self.secrets:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.data(k): self.data(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.data(v) for v in value]
        return value


class RedactingStream:
    """A text stream that masks secrets before they reach the real one (a job's log)."""

    def __init__(self, stream: Any, redactor: Redactor) -> None:
        self._stream = stream
        self._redactor = redactor

    def write(self, text: str) -> int:
        self._stream.write(self._redactor.text(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
