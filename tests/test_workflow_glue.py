"""Which attempt of a cell the workflow wants, and which records the report target names:
the rules behind re-running only what failed or was deleted."""

import shlex
from pathlib import Path

from perfpost import glue, paths
from perfpost.glue.attempts import records_to_name, request_rerun, wanted_attempt
from perfpost.plan.build import build_plan
from perfpost.records import write_json_atomic


def leave(root: Path, host: str, attempt: int, status: str | None) -> None:
    d = root / paths.cell_dir("e", "a=1", host, 1, attempt)
    d.mkdir(parents=True, exist_ok=True)
    if status:
        write_json_atomic(d / "record.json", {"schema_version": 1, "status": status})


def test_a_cell_never_tried_wants_attempt_1(tmp_path):
    assert wanted_attempt("e", "a=1", "h1", 1, tmp_path) == 1


def test_done_and_skipped_cells_are_finished(tmp_path):
    leave(tmp_path, "h1", 1, "done")
    leave(tmp_path, "h2", 1, "skipped")
    assert wanted_attempt("e", "a=1", "h1", 1, tmp_path) == 1
    assert wanted_attempt("e", "a=1", "h2", 1, tmp_path) == 1


def test_failed_or_interrupted_cells_get_a_new_attempt(tmp_path):
    leave(tmp_path, "h1", 1, "failed")
    assert wanted_attempt("e", "a=1", "h1", 1, tmp_path) == 2
    leave(tmp_path, "h1", 2, None)  # interrupted: a directory without a record
    assert wanted_attempt("e", "a=1", "h1", 1, tmp_path) == 3
    leave(tmp_path, "h1", 3, "done")
    assert wanted_attempt("e", "a=1", "h1", 1, tmp_path) == 3


def test_a_cell_started_together_is_finished_only_on_every_host(tmp_path):
    leave(tmp_path, "h1", 1, "done")
    leave(tmp_path, "h2", 1, "failed")
    assert wanted_attempt("e", "a=1", ["h1", "h2"], 1, tmp_path) == 2
    leave(tmp_path, "h1", 2, "done")
    leave(tmp_path, "h2", 2, "done")
    assert wanted_attempt("e", "a=1", ["h1", "h2"], 1, tmp_path) == 2
    assert wanted_attempt("e", "a=1", ["h1", "h2", "h3"], 1, tmp_path) == 3


def two_experiments():
    exp = {
        "tool": "dd",
        "params": {"dir": "/var/tmp/p", "bs": "4k"},
        "axes": {"count": [1, 2, 3]},
        "repeats": 1,
    }
    return build_plan({"experiments": {"a": dict(exp), "b": dict(exp)}})


