"""What changed between two runs besides the code, from environments written here by hand:
one fact changed, a host only one run has, equal runs, files missing, clusters; and the
documentation's example (docs/statistics.md)."""

import copy
import csv
import json
import re
from pathlib import Path

from perfpost.analysis import envdiff
from perfpost.analysis.tidy import CELL_COLUMNS
from tests.conftest import ROOT

EXP = "writes"

# A host as `perfpost env` writes it (the keys of perfpost.run.envinfo.parse, plus "host").
ENV = {
    "schema_version": 1,
    "complete": True,
    "host": "h1",
    "hostname": "node-1",
    "vendor": "Dell Inc. PowerEdge R440",
    "kernel": "Linux 6.1.0-18-amd64 x86_64",
    "os": "Debian GNU/Linux 12 (bookworm)",
    "cpu": {"model": "Intel(R) Xeon(R) Silver 4210", "sockets": 2, "cores": 20, "threads": 40},
    "memory_bytes": 68719476736,
    "disks": [
        {
            "name": "nvme0n1",
            "model": "Samsung SSD 980 PRO 1TB",
            "size_bytes": 1000204886016,
            "rotational": False,
            "transport": "nvme",
        }
    ],
    "sysctl": {"vm.dirty_ratio": "20", "vm.dirty_background_ratio": "10"},
    "java": 'openjdk version "17.0.15" 2025-04-15\nOpenJDK Runtime Environment',
    "ozone_version": None,
    "hadoop_version": "Hadoop 3.4.2\nSource code repository https://github.com/apache/hadoop",
}

# The columns the tables step writes (cells.csv), whatever they grow to.
CELLS_HEADER = list(CELL_COLUMNS)


def env(host: str, **over) -> dict:
    e = copy.deepcopy(ENV)
    e["host"] = host
    e["hostname"] = f"node-{host}"
    for key, value in over.items():
        if key == "dirty_ratio":
            e["sysctl"]["vm.dirty_ratio"] = value
        else:
            e[key] = value
    return e


def write_run(
    root: Path,
    envs: dict[str, dict],
    cells: list[dict] | None = None,
    states: dict | None = None,
    experiment: str = EXP,
) -> Path:
    """A run's results tree as perfpost leaves it: results/<exp>/{env/<host>.json,cells.csv}
    and results/clusters/<id>/start-<n>/state.json; returns its tidy table's path."""
    exp = root / "results" / experiment
    (exp / "env").mkdir(parents=True)
    for host, e in envs.items():
        (exp / "env" / f"{host}.json").write_text(json.dumps(e))
    if cells is not None:
        with (exp / "cells.csv").open("w", newline="") as fh:
            w = csv.DictWriter(fh, CELLS_HEADER)
            w.writeheader()
            for row in cells:
                w.writerow({"experiment": experiment, "cell": "bs=1M", "repeat": 1, **row})
    for ref, state in (states or {}).items():
        sdir = root / "results" / "clusters" / ref
        sdir.mkdir(parents=True)
        (sdir / "state.json").write_text(json.dumps(state))
    return exp / "tidy.csv"


def same_tool(envs: dict) -> list[dict]:
    return [{"host": h, "tool_version": "dd (coreutils) 9.1"} for h in envs]


def compared(tmp_path: Path, base: dict, cand: dict, changed=(), **kw):
    """Two runs' differences and their markdown; each host ran the same dd unless the cells
    are given."""
    b = envdiff.read_run(write_run(tmp_path / "a", base, kw.get("base_cells", same_tool(base))))
    c = envdiff.read_run(write_run(tmp_path / "b", cand, kw.get("cand_cells", same_tool(cand))))
    diffs = envdiff.differences(b, c, changed)
    return diffs, envdiff.markdown(diffs, b, c, changed), b, c


def test_one_changed_fact_on_one_of_two_hosts_is_the_only_difference_and_warned(tmp_path):
    diffs, text, *_ = compared(
        tmp_path,
        {"h1": env("h1"), "h2": env("h2")},
        {"h1": env("h1"), "h2": env("h2", dirty_ratio="40")},
    )
    assert diffs == [
        {"fact": "vm.dirty_ratio", "host": "h2", "old": "20", "new": "40", "expected": False}
    ]
    warn = (
        "Warning: besides the code, 1 fact of the environment changed: `vm.dirty_ratio` on h2 "
        "(20 -> 40). A difference in the table may come from it; name what you meant to "
        "change with --changed."
    )
    assert text == (
        f"Environment, base ({tmp_path}/a/results/writes) -> candidate "
        f"({tmp_path}/b/results/writes):\n"
        "\n"
        "- h2:\n"
        "  - `vm.dirty_ratio`: 20 -> 40\n"
        "\n"
        f"{warn}\n"
    )
    assert envdiff.warning(diffs) == warn


