"""The tool's JVM's collections from its GC log: lines as Java 17 wrote them here (-Xloggc,
mapped to unified logging) and in Java 8's form, with sums done by hand."""

import pytest

from perfpost.instrument import gclog

HUGE = "(Concurrent Start) (G1 Humongous Allocation)"
JAVA17 = f"""\
[0.000s][warning][gc] -Xloggc is deprecated. Will use -Xlog:gc:/tmp/jt/gc.log instead.
[0.009s][info][gc] Using G1
[0.138s][info][gc] GC(0) Pause Young {HUGE} 27M->1M(64M) 3.141ms
[0.138s][info][gc] GC(1) Concurrent Undo Cycle
[0.143s][info][gc] GC(1) Concurrent Undo Cycle 5.199ms
[0.147s][info][gc] GC(2) Pause Young {HUGE} 29M->1M(64M) 1.002ms
[0.300s][info][gc] GC(5) Pause Full (System.gc()) 12M->2M(64M) 10.500ms
"""

JAVA8 = """\
0.123: [GC (Allocation Failure)  65536K->5000K(251392K), 0.0050000 secs]
0.456: [Full GC (Ergonomics)  70000K->4000K(251392K), 0.0300000 secs]
"""


def metrics(text):
    return {m.name: (m.value, m.unit) for m in gclog.parse(text)}


def test_unified_logging_pauses_not_concurrent_phases():
    got = metrics(JAVA17)
    assert got["jvm_gc_pauses"] == (3, "count")  # the concurrent cycle is no pause
    assert got["jvm_gc_pause_time"][0] == pytest.approx((3.141 + 1.002 + 10.5) / 1000)
    assert got["jvm_heap_peak"] == (29 * 2**20, "B")


def test_java_8_form():
    got = metrics(JAVA8)
    assert got["jvm_gc_pauses"] == (2, "count")
    assert got["jvm_gc_pause_time"][0] == pytest.approx(0.035)
    assert got["jvm_heap_peak"] == (70000 * 1024, "B")


def test_a_run_without_a_collection_says_zero_pauses_and_nothing_else():
    assert metrics("[0.009s][info][gc] Using G1\n") == {"jvm_gc_pauses": (0, "count")}
