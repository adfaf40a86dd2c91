"""Several clients in one run (clients: N), on text and in a real shell: each client's plan in
its own scratch directory, their processes started together and timed each, and the run's
numbers from theirs. Expected values are hand computations: a common window read off the
progress points by eye, sums and maxima of a few numbers."""

from __future__ import annotations

import subprocess

import pytest

from perfpost import tools
from perfpost.run import hostscript
from perfpost.run.cell import clients
from perfpost.tools.base import Metric

WORK = f"/var/tmp/x/{hostscript.SCRATCH_PREFIX}0123456789ab"


def test_each_client_plans_in_a_scratch_directory_of_its_own():
    dd = tools.get("dd")
    params = {"dir": "/var/tmp/x", "mode": "write", "bs": "4k", "count": 4, "clients": 3}
    combined, each = clients.plan(dd, params, WORK, 3)
    assert [c.workdir for c in each] == [f"{WORK}/{WORK.rsplit('/', 1)[1]}-c{i}" for i in (1, 2, 3)]
    # Every client's dd writes into its own directory; their logs are kept apart.
    assert len(combined.measure) == 3
    for i, (proc, c) in enumerate(zip(combined.measure, each, strict=True), start=1):
        assert any(a.startswith(f"of={c.workdir}/") for a in proc.argv), proc.argv
        assert proc.log == f"client-{i}.{c.plan.measure[0].log}"
        assert c.procs == (i,)
    # {run} is each client's own: a path on a cluster is never shared by two clients.
    assert len({c.workdir.rsplit("/", 1)[1] for c in each}) == 3


def test_a_client_reads_its_own_logs_by_the_tools_names():
    c = clients.Client(2, "/w", None, (2,), {"client-2.dd.log": "dd.log"})  # type: ignore[arg-type]
    texts = {"client-1.dd.log": "one", "client-2.dd.log": "two"}
    assert c.texts(texts) == {"dd.log": "two"}
    assert c.kept("dd.log") == "client-2.dd.log"


def test_the_clients_processes_start_together_and_are_timed_each(tmp_path):
    logdir = tmp_path / f"{hostscript.SCRATCH_PREFIX}logs"
    logdir.mkdir()
    from perfpost.tools.base import Proc

    procs = [
        Proc(("sh", "-c", "sleep 0.3"), "a.log"),
        Proc(("sh", "-c", "sleep 0.6; exit 4"), "b.log"),
    ]
    script = hostscript.measure_script("measure", str(logdir), procs, each=True)
    out = subprocess.run(["sh", "-c", script], capture_output=True, text=True, check=False)
    got = hostscript.parse_procs(out.stdout)
    step = hostscript.parse_markers(out.stdout)["measure"]
    assert set(got) == {1, 2}
    (s1, e1, r1), (s2, e2, r2) = got[1], got[2]
    assert (r1, r2) == (0, 4)
    assert step.exit_codes == (0, 4)
    assert abs(s1 - s2) < 0.1  # started by one shell, one after the other
    assert 0.3 <= e1 - s1 < 0.55
    assert 0.6 <= e2 - s2 < 0.85
    assert step.start <= min(s1, s2)
    assert step.end >= max(e1, e2)


def rows(points):
    return [{"at": at, "completed": c, "total": 100} for at, c in points]


def test_the_common_window_runs_from_the_last_start_to_the_first_end():
    # Client 1 measures from t=10 to t=14, client 2 from t=11 to t=16: the window is 11..14.
    one = rows([(9.0, 0), (10.0, 10), (12.0, 30), (14.0, 50), (15.0, 100)])
    two = rows([(11.0, 5), (13.0, 25), (16.0, 55)])
    w = clients.common_window([one, two])
    assert isinstance(w, clients.Window)
    assert (w.start, w.end, w.seconds) == (11.0, 14.0, 3.0)
    # Client 1: 20 at t=11 (halfway from 10 to 30), 50 at t=14: 30 operations.
    # Client 2: 5 at t=11, at t=14 one third of the way from 25 to 55: 35; 30 operations.
    assert w.operations == pytest.approx((30.0, 30.0))
    assert w.rates() == pytest.approx([10.0, 10.0])


def test_clients_that_never_measured_together_have_no_window():
    one = rows([(1.0, 10), (2.0, 20)])
    two = rows([(5.0, 10), (6.0, 20)])
    why = clients.common_window([one, two])
    assert isinstance(why, str)
    assert "never all measuring at once" in why
    assert "client 1" in why
    assert "client 2" in why


def test_a_client_with_one_progress_line_inside_its_run_has_no_window():
    one = rows([(1.0, 10), (2.0, 20)])
    two = rows([(1.0, 0), (1.5, 50), (3.0, 100)])
    why = clients.common_window([one, two])
    assert isinstance(why, str)
    assert "client 2" in why


def test_rates_and_counts_add_up_times_are_the_slowest():
    each = [
        [
            Metric("rate", 10.0, "1/s"),
            Metric("bytes", 100.0, "B"),
            Metric("elapsed", 3.0, "s"),
            Metric("rate_source_progress_window", 1.0, "count"),
            Metric("ratio", 0.2, ""),
            Metric("only_here", 1.0, "count"),
        ],
        [
            Metric("rate", 12.5, "1/s"),
            Metric("bytes", 50.0, "B"),
            Metric("elapsed", 4.5, "s"),
            Metric("rate_source_progress_window", 1.0, "count"),
            Metric("ratio", 0.4, ""),
        ],
    ]
    got = {m.name: m.value for m in clients.combine(each, None, None, ("rate_source_",))}
    assert got == pytest.approx(
        {
            "rate": 22.5,
            "bytes": 150.0,
            "elapsed": 4.5,
            "rate_source_progress_window": 1.0,
            "ratio": 0.3,
        }
    )
    assert "only_here" not in got  # one client's number is not the run's


def test_with_a_window_the_rate_is_the_windows():
    each = [
        [Metric("rate", 11.0, "1/s"), Metric("rate_time", 4.0, "s")],
        [Metric("rate", 9.0, "1/s"), Metric("rate_time", 5.0, "s")],
    ]
    w = clients.Window(100.0, 103.0, (30.0, 24.0))
    got = {m.name: m.value for m in clients.combine(each, w, ("rate", "rate_time", "ops"))}
    assert got["rate"] == pytest.approx(54 / 3)
    assert got["rate_time"] == 3.0
    assert got["ops"] == 54


def test_overlap_of_the_clients_own_runs():
    got = clients.overlap([(0.0, 10.0), (0.5, 8.0), (0.25, 9.0)])
    assert got == {"start_spread": 0.5, "all_running": 7.5, "longest": 10.0}


def test_clients_is_a_parameter_of_every_tool_that_runs_processes_of_its_own():
    for name in ("command", "dd", "fio", "freon"):
        assert "clients" in tools.get(name).PARAMS_SCHEMA["properties"], name
    # teragen's run is a job on YARN, not processes on the host.
    assert "clients" not in tools.get("teragen").PARAMS_SCHEMA["properties"]


def test_several_clients_with_an_agent_are_refused_naming_the_key():
    from perfpost.errors import ConfigError
    from perfpost.plan.build import build_plan

    config = {
        "experiments": {
            "a": {
                "tool": "freon",
                "params": {"subcommand": "ockg", "dir": "/var/tmp/x", "clients": 2},
                "profile": True,
            }
        }
    }
    with pytest.raises(ConfigError, match=r"experiments\.a\[default\]\.params\.clients"):
        build_plan(config)