def test_changed_names_a_fact_or_the_facts_under_a_dotted_prefix(tmp_path):
    base = {"h1": env("h1")}
    cand = {"h1": env("h1", dirty_ratio="40", kernel="Linux 6.12.0 x86_64")}
    for names, expected in (
        (["vm.dirty_ratio"], {"vm.dirty_ratio": True, "kernel": False}),
        (["vm"], {"vm.dirty_ratio": True, "kernel": False}),
        (["vm.dirty"], {"vm.dirty_ratio": False, "kernel": False}),  # not at a dot
        (["kernel", "vm.dirty_ratio"], {"vm.dirty_ratio": True, "kernel": True}),
    ):
        diffs, text, *_ = compared(tmp_path / "-".join(names), base, cand, names)
        assert {d["fact"]: d["expected"] for d in diffs} == expected, names
        warned = [f for f, named in expected.items() if not named]
        if warned:
            assert text.count("\nWarning: ") == 1
            for fact in warned:
                assert f"`{fact}` on h1" in text.split("Warning: ")[1]
        else:
            assert "Warning" not in text
            assert envdiff.warning(diffs, names) is None
    _, text, *_ = compared(tmp_path / "java", base, cand, ["java", "vm"])
    assert "\n--changed java: no such fact differs.\n" in text


def test_a_host_only_one_run_has_is_named_and_the_rest_compared(tmp_path):
    diffs, text, *_ = compared(
        tmp_path,
        {"h1": env("h1"), "h2": env("h2")},
        {"h1": env("h1", memory_bytes=34359738368)},
    )
    assert diffs == [
        {
            "fact": "memory",
            "host": "h1",
            "old": 68719476736,
            "new": 34359738368,
            "expected": False,
        },
        {"fact": "host", "host": "h2", "old": "present", "new": "absent", "expected": False},
    ]
    body = text.split("\n\n")[1]
    # 64 GiB and 32 GiB, in bytes and in dd's SI units as the post writes sizes.
    assert body == (
        "- h1:\n"
        "  - `memory`: 68719476736 B (68.7 GB) -> 34359738368 B (34.4 GB)\n"
        "- h2: only in base"
    )


def test_equal_environments_say_so_in_one_line(tmp_path):
    cells = [{"host": "h1", "tool_version": "dd (coreutils) 9.1"}]
    diffs, text, *_ = compared(
        tmp_path, {"h1": env("h1")}, {"h1": env("h1")}, base_cells=cells, cand_cells=cells
    )
    assert diffs == []
    assert text == (
        f"Environment, base ({tmp_path}/a/results/writes) -> candidate "
        f"({tmp_path}/b/results/writes): no difference in the environment (host h1).\n"
    )


def test_tool_versions_come_from_the_cells_and_a_missing_env_file_is_named(tmp_path):
    diffs, text, *_ = compared(
        tmp_path,
        {"h1": env("h1"), "h2": env("h2")},
        {"h1": env("h1")},  # h2 ran cells, but its env file is gone
        base_cells=[
            {"host": "h1", "tool_version": "dd (coreutils) 9.1"},
            {"host": "h2", "tool_version": "dd (coreutils) 9.1"},
        ],
        cand_cells=[
            {"host": "h1", "tool_version": "dd (coreutils) 9.4"},
            # h2's cell failed before dd said its version: nothing known to compare.
            {"host": "h2", "tool_version": "", "status": "failed"},
        ],
    )
    assert diffs == [
        {
            "fact": "tool_version",
            "host": "h1",
            "old": "dd (coreutils) 9.1",
            "new": "dd (coreutils) 9.4",
            "expected": False,
        }
    ]
    missing = tmp_path / "b" / "results" / EXP / "env" / "h2.json"
    assert f"Not compared:\n\n- h2: environment not recorded in candidate: no {missing}\n" in text


