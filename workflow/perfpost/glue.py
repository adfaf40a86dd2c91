"""Glue between the Snakemake rules and the package: input functions, params, resources.

The key decision lives in :func:`current_record`: which attempt of a cell the workflow wants.
A cell whose latest attempt is done (or skipped) is finished and never runs again; one whose
latest attempt failed, or was interrupted before leaving a record, gets a new attempt
directory. Snakemake therefore re-runs exactly the cells that are missing or failed, and every
earlier attempt's log and record stays on disk.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from pathlib import Path
from typing import Any

from perfpost import paths, records
from perfpost.clusters.base import ClusterSpec
from perfpost.errors import PerfpostError
from perfpost.plan import order as order_
from perfpost.plan.model import Plan, read_round
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
    """The start of a cell rule's shell command: ``perfpost`` for ``run-cell`` and
    ``run-together``, as a small client (:mod:`perfpost.run.cellclient`) that hands the cell
    to the run's cell server, quoted for the shell and with braces doubled for Snakemake."""
    words = " ".join(shlex.quote(w) for w in cellclient.job_argv())
    return words.replace("{", "{{").replace("}", "}}")


# Config files already read strictly while this process reads the Snakefile.
_READ_STRICTLY: set[str] = set()


def strict_configfile(path: str) -> str:
    """``path``, once read with perfpost's strict loader: Snakemake's own reports a YAML
    mistake without its line and keeps the last of two equal keys."""
    if os.path.exists(path):
        from snakemake.exceptions import WorkflowError

        from perfpost.errors import ConfigError

        try:
            read_strictly([path])
        except ConfigError as e:
            raise WorkflowError(str(e)) from None
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
    export_retries(workflow)
    export_runtime(plan)
    lifeline.start_janitor()
    if plan.clusters or Path(paths.CLUSTERS_DIR).is_dir():
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


def cluster_pending(plan: Plan) -> dict[str, list[str]]:
    """Per cluster configuration, the records of its cells this run still has to make: the
    cell that leaves none stops the cluster."""
    out: dict[str, list[str]] = {}
    for name, exp in plan.experiments.items():
        if not exp.cluster_specs:
            continue
        for record in current_records(plan, name) + _undecided_runs(plan, name):
            rec = _read(Path(record))
            if rec is not None and _finished(rec):
                continue
            cell = Path(record).parents[3].name
            for c in exp.cluster_specs.get(cell, []):
                ident = ClusterSpec.from_dict(c).ident()
                out.setdefault(ident, []).append(record)
    return out


def _undecided_runs(plan: Plan, experiment: str) -> list[str]:
    """The runs a cell with a precision target may still get, up to ``max``: its clusters
    stay up for them, until its rounds decide (:func:`perfpost.run.deploy.settle`)."""
    exp = plan.experiments[experiment]
    if not exp.precision:
        return []
    cells = Path(paths.fill(paths.CELLS_DIR, experiment=experiment))
    tried = set(os.listdir(cells)) if cells.is_dir() else set()
    out = []
    for cell in exp.cells:
        for host in exp.hosts:
            runs = plan.planned_runs(experiment, cell.id, host)
            decided = read_round(Path(paths.round_decision(experiment, cell.id, host, runs)))
            if decided is None or decided.get("more"):
                later = range(runs + 1, exp.max_repeats + 1)
                out += _records(plan, experiment, cell.id, host, later, tried)
    return out


