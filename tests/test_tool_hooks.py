"""What a host adds to a cell's parameters: the command of a runtime perfpost provisions.

The documentation's promise (docs/tools/freon.md, docs/tools/teragen.md): on localhost
`ozone` and `yarn` default to `provisioned`, the install at <cache>/<runtime>-<version>/
(bin/<launcher>, lib/, COMPLETE when finished); elsewhere they default to the command of that
name on PATH; a host's own value, or an experiment's `launcher`, wins. teragen on a
provisioned client runs its examples jar from lib/.
"""

from pathlib import Path

import pytest

from perfpost import tools
from perfpost.glue.provisioning import provision_outcome, provision_rules
from perfpost.plan.build import build_plan

FREON = {"tool": "freon", "params": {"subcommand": "ockg", "dir": "/data"}}
TERAGEN = {"tool": "teragen", "params": {"dir": "/data", "size": "1G"}}


def plan(tmp_path, experiment, host=None, tool_settings=None):
    config = {
        "hosts": {"h1": {"address": "10.200.0.2", **(host or {})}},
        "tools": tool_settings or {},
        "experiments": {"e": {**experiment, "hosts": ["localhost", "h1"]}},
    }
    return build_plan(config)


def params(p, host):
    return p.spec("e", p.experiments["e"].cells[0].id, host, 1).params


def test_freon_on_localhost_runs_the_provisioned_ozone(tmp_path):
    p = plan(tmp_path, FREON, tool_settings={"ozone": {"version": "1.4.1", "cache": str(tmp_path)}})
    assert params(p, "localhost")["launcher"] == str(tmp_path / "ozone-1.4.1" / "bin" / "ozone")
    assert p.provisioned_marker("e", "localhost") == str(
        tmp_path / "ozone-1.4.1" / f"COMPLETE-{pom_hash('freon')}"
    )
    # Another host runs the `ozone` on its PATH, and needs nothing provisioned here.
    assert params(p, "h1")["launcher"] == "ozone"
    assert p.provisioned_marker("e", "h1") is None


def test_a_host_provisioned_by_name_and_a_host_command(tmp_path):
    settings = {"ozone": {"version": "1.4.1", "cache": str(tmp_path)}}
    p = plan(tmp_path, FREON, host={"ozone": "provisioned"}, tool_settings=settings)
    assert params(p, "h1")["launcher"] == str(tmp_path / "ozone-1.4.1" / "bin" / "ozone")
    p = plan(tmp_path, FREON, host={"ozone": "/opt/ozone/bin/ozone"}, tool_settings=settings)
    assert params(p, "h1")["launcher"] == "/opt/ozone/bin/ozone"
    assert p.provisioned_marker("e", "h1") is None


def test_an_experiments_launcher_wins_and_needs_no_install(tmp_path):
    exp = {**FREON, "params": {**FREON["params"], "launcher": "/usr/bin/ozone"}}
    p = plan(tmp_path, exp, tool_settings={"ozone": {"cache": str(tmp_path)}})
    assert params(p, "localhost")["launcher"] == "/usr/bin/ozone"
    assert p.provisioned_marker("e", "localhost") is None


def test_teragen_on_a_provisioned_client_runs_its_examples_jar(tmp_path):
    p = plan(
        tmp_path, TERAGEN, tool_settings={"hadoop": {"version": "3.3.6", "cache": str(tmp_path)}}
    )
    home = tmp_path / "hadoop-3.3.6"
    got = params(p, "localhost")
    assert got["launcher"] == str(home / "bin" / "yarn")
    assert got["jar"] == str(home / "lib" / "hadoop-mapreduce-examples-3.3.6.jar")
    assert p.provisioned_marker("e", "localhost") == str(home / f"COMPLETE-{pom_hash('teragen')}")
    # A host's own yarn brings its own jar (teragen's default), not the provisioned one.
    assert params(p, "h1")["launcher"] == "yarn"
    assert "jar" not in params(p, "h1") or not params(p, "h1")["jar"].startswith(str(home))


def test_dd_needs_nothing_provisioned(tmp_path):
    p = plan(tmp_path, {"tool": "dd", "params": {"dir": "/tmp", "bs": "1M", "count": 1}})
    assert "launcher" not in params(p, "localhost")
    assert p.provisioned_marker("e", "localhost") is None


@pytest.mark.parametrize(("tool", "runtime"), [("freon", "ozone"), ("teragen", "hadoop")])
def test_without_a_version_the_tool_folders_own_is_used(tmp_path, tool, runtime):
    exp = FREON if tool == "freon" else TERAGEN
    p = plan(tmp_path, exp, tool_settings={runtime: {"cache": str(tmp_path)}})
    version = tools.get(tool).VERSION
    assert p.provisioned_marker("e", "localhost") == str(
        tmp_path / f"{runtime}-{version}" / f"COMPLETE-{pom_hash(tool)}"
    )


def test_the_provisioning_rule_covers_every_configured_cache_and_the_default(tmp_path):
    import hashlib

    p = plan(tmp_path, FREON, tool_settings={"ozone": {"cache": str(tmp_path / "c")}})
    rules = dict((cache, pattern) for pattern, cache in provision_rules(p))
    assert len(rules) == 2  # and the default cache, where the others live
    # One outcome per runtime, version, pom and cache: the cache by sha256 of its path.
    tag = hashlib.sha256(str(tmp_path / "c").encode()).hexdigest()[:8]
    assert rules[str(tmp_path / "c")] == f"results/tools/{{tool}}-{{version}}-{{pom}}.{tag}.json"
    # A cell waits for the outcome of the provisioning that leaves its marker.
    marker = p.provisioned_marker("e", "localhost")
    assert str(provision_outcome(marker)) == (
        f"results/tools/ozone-{tools.get('freon').VERSION}-{pom_hash('freon')}.{tag}.json"
    )


def pom_hash(tool):
    """The first 16 hex digits of sha256 of the tool folder's pom.xml, by hand."""
    import hashlib

    pom = Path(tools.get(tool).__file__).parent / "pom.xml"
    return hashlib.sha256(pom.read_bytes()).hexdigest()[:16]
