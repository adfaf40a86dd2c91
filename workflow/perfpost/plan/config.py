"""Config: JSON-schema validation with defaults, then the checks a schema cannot express.

The result is a :class:`Plan`: every experiment with its cells, and for each job
(experiment, cell, host, repeat) a :class:`CellSpec`, the self-contained description the
``run-cell`` command needs. Errors are :class:`ConfigError` naming the key path.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import string
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields
from functools import cache
from pathlib import Path
from typing import Any

from perfpost import builds, clusters, hostenv, instrument, paths, provision, tools
from perfpost.clusters.base import ClusterSpec
from perfpost.columns import FIXED_COLUMNS, SUMMARY_COLUMNS, TAIL_COLUMNS
from perfpost.errors import ConfigError
from perfpost.hostenv import LOCALHOST
from perfpost.instrument import jfr, load
from perfpost.instrument import resources as telemetry
from perfpost.plan import matrix
from perfpost.plan import order as order_
from perfpost.tools.base import primary_metric

SCHEMA_PATH = Path(__file__).parent / "config.schema.yaml"


# CellSpec fields left out of its JSON when empty (most cells have none of them).
OPTIONAL_FIELDS = ("env", "clusters", "instrument", "resources", "profile", "background")


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
        variables its commands get (secrets by their source only)."""
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
        return out

    def cluster_specs(self) -> list[ClusterSpec]:
        return [ClusterSpec.from_dict(c) for c in self.clusters]

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
        ``runtime`` (:func:`runtime_json`, default ``$PERFPOST_RUNTIME``)."""
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


def runtime_json(plan: Plan) -> str:
    """Every host's settings and every experiment's timeout, for :meth:`CellSpec.from_json`."""
    return json.dumps(
        {
            "hosts": {name: {"name": name, **spec} for name, spec in plan.hosts.items()},
            "timeouts": {name: float(e.timeout) for name, e in plan.experiments.items()},
        },
        sort_keys=True,
    )


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
    cells: list[matrix.Cell] = field(default_factory=list)
    resolved: dict[str, dict[str, Any]] = field(default_factory=dict)  # cell id -> tool params
    labels: dict[str, dict[str, str]] = field(default_factory=dict)  # cell id -> axis labels
    # cell id -> the clusters it runs against (ClusterSpec dicts), when it names any
    cluster_specs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
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
        if self.instrument:
            out["instrument"] = self.instrument
        if self.resources is not None:
            out["resources"] = self.resources
        if self.profile:
            out["profile"] = self.profile
        if self.background:
            out["background"] = self.background
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

    def keep_checked(self) -> None:
        """Keep the config's passed schema checks for the next run (see :func:`build_plan`)."""
        if self.checked is not None:
            _keep_checked(*self.checked)
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
        """What an instrumented experiment's cells need first: Byteman provisioned here (its
        rules are checked here), and the tool's provisioned jars they are checked against."""
        exp = self.experiments[experiment]
        if not any(exp.rules.values()):
            return []
        out = [instrument.marker(self.tools)]
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
            background=copy.deepcopy(exp.load),
        )

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


# ------------------------------------------------------------------------------- loading


def _no_duplicates(loader: Any, node: Any, deep: bool = False) -> Any:
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise ConfigError(
                f"line {key_node.start_mark.line + 1}",
                f"duplicate key {key!r} (first at line {seen[key]})",
            )
        seen[key] = key_node.start_mark.line + 1
    return loader.construct_mapping(node, deep=deep)


@cache
def _strict_loader() -> type:
    """A YAML loader that refuses duplicate keys instead of keeping the last one silently.

    Made on first use: PyYAML (compiling its regular expressions) is no part of the import
    ``perfpost run-cell`` pays once per cell."""
    import yaml

    class StrictLoader(yaml.SafeLoader):
        pass

    StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _no_duplicates)
    return StrictLoader


def load_yaml(path: str | Path) -> dict[str, Any]:
    """A config file, refusing duplicate keys; errors name the file."""
    import yaml

    try:
        with open(path) as fh:
            data = yaml.load(fh, Loader=_strict_loader())
    except ConfigError as e:
        raise ConfigError(f"{path}: {e.where}", e.message) from None
    except yaml.YAMLError as e:
        raise ConfigError(str(path), f"not valid YAML: {e}") from None
    if not isinstance(data, dict):
        raise ConfigError(str(path), "a config is a mapping with `experiments:` (and `hosts:`)")
    return data


