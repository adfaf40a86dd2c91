"""What every tool provides: a pure command builder and a pure log parser.

A tool never runs anything. It turns a cell's parameters into a :class:`Plan` (argument
lists, quoted later by :mod:`perfpost.run.hostscript`) and turns the raw logs of that plan back
into :class:`Metric` values. The runner does the I/O; that keeps tools testable on text.

A tool is a package ``perfpost/tools/<name>/`` whose module has:

- ``NAME``, ``PARAMS_SCHEMA`` (its ``params:`` in the config) and ``check_params``;
- ``RUNTIME``: the :class:`perfpost.provision.Runtime` perfpost fetches for it (its one
  version, its pom, log4j settings and launcher, kept in the same folder), or None, and
  ``HOST_KEY``: the host inventory key naming its command (``ozone``, ``yarn``), or None;
- ``JVM_OPTS_VAR`` for a tool that runs on a JVM (``OZONE_OPTS``): where an instrumenting
  agent's options go (:mod:`perfpost.instrument`);
- ``complete_params(params, host, tools)``: a cell's parameters with what its host adds
  (the launcher of a provisioned runtime), and ``install_marker(params, host, tools)``: the
  file a provisioned runtime's install leaves when the host uses one (``tools`` is the
  config's ``tools:``); optionally ``for_clusters(params, clusters, host)``: the parameters
  with what the cell's clusters decide (freon runs the build its Ozone runs);
- ``parse_run(params, logs, wall_time)`` where what a log says depends on the parameters
  (a command's declared metrics): used instead of ``parse_cell``; ``plot_metrics(params)``,
  ``table_metrics(params)`` and ``better(params)`` (metric -> whether more is better) where
  the metrics do (see :func:`plot_metrics`);
- ``plan``, ``version_argv``, ``parse_cell``, ``parse_text``, ``error_reason`` (the command
  builder and parser), ``describe`` (the post's method text), ``PLOT_METRICS``,
  ``TABLE_METRICS``, ``SYNC_ADJUST``, and ``parse_series`` where the tool reports progress
  over time;
- ``primary_metric(params)`` where a run's headline metric depends on its parameters (the
  first of ``PLOT_METRICS`` otherwise; see :func:`primary_metric`);
- ``derive(params, metrics)`` where a run's numbers need its parameters as well as its logs
  (a reader's bytes: its reads times the size its files were written with): more metrics;
- ``refuse(params)`` where the tool can tell on this machine, before any host is touched,
  that a cell cannot run (fio's ``--parse-only`` of a job file): the reason, or None;
- ``CLIENT_WINDOW`` where the tool reports its progress over time (``parse_series`` rows
  with ``at``, ``completed``, ``total``): the metrics of its rate, its time and its operations,
  which with several clients in a run are their sum over the window all were measuring
  (:mod:`perfpost.run.cell.clients`);
- ``CLIENT_FLAGS`` where some metrics are flags (a 1 that says how a number was made, freon's
  ``rate_source_*``): name prefixes of metrics that several clients' runs keep as one;
- ``TIME_LAG`` where the tool's clock for a run can stop late: (the metric of the time a
  run's rate is over, the metric of how late it can stop, the lag of a run recorded without
  that metric, why); the post's validity section flags runs where it passes
  :data:`LAG_SHARE` of their time.

What the post's design checks (:mod:`perfpost.analysis.design`) read of a tool, each optional
(a tool without it is not asked that question):

- ``written_bytes(metrics, params)``: the bytes a run wrote (None for a reader);
- ``forced_rates(metrics, params)``: bytes a second its run waited on to reach a device,
  by metric (dd's ``conv=fsync``; a rate with the sync after the run added);
- ``data_synced(params, cluster)``: whether its writes were synced as they were made (True,
  False, or None where it cannot tell);
- ``COVERS``: metric -> (its operations, the run's operations, its time): what a rate covers;
- ``CROSS``: metric -> (the run's elapsed-time metric, the start-up metric): a verdict on the
  one is checked against the other;
- ``CLOCKS``: metric -> (the metric of the time it was measured over, the clock's tick in
  seconds, what the clock is).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from perfpost import provision
from perfpost.hostenv import LOCALHOST

LAG_SHARE = 0.10  # of a run's time: a TIME_LAG above it is flagged

# A tool's page-cache parameters, the same for every tool that reads (dd, fio, freon): the
# runner drops the cache on the cell's host right before the measured step.
CACHE_PARAMS: dict[str, Any] = {
    "drop_cache": {
        "description": "Drop the page cache (sync; echo 3 > /proc/sys/vm/drop_caches) on the "
        "cell's host right before the measurement, after any preparing step. Needs root there.",
        "type": "boolean",
        "default": False,
    },
    "on_unprivileged": {
        "description": "When drop_cache is asked but the host user cannot drop the cache: "
        "fail the cell, or skip it (recorded as skipped, never measured hot in its place).",
        "enum": ["fail", "skip"],
        "default": "fail",
    },
}


# Several processes of the tool at once on each host of a cell (:mod:`perfpost.run.cell.clients`):
# every tool that runs as processes of its own has it (teragen's job is one, on YARN).
CLIENT_PARAMS: dict[str, Any] = {
    "clients": {
        "description": "Start this many processes of the tool at one moment on each host of the "
        "cell (1 when left out), each in its own scratch directory ({work}, {run}) with its own "
        "log and numbers. A run's rates are the clients' sum over the window all of them were "
        "measuring (where the tool reports its progress; over each client's own run where it "
        "does not), its times the slowest client's, its counts and bytes their sum.",
        "type": "integer",
        "minimum": 1,
        "maximum": 256,
    },
}


@dataclass(frozen=True)
class Metric:
    """One measured value in a base unit (:data:`perfpost.units.BASE_UNITS`: s, never ms),
    so tidy tables compare across tools; the post picks the prefix a reader sees."""

    name: str
    value: float
    unit: str


@dataclass(frozen=True)
class Proc:
    """One process of a step: its argv, and the file (in the log dir) that gets its stderr."""

    argv: tuple[str, ...]
    log: str | None = None


@dataclass(frozen=True)
class Plan:
    """Everything a cell runs on its host, in order, as argument lists.

    ``files`` (name, text) are written into the scratch directory before anything runs, and
    kept in the record's raw/ (a fio job file); ``prepare`` runs unmeasured (create input
    files); ``drop_cache`` asks the runner to empty
    the page cache right before the measurement; ``measure`` runs concurrently and is timed on
    the host; ``background`` runs during ``measure`` and is stopped after it; ``remove``
    runs after everything else, whatever the outcome (output outside the scratch directory);
    ``outputs`` (name, path) are files the measured step wrote, copied back beside its logs
    and parsed with them (a command's JSON report).
    """

    measure: tuple[Proc, ...]
    files: tuple[tuple[str, str], ...] = ()
    prepare: tuple[Proc, ...] = ()
    background: tuple[Proc, ...] = ()
    remove: tuple[Proc, ...] = ()
    outputs: tuple[tuple[str, str], ...] = ()
    drop_cache: bool = False
    writes: bool = False
    description: str = ""


@dataclass(frozen=True)
class Fetch:
    """A service's own record of a run, read by the host over HTTP after it (the YARN
    ResourceManager's application record): tried at each of ``urls`` in turn (HA pairs)
    until ``final`` says the record will not change, for at most ``timeout`` seconds.
    ``parse`` turns the body into metrics and the facts the cell's record keeps."""

    name: str  # file in the cell's raw/ directory
    urls: tuple[str, ...]
    final: Callable[[str], bool]
    parse: Callable[[str, str], tuple[list[Metric], dict[str, Any]]]
    timeout: float = 60.0
    what: str = "record"
    # How to stop the run at the service when its client was killed (a timeout): PUT this
    # JSON to each URL in turn until one accepts it (YARN's application state: KILLED).
    cancel_urls: tuple[str, ...] = ()
    cancel_body: str = ""
    cancel_what: str = "the run"


def count_at(points: list[tuple[float, float]], at: float) -> float | None:
    """A progress count at the moment ``at``, on the line between the two progress points
    (time, count; in time order) around it; None outside them. Several clients' common
    window and a background load's share of a measured step are read so."""
    for (t0, c0), (t1, c1) in itertools.pairwise(points):
        if t0 <= at <= t1:
            return c0 if t1 == t0 else c0 + (c1 - c0) * (at - t0) / (t1 - t0)
    return None


def primary_metric(adapter: Any, params: Mapping[str, Any]) -> str:
    """The metric a run of these parameters is judged by before any data exists (a precision
    target's): the tool's own choice where it has one, else its first plotted metric."""
    pick = getattr(adapter, "primary_metric", None)
    return pick(params) if pick else adapter.PLOT_METRICS[0]


def plot_metrics(
    adapter: Any, params: Mapping[str, Any], daemon: Mapping[str, Any] | None = None
) -> tuple[str, ...]:
    """The metrics a post compares and draws, in order: the tool's own for these parameters
    (a command's declared ones), else its fixed list; and the experiment's ``daemon``
    metrics (``daemon_metrics``), after them, or after its time where the tool only waits."""
    pick = getattr(adapter, "plot_metrics", None)
    own = tuple(pick(params)) if pick else tuple(adapter.PLOT_METRICS)
    extra = tuple(m for m in (daemon or {}) if m not in own)
    # A wait's time to its bound first (how long re-replication took), then the daemons'.
    return (
        (*own[:1], *extra, *own[1:]) if getattr(adapter, "NAME", "") == "wait" else (*own, *extra)
    )


def parse(
    adapter: Any, params: Mapping[str, Any], logs: Mapping[str, str], wall_time: float | None
) -> list[Metric]:
    """A run's metrics from its logs: the tool's ``parse_run`` where what its logs say depends
    on the parameters (a command's declared metrics), else its ``parse_cell``."""
    own = getattr(adapter, "parse_run", None)
    if own is not None:
        return list(own(params, logs, wall_time=wall_time))
    return list(adapter.parse_cell(logs, wall_time=wall_time))


def table_metrics(
    adapter: Any, params: Mapping[str, Any], daemon: Mapping[str, Any] | None = None
) -> tuple[str, ...]:
    """The metrics of the notebook's results table, as :func:`plot_metrics` picks them."""
    pick = getattr(adapter, "table_metrics", None)
    own = tuple(pick(params)) if pick else tuple(adapter.TABLE_METRICS)
    extra = tuple(m for m in (daemon or {}) if m not in own)
    # A wait's time to its bound first (how long re-replication took), then the daemons'.
    return (
        (*own[:1], *extra, *own[1:]) if getattr(adapter, "NAME", "") == "wait" else (*own, *extra)
    )


def better(
    adapter: Any, params: Mapping[str, Any], daemon: Mapping[str, Any] | None = None
) -> dict[str, bool]:
    """Whether more is better, by metric, where the tool (or a ``daemon`` metric's
    declaration) says so beyond the units."""
    pick = getattr(adapter, "better", None)
    out = dict(pick(params)) if pick else {}
    for name, d in (daemon or {}).items():
        if d.get("better"):
            out[name] = d["better"] == "higher"
    return out


def sync_adjusted(
    metrics: list[Metric], sync_time: float, adjust: tuple[tuple[str, str, str], ...]
) -> list[Metric]:
    """``sync_time``, and each adjusted pair of ``adjust`` (amount, time, rate): the time
    plus the sync (``<time>_adjusted``) and the amount over it (``<rate>_adjusted``).

    The sync is added to every run, whatever it took: a rule that added it only above a
    threshold gave one cell two definitions (a 0.101 s sync added, a 0.099 s one not: 9% on
    a 1 s write's rate for 2 ms), and a cell's median mixed them. A sync too short to matter
    changes the rate by its own share, which the post's sync check states."""
    by_name = {m.name: m for m in metrics}
    out = [Metric("sync_time", sync_time, "s")]
    for amount, time_name, rate in adjust:
        if amount in by_name and time_name in by_name and rate in by_name:
            total = by_name[time_name].value + sync_time
            value = by_name[amount].value / total if total > 0 else math.nan
            out.append(Metric(f"{time_name}_adjusted", total, "s"))
            out.append(Metric(f"{rate}_adjusted", value, by_name[rate].unit))
    return out


class Unprivileged(Exception):
    """A cell asked for something its host user may not do (dropping the page cache)."""


def fill_work(value: Any, workdir: str) -> str:
    """A parameter value with ``{work}`` replaced by the run's scratch directory and
    ``{run}`` by its name (a path of its own on a cluster: "{cluster.fs}/{run}")."""
    name = workdir.rstrip("/").rsplit("/", 1)[-1]
    return str(value).replace("{work}", workdir).replace("{run}", name)


def env_prefix(params: Mapping[str, Any], java_var: str, workdir: str) -> list[str]:
    """``env K=V ...`` for a JVM tool: the experiment's variables plus ``java_opts`` as
    ``java_var`` (OZONE_OPTS, HADOOP_CLIENT_OPTS); nothing when there are none."""
    env = dict(params.get("env", {}))
    if params.get("java_opts"):
        env.setdefault(java_var, params["java_opts"])
    return ["env", *(f"{k}={fill_work(v, workdir)}" for k, v in env.items())] if env else []


def provisioned_launcher(
    runtime: provision.Runtime, host_key: str, host: Mapping[str, Any], tools: Mapping[str, Any]
) -> tuple[str, bool]:
    """The host's command for a runtime's tool (the inventory's ``host_key``: ``ozone``,
    ``yarn``), and whether it is one perfpost provisions: ``provisioned`` on localhost unless
    the host names a command, the command of that name on PATH elsewhere."""
    value = host.get(host_key, "provisioned" if host["name"] == LOCALHOST else host_key)
    if value != "provisioned":
        return value, False
    return str(provision.launcher(runtime, *provision.configured(runtime, tools))), True


def provisioned_marker(
    runtime: provision.Runtime,
    host_key: str,
    params: Mapping[str, Any],
    host: Mapping[str, Any],
    tools: Mapping[str, Any],
) -> str | None:
    """The file the runtime's install leaves, when a cell with ``params`` on ``host`` runs a
    provisioned one (not when the experiment names its own ``launcher``)."""
    if "launcher" in params or not provisioned_launcher(runtime, host_key, host, tools)[1]:
        return None
    return str(provision.configured_marker(runtime, tools))


def params_as_given(
    params: dict[str, Any], host: Mapping[str, Any], tools: Mapping[str, Any]
) -> dict[str, Any]:
    """``complete_params`` of a tool the host already has (dd, fio): nothing to add."""
    return params


def never_provisioned(
    params: Mapping[str, Any], host: Mapping[str, Any], tools: Mapping[str, Any]
) -> str | None:
    """``install_marker`` of a tool perfpost never fetches: no install to wait for."""
    return None
