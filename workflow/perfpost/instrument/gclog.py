"""The tool's own JVM's garbage collections, from the GC log it writes beside the run.

``-Xloggc:<file>`` is the one option every JVM from Java 8 on takes (Java 9 and later map it
to ``-Xlog:gc:<file>`` and say so once); :func:`parse` reads both forms' pause lines:

- unified logging: ``[0.210s][info][gc] GC(0) Pause Young (Normal) (G1 Evacuation Pause)
  23M->3M(256M) 4.518ms``;
- Java 8: ``0.123: [GC (Allocation Failure)  65536K->5000K(251392K), 0.0050000 secs]``.
"""

from __future__ import annotations

import re

from perfpost.tools.base import Metric

FILE = "gc.log"
# Each of several JVMs of one run logs to its own file: the JVM puts its pid for %p.
EACH = "gc-%p.log"
EACH_GLOB = "gc-*.log"
_SCALE = {"B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
_UNIFIED = re.compile(
    r"GC\(\d+\) Pause .*?(\d+)([BKMG])->(\d+)([BKMG])\((\d+)([BKMG])\) ([\d.]+)ms\s*$"
)
_JAVA8 = re.compile(r"\[(?:Full )?GC[^\]]*?(\d+)K->(\d+)K\((\d+)K\),? ([\d.]+) secs\]")


def option(path: str) -> str:
    return f"-Xloggc:{path}"


def parse(text: str) -> list[Metric]:
    """The pauses' count and summed time, and the most heap in use before one (the peak the
    collector saw); nothing when the log has no pause (a run too short to collect)."""
    pauses, seconds, peak = 0, 0.0, 0
    for line in text.splitlines():
        if m := _UNIFIED.search(line):
            pauses += 1
            seconds += float(m.group(7)) / 1000
            peak = max(peak, int(m.group(1)) * _SCALE[m.group(2)])
        elif m := _JAVA8.search(line):
            pauses += 1
            seconds += float(m.group(4))
            peak = max(peak, int(m.group(1)) * _SCALE["K"])
    out = [Metric("jvm_gc_pauses", float(pauses), "count")]
    if pauses:
        out += [
            Metric("jvm_gc_pause_time", seconds, "s"),
            Metric("jvm_heap_peak", float(peak), "B"),
        ]
    return out
