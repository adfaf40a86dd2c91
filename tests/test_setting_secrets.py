"""Secrets in settings: site keys of a cluster and `-D` options of a tool (freon's `generic`,
teragen's `defines`, `-D` in JVM options). The tool and the daemons get the real value; what
perfpost keeps (records, raw logs, a cluster's state) and shows (the post, `perfpost compare`)
has `***` in its place. Which keys hold secrets is one rule, `hostenv.secret_setting`."""

from __future__ import annotations

import json
import uuid

import pytest

from perfpost import hostenv, paths
from perfpost.analysis import envdiff
from perfpost.clusters.base import ClusterSpec, changed_keys, fill_id, merge_site
from perfpost.clusters.deployment import Deployment
from perfpost.plan.build import build_plan
from perfpost.run import clusterstate, deploy
from perfpost.run.hosts import LocalHost
from perfpost.run.runner import run_cell
from tests.conftest import ROOT
from tests.test_envdiff import env, write_run

# Keys whose value is a secret. Hadoop's own list of them (core-default.xml's
# hadoop.security.sensitive-config-keys: `secret$`, `password$`, `ssl.keystore.pass$`,
# `fs.s3.*[Ss]ecret.?[Kk]ey`, `fs.s3a.*.server-side-encryption.key`, `fs.s3a.encryption.key`,
# `fs.azure.account.key.*`, `credential$`, `oauth.*secret|password|token`), the access key
# that goes with S3's secret one, session tokens, and Java's SSL store passwords.
SECRET_KEYS = [
    "fs.s3a.secret.key",
    "fs.s3a.access.key",
    "fs.s3a.session.token",
    "fs.s3a.bucket.bench.secret.key",
    "fs.s3a.server-side-encryption.key",
    "fs.s3a.encryption.key",
    "fs.azure.account.key.bench.blob.core.windows.net",
    "fs.azure.account.oauth2.client.secret",
    "ssl.server.keystore.password",
    "ssl.server.keystore.keypassword",
    "ssl.client.truststore.password",
    "ssl.server.keystore.pass",
    "hadoop.http.authentication.signature.secret",
    "dfs.webhdfs.oauth2.refresh.token",
    "dfs.webhdfs.oauth2.access.token",
    "ozone.s3g.secret",
    "my.db.credential",
    "my.store.credentials",
    "javax.net.ssl.trustStorePassword",
    "aws.secretKey",
    "aws.accessKeyId",
    "aws.sessionToken",
    "HADOOP_CREDSTORE_PASSWORD",
]
# Keys about a secret, not holding one: whether it is on, its algorithm, lifetime, file or
# provider. Each is a real key of Ozone 2.2.0 or Hadoop 3.4 (their *-default.xml).
PLAIN_KEYS = [
    "hdds.block.token.enabled",
    "hdds.container.token.enabled",
    "hdds.secret.key.algorithm",
    "hdds.secret.key.expiry.duration",
    "hdds.secret.key.file.name",
    "hdds.secret.key.rotate.duration",
    "ozone.manager.delegation.token.max-lifetime",
    "ozone.manager.delegation.token.renew-interval",
    "dfs.block.access.token.enable",
    "dfs.block.access.token.lifetime",
    "hadoop.security.credential.provider.path",
    "fs.s3a.aws.credentials.provider",
    "hadoop.http.authentication.signature.secret.file",
    "hadoop.security.credstore.java-keystore-provider.password-file",
    "ssl.server.keystore.location",
    "hadoop.security.token.service.use_ip",
    "ozone.s3g.secret.http.enabled",
    "ozone.replication",
    "dfs.blocksize",
    "fs.s3a.endpoint",
]


@pytest.mark.parametrize("key", SECRET_KEYS)
def test_a_key_that_holds_a_secret(key):
    assert hostenv.secret_setting(key)


@pytest.mark.parametrize("key", PLAIN_KEYS)
def test_a_key_that_only_speaks_of_one(key):
    assert not hostenv.secret_setting(key)


