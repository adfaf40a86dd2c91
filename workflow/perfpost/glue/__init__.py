"""Glue between the Snakemake rules and the package: the run's start and end, the config read
strictly, input functions, params and resources.

Which attempt of each cell the workflow wants, and so which records the tables are built
from, is :mod:`perfpost.glue.attempts`; what the provisioning rules make and what a cell
waits for is :mod:`perfpost.glue.provisioning`.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from pathlib import Path
from typing import Any

from perfpost import paths
from perfpost.clusters.base import ClusterSpec
from perfpost.errors import PerfpostError
from perfpost.glue import scheduler
from perfpost.glue.attempts import cluster_pending, outcome
from perfpost.glue.provisioning import cell_needs, cell_tools
from perfpost.plan import order as order_
from perfpost.plan.model import Plan
from perfpost.plan.specs import CellSpec
from perfpost.run import cellclient
from perfpost.run.lifeline import RETRIES_ENV


def ensure_on_path(python: str) -> None:
    """Put the ``perfpost`` command of the interpreter running Snakemake first on PATH.

    Jobs inherit Snakemake's environment, so rules can say ``perfpost`` even when the
    virtualenv was not activated (``.venv/bin/snakemake ...``).
    """
    bindir = str(Path(python).parent)
    current = os.environ.get("PATH", "").split(os.pathsep)
    if current[:1] != [bindir]:
        os.environ["PATH"] = os.pathsep.join([bindir, *current])


def served_job() -> str:
    """The start of a served rule's shell command: ``perfpost`` for the cells and the steps
    after them (:data:`perfpost.run.cellclient.SERVED`), as a small client
    (:mod:`perfpost.run.cellclient`) that hands the command to the run's cell server, quoted
    for the shell and with braces doubled for Snakemake."""
    words = " ".join(shlex.quote(w) for w in cellclient.job_argv())
    return words.replace("{", "{{").replace("}", "}}")


def served(command: str) -> str:
    """A served rule's shell command: ``perfpost`` ``command`` (a Snakemake shell string)
    through the run's cell server (:func:`served_job`)."""
    return f"{served_job()} {command}"


# Config files already read strictly while this process reads the Snakefile.
_READ_STRICTLY: set[str] = set()


def strict_configfile(path: str) -> str:
    """``path``, once read with perfpost's strict loader: Snakemake's own reports a YAML
    mistake without its line and keeps the last of two equal keys."""
    if os.path.exists(path):
        from perfpost.errors import ConfigError

        try:
            read_strictly([path])
        except ConfigError as e:
            # One line a person reads, not Snakemake's wrapper naming the Snakefile.
            print(f"perfpost: {e}", file=sys.stderr)
            raise SystemExit(1) from None
    return path


def read_strictly(configfiles: list[str]) -> None:
    """Read each config file with perfpost's strict loader (a mistake is a
    :class:`ConfigError` naming its line), each once: the Snakefile's own before Snakemake
    reads it (:func:`strict_configfile`), then those given with ``--configfile``."""
    from perfpost.plan.loading import load_yaml

    for path in configfiles:
        key = os.path.realpath(path)
        if key not in _READ_STRICTLY:
            load_yaml(path)
            _READ_STRICTLY.add(key)


def start_run(plan: Plan, workflow: Any) -> None:
    """Set up a run that executes jobs (Snakemake's ``onstart``; reading the Snakefile, as
    ``-n``, ``--lint`` and ``--report`` do, changes nothing).

    Jobs of an earlier killed run still stopping their tools are waited for; the new jobs
    watch this run and stop with it, and learn the run's settings (:func:`export_retries`,
    :func:`export_runtime`); a watcher removes this run's locks should it be killed.
    """
    from perfpost.run import lifeline

    for line in lifeline.recover(locks=False):
        print(f"perfpost: {line}", file=sys.stderr)
    lifeline.mark_run()
    plan.keep_checked()
    scheduler.coalesce_wakeups(getattr(workflow, "scheduler", None))
    export_retries(workflow)
    export_runtime(plan)
    lifeline.start_janitor()
    setups = any(e.setups for e in plan.experiments.values())
    if plan.clusters or setups or Path(paths.CLUSTERS_DIR).is_dir():
        from perfpost.run import deploy

        # A killed run's clusters whose watcher did not get to them: stopped before any cell.
        for line in deploy.stop_owned(why="left by a run that is gone"):
            print(f"perfpost: {line}", file=sys.stderr)
        deploy.write_pending(cluster_pending(plan))


