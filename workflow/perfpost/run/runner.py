"""Run one cell on its host and leave exactly one record: done, failed (with reason) or skipped.

Order: tool version, prepare (unmeasured), drop the page cache if asked, the measured step
(timed on the host), the ``after`` steps (``sync``), fetch the raw logs, clean up, parse. The
raw logs are kept whatever happens; the record is written last and atomically. Whatever goes
wrong on the way (a host error, or an exception nobody foresaw), the cell ends with a record:
failed, with the reason. Secrets are masked in memory before any log or record is written.
From before the cell's scratch exists until it is removed, a guard on the host holds it:
should perfpost die, at any moment, the host removes it by itself.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import math
import os
import sys
import time
import traceback
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from perfpost import __version__, deliver, hostenv, paths, shell, tools
from perfpost.clusters import metrics as daemon_metrics
from perfpost.clusters.base import ClusterError, Deployment, Node, site_xml
from perfpost.errors import ParseError, PerfpostError, unforeseen
from perfpost.hostenv import Redactor
from perfpost.instrument import beside, lineup
from perfpost.plan.specs import CellSpec
from perfpost.records import (
    DONE,
    FAILED,
    RECORD_SCHEMA_VERSION,
    SKIPPED,
    read_record,
    write_json_atomic,
)
from perfpost.run import deploy, hostscript, lifeline
from perfpost.run.hosts import Guard, Host, open_host
from perfpost.run.hostscript import CommandResult
from perfpost.tools.base import Fetch, Metric, sync_adjusted

SHORT_TIMEOUT = 60.0
# Where Hadoop and Ozone clients look for their configuration: a cell on a cluster gets one.
CONF_VARS = ("HADOOP_CONF_DIR", "OZONE_CONF_DIR")


def iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return dt.datetime.fromtimestamp(ts, dt.UTC).isoformat(timespec="microseconds")


def _shown(argv: tuple[str, ...] | list[str]) -> str:
    """A command as its record keeps it: quoted, secret settings' values masked before
    quoting (quoting may split a value, which masking it by value would then miss)."""
    return hostscript.quote(hostenv.mask_settings(list(argv)))


def _tail(text: str, n: int = 5) -> str:
    return "\n".join(text.strip().splitlines()[-n:])


def _site_dirs(site: dict[str, dict[str, str]]) -> list[str]:
    """Absolute directories a cluster's configuration names (``*.dir``, ``*.dirs`` keys:
    where a placement put a datanode's Ratis log, say), each once."""
    out: list[str] = []
    for keys in site.values():
        for key, value in keys.items():
            if not key.endswith((".dir", ".dirs")):
                continue
            for d in str(value).split(","):
                d = d.strip().removeprefix("file://")
                if d.startswith("/") and d not in out:
                    out.append(d)
    return out


def fill_fields(value: Any, fields: dict[str, str]) -> Any:
    """``value`` with every ``{<cluster>.<field>}`` replaced by the running cluster's value."""
    if isinstance(value, str):
        for k, v in fields.items():
            value = value.replace("{" + k + "}", v)
        return value
    if isinstance(value, list):
        return [fill_fields(v, fields) for v in value]
    if isinstance(value, dict):
        return {k: fill_fields(v, fields) for k, v in value.items()}
    return value


# What a dropped page cache leaves as metrics of the run (bytes): Cached before and after,
# and how much of the cell's own files was still cached when the measurement started.
CACHE_METRICS = {
    "cached_before": "cached_before_drop",
    "cached_after": "cached_after_drop",
    "files_resident": "files_cached_after_drop",
}