def _path(error: Any) -> str:
    parts = [str(p) if not isinstance(p, int) else f"[{p}]" for p in error.absolute_path]
    return ".".join(parts).replace(".[", "[") or "(top level)"


# Configs that passed both JSON schemas before (:func:`build_plan` with ``cache``).
CONFIG_CACHE_SCHEMA_VERSION = 1
# How many kept configs a cache holds: one file per config ever run, so each edit of the
# config would otherwise add one for good. The oldest go first; one pruned costs its config
# the schema checks (0.3 s) once more.
CONFIG_CACHE_KEEP = 32


def _plain(value: Any) -> bool:
    """Whether ``value`` is JSON as it stands (string keys; no tuples, dates or sets), so
    that its JSON text names it exactly and reading that text back gives it again."""
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    return value is None or isinstance(value, (str, int, float, bool))


def _cache_key(config: dict[str, Any]) -> str:
    """Everything the schema checks' outcome depends on: the config, the config schema and
    the tools' params schemas, and the versions of perfpost, Snakemake (its validator fills
    the defaults) and jsonschema."""
    from importlib.metadata import version

    import perfpost

    h = hashlib.sha256()
    for part in (
        str(CONFIG_CACHE_SCHEMA_VERSION),
        perfpost.__version__,
        version("snakemake"),
        version("jsonschema"),
        json.dumps(config, sort_keys=True, separators=(",", ":")),
        json.dumps(
            {name: t.PARAMS_SCHEMA for name, t in tools.every().items()},
            sort_keys=True,
            default=repr,
        ),
    ):
        h.update(part.encode() + b"\0")
    h.update(SCHEMA_PATH.read_bytes())
    return h.hexdigest()


def _checked_before(config: dict[str, Any], cache: str | Path | None) -> tuple[Path | None, bool]:
    """Where this config's checks are kept in ``cache`` (None: not kept, it is not plain
    JSON), and whether they passed before; if so, ``config`` gets its defaults from there."""
    if cache is None or not _plain(config):
        return None, False
    # Kept under results/, the config would keep its secret settings' values there too.
    if hostenv.setting_secrets(config.get("experiments"), config.get("clusters")):
        return None, False
    path = Path(cache) / f"config-{_cache_key(config)}.json"
    try:
        kept = json.loads(path.read_text())
    except (OSError, ValueError):
        return path, False
    if (
        not isinstance(kept, dict)
        or kept.get("schema_version") != CONFIG_CACHE_SCHEMA_VERSION
        or not isinstance(kept.get("config"), dict)
    ):
        return path, False
    config.clear()
    config.update(kept["config"])
    return path, True


def _keep_checked(path: Path, filled: str) -> None:
    """Note that the config passed (``filled``: its JSON with the defaults)."""
    from perfpost.records import write_text_atomic

    doc = f'{{"schema_version": {CONFIG_CACHE_SCHEMA_VERSION}, "config": {filled}}}\n'
    try:
        write_text_atomic(path, doc)
        kept = sorted(
            path.parent.glob("config-*.json"), key=lambda p: p.stat().st_mtime, reverse=True
        )
        for old in kept[CONFIG_CACHE_KEEP:]:
            old.unlink(missing_ok=True)
    except OSError:
        pass  # a cache that cannot be written only costs the next run the checks


def validate_schema(config: dict[str, Any]) -> None:
    """Validate against the JSON schema with snakemake's validator, which fills defaults."""
    import jsonschema
    import yaml
    from snakemake.exceptions import WorkflowError
    from snakemake.utils import validate

    try:
        validate(config, str(SCHEMA_PATH), set_default=True)
    except WorkflowError as e:
        # snakemake raises it inside `except ValidationError`, so the original is the context.
        cause = e.__cause__ or e.__context__
        if not isinstance(cause, jsonschema.ValidationError):
            raise
        # snakemake stops at the first error; ask jsonschema for the most relevant one.
        schema = yaml.safe_load(SCHEMA_PATH.read_text())
        best = (
            jsonschema.exceptions.best_match(
                jsonschema.Draft202012Validator(schema).iter_errors(config)
            )
            or cause
        )
        raise ConfigError(_path(best), _message(best)) from None


def _message(error: Any) -> str:
    if error.validator == "additionalProperties":
        return error.message.replace("Additional properties are not allowed", "unknown key")
    if error.validator == "enum":
        return f"{error.instance!r} is not one of {error.validator_value}"
    if error.validator == "oneOf":
        # Say what each form would need, not "not valid under any of the given schemas".
        wants = [repr(b["type"]) for b in error.validator_value if "type" in b]
        return f"{error.instance!r} is not of type {' nor '.join(wants) or 'any form allowed'}"
    return error.message


