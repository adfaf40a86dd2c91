"""A host's set-up and teardown steps (perfpost.run.hostsetup) on this machine, and how the
plan reads them from the config: steps run in order until one fails, what they printed kept,
a teardown run once, axis values filled and the shell's own braces left alone."""

from __future__ import annotations

import copy
import os
import shutil
import sys

import pytest

from perfpost.clusters.base import ClusterSpec, Node, setup_spec
from perfpost.plan.build import build_plan
from perfpost.plan.loading import load_yaml
from perfpost.run import hostscript, hostsetup
from tests.conftest import ROOT
from tests.e2e import QUIET_SCM


def _node(localhost) -> Node:
    return Node(localhost, {"name": "localhost"})


def test_steps_run_in_order_until_one_fails_and_say_why(localhost):
    steps = [
        {"run": "printf '%s|%s\\n' \"a b\" '$HOME'", "sudo": False},  # quoting kept as typed
        {"run": "echo 'no device' >&2; exit 3", "sudo": False},
        {"run": "echo never", "sudo": False},
    ]
    done = hostsetup.run_steps(_node(localhost), "setup", steps, None)
    assert [(d["step"], d["exit"]) for d in done] == [(1, 0), (2, 3)]
    assert done[0]["output"] == "a b|$HOME\n"
    assert hostsetup.reason(hostsetup.failed(done)) == (
        "the setup of localhost failed at step 2 (`echo 'no device' >&2; exit 3`, exit 3):\n"
        "no device"
    )


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("sudo"), reason="needs root and sudo")
def test_as_root_asks_no_password_it_cannot_get(localhost):
    # As root the step runs as it is; as a user sudo does not let in (nobody), `sudo -n`
    # refuses at once instead of waiting at a prompt nobody answers.
    step = {"run": "id -u", "sudo": True}
    (d,) = hostsetup.run_steps(_node(localhost), "setup", [step], None)
    assert (d["exit"], d["output"]) == (0, "0\n")
    as_nobody = "setpriv --reuid=65534 --regid=65534 --clear-groups sh -c " + hostscript.quote(
        [hostscript.quote(["sh", "-c", hostsetup.script(step)])]
    )
    got = localhost.run(as_nobody, 20)
    assert not got.timed_out
    assert got.exit_code != 0
    assert "sudo" in got.stdout + got.stderr


def test_a_python_step_gets_a_connection_and_its_failure_is_its_output(localhost, tmp_path):
    fab = tmp_path / "fab.py"
    fab.write_text(
        "def hello(c):\n    return c.run('echo from the connection', hide=True).stdout.strip()\n"
        "def broken(c):\n    raise RuntimeError('no such pool')\n"
    )
    ok, bad = (
        hostsetup.run_steps(_node(localhost), "setup", [{"python": f"{fab}:{n}"}], None)[0]
        for n in ("hello", "broken")
    )
    assert (ok["exit"], ok["output"]) == (0, "from the connection\n")
    assert (bad["exit"], bad["output"]) == (1, "RuntimeError: no such pool\n")


def test_a_python_step_that_overruns_is_timed_out_as_a_shell_step_is(
    localhost, tmp_path, monkeypatch
):
    fab = tmp_path / "fab.py"
    fab.write_text("import time\ndef stuck(c):\n    time.sleep(30)\n")
    monkeypatch.setattr(hostsetup, "STEP_TIMEOUT", 0.5)
    before = sys.stdout, sys.stderr
    (d,) = hostsetup.run_steps(_node(localhost), "setup", [{"python": f"{fab}:stuck"}], None)
    assert (d["exit"], d["timed_out"]) == (None, True)
    # The stuck function still runs with its output redirected; the run's is back.
    assert (sys.stdout, sys.stderr) == before
    assert d["seconds"] < 10  # not the 30 s the function sleeps
    assert hostsetup.reason(d).startswith(
        f"the setup of localhost failed at step 1 (`python {fab}:stuck`, timed out after 0.5 s)"
    )


