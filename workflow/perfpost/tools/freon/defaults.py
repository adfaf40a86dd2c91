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
# throughput: a reader's, from the size its `prepare` run wrote its files with; where a run
# has it, it is the run's headline (the first of these present), else its rate.
PLOT_METRICS = ("throughput", "rate", "rate_adjusted")
# What its runs measure, for the post's sentences (a command's is its own).
SUBJECT = "the storage"
TABLE_METRICS = (
    "throughput",
    "rate",
    "rate_adjusted",
    "operations",
    "rate_time",
    "startup",
    "elapsed",
    "sync_time",
)
# The sync after a run is added to the time its operations take at the measured rate.
SYNC_ADJUST = (("operations", "operations_time", "rate"),)
# One row per run, as the onefile post listed them: test, rate, operations, seconds, sync.
# A reader's throughput first where it has one (a column no run has is left out).
RUN_TABLE = ("throughput", "rate", "operations", "rate_time", "startup", "elapsed", "sync_time")
# freon's progress reporter checks once a second (ProgressBar sleeps 1 s between checks), and
# its summary waits for the next check after the last operation (shutdown() joins it).
REPORT_INTERVAL = 1.0
# A rate's time and how late its clock can stop, as metrics of each run (0 for a rate over
# the progress window, whose ends are stamped moments), the lag of a run recorded before
# perfpost kept that metric, and why: the post's validity section flags runs where the lag
# is a large share of the time.
TIME_LAG = (
    "rate_time",
    "rate_lag",
    REPORT_INTERVAL,
    "freon prints its summary only at its progress reporter's next once-a-second check "
    "after the last operation",
)
LOG = "freon.log"
# With several clients in a run (run.cell.clients): the rate that is their sum over the window
# all of them were measuring (from each one's progress lines), its time and its operations.
CLIENT_WINDOW = ("rate", "rate_time", "rate_operations")
# Metrics that say which clock a run's rate came from (value 1): one, not a sum of clients'.
CLIENT_FLAGS = ("rate_source_",)
# Generators that only read or validate: the sync rule (write time + slow sync) does not apply.
READERS = frozenset({"dfsv", "ockv", "ocokr", "ommg", "obrd", "ozone-client-key-validator"})
