"""A disk's synced writes, timed: the one measurement of the disk itself that a post's design
check needs where the runs' own numbers cannot tell (dd's ``conv=fsync`` at 512 MB/s is
within what a spinning disk streams; each of its 4 KiB writes synced in 0.3 ms is not).

For each spinning disk (lsblk TYPE disk, ROTA 1) under a directory the runs' data went to,
:func:`script` writes ``WRITES`` blocks of 4 KiB with ``dd oflag=dsync`` into a temporary file
beside that data and removes it: each write returns once the device says it holds it. A
spinning disk that flushes its cache on request cannot do that faster than its platter brings
a sector under the head. The env step runs it after the experiment's runs, holding the host
as a cell does, so no measurement shares the disk with it. Other devices (SSDs, memory,
loop and volume devices) are not probed: no bound of their kind is known here.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from typing import Any

from perfpost.run.hostscript import DISK_OF, quote

MARKER = "@perfpost-sync-probe"
WRITES = 64  # 64 synced 4 KiB writes: under 0.6 s on a 7,200 rpm disk, one rotation each
BLOCK = 4096

_PROBE = (
    DISK_OF
    + r"""
probe() {
  d=$1
  while [ ! -d "$d" ]; do d=$(dirname "$d"); done
  [ "$d" = / ] && return 0
  disk_of "$d"
  [ "$kind" = disk ] && [ "$rota" = 1 ] || return 0
  case " $probed " in *" $disk "*) return 0 ;; esac
  probed="$probed $disk"
  f=$(mktemp "$d/.perfpost-sync-probe.XXXXXX" 2>/dev/null) || {
    echo "@perfpost-sync-probe $disk - - $d"; return 0; }
  out=$(LC_ALL=C dd if=/dev/zero of="$f" bs=@BLOCK@ count=@WRITES@ oflag=dsync 2>&1)
  rm -f "$f"
  secs=$(printf '%s\n' "$out" | sed -n 's/.* copied, \([0-9.e+-]*\) s.*/\1/p' | tail -n 1)
  echo "@perfpost-sync-probe $disk @WRITES@ ${secs:--} $d"
}
probed=
""".replace("@BLOCK@", str(BLOCK)).replace("@WRITES@", str(WRITES))
)


def script(dirs: Sequence[str]) -> str:
    """The probe of each spinning disk under ``dirs`` (each the first existing directory at
    or above a path the runs' data went to), one disk once."""
    return _PROBE + "".join(f"probe {quote([d])}\n" for d in dirs)


def parse(stdout: str) -> list[dict[str, Any]]:
    """The probes' lines as records: the disk, the directory written in, the writes, dd's
    own seconds for them and the mean time of one (None where the directory was not
    writable or dd said no time)."""
    out = []
    for line in stdout.splitlines():
        if not line.startswith(MARKER + " "):
            continue
        parts = line.split(" ", 4)
        if len(parts) != 5:
            continue
        _, disk, writes, secs, where = parts
        try:
            n, seconds = int(writes), float(secs)
        except ValueError:
            out.append({"disk": disk, "dir": where, "writes": None, "seconds": None,
                        "per_write": None})  # fmt: skip
            continue
        out.append(
            {
                "disk": disk,
                "dir": where,
                "writes": n,
                "block_bytes": BLOCK,
                "seconds": seconds,
                "per_write": seconds / n if n else None,
            }
        )
    return out


def data_dirs(window_csv: str, host: str) -> list[str]:
    """The directories on a block device that an experiment's runs put data in on ``host``
    (its resources window's ``dir:`` rows), in the order first seen: where the probe writes."""
    dirs: dict[str, None] = {}
    try:
        with open(window_csv, newline="") as f:
            for row in csv.DictReader(f):
                resource = row.get("resource") or ""
                if resource.startswith("dir:") and row.get("node") == host and row.get("detail"):
                    dirs[resource[4:]] = None
    except FileNotFoundError:
        return []
    return list(dirs)
