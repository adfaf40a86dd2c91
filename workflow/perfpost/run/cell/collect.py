"""Collecting a cell's results once its measured step is over, and writing its record.

The tool's logs are copied back (masked) whatever happened; a step that timed out has what it
left at a service cancelled (a YARN application outlives its client); the ``after`` steps
(``sync``) run and are timed; the logs are parsed; the service records a tool names (the YARN
application's) are fetched and kept; what ran beside the step adds its metrics, or says why the
run cannot be trusted. The cell ends here: done with every metric, or failed with the reason
and whatever metrics it had.
"""

from __future__ import annotations

import time
from typing import Any

from perfpost import paths
from perfpost.errors import ParseError
from perfpost.records import DONE, FAILED
from perfpost.run import hostscript
from perfpost.run.cell import clients
from perfpost.run.cell.attempt import SHORT_TIMEOUT, Attempt, iso, tail
from perfpost.run.cell.record import finish
from perfpost.tools.base import Fetch, Metric, parse, sync_adjusted

# What a dropped page cache leaves as metrics of the run (bytes): Cached before and after,
# and how much of the cell's own files was still cached when the measurement started.
CACHE_METRICS = {
    "cached_before": "cached_before_drop",
    "cached_after": "cached_after_drop",
    "files_resident": "files_cached_after_drop",
}


def collect(cell: Attempt) -> dict[str, Any]:
    """Fetch the logs, run the after-steps, parse, and write the record."""
    spec, plan, measured, timing = cell.spec, cell.plan, cell.measured, cell.timing
    texts: dict[str, str] = {}
    for proc in plan.measure:
        text = cell.read_log(f"{cell.logdir}/{proc.log}", proc.log) if proc.log else None
        if text is not None:
            texts[proc.log] = text
    for name, path in plan.outputs:  # files the step wrote, read with its logs
        text = cell.read_log(path, name)
        if text is not None:
            texts[name] = text

    if measured.timed_out:
        reason = f"timed out after {spec.timeout:g} s"
        return finish(cell, FAILED, reason + cancel_services(cell, texts))
    if timing is None:
        return finish(
            cell,
            FAILED,
            f"the measured step did not finish (exit code "
            f"{measured.exit_code}): {tail(measured.stderr, 2)}",
        )

    metrics: list[Metric] = [Metric("wall_time", timing.elapsed, "s")]
    cpu = hostscript.parse_cpu(measured.stdout)
    if cpu is not None:
        # What the tool's own processes cost in CPU: beside the hosts' telemetry, it says
        # whether a busy CPU was the tool's or someone else's.
        metrics.append(Metric("tool_cpu_time", cpu, "s"))
    if "start_skew" in cell.record:
        metrics.append(Metric("start_skew", cell.record["start_skew"], "s"))
    for key, value in (cell.record.get("cache_drop") or {}).items():
        if key in CACHE_METRICS and value is not None:
            metrics.append(Metric(CACHE_METRICS[key], float(value), "B"))
    if "sync" in spec.after:
        synced = cell.run_step("sync", hostscript.sync_script(), spec.timeout)
        st = hostscript.parse_markers(synced.stdout).get("sync")
        if synced.timed_out or st is None or st.exit_codes != (0,):
            why = (
                f"timed out after {spec.timeout:g} s"
                if synced.timed_out
                else f"exit code {synced.exit_code}"
            )
            return finish(cell, FAILED, f"sync after the cell failed: {why}")
        cell.record["sync"] = {
            "start": iso(st.start),
            "end": iso(st.end),
            "seconds": st.elapsed,
        }

    if cell.record["exit_code"] != 0:
        reason = _error_reason(cell, texts)
        for b in cell.set_up:  # an agent, or its rule, may be why the JVM failed
            said = b.explain(cell, texts)
            if said:
                reason = f"{said}; {reason}"
        # A failed job's service record still tells why, and what it used.
        fetched, _ = fetch_records(cell, texts)
        for info in cell.record.get("service_records", {}).values():
            said = (info.get("diagnostics") or "").strip().splitlines()
            if said and said[0] not in reason:
                reason += f"; {info['status']}: {said[0]}"
            else:
                reason += f" ({info['status']})"
        cell.record["metrics"] = [m.__dict__ for m in metrics + fetched]
        return finish(cell, FAILED, reason)
    series = _client_series(cell, texts)
    try:
        if cell.clients:
            parsed, why = _parse_clients(cell, texts, timing.elapsed, series)
            if why is not None:
                cell.record["metrics"] = [m.__dict__ for m in metrics]
                return finish(cell, FAILED, why)
        else:
            parsed = parse(cell.adapter, spec.params, texts, timing.elapsed)
            if hasattr(cell.adapter, "derive"):
                parsed += cell.adapter.derive(spec.params, parsed)
    except ParseError as e:
        # Named as it lies in the attempt directory, where the log is kept.
        where = f"{paths.RAW}/{e.source}" if (cell.raw / e.source).exists() else e.source
        place = where if e.line is None else f"{where}:{e.line}"
        return finish(cell, FAILED, f"unparseable log: {place}: {e.message}")
    fetched, why = fetch_records(cell, texts)
    if why is not None:
        # Without its service record the cell would look complete but lack its numbers.
        cell.record["metrics"] = [m.__dict__ for m in metrics + parsed + fetched]
        return finish(cell, FAILED, why)
    counted: list[Metric] = []
    why = None
    for b in cell.set_up:
        got, why = b.collect(cell, texts, parsed)
        counted += got
        if why is not None:
            break
    if why is not None:
        cell.record["metrics"] = [m.__dict__ for m in metrics + parsed + fetched + counted]
        return finish(cell, FAILED, why)
    metrics += parsed + fetched + counted
    if series is not None:
        cell.record["series"] = series
    elif hasattr(cell.adapter, "parse_series"):
        cell.record["series"] = {"progress": cell.adapter.parse_series(texts)}
    if "sync" in spec.after and plan.writes:
        metrics += sync_adjusted(parsed, cell.record["sync"]["seconds"], cell.adapter.SYNC_ADJUST)
    elif "sync" in spec.after:
        metrics.append(Metric("sync_time", cell.record["sync"]["seconds"], "s"))
    cell.record["metrics"] = [m.__dict__ for m in metrics]
    return finish(cell, DONE)


