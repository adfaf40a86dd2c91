"""The volumes and buckets a config names, made by one Ozone shell JVM in batch mode, and one
by one by a shell that has no batch mode (Ozone before 2.0).

Expected values: the commands by hand from the config's buckets; the refusal's form is what
Ozone 2.2.0's own shell (picocli) printed here for an option it does not know:
``Unknown options: '--executeX', 'volume create /v', ...``."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from perfpost.clusters.base import ClusterError
from perfpost.clusters.ozone import SHELL_MAIN, Ozone


class Shell:
    """A deployment's run_java that records each shell command line, refusing ``--execute``
    as a shell without batch mode does, or failing every call with ``fails``."""

    def __init__(self, batch: bool, fails: str = "") -> None:
        self.batch, self.fails, self.calls = batch, fails, []

    def run_java(self, host, role, main, args, opts, what, timeout=300.0):
        assert main == SHELL_MAIN
        self.calls.append(list(args))
        if self.fails:
            raise ClusterError(f"{what} failed; create.log says:\n{self.fails}")
        if "--execute" in args and not self.batch:
            quoted = ", ".join(f"'{a}'" for a in args)
            raise ClusterError(f"{what} failed; create.log says:\nUnknown options: {quoted}")
        return ""


def prepare(shell: Shell, buckets: list[str]) -> list[list[str]]:
    spec = SimpleNamespace(buckets=buckets, roles={"om": ["h1"], "scm": ["h1"]})
    Ozone(SimpleNamespace(spec=spec, run_java=shell.run_java)).prepare()
    return shell.calls


BUCKETS = ["vol1/bucket1", "vol1/bucket2", "vol2/b"]
BY_HAND = [
    ["volume", "create", "/vol1"],
    ["bucket", "create", "/vol1/bucket1"],
    ["bucket", "create", "/vol1/bucket2"],
    ["volume", "create", "/vol2"],
    ["bucket", "create", "/vol2/b"],
]


def test_every_volume_once_and_every_bucket_in_one_shell():
    calls = prepare(Shell(batch=True), BUCKETS)
    assert calls == [[a for c in BY_HAND for a in ("--execute", " ".join(c))]]


def test_a_shell_without_batch_mode_makes_them_one_by_one():
    calls = prepare(Shell(batch=False), BUCKETS)
    assert calls[1:] == BY_HAND
    assert calls[0][0] == "--execute"


def test_a_command_that_fails_in_the_batch_fails_the_start_with_what_the_shell_said():
    said = "VOLUME_ALREADY_EXISTS Volume already exists"
    with pytest.raises(ClusterError, match=said):
        prepare(Shell(batch=True, fails=said), BUCKETS)


def test_no_bucket_no_shell():
    assert prepare(Shell(batch=True), []) == []
