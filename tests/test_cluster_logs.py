"""What a failed cluster start says: the daemon's own error lines, not its exit banner; and
which release a cluster's version output names.

The logs in tests/data/hdfs/ are real: HDFS 3.4.2 as perfpost starts it, from
tests/test_clusters_e2e.py (a NameNode whose RPC port is taken, a format refusing
``dfs.blocksize: banana``), kept by perfpost under results/clusters/<id>/start-1/logs/ and
with this machine's directories replaced by the default ones.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from perfpost.clusters.base import excerpt, release

DATA = Path(__file__).parent / "data" / "hdfs"


@pytest.mark.parametrize(
    ("log", "cause"),
    [
        ("namenode-port-taken.log", "Caused by: java.net.BindException: Address already in use"),
        ("format-bad-blocksize.log", "Invalid size prefix 'a' in 'banana'"),
    ],
)
def test_the_excerpt_has_the_first_error_and_the_cause_without_the_banner(log, cause):
    text = (DATA / log).read_text()
    got = excerpt(text)
    lines = got.splitlines()
    first_error = next(line for line in text.splitlines() if " ERROR " in line)
    assert first_error in lines
    assert cause in got
    assert "SHUTDOWN_MSG" not in got
    assert "STARTUP_MSG" not in got
    assert not any(line.startswith(("\tat ", "\t... ")) for line in lines)
    # The log's last line before its shutdown banner ends the excerpt: why it exited.
    assert "INFO util.ExitUtil: Exiting with status 1: " in lines[-1]
    assert len(lines) <= 5 + 6 + 2  # first lines, last lines, two gaps at most


def test_the_excerpt_of_a_log_without_errors_is_its_end():
    text = "\n".join(f"2026-01-01 00:00:0{i},000 [main] INFO x.Y: line {i}" for i in range(9))
    assert excerpt(text).splitlines() == ["...", *text.splitlines()[-6:]]
    assert excerpt("") == ""


@pytest.mark.parametrize(
    ("output", "want"),
    [
        (
            "Hadoop 3.4.2\nSource code repository https://github.com/apache/hadoop.git -r "
            "84e8b89ee2ebe6923691205b9e171badde7a495c\nCompiled with protoc 3.23.4\n",
            "3.4.2",
        ),
        # Ozone's: its logo first, then the release and its code name.
        (
            "   .%%%%%%#:.@  :+++*::\n     ..\n\n2.2.0(Katmai)\n\nWith Apache Ratis: 3.2.1\n",
            "2.2.0",
        ),
        ("", "9.9.9"),
    ],
)
def test_the_release_a_version_output_names(output, want):
    assert release(output, "9.9.9") == want


def test_a_layout_the_datanode_fell_back_from_is_recorded_as_not_in_effect():
    # The line Ozone 2.2.0's datanode logged in the default run's ozone-chunk cluster.
    from perfpost.clusters.base import ClusterSpec
    from perfpost.clusters.deployment import Deployment
    from perfpost.clusters.ozone import Ozone

    line = (
        "2026-11-27 20:44:03,823 [main] WARN keyvalue.KeyValueHandler: FILE_PER_CHUNK layout "
        "is not supported. Falling back to default : FILE_PER_BLOCK."
    )
    spec = ClusterSpec(
        name="ozone-chunk",
        kind="ozone",
        version="2.2.0",
        roles={"scm": ["localhost"], "om": ["localhost"], "datanode": ["localhost"]},
    )
    dep = Deployment(spec, {"localhost": {"name": "localhost"}})
    dep.read_notes(Ozone.NOTES, {"datanode on localhost": f"x\n{line}\ny\n"})
    assert dep.overridden == [
        {
            "key": "ozone.scm.container.layout",
            "asked": "FILE_PER_CHUNK",
            "ran": "FILE_PER_BLOCK",
            "daemon": "datanode",
            "host": "localhost",
            "evidence": line,  # the whole log line: where the post's notebook quotes it
        }
    ]
    assert dep.notes == [
        "datanode on localhost: FILE_PER_CHUNK is not supported by this release; the datanode "
        "used FILE_PER_BLOCK"
    ]
    # Kept with the state, and read back.
    again = Deployment.from_state(dep.to_state())
    assert again.overridden == dep.overridden
