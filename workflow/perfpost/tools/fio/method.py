"""The post's method text for a fio experiment, from its config."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

PATTERNS = {
    "read": "sequential reads",
    "write": "sequential writes",
    "trim": "sequential trims",
    "randread": "random reads",
    "randwrite": "random writes",
    "randtrim": "random trims",
    "rw": "mixed sequential reads and writes",
    "readwrite": "mixed sequential reads and writes",
    "randrw": "mixed random reads and writes",
    "trimwrite": "sequential trims, each followed by a write",
    "randtrimwrite": "random trims, each followed by a write",
}


def describe(experiment: Mapping[str, Any], results: Any = None) -> list[str]:
    """The test method in prose, from the experiment's config (axes named where they vary);
    ``results`` changes nothing: every number is fio's own."""
    params, axes = experiment["params"], experiment["axes"]
    options = dict(params.get("options") or {})

    def given(key: str) -> bool:
        return key in axes or params.get(key) is not None or options.get(key) is not None

    def val(key: str, default: Any = None) -> str:
        if key in axes and key not in params:
            got = axes[key]
            shown = list(got.values() if isinstance(got, dict) else got)
            return " or ".join(f"`{v}`" for v in shown) + f" (the `{key}` axis)"
        value = params.get(key, options.get(key, default))
        if isinstance(value, str) and "{" in value and value != "{work}":
            return f"`{value}` (set by the axes)"
        return f"`{value}`"

    rw = params.get("rw")
    if "rw" in axes and "rw" not in params:
        what = f"I/O of the pattern {val('rw')}"
    elif isinstance(rw, str) and rw.partition(":")[0] in PATTERNS:
        what = PATTERNS[rw.partition(":")[0]] + f" (`rw={rw}`)"
    else:
        what = f"I/O of the pattern {val('rw', 'read')}"
    bs = f" in blocks of {val('bs')}" if given("bs") else ""
    where = (
        f"on {val('filename')}"
        if options.get("filename") is not None
        else f"in a new directory under {val('dir')}, where fio first lays out its file (not timed)"
    )
    lines = [f"Each run is one fio job doing {what}{bs}, {where}."]
    engine = (
        f"The I/O engine is {val('ioengine')}"
        if given("ioengine")
        else ("The I/O engine is fio's default (`psync`)")
    )
    depth = f" with {val('iodepth')} I/Os in flight" if given("iodepth") else ""
    direct = params.get("direct", options.get("direct"))
    if "direct" in axes:
        cache = "; `direct` is an axis (O_DIRECT, bypassing the page cache, where set)"
    elif direct in (True, 1, "1"):
        cache = "; `direct=1`: O_DIRECT, bypassing the page cache"
    else:
        cache = "; buffered: the page cache may serve reads and absorb writes"
    lines.append(f"{engine}{depth}{cache}.")
    runtime = val("runtime") + (" s" if isinstance(params.get("runtime"), int) else "")
    if params.get("time_based") or "time_based" in axes:
        lines.append(
            f"Each job runs for {runtime} (`time_based`), going over its "
            f"{val('size')} file as many times as it can."
        )
    elif given("runtime"):
        lines.append(f"Each job does {val('size')} of I/O, or stops after {runtime}.")
    elif given("size"):
        lines.append(f"Each job does {val('size')} of I/O.")
    if given("fsync"):
        lines.append(f"fio calls fsync after every {val('fsync')} writes.")
    if given("rwmixread"):
        lines.append(f"{val('rwmixread')} percent of the I/Os are reads.")
    if given("numjobs"):
        merged = (
            "fio merges them into one report (`group_reporting`)"
            if params.get("group_reporting")
            else "each job's own rows are in the data, and latency percentiles only there "
            "(fio merges them with `group_reporting`)"
        )
        lines.append(
            f"{val('numjobs')} copies of the job run at once; IOPS and bandwidth are summed "
            f"over them and mean latency is over all their I/Os; {merged}."
        )
    lines.append(
        "IOPS, bandwidth and latencies are fio's own, from its JSON report "
        "(`clat`: completion latency, from submission to completion; `lat`: total latency, "
        "submission included; `p99`: the 99th percentile). `iops` and `throughput` are summed "
        "over reads, writes and trims; each direction also has its own metrics in the data "
        "(`read.iops`, `write.clat_p99`)."
    )
    if params.get("drop_cache"):
        lines.append(
            "The page cache was dropped (`sync; echo 3 > /proc/sys/vm/drop_caches`) right "
            "before each measurement."
        )
    return lines