def end_run(plan: Plan, ok: bool) -> None:
    """Snakemake's ``onsuccess`` and ``onerror``: no cluster outlives the run."""
    if Path(paths.CLUSTERS_DIR).is_dir():
        from perfpost.run import deploy

        why = "the run ended" if ok else "the run ended with an error"
        for line in deploy.stop_owned(why=why):
            print(f"perfpost: {line}", file=sys.stderr)
    if ok:
        print(outcome(plan))


# Every cell against a cluster comes before any cell without one, and one configuration's
# cells before the next one's: while a cluster is up, the cells that use it are always the
# highest ready jobs of their host, so no other run measures beside it (the quiet host).
CLUSTER_PRIORITY = 10_000_000
CONFIGURATION_STRIDE = 100_000  # more runs than this in one configuration would overlap
# Steps that come before any ready cell: a round's decision (else one configuration's later
# rounds wait behind the next configuration's cells, and both are up at once) and a tool's
# provisioning. Above every cell's priority while a plan has fewer than 9,900 configurations.
STEP_PRIORITY = 1_000_000_000


def cell_priority(plan: Plan) -> Any:
    """The order a host makes its runs in, as the cell jobs' priorities (a host runs one at a
    time, the highest first): every cell against a cluster before any cell without one,
    cells of one cluster configuration before the next one's (each is stopped after its last
    cell), and an experiment's ``order`` (plan.order) among its own runs: within each
    configuration where its clusters run one at a time, across them where they are kept up
    side by side or restarted for every run; 0 where none of this applies."""
    # A cell's configuration is the set of clusters it runs on (YARN with one Ozone is not
    # YARN with another); each set's cells all come before the next set's, and the sets are
    # ordered so that one Ozone has stopped before another starts, across experiments too,
    # though YARN serves both (order_.configuration_order).
    first: dict[str, int] = {}
    members: dict[str, dict[str, tuple[str, ...]]] = {}  # experiment -> cell -> its set
    for name, exp in plan.experiments.items():
        sets = members[name] = {}
        for cell in exp.cells:
            specs = exp.cluster_specs.get(cell.id) or []
            idents = [ClusterSpec.from_dict(c).ident() for c in specs]
            for i in idents:
                first.setdefault(i, len(first))
            if idents:
                sets[cell.id] = tuple(sorted(set(idents), key=first.__getitem__))
    appearing = sorted(
        {m for s in members.values() for m in s.values()}, key=lambda m: [first[i] for i in m]
    )
    order = {m: i for i, m in enumerate(order_.configuration_order(appearing))}

    # The configuration each cell's block belongs to: its own, or the experiment's first
    # where its runs are interleaved across configurations. Decided once, here: Snakemake
    # asks a job's priority for each of the plan's jobs.
    groups: dict[tuple[str, str], int] = {}
    for name, exp in plan.experiments.items():
        own = {cell: order[m] for cell, m in members[name].items()}
        mode = (exp.cluster_order or {}).get("mode")
        if own and exp.order is not None and mode in (order_.SIDE_BY_SIDE, order_.RESTARTS):
            own = dict.fromkeys(own, min(own.values()))
        groups.update({(name, cell): g for cell, g in own.items()})

    # (experiment, cell, repeat) -> its rank in its block, the first run the highest.
    # Experiments declared earlier come first, each as one block.
    runs: dict[tuple[str, str, int], int] = {}
    for name, exp in reversed(plan.experiments.items()):
        if exp.order is None:
            continue
        blocks: dict[int | None, list[str]] = {}
        for c in exp.cells:
            blocks.setdefault(groups.get((name, c.id)), []).append(c.id)
        base = len(runs)
        for cells in blocks.values():
            seq = order_.sequence(exp.order, cells, exp.max_repeats)
            for i, (cell, repeat) in enumerate(seq):
                runs[(name, cell, repeat)] = base + len(seq) - i
    if not order and not runs:
        return 0

    def priority(wildcards: Any) -> int:
        rank = runs.get((wildcards.experiment, wildcards.cell, int(wildcards.repeat)), 0)
        g = groups.get((wildcards.experiment, wildcards.cell))
        if g is None:
            return rank
        return CLUSTER_PRIORITY + (len(order) - g) * CONFIGURATION_STRIDE + rank

    return priority


def export_retries(workflow: Any) -> None:
    """Hand the profile's (or command line's) ``retries`` to the cell jobs: perfpost retries a
    failed cell itself, as a new attempt, so the failed one stays on disk.

    Snakemake knows the setting only once it executes (onstart), not while it reads the
    rules; an environment variable reaches every job without a function per job, which cost
    0.1 ms each on 10,000 cells.
    """
    settings = getattr(workflow, "execution_settings", None)
    os.environ[RETRIES_ENV] = str(int(getattr(settings, "retries", 0) or 0))


