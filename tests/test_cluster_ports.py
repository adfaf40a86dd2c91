"""The ports perfpost chooses for a cluster's daemons on their host: free, distinct, and below
the host's ephemeral range, where no outgoing connection takes one between their choice and
the daemon's bind.

Expected values: the kernel's own ephemeral range (/proc/sys/net/ipv4/ip_local_port_range),
a bind of each chosen port by the test, and, in a range of five ports made small on purpose,
the free ones counted by hand.
"""

from __future__ import annotations

import contextlib
import io
import socket
import subprocess
import sys

import pytest

from perfpost.clusters.deployment import PORT_CHOOSER


def test_the_ports_are_free_distinct_and_below_the_ephemeral_range():
    low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
    if low <= 10_100:
        pytest.skip(f"this host's ephemeral range starts at {low}")
    out = subprocess.run(
        [sys.executable, "-c", PORT_CHOOSER, "127.0.0.1", "12"],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout  # fmt: skip
    ports = [int(p) for p in out.split()]
    assert len(ports) == 12
    assert len(set(ports)) == 12
    assert all(10_000 <= p < low for p in ports), ports
    for p in ports:  # free once the chooser has let them go: a daemon can bind each
        with socket.socket() as s:
            s.bind(("", p))


def _choose(monkeypatch, count: int, first_ephemeral: int, taken: str = "") -> list[int]:
    """The chooser run in this process, the host's range read as starting at
    ``first_ephemeral``, the deployment's earlier ports ``taken``."""

    def fake_open(path, *args, **kwargs):
        assert path == "/proc/sys/net/ipv4/ip_local_port_range"
        return io.StringIO(f"{first_ephemeral}\t60999\n")

    monkeypatch.setattr(sys, "argv", ["-c", "127.0.0.1", str(count), taken])
    scope = {"open": fake_open}
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(PORT_CHOOSER, scope)
    for s in scope["held"]:
        s.close()
    return [int(p) for p in printed.getvalue().split()]


def test_a_port_in_use_is_never_chosen_and_the_kernel_chooses_only_past_the_range(monkeypatch):
    # Five ports below the range (10000-10004); two of them listened on here.
    taken = []
    try:
        for p in (10_001, 10_003):
            s = socket.socket()
            try:
                s.bind(("", p))
            except OSError:
                s.close()
                pytest.skip(f"port {p} is in use on this machine")
            s.listen()
            taken.append(s)
        free = {10_000, 10_002, 10_004}  # by hand: the five less the two held
        assert set(_choose(monkeypatch, 3, 10_005)) == free
        # One more than the range has free: the kernel chooses the fourth, from its own range.
        four = _choose(monkeypatch, 4, 10_005)
        assert set(four[:3]) == free
        assert four[3] not in free | {10_001, 10_003}
        assert len(set(four)) == 4
    finally:
        for s in taken:
            s.close()


def test_the_ports_a_deployment_chose_before_are_not_chosen_again(monkeypatch):
    # Its other daemons' ports are not bound yet when the next role's are chosen: in a range
    # of five (10000-10004) with 10000 and 10002 chosen before, the three others, by hand.
    assert set(_choose(monkeypatch, 3, 10_005, "10000,10002")) == {10_001, 10_003, 10_004}