def test_a_table_with_nothing_beside_it_is_not_compared_and_not_warned(tmp_path):
    write_run(tmp_path / "a", {"h1": env("h1")})
    alone = tmp_path / "copied" / "before.csv"
    b = envdiff.read_run(tmp_path / "a" / "results" / EXP / "tidy.csv")
    c = envdiff.read_run(alone)
    diffs = envdiff.differences(b, c)
    assert diffs == []
    text = envdiff.markdown(diffs, b, c)
    assert text.startswith(
        f"Environment, base ({tmp_path}/a/results/writes) -> candidate "
        f"({tmp_path}/copied): not compared.\n"
    )
    assert (
        f"- environment not recorded in candidate: no {tmp_path}/copied/env/<host>.json nor "
        f"{tmp_path}/copied/cells.csv beside its table\n" in text
    )
    assert "Warning" not in text


def test_a_failed_capture_is_named_not_compared(tmp_path):
    failed = {"schema_version": 1, "complete": False, "error": "ssh: h1: timed out", "host": "h1"}
    diffs, text, *_ = compared(tmp_path, {"h1": env("h1")}, {"h1": failed})
    assert diffs == []
    assert (
        "- h1: environment not recorded in candidate: its capture failed (ssh: h1: timed out)\n"
        in text
    )
    assert "no difference in what both runs recorded" in text


def state(container_size: str | None, om_port: str) -> dict:
    """A cluster start's state.json, the parts the post reads of it."""
    changed = [{"file": "ozone-site", "key": "ozone.om.address", "value": f"h1:{om_port}"}]
    if container_size:
        changed.append(
            {"file": "ozone-site", "key": "ozone.scm.container.size", "value": container_size}
        )
    return {
        "status": "stopped",
        "deployment": {
            "spec": {
                "name": "ozone",
                "kind": "ozone",
                "version": "2.2.0",
                "roles": {"scm": ["h1"], "om": ["h1"], "datanode": ["h1"]},
                "site": {},
                "jvm": {},
                "env": {},
            },
            "version": "2.2.0(Katmai)\nSource code repository git@github.com:apache/ozone.git",
            "changed": changed,
        },
    }


def test_cluster_configuration_keys_differ_by_name_and_placement_is_left_out(tmp_path):
    def run(side, ref, st):
        cells = [{"host": "h1", "tool_version": "freon 2.2.0", "clusters": ref}]
        return envdiff.read_run(write_run(tmp_path / side, {"h1": env("h1")}, cells, {ref: st}))

    # The OM's port differs (perfpost's own placement); the container size was set in one
    # run and left at the release's default in the other.
    b = run("a", "ozone-1111111111/start-1", state("1GB", "9862"))
    c = run("b", "ozone-2222222222/start-1", state(None, "40123"))
    diffs = envdiff.differences(b, c, ["cluster.ozone.conf"])
    assert diffs == [
        {
            "fact": "cluster.ozone.conf.ozone.scm.container.size",
            "host": None,
            "old": "1GB",
            "new": "(default)",
            "expected": True,
        }
    ]
    text = envdiff.markdown(diffs, b, c, ["cluster.ozone.conf"])
    assert "- clusters:\n  - `cluster.ozone.conf.ozone.scm.container.size`: 1GB -> (default)" in (
        text
    )
    assert "Warning" not in text


def test_the_documented_example_is_what_compare_prints_of_its_runs(tmp_path, monkeypatch):
    # The documented runs: h1's vm.dirty_ratio raised, h3 added, and the container size of
    # cluster ozone set to 5GB where it was 1GB, which --changed names.
    monkeypatch.chdir(tmp_path)
    before = {"h1": env("h1"), "h2": env("h2")}
    after = {"h1": env("h1", dirty_ratio="40"), "h2": env("h2"), "h3": env("h3")}
    runs = []
    for side, envs, ref, size in (
        ("before", before, "ozone-1111111111/start-1", "1GB"),
        ("after", after, "ozone-2222222222/start-1", "5GB"),
    ):
        cells = [{"host": h, "tool_version": "freon 2.2.0", "clusters": ref} for h in envs]
        tidy_csv = write_run(Path(side), envs, cells, {ref: state(size, "9862")}, "onefile")
        runs.append(envdiff.read_run(tidy_csv))
    diffs = envdiff.differences(*runs, ["cluster.ozone.conf"])
    text = envdiff.markdown(diffs, *runs, ["cluster.ozone.conf"])
    page = (ROOT / "docs" / "statistics.md").read_text()
    (example,) = re.findall(r"```text\n(Environment, base .*?)```", page, re.S)
    assert text == example
