"""Config validation: defaults, resolved parameters, and errors that name the key."""

import copy

import pytest
import yaml

from perfpost.errors import ConfigError
from perfpost.plan.build import build_plan
from perfpost.plan.checks import check_secrets
from perfpost.plan.loading import load_yaml
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


def test_yaml_merge_keys_are_read_as_pyyamls_own_loader_reads_them(tmp_path):
    """`<<: *anchor` (the shipped config's clusters share a setting so): the anchor's keys, a
    key of the mapping's own winning over a merged one, exactly as yaml.safe_load reads the
    same text; a key given twice in the mapping itself is still refused."""
    import yaml

    text = "base: &b {x: '1', y: '2'}\nmerged:\n  <<: *b\n  y: '3'\n  z: '4'\nexperiments: {}\n"
    path = tmp_path / "config.yaml"
    path.write_text(text)
    got = load_yaml(path)
    assert got == yaml.safe_load(text)
    assert got["merged"] == {"x": "1", "y": "3", "z": "4"}
    path.write_text(text.replace("  z: '4'\n", "  z: '4'\n  z: '5'\n"))
    with pytest.raises(ConfigError, match=r"duplicate key 'z' \(first at line 5\)"):
        load_yaml(path)


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
    """What the documentation tells people to run is a valid config (with the testbed's
    inventory where it names the testbed's hosts, as its command combines them)."""
    config = yaml.safe_load((ROOT / "config" / "examples" / example).read_text())
    if example.startswith(("testbed-", "lab-")):  # merged as Snakemake merges config files
        own = config.get("hosts", {})
        n = 6 if example.startswith("lab-") else 3  # scripts/testbed start -n 6 / -n 3
        config["hosts"] = {
            h: {"address": f"10.200.0.1{i}", **own.get(h, {})}
            for i, h in enumerate([f"h{k}" for k in range(1, n + 1)], 1)
        }
    plan = build_plan(config)
    assert plan.experiments
    assert all(exp.cells for exp in plan.experiments.values())


def _counting(monkeypatch):
    """Calls of the config schema's validation and of the tools' params checks."""
    import perfpost.plan.schema as pconfig

    calls = {"schema": 0, "params": 0}
    schema, checker = pconfig.validate_schema, pconfig._ParamsChecker

    def counted_schema(config):
        calls["schema"] += 1
        return schema(config)

    class CountedChecker(checker):
        def __init__(self, schema):
            calls["params"] += 1
            super().__init__(schema)

    monkeypatch.setattr(pconfig, "validate_schema", counted_schema)
    monkeypatch.setattr(pconfig, "_ParamsChecker", CountedChecker)
    return calls


def test_a_config_that_passed_is_not_validated_again_and_plans_the_same(tmp_path, monkeypatch):
    fresh = plan_of()  # validated, no cache: what the cached plan must equal
    calls = _counting(monkeypatch)
    first_cfg, second_cfg = copy.deepcopy(BASE), copy.deepcopy(BASE)
    first = build_plan(first_cfg, cache=tmp_path)
    assert calls == {"schema": 1, "params": 1}
    # Reading the Snakefile (-n, --lint) writes nothing; a run that starts keeps the checks.
    assert not list(tmp_path.iterdir())
    first.keep_checked()
    assert len(list(tmp_path.glob("config-*.json"))) == 1
    second = build_plan(second_cfg, cache=tmp_path)
    assert calls == {"schema": 1, "params": 1}  # neither schema ran again
    assert second_cfg == first_cfg  # the defaults, as the schema filled them
    assert second_cfg["experiments"]["w"]["repeats"] == 3  # the schema's default
    assert [j.to_json() for j in second.jobs()] == [j.to_json() for j in fresh.jobs()]


def test_a_changed_config_is_validated_afresh_and_a_bad_one_never_kept(tmp_path, monkeypatch):
    build_plan(copy.deepcopy(BASE), cache=tmp_path).keep_checked()
    calls = _counting(monkeypatch)
    bad = copy.deepcopy(BASE)
    bad["experiments"]["w"]["repeats"] = 0  # the schema's minimum is 1
    with pytest.raises(ConfigError, match="repeats"):
        build_plan(bad, cache=tmp_path)
    bad_params = copy.deepcopy(BASE)
    bad_params["experiments"]["w"]["params"]["mode"] = "sideways"  # not one of dd's modes
    with pytest.raises(ConfigError, match="mode"):
        build_plan(bad_params, cache=tmp_path)
    assert calls == {"schema": 2, "params": 1}
    assert len(list(tmp_path.glob("config-*.json"))) == 1  # the good config's only


