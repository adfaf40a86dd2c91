"""The post's method text for a fio experiment, from its config."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from perfpost.errors import ConfigError
from perfpost.tools.fio import jobfile
from perfpost.tools.fio.command import TYPED, jobfile_name

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
    if params.get("jobfile"):
        return _describe_jobfile(experiment, results)
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


def _shown(key: str, value: Any, axes: Mapping[str, Any]) -> str:
    if isinstance(value, str) and re.fullmatch(r"\{[A-Za-z_][A-Za-z0-9_]*\}", value):
        name = value[1:-1]
        if name in axes:
            return f"`{key}` from the `{name}` axis"
    if isinstance(value, str) and "{" in value and value != "{work}":
        return f"`{key}={value}` (set by the axes)"
    line = jobfile.option_line(key, value)
    return f"`{line}`"


def _steady_sentences(results: Any) -> list[str]:
    """fio's own steady-state verdicts (``steadystate=`` in the job file), from the runs."""
    if results is None or not hasattr(results, "columns") or "metric" not in results:
        return []
    rows = results[results["metric"].astype(str).str.endswith("steady.attained")]
    out = []
    jobs = [str(m)[: -len("steady.attained")].rstrip(".") for m in dict.fromkeys(rows["metric"])]
    for metric, sub in rows.groupby("metric", sort=False):
        job = str(metric)[: -len("steady.attained")].rstrip(".")
        name = job.removeprefix("job.")
        if name.endswith(".1") and f"job.{name[:-2]}.2" not in jobs:
            name = name[:-2]  # one job of that name: its count says nothing
        who = f"job `{name}`" if job else "the job"
        hit = int((sub["value"] > 0).sum())
        said = f"{who}: met in {hit} of {len(sub)} runs"
        at = results[results["metric"] == f"{job + '.' if job else ''}steady.at"]["value"]
        if len(at):
            said += f" (fio ended the job at a median of {float(at.median()):.3g} s)"
        out.append(said)
    if not out:
        return []
    return [
        "fio's own steady-state detection (`steadystate=`, `ss_dur`, `ss_ramp` in the job file) "
        "ends a job once its criterion holds over the window; " + "; ".join(out) + ". A run "
        "whose criterion was not met ran its whole runtime (`steady.attained` 0 in the data)."
    ]


def _describe_jobfile(experiment: Mapping[str, Any], results: Any) -> list[str]:
    """A job file's run: its jobs and groups, what perfpost set in them, where the rows are."""
    params, axes = experiment["params"], experiment["axes"]
    name = jobfile_name(params)
    source = str(jobfile.resolve(params["jobfile"]))
    try:
        job = jobfile.parse(jobfile.read(params["jobfile"], "params.jobfile"), source)
        jobs = [s.name for s in job.jobs]
        walls = [
            s.name
            for s in job.jobs[1:]
            if any(k in ("stonewall", "wait_for_previous", "new_group") for k, _ in s.options)
        ]
    except ConfigError:  # the file changed since the runs: the record keeps what ran
        jobs, walls = [], []
    lines = [
        f"Each run is fio running the job file `{name}` (`{source}`), written into a new "
        "directory under "
        f"`{params['dir']}` with the lines perfpost adds after each job's own; the file as it "
        "ran is under *Test commands* and in each run's `raw/`."
        + (
            f" Its jobs: {', '.join(f'`[{j}]`' for j in jobs)}"
            + (
                f"; {', '.join(f'`[{w}]`' for w in walls)} "
                f"{'waits' if len(walls) == 1 else 'wait'} for the jobs before "
                "(`stonewall`, or a new reporting group: `new_group`)"
                if walls
                else ""
            )
            + "."
            if jobs
            else ""
        )
    ]
    options = dict(params.get("options") or {})
    every = []
    if "filename" not in options:
        every.append(
            "its files in the run's scratch directory (`directory=`: whatever the file names, "
            "fio lays out every job's files there; an absolute `filename=` too)"
        )
    for key in TYPED:
        if key in axes and key not in params:
            every.append(f"`{key}` from the `{key}` axis")
        elif params.get(key) is not None:
            every.append(_shown(key, params[key], axes))
    every += [_shown(k, v, axes) for k, v in options.items() if v is not None]
    lines.append("perfpost set in every job: " + ", ".join(every) + ".")
    for section, opts in (params.get("sections") or {}).items():
        shown = [_shown(k, v, axes) for k, v in opts.items() if v is not None]
        if shown:
            lines.append(f"In `[{section}]` only: " + ", ".join(shown) + ".")
    variables = params.get("vars") or {}
    if variables:
        said = []
        for k, v in variables.items():
            axis = (
                v[1:-1]
                if isinstance(v, str) and v[1:-1] in axes and v == f"{{{v[1:-1]}}}"
                else None
            )
            said.append(f"`${{{k}}}` from the `{axis}` axis" if axis else f"`${{{k}}}` = `{v}`")
        lines.append(
            "The file's variables, which fio fills from its environment: " + ", ".join(said) + "."
        )
    by = (experiment.get("plot") or {}).get("by")
    lines.append(
        "IOPS, bandwidth and latencies are fio's own, from its JSON report (`clat`: "
        "completion latency; `lat`: total latency; `p99`: the 99th percentile). Each job fio "
        "reports has its rows (`job.<name>.<k>.iops`, `job.<name>.<k>.read.clat_p99`: k "
        "counts the jobs of one name, `numjobs` clones among them; a reporting group fio "
        "merged with `group_reporting` is one job), and with several reporting groups each "
        "group has its own (`group.<its first job>.iops`: fio's numbers where it merged the "
        "group, else its jobs' summed, latency means pooled, percentiles only per job). "
        "`iops` and `throughput` are summed over every job of the run: a rate of the whole "
        "file only where its jobs ran at the same time."
        + (
            f" The figures, the results table and the comparisons here are by {by} "
            f"(`plot: {{by: {by}}}`)."
            if by
            else ""
        )
    )
    lines += _steady_sentences(results)
    if params.get("drop_cache"):
        lines.append(
            "The page cache was dropped (`sync; echo 3 > /proc/sys/vm/drop_caches`) right "
            "before each measurement."
        )
    return lines
