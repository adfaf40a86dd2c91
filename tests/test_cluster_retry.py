"""A cluster start that fails is tried once more, from a start of its own: daemons on a busy
machine lose races of their own (Ozone 2.2.0's SCM, elected while it still starts, registers
its HA metrics twice and never serves). A configuration that cannot work fails twice."""

import json

import pytest

from perfpost.clusters.base import ClusterError, ClusterSpec
from perfpost.run import deploy

HOSTS = {"localhost": {"name": "localhost"}}


def spec(tmp_path) -> ClusterSpec:
    return ClusterSpec(
        name="c",
        kind="hdfs",
        version="3.4.2",
        roles={"namenode": ["localhost"], "datanode": ["localhost"]},
        dir=str(tmp_path / "dirs"),
        home=str(tmp_path / "home"),
    )


def starting(monkeypatch, failures: int, error: type[Exception] = ClusterError) -> list:
    """Replace the daemons' start: the first ``failures`` fail, the next come up at once
    (with no daemon to stop)."""
    calls: list = []

    def start(kind, dep, timeout, log=None):
        calls.append(dep)
        if len(calls) <= failures:
            raise error(f"the scm on localhost did not serve (start {len(calls)})")

    monkeypatch.setattr(deploy, "start", start)
    return calls


def state(tmp_path, s: ClusterSpec, n: int) -> dict:
    return json.loads(
        (tmp_path / "results/clusters" / s.ident() / f"start-{n}/state.json").read_text()
    )


def log(tmp_path, s: ClusterSpec, n: int) -> str:
    return (tmp_path / "results/clusters" / s.ident() / f"start-{n}/cluster.log").read_text()


@pytest.mark.parametrize("error", [ClusterError, RuntimeError])
def test_a_failed_start_is_tried_again_as_the_next_start(tmp_path, monkeypatch, error):
    calls = starting(monkeypatch, failures=1, error=error)
    s = spec(tmp_path)
    with deploy.lease([s], HOSTS, root=tmp_path) as held:
        assert [c["start"] for c in held.records()] == [2]
    assert len(calls) == 2
    first = state(tmp_path, s, 1)
    assert first["status"] == "failed"
    assert "did not serve (start 1)" in first["reason"]
    assert "trying once more, as start-2" in log(tmp_path, s, 1)
    assert state(tmp_path, s, 2)["status"] == "stopped"


def test_a_start_that_fails_twice_fails_with_the_second_reason(tmp_path, monkeypatch):
    calls = starting(monkeypatch, failures=2)
    s = spec(tmp_path)
    with pytest.raises(ClusterError, match=r"did not serve \(start 2\)"):
        with deploy.lease([s], HOSTS, root=tmp_path):
            pass
    assert len(calls) == 2
    assert [state(tmp_path, s, n)["status"] for n in (1, 2)] == ["failed", "failed"]
    assert "trying once more" not in log(tmp_path, s, 2)
    # The run's next cell of it is told, without a third start.
    with pytest.raises(ClusterError, match="could not be started in this run"):
        with deploy.lease([s], HOSTS, root=tmp_path):
            pass
    assert len(calls) == 2
