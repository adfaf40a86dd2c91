"""The map tasks' counts of an instrumented teragen on YARN, as a real run left them: a job
that launched 4 map attempts and killed 1 (a speculative copy stopped before its JVM
started), and the 3 files its task JVMs wrote (tests/data/byteman/speculative/, copied from
that run's raw/)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from perfpost.instrument import agent
from perfpost.tools.base import Metric

DATA = Path(__file__).parent / "data" / "byteman" / "speculative"


class Host:
    def run(self, command: str, timeout: float) -> SimpleNamespace:
        assert command.startswith("ls -1 -- ")
        return SimpleNamespace(stdout="\n".join(p.name for p in sorted(DATA.glob("*.json"))))


class Cell:
    logdir = "/tmp/perfpost-x-logs"
    host = Host()

    def __init__(self) -> None:
        self.record: dict = {"instrument": {}}

    def read_log(self, path: str, name: str, host: object = None) -> str:
        return (DATA / Path(path).name).read_text()


@pytest.fixture(autouse=True)
def quick(monkeypatch):
    monkeypatch.setattr(agent, "TASK_WAIT", 0.2)
    monkeypatch.setattr(agent, "KILLED_GRACE", 0.1)
    monkeypatch.setattr(agent.time, "sleep", lambda s: None)


def _job(launched: int, killed: int | None) -> list[Metric]:
    out = [Metric("map_tasks", float(launched), "count")]
    if killed is not None:
        out.append(Metric("map_tasks_killed", float(killed), "count"))
    return out


def test_the_maps_the_job_kept_are_counted_without_the_one_it_killed():
    cell = Cell()
    metrics, why = agent.Agent()._task_counts(cell, _job(4, 1))
    assert why is None
    got = {m.name: m.value for m in metrics}
    # The three files' own write calls, summed by hand.
    writes = sum(json.loads(p.read_text())["ops"]["write"]["calls"] for p in DATA.glob("*.json"))
    assert got["map-write.call"] == writes
    assert len(cell.record["instrument"]["tasks"]) == 3


def test_a_missing_map_that_was_not_killed_still_fails_the_run():
    metrics, why = agent.Agent()._task_counts(Cell(), _job(4, None))
    assert metrics == []
    assert why.startswith("counts of 3 of 4 map tasks arrived in /tmp/perfpost-x-logs/tasks")
    metrics, why = agent.Agent()._task_counts(Cell(), _job(5, 1))
    assert "counts of 3 of 5 launched map tasks (1 killed by the job, which may not write)" in why
