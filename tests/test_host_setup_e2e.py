"""An experiment that makes its hosts ready and restores them, on three real sshd hosts: a
tmpfs mounted as the "memdisk" by `setup` (through sudo) and removed by `teardown`, a Python
step through the host's Fabric connection, a set-up that fails on one host, and a run
stopped with Ctrl-C in the middle."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tests.conftest import env_with_venv, host_spec, snakemake_bin
from tests.e2e import interruptible, make_checkout, notebook_of, records, stop_run

pytestmark = pytest.mark.e2e
HOSTS = ["h1", "h2", "h3"]
MEMDISK = "/var/tmp/memdisk"  # each host's own /var/tmp: nothing the controller shares
MOUNT = {
    "run": f"mkdir -p {MEMDISK} && mount -t tmpfs -o size=64m perfpost-memdisk {MEMDISK}",
    "sudo": True,
}
UNMOUNT = {"run": f"umount {MEMDISK} && rmdir {MEMDISK}", "sudo": True}
LOOK = f"findmnt -n -o FSTYPE,SOURCE {MEMDISK}; hostname"
REFUSE = '[ "$(hostname)" != h2 ] || { echo "h2: no memdisk here" >&2; exit 4; }'
FABFILE = '''
def where(c):
    """A fabfile's task: the host's own name, through its connection."""
    return c.run("echo python step on $(hostname)", hide=True).stdout.strip()
'''


def experiment(**over) -> dict:
    return {
        "tool": "dd",
        "hosts": HOSTS,
        "params": {"dir": f"{MEMDISK}/dd", "bs": "512", "conv": "fsync"},
        "axes": {"count": [20000]},
        "repeats": 2,
        "setup": [MOUNT, LOOK, {"python": "prep.py:where"}],
        "teardown": [UNMOUNT],
        **over,
    }  # fmt: skip


def checkout(testbed, path: Path, experiments: dict) -> Path:
    inventory = yaml.safe_load(Path(testbed.inventory).read_text())
    make_checkout(path, {**inventory, "experiments": experiments})
    (path / "prep.py").write_text(FABFILE)
    return path


def mounted(testbed) -> dict[str, str]:
    """What each host's own /proc/mounts says of the memdisk, asked over plain SSH."""
    from perfpost.run.remote import RemoteHost

    out = {}
    for h in HOSTS:
        host = RemoteHost(host_spec(testbed, h))
        try:
            got = host.run(
                f"grep ' {MEMDISK} ' /proc/mounts; ls -d {MEMDISK} 2>/dev/null; true", 30
            )
        finally:
            host.close()
        out[h] = got.stdout.strip()
    return out


def states(work: Path) -> dict[str, dict]:
    """Each host's set-up state, by host."""
    out = {}
    for f in sorted((work / "results" / "clusters").glob("setup-*/start-*/state.json")):
        state = json.loads(f.read_text())
        out.setdefault(state["deployment"]["spec"]["roles"]["host"][0], []).append(state)
    return out


@pytest.fixture(scope="module")
def prepared_run(testbed, tmp_path_factory):
    from tests.e2e import snakemake

    work = checkout(
        testbed,
        tmp_path_factory.mktemp("setup"),
        {
            "memdisk": experiment(),
            # h2 refuses: its cells fail with the step's output, the other hosts' run.
            "refused": experiment(
                setup=[REFUSE],
                teardown=["echo restored $(hostname)"],
                params={"dir": "/var/tmp/refused", "bs": "512"},
            ),
        },
    )
    result = snakemake(work, "--cores", "6", "report", timeout=900)
    return work, result


