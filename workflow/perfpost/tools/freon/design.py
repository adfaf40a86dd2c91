"""What the design checks need to know of a freon run (:mod:`perfpost.analysis.design`): the
bytes it wrote, the rates of data its metrics say were forced to a device, and what a rate
covers so a post can reconcile it with the run's totals."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from perfpost.tools.freon.defaults import READERS
from perfpost.units import UnitError, parse_size

# A rate's operations, the run's operations and the time the rate is over: a reader sees
# "42.9 ops/s: 173 of 200 operations in 4.04 s" and can check it.
COVERS = {"rate": ("rate_operations", "operations", "rate_time")}


def _size(params: Mapping[str, Any]) -> float | None:
    """The bytes each operation writes, where the options name them (``-s``, ``--size``)."""
    options = params.get("options") or {}
    raw = options.get("s", options.get("size"))
    if raw is None or isinstance(raw, bool):
        return None
    try:
        return float(parse_size(str(raw)))
    except UnitError:
        return None


def written_bytes(metrics: Mapping[str, float], params: Mapping[str, Any]) -> float | None:
    """The bytes a writing generator's operations wrote: its operations times their size
    (``-s``); None for a reader, or where the size is not given."""
    if params.get("subcommand") in READERS:
        return None
    size = _size(params)
    ops = metrics.get("operations")
    return ops * size if size and ops else None


def forced_rates(metrics: Mapping[str, float], params: Mapping[str, Any]) -> dict[str, float]:
    """Bytes a second that reached a device by the run's own account: the rate with the
    sync after the run added, times each operation's size."""
    size = _size(params)
    if not size or params.get("subcommand") in READERS:
        return {}
    rate = metrics.get("rate_adjusted")
    return {"rate_adjusted": rate * size} if rate else {}


# A rate over the measured phase and the run's elapsed time can disagree: the elapsed time
# also holds the client's start-up (JVM, connections) and the operations before and after
# the rate's window. Where a comparison's verdict on one differs from the other's, the post
# gives both, with the start-up each side took.
CROSS = {"rate": ("elapsed", "startup")}

# The datanode syncs a chunk's data as it writes it only where this is true (Ozone's own
# default is false); vapor's cmdw takes it as a -D setting, the datanodes from their site.
CHUNK_SYNC = "hdds.container.chunk.write.sync"
HDFS_SYNC = "dfs.datanode.synconclose"  # HDFS's DataNode syncs a block file as it closes it
# Generators whose data go to a datanode's chunk files (directly, or through a cluster).
CHUNK_WRITERS = frozenset({"cmdw", "dcg", "ockg", "dfsg", "ombg", "randomkeys", "s3kg"})


def data_synced(params: Mapping[str, Any], cluster: Mapping[str, Any] | None) -> bool | None:
    """Whether the run's data were synced to the device as they were written: a chunk
    writer's, where ``hdds.container.chunk.write.sync`` is true (its Ozone's site, or cmdw's
    own -D); a file written into HDFS where ``dfs.datanode.synconclose`` is (each block file
    synced when it closes). None for a reader, which writes nothing."""
    if params.get("subcommand") in READERS:
        return None
    site = (cluster or {}).get("site") or {}
    if (cluster or {}).get("kind") == "hdfs":
        return str(site.get(HDFS_SYNC, "false")).lower() == "true"
    if params.get("subcommand") not in CHUNK_WRITERS:
        return None
    value = (params.get("generic") or {}).get(CHUNK_SYNC, site.get(CHUNK_SYNC, "false"))
    return str(value).lower() == "true"


# Clocks coarser than the run may be: freon's summary counts its run in whole seconds. The
# post's design checks flag a compared metric timed by it over less than 20 of its ticks.
CLOCKS = {
    "total_execution_time": (
        "total_execution_time",
        1.0,
        "freon's summary line, which counts whole seconds",
    )
}