class _CellRun:
    def __init__(
        self,
        spec: CellSpec,
        record_path: Path,
        host: Host,
        redactor: Redactor | None = None,
        lease: deploy.Lease | None = None,
    ) -> None:
        self.spec = spec
        self.record_path = record_path
        self.raw = record_path.parent / paths.RAW
        self.host = host
        # Secret settings (a -D of the tool, a site key of its cluster) are masked like the
        # environment's secrets, wherever the tool or a daemon prints them.
        self.redactor = (redactor or Redactor()).adding(
            hostenv.setting_secrets(spec.params, spec.clusters)
        )
        self.adapter = tools.get(spec.tool)
        token = f"{hostscript.SCRATCH_PREFIX}{uuid.uuid4().hex[:12]}"
        self.workdir = f"{spec.params['dir'].rstrip('/')}/{token}"
        self.logdir = f"/tmp/{token}-logs"
        self.guard: Guard | None = None
        self.steps: list[dict[str, Any]] = []
        self.record: dict[str, Any] = {
            "schema_version": RECORD_SCHEMA_VERSION,
            "perfpost_version": __version__,
            "experiment": spec.experiment,
            "cell": spec.cell,
            "labels": spec.labels,
            "host": spec.host["name"],
            "host_address": getattr(host, "where", "localhost"),
            "repeat": spec.repeat,
            "attempt": int(record_path.parent.name.rpartition("-")[2]),
            "tool": spec.tool,
            "measurement": spec.measurement_id(),
            "params": hostenv.mask_settings(spec.params),
            "status": None,
            "reason": None,
            "command": None,
            "exit_code": None,
            "start": None,
            "end": None,
            "start_epoch": None,
            "end_epoch": None,
            "tool_version": None,
            "workdir": self.workdir,
            "session": os.environ.get(lifeline.SESSION_ENV),
            "logs": [],
            "steps": self.steps,
            "metrics": [],
        }
        if spec.cell_env():
            self.record["env"] = hostenv.public(spec.cell_env())
        self.fields: dict[str, str] = {}
        self.client_site: dict[str, dict[str, str]] = {}
        self.lease = lease
        # What runs beside the measured step (an agent, a sampler), in setup order; those
        # set up are stopped after it, and cleaned up however the cell ends.
        self.besides = lineup.for_cell(spec)
        self.set_up: list[beside.Beside] = []
        self._seats: list[beside.HostSeat] | None = None
        self._opened: list[Host] = []
        if lease is not None:
            # The cluster it ran on: which configuration, which start of it, its release.
            self.record["clusters"] = lease.records()
            self.fields = lease.fields()
            self.client_site = lease.client_site()
            self.record["cluster_fields"] = self.fields
            if self.client_site:
                conf = f"{self.logdir}/conf"
                self.record["client_conf"] = hostenv.mask_settings(self.client_site)
                for var in CONF_VARS:
                    getattr(host, "env", {})[var] = conf
            # Every step sees the cluster's addresses; the record keeps the params as planned
            # (its measurement), with the values beside them (cluster_fields).
            self.spec = dataclasses.replace(spec, params=fill_fields(spec.params, self.fields))

    @property
    def scratch_cleanup(self) -> str:
        """The script that removes the cell's scratch on the host."""
        return hostscript.cleanup_script(self.workdir, self.logdir)

    def _run(self, name: str, script: str, timeout: float) -> CommandResult:
        # Should perfpost die mid-step, the host removes the cell's scratch once the step's
        # tools are dead (the guard may have removed it while they still ran).
        result = self.host.run(script, timeout, abandon=self.scratch_cleanup)
        if result.stderr:
            self._keep(f"{name}.stderr", result.stderr)
        self.steps.append(
            {"step": name, "exit_code": result.exit_code, "timed_out": result.timed_out}
        )
        return result

    # -- what besides see of the cell (instrument.beside.Cell) ------------------------------
    def run_step(self, name: str, script: str, timeout: float, host: Any = None) -> CommandResult:
        if host is None or host is self.host:
            return self._run(name, script, timeout)
        return host.run(script, timeout)

    def read_log(self, remote_path: str, name: str, host: Any = None) -> str | None:
        return self._read_log(remote_path, name, host)

    def keep(self, name: str, data: str | bytes) -> Path:
        return self._keep(name, data)

    def seats(self) -> list[beside.HostSeat]:
        """The hosts the cell involves: its own first, then each other host of its clusters,
        with the daemons each runs (pid -> ``<cluster>:<daemon>``) and the directories whose
        disks matter there (the cell's work directory; a cluster's directories)."""
        if self._seats is not None:
            return self._seats
        own = beside.HostSeat(self.spec.host["name"], self.host, True, roles=["client"])
        if self.spec.params.get("dir"):
            own.dirs.append(str(self.spec.params["dir"]))
        seats = {own.name: own}
        for held in self.lease.held if self.lease is not None else []:
            dep = Deployment.from_state(held.state["deployment"])
            dirs = _site_dirs(dep.site)
            for host in dep.spec.hosts():
                seat = seats.get(host)
                if seat is None:
                    try:
                        opened = open_host(dep.hosts[host])
                    except Exception as e:  # telemetry is evidence, never the measurement
                        self.record.setdefault("warnings", []).append(
                            f"resources on {host}: cannot open the host: {unforeseen(e)}"
                        )
                        continue
                    self._opened.append(opened)
                    seat = seats[host] = beside.HostSeat(host, opened, False)
                for d in [dep.root(host), *dirs]:
                    if d not in seat.dirs:
                        seat.dirs.append(d)
            for d in dep.daemons:
                if d.host not in seats or not d.pid:
                    continue
                seat, label = seats[d.host], f"{held.spec.name}:{d.label}"
                seat.daemons[d.pid] = label
                seat.roles.append(f"{held.spec.name} {d.label}")
                key = daemon_metrics.port_key(dep.spec.kind, d.role, d.host)
                found = daemon_metrics.sources(dep.spec.kind, d.role)
                if key in dep.ports and found:
                    spec = dep.hosts.get(d.host) or self.spec.host
                    address = Node(seat.host, {"name": d.host, **spec}).address
                    base = f"http://{address}:{dep.ports[key]}"
                    seat.scrapes.append((label, daemon_metrics.urls(base, found)))
                    seat.sources[label] = found
        self._seats = list(seats.values())
        return self._seats

    def _remove_outputs(self) -> None:
        """The plan's ``remove`` commands (teragen's output on HDFS or Ozone), once the
        measured step ran; a failure is noted, it does not undo the measurement."""
        plan = getattr(self, "plan", None)
        if plan is None or not plan.remove or not hasattr(self, "measured"):
            return
        for i, proc in enumerate(plan.remove, start=1):
            name = f"remove-{i}"
            try:
                got = self._run(name, hostscript.quote(proc.argv), SHORT_TIMEOUT * 5)
            except PerfpostError as e:
                self.record.setdefault("warnings", []).append(f"{name}: {e}")
                continue
            if got.exit_code != 0:
                why = "timed out" if got.timed_out else f"exit code {got.exit_code}"
                self.record.setdefault("warnings", []).append(
                    f"{name} ({hostscript.quote(proc.argv)}) failed: {why}; "
                    f"see {paths.RAW}/{name}.stderr"
                )

    def _keep(self, name: str, data: str | bytes) -> Path:
        """Write a raw log of the attempt, its secrets masked before it touches the disk."""
        path = self.raw / name
        self.redactor.write(path, data)
        return path

    def _read_log(self, remote_path: str, name: str, host: Any = None) -> str | None:
        """Copy a log from the host (or another of the cell's) into raw/ (masked on the way)
        and return its text as kept, or None when the host has no such file."""
        data = (host or self.host).read(remote_path)
        if data is None:
            return None
        data = self.redactor.bytes(data)
        self._keep(name, data)
        self.record["logs"].append(f"{paths.RAW}/{name}")
        return data.decode(errors="replace")

    def _finish(self, status: str, reason: str | None = None) -> dict[str, Any]:
        try:
            self._remove_outputs()
        except Exception as e:  # the record says what went wrong, below
            self.record.setdefault("warnings", []).append(f"removing outputs: {unforeseen(e)}")
        # The host's scratch (the tool's files and unmasked logs) goes before the record says
        # the attempt is over; what could not be removed is named in the record.
        left = self.cleanup()
        if left:
            self.record.setdefault("warnings", []).append(left)
        self.record["status"] = status
        self.record["reason"] = reason
        # JSON has no NaN: a value that could not be computed is left out, never invented.
        self.record["metrics"] = [
            m
            for m in self.record["metrics"]
            if isinstance(m["value"], int | float) and math.isfinite(m["value"])
        ]
        self.record = self.redactor.data(self.record)
        write_json_atomic(self.record_path, self.record)
        return self.record

    def _guard(self, phase: Any, *args: Any) -> dict[str, Any] | None:
        """Run one phase; a host failure (unreachable, key rejected, connection lost) fails
        the cell with that reason, keeping whatever logs it had. So does any other exception
        (a bug, a library's surprise): its traceback goes to the job's log, its message to the
        record, and the other cells go on."""
        if self.record["status"] is not None:
            return self.record
        try:
            return phase(*args)
        except PerfpostError as e:
            return self._finish(FAILED, str(e))
        except Exception as e:  # every cell ends with a record
            traceback.print_exc(file=sys.stderr)
            return self._finish(FAILED, unforeseen(e))

    def _get(self, fetch: Fetch) -> tuple[str | None, str | None]:
        """Poll ``fetch`` on the host until its record is final: (last body, why not)."""
        deadline = time.monotonic() + fetch.timeout
        body: str | None = None
        why = "never tried"
        while True:
            for url in fetch.urls:
                got = self.host.run(hostscript.http_get_script(url), SHORT_TIMEOUT)
                code, text = hostscript.parse_http(got.stdout)
                if code == 200:
                    body = text
                    if fetch.final(text):
                        return body, None
                    why = f"{url} gave a record that is not final yet"
                    break
                detail = _tail(got.stderr or text, 1) or f"exit code {got.exit_code}"
                why = f"{url}: HTTP {code}: {detail}" if code else f"{url}: {detail}"
                if code and 400 <= code < 500:
                    return text or body, why  # the service does not know it: waiting won't help
            if time.monotonic() >= deadline:
                return body, f"{why} (gave up after {fetch.timeout:g} s)"
            time.sleep(1.0)

    def fetch_records(self, texts: dict[str, str]) -> tuple[list[Metric], str | None]:
        """The adapter's service records of this run (the YARN application's), kept in raw/
        whatever they say; metrics from the final ones, or why one is missing."""
        fetches = getattr(self.adapter, "fetches", None)
        metrics: list[Metric] = []
        for fetch in fetches(self.spec.params, texts) if fetches else ():
            body, why = self._get(fetch)
            if body is not None:
                body = self.redactor.text(body)
                self._keep(fetch.name, body)
                self.record["logs"].append(f"{paths.RAW}/{fetch.name}")
            if why is not None:
                return metrics, f"{fetch.what} not read: {why}"
            try:
                got, info = fetch.parse(body or "", f"{paths.RAW}/{fetch.name}")
            except ParseError as e:
                return metrics, f"{fetch.what} unreadable: {e}"
            self.record.setdefault("service_records", {})[fetch.name] = info
            metrics += got
        return metrics, None

    def cancel_services(self, texts: dict[str, str]) -> str:
        """Stop what the killed client left running at a service (a YARN application keeps
        running after its client dies); returns what to add to the cell's reason."""
        fetches = getattr(self.adapter, "fetches", None)
        said = ""
        for fetch in fetches(self.spec.params, texts) if fetches else ():
            if not fetch.cancel_urls:
                continue
            outcome = f"{fetch.cancel_what} could not be killed"
            for url in fetch.cancel_urls:
                got = self.host.run(hostscript.http_put_script(url, fetch.cancel_body), 30)
                code, text = hostscript.parse_http(got.stdout)
                self.record.setdefault("cancelled", []).append({"url": url, "http_status": code})
                if code is not None and 200 <= code < 300:
                    outcome = f"{fetch.cancel_what} killed (HTTP {code} from {url})"
                    break
                detail = _tail(got.stderr or text, 1) or f"exit code {got.exit_code}"
                outcome += f": {url}: HTTP {code}: {detail}"
            said += f"; {outcome}"
        return said

    def cleanup(self) -> str | None:
        """Remove the cell's scratch on the host (once); what is left there, if anything."""
        if getattr(self, "_cleaned", False):
            return None
        self._cleaned = True
        for b in self.set_up:
            try:
                b.cleanup(self)
            except Exception:
                traceback.print_exc(file=sys.stderr)
        for h in self._opened:
            try:
                h.close()
            except Exception:
                pass
        try:
            got = self.host.run(self.scratch_cleanup, SHORT_TIMEOUT, force=True)
        except Exception:  # a host that is gone has nothing left to clean
            return None
        left = hostscript.parse_left(got.stdout)
        if self.guard is not None and not got.timed_out:
            # Only once the removal ran: until then, should perfpost die, the host does it.
            self.guard.release()
            self.guard = None
        if left:
            return f"scratch left on the host, remove it by hand: {' '.join(left)}"
        return None

    def run(self) -> dict[str, Any]:
        try:
            self._guard(self.start)
            self._guard(self.measure, None)
            return self._guard(self.conclude) or self.record
        finally:
            self.cleanup()

    def start(self) -> dict[str, Any] | None:
        """Tool version, preparation and the page cache: everything before the measurement.
        Returns the record when the cell is already over (failed or skipped)."""
        self.raw.mkdir(parents=True, exist_ok=True)
        refuse = getattr(self.adapter, "refuse", None)
        why = refuse(self.spec.params) if refuse is not None else None
        if why is not None:  # decided here: no host was touched, none needs cleaning
            self._cleaned = True
            return self._finish(FAILED, why)
        # Before any step can make scratch: from here on the host removes it should perfpost
        # die, whatever it is doing (a step, copying a log back, or nothing on the host).
        self.guard = self.host.guard(self.scratch_cleanup)
        self._deliver()
        spec = self.spec
        self.measure_params = spec.params
        self.plan = plan = self.adapter.plan(spec.params, self.workdir)
        # What runs beside the measured step is set up first: an agent's rule that does not
        # compile fails the cell before anything of it runs, and what a beside adds to the
        # measured step (an agent's JVM options) is in the command the record keeps.
        for b in self.besides:
            self.set_up.append(b)
            why = b.setup(self)
            if why is not None:
                return self._finish(FAILED, why)
        if self.measure_params is not spec.params:
            # Only the measured step carries it: not teragen's removal of its output.
            measured = self.adapter.plan(self.measure_params, self.workdir)
            self.plan = plan = dataclasses.replace(plan, measure=measured.measure)
        self._show_command()
        self.record["prepare_commands"] = [_shown(p.argv) for p in plan.prepare]
        self.record["remove_commands"] = [_shown(p.argv) for p in plan.remove]
        self.record["background_commands"] = [_shown(p.argv) for p in plan.background]
        self.record["description"] = plan.description
        if self.client_site:
            conf = self._run(
                "client_conf",
                shell.write_files_script(
                    {
                        f"{self.logdir}/conf/{name}.xml": site_xml(keys)
                        for name, keys in self.client_site.items()
                    }
                ),
                SHORT_TIMEOUT,
            )
            if conf.exit_code != 0:
                return self._finish(
                    FAILED, f"writing the cluster's client configuration failed: {conf.stderr}"
                )

        version = self._run(
            "version", hostscript.quote(self.adapter.version_argv(spec.params)), SHORT_TIMEOUT
        )
        if version.exit_code == 0 and version.stdout.strip():
            self.record["tool_version"] = version.stdout.strip().splitlines()[0]

        prep = self._run(
            "prepare",
            hostscript.prepare_script(self.workdir, self.logdir, plan.prepare, plan.files),
            spec.timeout,
        )
        for name, text in plan.files:  # what ran, as it ran (a job file)
            self._keep(name, text)
            self.record["logs"].append(f"{paths.RAW}/{name}")
        self.record["files"] = [name for name, _ in plan.files]
        if prep.exit_code != 0:
            detail = self.redactor.text(prep.stderr)
            detail = self._read_log(f"{self.logdir}/prepare.log", "prepare.log") or detail
            why = "timed out" if prep.timed_out else f"exit code {prep.exit_code}"
            detail = _tail(detail, 2)
            return self._finish(FAILED, f"preparing the cell failed ({why}): {detail}".strip())

        if plan.drop_cache:
            drop = self._run(
                "drop_cache", hostscript.drop_cache_script(self.workdir), SHORT_TIMEOUT
            )
            if drop.exit_code != 0:
                msg = next(
                    (
                        ln.split(" ", 1)[1]
                        for ln in drop.stdout.splitlines()
                        if ln.startswith(hostscript.UNPRIVILEGED)
                    ),
                    None,
                )
                reason = (
                    "cannot drop the page cache: "
                    + (msg or f"exit code {drop.exit_code}: {_tail(drop.stderr, 2)}")
                    + "; run as root on the host, or drop `drop_cache` from the cell"
                )
                skip = spec.params.get("on_unprivileged") == "skip" and msg is not None
                return self._finish(SKIPPED if skip else FAILED, reason)
            # The evidence it was dropped, for the post's validity checks.
            self.record["cache_drop"] = hostscript.parse_cache_line(drop.stdout)
        for b in self.set_up:
            b.start(self)
        return None

    def _show_command(self) -> None:
        self.record["command"] = "\n".join(
            _shown(p.argv) + (" &" if len(self.plan.measure) > 1 else "") for p in self.plan.measure
        )

    def _deliver(self) -> None:
        """Put what the cell runs from perfpost's installs here (the tool's runtime, the
        agent) on a remote host that lacks it, and point the params at the host's copy. The
        record keeps the params as planned (its measurement) and says what was shipped."""
        spec, inst = self.spec, dict(self.spec.instrument or {})
        mapping, done = deliver.deliver_for(self.host, [spec.params, inst.get("home")])
        if not mapping:
            return
        self.record["delivered"] = [d.record() for d in done]
        if inst:
            # This machine's path too: the agent may go on to other hosts (NodeManagers).
            inst.setdefault("planned_home", inst["home"])
            inst["home"] = deliver.localize(inst["home"], mapping)
        self.spec = dataclasses.replace(
            spec, params=deliver.localize(spec.params, mapping), instrument=inst or spec.instrument
        )

    def measure(self, start_at: float | None) -> dict[str, Any] | None:
        """The measured step, timed on the host; with ``start_at``, it waits for that moment.
        What runs beside it is stopped right after it, whatever its outcome."""
        try:
            return self._measure(start_at)
        finally:
            self._stop_besides()

    def _stop_besides(self) -> None:
        for b in reversed(self.set_up):
            try:
                b.stop(self)
            except Exception as e:  # its findings are lost, the measurement is not
                traceback.print_exc(file=sys.stderr)
                self.record.setdefault("warnings", []).append(f"{b.name}: {unforeseen(e)}")

    def _measure(self, start_at: float | None) -> dict[str, Any] | None:
        spec, plan = self.spec, self.plan
        self.measured = self._run(
            "measure",
            hostscript.measure_script(
                "measure", self.logdir, plan.measure, plan.background, start_at=start_at
            ),
            spec.timeout + (max(start_at - time.time(), 0) if start_at else 0),
        )
        self.timing = timing = hostscript.parse_markers(self.measured.stdout).get("measure")
        if start_at is not None:
            self.record["start_ready_ahead"] = hostscript.parse_ahead(self.measured.stdout)
        if timing:
            self.record.update(
                start_epoch=timing.start,
                end_epoch=timing.end,
                start=iso(timing.start),
                end=iso(timing.end),
            )
            bad = [c for c in timing.exit_codes if c != 0]
            self.record["exit_code"] = bad[0] if bad else 0
            self.record["exit_codes"] = list(timing.exit_codes)
        return None

    def conclude(self) -> dict[str, Any]:
        """Fetch the logs, run the after-steps, parse, and write the record."""
        spec, plan, measured, timing = self.spec, self.plan, self.measured, self.timing
        texts: dict[str, str] = {}
        for proc in plan.measure:
            text = self._read_log(f"{self.logdir}/{proc.log}", proc.log) if proc.log else None
            if text is not None:
                texts[proc.log] = text

        if measured.timed_out:
            reason = f"timed out after {spec.timeout:g} s"
            return self._finish(FAILED, reason + self.cancel_services(texts))
        if timing is None:
            return self._finish(
                FAILED,
                f"the measured step did not finish (exit code "
                f"{measured.exit_code}): {_tail(measured.stderr, 2)}",
            )

        metrics: list[Metric] = [Metric("wall_time", timing.elapsed, "s")]
        cpu = hostscript.parse_cpu(measured.stdout)
        if cpu is not None:
            # What the tool's own processes cost in CPU: beside the hosts' telemetry, it says
            # whether a busy CPU was the tool's or someone else's.
            metrics.append(Metric("tool_cpu_time", cpu, "s"))
        if "start_skew" in self.record:
            metrics.append(Metric("start_skew", self.record["start_skew"], "s"))
        for key, value in (self.record.get("cache_drop") or {}).items():
            if key in CACHE_METRICS and value is not None:
                metrics.append(Metric(CACHE_METRICS[key], float(value), "B"))
        if "sync" in spec.after:
            synced = self._run("sync", hostscript.sync_script(), spec.timeout)
            st = hostscript.parse_markers(synced.stdout).get("sync")
            if synced.timed_out or st is None or st.exit_codes != (0,):
                why = (
                    f"timed out after {spec.timeout:g} s"
                    if synced.timed_out
                    else f"exit code {synced.exit_code}"
                )
                return self._finish(FAILED, f"sync after the cell failed: {why}")
            self.record["sync"] = {
                "start": iso(st.start),
                "end": iso(st.end),
                "seconds": st.elapsed,
            }

        if self.record["exit_code"] != 0:
            reason = self.adapter.error_reason(texts) or f"exit code {self.record['exit_code']}"
            for b in self.set_up:  # an agent, or its rule, may be why the JVM failed
                said = b.explain(self, texts)
                if said:
                    reason = f"{said}; {reason}"
            # A failed job's service record still tells why, and what it used.
            fetched, _ = self.fetch_records(texts)
            for info in self.record.get("service_records", {}).values():
                said = (info.get("diagnostics") or "").strip().splitlines()
                if said and said[0] not in reason:
                    reason += f"; {info['status']}: {said[0]}"
                else:
                    reason += f" ({info['status']})"
            self.record["metrics"] = [m.__dict__ for m in metrics + fetched]
            return self._finish(FAILED, reason)
        try:
            parsed = self.adapter.parse_cell(texts, wall_time=timing.elapsed)
            if hasattr(self.adapter, "derive"):
                parsed += self.adapter.derive(spec.params, parsed)
        except ParseError as e:
            # Named as it lies in the attempt directory, where the log is kept.
            where = f"{paths.RAW}/{e.source}" if (self.raw / e.source).exists() else e.source
            place = where if e.line is None else f"{where}:{e.line}"
            return self._finish(FAILED, f"unparseable log: {place}: {e.message}")
        fetched, why = self.fetch_records(texts)
        if why is not None:
            # Without its service record the cell would look complete but lack its numbers.
            self.record["metrics"] = [m.__dict__ for m in metrics + parsed + fetched]
            return self._finish(FAILED, why)
        counted: list[Metric] = []
        why = None
        for b in self.set_up:
            got, why = b.collect(self, texts, parsed)
            counted += got
            if why is not None:
                break
        if why is not None:
            self.record["metrics"] = [m.__dict__ for m in metrics + parsed + fetched + counted]
            return self._finish(FAILED, why)
        metrics += parsed + fetched + counted
        if hasattr(self.adapter, "parse_series"):
            self.record["series"] = {"progress": self.adapter.parse_series(texts)}
        if "sync" in spec.after and plan.writes:
            metrics += sync_adjusted(
                parsed, self.record["sync"]["seconds"], self.adapter.SYNC_ADJUST
            )
        elif "sync" in spec.after:
            metrics.append(Metric("sync_time", self.record["sync"]["seconds"], "s"))
        self.record["metrics"] = [m.__dict__ for m in metrics]
        return self._finish(DONE)