def test_no_key_perfpost_sets_itself_is_taken_for_a_secret(monkeypatch):
    """perfpost's own keys (addresses, directories, replication) are shown as they are."""
    from perfpost import clusters

    def free_ports(self: Deployment, host: str, names: list[str]) -> None:
        self.ports.update({n: 40000 + len(self.ports) + i for i, n in enumerate(names)})

    monkeypatch.setattr(Deployment, "free_ports", free_ports)
    for kind in clusters.NAMES:
        cls = clusters.get(kind)
        roles = {role: ["localhost"] * max(1, lo) for role, (lo, _) in cls.ROLES.items()}
        spec = ClusterSpec(name=kind, kind=kind, version="1", roles=roles)
        dep = Deployment(spec, {"localhost": {"name": "localhost"}}, tag="abcdef")
        dep.home = {"localhost": "/opt/install"}
        dep.opener = lambda host: None  # addresses only: nothing is run
        dep.site = cls(dep).configure()
        keys = [
            k for site in (dep.site, cls(dep).client_site()) for ks in site.values() for k in ks
        ]
        assert len(keys) > 5, kind
        assert [k for k in keys if hostenv.secret_setting(k)] == [], kind


def test_settings_are_masked_wherever_they_sit_and_their_values_known():
    secret = "s3-" + uuid.uuid4().hex
    params = {
        "generic": {"fs.s3a.secret.key": secret, "fs.s3a.endpoint": "http://s3:9000"},
        "java_opts": f"-Xmx64m -Djavax.net.ssl.trustStorePassword={secret}x -Dx.y=1",
        "options": {"n": 10},
    }
    masked = hostenv.mask_settings(params)
    assert masked == {
        "generic": {"fs.s3a.secret.key": "***", "fs.s3a.endpoint": "http://s3:9000"},
        "java_opts": "-Xmx64m -Djavax.net.ssl.trustStorePassword=*** -Dx.y=1",
        "options": {"n": 10},
    }
    assert sorted(hostenv.setting_secrets(params)) == sorted([secret, secret + "x"])
    # A command line: `-D key=value` (freon) and `-Dkey=value` (teragen), and an env prefix.
    argv = ["env", f"OZONE_OPTS=-Dssl.client.truststore.password={secret}", "ozone", "freon"]
    argv += ["-D", f"fs.s3a.access.key={secret}", "-D", "fs.s3a.endpoint=x", "dfsg"]
    argv += [f"-Dfs.s3a.session.token={secret} with space", "-Dmapreduce.job.maps=2"]
    assert hostenv.mask_settings(argv) == [
        "env",
        "OZONE_OPTS=-Dssl.client.truststore.password=***",
        "ozone",
        "freon",
        "-D",
        "fs.s3a.access.key=***",
        "-D",
        "fs.s3a.endpoint=x",
        "dfsg",
        "-Dfs.s3a.session.token=***",
        "-Dmapreduce.job.maps=2",
    ]


def test_teragens_defines_reach_its_command_and_not_its_record_text():
    from perfpost.run import hostscript
    from perfpost.tools import teragen

    secret = "pw-" + uuid.uuid4().hex
    params = {"size": "1M", "local": True, "dir": "/tmp", "defines": {"x.password": secret}}
    argv = teragen.argv(params, "/tmp/w")
    assert f"-Dx.password={secret}" in argv  # what the tool gets
    shown = hostscript.quote(hostenv.mask_settings(argv))
    assert secret not in shown
    assert "-Dx.password=***" in shown


FREON_SHIM = """#!/bin/sh
# freon as far as perfpost sees it: `version`, and a run that leaves its arguments and its
# JVM options where the test reads them (outside results/), echoes its command line into its
# log as tools do, then prints a real freon dfsg log.
case "$1" in version) echo "Ozone freon 2.2.0 (shim)"; exit 0 ;; esac
printf '%s\\n' "$@" "OZONE_OPTS=$OZONE_OPTS" > {seen}
echo "freon started with: $*"
cat {log}
"""


