"""Item 9: delivering a runtime to hosts that share nothing, against plain ``tar | ssh``.

Starts testbed hosts with their own disks (network namespaces: needs root) and delivers
perfpost's provisioned Ozone runtime (about 240 MB of jars):

- baselines: ``tar -cf - . | ssh host 'tar -xf -'`` of the same directory with OpenSSH, to
  one host and to as many hosts at once, timed in this command;
- perfpost to one host, and to every host at once (``deliver.ensure`` per host in parallel,
  as a cluster's start does), each on a fresh connection, connecting included;
- a run where every host has it already: the check on every host, in parallel, on open
  connections (what a cell or a cluster start adds when nothing is shipped).

Targets: all hosts at most 2x one host's plain copy; nothing to ship under 0.5 s. With
--smoke, 2 hosts get a directory of 4 MB made for the purpose instead of the runtime.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from subprocess import PIPE

from benchlib import ROOT, UNREAPED_CPU, Row, hosts_cpu, pick


def small_install(where: Path) -> Path:
    """A directory of 4 MB in 16 files of random bytes, for the smoke run."""
    root = where / "smoke-install"
    (root / "lib").mkdir(parents=True)
    for i in range(16):
        (root / "lib" / f"part-{i}.jar").write_bytes(os.urandom(256 * 1024))
    return root


def run(scale: str, log=print) -> list[Row]:
    sys.path.insert(0, str(ROOT))
    from perfpost import deliver, hostpool, provision
    from perfpost.run.remote import RemoteHost
    from perfpost.tools import freon
    from tests import testbed

    item = "9 deliver"
    if os.geteuid() != 0:
        return [Row(item, "skipped: hosts with their own disks need root", None, "")]
    n = pick(scale, 16, 4, 2)
    bdir = Path(tempfile.mkdtemp(prefix="perfpost-bench-deliver-"))
    if scale == "smoke":
        root, what = small_install(bdir), "a directory"
    else:
        cache = os.environ.get("PERFPOST_CACHE")
        root = provision.install(freon.RUNTIME, None, cache).resolve().parents[1]
        what = "the Ozone runtime"
    size = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    bed = testbed.start(n, bdir, mode="netns")
    rows: list[Row] = []
    try:

        def plain_copy(name: str) -> float:
            """``tar -cf - . | ssh host 'tar -xf -'`` with OpenSSH: seconds."""
            h = bed.host(name)
            ssh = [
                "ssh", "-i", bed.key, "-o", f"UserKnownHostsFile={bed.known_hosts}",
                "-o", "BatchMode=yes", "-p", str(h.port), f"{bed.user}@{h.address}",
            ]  # fmt: skip
            t = time.perf_counter()
            tar = subprocess.Popen(["tar", "-C", str(root), "-cf", "-", "."], stdout=PIPE)
            got = subprocess.run(
                [*ssh, "mkdir -p /tmp/plain && tar -xf - -C /tmp/plain"],
                stdin=tar.stdout,
                capture_output=True,
                check=False,
            )
            tar.wait()
            if got.returncode != 0:
                raise RuntimeError(f"plain tar | ssh failed: {got.stderr.decode()[-300:]}")
            return time.perf_counter() - t

        plain = plain_copy("h1")
        log(f"  tar | ssh to h1: {size / 1e6:.0f} MB in {plain:.2f} s")
        others = [h.name for h in bed.hosts if h.name != "h1"]
        t0 = time.perf_counter()
        with ThreadPoolExecutor(len(others)) as pool:
            list(pool.map(plain_copy, others))
        plain_many = time.perf_counter() - t0
        log(f"  tar | ssh to {len(others)} hosts at once: {plain_many:.2f} s")

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
        t0 = time.perf_counter()
        hostpool.each(fresh, others)  # as a cluster's start delivers
        many = time.perf_counter() - t0
        log(f"  perfpost to {len(others)} hosts at once: {many:.2f} s")

        hosts = [RemoteHost(bed.spec(h.name)) for h in bed.hosts]
        try:
            for h in hosts:
                h.run("true", 30)  # connected, as in a run
            deliver._KNOWN.clear()
            t0 = time.perf_counter()
            shipped = hostpool.each(lambda h: deliver.ensure(h, root).files, hosts)
            there = time.perf_counter() - t0
        finally:
            for h in hosts:
                h.close()
        assert shipped == [0] * len(hosts), shipped
        log(f"  every host has it: checked on {len(hosts)} hosts in {there:.3f} s")
        rows.append(
            Row(
                item,
                f"{what} ({size / 1e6:.0f} MB) to one host: perfpost / tar-over-ssh",
                one / plain,
                "x",
                perfpost=one,
                baseline=plain,
                baseline_unit="s",
                baseline_name="tar-over-ssh, one host",
            )
        )
        rows.append(
            Row(
                item,
                f"to {len(others)} hosts at once: perfpost / tar-over-ssh to as many at once",
                many / plain_many,
                "x",
                perfpost=many,
                baseline=plain_many,
                baseline_unit="s",
                baseline_name=f"tar-over-ssh, {len(others)} hosts",
            )
        )
        ratio = many / plain
        rows.append(
            Row(
                item,
                f"to {len(others)} hosts at once / tar-over-ssh to one host",
                ratio,
                "x",
                target="<= 2x",
                met=ratio <= 2,
                perfpost=many,
                baseline=plain,
                baseline_unit="s",
                baseline_name="tar-over-ssh, one host",
                why=""
                if ratio <= 2
                else "every byte leaves this machine once per host (hosts do not pass it on "
                f"to each other); plain OpenSSH to as many hosts takes {plain_many:.1f} s "
                "here, where the hosts share this machine's cores and disk",
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
        # The hosts' sshd, tar and digests ran for this item: its own CPU, not others'.
        UNREAPED_CPU.append(hosts_cpu(bed))
        bed.stop()
        shutil.rmtree(bdir, ignore_errors=True)
    return rows
