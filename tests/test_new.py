"""``perfpost new``: the starting config it writes for each tool loads through perfpost's
config loader as a config file does (strict YAML, the schema, each tool's parameter checks,
the comparisons), names the hosts asked for, never overwrites a file, and a dry run of the
workflow on it plans its cells."""

from __future__ import annotations

import subprocess

import pytest
import yaml

from perfpost import glue
from perfpost.plan.build import build_plan
from perfpost.plan.loading import load_yaml
from tests.conftest import BIN, ROOT, env_with_venv
from tests.e2e import make_checkout, snakemake

TOOLS = ("command", "dd", "fio", "freon", "teragen")


def job_counts(output: str) -> dict[str, int]:
    """Snakemake's "Job stats" table: rule -> jobs it would run."""
    lines = output.splitlines()
    start = lines.index("Job stats:") + 3  # the heading, the columns' names, their rule
    counts = {}
    for line in lines[start:]:
        parts = line.split()
        if len(parts) != 2 or not parts[1].isdigit():
            break
        counts[parts[0]] = int(parts[1])
    return counts


def perfpost(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(BIN / "perfpost"), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env_with_venv(),
        check=False,
    )


@pytest.mark.parametrize("tool", TOOLS)
@pytest.mark.parametrize("hosts", [["h1", "h2"], ["localhost"], ["localhost", "lab-3.example"]])
def test_the_starting_config_loads_as_a_config_file(tool, hosts, tmp_path):
    from perfpost.cli import main

    path = tmp_path / "my.yaml"
    assert main(["new", "--tool", tool, "--hosts", ",".join(hosts), "-o", str(path)]) == 0
    glue.read_strictly([str(path)])  # duplicate keys and YAML errors, naming the line
    config = load_yaml(path)
    plan = build_plan(config)
    (name,) = plan.experiments
    assert config["experiments"][name]["tool"] == tool
    runs = list(plan.jobs())
    # Every host asked for runs every cell, five times: at least two cells to compare.
    assert {s.host["name"] for s in runs} == set(hosts)
    cells = {s.cell for s in runs}
    assert len(cells) >= 2
    assert len(runs) == len(cells) * len(hosts) * 5
    remote = [h for h in hosts if h != "localhost"]
    assert sorted(config.get("hosts", {})) == sorted(remote)  # localhost needs no entry
    assert "# " in path.read_text()  # commented, for a person


def test_it_prints_the_config_without_a_file():
    done = perfpost("new", "--tool", "fio", "--hosts", "h1,h2,h3")
    assert done.returncode == 0, done.stderr
    config = yaml.safe_load(done.stdout)
    assert list(config["hosts"]) == ["h1", "h2", "h3"]
    (exp,) = config["experiments"].values()
    assert exp["hosts"] == ["h1", "h2", "h3"]


def test_it_never_writes_over_a_file(tmp_path):
    path = tmp_path / "my.yaml"
    path.write_text("mine\n")
    done = perfpost("new", "--tool", "dd", "-o", str(path))
    assert done.returncode == 2
    assert f"{path} exists" in done.stderr
    assert path.read_text() == "mine\n"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--tool", "dd", "--hosts", "h1,h1"], "a host named twice"),
        (["--tool", "dd", "--hosts=h1,.h2"], "host name '.h2'"),
        (["--tool", "dd", "--hosts", ","], "name at least one host"),
        (["--tool", "dd", "--name", "my run"], "experiment name 'my run'"),
    ],
)
def test_bad_names_are_refused_with_the_name(args, said):
    done = perfpost("new", *args)
    assert done.returncode == 2
    assert said in done.stderr


def test_an_unknown_tool_is_refused_by_the_command_line():
    done = perfpost("new", "--tool", "iperf")
    assert done.returncode == 2
    assert "invalid choice: 'iperf'" in done.stderr


def test_a_dry_run_of_the_workflow_plans_its_cells(tmp_path):
    work = make_checkout(tmp_path / "work", (ROOT / "config" / "config.yaml").read_text())
    done = perfpost("new", "--tool", "dd", "--hosts", "h1,h2", "-o", "my.yaml", cwd=work)
    assert done.returncode == 0, done.stderr
    dry = snakemake(work, "-n", "--configfile", "my.yaml", "--replace-workflow-config", "report")
    assert dry.returncode == 0, dry.stdout[-2000:] + dry.stderr[-3000:]
    jobs = job_counts(dry.stdout + dry.stderr)
    # 2 cells x 2 hosts x 5 repeats; each host's environment once; one post.
    assert jobs["cell"] == 20
    assert jobs["env"] == 2
    assert jobs["post"] == 1
    assert not (work / "results").exists()  # a dry run makes nothing