def cell_priority(plan: Plan) -> Any:
    """The order a host makes its runs in, as the cell jobs' priorities (a host runs one at a
    time, the highest first): cells of one cluster configuration before the next one's, so
    that few clusters are up at once (each is stopped after its last cell); an experiment's
    ``order`` (plan.order) among its own runs; 0 where neither applies."""
    order: dict[str, int] = {}
    for exp in plan.experiments.values():
        for cell in exp.cells:
            for c in exp.cluster_specs.get(cell.id, []):
                order.setdefault(ClusterSpec.from_dict(c).ident(), len(order))
    # (experiment, cell, repeat) -> its priority: the first run of the experiment's
    # sequence the highest. An ordered experiment's runs follow its order alone, clusters or
    # not (its configurations are up side by side, or restarted for every run).
    # Experiments declared earlier come first, each as one block.
    runs: dict[tuple[str, str, int], int] = {}
    for name, exp in reversed(plan.experiments.items()):
        if exp.order is None:
            continue
        seq = order_.sequence(exp.order, [c.id for c in exp.cells], exp.max_repeats)
        base = len(runs)
        for i, (cell, repeat) in enumerate(seq):
            runs[(name, cell, repeat)] = base + len(seq) - i
    if not order and not runs:
        return 0
    ordered = {name for name, _, _ in runs}

    def priority(wildcards: Any) -> int:
        if wildcards.experiment in ordered:
            return runs.get((wildcards.experiment, wildcards.cell, int(wildcards.repeat)), 0)
        specs = plan.experiments[wildcards.experiment].cluster_specs.get(wildcards.cell)
        if not specs:
            return 0
        return len(order) - min(order[ClusterSpec.from_dict(c).ident()] for c in specs)

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


def cell_inputs(plan: Plan) -> Any:
    """The cell rule's input: the provisioned tools a cell needs, if any experiment needs
    one; else none, and no function for Snakemake to call on every cell."""
    needs = any(
        plan.provisioned_marker(name, host)
        or plan.cluster_markers(name)
        or plan.instrument_markers(name)
        for name, exp in plan.experiments.items()
        for host in exp.hosts
    )
    return (lambda wc: cell_tools(plan, wc.experiment, [wc.host], wc.cell)) if needs else []


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


def _read(path: Path) -> dict[str, Any] | None:
    """A record, or None when there is none or it cannot be read (run again)."""
    try:
        return records.read_record(path)
    except (ValueError, OSError):
        return None


def _finished(record: dict[str, Any] | None) -> bool:
    return record is not None and record["status"] in (records.DONE, records.SKIPPED)


def cell_tools(plan: Plan, experiment: str, hosts: list[str], cell: str | None = None) -> list[Any]:
    """The provisioning outcomes a cell waits for: its tool's runtime (freon on localhost),
    its own clusters' and the agent's. Only what the cell uses: a runtime that cannot be
    provisioned fails its cells, not its neighbours'. Marked ancient: provisioning again, or
    a newer install, is no reason to re-run finished cells."""
    from snakemake.io import ancient

    markers = {plan.provisioned_marker(experiment, h) for h in hosts} - {None}
    markers |= set(plan.cluster_markers(experiment, cell))
    markers |= set(plan.instrument_markers(experiment))
    return [ancient(provision_outcome(m)) for m in sorted(markers)]


def _cache_tag(cache: str | Path) -> str:
    import hashlib

    return hashlib.sha256(str(cache).encode()).hexdigest()[:8]


def provision_outcome(marker: str) -> str:
    """The outcome file of the provisioning that leaves ``marker``
    (<cache>/<tool>-<version>/COMPLETE-<pom>; no runtime's name has a dash)."""
    m = Path(marker)
    tool, version = m.parent.name.split("-", 1)
    pom = m.name.split("-", 1)[1]
    return paths.fill(
        paths.PROVISION, tool=tool, version=version, pom=pom, cache=_cache_tag(m.parents[1])
    )


def provision_rules(plan: Plan) -> list[tuple[str, str]]:
    """(output pattern, cache) of each provisioning rule, one per cache the config names
    (the tools may share one)."""
    from perfpost import provision

    # The default cache is always one: runtimes no experiment configures live there.
    caches = {provision.cache_dir(None)}
    caches |= {provision.cache_dir(plan.tools.get(t, {}).get("cache")) for t in plan.tools}
    out = []
    for c in sorted(caches):
        pattern = paths.PROVISION.replace("{cache}", _cache_tag(c))
        out.append((pattern, str(c)))
    return out