# ------------------------------------------------------------------------------ resolving

_FIELD_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")


def _template_fields(text: str, where: str) -> list[str]:
    try:
        return [f for _, f, _, _ in string.Formatter().parse(text) if f is not None]
    except ValueError as e:
        raise ConfigError(where, f"bad template {text!r}: {e}") from None


# Column names of the tidy table and its summaries: an axis may not take one.
RESERVED_AXES = frozenset(
    (*FIXED_COLUMNS, *TAIL_COLUMNS, *SUMMARY_COLUMNS, "work", "run", "cluster", "id")
)

# Filled in on the host, not from the axes: the cell's own scratch directory, its name.
RESERVED_FIELDS = frozenset({"work", "run"})
# Filled in when the cell's clusters are up: {<cluster name>.<field>}, {cluster.<field>}.
_CLUSTER_FIELD = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*\.[a-z0-9_]+$")


def _render(value: Any, values: Mapping[str, Any], where: str) -> Any:
    if not isinstance(value, str):
        if isinstance(value, list):
            return [_render(v, values, f"{where}[{i}]") for i, v in enumerate(value)]
        if isinstance(value, dict):
            return {k: _render(v, values, f"{where}.{k}") for k, v in value.items()}
        return value
    fields = [
        f
        for f in _template_fields(value, where)
        if f not in RESERVED_FIELDS and not _CLUSTER_FIELD.match(f)
    ]
    for f in fields:
        if f not in values:
            known = ", ".join(sorted(values)) or "none"
            raise ConfigError(where, f"template field {{{f}}} names no axis (axes: {known})")
    if len(fields) == 1 and value == "{" + fields[0] + "}":
        return values[fields[0]]  # keep the axis value's type: "{count}" -> 10000
    return value.format_map(_KeepReserved(values))


class _KeepReserved(dict):
    """Axis values; reserved and cluster fields stay as they are, for the run to fill."""

    def __missing__(self, key: str) -> Any:
        return _Dotted(key)  # only dotted fields reach here: others were checked

    def __getitem__(self, key: str) -> Any:
        if key in RESERVED_FIELDS:
            return "{" + key + "}"
        return super().__getitem__(key)


class _Dotted:
    """``{a.b}`` kept as written by ``str.format``."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __getattr__(self, attr: str) -> str:
        return "{" + self.name + "." + attr + "}"


def resolve_params(exp: Experiment, cell: matrix.Cell, where: str) -> dict[str, Any]:
    """The tool's parameters for one cell: axes fill same-named params and `{axis}` fields."""
    adapter = tools.get(exp.tool)
    known = adapter.PARAMS_SCHEMA["properties"]
    values = cell.value_map
    for name in values:
        if name in exp.params and exp.params[name] != "{" + name + "}":
            raise ConfigError(
                f"{where}.params.{name}",
                f'set here and by the axis {name!r}: remove one, or write "{{{name}}}"',
            )
    params = {k: _render(v, values, f"{where}.params.{k}") for k, v in exp.params.items()}
    for name, value in values.items():
        if name in known and name not in exp.params:
            params[name] = value
    return params


class _ParamsChecker:
    """Checks each cell's tool parameters against the tool's schema, fast enough for 10,000
    cells (a whole-object validation per cell cost 85 us, most of a 10,000-cell `-n`).

    The params schemas are flat objects: whether the keys are allowed and required is decided
    once per set of keys, and each value once per key and value, with jsonschema's own
    messages. Cells differ in a few axis values, so almost every check is a lookup.
    """

    FLAT = frozenset({"type", "additionalProperties", "required", "properties", "description"})

    def __init__(self, schema: Mapping[str, Any]) -> None:
        import jsonschema

        self.schema = schema
        self.whole = jsonschema.Draft202012Validator(schema)
        self.flat = set(schema) <= self.FLAT and schema.get("type") == "object"
        props = schema.get("properties", {})
        self.keys = jsonschema.Draft202012Validator(
            {**schema, "properties": {k: {} for k in props}}
        )
        self.values = {k: jsonschema.Draft202012Validator(sub) for k, sub in props.items()}
        self.memo: dict[Any, list[tuple[str, str]]] = {}

    def errors(self, params: dict[str, Any]) -> list[tuple[str, str]]:
        """(path under params, message) of every mistake, sorted."""
        if not self.flat:
            return self._found(self.whole, params, ())
        out = list(self._once(("keys", *sorted(params)), self.keys, params, ()))
        for key, value in params.items():
            if key in self.values:
                if isinstance(value, str | int | float | bool | None):
                    memo_key = (key, type(value), value)  # True == 1, but not to a schema
                else:
                    memo_key = (key, json.dumps(value, sort_keys=True, default=repr))
                out += self._once(memo_key, self.values[key], value, (key,))
        return sorted(out)

    def _once(self, memo_key: Any, validator: Any, instance: Any, at: tuple) -> list:
        if memo_key not in self.memo:
            self.memo[memo_key] = self._found(validator, instance, at)
        return self.memo[memo_key]

    @staticmethod
    def _found(validator: Any, instance: Any, at: tuple) -> list[tuple[str, str]]:
        found = []
        for e in validator.iter_errors(instance):
            e.path.extendleft(reversed(at))
            found.append((_path(e), _message(e)))
        return found


