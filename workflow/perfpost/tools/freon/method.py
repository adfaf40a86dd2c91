"""freon's test method as the post states it: the command, and the clock each rate used."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from perfpost.tools import base
from perfpost.tools.freon.defaults import TIME_LAG
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


def _rate_sentence(results: Any) -> str:
    """Which clock the rate's time came from: the one the runs used, per cell where they
    differ. freon prints millisecond stamps only with a log4j pattern that has them."""
    rounded = "freon's `Total execution time` is rounded to whole seconds"
    stamps, wall = RATE_SOURCES.values()
    by_cell = rate_sources(results)
    used = {m for counts in by_cell.values() for m in counts}
    if used == {"rate_source_freon_timestamps"}:
        return (
            f"The rate is successful operations divided by the run's own time, taken from "
            f"{stamps}: {rounded}."
        )
    if used == {"rate_source_host_wall_time"}:
        return (
            f"The rate is successful operations divided by {wall}: freon's log did not "
            "stamp both the start of the test and its summary to the millisecond (a log4j "
            f"pattern with whole seconds or no date, or the terminal form), and {rounded}."
        )
    if not used:
        return (
            f"The rate is successful operations divided by the run's time: from {stamps} "
            f"where the log has them, else {wall} ({rounded})."
        )

    def cells(metric: str) -> str:
        named = []
        for cell, counts in by_cell.items():
            if metric in counts:
                n, total = counts[metric], sum(counts.values())
                named.append(f"`{cell}`" + (f" ({n} of {total} runs)" if n < total else ""))
        return ", ".join(named)

    return (
        "The rate is successful operations divided by the run's time, which came from "
        f"different clocks: {stamps} in {cells('rate_source_freon_timestamps')}; {wall} "
        "(the log did not stamp the test's start and summary to the millisecond) in "
        f"{cells('rate_source_host_wall_time')}. "
        f"The tidy data names each run's clock (`rate_source_*` rows); {rounded}."
    )


def _tick_sentence(results: Any) -> str:
    """Why a short run's rate reads low: freon's progress reporter checks once a second
    (ProgressBar sleeps 1 s between checks) and the summary waits for it, so the last
    operation ends up to 1 s before the summary's stamp and the JVM's exit."""
    metric, lag, why = TIME_LAG
    said = (
        f"{why}, so a run's time is long by up to {lag:g} s and its rate reads low by up to "
        f"{lag:g} s over the run's time"
    )
    rows = _finished_rows(results, [metric])
    if len(rows) == 0:
        return said + "."
    shortest = float(rows["value"].min())
    share = base.LAG_SHARE
    more = (
        f"; Validity names the runs where it passes {share:.0%}" if lag > share * shortest else ""
    )
    return (
        f"{said}: up to {100 * lag / shortest:.0f}% here (the shortest run took "
        f"{shortest:.1f} s{more})."
    )


def describe(experiment: Mapping[str, Any], results: Any = None) -> list[str]:
    """The test method in prose; with ``results`` (the tidy rows), the clock each rate used."""
    p = experiment["params"]
    program, sub = p.get("program", "freon"), p.get("subcommand", "?")
    lines = [
        f"Each run is `ozone {program} {sub}` with the options in the commands below; "
        "generic settings (`-D`) go before the subcommand."
    ]
    lines.append(_rate_sentence(results))
    lines.append(_tick_sentence(results))
    if p.get("env"):
        lines.append("Environment: " + ", ".join(f"`{k}={v}`" for k, v in p["env"].items()) + ".")
    return lines
