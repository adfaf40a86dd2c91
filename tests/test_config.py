"""Config validation: defaults, resolved parameters, and errors that name the key."""

import copy

import pytest
import yaml

from perfpost.errors import ConfigError
from perfpost.plan.config import build_plan, check_secrets, load_yaml
from tests.conftest import ROOT
from tests.mistakes import GOOD, MISTAKES, config_text

BASE = {
    "experiments": {
        "w": {
            "tool": "dd",
            "params": {"dir": "{storage}", "bs": "4k", "count": 10},
            "axes": {"storage": {"disk": "/var/tmp/p", "mem": "/dev/shm/p"}, "conv": ["fsync"]},
        }
    }
}


def plan_of(change=None):
    cfg = copy.deepcopy(BASE)
    if change:
        change(cfg)
    return build_plan(cfg)


def test_defaults_are_filled_from_the_schema():
    plan = plan_of()
    exp = plan.experiments["w"]
    assert (exp.repeats, exp.hosts, exp.after, exp.sync_threshold) == (3, ["localhost"], [], 0.1)
    assert exp.title == "w"
    assert plan.host_limits() == {"localhost": 1}


def test_axes_fill_params_and_templates():
    exp = plan_of().experiments["w"]
    params = exp.resolved["storage=mem,conv=fsync"]
    assert params["dir"] == "/dev/shm/p"
    assert params["conv"] == "fsync"  # an axis named like a parameter sets it
    assert params["mode"] == "write"  # adapter default


def test_single_field_template_keeps_the_axis_type():
    def change(cfg):
        cfg["experiments"]["w"]["params"]["count"] = "{blocks}"
        cfg["experiments"]["w"]["axes"]["blocks"] = [100, 200]

    exp = plan_of(change).experiments["w"]
    assert exp.resolved["storage=disk,conv=fsync,blocks=200"]["count"] == 200


def test_jobs_cover_cells_hosts_and_repeats():
    jobs = list(plan_of().jobs())
    assert len(jobs) == 2 * 3
    assert {(j.cell, j.repeat) for j in jobs} == {
        (c, r) for c in ("storage=disk,conv=fsync", "storage=mem,conv=fsync") for r in (1, 2, 3)
    }


@pytest.mark.parametrize("mistake", MISTAKES, ids=[m[0] for m in MISTAKES])
def test_mistakes_are_refused_with_the_key_path(mistake, tmp_path):
    _name, change, where, fragment = mistake
    path = tmp_path / "config" / "config.yaml"
    path.parent.mkdir()
    path.write_text(config_text(GOOD, change))
    with pytest.raises(ConfigError) as e:
        check_secrets(build_plan(load_yaml(path)), environ={})
    assert where in e.value.where, e.value
    assert fragment in e.value.message, e.value


def test_duplicate_yaml_keys_are_refused_with_their_lines(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("experiments:\n  a:\n    tool: dd\n  a:\n    tool: dd\n")
    with pytest.raises(ConfigError) as e:
        load_yaml(path)
    assert str(path) in str(e.value)
    assert "duplicate key 'a' (first at line 2)" in str(e.value)
    assert "line 4" in str(e.value)


def test_the_shipped_default_config_is_valid():
    from tests.conftest import ROOT

    plan = build_plan(load_yaml(ROOT / "config" / "config.yaml"))
    assert set(plan.experiments) == {
        "dd-fsync",
        "local-reads",
        "onefile",
        "hcfs",
        "ratis-placement",
        "teragen",
    }
    assert len(plan.experiments["local-reads"].cells) == 12


@pytest.mark.parametrize(
    "example", sorted(p.name for p in (ROOT / "config" / "examples").glob("*.yaml"))
)
def test_every_example_config_builds_a_plan(example):
    """What the README tells people to run is a valid config (with the testbed's inventory
    where it names the testbed's hosts, as the README's command combines them)."""
    config = yaml.safe_load((ROOT / "config" / "examples" / example).read_text())
    if example.startswith("testbed-"):  # merged as Snakemake merges two config files
        own = config.get("hosts", {})
        config["hosts"] = {
            h: {"address": f"10.200.0.1{i}", **own.get(h, {})}
            for i, h in enumerate(["h1", "h2", "h3"], 1)
        }
    plan = build_plan(config)
    assert plan.experiments
    assert all(exp.cells for exp in plan.experiments.values())
