"""Helpers for end-to-end tests: a copy of the workflow in a temporary directory, run for real."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

import yaml

from tests.conftest import ROOT, env_with_venv, snakemake_bin

WORKFLOW_FILES = ("Snakefile", "workflow/rules", "workflow/report", "profiles", "envs")
# The daemons of the clusters the tests deploy start with the client compiler and the serial
# collector, as perfpost's own unmeasured JVMs do: their start-up is what most of the suite's
# time goes to on two cores (an Ozone was ready in 15 s instead of 22 on a quiet machine), and
# no test measures their speed. Every JVM of the suite also gets the client compiler from
# the JDK it runs on (tests/quickjava.py), the default run's included; this adds the serial
# collector for the daemons, and keeps the client compiler where a test runs without it.
QUICK_DAEMONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


# Every Ozone the tests deploy runs its SCM's container-report executor on one thread, not
# ten. Each of its threads polls its queue every millisecond (FixedThreadPoolWithAffinity-
# Executor's ContainerReportProcessTask: queue.poll(1, MILLISECONDS)), so an idle single-host
# Ozone took 26-29% of a core, 19 points of it in those ten threads, and 12% with one
# (measured here: 60 s idle in a cpuacct group, after the cluster was ready). Tests hold
# Ozones up for most of the suite, several at once, on two cores. The key is Ozone's own
# (ozone.scm.event. + camelize(CONTAINER_REPORT_OR_INCREMENTAL_CONTAINER_REPORT) +
# .thread.pool.size); the posts of the tests' runs list it as a changed setting. The default
# config sets it on its own Ozones (config/config.yaml), which this leaves as they are.
QUIET_SCM = {"ozone.scm.event.ContainerReportOrIncrementalContainerReport.thread.pool.size": "1"}


def quiet_scm(config: dict) -> dict:
    """``config`` with :data:`QUIET_SCM` under every Ozone cluster's ``ozone-site`` (a key
    the config sets itself wins)."""
    clusters = config.get("clusters")
    if not isinstance(clusters, dict):
        return config
    out = {}
    for name, c in clusters.items():
        if isinstance(c, dict) and c.get("kind") == "ozone":
            c = {**c, "ozone-site": {**QUIET_SCM, **(c.get("ozone-site") or {})}}
        out[name] = c
    return {**config, "clusters": out}


def quick(clusters: dict) -> dict:
    """``clusters`` (a config's) with :data:`QUICK_DAEMONS` where a cluster sets no JVM."""
    return {name: {"jvm": QUICK_DAEMONS, **c} for name, c in clusters.items()}


def make_checkout(dest: Path, config: dict | str) -> Path:
    """The workflow as a user has it (Snakefile, rules, profile) with ``config`` as its config."""
    for rel in WORKFLOW_FILES:
        src = ROOT / rel
        if src.is_dir():
            shutil.copytree(src, dest / rel)
        else:
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(src, dest / rel)
    (dest / "config").mkdir(exist_ok=True)
    text = config if isinstance(config, str) else yaml.safe_dump(quiet_scm(config), sort_keys=False)
    (dest / "config" / "config.yaml").write_text(text)
    return dest


def shrunk_example(
    name: str,
    experiment: str,
    tmp_path: Path,
    cluster_dir: Path,
    tools: dict,
    repeats: int,
    edits: dict[str, str],
    quick_daemons: bool = False,
) -> dict:
    """A config example as a test runs it on one machine: its experiment's command shrunk by
    ``edits`` (text -> text), its scratch and every cluster's directories under this test's,
    ``repeats`` runs a cell, its tools provisioned as ``tools`` says."""
    config = yaml.safe_load((ROOT / "config" / "examples" / name).read_text())
    exp = config["experiments"][experiment]
    for old, new in edits.items():
        assert old in exp["params"]["run"], (name, old)
        exp["params"]["run"] = exp["params"]["run"].replace(old, new)
    exp["params"]["dir"] = str(tmp_path / "scratch")
    exp["repeats"] = repeats
    if quick_daemons:
        config["clusters"] = quick(config["clusters"])
    for cluster in config["clusters"].values():
        cluster["dir"] = str(cluster_dir)
    config["tools"] = tools
    return config


def on_testbed(example: dict, inventory_file: str, cache: Path) -> dict:
    """A config example as the README's command runs it with the testbed's inventory merged
    in (its hosts' keys over the inventory's), every tool provisioned into ``cache``."""
    inventory = yaml.safe_load(Path(inventory_file).read_text())
    cfg = {**example, "ssh": inventory["ssh"]}
    cfg["hosts"] = {
        h: {**spec, **example.get("hosts", {}).get(h, {})} for h, spec in inventory["hosts"].items()
    }
    cfg["tools"] = {k: {**v, "cache": str(cache)} for k, v in example["tools"].items()}
    if "clusters" in example:
        cfg["clusters"] = quick(example["clusters"])
    return cfg


def run_on_testbed(
    example: str,
    testbed: object,
    ozone_cache: tuple[Path, object],
    work: Path,
    edit: Callable[[dict], None],
    needs: str,
) -> Path:
    """``config/examples/<example>`` run as the README's command runs it on the testbed's
    hosts (:func:`on_testbed`), once ``edit`` shrank it: its checkout, the run finished.
    Skipped where the testbed's hosts share one address (``needs`` says what needs more)."""
    if testbed.mode != "netns":  # type: ignore[attr-defined]
        import pytest

        pytest.skip(f"{needs} need hosts with addresses of their own: network namespaces")
    cache, _ = ozone_cache
    cfg = on_testbed(
        yaml.safe_load((ROOT / "config" / "examples" / example).read_text()),
        testbed.inventory,  # type: ignore[attr-defined]
        cache,
    )
    edit(cfg)
    make_checkout(work, cfg)
    result = snakemake(work, "--cores", "2", "report", timeout=1500)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return work


def snakemake(
    workdir: Path, *args: str, timeout: float = 1200, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """``snakemake *args`` in ``workdir``. Past ``timeout`` it is stopped as Ctrl-C stops it
    (perfpost then stops the clusters it started), its whole process group killed if that
    does not end it, and TimeoutExpired raised: a run that overran leaves no daemon behind."""
    argv = [snakemake_bin(), *args]
    proc = subprocess.Popen(
        argv,
        cwd=workdir,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**env_with_venv(), **(env or {})},
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        preexec_fn=interruptible,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except (subprocess.TimeoutExpired, KeyboardInterrupt) as stopped:
        out, err = stop_run(proc)
        if isinstance(stopped, KeyboardInterrupt):
            raise
        raise subprocess.TimeoutExpired(argv, timeout, output=out, stderr=err) from None
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def interruptible() -> None:
    """In a run's process (``preexec_fn``): Ctrl-C works even where pytest was started with
    it ignored (a background job of a script: ``pytest &`` ignores SIGINT, and so would every
    run it starts), and the run gets it should pytest itself die."""
    import ctypes

    signal.signal(signal.SIGINT, signal.SIG_DFL)
    ctypes.CDLL(None).prctl(1, signal.SIGINT)  # PR_SET_PDEATHSIG


def stop_run(proc: subprocess.Popen) -> tuple[str, str]:
    """Stop a snakemake run started in a session of its own as Ctrl-C does (perfpost stops
    its clusters then), its process group killed if it has not ended 180 s on; what it said
    on its pipes, if it had any."""
    os.killpg(proc.pid, signal.SIGINT)
    try:
        return proc.communicate(timeout=180)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        return proc.communicate()


def planned_records(workdir: Path) -> list[str]:
    """Record paths a dry run would make: exactly the cells Snakemake would run."""
    result = snakemake(workdir, "-n", "--cores", "2", "report")
    assert result.returncode == 0, result.stdout + result.stderr
    return sorted(set(re.findall(r"output: (results/\S+/record\.json)", result.stdout)))


def records(work: Path, experiment: str) -> list[dict]:
    """Every attempt's record of ``experiment`` under ``work``, each with its ``path``."""
    paths = sorted((work / "results" / experiment / "cells").glob("*/*/r*/attempt-*/record.json"))
    return [{**json.loads(p.read_text()), "path": p} for p in paths]


def front_matter(text: str) -> dict:
    assert text.startswith("---\n"), text[:80]
    return yaml.safe_load(text.split("---\n", 2)[1])


def sections(text: str) -> list[str]:
    return re.findall(r"^## (.+)$", text, re.M)


def prose(text: str) -> str:
    """A post's prose: what a reader reads as sentences, without its front matter, code
    blocks, tables and image lines (their alt text is the figure's title, not prose)."""
    if text.startswith("---\n"):
        text = text.split("---\n", 2)[2]
    text = re.sub(r"^```.*?^```[ \t]*$", "", text, flags=re.M | re.S)
    lines = [
        ln
        for ln in text.splitlines()
        if not ln.lstrip().startswith("|") and not ln.lstrip().startswith("![")
    ]
    return "\n".join(lines)


def prose_words(text: str) -> int:
    """Words of :func:`prose`, as a word counter counts them (runs of non-space)."""
    return len(prose(text).split())


def notebook_of(post: Path) -> str:
    """The post's notebook, then the post itself: for tests that check what the record
    holds wherever it sits (a section named in both, the notebook's comes first)."""
    note = post.parent / "notebook.md"
    return (note.read_text() + "\n" if note.is_file() else "") + post.read_text()


def image_links(text: str) -> list[str]:
    return re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)


def experiment_dict(**over: object) -> dict:
    """An experiment as the post step gets it (its public fields and the method text), for
    posts rendered from tables a test made."""
    base = {
        "name": "e",
        "title": "t",
        "tags": [],
        "description": "",
        "tool": "dd",
        "params": {},
        "axes": {},
        "hosts": ["localhost"],
        "repeats": 1,
        "after": [],
        "sync_threshold": 1.0,
        "exclude": [],
        "zip": [],
        "plot": {},
        "compare": [],
        "method": [],
    }
    return {**base, **over}