def test_a_teardown_runs_once(localhost, tmp_path):
    count = tmp_path / "count"
    spec = setup_spec({"setup": [], "teardown": [{"run": f"echo x >> {count}"}]}, "localhost")

    class Dep:
        def __init__(self) -> None:
            self.spec = spec

        def node(self, host: str) -> Node:
            return _node(localhost)

    state: dict = {}
    hostsetup.restore(Dep(), state)
    hostsetup.restore(Dep(), state)
    assert count.read_text() == "x\n"
    assert [d["exit"] for d in state["teardown"]] == [0]


def _plan(tmp_path, **exp):
    cfg = {
        "experiments": {
            "w": {"tool": "dd", "params": {"dir": "/var/tmp/p", "bs": "4k", "count": 1}, **exp}
        }
    }
    return build_plan(copy.deepcopy(cfg))


def test_the_plan_fills_axes_and_leaves_the_shells_braces(tmp_path):
    plan = _plan(
        tmp_path,
        axes={"size": ["16m", "32m"]},
        setup=[
            "mount -o size={size} x /m",
            {"run": "{ a; b; } && echo ${HOME} {other}", "sudo": True},
        ],
        teardown=["umount /m"],
    )
    exp = plan.experiments["w"]
    assert exp.setups["size=32m"] == {
        "setup": [
            {"run": "mount -o size=32m x /m", "sudo": False},
            {"run": "{ a; b; } && echo ${HOME} {other}", "sudo": True},
        ],
        "teardown": [{"run": "umount /m", "sudo": False}],
    }
    # The cell holds its host's set-up as one of its clusters; one per host and steps.
    spec = plan.spec("w", "size=16m", "localhost", 1)
    (held,) = spec.cluster_specs()
    assert (held.kind, held.roles) == ("setup", {"host": ["localhost"]})
    assert held.ident() != plan.spec("w", "size=32m", "localhost", 1).cluster_specs()[0].ident()
    # A set-up is part of what was measured: another one is another measurement.
    bare = _plan(tmp_path, axes={"size": ["16m", "32m"]}).spec("w", "size=16m", "localhost", 1)
    assert bare.measurement_id() != spec.measurement_id()


def test_clusters_without_a_set_up_keep_the_ids_earlier_runs_made():
    # The default config's clusters, as a run made before set-ups existed named them
    # (results/clusters/ of a default run); that config's Ozones had no one-thread
    # container-report setting yet (6c48d0f gave them one, and so new ids).
    config = load_yaml(ROOT / "config" / "config.yaml")
    for cluster in config["clusters"].values():
        site = cluster.get("ozone-site", {})
        for key in QUIET_SCM:
            site.pop(key, None)
        if "ozone-site" in cluster and not site:
            del cluster["ozone-site"]
    plan = build_plan(config)
    idents = {
        ClusterSpec.from_dict(c).ident()
        for e in plan.experiments.values()
        for specs in e.cluster_specs.values()
        for c in specs
    }
    assert idents == {
        "hdfs-d6d30c5524",
        "ozone-0e2b042225",
        "ozone-80cae9d1b7",
        "ozone-ad369d7145",
        "ozone-ebafe6e2fe",
        "ozone-fd602c5119",
    }


def test_a_step_on_another_host_is_that_hosts_set_up_and_the_own_hosts_keeps_its_id():
    from perfpost.clusters.base import setup_spec, setup_specs

    own = {"setup": [{"run": "mount x", "sudo": True}], "teardown": [{"run": "umount x"}]}
    # Without a step naming a host: the one set-up, the same as before, the same id.
    (alone,) = setup_specs(own, "h2")
    assert alone.ident() == setup_spec(own, "h2").ident()
    both = {
        "setup": [*own["setup"], {"run": "iperf3 -s -D", "sudo": False, "host": "h1"}],
        "teardown": [*own["teardown"], {"run": "kill it", "sudo": False, "host": "h1"}],
    }
    mine, server = setup_specs(both, "h2")
    assert (mine.roles, server.roles) == ({"host": ["h2"]}, {"host": ["h1"]})
    assert mine.ident() == alone.ident()
    assert server.steps == {
        "setup": [{"run": "iperf3 -s -D", "sudo": False}],
        "teardown": [{"run": "kill it", "sudo": False}],
    }
    # Cells on two hosts that need the same server hold one set-up of h1.
    (server3,) = setup_specs({"setup": [both["setup"][1]], "teardown": [both["teardown"][1]]}, "h3")
    assert server3.ident() == server.ident()
