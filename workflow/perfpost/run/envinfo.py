"""What a host is: CPU, memory, disks, kernel, OS, dirty-page sysctls, Java and Hadoop/Ozone.

One POSIX sh script prints sections (``@@section NAME``) from /proc, /sys, lsblk and the tools'
own version commands; :func:`parse` turns that text into a dict. The script only reads, so it
is safe on any host, and works where lscpu or lsblk are missing (the fields are then absent).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

ENV_SCHEMA_VERSION = 1
SECTION = "@@section"

SCRIPT = r"""
s() { echo "@@section $1"; }
s hostname; hostname 2>/dev/null || cat /proc/sys/kernel/hostname
s kernel; uname -srm
s vendor; cat /sys/class/dmi/id/sys_vendor /sys/class/dmi/id/product_name 2>/dev/null
s os; (. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")
s cpuinfo; grep -E '^(model name|physical id|core id|processor)[[:space:]]*:' /proc/cpuinfo
s lscpu; LC_ALL=C lscpu 2>/dev/null
s meminfo; grep -E '^(MemTotal|SwapTotal):' /proc/meminfo
s lsblk; lsblk -J -b -d -o NAME,MODEL,VENDOR,SIZE,ROTA,TYPE,TRAN 2>/dev/null
s dirty; for f in /proc/sys/vm/dirty_*; do echo "vm.${f##*/} = $(cat "$f")"; done
s java; command -v java >/dev/null && java -version 2>&1 | head -n 3
s ozone; command -v ozone >/dev/null && ozone version 2>/dev/null | head -n 30
s hadoop; command -v hadoop >/dev/null && hadoop version 2>/dev/null | head -n 10
s end
"""


def _sections(text: str) -> dict[str, str]:
    out: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        if line.startswith(SECTION + " "):
            current = line[len(SECTION) + 1 :].strip()
            out[current] = []
        elif current is not None:
            out[current].append(line)
    return {k: "\n".join(v).strip() for k, v in out.items()}


def _cpu(cpuinfo: str, lscpu: str) -> dict[str, Any]:
    cpu: dict[str, Any] = {}
    models = re.findall(r"^model name\s*:\s*(.+)$", cpuinfo, re.M)
    if models:
        cpu["model"] = models[0].strip()
    threads = len(re.findall(r"^processor\s*:", cpuinfo, re.M))
    if threads:
        cpu["threads"] = threads
    physical = re.findall(r"^physical id\s*:\s*(\d+)", cpuinfo, re.M)
    cores = re.findall(r"^core id\s*:\s*(\d+)", cpuinfo, re.M)
    if physical and len(physical) == len(cores):
        cpu["sockets"] = len(set(physical))
        cpu["cores"] = len(set(zip(physical, cores, strict=True)))
    fields = dict(
        (k.strip(), v.strip()) for k, _, v in (ln.partition(":") for ln in lscpu.splitlines()) if v
    )
    # lscpu knows the topology even where /proc/cpuinfo hides it (VMs, some ARM kernels).
    try:
        sockets = int(fields["Socket(s)"])
        per_socket = int(fields["Core(s) per socket"])
        cpu.setdefault("sockets", sockets)
        cpu.setdefault("cores", sockets * per_socket)
        cpu.setdefault("threads", int(fields["CPU(s)"]))
    except (KeyError, ValueError):
        pass
    if "Model name" in fields:
        cpu.setdefault("model", fields["Model name"])
    return cpu


def _disks(lsblk: str) -> list[dict[str, Any]]:
    try:
        devices = json.loads(lsblk)["blockdevices"]
    except (ValueError, KeyError, TypeError):
        return []
    disks = []
    for d in devices:
        size = int(d.get("size") or 0)
        if d.get("type") != "disk" or size == 0:
            continue
        vendor = (d.get("vendor") or "").strip()
        model = (d.get("model") or "").strip()
        if vendor.startswith("0x") and not model:
            model = f"unknown model (vendor id {vendor})"  # virtio and friends report only this
        elif vendor and not vendor.startswith("0x") and not model.startswith(vendor):
            model = f"{vendor} {model}".strip()
        rota = d.get("rota")
        disks.append(
            {
                "name": d.get("name"),
                "model": model or "unknown (no model reported: virtual disk?)",
                "size_bytes": size,
                "rotational": rota in (True, "1", 1),
                "transport": d.get("tran"),
            }
        )
    return disks


def parse(text: str) -> dict[str, Any]:
    """The environment dict from the script's output."""
    s = _sections(text)
    env: dict[str, Any] = {"schema_version": ENV_SCHEMA_VERSION}
    env["hostname"] = s.get("hostname", "").splitlines()[0] if s.get("hostname") else None
    env["kernel"] = s.get("kernel") or None
    # The machine as its firmware names it ("Dell Inc. PowerEdge R440"); VMs may have none.
    env["vendor"] = " ".join(s.get("vendor", "").split()) or None
    env["os"] = s.get("os") or None
    env["cpu"] = _cpu(s.get("cpuinfo", ""), s.get("lscpu", ""))
    mem = re.search(r"^MemTotal:\s*(\d+)\s*kB", s.get("meminfo", ""), re.M)
    env["memory_bytes"] = int(mem.group(1)) * 1024 if mem else None
    env["disks"] = _disks(s.get("lsblk", ""))
    env["sysctl"] = dict(
        (k.strip(), v.strip())
        for k, _, v in (ln.partition("=") for ln in s.get("dirty", "").splitlines())
        if k.strip().startswith("vm.dirty_")
    )
    env["java"] = s.get("java") or None
    env["ozone_version"] = s.get("ozone") or None
    env["hadoop_version"] = s.get("hadoop") or None
    env["complete"] = "end" in s
    return env


def capture(host_spec: dict[str, Any], dirs: Sequence[str] = ()) -> dict[str, Any]:
    """The host's environment as :func:`parse` reads it, with the disk probe's timings of the
    spinning disks under ``dirs`` (:mod:`perfpost.run.diskprobe`) where any were given."""
    from perfpost.run import diskprobe
    from perfpost.run.hosts import open_host

    host = open_host(host_spec)
    try:
        result = host.run(SCRIPT, 120)
        probed = host.run(diskprobe.script(dirs), 120) if dirs else None
    finally:
        host.close()
    env = parse(result.stdout)
    if probed is not None:
        env["sync_probe"] = diskprobe.parse(probed.stdout)
    return env
