"""Run one cell on its host and leave exactly one record: done, failed (with reason) or skipped.

A cell's attempt goes through its phases in order, each a module of :mod:`perfpost.run.cell`
that can be read alone: :mod:`~perfpost.run.cell.prepare` (tool version, delivery, prepare
steps, the page cache; what runs beside the measured step set up and started),
:mod:`~perfpost.run.cell.measure` (the measured step, timed on the host, its companions
stopped right after it), :mod:`~perfpost.run.cell.collect` (logs fetched, after-steps, parsing,
service records) and :mod:`~perfpost.run.cell.record` (the record, written last and
atomically, after :mod:`~perfpost.run.cell.cleanup` removed the scratch). The raw logs are
kept whatever happens. Whatever goes wrong on the way (a host error, or an exception nobody
foresaw), the cell ends with a record: failed, with the reason. Secrets are masked in memory
before any log or record is written. From before the cell's scratch exists until it is
removed, a guard on the host holds it: should perfpost die, at any moment, the host removes
it by itself.

This module sequences the phases: for one cell (:func:`run_cell`), for one cell on several
hosts at one moment (:func:`run_together`), with the cells' clusters held around them.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from perfpost import hostenv, hostpool
from perfpost.clusters.base import ClusterError
from perfpost.errors import unforeseen
from perfpost.hostenv import Redactor
from perfpost.plan.specs import RUNTIME_ENV, CellSpec
from perfpost.records import FAILED
from perfpost.run import deploy, hostsetup
from perfpost.run.cell.attempt import Attempt
from perfpost.run.cell.cleanup import cleanup
from perfpost.run.cell.collect import collect
from perfpost.run.cell.measure import measure
from perfpost.run.cell.prepare import prepare
from perfpost.run.cell.record import finish, guarded, record_failure
from perfpost.run.hosts import Host


class _CellRun(Attempt):
    """One attempt of a cell on its host, its phases in order."""

    def run(self) -> dict[str, Any]:
        try:
            guarded(self, prepare)
            guarded(self, measure, None)
            return guarded(self, collect) or self.record
        finally:
            cleanup(self)


START_MARGIN = 1.0  # seconds between the last host being ready and the common start


def _each(cells: list[_CellRun], phase: Any, *args: Any) -> None:
    """``phase`` of every cell, each guarded (:func:`perfpost.run.cell.record.guarded`), on
    the pool of hosts; the measured steps all at once: each waits on its host for one common
    start."""
    limit = len(cells) if phase is measure else hostpool.PARALLEL_HOSTS
    hostpool.each(lambda c: guarded(c, phase, *args), cells, limit)


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
        _each(cells, prepare)
        ready = [c for c in cells if c.record["status"] is None]
        if ready:
            start_at = time.time() + START_MARGIN
            _each(ready, measure, start_at)
            # A host lost during the measured step has its record already, and no timing.
            measured = [c for c in ready if c.record["status"] is None]
            starts = [c.timing.start for c in measured if c.timing]
            skew = max(starts) - min(starts) if starts else 0.0
            for c in ready:
                c.record["planned_start"] = start_at
                c.record["started_with"] = [x.spec.host["name"] for x in ready]
                if c.timing:
                    c.record["start_offset"] = c.timing.start - start_at
                c.record["start_skew"] = skew
            _each(measured, collect)
    except Exception as e:  # every cell ends with a record
        traceback.print_exc(file=sys.stderr)
        for c in cells:
            if c.record["status"] is None:
                finish(c, FAILED, unforeseen(e))
    finally:
        hostpool.each(cleanup, cells)
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
    began = time.time()
    try:
        with deploy.lease(
            list(wanted.values()),
            _cluster_hosts(specs),
            record=str(record_paths[0]),
        ) as lease:
            return body(lease)
    except ClusterError as e:
        traceback.print_exc(file=sys.stderr)
        what = "host set-up" if isinstance(e, hostsetup.SetupError) else "cluster"
        return [
            record_failure(s, p, f"{what}: {e}", redactor, began)
            for s, p in zip(specs, record_paths, strict=True)
        ]