def test_a_tools_secret_settings_reach_it_and_no_file_perfpost_keeps(tmp_path):
    secret, jvm_secret = "s3-" + uuid.uuid4().hex, "ks-" + uuid.uuid4().hex
    shim, seen = tmp_path / "ozone", tmp_path / "seen"
    shim.write_text(
        FREON_SHIM.format(seen=seen, log=ROOT / "tests" / "data" / "freon" / "dfsg.log")
    )
    shim.chmod(0o755)
    scratch = tmp_path / "target"
    scratch.mkdir()
    cfg = {
        "experiments": {
            "s": {
                "tool": "freon",
                "repeats": 1,
                "params": {
                    "subcommand": "dfsg",
                    "dir": str(scratch),
                    "launcher": str(shim),
                    "generic": {"fs.s3a.secret.key": secret, "fs.s3a.endpoint": "http://s3"},
                    "java_opts": f"-Xmx64m -Djavax.net.ssl.keyStorePassword={jvm_secret}",
                    "options": {"n": 300, "path": "file:///tmp/none"},
                },
            }
        }
    }
    spec = next(build_plan(cfg).jobs())
    results = tmp_path / "results"
    out = tmp_path / paths.record("s", spec.cell, "localhost", 1, 1)
    rec = run_cell(spec, out, LocalHost(), hostenv.Redactor())
    assert rec["status"] == "done", rec["reason"]
    # The tool got the real values.
    got = seen.read_text().splitlines()
    assert f"fs.s3a.secret.key={secret}" in got
    # (perfpost's GC log option follows the tool's own options.)
    opts = f"OZONE_OPTS=-Xmx64m -Djavax.net.ssl.keyStorePassword={jvm_secret}"
    assert [x for x in got if x == opts or x.startswith(opts + " -Xloggc:")], got
    # Nothing perfpost kept holds them: record, raw log, anything under results/.
    for value in (secret, jvm_secret):
        assert [p for p in results.rglob("*") if p.is_file() and value in p.read_text()] == []
    assert "fs.s3a.secret.key=***" in rec["command"]
    assert "fs.s3a.endpoint=http://s3" in rec["command"]  # a plain setting stays as it is
    assert rec["params"]["generic"]["fs.s3a.secret.key"] == "***"
    log = (out.parent / paths.RAW / "freon.log").read_text()
    assert "fs.s3a.secret.key=***" in log


def _state(site: dict, client: dict | None = None, reason: str = "") -> dict:
    spec = ClusterSpec(
        name="ozone",
        kind="ozone",
        version="2.2.0",
        roles={"scm": ["localhost"], "om": ["localhost"], "datanode": ["localhost"]},
        site=site,
        jvm={"om": "-Xmx1g -Dssl.server.keystore.password=jvm-" + "x" * 8},
    )
    dep = Deployment(spec, {"localhost": {"name": "localhost"}}, tag="abcdef")
    dep.site = merge_site({"ozone-site": {"ozone.replication": "1"}}, fill_id(site, dep.scope))
    dep.client = client or {}
    dep.changed = changed_keys(dep.site, {"ozone.replication": "3"})
    dep.version = "2.2.0(Katmai)"
    state = {"status": "up", "owner": "h:1:1", "name": "ozone", "deployment": dep.to_state()}
    if reason:
        state["reason"] = reason
    return state


def test_a_clusters_state_keeps_no_secret_and_its_cells_still_get_theirs(tmp_path):
    secret = "tok-" + uuid.uuid4().hex
    site = {"ozone-site": {"ozone.client.s3.secret": secret, "ozone.scm.container.size": "1GB"}}
    client = {"ozone-site": {"ozone.client.s3.secret": secret, "ozone.om.address": "a:1"}}
    state = _state(site, client, reason=f"the om said: bad secret {secret}")
    ident = Deployment.from_state(state["deployment"]).scope
    sdir = tmp_path / "start-1"
    sdir.mkdir()
    clusterstate.write_state(sdir, state)
    text = (sdir / "state.json").read_text()
    assert secret not in text
    assert "jvm-xxxxxxxx" not in text  # a -D secret in the daemons' JVM options
    kept = json.loads(text)
    dep = kept["deployment"]
    assert dep["site"]["ozone-site"]["ozone.client.s3.secret"] == "***"
    assert dep["site"]["ozone-site"]["ozone.scm.container.size"] == "1GB"
    assert dep["spec"]["site"]["ozone-site"]["ozone.client.s3.secret"] == "***"
    assert kept["reason"] == "the om said: bad secret ***"
    # What the run holds in memory is untouched: the daemons were configured from it.
    assert state["deployment"]["site"]["ozone-site"]["ozone.client.s3.secret"] == secret
    # Read back (the next cell, the run's end), it is the same cluster, in the same places...
    assert Deployment.from_state(dep).scope == ident
    # ... and a cell of it gets the real value in its client configuration.
    spec = ClusterSpec.from_dict(state["deployment"]["spec"])
    lease = deploy.Lease([deploy.Held(spec, 1, kept)])
    assert lease.client_site()["ozone-site"]["ozone.client.s3.secret"] == secret
    assert lease.client_site()["ozone-site"]["ozone.om.address"] == "a:1"


def test_a_cells_client_configuration_keeps_an_empty_site_file(tmp_path):
    """A cluster's client configuration has a core-site with no keys: Hadoop's FsShell
    (`hdfs dfs`) refuses to start without a core-site.xml ("core-site.xml not found"), so the
    cell's configuration must still hold the (empty) file after the state's round trip."""
    state = _state({"hdfs-site": {}}, {"core-site": {}, "hdfs-site": {"dfs.replication": "3"}})
    sdir = tmp_path / "start-1"
    sdir.mkdir()
    clusterstate.write_state(sdir, state)
    kept = json.loads((sdir / "state.json").read_text())
    spec = ClusterSpec.from_dict(state["deployment"]["spec"])
    lease = deploy.Lease([deploy.Held(spec, 1, kept)])
    assert lease.client_site() == {"core-site": {}, "hdfs-site": {"dfs.replication": "3"}}


