"""The daemons' own metrics perfpost reads while a cell measures, per kind and role, and what
each means.

Every daemon perfpost deploys serves its metrics in Prometheus' text form at ``/prom`` on its
HTTP port (Ozone by default; HDFS and YARN with ``hadoop.prometheus.endpoint.enabled``, which
perfpost sets), refreshed every second (``*.period=1`` in the daemons'
``hadoop-metrics2.properties``; Ratis' own timers are live). The sampler on the daemon's host
fetches it once per sampling interval and keeps only the families named here
(:func:`filter_regex`); :func:`read` turns them into one value per metric: a counter's rate
over the interval, a gauge's value at its end.

Hadoop's ``*_avg_time`` gauges are the mean over the metrics system's last period (1 s);
Ratis' timers are quantiles of a decaying sample of recent operations (Dropwizard's), so a
``p50`` over time is the median of the last few hundred operations, not of the interval.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

MIB = float(1 << 20)


@dataclass(frozen=True)
class Source:
    """One metric of a daemon: its Prometheus family (and labels), perfpost's name for it."""

    prom: str
    name: str
    kind: str  # "counter": a rate per second over the interval; "gauge": its value
    unit: str  # perfpost's unit, after ``scale``
    scale: float = 1.0
    labels: tuple[tuple[str, str], ...] = ()
    meaning: str = ""
    # For an average: the counter of the operations it averages; an interval without any
    # has no average (Hadoop prints 0 for it).
    ops: str = ""


JVM = (
    Source(
        "jvm_metrics_gc_time_millis",
        "gc_time",
        "counter",
        "ratio",
        1e-3,
        meaning="share of time the JVM spent in garbage collection",
    ),
    Source("jvm_metrics_gc_count", "gcs", "counter", "1/s", meaning="collections per second"),
    Source("jvm_metrics_mem_heap_used_m", "heap_used", "gauge", "B", MIB, meaning="heap in use"),
)
RPC = (
    Source(
        "rpc_rpc_queue_time_num_ops",
        "rpc_calls",
        "counter",
        "1/s",
        meaning="RPC calls served per second",
    ),
    Source(
        "rpc_rpc_queue_time_avg_time",
        "rpc_queue_time",
        "gauge",
        "s",
        1e-3,
        ops="rpc_calls",
        meaning="mean time a call waited in the RPC queue (last second)",
    ),
    Source(
        "rpc_rpc_processing_time_avg_time",
        "rpc_processing_time",
        "gauge",
        "s",
        1e-3,
        ops="rpc_calls",
        meaning="mean time a call took to process (last second)",
    ),
    Source(
        "rpc_call_queue_length",
        "rpc_call_queue",
        "gauge",
        "count",
        meaning="calls waiting in the RPC queue",
    ),
)
RATIS = (
    Source(
        "ratis_log_worker_syncTime",
        "ratis_sync_p50",
        "gauge",
        "s",
        labels=(("quantile", "0.5"),),
        meaning="median time of the Ratis log's fsync (recent syncs)",
    ),
    Source(
        "ratis_log_worker_syncTime",
        "ratis_sync_p99",
        "gauge",
        "s",
        labels=(("quantile", "0.99"),),
        meaning="99th percentile of the Ratis log's fsync (recent syncs)",
    ),
    Source(
        "ratis_log_worker_syncTime_count",
        "ratis_syncs",
        "counter",
        "1/s",
        meaning="Ratis log fsyncs per second",
    ),
    Source(
        "ratis_log_worker_flushTime",
        "ratis_flush_p50",
        "gauge",
        "s",
        labels=(("quantile", "0.5"),),
        meaning="median time of a Ratis log flush (write and sync of a batch)",
    ),
    Source(
        "ratis_log_worker_appendEntryLatency",
        "ratis_append_p50",
        "gauge",
        "s",
        labels=(("quantile", "0.5"),),
        meaning="median time to append an entry to the log",
    ),
    Source(
        "ratis_log_worker_workerQueueSize",
        "ratis_queue",
        "gauge",
        "count",
        meaning="log tasks waiting for the Ratis log worker",
    ),
)
OZONE_DATANODE = (
    Source(
        "csm_metrics_write_chunk_ms_num_ops",
        "write_chunks",
        "counter",
        "1/s",
        meaning="chunk writes through the container state machine per second",
    ),
    Source(
        "csm_metrics_write_chunk_ms_avg_time",
        "write_chunk_time",
        "gauge",
        "s",
        1e-3,
        ops="write_chunks",
        meaning="mean time of a chunk write in the state machine (last second)",
    ),
    Source(
        "storage_container_metrics_bytes_write_chunk",
        "chunk_bytes",
        "counter",
        "B/s",
        meaning="chunk bytes written per second",
    ),
)
HDFS_DATANODE = (
    Source(
        "datanode_bytes_written",
        "bytes_written",
        "counter",
        "B/s",
        meaning="bytes written to the DataNode's disks per second",
    ),
    Source(
        "datanode_write_block_op_num_ops",
        "write_blocks",
        "counter",
        "1/s",
        meaning="block writes per second",
    ),
    Source(
        "datanode_flush_nanos_avg_time",
        "flush_time",
        "gauge",
        "s",
        1e-9,
        ops="flushes",
        meaning="mean time of a flush of a block file (last second)",
    ),
    Source(
        "datanode_fsync_nanos_avg_time",
        "fsync_time",
        "gauge",
        "s",
        1e-9,
        ops="fsyncs",
        meaning="mean time of an fsync of a block file (last second)",
    ),
    Source(
        "datanode_flush_nanos_num_ops",
        "flushes",
        "counter",
        "1/s",
        meaning="flushes of block files per second",
    ),
    Source(
        "datanode_fsync_nanos_num_ops",
        "fsyncs",
        "counter",
        "1/s",
        meaning="fsyncs of block files per second",
    ),
)
NODEMANAGER = (
    Source(
        "node_manager_metrics_containers_running",
        "containers_running",
        "gauge",
        "count",
        meaning="containers running on the NodeManager",
    ),
)
RESOURCEMANAGER = (
    Source(
        "queue_metrics_apps_running",
        "apps_running",
        "gauge",
        "count",
        labels=(("q0", "root"),),
        meaning="applications running",
    ),
)