START_MARGIN = 1.0  # seconds between the last host being ready and the common start


def _each(cells: list[_CellRun], phase: str, *args: Any) -> None:
    with ThreadPoolExecutor(max_workers=len(cells)) as pool:
        list(pool.map(lambda c: c._guard(getattr(c, phase), *args), cells))


def run_together(
    specs: list[CellSpec],
    record_paths: list[str | Path],
    hosts: list[Host],
    redactor: Redactor | None = None,
) -> list[dict[str, Any]]:
    """One cell on several hosts at the same moment, as the onefile post ran on 6 machines.

    Every host prepares; then all measured steps wait on their host for one common start
    time and run; each record gets the planned start, its own offset from it and the skew
    between the hosts' actual starts (host clocks are assumed to be synchronised).
    """
    return _on_clusters(
        specs,
        record_paths,
        redactor,
        lambda lease: _together(specs, record_paths, hosts, redactor, lease),
    )


def _together(
    specs: list[CellSpec],
    record_paths: list[str | Path],
    hosts: list[Host],
    redactor: Redactor | None,
    lease: deploy.Lease | None,
) -> list[dict[str, Any]]:
    cells = [
        _CellRun(s, Path(p), h, redactor, lease)
        for s, p, h in zip(specs, record_paths, hosts, strict=True)
    ]
    try:
        _each(cells, "start")
        ready = [c for c in cells if c.record["status"] is None]
        if ready:
            start_at = time.time() + START_MARGIN
            _each(ready, "measure", start_at)
            # A host lost during the measured step has its record already, and no timing.
            measured = [c for c in ready if c.record["status"] is None]
            starts = [c.timing.start for c in measured if c.timing]
            skew = max(starts) - min(starts) if starts else 0.0
            for c in ready:
                c.record["planned_start"] = start_at
                c.record["started_with"] = [x.spec.host["name"] for x in ready]
                if getattr(c, "timing", None):
                    c.record["start_offset"] = c.timing.start - start_at
                c.record["start_skew"] = skew
            _each(measured, "conclude")
    except Exception as e:  # every cell ends with a record
        traceback.print_exc(file=sys.stderr)
        for c in cells:
            if c.record["status"] is None:
                c._finish(FAILED, unforeseen(e))
    finally:
        with ThreadPoolExecutor(max_workers=len(cells)) as pool:
            list(pool.map(lambda c: c.cleanup(), cells))
    return [c.record for c in cells]