def _own(value: Any) -> Any:
    """A cell's own copy of a parameter value. Lists and dicts are copied, so that no cell
    shares one with the config or another cell; scalars (almost every value) need no copy."""
    if isinstance(value, list | dict):
        return copy.deepcopy(value)
    return value


def _check_tool_params(
    exp: Experiment, params: dict[str, Any], where: str, checker: _ParamsChecker | None
) -> dict[str, Any]:
    """A cell's params with the tool's defaults, checked against its schema (``checker``;
    None: they passed it before) and by the tool itself."""
    adapter = tools.get(exp.tool)
    params = {k: _own(v) for k, v in params.items()}
    for key, sub in adapter.PARAMS_SCHEMA["properties"].items():
        if "default" in sub and key not in params:
            params[key] = _own(sub["default"])
    errors = checker.errors(params) if checker is not None else []
    if errors:
        sub, message = errors[0]
        place = f"{where}.params" + ("" if sub == "(top level)" else f".{sub}")
        raise ConfigError(place, message)
    adapter.check_params(params, f"{where}.params")
    return params


# Tools' config keys whose version (and cache) a cluster kind takes by default.
_VERSION_FROM = {"ozone": "ozone", "hdfs": "hadoop", "yarn": "hadoop"}


def cluster_cache(tools_cfg: Mapping[str, Any], kind: str) -> str | None:
    """Where a cluster of ``kind`` is provisioned: its tool's ``cache`` (``tools.hadoop``
    for HDFS and YARN, ``tools.ozone`` for Ozone); None for the default cache."""
    return tools_cfg.get(_VERSION_FROM[kind], {}).get("cache")