def test_compare_says_a_secret_setting_changed_and_shows_neither_value(tmp_path):
    secrets = {"a": "s3-" + uuid.uuid4().hex, "b": "s3-" + uuid.uuid4().hex}
    runs = {}
    for side, value in (("a", secrets["a"]), ("b", secrets["b"]), ("a2", secrets["a"])):
        ref = f"ozone-{side:0<10}/start-1"
        cells = [{"host": "h1", "tool_version": "freon 2.2.0", "clusters": ref}]
        tidy = write_run(tmp_path / side, {"h1": env("h1")}, cells)
        sdir = tmp_path / side / "results" / "clusters" / ref
        sdir.mkdir(parents=True)
        clusterstate.write_state(sdir, _state({"core-site": {"fs.s3a.secret.key": value}}))
        runs[side] = envdiff.read_run(tidy)
    fact = "cluster.ozone.conf.fs.s3a.secret.key"
    diffs = envdiff.differences(runs["a"], runs["b"])
    text = envdiff.markdown(diffs, runs["a"], runs["b"])
    assert [d["fact"] for d in diffs] == [fact]
    assert f"`{fact}`: changed (a secret; neither value is shown)" in text
    for value in secrets.values():
        assert value not in text
        assert value not in (envdiff.warning(diffs) or "")
    # The same secret in both runs is no difference.
    assert envdiff.differences(runs["a"], runs["a2"]) == []


def test_a_secret_set_in_one_run_only_is_a_change_from_the_default(tmp_path):
    secret = "s3-" + uuid.uuid4().hex
    runs = []
    for side, site in (("a", {}), ("b", {"core-site": {"fs.s3a.secret.key": secret}})):
        ref = f"ozone-{side:0<10}/start-1"
        cells = [{"host": "h1", "tool_version": "freon 2.2.0", "clusters": ref}]
        tidy = write_run(tmp_path / side, {"h1": env("h1")}, cells)
        sdir = tmp_path / side / "results" / "clusters" / ref
        sdir.mkdir(parents=True)
        clusterstate.write_state(sdir, _state(site))
        runs.append(envdiff.read_run(tidy))
    diffs = envdiff.differences(*runs)
    text = envdiff.markdown(diffs, *runs)
    assert "`cluster.ozone.conf.fs.s3a.secret.key`: (default) -> (a secret, not shown)" in text
    assert secret not in text


def test_the_post_shows_a_secret_setting_masked(tmp_path):
    """The System under test section, from the state perfpost kept."""
    from perfpost.analysis.report import clusters_of

    secret = "s3-" + uuid.uuid4().hex
    ref = "ozone-0000000000/start-1"
    cells = [{"host": "h1", "tool_version": "freon 2.2.0", "clusters": ref}]
    write_run(tmp_path, {"h1": env("h1")}, cells)
    sdir = tmp_path / "results" / "clusters" / ref
    sdir.mkdir(parents=True)
    clusterstate.write_state(sdir, _state({"core-site": {"fs.s3a.secret.key": secret}}))
    import pandas as pd

    (entry,) = clusters_of(pd.DataFrame([{"cell": "c", **cells[0]}]), tmp_path)
    shown = {k["key"]: k["value"] for k in entry["changed"]}
    assert shown["fs.s3a.secret.key"] == "***"
    assert secret not in json.dumps(entry)
    assert entry["jvm"] == {"om": "-Xmx1g -Dssl.server.keystore.password=***"}


def test_the_post_step_gets_the_experiment_with_its_secret_settings_masked():
    secret = "s3-" + uuid.uuid4().hex
    cfg = {
        "experiments": {
            "s": {
                "tool": "freon",
                "params": {
                    "subcommand": "dfsg",
                    "dir": "/tmp",
                    "generic": {"fs.s3a.secret.key": secret},
                },
            }
        }
    }
    exp = build_plan(cfg).experiments["s"]
    assert exp.public()["params"]["generic"] == {"fs.s3a.secret.key": "***"}
    assert secret not in json.dumps(exp.public())
    # The cells still get it.
    assert next(build_plan(cfg).jobs()).params["generic"]["fs.s3a.secret.key"] == secret


