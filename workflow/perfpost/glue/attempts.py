"""Which attempt of each cell the workflow wants, and the records that follows from.

The key decision lives in :func:`wanted_attempt`: a cell whose latest attempt is done (or
skipped) is finished and never runs again; one whose latest attempt failed, or was interrupted
before leaving a record, gets a new attempt directory. Snakemake therefore re-runs exactly the
cells that are missing or failed, and every earlier attempt's log and record stays on disk.
From it follow the records an experiment's tables are built from (:func:`current_records`),
the rounds of a cell with a precision target, the records each cluster still waits for, the
run's outcome, and what ``perfpost cells`` and ``perfpost rerun`` show and ask for.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from perfpost import paths, records
from perfpost.clusters.base import ClusterSpec, setup_specs
from perfpost.errors import PerfpostError
from perfpost.plan.model import Plan, read_round
from perfpost.plan.specs import CellSpec


def _read(path: Path) -> dict[str, Any] | None:
    """A record, or None when there is none or it cannot be read (run again)."""
    try:
        return records.read_record(path)
    except (ValueError, OSError):
        return None


def _finished(record: dict[str, Any] | None) -> bool:
    return record is not None and record["status"] in (records.DONE, records.SKIPPED)


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
    exp = plan.experiments[wildcards.experiment]
    specs = exp.cluster_specs.get(wildcards.cell, [])
    idents = sorted({ClusterSpec.from_dict(c).ident() for c in specs})
    if exp.setups.get(wildcards.cell):  # the host's set-up: restored once the rounds decide
        idents += [s.ident() for s in setup_specs(exp.setups[wildcards.cell], wildcards.host)]
    extra = {"previous": before[-1] if before else 0, "clusters": idents}
    return json.dumps({**settings, **extra}, sort_keys=True)


def cluster_pending(plan: Plan) -> dict[str, list[str]]:
    """Per cluster configuration, the records of its cells this run still has to make: the
    cell that leaves none stops the cluster."""
    out: dict[str, list[str]] = {}
    for name, exp in plan.experiments.items():
        if not exp.cluster_specs and not exp.setups:
            continue
        for record in current_records(plan, name) + _undecided_runs(plan, name):
            rec = _read(Path(record))
            if rec is not None and _finished(rec):
                continue
            cell, host = Path(record).parents[3].name, Path(record).parents[2].name
            idents = [ClusterSpec.from_dict(c).ident() for c in exp.cluster_specs.get(cell, [])]
            if exp.setups.get(cell):  # its host's set-up, restored after its last cell
                idents += [s.ident() for s in setup_specs(exp.setups[cell], host)]
            for ident in idents:
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