def provision_again_param(cache: str) -> Any:
    """The provisioning rule's ``again`` param for the rules of ``cache``."""

    def again(wildcards: Any, output: Any) -> str:
        return provision_again(output[0], cache, wildcards)

    return again


def provision_again(outcome: str, cache: str, wildcards: Any) -> str:
    """A param of the provisioning rule that changes when its outcome must be made again
    (Snakemake re-runs a job whose params changed): after a failure, and when the install it
    made is gone. Empty otherwise, as it was when the first outcome was made."""
    try:
        said = json.loads(Path(outcome).read_text())
    except (OSError, ValueError):
        return ""
    if said.get("status") == "failed":
        return f"failed at {os.stat(outcome).st_mtime_ns}"
    from perfpost import provision

    home = Path(cache) / f"{wildcards.tool}-{wildcards.version}"
    if not (home / f"{provision.COMPLETE}-{wildcards.pom}").exists():
        return "install gone"
    return ""


def provisioned_names() -> str:
    """A wildcard pattern for the runtimes the tools have perfpost provision."""
    return "|".join(re.escape(n) for n in sorted(runtimes()))


def runtimes() -> dict[str, Any]:
    """Everything perfpost can provision, by name: the tools' runtimes and the clusters'."""
    from perfpost import clusters, instrument, tools

    out = dict(tools.runtimes())
    out[instrument.RUNTIME.name] = instrument.RUNTIME
    for kind in clusters.NAMES:
        runtime = clusters.get(kind).RUNTIME
        out[runtime.name] = runtime
    return out


def wanted_attempt(
    experiment: str,
    cell: str,
    hosts: str | list[str],
    repeat: int,
    root: Path = Path(),
    measurement: str | None = None,
) -> int:
    """The attempt the workflow wants for a cell: the latest if finished, else a new one.

    With several hosts (a start_together cell) the attempt is shared: it is finished only
    when every host finished it, and otherwise all hosts run it again together.

    With ``measurement`` (:meth:`CellSpec.measurement_id` of the config), attempts whose
    records were measured with other parameters are stale: they stay on disk untouched and
    are passed over; the newest attempt of this measurement is wanted if it finished, else a
    new attempt after all of them. Records without the field predate it and count as stale.
    """
    hosts = [hosts] if isinstance(hosts, str) else hosts
    tried = sorted({a for h in hosts for a in paths.attempts(experiment, cell, h, repeat, root)})
    if not tried:
        return 1
    latest = tried[-1]
    if any(rerun_after(experiment, cell, h, repeat, root) >= latest for h in hosts):
        return latest + 1  # `perfpost rerun` asked for a new attempt after this one
    for attempt in reversed(tried):
        recs = [_read(root / paths.record(experiment, cell, h, repeat, attempt)) for h in hosts]
        if measurement is None:
            return attempt if all(_finished(r) for r in recs) else latest + 1
        if any(r is None for r in recs):
            return latest + 1  # interrupted, or unreadable: this measurement runs again
        if all(r.get("measurement") != measurement for r in recs):
            continue  # stale: measured with other parameters
        if all(_finished(r) and r.get("measurement") == measurement for r in recs):
            return attempt
        return latest + 1
    return latest + 1