def run_cell(
    spec: CellSpec, record_path: str | Path, host: Host, redactor: Redactor | None = None
) -> dict[str, Any]:
    """Run ``spec`` on ``host``; returns the record that was written to ``record_path``."""
    return _on_clusters(
        [spec],
        [record_path],
        redactor,
        lambda lease: [_CellRun(spec, Path(record_path), host, redactor, lease).run()],
    )[0]


def _cluster_hosts(specs: list[CellSpec]) -> dict[str, dict[str, Any]]:
    """How to reach every host a cluster may use: the run's inventory, and the cells' own."""
    from perfpost.plan.specs import RUNTIME_ENV

    known = json.loads(os.environ.get(RUNTIME_ENV) or "{}").get("hosts", {})
    out = {hostenv.LOCALHOST: {"name": hostenv.LOCALHOST}, **known}
    for s in specs:
        out[s.host["name"]] = {**out.get(s.host["name"], {}), **s.host}
    return out


def _on_clusters(
    specs: list[CellSpec],
    record_paths: list[str | Path],
    redactor: Redactor | None,
    body: Any,
) -> list[dict[str, Any]]:
    """``body(lease)`` with the cells' clusters up (``body(None)`` for cells without); a
    cluster that cannot start fails the cells with its reason."""
    wanted = {c.ident(): c for s in specs for c in s.cluster_specs()}
    if not wanted:
        return body(None)
    try:
        with deploy.lease(
            list(wanted.values()),
            _cluster_hosts(specs),
            record=str(record_paths[0]),
        ) as lease:
            return body(lease)
    except ClusterError as e:
        traceback.print_exc(file=sys.stderr)
        return [
            record_failure(s, p, f"cluster: {e}", redactor)
            for s, p in zip(specs, record_paths, strict=True)
        ]


def record_failure(
    spec: CellSpec, record_path: str | Path, reason: str, redactor: Redactor | None = None
) -> dict[str, Any]:
    """Write a failed record for a cell that could not even be set up to run (the last
    resort of ``perfpost run-cell``: a cell never ends without a record)."""
    path = Path(record_path)
    if path.exists():
        return read_record(path)  # a finished result is never overwritten
    attempt = path.parent.name.rpartition("-")[2]
    record = {
        "schema_version": RECORD_SCHEMA_VERSION,
        "perfpost_version": __version__,
        "experiment": spec.experiment,
        "cell": spec.cell,
        "labels": spec.labels,
        "host": spec.host.get("name"),
        "repeat": spec.repeat,
        "attempt": int(attempt) if attempt.isdigit() else None,
        "tool": spec.tool,
        "params": hostenv.mask_settings(spec.params),
        "status": FAILED,
        "reason": reason,
        "logs": [],
        "steps": [],
        "metrics": [],
    }
    if spec.cell_env():
        record["env"] = hostenv.public(spec.cell_env())
    redactor = (redactor or Redactor()).adding(hostenv.setting_secrets(spec.params, spec.clusters))
    record = redactor.data(record)
    write_json_atomic(path, record)
    return record