# kind -> role -> what its daemons serve; the role's HTTP port key (host filled in).
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


def sources(kind: str, role: str) -> tuple[Source, ...]:
    return BY_ROLE.get(kind, {}).get(role, ("", ()))[1]


def port_key(kind: str, role: str, host: str) -> str | None:
    got = BY_ROLE.get(kind, {}).get(role)
    return got[0].format(host=host) if got else None


def filter_regex(found: Iterable[Source]) -> str:
    """An extended regex matching exactly the lines of ``found``'s families."""
    names = sorted({s.prom for s in found})
    return "^(" + "|".join(re.escape(n) for n in names) + ")[{ ]"


_LINE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)(\{[^}]*\})?\s+(\S+)")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def parse_prom(text: str) -> list[tuple[str, dict[str, str], float]]:
    """Prometheus text lines as (family, labels, value); comments and bad lines skipped."""
    out = []
    for line in text.splitlines():
        m = _LINE.match(line)
        if not m:
            continue
        try:
            value = float(m.group(3))
        except ValueError:
            continue
        labels = dict(_LABEL.findall(m.group(2) or ""))
        out.append((m.group(1), labels, value))
    return out


def read(text: str, found: Iterable[Source]) -> dict[str, float]:
    """Each source's raw value in ``text``: counters summed over their series (a datanode's
    Ratis groups), gauges the largest (the busiest group's)."""
    rows = parse_prom(text)
    out: dict[str, float] = {}
    for s in found:
        want = dict(s.labels)
        values = [
            v
            for name, labels, v in rows
            if name == s.prom and all(labels.get(k) == x for k, x in want.items())
        ]
        if values:
            out[s.name] = sum(values) if s.kind == "counter" else max(values)
    return out


def by_name(found: Iterable[Source]) -> Mapping[str, Source]:
    return {s.name: s for s in found}


ALL = JVM + RPC + RATIS + OZONE_DATANODE + HDFS_DATANODE + NODEMANAGER + RESOURCEMANAGER
UNITS = {s.name: s.unit for s in ALL}
MEANINGS = {s.name: s.meaning for s in ALL}
# The latency a daemon's line in a figure over time shows, the first it has of these.
LATENCIES = ("ratis_sync_p50", "fsync_time", "write_chunk_time", "rpc_processing_time")