def cluster_spec(
    name: str,
    raw: dict[str, Any],
    values: Mapping[str, Any],
    hosts: Mapping[str, Any],
    tools_cfg: Mapping[str, Any],
    where: str,
) -> ClusterSpec:
    """One cluster configuration for a cell: ``raw`` (``clusters.<name>``) with the cell's
    axis ``values`` filled in, roles completed, hosts checked. ``{id}`` stays for the
    cluster's own id (a directory of its own: "/dev/shm/perfpost/ratis-{id}")."""
    here = f"clusters.{name}"
    kind = clusters.get(raw["kind"])
    filled = _render(raw, {**values, "id": "{id}"}, here)
    roles: dict[str, list[str]] = {}
    for role, (fewest, most) in kind.ROLES.items():
        given = filled.get("roles", {}).get(role, [LOCALHOST] * max(fewest, 1))
        given = [given] if isinstance(given, str) else list(given)
        if len(given) < fewest or (most is not None and len(given) > most):
            span = f"{fewest}" if fewest == most else f"{fewest} to {most or 'any number of'}"
            raise ConfigError(f"{here}.roles.{role}", f"needs {span} host(s), got {len(given)}")
        for h in given:
            if h not in hosts:
                raise ConfigError(
                    f"{here}.roles.{role}", f"unknown host {h!r} (known: {sorted(hosts)})"
                )
        if len(set(given)) != len(given):
            raise ConfigError(f"{here}.roles.{role}", "a host is listed twice")
        roles[role] = given
    for role in filled.get("roles", {}):
        if role not in kind.ROLES:
            raise ConfigError(
                f"{here}.roles.{role}",
                f"{raw['kind']} has no role {role!r} (roles: {', '.join(kind.ROLES)})",
            )
    jvm = filled.get("jvm", {})
    if isinstance(jvm, str):
        jvm = {"all": jvm}
    for role in jvm:
        if role != "all" and role not in kind.ROLES:
            raise ConfigError(f"{here}.jvm.{role}", f"{raw['kind']} has no role {role!r}")
    site = {f: {k: str(v) for k, v in filled[f].items()} for f in SITE_KEYS if filled.get(f)}
    if filled.get("buckets") and raw["kind"] != "ozone":
        raise ConfigError(f"{here}.buckets", "only Ozone has buckets")
    version = str(
        filled.get("version")
        or tools_cfg.get(_VERSION_FROM[raw["kind"]], {}).get("version")
        or kind.RUNTIME.version
    )
    home, build = filled.get("home"), filled.get("build")
    if build is not None:
        if home:
            raise ConfigError(f"{here}.build", "a cluster runs a build or a `home`, not both")
        source = builds.check(str(build), f"{here}.build")
        build = str(source)
        # Staged (by the cluster's start) where the plan can name it now: its identity.
        home = str(builds.staged_path(source, cluster_cache(tools_cfg, raw["kind"])))
        version = f"build {source.name}"
    spec = ClusterSpec(
        name=name,
        kind=raw["kind"],
        version=version,
        roles=roles,
        site=site,
        jvm={k: str(v) for k, v in jvm.items()},
        env={k: str(v) for k, v in filled.get("env", {}).items()},
        dir=filled.get("dir", "/var/tmp/perfpost"),
        home=home,
        build=build,
        # Where the provision step put it (cluster_markers): the run's daemons start from there.
        cache=cluster_cache(tools_cfg, raw["kind"]),
        buckets=list(filled.get("buckets", [])),
        fresh=filled.get("fresh", "configuration"),
        shared=bool(filled.get("shared", False)),
    )
    del where
    return spec


SITE_KEYS = ("core-site", "hdfs-site", "ozone-site", "yarn-site", "mapred-site")


def _cluster_fields(value: Any) -> list[str]:
    """``{name.field}`` templates in a params value, anywhere inside it."""
    if isinstance(value, str):
        return [f for f in _template_fields(value, "") if _CLUSTER_FIELD.match(f)]
    if isinstance(value, list):
        return [f for v in value for f in _cluster_fields(v)]
    if isinstance(value, dict):
        return [f for v in value.values() for f in _cluster_fields(v)]
    return []


def _cell_clusters(
    plan_clusters: Mapping[str, Any],
    hosts: Mapping[str, Any],
    tools_cfg: Mapping[str, Any],
    exp: Experiment,
    cell: matrix.Cell,
    params: dict[str, Any],
    where: str,
) -> list[dict[str, Any]]:
    """The clusters a cell runs against, and a check that its params' cluster fields name
    one of them and a field it has."""
    names = exp.cluster if isinstance(exp.cluster, list) else [exp.cluster] if exp.cluster else []
    specs = []
    for i, raw_name in enumerate(names):
        name = str(_render(raw_name, cell.value_map, f"{where}.cluster"))
        if name not in plan_clusters:
            raise ConfigError(
                f"{where}.cluster" + (f"[{i}]" if isinstance(exp.cluster, list) else ""),
                f"no cluster {name!r} under `clusters:` (known: {sorted(plan_clusters) or 'none'})",
            )
        specs.append(
            cluster_spec(name, plan_clusters[name], cell.value_map, hosts, tools_cfg, where)
        )
    by_name = {s.name: s for s in specs}
    if specs:
        by_name.setdefault("cluster", specs[0])
    for f in _cluster_fields(params):
        prefix, _, attr = f.partition(".")
        spec = by_name.get(prefix)
        if spec is None:
            raise ConfigError(
                f"{where}.params",
                f"{{{f}}} names no cluster of this cell (its clusters: "
                f"{', '.join(s.name for s in specs) or 'none; set cluster:'})",
            )
        known = clusters.get(spec.kind).FIELDS
        if attr not in known:
            raise ConfigError(
                f"{where}.params",
                f"{{{f}}}: a {spec.kind} cluster has no field {attr!r} (fields: "
                f"{', '.join(sorted(known))})",
            )
    return [s.to_dict() for s in specs]