def test_each_host_is_set_up_before_its_runs_and_restored_after_them(prepared_run, testbed):
    work, result = prepared_run
    assert result.returncode == 0, result.stderr[-4000:]
    recs = records(work, "memdisk")
    assert len(recs) == 2 * 3
    assert {r["status"] for r in recs} == {"done"}, [r["reason"] for r in recs]
    got = states(work)
    for h in HOSTS:
        (memdisk,) = [s for s in got[h] if s["deployment"]["spec"]["steps"]["setup"][0] == MOUNT]
        assert memdisk["status"] == "stopped"
        # Every step ran on its own host: tmpfs under the memdisk, the host's own name, and
        # the Python step through that host's connection.
        assert [d["exit"] for d in memdisk["setup"]] == [0, 0, 0]
        assert memdisk["setup"][1]["output"].split() == ["tmpfs", "perfpost-memdisk", h]
        assert memdisk["setup"][2]["output"].strip() == f"python step on {h}"
        assert [(d["command"], d["exit"]) for d in memdisk["teardown"]] == [(UNMOUNT["run"], 0)]
        # Before the host's first run began, after its last ended (the state's own times).
        mine = [r for r in recs if r["host"] == h]
        assert pd.Timestamp(memdisk["ready"]) <= min(pd.Timestamp(r["start"]) for r in mine)
        assert pd.Timestamp(memdisk["stopped"]) >= max(pd.Timestamp(r["end"]) for r in mine)
    # Nothing is left mounted, on any host.
    assert mounted(testbed) == dict.fromkeys(HOSTS, "")


def test_the_post_says_what_was_done_and_the_notebook_has_each_hosts_output(prepared_run):
    work, _ = prepared_run
    post = (work / "reports" / "memdisk" / "index.md").read_text()
    setup = post.split("## How it was run", 1)[1].split("\n## ", 1)[0]
    assert (
        f"- `h1`, `h2` and `h3` were set up by perfpost before the runs with `{MOUNT['run']}` "
        f"(as root); `{LOOK}`; python `prep.py:where`, "
        f"and restored after them with `{UNMOUNT['run']}` (as root)"
    ) in setup
    notebook = notebook_of(work / "reports" / "memdisk" / "index.md")
    section = notebook.split("## Host set-up", 1)[1].split("\n## ", 1)[0]
    for h in HOSTS:
        assert f"### `{h}`" in section
        assert f"python step on {h}" in section
    assert section.count("teardown step 1") == 3


def test_a_set_up_that_fails_fails_that_hosts_cells_with_its_output(prepared_run):
    work, _ = prepared_run
    recs = records(work, "refused")
    assert {(r["host"], r["status"]) for r in recs} == {
        ("h1", "done"),
        ("h2", "failed"),
        ("h3", "done"),
    }
    for r in recs:
        if r["host"] == "h2":
            assert r["reason"].startswith("host set-up: the setup of h2 failed at step 1"), r
            assert "h2: no memdisk here" in r["reason"]
    (refused,) = [
        s for s in states(work)["h2"] if s["deployment"]["spec"]["steps"]["setup"][0]["run"]
        == REFUSE
    ]  # fmt: skip
    assert refused["status"] == "failed"
    # What had been done is restored: the teardown ran once, on h2.
    assert [d["output"].strip() for d in refused["teardown"]] == ["restored h2"]


def test_ctrl_c_mid_run_restores_every_host_that_was_set_up(testbed, tmp_path):
    # 30 runs a host, each writing 32 MiB into the 64 MiB memdisk and then waiting a second:
    # the first record comes at least 29 s before the last, however busy the machine (dd
    # alone, 51 MB a run, finished all 90 runs between two looks of a loaded test).
    writes = experiment(
        tool="command",
        params={
            "dir": f"{MEMDISK}/dd",
            "run": "dd if=/dev/zero of={work}/x bs=1M count=32 conv=fsync && sleep 1",
        },
        axes={},
        repeats=30,
    )
    work = checkout(testbed, tmp_path / "w", {"memdisk": writes})
    proc = subprocess.Popen(
        [snakemake_bin(), "--cores", "6", "report"],
        cwd=work,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env_with_venv(),
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        preexec_fn=interruptible,  # a Ctrl-C that pytest's own start may have ignored
    )
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and not records(work, "memdisk"):
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.2)
        assert records(work, "memdisk"), "no run finished in 600 s"
    finally:
        stop_run(proc)  # Ctrl-C to the run's process group
    recs = records(work, "memdisk")
    assert len(recs) < 30 * 3  # stopped in the middle
    assert all(r["status"] == "done" for r in recs), [r["reason"] for r in recs]
    got = states(work)
    assert got, "no host was set up"
    for h, starts in got.items():
        for s in starts:
            assert s["status"] in ("stopped", "failed"), (h, s["status"])
            assert [d["exit"] for d in s["teardown"]] == [0], (h, s)
    assert mounted(testbed) == dict.fromkeys(HOSTS, "")
