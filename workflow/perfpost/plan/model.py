"""The plan as data: every experiment as configured and expanded into cells
(:class:`Experiment`), and the :class:`Plan` that makes each job's spec
(:class:`~perfpost.plan.specs.CellSpec`) and says what the jobs need first."""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perfpost import clusters, hostenv, instrument, paths, provision, tools
from perfpost.instrument import jfr, load
from perfpost.instrument import resources as telemetry
from perfpost.plan import matrix, schemacache
from perfpost.plan.specs import CellSpec


@dataclass
class Experiment:
    name: str
    title: str
    tags: list[str]
    description: str
    tool: str
    params: dict[str, Any]
    axes: dict[str, Any]
    exclude: list[dict[str, Any]]
    zip: list[list[str]]
    hosts: list[str]
    start_together: bool
    repeats: int
    after: list[str]
    sync_threshold: float
    timeout: float
    plot: dict[str, Any]
    compare: list[dict[str, Any]] = field(default_factory=list)
    env: dict[str, Any] = field(default_factory=dict)
    cluster: str | list[str] | None = None
    instrument: dict[str, Any] | list[str] | None = None
    resources: bool | dict[str, Any] | None = None
    profile: bool | dict[str, Any] | None = None
    background: dict[str, Any] | None = None
    cluster_steps: list[dict[str, Any]] = field(default_factory=list)  # at moments of a run
    daemon_metrics: dict[str, Any] = field(default_factory=dict)  # metrics read from daemons
    until: dict[str, Any] | None = None  # a daemon metric's bound that ends the run
    daemon_trace: dict[str, Any] | None = None  # a tracer attached to daemons for each run
    life: dict[str, Any] = field(default_factory=dict)  # instrument.clustersteps.settings()
    setup: list[Any] = field(default_factory=list)  # steps that make each host ready
    teardown: list[Any] = field(default_factory=list)  # steps that restore it
    conclusion: str = ""  # the author's last word, in place of the post's generated one
    cells: list[matrix.Cell] = field(default_factory=list)
    resolved: dict[str, dict[str, Any]] = field(default_factory=dict)  # cell id -> tool params
    labels: dict[str, dict[str, str]] = field(default_factory=dict)  # cell id -> axis labels
    # cell id -> the clusters it runs against (ClusterSpec dicts), when it names any
    cluster_specs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # cell id -> its hosts' set-up and teardown steps, axis values filled, when any
    setups: dict[str, dict[str, list[dict[str, Any]]]] = field(default_factory=dict)
    # cell id -> the Byteman rules attached to its JVM (instrument.resolve_rules), if any
    rules: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    instrument_tasks: bool = False  # the job's map tasks on YARN get the agent too
    # repeats given as a precision: {min, max, precision (a fraction), metric, step}; then
    # ``repeats`` is ``min``, the runs every cell gets before its precision is looked at
    precision: dict[str, Any] | None = None
    load: dict[str, Any] = field(default_factory=dict)  # instrument.load.settings(background)
    order: Any = None  # plan.order: None, back-to-back, interleaved, {random: seed}
    # interleaved cells against clusters: {mode, why, configs} (plan.order.cluster_mode)
    cluster_order: dict[str, Any] | None = None

    @property
    def max_repeats(self) -> int:
        """The most runs a cell of this experiment may get."""
        return int(self.precision["max"]) if self.precision else self.repeats

    def public(self) -> dict[str, Any]:
        """The experiment as configured, for the post and its provenance hash."""
        keys = (
            "name",
            "title",
            "tags",
            "description",
            "tool",
            "params",
            "axes",
            "exclude",
            "zip",
            "hosts",
            "start_together",
            "repeats",
            "after",
            "sync_threshold",
            "timeout",
            "plot",
            "compare",
        )
        out = {k: getattr(self, k) for k in keys}
        out["params"] = hostenv.mask_settings(self.params)  # a secret setting's value: ***
        if self.cluster:
            out["cluster"] = self.cluster
        if self.conclusion:  # only where given: a config without one keeps its hash
            out["conclusion"] = self.conclusion
        if self.instrument:
            out["instrument"] = self.instrument
        if self.resources is not None:
            out["resources"] = self.resources
        if self.profile:
            out["profile"] = self.profile
        if self.background:
            out["background"] = self.background
        for k in ("cluster_steps", "daemon_metrics", "until", "daemon_trace"):
            if getattr(self, k):  # only where given: a config without them keeps its hash
                out[k] = getattr(self, k)
        if self.setup:
            out["setup"] = self.setup
        if self.teardown:
            out["teardown"] = self.teardown
        if self.precision:
            out["precision"] = self.precision
        if self.order is not None:
            out["order"] = self.order
        if self.env:
            out["env"] = hostenv.public(self.env)  # a secret by its source, never its value
        return out

    def config_hash(self) -> str:
        blob = json.dumps(self.public(), sort_keys=True, default=str).encode()
        return hashlib.sha256(blob).hexdigest()[:16]


