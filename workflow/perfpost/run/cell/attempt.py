"""The state one attempt of a cell carries through its phases, and the I/O every phase uses.

An :class:`Attempt` is made with the cell's record already begun (what ran where, and why,
filled in as the phases go), its scratch named on the host (a work directory and a log
directory, removed however the attempt ends), and what runs beside its measured step. Every
step it runs on its host is noted in the record, with its stderr kept in ``raw/``; every log
it copies back is masked of secrets before it touches the disk. It is also what the besides
see of the cell (:class:`perfpost.instrument.beside.Cell`).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from perfpost import __version__, hostenv, paths, tools
from perfpost.errors import HostSilent, PerfpostError
from perfpost.hostenv import Redactor
from perfpost.instrument import beside, lineup
from perfpost.plan.specs import CellSpec
from perfpost.records import RECORD_SCHEMA_VERSION
from perfpost.run import deploy, hostscript, lifeline
from perfpost.run.cell.seats import host_seats
from perfpost.run.hosts import Guard, Host
from perfpost.run.hostscript import CommandResult

SHORT_TIMEOUT = 60.0
# Where Hadoop and Ozone clients look for their configuration: a cell on a cluster gets one.
CONF_VARS = ("HADOOP_CONF_DIR", "OZONE_CONF_DIR")
# Where Ozone's and Hadoop's own launchers write their logs; by default into the install,
# which every cell on the host shares and which stays as it was delivered: for a cell on a
# cluster (whose client is the cluster's, Ozone or Hadoop), a directory of its own. Other
# cells' commands get the base environment and what they declare, nothing more.
LOG_VARS = ("HADOOP_LOG_DIR", "OZONE_LOG_DIR")


def iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return dt.datetime.fromtimestamp(ts, dt.UTC).isoformat(timespec="microseconds")


def shown(argv: tuple[str, ...] | list[str]) -> str:
    """A command as its record keeps it: quoted, secret settings' values masked before
    quoting (quoting may split a value, which masking it by value would then miss)."""
    return hostscript.quote(hostenv.mask_settings(list(argv)))


def tail(text: str, n: int = 5) -> str:
    return "\n".join(text.strip().splitlines()[-n:])


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


class Attempt:
    """One attempt of one cell on its host: its spec, record, scratch and besides."""

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
        self.cleaned = False  # the scratch was removed (or never made): cleanup() is done
        self.steps: list[dict[str, Any]] = []
        # This machine's clock at the attempt's start, for a record whose host never said
        # when its step ran; the end stays unknown where the host stopped answering.
        self.began, self.end_unknown = time.time(), False
        # Called with the host's epoch once the measured step's tools start there.
        self.measuring: list[Callable[[float], None]] = []
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
        self.opened_hosts: list[Host] = []  # the other hosts seats() opened, closed by cleanup()
        # What the phases find: the tool's plan of steps (prepare), the measured step's
        # result and its timing on the host (measure).
        self.plan: Any = None
        # With ``clients`` above 1, each client's part of the plan (run.cell.clients).
        self.clients: list[Any] = []
        self.measured: CommandResult | None = None
        self.timing: Any = None
        env = getattr(host, "env", {})
        if lease is not None:
            # The cluster it ran on: which configuration, which start of it, its release.
            self.record["clusters"] = lease.records()
            self.fields = lease.fields()
            self.client_site = lease.client_site()
            # A secret field (an S3 secret key) is masked wherever the cell's tool prints it.
            self.redactor = self.redactor.adding(hostenv.setting_secrets(self.fields))
            self.record["cluster_fields"] = hostenv.mask_settings(self.fields)
            if self.client_site:
                conf = f"{self.logdir}/conf"
                self.record["client_conf"] = hostenv.mask_settings(self.client_site)
                for var in CONF_VARS:
                    env[var] = conf
            for var in LOG_VARS:  # the cell's clients are the cluster's, Ozone or Hadoop
                env[var] = f"{self.logdir}/launcher"
            # Every step sees the cluster's addresses; the record keeps the params as planned
            # (its measurement), with the values beside them (cluster_fields).
            self.spec = dataclasses.replace(spec, params=fill_fields(spec.params, self.fields))
            if spec.background:  # a load against the cell's cluster (freon ockg beside)
                self.spec = dataclasses.replace(
                    self.spec, background=fill_fields(spec.background, self.fields)
                )

    @property
    def scratch_cleanup(self) -> str:
        """The script that removes the cell's scratch on the host."""
        return hostscript.cleanup_script(self.workdir, self.logdir)

    # -- what the phases and the besides use (instrument.beside.Cell) ----------------------
    def run_step(
        self,
        name: str,
        script: str,
        timeout: float,
        host: Any = None,
        on_stdout: Callable[[bytes], None] | None = None,
    ) -> CommandResult:
        """Run a step on the cell's host, noted in the record (its stderr kept in raw/); on
        another host of the cell (a beside's), just run it. ``on_stdout`` gets its output as
        it comes."""
        if host is not None and host is not self.host:
            return host.run(script, timeout, on_stdout=on_stdout)
        # Should perfpost die mid-step, the host removes the cell's scratch once the step's
        # tools are dead (the guard may have removed it while they still ran).
        began = time.monotonic()
        try:
            result = self.host.run(
                script, timeout, abandon=self.scratch_cleanup, on_stdout=on_stdout
            )
        except HostSilent as e:
            self.end_unknown = True
            what = self.spec.tool if name == "measure" else f"its {name} step"
            raise PerfpostError(
                f"{e} while {what} ran; what ran there may have finished; nothing was read back"
            ) from None
        if result.stderr:
            self.keep(f"{name}.stderr", result.stderr)
        # Its seconds as perfpost saw them (the host's round trips included): where a cell's
        # time went besides its measurement.
        self.steps.append(
            {
                "step": name,
                "exit_code": result.exit_code,
                "timed_out": result.timed_out,
                "seconds": round(time.monotonic() - began, 3),
            }
        )
        return result

    def when_measuring(self, fn: Callable[[float], None]) -> None:
        self.measuring.append(fn)

    def measuring_began(self, epoch: float) -> None:
        """The measured step's tools started on the host at ``epoch`` (its clock)."""
        for fn in self.measuring:
            fn(epoch)

    def read_log(self, remote_path: str, name: str, host: Any = None) -> str | None:
        return self._read_log(remote_path, name, host)

    def keep(self, name: str, data: str | bytes) -> Path:
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
        self.keep(name, data)
        self.record["logs"].append(f"{paths.RAW}/{name}")
        return data.decode(errors="replace")

    def cluster_kind(self, name: str) -> Any:
        """The cell's cluster ``name`` as its kind drives it, over the deployment the cell
        holds (:func:`perfpost.run.deploy.live`): for a step that acts on one daemon."""
        from perfpost import clusters

        for held in self.lease.held if self.lease is not None else []:
            if held.spec.name == name:
                return clusters.get(held.spec.kind)(deploy.live(held))
        raise KeyError(f"the cell holds no cluster {name!r}")

    def seats(self) -> list[beside.HostSeat]:
        """The hosts the cell involves (:func:`perfpost.run.cell.seats.host_seats`), found
        once."""
        if self._seats is None:
            self._seats = host_seats(
                self.spec, self.host, self.lease, self.record, self.opened_hosts
            )
        return self._seats
