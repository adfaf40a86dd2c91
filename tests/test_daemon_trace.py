"""strace's summary table (``strace -c``) as perfpost reads it for a traced daemon.

The first table is strace 6.1's own, of ``dd bs=4k count=10 conv=fsync``; its numbers are
read here by eye. The second check runs strace on dd here and counts the calls in strace's
own line-per-call trace of the same command, which needs no table at all.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

from perfpost.instrument.daemontrace import strace_table

TABLE = """\
% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
  0.00    0.000000           0        13           read
  0.00    0.000000           0        13           write
  0.00    0.000000           0         1         1 access
  0.00    0.000000           0         1           fsync
 62.50    0.000250         125         2           fdatasync
  0.00    0.000000           0        35        16 openat
------ ----------- ----------- --------- --------- ----------------
100.00    0.000400           0        65        17 total
"""


def test_each_row_of_stracess_table_is_read_by_its_columns():
    rows = {r["syscall"]: r for r in strace_table(TABLE)}
    assert rows["write"] == {"syscall": "write", "calls": 13, "errors": 0, "seconds": 0.0}
    assert rows["access"]["errors"] == 1
    assert rows["fdatasync"] == {
        "syscall": "fdatasync",
        "calls": 2,
        "errors": 0,
        "seconds": 0.00025,
    }
    assert rows["openat"]["calls"] == 35
    assert rows["openat"]["errors"] == 16
    assert list(rows)[-1] == "total"
    assert rows["total"]["calls"] == 65
    assert rows["total"]["errors"] == 17


def test_text_without_a_table_is_none():
    assert strace_table("strace: attach: ptrace(PTRACE_SEIZE, 1): Operation not permitted") is None
    assert strace_table("") is None


@pytest.mark.skipif(shutil.which("strace") is None, reason="scripts/setup installs strace")
def test_the_counts_are_the_calls_strace_traced_one_by_one(tmp_path):
    out = tmp_path / "out"
    dd = ["dd", "if=/dev/zero", f"of={out}", "bs=4k", "count=10", "conv=fsync"]
    table = tmp_path / "table.txt"
    trace = tmp_path / "trace.txt"
    calls = "write,fsync,openat"
    subprocess.run(["strace", "-f", "-c", "-e", f"trace={calls}", "-o", str(table), *dd],
                   check=True, capture_output=True)  # fmt: skip
    subprocess.run(["strace", "-f", "-e", f"trace={calls}", "-o", str(trace), *dd],
                   check=True, capture_output=True)  # fmt: skip
    rows = {r["syscall"]: r for r in strace_table(table.read_text())}
    lines = trace.read_text().splitlines()
    for call in calls.split(","):
        one_by_one = sum(1 for ln in lines if ln.split(maxsplit=1)[-1].startswith(call + "("))
        assert rows[call]["calls"] == one_by_one, call
    assert rows["fsync"]["calls"] == 1  # conv=fsync: one at the end
