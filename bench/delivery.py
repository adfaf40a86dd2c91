"""Item 9: delivering a runtime to hosts that share nothing, against plain ``tar | ssh``.

Starts testbed hosts with their own disks (network namespaces: needs root) and delivers
perfpost's provisioned Ozone runtime (about 240 MB of jars):

- baseline: ``tar -cf - . | ssh host 'tar -xf -'`` of the same directory to one host with
  OpenSSH, timed in this command;
- perfpost to one host, and to every host at once (``deliver.ensure`` per host in parallel,
  as a cluster's start does), each on a fresh connection, connecting included;
- a run where every host has it already: the check on every host, in parallel, on open
  connections (what a cell or a cluster start adds when nothing is shipped).

Targets (the issue's): all hosts at most 2x one host's plain copy; nothing to ship under 0.5 s.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from benchlib import ROOT, Row


def run(quick: bool, log=print) -> list[Row]:
    sys.path.insert(0, str(ROOT))
    from perfpost import deliver, provision
    from perfpost.run.remote import RemoteHost
    from perfpost.tools import freon
    from tests import testbed

    item = "9 deliver"
    if os.geteuid() != 0:
        return [Row(item, "skipped: hosts with their own disks need root", None, "")]
    n = 4 if quick else 16
    cache = os.environ.get("PERFPOST_CACHE")
    root = provision.install(freon.RUNTIME, None, cache).resolve().parents[1]
    size = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    bdir = Path(tempfile.mkdtemp(prefix="perfpost-bench-deliver-"))
    bed = testbed.start(n, bdir, mode="netns")
    rows: list[Row] = []
    try:
        h1 = bed.host("h1")
        ssh = [
            "ssh", "-i", bed.key, "-o", f"UserKnownHostsFile={bed.known_hosts}",
            "-o", "BatchMode=yes", "-p", str(h1.port), f"{bed.user}@{h1.address}",
        ]  # fmt: skip
        t0 = time.perf_counter()
        tar = subprocess.Popen(["tar", "-C", str(root), "-cf", "-", "."], stdout=subprocess.PIPE)
        got = subprocess.run(
            [*ssh, "mkdir -p /tmp/plain && tar -xf - -C /tmp/plain"],
            stdin=tar.stdout,
            capture_output=True,
            check=False,
        )
        tar.wait()
        plain = time.perf_counter() - t0
        if got.returncode != 0:
            raise RuntimeError(f"plain tar | ssh failed: {got.stderr.decode()[-300:]}")
        log(f"  tar | ssh to h1: {size / 1e6:.0f} MB in {plain:.2f} s")

        def fresh(name: str) -> float:
            host = RemoteHost(bed.spec(name))
            try:
                t = time.perf_counter()
                d = deliver.ensure(host, root)
                assert d.files > 0, d
                return time.perf_counter() - t
            finally:
                host.close()

        one = fresh("h1")
        log(f"  perfpost to h1: {one:.2f} s")
        others = [h.name for h in bed.hosts if h.name != "h1"]
        t0 = time.perf_counter()
        with ThreadPoolExecutor(len(others)) as pool:
            list(pool.map(fresh, others))
        many = time.perf_counter() - t0
        log(f"  perfpost to {len(others)} hosts at once: {many:.2f} s")

        hosts = [RemoteHost(bed.spec(h.name)) for h in bed.hosts]
        try:
            for h in hosts:
                h.run("true", 30)  # connected, as in a run
            deliver._KNOWN.clear()
            t0 = time.perf_counter()
            with ThreadPoolExecutor(len(hosts)) as pool:
                shipped = list(pool.map(lambda h: deliver.ensure(h, root).files, hosts))
            there = time.perf_counter() - t0
        finally:
            for h in hosts:
                h.close()
        assert shipped == [0] * len(hosts), shipped
        log(f"  every host has it: checked on {len(hosts)} hosts in {there:.3f} s")
        rows.append(
            Row(
                item,
                f"the Ozone runtime ({size / 1e6:.0f} MB) to one host: perfpost / tar | ssh",
                one / plain,
                "x",
                perfpost=one,
                baseline=plain,
                baseline_unit="s",
                baseline_name="tar | ssh, one host",
            )
        )
        ratio = many / plain
        rows.append(
            Row(
                item,
                f"to {len(others)} hosts at once / tar | ssh to one host",
                ratio,
                "x",
                target="<= 2x",
                met=ratio <= 2,
                perfpost=many,
                baseline=plain,
                baseline_unit="s",
                baseline_name="tar | ssh, one host",
                why=""
                if ratio <= 2
                else "every byte leaves this machine once per host (hosts do not pass it on "
                "to each other), through one paramiko transport per host on 2 cores",
            )
        )
        rows.append(
            Row(
                item,
                f"every one of {len(hosts)} hosts has it already: the check, in parallel",
                there,
                "s",
                target="< 0.5 s",
                met=there < 0.5,
            )
        )
    finally:
        bed.stop()
    return rows
