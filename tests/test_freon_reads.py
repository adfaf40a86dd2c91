"""freon as a reader of files it wrote itself: the unmeasured dfsg before a measured dfsv,
the size freon reads from "64MB", and the bytes and throughput a run derives from it."""

from __future__ import annotations

import pytest

from perfpost.errors import ConfigError
from perfpost.tools import freon
from perfpost.tools.base import Metric
from perfpost.tools.freon import command

READ = {
    "subcommand": "dfsv",
    "dir": "/var/tmp/perfpost",
    "launcher": "ozone",
    "env": {"HADOOP_USER_NAME": "perfpost"},
    "prepare": {"subcommand": "dfsg", "options": {"s": "32MB"}},
    "drop_cache": True,
    "options": {"path": "hdfs://nn:8020/reads", "prefix": "files", "n": 40, "t": 10},
}


@pytest.mark.parametrize(
    ("text", "size"),
    [
        # freon's --help: "Size is in base 2 binary"; a dfsg --size=1MB here wrote files of
        # 1048576 bytes, and --size=2MB of 2097152.
        ("1MB", 1 << 20),
        ("32MB", 32 << 20),
        ("10KB", 10 << 10),
        ("1GB", 1 << 30),
        (10240, 10240),
        ("64mb", 64 << 20),
    ],
)
def test_a_freon_size_is_in_powers_of_two(text, size):
    assert command.freon_size(text) == size


def test_the_prepare_run_writes_what_the_reader_reads():
    plan = freon.plan(READ, "/scratch")
    (prep,) = plan.prepare
    (measure,) = plan.measure
    # The same launcher, environment, path, prefix, count and threads; its own subcommand
    # and size.
    assert list(prep.argv) == [
        "env",
        "HADOOP_USER_NAME=perfpost",
        "ozone",
        "freon",
        "dfsg",
        "--path=hdfs://nn:8020/reads",
        "--prefix=files",
        "--number-of-tests=40",
        "--threads=10",
        "--size=32MB",
    ]
    assert measure.argv[4:] == (
        "dfsv",
        "--path=hdfs://nn:8020/reads",
        "--prefix=files",
        "-n",
        "40",
        "-t",
        "10",
    )
    assert plan.drop_cache
    assert not plan.writes


def test_a_prepare_option_given_short_replaces_the_readers_long_one():
    params = {
        **READ,
        "options": {"path": "file:///a", "prefix": "p", "number-of-tests": 8, "thread": 2},
        "prepare": {"subcommand": "dfsg", "options": {"n": 4, "size": "1MB"}},
    }
    (prep,) = freon.plan(params, "/w").prepare
    assert "--number-of-tests=4" in prep.argv
    assert "--number-of-tests=8" not in prep.argv
    assert "--threads=2" in prep.argv


def _run(ops: float, mean: float, fastest: float = 0.02) -> list[Metric]:
    return [
        Metric("operations", ops, "count"),
        Metric("rate", 2.0, "1/s"),
        Metric("file-read.count", ops, "count"),
        Metric("file-read.mean", mean, "s"),
        Metric("file-read.min", fastest, "s"),
    ]


HOT = {**READ, "drop_cache": False}


def test_bytes_and_throughput_from_the_reads_the_size_and_freons_read_timer():
    got = {m.name: (m.value, m.unit) for m in freon.derive(HOT, _run(40.0, 0.5))}
    # 40 whole files of 32 MiB; 10 threads each reading a 32 MiB file every 0.5 s.
    assert got == {
        "bytes": (40 * 33554432, "B"),
        "throughput": (10 * 33554432 / 0.5, "B/s"),
        "readers_busy": (10.0, "count"),
        "reads_timed": (40.0, "count"),
    }


def test_with_the_cache_dropped_the_warm_reference_read_is_left_out():
    got = {m.name: m.value for m in freon.derive(READ, _run(40.0, 0.5, fastest=0.02))}
    # 40 reads took 20 s in all; without the fastest (0.02 s), 39 reads took 19.98 s.
    assert got["reads_timed"] == 39
    assert got["throughput"] == pytest.approx(10 * 33554432 / (19.98 / 39))


def test_fewer_files_than_threads_keep_only_that_many_busy():
    got = {m.name: m.value for m in freon.derive(HOT, _run(4.0, 0.5))}
    assert got["throughput"] == 4 * 33554432 / 0.5
    # No -t at all: freon's default of 10 threads.
    params = {**HOT, "options": {"path": "file:///a", "prefix": "p", "n": 40}}
    got = {m.name: m.value for m in freon.derive(params, _run(40.0, 0.5))}
    assert got["readers_busy"] == 10


def test_no_throughput_without_a_size_a_timer_or_for_a_writer():
    assert freon.derive({**READ, "prepare": None}, _run(40.0, 0.5)) == []
    assert freon.derive({**READ, "subcommand": "dfsg"}, _run(40.0, 0.5)) == []
    (only,) = freon.derive(READ, _run(40.0, 0.5)[:2])
    assert only.name == "bytes"


def test_a_reader_after_prepare_must_name_its_prefix():
    params = {**READ, "options": {"path": "file:///a", "n": 4}}
    with pytest.raises(ConfigError) as e:
        freon.check_params(params, "experiments.r.params")
    assert "experiments.r.params.options.prefix" in str(e.value)
    with pytest.raises(ConfigError) as e:
        freon.check_params(
            {**READ, "prepare": {"subcommand": "dfsg", "options": {"s": "lots"}}},
            "experiments.r.params",
        )
    assert "prepare.options.s" in str(e.value)
    assert "'lots'" in str(e.value)
