"""The one naming authority for files perfpost reads and writes.

Patterns use Snakemake's ``{wildcard}`` syntax so rules and the package share them; the
functions fill them in. Everything is relative to the workflow's working directory.

A cell's results live in ``results/<experiment>/cells/<cell id>/<host>/r<repeat>/attempt-<n>/``:
every attempt keeps its own directory, so a re-run never overwrites an earlier log or record.
"""

from __future__ import annotations

import re
from pathlib import Path

RESULTS = "results"
REPORTS = "reports"

CELLS_DIR = RESULTS + "/{experiment}/cells"
CELL_DIR = CELLS_DIR + "/{cell}/{host}/r{repeat}/attempt-{attempt}"
RECORD = CELL_DIR + "/record.json"
CELL_LOG = CELL_DIR + "/perfpost.log"
RAW = "raw"  # beside record.json: the tools' own logs, as they wrote them
# `perfpost rerun` leaves this beside the attempts: run the cell again after attempt N.
RERUN = CELLS_DIR + "/{cell}/{host}/r{repeat}/rerun.json"
# repeats with a precision target: after the first `runs` runs of a cell on a host, whether
# it needs more (a Snakemake checkpoint per round, so an interrupted run resumes there).
ROUND = CELLS_DIR + "/{cell}/{host}/precision/after-{runs}.json"
ROUND_LOG = CELLS_DIR + "/{cell}/{host}/precision/after-{runs}.log"
# A start_together cell runs all its hosts in one job; its own log sits beside the hosts.
TOGETHER_LOG = CELLS_DIR + "/{cell}/together-r{repeat}-attempt-{attempt}.log"

EXPERIMENT_DIR = RESULTS + "/{experiment}"
TIDY_CSV = EXPERIMENT_DIR + "/tidy.csv"
TIDY_PARQUET = EXPERIMENT_DIR + "/tidy.parquet"
TIDY_SCHEMA = EXPERIMENT_DIR + "/tidy.schema.json"
CELLS_CSV = EXPERIMENT_DIR + "/cells.csv"
SERIES_CSV = EXPERIMENT_DIR + "/series.csv"
# What each host did while each run measured (perfpost.analysis.resources): every sampling
# interval, and the measured step itself; their columns and units.
RESOURCES_CSV = EXPERIMENT_DIR + "/resources.csv"
RESOURCES_WINDOW_CSV = EXPERIMENT_DIR + "/resources-window.csv"
RESOURCES_SCHEMA = EXPERIMENT_DIR + "/resources.schema.json"
# Flight recordings' hottest methods, every run's (profile:).
PROFILE_CSV = EXPERIMENT_DIR + "/profile.csv"
# Per run: the warm-up MSER-5 found in its series, and whether the rest was steady.
STEADY_CSV = EXPERIMENT_DIR + "/steady.csv"
TABLES_LOG = EXPERIMENT_DIR + "/logs/tables.log"
# What the experiment's finished runs added to the history store (perfpost.history.store).
HISTORY_RECEIPT = EXPERIMENT_DIR + "/history.json"
HISTORY_LOG = EXPERIMENT_DIR + "/logs/history.log"
FIGURES_LOG = EXPERIMENT_DIR + "/logs/figures.log"
POST_LOG = EXPERIMENT_DIR + "/logs/post.log"

# A host's environment as an experiment's cells left it (captured after they ran).
ENV_JSON = EXPERIMENT_DIR + "/env/{host}.json"
ENV_LOG = EXPERIMENT_DIR + "/env/{host}.log"

POST_DIR = REPORTS + "/{experiment}"
POST = POST_DIR + "/index.md"
# The lab notebook beside the post: method, every run, resources, validity, logs.
POST_NOTEBOOK = POST_DIR + "/notebook.md"
# Both as one self-contained HTML page (figures inlined), for `snakemake --report`.
POST_HTML = EXPERIMENT_DIR + "/post.html"
HTML_LOG = EXPERIMENT_DIR + "/logs/html.log"
POST_DATA = POST_DIR + "/data.csv"
POST_COMPARISONS = POST_DIR + "/comparisons.csv"
POST_STEADY = POST_DIR + "/steady.csv"  # the steady-state table, in the bundle
POST_RESOURCES = POST_DIR + "/resources-window.csv"  # each run's measured step, per host
FIGURES_DIR = POST_DIR + "/figures"