def export_runtime(plan: Plan) -> None:
    """Hand the cell jobs how to reach each host and how long a command may run: settings
    that do not change a measurement, so they are no Snakemake param (a changed param
    re-runs a finished cell in place)."""
    from perfpost.plan.model import runtime_json
    from perfpost.plan.specs import RUNTIME_ENV

    os.environ[RUNTIME_ENV] = runtime_json(plan)


def _any_needs(plan: Plan) -> bool:
    return any(
        plan.provisioned_marker(name, host)
        or plan.cluster_markers(name)
        or plan.instrument_markers(name)
        for name, exp in plan.experiments.items()
        for host in exp.hosts
    )


def cell_inputs(plan: Plan) -> Any:
    """The cell rule's input: the provisioned tools a cell waits for, if any experiment
    needs one; else none, and no function for Snakemake to call on every cell."""
    if not _any_needs(plan):
        return []
    return lambda wc: cell_tools(plan, wc.experiment, [wc.host], wc.cell)


def cell_needed(plan: Plan) -> Any:
    """The cell rule's ``needs`` param: the installs the cell itself needs, by their markers
    (glue.provisioning.cell_needs); a failed one fails it, another cell's does not."""
    if not _any_needs(plan):
        return []
    return unrecorded(lambda wc: cell_needs(plan, wc.experiment, [wc.host], wc.cell))


def resource_name(host: str) -> str:
    return "host_" + re.sub(r"\W", "_", host)


def host_resources(plan: Plan, workflow: Any) -> dict[str, Any]:
    """A resource per host, limited to its ``max_parallel_cells``, used 1 by its own cells.

    Registered as global resources unless the command line already sets them, so
    ``--resources host_h1=2`` still overrides the config.
    """
    out = {}
    names: dict[str, str] = {}
    limits = plan.host_limits()
    for host, limit in limits.items():
        name = resource_name(host)
        if name in names:
            raise PerfpostError(f"hosts {names[name]!r} and {host!r} map to one resource {name}")
        names[name] = host
        if name not in workflow.global_resources:
            workflow.register_resource(name, limit)
        # One host: every job uses it, a number rather than a function called on every job.
        out[name] = 1 if len(limits) == 1 else _uses(plan, host)
    return out


def controller_resources(plan: Plan) -> dict[str, int]:
    """What perfpost's own heavy steps (provisioning, tables, figures, posts) hold: every
    slot of this machine when cells measure here, so none runs beside a measurement."""
    from perfpost.hostenv import LOCALHOST

    limits = plan.host_limits()
    return {resource_name(LOCALHOST): limits[LOCALHOST]} if LOCALHOST in limits else {}


def _uses(plan: Plan, host: str) -> Any:
    """A job uses ``host`` when it runs there, or when its cell's cluster has a daemon
    there: a host that serves a cluster measures nothing else meanwhile."""
    served = {
        (name, cell)
        for name, exp in plan.experiments.items()
        for cell, specs in exp.cluster_specs.items()
        if any(host in h for c in specs for h in c["roles"].values())
    }

    def uses(wildcards: Any) -> int:
        if wildcards.host == host:
            return 1
        cell = getattr(wildcards, "cell", None)
        return int(cell is not None and (wildcards.experiment, cell) in served)

    return uses


def cell_spec(plan: Plan, wildcards: Any) -> CellSpec:
    exp = plan.experiments.get(wildcards.experiment)
    if exp is None or wildcards.cell not in exp.resolved or wildcards.host not in exp.hosts:
        raise PerfpostError(
            f"{wildcards.experiment}/{wildcards.cell}/{wildcards.host} is not a cell of the "
            "config (see `perfpost cells`)"
        )
    repeat = int(wildcards.repeat)
    if repeat > exp.max_repeats:
        raise PerfpostError(f"repeat {repeat} is beyond repeats: {exp.max_repeats}")
    return plan.spec(wildcards.experiment, wildcards.cell, wildcards.host, repeat)


def unrecorded(value: Any) -> Any:
    """A job's param that Snakemake neither records nor compares: ``value`` (or
    ``value(wildcards)`` when it is a function), from a function that takes ``output``.

    Snakemake stores every other param in its metadata when a job ends, and with pandas
    installed that imports pandas into the snakemake process (0.4 s of each run). A cell's
    spec needs no such record: what it measures picks its attempt, so its output
    (:func:`wanted_attempt`), and a finished cell never runs again for a changed param.
    """

    def param(wildcards: Any, output: Any) -> Any:
        return value(wildcards) if callable(value) else value

    return param


def precision_experiments(plan: Plan) -> str:
    """A wildcard pattern for the experiments whose repeats have a precision target."""
    names = [re.escape(n) for n, e in plan.experiments.items() if e.precision]
    return "|".join(names) if names else "(?!)"


