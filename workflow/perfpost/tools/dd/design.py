"""What the design checks need to know of a dd run (:mod:`perfpost.analysis.design`): the
bytes a writer wrote, and which of its rates include the flush to the device."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

FLUSHING_CONV = ("fsync", "fdatasync")  # dd flushes once after the last write, inside its time
WAITING_OFLAG = ("sync", "dsync", "direct")  # every write waits for the device


def written_bytes(metrics: Mapping[str, float], params: Mapping[str, Any]) -> float | None:
    """A writer's bytes; a reader writes nothing."""
    return metrics.get("bytes") if params.get("mode", "write") == "write" else None


def forced_rates(metrics: Mapping[str, float], params: Mapping[str, Any]) -> dict[str, float]:
    """Rates of data the run itself forced to the device: dd's own throughput where
    ``conv=fsync``/``fdatasync`` or ``oflag=sync``/``dsync``/``direct`` made it wait for the
    device, and the throughput with the timed ``sync`` after the run added."""
    if params.get("mode", "write") != "write":
        return {}
    out = {}
    conv = str(params.get("conv") or "").split(",")
    oflag = set(params.get("oflag") or [])
    if any(c in conv for c in FLUSHING_CONV) or oflag & set(WAITING_OFLAG):
        if metrics.get("throughput"):
            out["throughput"] = metrics["throughput"]
    if metrics.get("throughput_adjusted"):
        out["throughput_adjusted"] = metrics["throughput_adjusted"]
    return out


def data_synced(params: Mapping[str, Any], cluster: Mapping[str, Any] | None) -> bool | None:
    """Whether a writer's data were synced by dd itself: ``conv=fsync``/``fdatasync`` or an
    ``oflag`` that makes every write wait; a reader writes nothing (None)."""
    if params.get("mode", "write") != "write":
        return None
    conv = str(params.get("conv") or "").split(",")
    return any(c in conv for c in FLUSHING_CONV) or bool(
        set(params.get("oflag") or []) & set(WAITING_OFLAG)
    )