@dataclass
class Plan:
    hosts: dict[str, dict[str, Any]]
    experiments: dict[str, Experiment]
    tools: dict[str, Any] = field(default_factory=dict)
    clusters: dict[str, dict[str, Any]] = field(default_factory=dict)  # as configured
    history: str | None = "history"  # the history store (perfpost.history.store); None: off
    # A config that passed its schema checks here, to keep for the next run (where, what):
    # written by :meth:`keep_checked` when a run starts, never while the Snakefile is read.
    checked: tuple[Path, str] | None = None
    # The command that makes these posts again (perfpost.glue.reproduce_command).
    reproduce: str = "snakemake --cores 6 report"

    def keep_checked(self) -> None:
        """Keep the config's passed schema checks for the next run (see
        :func:`perfpost.plan.build.build_plan`)."""
        if self.checked is not None:
            schemacache.keep(*self.checked)
            self.checked = None

    def provisioned_marker(self, experiment: str, host: str) -> str | None:
        """The file a provisioned runtime's install leaves, when this cell needs one."""
        exp = self.experiments[experiment]
        host_spec = {"name": host, **self.hosts[host]}
        return tools.get(exp.tool).install_marker(exp.params, host_spec, self.tools)

    def cluster_markers(self, experiment: str, cell: str | None = None) -> list[str]:
        """The installs the experiment's clusters (``cell``'s alone, if given) run from,
        when perfpost provisions them."""
        from perfpost import provision

        out = set()
        per_cell = self.experiments[experiment].cluster_specs
        chosen = [per_cell.get(cell, [])] if cell is not None else list(per_cell.values())
        for specs in chosen:
            for c in specs:
                if c.get("home"):
                    continue
                runtime = clusters.get(c["kind"]).RUNTIME
                out.add(str(provision.marker(runtime, c["version"], c.get("cache"))))
        return sorted(out)

    def instrument_markers(self, experiment: str) -> list[str]:
        """What runs beside an experiment's cells needs first: a background load's provisioned
        runtime (freon beside teragen), and for an instrumented experiment Byteman provisioned
        here (its rules are checked here) and the tool's provisioned jars they are checked
        against."""
        exp = self.experiments[experiment]
        out = []
        if exp.load:
            adapter = tools.get(exp.load["tool"])
            for host in exp.hosts:
                host_spec = {"name": host, **self.hosts[host]}
                marker = adapter.install_marker(exp.load["params"], host_spec, self.tools)
                if marker and marker not in out:
                    out.append(marker)
        if not any(exp.rules.values()):
            return out
        out.append(instrument.marker(self.tools))
        runtime = tools.get(exp.tool).RUNTIME
        if runtime is not None:
            out.append(str(provision.configured_marker(runtime, self.tools)))
        return out

    def jobs(self) -> Iterator[CellSpec]:
        for exp in self.experiments.values():
            for cell in exp.cells:
                for host in exp.hosts:
                    for repeat in range(1, self.planned_runs(exp.name, cell.id, host) + 1):
                        yield self.spec(exp.name, cell.id, host, repeat)

    def planned_runs(self, experiment: str, cell: str, host: str, root: Path = Path()) -> int:
        """Runs a cell has on a host as the plan stands: ``repeats``, or with a precision
        target the runs its latest decision asked for (re-planned after every round)."""
        exp = self.experiments[experiment]
        runs = exp.repeats
        while exp.precision:
            decision = read_round(root / paths.round_decision(experiment, cell, host, runs))
            if decision is None or not decision.get("more"):
                break
            runs = min(max(int(decision["next"]), runs + 1), exp.max_repeats)
        return runs

    def spec(self, experiment: str, cell: str, host: str, repeat: int) -> CellSpec:
        exp = self.experiments[experiment]
        labels = exp.labels[cell]
        host_spec = {"name": host, **self.hosts[host]}
        adapter = tools.get(exp.tool)
        params = exp.resolved[cell]
        for_clusters = getattr(adapter, "for_clusters", None)
        if for_clusters is not None:  # what the cell's clusters decide of its client
            params = for_clusters(params, exp.cluster_specs.get(cell, []), host)
        params = adapter.complete_params(params, host_spec, self.tools)
        return CellSpec(
            experiment=experiment,
            cell=cell,
            labels=labels,
            host=host_spec,
            repeat=int(repeat),
            tool=exp.tool,
            params=params,
            after=list(exp.after),
            sync_threshold=float(exp.sync_threshold),
            timeout=float(exp.timeout),
            env=dict(exp.env),
            clusters=copy.deepcopy(exp.cluster_specs.get(cell, [])),
            instrument=self._instrument(exp, cell, host_spec),
            resources=telemetry.settings(exp.resources),
            profile=jfr.settings(exp.profile),
            # The load's params with what this host and the cell's clusters add, as the
            # cell's own tool's (a provisioned launcher, the build its Ozone runs).
            background=load.for_host(
                copy.deepcopy(exp.load), exp.cluster_specs.get(cell, []), host_spec, self.tools
            ),
            setup=copy.deepcopy(exp.setups.get(cell, {})),
            life=copy.deepcopy(exp.life),
            caches=self._caches(),
        )

    def _caches(self) -> list[str]:
        """The config's tool caches (provision.caches), worked out once, not once a job."""
        if "_tool_caches" not in self.__dict__:
            self.__dict__["_tool_caches"] = provision.caches(self.tools)
        return list(self.__dict__["_tool_caches"])

    def _instrument(self, exp: Experiment, cell: str, host: dict[str, Any]) -> dict[str, Any]:
        rules = exp.rules.get(cell)
        if not rules:
            return {}
        runtime = tools.get(exp.tool).RUNTIME
        classes = None
        if runtime is not None:
            classes = str(provision.configured_home(runtime, self.tools) / "lib")
        return instrument.settings(rules, host, self.tools, classes, exp.instrument_tasks)

    def host_limits(self) -> dict[str, int]:
        used = {h for e in self.experiments.values() for h in e.hosts}
        used |= {
            h
            for e in self.experiments.values()
            for specs in e.cluster_specs.values()
            for c in specs
            for hs in c["roles"].values()
            for h in hs
        }
        return {h: int(self.hosts[h].get("max_parallel_cells", 1)) for h in sorted(used)}


def runtime_json(plan: Plan) -> str:
    """Every host's settings and every experiment's timeout, for :meth:`CellSpec.from_json`."""
    return json.dumps(
        {
            "hosts": {name: {"name": name, **spec} for name, spec in plan.hosts.items()},
            "timeouts": {name: float(e.timeout) for name, e in plan.experiments.items()},
        },
        sort_keys=True,
    )


def read_round(path: Path) -> dict[str, Any] | None:
    """A round's decision (:data:`paths.ROUND`), or None when it is missing or unreadable
    (the round is then decided again)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and "more" in data else None
