"""freon's test method as the post states it: the command, and the clock each rate used."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from perfpost.tools import base
from perfpost.tools.freon.defaults import READERS, REPORT_INTERVAL, TIME_LAG
from perfpost.tools.freon.parser import RATE_SOURCES


def _finished_rows(results: Any, metrics: list[str]) -> Any:
    """The tidy rows of ``metrics`` from finished runs (none when there are no results)."""
    if results is None or len(results) == 0:
        return []
    rows = results[results["metric"].isin(metrics)]
    return rows[rows["status"] == "done"] if "status" in rows else rows


def rate_sources(results: Any) -> dict[str, dict[str, int]]:
    """Per cell, how many finished runs took their time from each clock (:data:`RATE_SOURCES`),
    read from the tidy rows of those runs."""
    rows = _finished_rows(results, list(RATE_SOURCES))
    out: dict[str, dict[str, int]] = {}
    if len(rows) == 0:
        return out
    for cell, metric in zip(rows["cell"], rows["metric"], strict=True):
        counts = out.setdefault(str(cell), {})
        counts[metric] = counts.get(metric, 0) + 1
    return out


WINDOW, STAMPS, WALL = RATE_SOURCES


def _cells(by_cell: dict[str, dict[str, int]], metric: str) -> str:
    named = []
    for cell, counts in by_cell.items():
        if metric in counts:
            n, total = counts[metric], sum(counts.values())
            named.append(f"`{cell}`" + (f" ({n} of {total} runs)" if n < total else ""))
    return ", ".join(named)


def _span(results: Any, metric: str) -> str | None:
    rows = _finished_rows(results, [metric])
    if len(rows) == 0:
        return None
    low, high = float(rows["value"].min()), float(rows["value"].max())
    return f"{low:.1f} s" if f"{low:.1f}" == f"{high:.1f}" else f"{low:.1f} to {high:.1f} s"


def _whole_run(by_cell: dict[str, dict[str, int]], intro: str) -> str:
    """The clock a whole-run rate's time came from, as the runs used it (per cell where they
    differ). freon prints millisecond stamps only with a log4j pattern that has them."""
    rounded = "freon's `Total execution time` is rounded to whole seconds"
    used = {m for counts in by_cell.values() for m in counts} - {WINDOW}
    if used == {STAMPS}:
        return (
            f"{intro} the run's own time, client start-up included, taken from "
            f"{RATE_SOURCES[STAMPS]}: {rounded}."
        )
    if used == {WALL}:
        return (
            f"{intro} {RATE_SOURCES[WALL]}, as freon's log did not stamp both the start of "
            "the test and its summary to the millisecond (a log4j pattern with whole seconds "
            f"or no date, or the terminal form), and {rounded}."
        )
    return (
        f"{intro} the run's own time, client start-up included, which came from different "
        f"clocks: {RATE_SOURCES[STAMPS]} in "
        f"{_cells(by_cell, STAMPS)}; {RATE_SOURCES[WALL]} (the log did not stamp the test's "
        f"start and summary to the millisecond) in {_cells(by_cell, WALL)}. The tidy data "
        f"names each run's clock (`rate_source_*` rows); {rounded}."
    )


DURATION_WINDOW = (
    "The runs ran for a set time (`--duration`), and the rate is over each run's measured "
    "phase: every operation, from the moment the generator said its operations begin (its "
    "set-up done) to freon's deadline, its start plus the duration, after which its threads "
    "take no operation. Both are freon's own stamps, to the millisecond, so neither the "
    "set-up nor the progress reporter's last second is in it"
)


def _rate_sentence(results: Any, timed: bool = False) -> str:
    """Which clock each rate came from: the progress window where the log gives one (for a
    ``--duration`` run, ``timed``, its operations' start to its deadline), else the whole
    run's time, per cell where the runs differ."""
    window = (
        DURATION_WINDOW
        if timed
        else (
            "The rate is over each run's measured phase, read from freon's own progress lines: "
            "the operations completed between the first progress line that counts an operation "
            "and the last one before the count reached its total, over the time between their "
            "millisecond stamps. The client's start-up and the progress reporter's last second "
            "lie outside it, so the rate is the operations' throughput, diluted by neither; its "
            "time is exact to the millisecond, its count to the operations in flight at either "
            "end (at most one per thread)"
        )
    )
    by_cell = rate_sources(results)
    used = {m for counts in by_cell.values() for m in counts}
    startup = _span(results, "startup")
    before = (
        f" The phase began {startup} after the test started (the `startup` column: the "
        f"{'generator' if timed else 'client'}'s start-up"
        f"{'' if timed else ' and its first operations'})."
        if startup
        else ""
    )
    if not used:
        return (
            f"{window}, where the log gives one (two progress lines inside the run); "
            "otherwise the rate is successful operations over the whole run's time, from "
            f"{RATE_SOURCES[STAMPS]} where the log has them, else {RATE_SOURCES[WALL]}."
        )
    if used == {WINDOW}:
        return window + "." + before
    if WINDOW not in used:
        return _whole_run(
            by_cell,
            "No run was long enough for a measured phase (two progress lines inside the run, "
            "a second apart), so the rate is successful operations divided by",
        )
    return f"{window}: in {_cells(by_cell, WINDOW)}.{before} " + _whole_run(
        by_cell,
        "Runs too short for two progress lines inside them have as their rate the "
        "successful operations divided by",
    )


def _tick_sentence(results: Any) -> str | None:
    """Why a whole-run rate reads low: freon's progress reporter checks once a second and
    the summary waits for it, so the last operation ends up to a second before the summary's
    stamp and the JVM's exit. None where every rate is over its progress window."""
    time_metric, lag_metric, _, why = TIME_LAG
    lags = _finished_rows(results, [lag_metric])
    lagged = lags[lags["value"] > 0] if len(lags) else lags
    if len(lags) and len(lagged) == 0:
        return None
    said = (
        f"For a rate over the whole run, {why}, so its time is long by up to "
        f"{REPORT_INTERVAL:g} s and the rate reads low by up to {REPORT_INTERVAL:g} s over "
        "the run's time"
    )
    times = _finished_rows(results, [time_metric])
    if len(lagged) == 0 or len(times) == 0:
        return said + "."
    keys = set(zip(lagged["cell"], lagged["host"], lagged["repeat"], strict=True))
    mine = [
        float(v)
        for c, h, r, v in zip(
            times["cell"], times["host"], times["repeat"], times["value"], strict=True
        )
        if (c, h, r) in keys
    ]
    if not mine:
        return said + "."
    shortest = min(mine)
    share = base.LAG_SHARE
    more = (
        f"; Validity names the runs where it passes {share:.0%}"
        if REPORT_INTERVAL > share * shortest
        else ""
    )
    return (
        f"{said}: up to {100 * REPORT_INTERVAL / shortest:.0f}% here (the shortest "
        f"{'such ' if len(mine) < len(times) else ''}run took {shortest:.1f} s{more})."
    )


def describe(experiment: Mapping[str, Any], results: Any = None) -> list[str]:
    """The test method in prose; with ``results`` (the tidy rows), the clock each rate used."""
    p = experiment["params"]
    program, sub = p.get("program", "freon"), p.get("subcommand", "?")
    lines = [
        f"Each run is `ozone {program} {sub}` with the options in the commands below; "
        "generic settings (`-D`) go before the subcommand."
    ]
    prep = p.get("prepare")
    if prep:
        lines.append(
            f"Before each run an unmeasured `ozone {program} {prep['subcommand']}` with the "
            "same path, prefix, count and threads (its options overlaid as the config gives "
            "them) wrote the files the run then reads."
        )
    lines += _cache_lines(experiment)
    lines.append(_rate_sentence(results, "duration" in p.get("options", {})))
    if prep and sub in READERS:
        lines.append(
            "A run's throughput is its readers' aggregate rate while reading: the threads "
            "(`-t`, at most one per file) times the size the files were written with, over "
            f"the mean time freon's own timer gives one file's read (open to last byte; `{sub}` "
            "reads each file to its end). The JVM's start, the client's set-up and freon's "
            "once-a-second summary are outside it; they are inside the run's rate of reads. "
            + (
                "Before its timer starts, dfsv reads the first file once for its reference "
                "digest, so its timed read of that file is warm: with the cache dropped, the "
                "fastest read is left out of the mean (`reads_timed` says how many count)."
                if sub == "dfsv"
                else ""
            )
        )
    tick = _tick_sentence(results)
    if tick:
        lines.append(tick)
    if p.get("env"):
        lines.append("Environment: " + ", ".join(f"`{k}={v}`" for k, v in p["env"].items()) + ".")
    return lines


def _cache_lines(experiment: Mapping[str, Any]) -> list[str]:
    p, axes = experiment["params"], experiment.get("axes") or {}
    cache = p.get("drop_cache")
    if "drop_cache" in axes or isinstance(cache, str):
        return [
            "The page cache was dropped (`sync; echo 3 > /proc/sys/vm/drop_caches`) on the "
            "run's host right before the measurement in the cells that ask for it (see the "
            "axes); the others read what the preparing run had just written, from a hot "
            "cache. A host's cache is the kernel's: the datanodes' block files on it too."
        ]
    if cache:
        return [
            "The page cache was dropped (`sync; echo 3 > /proc/sys/vm/drop_caches`) on the "
            "run's host right before each measurement."
        ]
    return []