def solo_experiments(plan: Plan) -> str:
    """A wildcard pattern for the experiments whose cells run one host per job."""
    names = [re.escape(n) for n, e in plan.experiments.items() if not e.start_together]
    return "|".join(names) if names else "(?!)"


class Together:
    """The job of one start_together experiment: one cell, all hosts, one attempt."""

    def __init__(self, plan: Plan, name: str) -> None:
        self.plan = plan
        self.exp = plan.experiments[name]
        self.rule = "cell_together_" + re.sub(r"\W", "_", name)
        self.outputs = [
            paths.RECORD.replace("{experiment}", name).replace("{host}", h) for h in self.exp.hosts
        ]
        self.log = paths.TOGETHER_LOG.replace("{experiment}", name)
        served = {
            h
            for specs in self.exp.cluster_specs.values()
            for c in specs
            for hs in c["roles"].values()
            for h in hs
        }
        self.resources = {resource_name(h): 1 for h in {*self.exp.hosts, *served}}

    def tools(self, wildcards: Any) -> list[Any]:
        return cell_tools(self.plan, self.exp.name, self.exp.hosts, wildcards.cell)

    def needs(self, wildcards: Any) -> list[str]:
        return cell_needs(self.plan, self.exp.name, self.exp.hosts, wildcards.cell)

    def specs(self, wildcards: Any) -> str:
        return json.dumps(
            [
                json.loads(
                    self.plan.spec(
                        self.exp.name, wildcards.cell, h, int(wildcards.repeat)
                    ).param_json()
                )
                for h in self.exp.hosts
            ]
        )


def together(plan: Plan) -> list[Together]:
    return [Together(plan, n) for n, e in plan.experiments.items() if e.start_together]


def host_json(plan: Plan, host: str) -> str:
    """The env rule's host: its name and variables only; how to reach it comes from the
    run's settings (a changed ``connect_timeout`` is no reason to capture it again)."""
    from perfpost.plan.specs import MEASUREMENT_HOST_KEYS

    spec = {"name": host, **plan.hosts[host]}
    return json.dumps({k: v for k, v in spec.items() if k in MEASUREMENT_HOST_KEYS}, sort_keys=True)


def axes_json(plan: Plan, experiment: str) -> str:
    return json.dumps(list(plan.experiments[experiment].axes))


DEFAULT_CONFIG = "config/config.yaml"


def config_files(workflow: Any) -> list[str]:
    """The config files a run read, each later one over the ones before: the Snakefile's
    default unless ``--replace-workflow-config``, then those given with ``--configfile``."""
    settings = getattr(workflow, "config_settings", None)
    given = [str(p) for p in (getattr(settings, "configfiles", None) or [])]
    replace = bool(getattr(settings, "replace_workflow_config", False))
    default = [] if replace or not os.path.exists(DEFAULT_CONFIG) else [DEFAULT_CONFIG]
    return default + [p for p in given if os.path.realpath(p) != os.path.realpath(DEFAULT_CONFIG)]


def reproduce_command(files: list[str]) -> str:
    """The command that makes a run's posts again, as its reader types it: the README's,
    with the config files it read (:func:`config_files`) where they are not the default."""
    if files in ([DEFAULT_CONFIG], []):
        return "snakemake --cores 6 report"
    given = [p for p in files if p != DEFAULT_CONFIG]
    options = " ".join(f"--configfile {shlex.quote(os.path.relpath(p))}" for p in given)
    replace = "" if DEFAULT_CONFIG in files else " --replace-workflow-config"
    return f"snakemake --cores 6 {options}{replace} report"


def experiment_json(plan: Plan, experiment: str) -> str:
    exp = plan.experiments[experiment]
    # Key order matters: axes keep their declared order in figures and tables.
    out = {**exp.public(), "config_hash": exp.config_hash(), "reproduce": plan.reproduce}
    if exp.order is not None:
        out["order_cells"] = [c.id for c in exp.cells]  # the rounds' order (plan.order)
    if exp.cluster_order is not None:
        out["cluster_order"] = exp.cluster_order  # side by side, or restarts
    return json.dumps(out)


def env_files(plan: Plan, experiment: str) -> list[str]:
    """Every host the experiment's post describes: its cells' hosts, then the hosts of the
    clusters they ran on (a host that ran only daemons is part of the set-up too)."""
    exp = plan.experiments[experiment]
    hosts = dict.fromkeys(exp.hosts)
    for specs in exp.cluster_specs.values():
        for spec in specs:
            for names in spec.get("roles", {}).values():
                hosts.update(dict.fromkeys(names))
    return [paths.fill(paths.ENV_JSON, experiment=experiment, host=h) for h in hosts]