def _check_comparisons(exp: Experiment, where: str) -> None:
    """Every comparison names real axes and labels and selects cells on both sides."""
    comp_sides = ("baseline", "candidate")
    for i, comp in enumerate(exp.compare):
        here = f"{where}.compare[{i}]"
        for side in comp_sides:
            for axis in comp[side]:
                if axis not in exp.axes:
                    raise ConfigError(
                        f"{here}.{side}.{axis}",
                        f"{axis!r} is not an axis of this experiment (axes: {sorted(exp.axes)})",
                    )
            # The label rule the tables and figures match on, so a comparison that passes
            # here finds its runs there.
            chosen = [
                c
                for c in exp.cells
                if all(exp.labels[c.id][a] == matrix.label(v) for a, v in comp[side].items())
            ]
            if not chosen:
                raise ConfigError(
                    f"{here}.{side}",
                    f"selects no cell: no cell has {comp[side]} (labels: "
                    + "; ".join(
                        f"{a}: {sorted({str(exp.labels[c.id][a]) for c in exp.cells})}"
                        for a in comp[side]
                    )
                    + ")",
                )
        base, cand = ({a: matrix.label(v) for a, v in comp[s].items()} for s in comp_sides)
        if base == cand:
            raise ConfigError(here, "baseline and candidate select the same cells")
        for j, axis in enumerate(comp.get("by", [])):
            if axis not in exp.axes:
                raise ConfigError(f"{here}.by[{j}]", f"{axis!r} is not an axis")
            if axis in comp["baseline"] or axis in comp["candidate"]:
                raise ConfigError(
                    f"{here}.by[{j}]", f"{axis!r} is a filter of this comparison: group by others"
                )


def _check_controls(exp: Experiment, where: str) -> None:
    """An A/A control (``control: true``) compares one configuration with itself: each
    baseline cell has a candidate cell with the same other labels and the same command."""
    for i, comp in enumerate(exp.compare):
        if not comp.get("control"):
            continue
        named = set(comp["baseline"]) | set(comp["candidate"])
        sides = []
        for side in ("baseline", "candidate"):
            chosen = {}
            for c in exp.cells:
                labels = exp.labels[c.id]
                if all(labels[a] == matrix.label(v) for a, v in comp[side].items()):
                    rest = tuple(sorted((a, str(v)) for a, v in labels.items() if a not in named))
                    chosen[rest] = c.id
            sides.append(chosen)
        for rest, base in sides[0].items():
            cand = sides[1].get(rest)
            if cand is None:
                continue
            a, b = exp.resolved[base], exp.resolved[cand]
            if a != b:
                diff = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
                raise ConfigError(
                    f"{where}.compare[{i}].control",
                    f"an A/A control compares one command with itself, but `{base}` and "
                    f"`{cand}` differ in params {', '.join(diff)}: give both labels the same "
                    "value",
                )


def _instrumented_cells(exp: Experiment, where: str) -> None:
    """Which cells get a Byteman agent, and with which rules (``exp.rules``).

    ``instrument:`` adds the axis ``instrument`` (``on``; ``off`` for the first cell, or
    every cell, run without the agent so the post can state its cost); an axis named
    ``instrument`` (label: list of rule sets) chooses per cell instead."""
    axis = exp.axes.get(instrument.AXIS)
    if exp.instrument is None and axis is None:
        return
    if getattr(tools.get(exp.tool), "JVM_OPTS_VAR", None) is None:
        key = f"{where}.instrument" if exp.instrument is not None else f"{where}.axes.instrument"
        raise ConfigError(
            key, f"{exp.tool} does not run on a JVM: only freon and teragen can be instrumented"
        )
    if exp.instrument is not None:
        if axis is not None:
            raise ConfigError(
                f"{where}.axes.instrument",
                "the experiment's `instrument:` makes this axis (on, off): give one of the two",
            )
        spec = instrument.normalize(exp.instrument, f"{where}.instrument")
        if spec["tasks"] and exp.tool != "teragen":
            raise ConfigError(f"{where}.instrument.tasks", "only teragen runs map tasks on YARN")
        exp.instrument_tasks = spec["tasks"]
        rules = instrument.resolve_rules(spec["rules"], f"{where}.instrument.rules")
        exp.axes[instrument.AXIS] = {instrument.ON: spec["rules"]}
        if spec["without"] != "none":
            exp.axes[instrument.AXIS][instrument.OFF] = []
        cells = []
        for i, cell in enumerate(exp.cells):
            labels = [] if cell.id == matrix.NO_AXES_ID else list(cell.labels)
            for lab, rule_names in ((instrument.ON, spec["rules"]), (instrument.OFF, [])):
                if lab == instrument.OFF and (
                    spec["without"] == "none" or (i > 0 and spec["without"] == "first")
                ):
                    continue
                new = (*labels, (instrument.AXIS, lab))
                values = (*cell.values, (instrument.AXIS, rule_names))
                made = matrix.Cell(matrix.cell_id(new), new, values)
                cells.append(made)
                exp.rules[made.id] = rules if rule_names else []
        exp.cells = cells
        return
    for cell in exp.cells:
        value = cell.value_map[instrument.AXIS]
        if not isinstance(value, list):
            raise ConfigError(
                f"{where}.axes.instrument.{cell.label_map[instrument.AXIS]}",
                "a value of the instrument axis is a list of rule sets ([] for none)",
            )
        label = cell.label_map[instrument.AXIS]
        exp.rules[cell.id] = instrument.resolve_rules(value, f"{where}.axes.instrument.{label}")