def test_a_fingerprint_tells_values_apart_with_a_key_of_the_users_own(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    hostenv._mask_key.cache_clear()
    try:
        a, again, b = (hostenv.fingerprint(v) for v in ("hunter2", "hunter2", "hunter3"))
        key = tmp_path / "perfpost" / "mask.key"
        assert key.stat().st_mode & 0o777 == 0o600  # readable by this user alone
        assert a == again
        assert a != b
        assert a.split(":")[0] == b.split(":")[0]  # one key: comparable
        # Another key (another machine) gives another fingerprint of the same value.
        key.write_bytes(b"another machine's key")
        hostenv._mask_key.cache_clear()
        assert hostenv.fingerprint("hunter2").split(":")[0] != a.split(":")[0]
    finally:
        hostenv._mask_key.cache_clear()


def test_the_post_names_other_experiments_runs_on_the_same_start(tmp_path):
    """One configuration's start serves every experiment's cells on it: the post of one
    says how many runs of the others it also served (their records' paths in the state)."""
    from perfpost.analysis.report import clusters_of

    ref = "ozone-0000000000/start-1"
    cells = [{"host": "h1", "tool_version": "freon 2.2.0", "clusters": ref}]
    write_run(tmp_path, {"h1": env("h1")}, cells)
    sdir = tmp_path / "results" / "clusters" / ref
    sdir.mkdir(parents=True)
    state = _state({})
    run = "cells/c/h1/r{}/attempt-1/record.json"
    state["served"] = [
        *(f"results/mine/{run.format(i)}" for i in (1, 2)),
        *(f"results/other/{run.format(i)}" for i in (1, 2, 3)),
        f"/abs/checkout/results/third/{run.format(1)}",
    ]
    clusterstate.write_state(sdir, state)
    import pandas as pd

    (entry,) = clusters_of(
        pd.DataFrame([{"experiment": "mine", "cell": "c", **cells[0]}]), tmp_path
    )
    assert entry["others"] == [
        {"experiment": "other", "runs": 3},
        {"experiment": "third", "runs": 1},
    ]


def test_every_key_the_config_set_reaches_the_clients_configuration():
    """dfs.checksum.type is read by the HDFS client: set in hdfs-site, it must reach the
    client's configuration as it does the daemons', as a shared configuration directory
    gives it in a real deployment (the kind's own client keys stay)."""
    from perfpost.clusters.base import client_site

    own = {"hdfs-site": {"dfs.replication": "1"}}
    configured = {
        "hdfs-site": {"dfs.checksum.type": "NULL"},
        "core-site": {"io.file.buffer.size": "65536"},
    }
    assert client_site(own, configured) == {
        "core-site": {"io.file.buffer.size": "65536"},
        "hdfs-site": {"dfs.replication": "1", "dfs.checksum.type": "NULL"},
    }
    # Nothing configured: an empty core-site still (FsShell refuses to start without one).
    assert client_site(own, {}) == {"core-site": {}, "hdfs-site": {"dfs.replication": "1"}}


def test_an_s3_gateways_key_pair_is_kept_masked_and_its_cells_still_get_it(tmp_path):
    # The key pair a cluster with an S3 gateway gives its cells (fields named as the AWS
    # variables' kinds: an access key and a secret key) is masked in its kept state; a cell of
    # it, reading that state back, still gets the pair the gateway takes.
    from perfpost.clusters.ozone import S3_ACCESS_KEY, S3_SECRET_KEY

    state = _state({"ozone-site": {}})
    state["deployment"]["spec"]["roles"]["s3g"] = ["localhost"]
    state["deployment"]["fields"] = {
        "s3": "http://127.0.0.1:9878",
        "s3_access_key": S3_ACCESS_KEY,
        "s3_secret_key": S3_SECRET_KEY,
    }
    sdir = tmp_path / "start-1"
    sdir.mkdir()
    clusterstate.write_state(sdir, state)
    text = (sdir / "state.json").read_text()
    assert S3_ACCESS_KEY not in text
    assert S3_SECRET_KEY not in text
    kept = json.loads(text)
    assert kept["deployment"]["fields"]["s3"] == "http://127.0.0.1:9878"
    spec = ClusterSpec.from_dict(state["deployment"]["spec"])
    got = deploy.Lease([deploy.Held(spec, 1, kept)]).fields()
    assert got["cluster.s3_access_key"] == S3_ACCESS_KEY
    assert got["cluster.s3_secret_key"] == S3_SECRET_KEY
    assert got["ozone.s3"] == "http://127.0.0.1:9878"