def _error_reason(cell: Attempt, texts: dict[str, str]) -> str:
    """Why the measured step failed, from the tool's logs; with several clients, the first
    that failed, named."""
    if not cell.clients:
        return cell.adapter.error_reason(texts) or f"exit code {cell.record['exit_code']}"
    each = cell.record.get("clients", {}).get("each", [])
    for c, info in zip(cell.clients, each, strict=False):
        bad = [rc for rc in info.get("exit_codes", []) if rc != 0]
        if bad:
            said = cell.adapter.error_reason(c.texts(texts)) or f"exit code {bad[0]}"
            return f"client {c.index} of {len(cell.clients)}: {said}"
    return f"exit code {cell.record['exit_code']}"


def _client_series(cell: Attempt, texts: dict[str, str]) -> dict[str, list[Any]] | None:
    """Each client's progress series by its name (``client-<i>``), where the tool reports
    one: read once, for the common window and for the record."""
    if not cell.clients or not hasattr(cell.adapter, "parse_series"):
        return None
    return {
        f"{clients.PREFIX}{c.index}": cell.adapter.parse_series(c.texts(texts))
        for c in cell.clients
    }


def _parse_clients(
    cell: Attempt,
    texts: dict[str, str],
    elapsed: float,
    series: dict[str, list[Any]] | None,
) -> tuple[list[Metric], str | None]:
    """Each client's logs parsed as a run of its own (kept in the record with its numbers),
    and the run's numbers from theirs (:func:`perfpost.run.cell.clients.combine`); or why
    they add up to no run. A log that does not parse raises, named as raw/ keeps it."""
    adapter, params = cell.adapter, cell.spec.params
    info = cell.record["clients"]
    each: list[list[Metric]] = []
    spans = []
    for c, mine in zip(cell.clients, info["each"], strict=True):
        start, end = mine.get("start_epoch"), mine.get("end_epoch")
        wall = end - start if start is not None and end is not None else elapsed
        spans.append((start, end) if start is not None and end is not None else None)
        try:
            got = parse(adapter, params, c.texts(texts), wall)
            if hasattr(adapter, "derive"):
                got += adapter.derive(params, got)
        except ParseError as e:
            raise ParseError(c.kept(e.source), f"client {c.index}: {e.message}", e.line) from None
        mine["wall_time"] = wall
        mine["metrics"] = [m.__dict__ for m in got]
        each.append(got)
    extra = []
    if all(spans):
        info["overlap"] = clients.overlap([s for s in spans if s])
        extra.append(Metric("client_start_spread", info["overlap"]["start_spread"], "s"))
    names = getattr(adapter, "CLIENT_WINDOW", None)
    window = None
    if names and series is not None:
        got_window = clients.common_window(list(series.values()))
        if isinstance(got_window, str):
            return extra, got_window
        window = got_window
        info["rule"] = "common window"
        info["window"] = {
            "start": window.start,
            "end": window.end,
            "seconds": window.seconds,
            "metric": names[0],
        }
        for mine, rate, ops in zip(info["each"], window.rates(), window.operations, strict=True):
            mine["window_rate"] = rate
            mine["window_operations"] = ops
    else:
        info["rule"] = "own runs"
    flags = tuple(getattr(adapter, "CLIENT_FLAGS", ()))
    return clients.combine(each, window, names, flags) + extra, None


