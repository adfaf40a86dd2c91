"""A job's spec: one cell on one host for one repeat, as the ``run-cell`` command needs it,
self-contained, with what defines its measurement (:meth:`CellSpec.measurement_id`) kept apart
from how its host is reached and how long it may take (handed over as :data:`RUNTIME_ENV`)."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field, fields
from typing import Any

from perfpost import hostenv, instrument, provision
from perfpost.clusters.base import ClusterSpec, setup_specs
from perfpost.errors import ConfigError

# CellSpec fields left out of its JSON when empty (most cells have none of them).
OPTIONAL_FIELDS = (
    "env",
    "clusters",
    "instrument",
    "resources",
    "profile",
    "background",
    "setup",
    "life",
    "caches",
)


@dataclass(frozen=True)
class CellSpec:
    """Everything needed to run one cell on one host, and nothing that changes between runs."""

    experiment: str
    cell: str
    labels: dict[str, str]
    host: dict[str, Any]
    repeat: int
    tool: str
    params: dict[str, Any]
    after: list[str]
    sync_threshold: float
    timeout: float
    env: dict[str, Any] = field(default_factory=dict)  # the experiment's; the host's is in host
    clusters: list[dict[str, Any]] = field(default_factory=list)  # ClusterSpec dicts
    instrument: dict[str, Any] = field(default_factory=dict)  # instrument.settings(), if any
    # The resource sampler's settings (instrument.resources.settings); empty when it is off.
    # Not part of the measurement: telemetry beside a run does not change what it measures.
    resources: dict[str, Any] = field(default_factory=dict)
    # Java Flight Recorder beside the run (instrument.jfr.settings): part of the measurement,
    # as a recording costs the JVMs it records.
    profile: dict[str, Any] = field(default_factory=dict)
    # A load beside the measured step (instrument.load.settings): part of the measurement.
    background: dict[str, Any] = field(default_factory=dict)
    # The experiment's host set-up for this cell (``setup`` and ``teardown`` steps): part of
    # the measurement, as a host made otherwise measures otherwise.
    setup: dict[str, Any] = field(default_factory=dict)
    # What is done to the cell's clusters at moments of the run and what is read of their
    # daemons (instrument.clustersteps.settings): part of the measurement.
    life: dict[str, Any] = field(default_factory=dict)
    # The tool caches the config provisions into (provision.caches): not part of the
    # measurement, which names its installs as in the default cache (provision.cache_free).
    caches: list[str] = field(default_factory=list)

    def to_json(self) -> str:
        """The whole spec, connection settings and timeout included (``run-cell --spec``)."""
        # Shallow: json.dumps copies nothing, and asdict's deep copy was 70% of the time.
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        for k in OPTIONAL_FIELDS:
            if not data[k]:
                del data[k]
        return json.dumps(data, sort_keys=True, separators=(",", ":"))

    def param_json(self) -> str:
        """The spec as the workflow hands it to a job: what defines the measurement, and the
        host by name only.

        Snakemake re-runs a job in place (deleting its output, a finished record) when its
        params change. How perfpost reaches a host (address, keys, ``connect_timeout``,
        ``known_hosts``, ``max_parallel_cells``) and how long it waits (``timeout``) do not
        change a measurement, so they travel beside the spec (:data:`RUNTIME_ENV`), and
        changing them re-runs nothing.
        """
        data = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "timeout"}
        data["host"] = {k: v for k, v in self.host.items() if k in MEASUREMENT_HOST_KEYS}
        for k in OPTIONAL_FIELDS:
            if not data[k]:
                del data[k]
        return json.dumps(data, sort_keys=True, separators=(",", ":"))

    def measurement(self) -> dict[str, Any]:
        """What defines this run's measurement: the tool, its parameters (the launcher
        included: another install may be another build), what runs after it, and the
        variables its commands get (secrets by their source only). An install is named by
        what it is, not by where the tool cache is: a moved cache re-measures nothing."""
        out = {
            "tool": self.tool,
            "params": self.params,
            "after": self.after,
            "sync_threshold": self.sync_threshold,
            "env": hostenv.public(self.cell_env()),
        }
        if self.clusters:  # the system under test, by configuration (not by name)
            out["clusters"] = [ClusterSpec.from_dict(c).identity() for c in self.clusters]
        if self.instrument:  # an agent in the JVM, and the text of its rules
            out["instrument"] = instrument.identity(self.instrument)
        if self.profile:  # a flight recording in the tool's JVM or the daemons'
            out["profile"] = self.profile
        if self.background:  # a load beside the measured step
            out["background"] = self.background
        if self.setup:  # how the host was made ready
            out["setup"] = self.setup
        if self.life:  # what was done to the cluster, what was read of its daemons
            out["life"] = self.life
        return provision.cache_free(out, self.caches)

    def cluster_specs(self) -> list[ClusterSpec]:
        """The clusters the cell runs against, and its host's set-up (held as one)."""
        specs = [ClusterSpec.from_dict(c) for c in self.clusters]
        if self.setup:
            specs += setup_specs(self.setup, self.host["name"])
        return specs

    def measurement_id(self) -> str:
        """A short hash of :meth:`measurement`: records carry it, and a finished record
        whose hash differs from the config's is stale, never reused or overwritten."""
        blob = json.dumps(self.measurement(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def cell_env(self) -> dict[str, Any]:
        """Variables for the cell's commands: the host's, overridden by the experiment's."""
        return {**self.host.get("env", {}), **self.env}

    @classmethod
    def from_json(cls, text: str, runtime: str | None = None) -> CellSpec:
        """A spec from :meth:`to_json`, or from :meth:`param_json` completed by the run's
        ``runtime`` (:func:`perfpost.plan.model.runtime_json`, default ``$PERFPOST_RUNTIME``)."""
        data = json.loads(text)
        if "timeout" in data:
            return cls(**data)
        runtime = os.environ.get(RUNTIME_ENV) if runtime is None else runtime
        if not runtime:
            raise ConfigError(
                "run-cell --spec",
                f"the spec has no timeout or connection settings and ${RUNTIME_ENV} is not "
                "set: run cells through snakemake, or pass a whole spec",
            )
        known = json.loads(runtime)
        name = data["host"]["name"]
        if name not in known["hosts"] or data["experiment"] not in known["timeouts"]:
            raise ConfigError(
                "run-cell --spec",
                f"${RUNTIME_ENV} knows no host {name!r} or experiment {data['experiment']!r}",
            )
        data["host"] = {**known["hosts"][name], **data["host"]}
        data["timeout"] = known["timeouts"][data["experiment"]]
        return cls(**data)


# Host keys that belong to a measurement: its name (in every path) and the variables it sets.
MEASUREMENT_HOST_KEYS = frozenset({"name", "env"})


# The run's connection settings and timeouts, for specs handed over by name (param_json).
RUNTIME_ENV = "PERFPOST_RUNTIME"