def finish(experiment: str, count: int) -> Path:
    """A finished record of the two experiments' config, as the runner leaves one."""
    path = Path(paths.record(experiment, f"count={count}", "localhost", 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    spec = two_experiments().spec(experiment, f"count={count}", "localhost", 1)
    write_json_atomic(
        path, {"schema_version": 1, "status": "done", "measurement": spec.measurement_id()}
    )
    return path


def test_a_new_matrix_names_no_record(tmp_path, monkeypatch):
    """Nothing is made from the records yet: the posts pull every cell in by themselves."""
    monkeypatch.chdir(tmp_path)
    plan = two_experiments()
    assert records_to_name(plan) == []
    finish("a", 1)  # cells that ran, with no table yet, change nothing
    assert records_to_name(plan) == []


def test_missing_records_are_named_once_anything_is_made_from_them(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    plan = two_experiments()
    for count in (1, 2, 3):
        finish("a", count)
        finish("b", count)
    Path(paths.fill(paths.CELLS_CSV, experiment="a")).write_text("status\n")
    assert records_to_name(plan) == []
    finish("a", 2).unlink()
    finish("b", 3).unlink()  # b has no table: nothing would skip it
    assert records_to_name(plan) == [paths.record("a", "count=2", "localhost", 1, 1)]
    # With a's tables deleted too, its post alone still gets the deleted cell named.
    Path(paths.fill(paths.CELLS_CSV, experiment="a")).unlink()
    Path(paths.fill(paths.POST, experiment="a")).parent.mkdir(parents=True)
    assert records_to_name(plan) == [paths.record("a", "count=2", "localhost", 1, 1)]


def test_a_rerun_request_names_the_new_attempt(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for count in (1, 2, 3):
        finish("a", count)
    Path(paths.fill(paths.ENV_JSON, experiment="a", host="localhost")).parent.mkdir()
    assert records_to_name(two_experiments()) == []
    assert request_rerun("a", "count=3", ["localhost"], 1) == 2
    assert records_to_name(two_experiments()) == [paths.record("a", "count=3", "localhost", 1, 2)]


def leave_measured(root: Path, attempt: int, status: str, measurement: str) -> Path:
    d = root / paths.cell_dir("e", "a=1", "h1", 1, attempt)
    d.mkdir(parents=True, exist_ok=True)
    record = {"schema_version": 1, "status": status, "measurement": measurement}
    write_json_atomic(d / "record.json", record)
    return d / "record.json"


def test_a_record_measured_with_other_parameters_is_passed_over_never_reused(tmp_path):
    leave_measured(tmp_path, 1, "done", "count-1000")
    assert wanted_attempt("e", "a=1", "h1", 1, tmp_path, measurement="count-1000") == 1
    # The config now says count 2000: attempt 1 is stale, a new attempt measures.
    assert wanted_attempt("e", "a=1", "h1", 1, tmp_path, measurement="count-2000") == 2
    leave_measured(tmp_path, 2, "done", "count-2000")
    assert wanted_attempt("e", "a=1", "h1", 1, tmp_path, measurement="count-2000") == 2
    # Back to count 1000: its finished attempt is current again; nothing runs.
    assert wanted_attempt("e", "a=1", "h1", 1, tmp_path, measurement="count-1000") == 1
    # A failed attempt of the current measurement runs again after every attempt.
    leave_measured(tmp_path, 3, "failed", "count-1000")
    assert wanted_attempt("e", "a=1", "h1", 1, tmp_path, measurement="count-1000") == 4
    # A record from before measurements were recorded cannot be shown current: stale.
    leave(tmp_path, "h2", 1, "done")
    assert wanted_attempt("e", "a=1", "h2", 1, tmp_path, measurement="count-1000") == 2


def test_only_what_defines_the_measurement_identifies_a_run():
    base = {
        "ssh": {"connect_timeout": 3},
        "hosts": {"h1": {"address": "10.200.0.2", "max_parallel_cells": 1}},
        "experiments": {
            "e": {
                "tool": "dd",
                "hosts": ["h1"],
                "params": {"dir": "/var/tmp/p", "bs": "4k", "count": 10},
                "timeout": 60,
            }
        },
    }

    def spec(change):
        import copy

        config = copy.deepcopy(base)
        change(config)
        plan = build_plan(config)
        return plan.spec("e", plan.experiments["e"].cells[0].id, "h1", 1)

    first = spec(lambda c: None)
    runtime_only = [
        lambda c: c["ssh"].update(connect_timeout=4),
        lambda c: c["ssh"].update(known_hosts="/etc/ssh/other_known_hosts"),
        lambda c: c["ssh"].update(trust_new_keys=True),
        lambda c: c["hosts"]["h1"].update(max_parallel_cells=2),
        lambda c: c["experiments"]["e"].update(timeout=120),
    ]
    for change in runtime_only:
        other = spec(change)
        assert other.param_json() == first.param_json()
        assert other.measurement_id() == first.measurement_id()
        assert other.to_json() != first.to_json()  # the change is real, and still reaches run-cell
    counted = spec(lambda c: c["experiments"]["e"]["params"].update(count=20))
    assert counted.measurement_id() != first.measurement_id()
    env = spec(lambda c: c["experiments"]["e"].update(env={"OZONE_OPTS": "-Xmx1g"}))
    assert env.measurement_id() != first.measurement_id()


def test_each_config_file_is_read_strictly_once(tmp_path, monkeypatch):
    from perfpost import glue
    from perfpost.plan import loading as pconfig

    path = tmp_path / "config.yaml"
    path.write_text("experiments: {}\n")
    read = []
    monkeypatch.setattr(glue, "_READ_STRICTLY", set())
    monkeypatch.setattr(pconfig, "load_yaml", lambda p: read.append(p) or {})
    # The Snakefile's configfile, then every configfile Snakemake knows: it among them.
    glue.strict_configfile(str(path))
    glue.read_strictly([str(path), str(tmp_path / "." / "config.yaml")])
    assert read == [str(path)]


def test_a_cell_spec_param_is_one_snakemake_does_not_record():
    """Snakemake leaves a param out of its metadata (and does not import pandas to store
    it) when the param's function takes ``output``: its own test says so of ours."""
    from snakemake.rules import Rule

    from perfpost.glue import unrecorded

    by_wildcards = unrecorded(lambda wc: f"spec of {wc}")
    constant = unrecorded('{"cell": "a=1"}')
    assert Rule._is_deriving_function(by_wildcards)
    assert Rule._is_deriving_function(constant)
    assert not Rule._is_deriving_function(lambda wc: "spec")  # the form it replaces
    assert by_wildcards("a=1", ["out"]) == "spec of a=1"
    assert constant("a=1", ["out"]) == '{"cell": "a=1"}'


def test_the_cell_rules_command_survives_the_shell_and_snakemakes_format(monkeypatch):
    # A checkout in a directory with a space and braces: the shell must get one word, and
    # Snakemake's str.format must not take the braces for a placeholder.
    from perfpost.run import cellclient

    monkeypatch.setattr(cellclient, "__file__", "/opt/my {x}/perfpost/run/cellclient.py")
    command = glue.served_job()
    assert command == "python3 -S '/opt/my {{x}}/perfpost/run/cellclient.py'"
    assert shlex.split(command.format()) == [
        "python3",
        "-S",
        "/opt/my {x}/perfpost/run/cellclient.py",
    ]


def test_a_post_s_reproduce_line_is_the_command_that_made_it(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from perfpost import glue

    monkeypatch.chdir(tmp_path)
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.yaml").write_text("experiments: {}\n")
    (tmp_path / "mine.yaml").write_text("experiments: {}\n")

    def workflow(given, replace):
        return SimpleNamespace(
            config_settings=SimpleNamespace(
                configfiles=[tmp_path / g for g in given], replace_workflow_config=replace
            )
        )

    assert glue.reproduce_command(glue.config_files(workflow([], False))) == (
        "snakemake --cores 6 report"
    )
    # The README's way to run an example: that file alone.
    assert glue.reproduce_command(glue.config_files(workflow(["mine.yaml"], True))) == (
        "snakemake --cores 6 --configfile mine.yaml --replace-workflow-config report"
    )
    # Over the default: both, the given one last (it overrides).
    assert glue.config_files(workflow(["mine.yaml"], False)) == [
        "config/config.yaml",
        str(tmp_path / "mine.yaml"),
    ]
    assert glue.reproduce_command(glue.config_files(workflow(["mine.yaml"], False))) == (
        "snakemake --cores 6 --configfile mine.yaml report"
    )


def test_the_post_describes_the_hosts_of_the_cells_and_of_their_clusters():
    # freon from h1 into an Ozone whose OMs are on h1, h2, h3: the post's set-up lists the
    # three hosts, so each one's environment is captured, h1 once.
    hosts = {h: {"address": f"10.0.0.{i}"} for i, h in enumerate(("h1", "h2", "h3"), 1)}
    plan = build_plan(
        {
            "hosts": hosts,
            "experiments": {
                "e": {
                    "tool": "freon",
                    "cluster": "oz",
                    "hosts": ["h1"],
                    "params": {"subcommand": "omkg", "dir": "/var/tmp/p", "options": {"n": 1}},
                }
            },
            "clusters": {
                "oz": {
                    "kind": "ozone",
                    "roles": {"scm": "h1", "om": ["h2", "h1", "h3"], "datanode": "h1"},
                }
            },
        }
    )
    assert glue.env_files(plan, "e") == [
        paths.fill(paths.ENV_JSON, experiment="e", host=h) for h in ("h1", "h2", "h3")
    ]