def read_round(path: Path) -> dict[str, Any] | None:
    """A round's decision (:data:`paths.ROUND`), or None when it is missing or unreadable
    (the round is then decided again)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and "more" in data else None


def _precision(exp: Experiment, where: str) -> None:
    """``repeats: {min, max, precision}``: keep the settings apart, plan ``min`` runs."""
    if not isinstance(exp.repeats, dict):
        return
    raw = exp.repeats
    target = raw["precision"]
    fraction = float(target[:-1]) / 100 if isinstance(target, str) else float(target)
    if not 0 < fraction < 1:
        raise ConfigError(f"{where}.repeats.precision", f"{target!r} is not between 0 and 100%")
    low, high = int(raw.get("min", 3)), int(raw["max"])
    if low > high:
        raise ConfigError(f"{where}.repeats", f"min ({low}) is more than max ({high})")
    if exp.start_together:
        raise ConfigError(
            f"{where}.repeats",
            "a precision target needs cells that run one host per job; with start_together "
            "give repeats as a count",
        )
    metric = raw.get("metric") or primary_metric(tools.get(exp.tool), exp.params)
    exp.precision = {
        "min": low,
        "max": high,
        "precision": fraction,
        "metric": metric,
        "step": int(raw.get("step", 1)),
    }
    exp.repeats = low


def build_plan(config: dict[str, Any], cache: str | Path | None = None) -> Plan:
    """Validate ``config`` (filling defaults in place; ``cache``: a directory where the
    configs that passed are kept) and expand every experiment.

    With ``cache``, a config that passed the JSON schemas before (its text, the schemas and
    the validators unchanged, :func:`_cache_key`) is not validated again: importing jsonschema
    and compiling the schemas took 0.3 s of every ``snakemake`` run. perfpost's own checks
    run every time.
    """
    kept, checked = _checked_before(config, cache)
    filled = None  # the config's JSON with its defaults, to keep once every check passed
    if not checked:
        validate_schema(config)
        filled = json.dumps(config) if kept is not None and _plain(config) else None
    hosts: dict[str, dict[str, Any]] = {LOCALHOST: {"max_parallel_cells": 1}}
    ssh = config.get("ssh", {})
    for name, spec in config.get("hosts", {}).items():
        if name == LOCALHOST:
            # The tools' command keys (ozone, yarn) apply here too: only SSH settings do not.
            commands = sorted({t.HOST_KEY for t in tools.every().values() if t.HOST_KEY})
            commands.append(instrument.HOST_KEY)
            if set(spec) - {"max_parallel_cells", *commands, "env"}:
                raise ConfigError(
                    f"hosts.{name}",
                    "localhost runs commands here, without SSH: only max_parallel_cells, "
                    f"{', '.join(commands)} and env apply",
                )
            hosts[name] = dict(spec)
            continue
        hosts[name] = {**ssh, **spec}
    experiments: dict[str, Experiment] = {}
    for name, raw in config["experiments"].items():
        where = f"experiments.{name}"
        exp = Experiment(name=name, **{k: copy.deepcopy(v) for k, v in raw.items()})
        if not exp.title:
            exp.title = name
        try:
            tools.get(exp.tool)
        except KeyError as e:
            raise ConfigError(f"{where}.tool", str(e.args[0])) from None
        exp.load = load.settings(exp.background, f"{where}.background")
        for i, host in enumerate(exp.hosts):
            if host not in hosts:
                raise ConfigError(
                    f"{where}.hosts[{i}]",
                    f"unknown host {host!r}: add it under `hosts:` (known: {sorted(hosts)})",
                )
        dupes = sorted({h for h in exp.hosts if exp.hosts.count(h) > 1})
        if dupes:
            raise ConfigError(f"{where}.hosts", f"host listed twice: {dupes}")
        by = exp.plot.get("by")
        parts = tuple(getattr(tools.get(exp.tool), "PARTS", ()))
        if by and by not in parts:
            raise ConfigError(
                f"{where}.plot.by",
                f"{exp.tool} reports no {by}s"
                + (f" (it reports: {', '.join(parts)})" if parts else ""),
            )
        if by and by in exp.axes:
            raise ConfigError(f"{where}.plot.by", f"{by!r} is an axis already: rename the axis")
        for key in ("x", "facet"):
            if exp.plot.get(key) and exp.plot[key] not in [*exp.axes, *([by] if by else [])]:
                raise ConfigError(f"{where}.plot.{key}", f"{exp.plot[key]!r} is not an axis")
        if exp.plot.get("x") and exp.plot.get("x") == exp.plot.get("facet"):
            raise ConfigError(f"{where}.plot", "x and facet must be different axes")
        for axis in exp.axes:
            if axis in RESERVED_AXES:
                raise ConfigError(
                    f"{where}.axes.{axis}",
                    f"{axis!r} names a column of perfpost's tables; call the axis something "
                    f"else (reserved: {', '.join(sorted(RESERVED_AXES))})",
                )
        _precision(exp, where)
        exp.cells = matrix.expand(exp.axes, exp.exclude, exp.zip, where=f"{where}.axes")
        _instrumented_cells(exp, where)
        for cell in exp.cells:
            exp.labels[cell.id] = cell.label_map
        _check_comparisons(exp, where)
        checker = None if checked else _ParamsChecker(tools.get(exp.tool).PARAMS_SCHEMA)
        for cell in exp.cells:
            params = resolve_params(exp, cell, where)
            exp.resolved[cell.id] = _check_tool_params(exp, params, f"{where}[{cell.id}]", checker)
            if exp.cluster or _cluster_fields(params):
                exp.cluster_specs[cell.id] = _cell_clusters(
                    config.get("clusters", {}),
                    hosts,
                    config.get("tools", {}),
                    exp,
                    cell,
                    params,
                    f"{where}[{cell.id}]",
                )
        _check_controls(exp, where)
        exp.order = order_.settings(
            exp.order,
            where,
            clusters=bool(exp.cluster_specs),
            together=exp.start_together,
            compares=bool(exp.compare),
        )
        if exp.order is not None and exp.cluster_specs:
            exp.cluster_order = _cluster_order(exp)
        experiments[name] = exp
    return Plan(
        hosts=hosts,
        experiments=experiments,
        tools=config.get("tools", {}),
        clusters=config.get("clusters", {}),
        history=config.get("history", "history") or None,
        checked=(kept, filled) if kept is not None and filled is not None else None,
    )


def _memory_here() -> int | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _cluster_order(exp: Experiment) -> dict[str, Any]:
    """Interleaved runs against clusters: their configurations kept up side by side, or
    alternated with a restart before every run (``fresh: cell`` on every cell's clusters)
    where their daemons would not fit in this machine's memory together."""
    configs: dict[str, dict[str, Any]] = {}
    for specs in exp.cluster_specs.values():
        for c in specs:
            configs.setdefault(ClusterSpec.from_dict(c).ident(), c)
    here = _memory_here()
    mode, why = order_.cluster_mode(configs.values(), lambda h: here if h == "localhost" else None)
    if mode == order_.RESTARTS:
        for specs in exp.cluster_specs.values():
            for c in specs:
                c["fresh"] = "cell"  # the cluster's identity leaves fresh out
    return {"mode": mode, "why": why, "configs": len(configs)}


def load_plan(path: str | Path) -> Plan:
    return build_plan(load_yaml(path))


def check_secrets(plan: Plan, environ: dict[str, str] | None = None) -> None:
    """Every secret the config names must be set before any job starts, not fail cell by cell."""
    environ = dict(os.environ) if environ is None else environ
    places = [(f"hosts.{h}.env", spec.get("env", {})) for h, spec in plan.hosts.items()]
    places += [(f"experiments.{n}.env", e.env) for n, e in plan.experiments.items()]
    for where, env in places:
        for name in hostenv.missing(env, environ):
            raise ConfigError(
                f"{where}.{name}",
                f"its secret comes from the environment variable {env[name]['secret']}, which "
                "is not set: export it in the shell that runs snakemake",
            )