# Clusters perfpost deployed: one directory per configuration (its id), one per start in it
# (state.json, the lifecycle's log, the daemons' logs copied back at the stop).
CLUSTERS_DIR = RESULTS + "/clusters"
# Configs validated before, with their defaults filled (perfpost.plan.schemacache):
# a run of an unchanged config skips the schema. No experiment name starts with a dot.
CONFIG_CACHE_DIR = RESULTS + "/.config-cache"
CLUSTER_DIR = CLUSTERS_DIR + "/{cluster}"
CLUSTER_START_DIR = CLUSTER_DIR + "/start-{start}"
# The cells of this run still to come, per cluster: the last one stops its cluster.
CLUSTERS_PENDING = CLUSTERS_DIR + "/pending.json"

# A runtime's provisioning: its log, and its outcome (done, or failed with the reason), which
# the cells that need the runtime wait for. Not named after the cache it went into: a cache at
# another path is no reason to run a finished cell again (perfpost.provision.outcome_path).
PROVISION_LOG = RESULTS + "/tools/{tool}-{version}-{pom}.log"
PROVISION = RESULTS + "/tools/{tool}-{version}-{pom}.json"

# What the wildcards may match; ids are checked at config time to fit these.
WILDCARDS = {
    "experiment": r"[A-Za-z0-9][A-Za-z0-9._+-]*",
    "cell": r"[^/]+",
    "host": r"[A-Za-z0-9][A-Za-z0-9._+-]*",
    "repeat": r"[1-9][0-9]*",
    "attempt": r"[1-9][0-9]*",
    "runs": r"[1-9][0-9]*",
}

_ATTEMPT_RE = re.compile(r"^attempt-([1-9][0-9]*)$")


def cell_dir(experiment: str, cell: str, host: str, repeat: int, attempt: int) -> str:
    return CELL_DIR.format(
        experiment=experiment, cell=cell, host=host, repeat=repeat, attempt=attempt
    )


def record(experiment: str, cell: str, host: str, repeat: int, attempt: int) -> str:
    return RECORD.format(
        experiment=experiment, cell=cell, host=host, repeat=repeat, attempt=attempt
    )


def repeat_dir(experiment: str, cell: str, host: str, repeat: int) -> str:
    return str(Path(cell_dir(experiment, cell, host, repeat, 1)).parent)


def attempts_in(base: Path) -> list[int]:
    """Attempt numbers that have a directory in ``base`` (a run's r<repeat>), ascending."""
    if not base.is_dir():
        return []
    found = []
    for entry in base.iterdir():
        m = _ATTEMPT_RE.match(entry.name)
        if m and entry.is_dir():
            found.append(int(m.group(1)))
    return sorted(found)


def attempts(experiment: str, cell: str, host: str, repeat: int, root: Path = Path()) -> list[int]:
    """Attempt numbers that have a directory on disk, ascending."""
    return attempts_in(root / repeat_dir(experiment, cell, host, repeat))


def round_decision(experiment: str, cell: str, host: str, runs: int) -> str:
    return ROUND.format(experiment=experiment, cell=cell, host=host, runs=runs)


def fill(pattern: str, **wildcards: object) -> str:
    return pattern.format(**wildcards)


def rerun_request(experiment: str, cell: str, host: str, repeat: int) -> str:
    return RERUN.format(experiment=experiment, cell=cell, host=host, repeat=repeat)


def cell_id(experiment: str, cell: str, host: str, repeat: int) -> str:
    """The id `perfpost cells` prints and `perfpost rerun` takes: one run of one cell."""
    return f"{experiment}/{cell}/{host}/r{repeat}"


def attempt_of(record_path: str | Path) -> int:
    m = _ATTEMPT_RE.match(Path(record_path).parent.name)
    if not m:
        raise ValueError(f"{record_path}: not in an attempt-<n> directory")
    return int(m.group(1))


def latest_record(record_path: str | Path) -> str:
    """The record of the latest attempt at or after ``record_path``'s that left one.

    A cell retried within a run (the profile's ``retries``) finishes in a later attempt than
    the one Snakemake planned; tables and summaries follow it there.
    """
    path = Path(record_path)
    planned = attempt_of(path)
    base = path.parent.parent
    later = [
        n for n in attempts_in(base) if n > planned and (base / f"attempt-{n}" / path.name).exists()
    ]
    return str(base / f"attempt-{later[-1]}" / path.name) if later else str(record_path)


def kept_log(log: str | Path) -> Path:
    """A job log's second name, hidden beside it: Snakemake deletes a job's log before it
    runs the job again (``--forcerun``, ``rerun-incomplete``), and a finished attempt's log
    is part of its result."""
    p = Path(log)
    return p.with_name("." + p.name)