def test_the_cache_keeps_only_the_newest_configs(tmp_path):
    # Every edit of the config adds one file; the oldest beyond the limit go. Files standing
    # for 40 earlier configs, a second apart, then one run of a new config: 32 kept in all,
    # the new one and the 31 newest of the 40.
    import os

    import perfpost.plan.schemacache as pconfig

    for i in range(40):
        f = tmp_path / f"config-old{i:02d}.json"
        f.write_text("{}")
        os.utime(f, (1_000_000 + i, 1_000_000 + i))
    build_plan(copy.deepcopy(BASE), cache=tmp_path).keep_checked()
    left = sorted(p.name for p in tmp_path.glob("config-*.json"))
    assert len(left) == pconfig.CONFIG_CACHE_KEEP == 32
    assert [n for n in left if n.startswith("config-old")] == [
        f"config-old{i:02d}.json" for i in range(9, 40)
    ]


def test_an_unreadable_cache_entry_means_validating_again(tmp_path, monkeypatch):
    build_plan(copy.deepcopy(BASE), cache=tmp_path).keep_checked()
    (kept,) = tmp_path.glob("config-*.json")
    kept.write_text('{"schema_version": 1, "config": ')  # cut short
    calls = _counting(monkeypatch)
    cfg = copy.deepcopy(BASE)
    build_plan(cfg, cache=tmp_path)
    assert calls == {"schema": 1, "params": 1}
    assert cfg["experiments"]["w"]["repeats"] == 3


def test_a_config_mistake_names_the_file_and_the_line_of_its_key(tmp_path):
    from perfpost.errors import ConfigError
    from perfpost.plan.loading import key_path, locate, message

    text = (
        "experiments:\n"  # 1
        "  x:\n"  # 2
        "    tool: dd\n"  # 3
        "    params:\n"  # 4
        "      dir: /tmp\n"  # 5
        "    compare:\n"  # 6
        "      - name: a\n"  # 7
        "      - name: b\n"  # 8
        "        baseline: {bs: 4k}\n"  # 9
    )
    path = tmp_path / "c.yaml"
    path.write_text(text)
    assert key_path("experiments.x[bs=4k].params") == ("experiments", "x", "params")
    assert key_path("experiments.x.compare[1].baseline") == (
        "experiments",
        "x",
        "compare",
        "1",
        "baseline",
    )
    assert locate("experiments.x[bs=4k].params", [path]) == (str(path), 4)
    assert locate("experiments.x.compare[1].baseline", [path]) == (str(path), 9)
    # A key the file lacks (a default filled in): the deepest one it has.
    assert locate("experiments.x.params.bs", [path]) == (str(path), 4)
    # A later --configfile that sets the key wins.
    later = tmp_path / "d.yaml"
    later.write_text("experiments:\n  x:\n    params: {dir: /var/tmp}\n")
    assert locate("experiments.x.params", [path, later]) == (str(later), 3)
    said = message(ConfigError("experiments.x[default].params", "unknown key"), [path])
    assert said == f"{path}:4: experiments.x[default].params: unknown key"


@pytest.mark.parametrize(
    ("change", "where", "said"),
    [
        # A misspelt experiment key: the schema's properties hold "repeats".
        (
            lambda c: c["experiments"]["w"].update(repaets=3),
            "experiments.w",
            "unknown key 'repaets' (did you mean 'repeats'?)",
        ),
        # A misspelt required tool parameter: both unknown and missing; the cause is said.
        (
            lambda c: c["experiments"]["w"]["params"].update(
                dri=c["experiments"]["w"]["params"].pop("dir")
            ),
            "experiments.w[storage=disk,conv=fsync].params",
            "unknown key 'dri' (did you mean 'dir'?)",
        ),
        # Two at once, each with its own guess; a key like none gets none.
        (
            lambda c: c["experiments"]["w"]["params"].update(cnt=3, colour="red"),
            "experiments.w[storage=disk,conv=fsync].params",
            "unknown keys 'cnt' (did you mean 'count'?), 'colour'",
        ),
    ],
    ids=["experiment key", "required param", "two params"],
)
def test_a_misspelt_key_is_named_with_the_key_it_is_close_to(change, where, said):
    with pytest.raises(ConfigError) as e:
        plan_of(change)
    assert e.value.where == where, e.value
    assert e.value.message == said, e.value
