"""freon's defaults: the release perfpost fetches, its launcher variable, the metrics a post
shows, and what its clock can and cannot say (:data:`TIME_LAG`)."""

from __future__ import annotations

from pathlib import Path

from perfpost import provision

NAME = "freon"
# The Ozone release whose freon and vapor perfpost fetches (config: tools.ozone.version).
VERSION = "2.2.0"
RUNTIME = provision.Runtime(
    name="ozone",
    version=VERSION,
    files=Path(__file__).resolve().parent,
    version_property="ozone.version",
    launcher="ozone",
    expect_jar="ozone-freon-",
    standin_parent=True,
)
# The host's inventory key naming its `ozone` command (`provisioned`: the fetched one).
HOST_KEY = "ozone"
# The variable that carries JVM options to freon's JVM (an instrumenting agent goes there too).
JVM_OPTS_VAR = "OZONE_OPTS"
PLOT_METRICS = ("rate", "rate_adjusted")
TABLE_METRICS = (
    "rate",
    "rate_adjusted",
    "operations",
    "elapsed",
    "total_execution_time",
    "sync_time",
)
SYNC_ADJUST = (("operations", "elapsed", "rate"),)
# One row per run, as the onefile post listed them: test, rate, operations, seconds, sync.
RUN_TABLE = ("rate", "operations", "elapsed", "sync_time")
# How late the run's time can stop, and why: freon prints its summary only at its progress
# reporter's next check (ProgressBar sleeps 1 s between checks, and shutdown() joins it).
# The post's validity section flags runs where this is a large share of their time.
TIME_LAG = (
    "elapsed",
    1.0,
    "freon prints its summary only at its progress reporter's next once-a-second check "
    "after the last operation",
)
LOG = "freon.log"
# Generators that only read or validate: the sync rule (write time + slow sync) does not apply.
READERS = frozenset({"dfsv", "ockv", "ocokr", "ommg", "obrd", "ozone-client-key-validator"})
