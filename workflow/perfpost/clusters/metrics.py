"""The daemons' own metrics perfpost reads while a cell measures, per kind and role, and what
each means.

Every daemon perfpost deploys serves its metrics as JMX beans in JSON at ``/jmx`` on its HTTP
port; a query (``?qry=<ObjectName pattern>``) returns only the beans it names, so a read costs
the daemon a few kilobytes of JSON (its whole ``/prom`` page, 200 kB, cost a datanode 30 ms of
CPU a read here). The sampler on the daemon's host fetches each role's queries once per
sampling interval with one ``curl``; :func:`read` turns them into one value per metric: a
counter's rate over the interval, a gauge's value at its end. Hadoop's metrics refresh every
second in the clusters perfpost deploys (``*.period=1`` in ``hadoop-metrics2.properties``);
Ratis' own timers are live.

Hadoop's ``*AvgTime`` gauges are the mean over the metrics system's last period (1 s);
Ratis' timers are quantiles of a decaying sample of recent operations (Dropwizard's), so a
``p50`` over time is the median of the last few hundred operations, not of the interval.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import quote

MIB = float(1 << 20)


@dataclass(frozen=True)
class Source:
    """One metric of a daemon: the beans that hold it (a JMX ObjectName pattern, the query
    that fetches them), their attribute, and perfpost's name for it."""

    query: str
    attribute: str
    name: str
    kind: str  # "counter": a rate per second over the interval; "gauge": its value
    unit: str  # perfpost's unit, after ``scale``
    scale: float = 1.0
    meaning: str = ""
    # For an average: the counter of the operations it averages; an interval without any
    # has no average (Hadoop prints 0 for it).
    ops: str = ""
    # The beans of the query's answer that hold it, where the query fetches more (every
    # Ratis log timer comes in one query: each query costs the daemon 5 to 15 ms).
    bean: str = ""

    @property
    def beans(self) -> str:
        return self.bean or self.query


_JVM = "Hadoop:service=*,name=JvmMetrics"
_RPC = "Hadoop:service=*,name=RpcActivityForPort*"
_LOG = "ratis:name=ratis.log_worker.*"

JVM = (
    Source(
        _JVM,
        "GcTimeMillis",
        "gc_time",
        "counter",
        "ratio",
        1e-3,
        "share of time the JVM spent in garbage collection",
    ),
    Source(_JVM, "GcCount", "gcs", "counter", "1/s", meaning="collections per second"),
    Source(_JVM, "MemHeapUsedM", "heap_used", "gauge", "B", MIB, "heap in use"),
)
RPC = (
    Source(
        _RPC,
        "RpcQueueTimeNumOps",
        "rpc_calls",
        "counter",
        "1/s",
        meaning="RPC calls served per second",
    ),
    Source(
        _RPC,
        "RpcQueueTimeAvgTime",
        "rpc_queue_time",
        "gauge",
        "s",
        1e-3,
        "mean time a call waited in the RPC queue (last second)",
        ops="rpc_calls",
    ),
    Source(
        _RPC,
        "RpcProcessingTimeAvgTime",
        "rpc_processing_time",
        "gauge",
        "s",
        1e-3,
        "mean time a call took to process (last second)",
        ops="rpc_calls",
    ),
    Source(
        _RPC,
        "CallQueueLength",
        "rpc_call_queue",
        "gauge",
        "count",
        meaning="calls waiting in the RPC queue",
    ),
)
RATIS = (
    Source(
        _LOG,
        "Count",
        "ratis_syncs",
        "counter",
        "1/s",
        meaning="Ratis log fsyncs per second",
        bean=f"{_LOG}.syncTime",
    ),
    Source(
        _LOG,
        "50thPercentile",
        "ratis_sync_p50",
        "gauge",
        "s",
        1e-3,
        "median time of the Ratis log's fsync (recent syncs)",
        bean=f"{_LOG}.syncTime",
    ),
    Source(
        _LOG,
        "99thPercentile",
        "ratis_sync_p99",
        "gauge",
        "s",
        1e-3,
        "99th percentile of the Ratis log's fsync (recent syncs)",
        bean=f"{_LOG}.syncTime",
    ),
    Source(
        _LOG,
        "50thPercentile",
        "ratis_flush_p50",
        "gauge",
        "s",
        1e-3,
        "median time of a Ratis log flush (write and sync of a batch)",
        bean=f"{_LOG}.flushTime",
    ),
    Source(
        _LOG,
        "50thPercentile",
        "ratis_append_p50",
        "gauge",
        "s",
        1e-3,
        "median time to append an entry to the log",
        bean=f"{_LOG}.appendEntryLatency",
    ),
    Source(
        _LOG,
        "Value",
        "ratis_queue",
        "gauge",
        "count",
        meaning="log tasks waiting for the Ratis log worker",
        bean=f"{_LOG}.workerQueueSize",
    ),
)
_CSM = "Hadoop:service=HddsDatanode,name=CSMMetrics*"
OZONE_DATANODE = (
    Source(
        _CSM,
        "WriteChunkMsNumOps",
        "write_chunks",
        "counter",
        "1/s",
        meaning="chunk writes through the container state machine per second",
    ),
    Source(
        _CSM,
        "WriteChunkMsAvgTime",
        "write_chunk_time",
        "gauge",
        "s",
        1e-3,
        "mean time of a chunk write in the state machine (last second)",
        ops="write_chunks",
    ),
    Source(
        "Hadoop:service=HddsDatanode,name=StorageContainerMetrics",
        "bytesWriteChunk",
        "chunk_bytes",
        "counter",
        "B/s",
        meaning="chunk bytes written per second",
    ),
)
_DN = "Hadoop:service=DataNode,name=DataNodeActivity*"
HDFS_DATANODE = (
    Source(
        _DN,
        "BytesWritten",
        "bytes_written",
        "counter",
        "B/s",
        meaning="bytes written to the DataNode's disks per second",
    ),
    Source(
        _DN,
        "WriteBlockOpNumOps",
        "write_blocks",
        "counter",
        "1/s",
        meaning="block writes per second",
    ),
    Source(
        _DN,
        "FlushNanosNumOps",
        "flushes",
        "counter",
        "1/s",
        meaning="flushes of block files per second",
    ),
    Source(
        _DN,
        "FlushNanosAvgTime",
        "flush_time",
        "gauge",
        "s",
        1e-9,
        "mean time of a flush of a block file (last second)",
        ops="flushes",
    ),
    Source(
        _DN,
        "FsyncNanosNumOps",
        "fsyncs",
        "counter",
        "1/s",
        meaning="fsyncs of block files per second",
    ),
    Source(
        _DN,
        "FsyncNanosAvgTime",
        "fsync_time",
        "gauge",
        "s",
        1e-9,
        "mean time of an fsync of a block file (last second)",
        ops="fsyncs",
    ),
)
NODEMANAGER = (
    Source(
        "Hadoop:service=NodeManager,name=NodeManagerMetrics",
        "ContainersRunning",
        "containers_running",
        "gauge",
        "count",
        meaning="containers running on the NodeManager",
    ),
)
RESOURCEMANAGER = (
    Source(
        "Hadoop:service=ResourceManager,name=QueueMetrics,q0=root",
        "AppsRunning",
        "apps_running",
        "gauge",
        "count",
        meaning="applications running",
    ),
)