def fetch_records(cell: Attempt, texts: dict[str, str]) -> tuple[list[Metric], str | None]:
    """The adapter's service records of this run (the YARN application's), kept in raw/
    whatever they say; metrics from the final ones, or why one is missing."""
    fetches = getattr(cell.adapter, "fetches", None)
    metrics: list[Metric] = []
    for fetch in fetches(cell.spec.params, texts) if fetches else ():
        body, why = _get(cell, fetch)
        if body is not None:
            body = cell.redactor.text(body)
            cell.keep(fetch.name, body)
            cell.record["logs"].append(f"{paths.RAW}/{fetch.name}")
        if why is not None:
            return metrics, f"{fetch.what} not read: {why}"
        try:
            got, info = fetch.parse(body or "", f"{paths.RAW}/{fetch.name}")
        except ParseError as e:
            return metrics, f"{fetch.what} unreadable: {e}"
        cell.record.setdefault("service_records", {})[fetch.name] = info
        metrics += got
    return metrics, None


def _get(cell: Attempt, fetch: Fetch) -> tuple[str | None, str | None]:
    """Poll ``fetch`` on the host until its record is final: (last body, why not)."""
    deadline = time.monotonic() + fetch.timeout
    body: str | None = None
    why = "never tried"
    while True:
        for url in fetch.urls:
            got = cell.host.run(hostscript.http_get_script(url), SHORT_TIMEOUT)
            code, text = hostscript.parse_http(got.stdout)
            if code == 200:
                body = text
                if fetch.final(text):
                    return body, None
                why = f"{url} gave a record that is not final yet"
                break
            detail = tail(got.stderr or text, 1) or f"exit code {got.exit_code}"
            why = f"{url}: HTTP {code}: {detail}" if code else f"{url}: {detail}"
            if code and 400 <= code < 500:
                return text or body, why  # the service does not know it: waiting won't help
        if time.monotonic() >= deadline:
            return body, f"{why} (gave up after {fetch.timeout:g} s)"
        time.sleep(1.0)


def cancel_services(cell: Attempt, texts: dict[str, str]) -> str:
    """Stop what the killed client left running at a service (a YARN application keeps
    running after its client dies); returns what to add to the cell's reason."""
    fetches = getattr(cell.adapter, "fetches", None)
    said = ""
    for fetch in fetches(cell.spec.params, texts) if fetches else ():
        if not fetch.cancel_urls:
            continue
        outcome = f"{fetch.cancel_what} could not be killed"
        for url in fetch.cancel_urls:
            got = cell.host.run(hostscript.http_put_script(url, fetch.cancel_body), 30)
            code, text = hostscript.parse_http(got.stdout)
            cell.record.setdefault("cancelled", []).append({"url": url, "http_status": code})
            if code is not None and 200 <= code < 300:
                outcome = f"{fetch.cancel_what} killed (HTTP {code} from {url})"
                break
            detail = tail(got.stderr or text, 1) or f"exit code {got.exit_code}"
            outcome += f": {url}: HTTP {code}: {detail}"
        said += f"; {outcome}"
    return said
