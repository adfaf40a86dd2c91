"""What a host adds to a cell's parameters: the command of a runtime perfpost provisions.

The documentation's promise (docs/tools/freon.md, docs/tools/teragen.md): on localhost
`ozone` and `yarn` default to `provisioned`, the install at <cache>/<runtime>-<version>/
(bin/<launcher>, lib/, COMPLETE when finished); elsewhere they default to the command of that
name on PATH; a host's own value, or an experiment's `launcher`, wins. teragen on a
provisioned client runs its examples jar from lib/.
"""

from pathlib import Path

import pytest

from perfpost import provision, tools
from perfpost.errors import PerfpostError
from perfpost.glue.provisioning import outcome_caches, provision_cache, provision_outcome
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


def test_an_outcome_is_named_by_its_install_and_provisioned_into_its_configured_cache(tmp_path):
    p = plan(tmp_path, FREON, tool_settings={"ozone": {"cache": str(tmp_path / "c")}})
    marker = p.provisioned_marker("e", "localhost")
    # A cell waits for the outcome of the provisioning that leaves its marker, named by
    # runtime, version and pom alone: the same file wherever the cache is.
    outcome = f"results/tools/ozone-{tools.get('freon').VERSION}-{pom_hash('freon')}.json"
    assert provision_outcome(marker) == outcome
    assert provision_outcome(marker.replace(str(tmp_path / "c"), "/elsewhere")) == outcome
    # The one rule provisions it into the config's cache, any other into the default one.
    cache = provision_cache(p)
    assert cache(None, [outcome]) == str(tmp_path / "c")
    other = "results/tools/ozone-9.9-0123456789abcdef.json"
    assert cache(None, [other]) == str(provision.cache_dir(None))


def test_one_install_wanted_in_two_caches_is_refused(tmp_path):
    a = str(tmp_path / "a" / "ozone-2.2.0" / "COMPLETE-0123456789abcdef")
    b = a.replace("/a/", "/b/")
    with pytest.raises(PerfpostError, match="two caches"):
        outcome_caches([a, b])
    assert outcome_caches([a]) == {
        "results/tools/ozone-2.2.0-0123456789abcdef.json": str(tmp_path / "a")
    }


def pom_hash(tool):
    """The first 16 hex digits of sha256 of the tool folder's pom.xml, by hand."""
    import hashlib

    pom = Path(tools.get(tool).__file__).parent / "pom.xml"
    return hashlib.sha256(pom.read_bytes()).hexdigest()[:16]


@pytest.mark.parametrize("tool", ["freon", "teragen"])
def test_where_the_cache_is_defines_no_measurement(tmp_path, monkeypatch, tool):
    """A finished cell's record carries its measurement's id; a cache at another path (moved,
    ``$PERFPOST_CACHE``, a ``tools:`` setting) must leave it as it was, or every finished
    cell would be measured again. The install itself (its version) and a data directory
    inside the cache still count."""
    from dataclasses import replace

    exp = FREON if tool == "freon" else TERAGEN
    runtime = "ozone" if tool == "freon" else "hadoop"

    def spec(cache=None, version=None, **params):
        settings = {k: v for k, v in (("cache", cache), ("version", version)) if v}
        e = {**exp, "params": {**exp["params"], **params}}
        p = plan(tmp_path, e, tool_settings={runtime: settings})
        return p.spec("e", p.experiments["e"].cells[0].id, "localhost", 1)

    monkeypatch.delenv("PERFPOST_CACHE", raising=False)
    default = spec()
    assert default.params["launcher"].startswith(str(Path("~/.cache/perfpost").expanduser()))
    # Before specs knew their caches, the id was that of the measurement as it stood.
    assert default.measurement_id() == replace(default, caches=[]).measurement_id()
    for elsewhere in (spec(cache=str(tmp_path / "a")), spec(cache=str(tmp_path / "b/"))):
        assert elsewhere.params["launcher"] != default.params["launcher"]
        assert elsewhere.measurement_id() == default.measurement_id()
    monkeypatch.setenv("PERFPOST_CACHE", str(tmp_path / "env"))
    by_env = spec()
    assert by_env.params["launcher"].startswith(str(tmp_path / "env") + "/")
    assert by_env.measurement_id() == default.measurement_id()
    assert spec(version="3.3.6").measurement_id() != default.measurement_id()
    inside = spec(cache=str(tmp_path / "a"), dir=str(tmp_path / "a" / "data"))
    moved = spec(cache=str(tmp_path / "b"), dir=str(tmp_path / "b" / "data"))
    assert inside.measurement_id() != moved.measurement_id()