# kind -> role -> the role's HTTP port key (host filled in), what its daemons serve.
BY_ROLE: dict[str, dict[str, tuple[str, tuple[Source, ...]]]] = {
    "ozone": {
        "scm": ("scm.http", JVM + RPC + RATIS),
        "om": ("om.http", JVM + RPC + RATIS),
        "datanode": ("dn.{host}.http", JVM + RATIS + OZONE_DATANODE),
    },
    "hdfs": {
        "namenode": ("nn.http", JVM + RPC),
        "datanode": ("dn.{host}.http", JVM + HDFS_DATANODE),
    },
    "yarn": {
        "resourcemanager": ("rm.webapp", JVM + RPC + RESOURCEMANAGER),
        "nodemanager": ("nm.webapp.{host}", JVM + NODEMANAGER),
    },
}

ALL = JVM + RPC + RATIS + OZONE_DATANODE + HDFS_DATANODE + NODEMANAGER + RESOURCEMANAGER
UNITS = {s.name: s.unit for s in ALL}
MEANINGS = {s.name: s.meaning for s in ALL}
# The latency a daemon's line in a figure over time shows, the first it has of these.
LATENCIES = ("ratis_sync_p50", "fsync_time", "write_chunk_time", "rpc_processing_time")


def sources(kind: str, role: str) -> tuple[Source, ...]:
    return BY_ROLE.get(kind, {}).get(role, ("", ()))[1]


def port_key(kind: str, role: str, host: str) -> str | None:
    got = BY_ROLE.get(kind, {}).get(role)
    return got[0].format(host=host) if got else None


def urls(base: str, found: Iterable[Source]) -> list[str]:
    """The ``/jmx`` queries that fetch ``found``'s beans from the daemon at ``base``
    (``http://host:port``), each once."""
    queries = list(dict.fromkeys(s.query for s in found))
    return [f"{base}/jmx?qry={quote(q, safe='=:,*')}" for q in queries]


def beans(text: str) -> list[dict]:
    """Every bean of the JMX servlet's answers, one JSON document after another; a document
    cut short (the loop stopped while it came) ends the list."""
    out: list[dict] = []
    decoder = json.JSONDecoder()
    i, n = 0, len(text)
    while i < n:
        while i < n and text[i].isspace():
            i += 1
        if i >= n:
            break
        try:
            doc, i = decoder.raw_decode(text, i)
        except ValueError:
            break
        if isinstance(doc, dict):
            out += [b for b in doc.get("beans", []) if isinstance(b, dict)]
    return out


def values(got: list[dict], pattern: str, attribute: str) -> list[float]:
    """``attribute`` of each bean whose name matches ``pattern`` (an ObjectName pattern, as
    fnmatch reads it) and holds it as a number (a bool is none)."""
    return [
        float(b[attribute])
        for b in got
        if fnmatch.fnmatchcase(str(b.get("name", "")), pattern)
        and isinstance(b.get(attribute), int | float)
        and not isinstance(b.get(attribute), bool)
    ]


def read(text: str, found: Iterable[Source]) -> dict[str, float]:
    """Each source's raw value in ``text``: counters summed over the beans that hold them (a
    datanode's Ratis groups, a server's RPC ports), gauges the largest (the busiest one's)."""
    got = beans(text)
    out: dict[str, float] = {}
    for s in found:
        numbers = values(got, s.beans, s.attribute)
        if numbers:
            out[s.name] = sum(numbers) if s.kind == "counter" else max(numbers)
    return out