def rerun_after(experiment: str, cell: str, host: str, repeat: int, root: Path = Path()) -> int:
    """The attempt after which `perfpost rerun` asked for another (0: never asked)."""
    path = root / paths.rerun_request(experiment, cell, host, repeat)
    try:
        return int(json.loads(path.read_text())["after_attempt"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0


def request_rerun(experiment: str, cell: str, hosts: list[str], repeat: int) -> int:
    """Ask for a new attempt of one run of a cell (on all ``hosts`` of a start_together
    experiment at once); returns the attempt it will be. Earlier attempts stay as they are."""
    tried = [a for h in hosts for a in paths.attempts(experiment, cell, h, repeat)]
    after = max(tried, default=0)
    for h in hosts:
        records.write_json_atomic(
            paths.rerun_request(experiment, cell, h, repeat), {"after_attempt": after}
        )
    return after + 1


def current_records(plan: Plan, experiment: str, checkpoints: Any = None) -> list[str]:
    """Record paths the experiment's tables are built from, one per cell, host and repeat.

    Computed once per experiment and plan: the tables rule, the report target and the
    summary at the end all ask, and each answer looks for every cell's latest attempt.
    With Snakemake's ``checkpoints`` (the tables rule), a cell with a precision target has
    the runs its rounds decided, each round waited for (:func:`runs_decided`); without, the
    runs decided so far.
    """
    if checkpoints is not None and plan.experiments[experiment].precision:
        return _current_records(plan, experiment, checkpoints)
    memo = plan.__dict__.setdefault("_current_records", {})
    if experiment not in memo:
        memo[experiment] = _current_records(plan, experiment)
    return memo[experiment]


def _current_records(plan: Plan, experiment: str, checkpoints: Any = None) -> list[str]:
    exp = plan.experiments[experiment]
    # A cell without a directory never ran: attempt 1, without looking for its attempts and
    # rerun requests one by one (10,000 cells of a new matrix: 0.3 s of every snakemake).
    cells = Path(paths.fill(paths.CELLS_DIR, experiment=experiment))
    tried = set(os.listdir(cells)) if cells.is_dir() else set()
    out = []
    pending = []
    for cell in exp.cells:
        for host in exp.hosts:
            if checkpoints is not None:
                try:
                    runs = runs_decided(plan, experiment, cell.id, host, checkpoints)
                except Exception as e:  # Snakemake's IncompleteCheckpointException
                    if not hasattr(e, "targetfile"):
                        raise
                    # Every cell's pending round at once, not the first one's alone: with
                    # one at a time Snakemake knew of one cell's runs only, and made them
                    # all before the next cell's (no interleaving, no other host's runs).
                    # The tables job depends on each, and is asked again as each is made.
                    pending.append(e.targetfile)
                    continue
            else:
                runs = plan.planned_runs(experiment, cell.id, host)
            out += _records(plan, experiment, cell.id, host, range(1, runs + 1), tried)
    return out + pending


def _records(
    plan: Plan, experiment: str, cell: str, host: str, repeats: Any, tried: set[str]
) -> list[str]:
    """The records wanted for ``repeats`` of one cell on one host (:func:`wanted_attempt`)."""
    exp = plan.experiments[experiment]
    group = exp.hosts if exp.start_together else host
    out = []
    measurement = None  # the same for every repeat of the cell on the host: made once
    for repeat in repeats:
        attempt = 1
        if cell in tried:
            if measurement is None:
                measurement = plan.spec(experiment, cell, host, repeat).measurement_id()
            attempt = wanted_attempt(experiment, cell, group, repeat, measurement=measurement)
        out.append(paths.record(experiment, cell, host, repeat, attempt))
    return out


def rounds(settings: dict[str, Any]) -> list[int]:
    """The run counts after which a cell's precision is looked at: min, min + step, ..., max."""
    low, high, step = settings["min"], settings["max"], settings["step"]
    return [*range(low, high, step), high]


def runs_decided(plan: Plan, experiment: str, cell: str, host: str, checkpoints: Any) -> int:
    """The runs a cell with a precision target gets on a host: each round's decision is a
    Snakemake checkpoint; until it is made, asking for it tells Snakemake to make it first
    (and its runs), then ask again."""
    settings = plan.experiments[experiment].precision
    assert settings is not None
    for runs in rounds(settings):
        job = checkpoints.round.get(experiment=experiment, cell=cell, host=host, runs=str(runs))
        decision = read_round(Path(job.output[0]))
        if decision is None or not decision.get("more"):
            return runs
    return settings["max"]


def round_inputs(plan: Plan, wildcards: Any) -> list[str]:
    """A round's decision is made from the cell's runs 1..``runs`` on the host."""
    cells = Path(paths.fill(paths.CELLS_DIR, experiment=wildcards.experiment))
    tried = set(os.listdir(cells)) if cells.is_dir() else set()
    runs = range(1, int(wildcards.runs) + 1)
    return _records(plan, wildcards.experiment, wildcards.cell, wildcards.host, runs, tried)


def round_settings(plan: Plan, wildcards: Any) -> str:
    """The round's params: the experiment's precision settings and the runs of the round
    before (its newest runs are the ones after them)."""
    settings = plan.experiments[wildcards.experiment].precision
    if settings is None or int(wildcards.runs) not in rounds(settings):
        raise PerfpostError(
            f"{wildcards.experiment}: no round after {wildcards.runs} runs (see `repeats:`)"
        )
    before = [r for r in rounds(settings) if r < int(wildcards.runs)]
    specs = plan.experiments[wildcards.experiment].cluster_specs.get(wildcards.cell, [])
    idents = sorted({ClusterSpec.from_dict(c).ident() for c in specs})
    extra = {"previous": before[-1] if before else 0, "clusters": idents}
    return json.dumps({**settings, **extra}, sort_keys=True)


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


def records_to_name(plan: Plan) -> list[str]:
    """The records the report target names itself: the missing ones of experiments that
    already have something made from their records (tables, environment, figures, post).

    Snakemake does not make a missing file again while the files made from it are up to
    date, so a deleted cell, or one `perfpost rerun` asked for, would be skipped. Where
    nothing was made from the records yet, the posts pull every record in by themselves:
    naming 10,000 records there too cost a 10,000-cell plan a second.
    """
    out = []
    for name in plan.experiments:
        if _made_from_records(name):
            out += [r for r in current_records(plan, name) if not os.path.exists(r)]
    return out


def _made_from_records(experiment: str) -> bool:
    """Whether anything but the cells exists for ``experiment``: any output, log or directory
    of its tables, env, figures or post rules."""
    exp_dir = Path(paths.fill(paths.EXPERIMENT_DIR, experiment=experiment))
    cells = Path(paths.fill(paths.CELLS_DIR, experiment=experiment))
    if exp_dir.is_dir() and any(p != cells for p in exp_dir.iterdir()):
        return True
    return Path(paths.fill(paths.POST_DIR, experiment=experiment)).exists()


def outcome(plan: Plan) -> str:
    """One line per experiment for the end of a run: how many runs finished, failed, skipped."""
    lines = []
    for name in plan.experiments:
        counts: dict[str, int] = {}
        for path in current_records(plan, name):
            try:
                status = records.read_record(records.latest_of(path))["status"]
            except (OSError, ValueError):
                status = "missing"
            counts[status] = counts.get(status, 0) + 1
        total = sum(counts.values())
        parts = [f"{counts.get(records.DONE, 0)} of {total} runs done"]
        parts += [f"{n} {s}" for s, n in sorted(counts.items()) if s != records.DONE]
        lines.append(
            f"perfpost: {name}: {', '.join(parts)} -> {paths.fill(paths.POST, experiment=name)}"
        )
    if any(" failed" in line for line in lines):
        lines.append(
            "perfpost: failed cells are listed in their posts; run the same command "
            "again to re-run only them."
        )
    return "\n".join(lines)


def host_json(plan: Plan, host: str) -> str:
    """The env rule's host: its name and variables only; how to reach it comes from the
    run's settings (a changed ``connect_timeout`` is no reason to capture it again)."""
    from perfpost.plan.specs import MEASUREMENT_HOST_KEYS

    spec = {"name": host, **plan.hosts[host]}
    return json.dumps({k: v for k, v in spec.items() if k in MEASUREMENT_HOST_KEYS}, sort_keys=True)


def axes_json(plan: Plan, experiment: str) -> str:
    return json.dumps(list(plan.experiments[experiment].axes))


def experiment_json(plan: Plan, experiment: str) -> str:
    exp = plan.experiments[experiment]
    # Key order matters: axes keep their declared order in figures and tables.
    out = {**exp.public(), "config_hash": exp.config_hash()}
    if exp.order is not None:
        out["order_cells"] = [c.id for c in exp.cells]  # the rounds' order (plan.order)
    if exp.cluster_order is not None:
        out["cluster_order"] = exp.cluster_order  # side by side, or restarts
    return json.dumps(out)


def env_files(plan: Plan, experiment: str) -> list[str]:
    return [
        paths.fill(paths.ENV_JSON, experiment=experiment, host=h)
        for h in plan.experiments[experiment].hosts
    ]


def statuses(plan: Plan, experiment: str | None = None, root: Path = Path()) -> list[dict]:
    """Every run of every cell with the state of its latest attempt, for `perfpost cells`:
    done, failed or skipped (with the record's reason), incomplete (an attempt that was
    interrupted before leaving a record), missing (never tried); ``rerun`` when
    `perfpost rerun` asked for another attempt that has not run yet."""
    out = []
    exp_hosts = {n: (e.hosts if e.start_together else None) for n, e in plan.experiments.items()}
    for spec in plan.jobs():
        if experiment and spec.experiment != experiment:
            continue
        host = spec.host["name"]
        tried = paths.attempts(spec.experiment, spec.cell, host, spec.repeat, root)
        row = {
            "id": paths.cell_id(spec.experiment, spec.cell, host, spec.repeat),
            "experiment": spec.experiment,
            "cell": spec.cell,
            "host": host,
            "repeat": spec.repeat,
            "attempt": tried[-1] if tried else "",
            "status": "missing",
            "reason": "",
        }
        if tried:
            group = exp_hosts[spec.experiment] or host
            want = wanted_attempt(
                spec.experiment, spec.cell, group, spec.repeat, root, spec.measurement_id()
            )
            shown = want if want in tried else tried[-1]
            row["attempt"] = shown
            rec = root / paths.record(spec.experiment, spec.cell, host, spec.repeat, shown)
            try:
                data = records.read_record(rec)
                row["status"], row["reason"] = data["status"], data["reason"] or ""
                if want not in tried and data.get("measurement") != spec.measurement_id():
                    row["status"] = "stale"
                    row["reason"] = (
                        "measured with other parameters than the config's; kept as it is, "
                        f"the next run makes attempt {want}"
                    )
            except FileNotFoundError:
                row["status"] = "incomplete"
                row["reason"] = "interrupted before it left a record"
            except (OSError, ValueError) as e:
                row["status"], row["reason"] = "incomplete", f"unreadable record: {e}"
        if tried and rerun_after(spec.experiment, spec.cell, host, spec.repeat, root) >= tried[-1]:
            row["status"] = "rerun"
            row["reason"] = f"requested after attempt {tried[-1]}"
        out.append(row)
    return out


def select_runs(plan: Plan, patterns: list[str]) -> list[CellSpec]:
    """The runs ``patterns`` name: ``experiment[/cell[/host[/rN]]]``, each part an exact
    value or a shell-style pattern (``dd-fsync/*/localhost``). A pattern matching nothing is
    an error that names it and suggests ids that exist."""
    import difflib
    from fnmatch import fnmatchcase

    specs = list(plan.jobs())
    ids = {id(s): paths.cell_id(s.experiment, s.cell, s.host["name"], s.repeat) for s in specs}
    chosen: dict[int, CellSpec] = {}
    for pattern in patterns:
        want = pattern.strip("/").split("/")
        if not pattern.strip("/") or len(want) > 4:
            raise PerfpostError(
                f"{pattern!r}: a run is experiment/cell/host/rN (any trailing part may be left "
                "out); see `perfpost cells`"
            )
        hit = False
        for s in specs:
            parts = ids[id(s)].split("/", 3)
            if all(fnmatchcase(p, w) for p, w in zip(parts, want, strict=False)):
                chosen[id(s)] = s
                hit = True
        if not hit:
            close = difflib.get_close_matches(pattern, list(ids.values()), n=3, cutoff=0.5)
            hint = f"; did you mean {', '.join(close)}?" if close else "; see `perfpost cells`"
            raise PerfpostError(f"{pattern!r} names no run of the config{hint}")
    return [s for s in specs if id(s) in chosen]
