"""An experiment's post and its lab notebook, rendered with jinja2.

``index.md`` is the post, in the reference posts' shape and length (:mod:`.post`): the
question, the answer first, how it was run, one table, the figures that carry the answer,
caveats and a conclusion. ``notebook.md`` beside it is the full record: the statistics'
method, every comparison and run, precision, the client's calls, steady state, resources,
the design and validity checks in full, failed cells, every host's environment, the systems
under test, the commands exactly as they ran, the logs' tails and provenance. Every number
comes from the tidy table, the cells' records and the clusters' state; nothing here re-reads
formatted text.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
import pandas as pd

from perfpost import __version__, records
from perfpost import tools as adapters
from perfpost.analysis import (
    clients,
    compare,
    design,
    instrumented,
    listing,
    narrow,
    post,
    profiles,
    runorder,
    stats,
    steady,
    tidy,
    traced,
    typed,
    validity,
    verdicts,
)
from perfpost.analysis.sections import (
    _commands,
    _log_tails,
    _outliers,
    _summary,
    background_load,
    git_revision,
    overlap,
    precision_section,
    resource_section,
    results_table,
    run_table,
)
from perfpost.analysis.systems import (
    _env_differences,
    _env_groups,
    _host_env,
    clusters_of,
    deliveries,
)
from perfpost.clusters.base import SETUP
from perfpost.records import write_text_atomic
from perfpost.tools.base import better, plot_metrics, table_metrics
from perfpost.units import counted, format_seconds, metric_label

TEMPLATES = Path(__file__).parent / "templates"
COMPARISON_COLUMNS = compare.RECORD_COLUMNS  # comparisons.csv's columns, in their order
NOTEBOOK = "notebook.md"


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["counted"] = counted  # "1 cell", "2 cells": never "cell(s)"
    env.filters["yaml_str"] = lambda s: '"' + str(s).replace("\\", "\\\\").replace('"', '\\"') + '"'
    return env


def _metric(
    experiment: dict[str, Any], rows: Sequence[compare.Row], plot: Sequence[str]
) -> str | None:
    """The metric the post is about: its first comparison's, else the first plotted."""
    for r in rows:
        if not r.control:
            return r.metric
    return plot[0] if plot else None


def _roles(experiment: dict[str, Any], clusters: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Every host the post names, with what ran on it."""
    out: dict[str, list[str]] = {h: ["client"] for h in experiment["hosts"]}
    for c in clusters:
        for role, hosts in (c.get("roles") or {}).items():
            for h in str(hosts).split(", "):
                out.setdefault(h, [])
                name = f"{c['name']} {role}"
                if name not in out[h]:
                    out[h].append(name)
    return out


def _where(
    cells: pd.DataFrame, clusters: list[dict[str, Any]], window: pd.DataFrame | None
) -> dict[str, dict[str, Any]]:
    """Per cell, what the design checks need: its parameters as its first record has them
    (axes filled in), the cluster it wrote to (kind, site settings), the directories its
    data went to (its cluster's, else its own ``dir``) and whether a block device is under
    them (from the samples' devices under each directory)."""
    on: dict[str, dict[str, Any]] = {}
    for c in clusters:
        for cell in c.get("cells") or []:
            on.setdefault(str(cell), c)
    devices: dict[str, dict[str, bool]] = {}
    if window is not None and not window.empty and "detail" in window:
        rows = window[window["resource"].str.startswith("dir:")]
        for r in rows.itertuples(index=False):
            has = isinstance(r.detail, str) and bool(r.detail)
            devices.setdefault(str(r.cell), {})[r.resource[4:]] = has
    out: dict[str, dict[str, Any]] = {}
    for row in cells.sort_values(["repeat"]).itertuples(index=False):
        cell = str(row.cell)
        if cell in out:
            continue
        try:
            params = records.read_record(row.record).get("params") or {}
        except (OSError, ValueError):
            continue
        cluster = on.get(cell)
        dirs = [str(cluster["dir"])] if cluster and cluster.get("dir") else []
        if not dirs and isinstance(params.get("dir"), str):
            dirs = [params["dir"]]
        seen = devices.get(cell, {})
        under = [has for path, has in seen.items() if any(path.startswith(d) for d in dirs)]
        out[cell] = {
            "params": params,
            "dirs": dirs,
            "cluster": {"kind": cluster.get("kind"), "site": cluster.get("site") or {}}
            if cluster
            else None,
            "on_disk": bool(under) and all(under),
        }
    return out


def _listings(
    cells: pd.DataFrame, experiment: dict[str, Any], keep: Sequence[str], names: dict[str, str]
) -> dict[str, Any]:
    per_cell: dict[str, list[str]] = {}
    for row in cells.sort_values(["repeat"]).itertuples(index=False):
        if row.cell in per_cell or row.status == records.SKIPPED:
            continue
        try:
            rec = records.read_record(row.record)
        except (OSError, ValueError):
            continue
        per_cell[str(row.cell)] = typed.cell_listing(rec, experiment["after"])
    return listing.listings(per_cell, names, keep)


def _names(
    tidy_df: pd.DataFrame, cells: pd.DataFrame, axes: list[str], labels: dict[str, str]
) -> dict[str, str]:
    """Each cell as the post names it: by the axes whose value varies (``instrument=on`` in
    every cell names none of them), with what ran where a setting did not take effect."""
    named = tidy.cell_names(tidy_df, axes)
    return {
        cell: named.get(cell, cell.replace(",", ", ")) + labels.get(cell, cell)[len(cell) :]
        for cell in cells["cell"].astype(str).unique()
    }


def render(
    experiment: dict[str, Any],
    tidy_df: pd.DataFrame,
    cells: pd.DataFrame,
    envs: dict[str, dict[str, Any]],
    figures: list[dict[str, str]],
    out: Path,
    data_csv: Path,
    now: dt.datetime | None = None,
    comparisons_csv: Path | None = None,
    steady_df: pd.DataFrame | None = None,
    steady_csv: Path | None = None,
    resources_df: pd.DataFrame | None = None,
    resources_csv: Path | None = None,
    profile_df: pd.DataFrame | None = None,
) -> str:
    """Write the post to ``out`` and its notebook beside it (with the tidy data and the
    tables they link); returns the post's markdown. ``steady_df``: the steady-state table
    (:mod:`perfpost.analysis.steady`), where the tool reported a series; copied to
    ``steady_csv`` (default: beside ``data_csv``), so the bundle links to its own copy."""
    from perfpost import paths

    adapter = adapters.get(experiment["tool"])
    axes = list(experiment["axes"])
    hosts = list(experiment["hosts"])
    by = [*axes, "host"] if len(hosts) > 1 else list(axes)
    summary = stats.summarize(tidy_df, by)
    params = experiment.get("params") or {}
    daemon = experiment.get("daemon_metrics")
    drawn = plot_metrics(adapter, params, daemon)
    plotted = [m for m in drawn if m in set(summary["metric"])]
    comparisons = compare.experiment_comparisons(
        tidy_df, experiment, drawn, better(adapter, params, daemon)
    )
    metric = _metric(experiment, comparisons, plotted)
    failed = cells[cells["status"] != records.DONE]
    starts = pd.to_datetime(cells["start"].dropna(), utc=True, format="ISO8601")
    ends = pd.to_datetime(cells["end"].dropna(), utc=True, format="ISO8601")
    now = now or dt.datetime.now(dt.UTC)
    write_steady = steady_df is not None or steady_csv is not None
    steady_csv = steady_csv or data_csv.with_name(Path(paths.POST_STEADY).name)
    versions = sorted({v for v in cells["tool_version"].dropna()})
    starts_here = clusters_of(cells)
    # The hosts' set-ups are held as clusters are; the post says what they did to the hosts.
    setups = [c for c in starts_here if c.get("kind") == SETUP]
    cluster_starts = [c for c in starts_here if c.get("kind") != SETUP]

    # The design checks: what the post may claim at all.
    where = _where(cells, cluster_starts, resources_df)
    findings = [
        *design.settings_not_applied(cluster_starts),
        *design.fast_disk(experiment, tidy_df, cells, envs, resources_df, where),
        *design.in_memory(experiment, tidy_df, envs, metric, where),
        *design.coarse_clock(experiment, tidy_df, metric),
    ]
    warm, untestable, warm_facts = design.warmup(tidy_df, cells, cluster_starts, metric)
    findings += warm
    up = runorder.others_up(cells, runorder.cluster_lifetimes())
    findings += design.busy_host(up)
    checks = validity.checks(
        tidy_df, cells, experiment, plotted[0] if plotted else None, resources_df
    )
    # A cell's runs too few for a trend of their own are no caveat where the runs of every
    # cluster start were tested together for one (warm-up): that test had the power; the
    # notebook's Drift section still says why the per-cell test had none.
    pooled = bool(warm_facts) and not untestable
    untestable += [
        design.Untestable(c["title"], c["untestable"])
        for c in checks
        if c.get("untestable") and not (pooled and c["title"] == "Drift")
    ]
    untestable = list({(u.check, u.why): u for u in untestable}.values())
    labels = {c: design.as_label(c, findings) for c in cells["cell"].astype(str).unique()}
    # The findings name cells as the post does: by the axes that vary.
    names = _names(tidy_df, cells, axes, {})
    findings = [design.renamed(f, names) for f in findings]
    context: dict[str, Any] = {
        "exp": experiment,
        # A full time with its offset, not a day: Hugo skips a page dated in the future, and
        # a bare day is midnight in the site's time zone, hours ahead of UTC west of it.
        "date": (now if now.tzinfo else now.replace(tzinfo=dt.UTC)).isoformat(timespec="seconds"),
        "axes": axes,
        "axis_values": {a: list(experiment["axes"][a]) for a in axes},
        "matrix_axes": [a for a in axes if a != experiment.get("parts_axis")],
        "n_cells": cells["cell"].nunique(),
        "n_runs": len(cells),
        "n_done": int((cells["status"] == records.DONE).sum()),
        "overlap": overlap(cells),
        "run_order": runorder.sentence(experiment, cells, cluster_starts),
        "summary": _summary(summary, axes, plotted[0]) if plotted else [],
        "table": results_table(summary, axes, hosts, table_metrics(adapter, params, daemon)),
        "runs": run_table(
            tidy_df, getattr(adapter, "RUN_TABLE", ()), cells, experiment.get("parts_axis")
        ),
        "comparisons": [compare.sentence(r) for r in comparisons],
        "comparison_table": {
            "header": compare.TABLE_HEADER,
            "rows": [compare.table_row(r) for r in comparisons],
        },
        "outliers": _outliers(tidy_df, by, plotted[0]) if plotted else [],
        "instrumented": instrumented.section(tidy_df, experiment),
        "precision": precision_section(tidy_df, experiment),
        "validity": checks,
        "design": {"findings": findings, "untestable": untestable, "warmup": warm_facts},
        "resources": resource_section(tidy_df, resources_df, axes, figures, resources_csv),
        "profiles": profiles.section(profile_df),
        "steady": steady.section(steady_df),
        "steady_csv": steady_csv.name,
        "figures": [
            {
                **f,
                "caption": f"{experiment['title']}: "
                + (f["comparison"] if "comparison" in f else metric_label(f["metric"])),
            }
            for f in figures
            if f.get("section") != "resources"
        ],
        "failed": [
            {
                "cell": r.cell,
                "host": r.host,
                "repeat": r.repeat,
                "attempt": r.attempt,
                "status": r.status,
                "reason": r.reason,
            }
            for r in failed.itertuples(index=False)
        ],
        "commands": _commands(cells, experiment),
        "envs": _env_groups(envs),
        "clusters": cluster_starts,
        "setups": setups,
        "deliveries": deliveries(cells, cluster_starts),
        "background": background_load(experiment, tidy_df, cells),
        "env_diffs": _env_differences({h: _host_env(e) for h, e in envs.items()}),
        "tails": _log_tails(cells),
        "tool_versions": versions,
        "provenance": {
            "perfpost": __version__,
            "git": git_revision() or "unknown",
            "config_hash": experiment.get("config_hash", ""),
            "generated": now.isoformat(timespec="seconds"),
            "first_start": starts.min().isoformat() if len(starts) else "n/a",
            "last_end": ends.max().isoformat() if len(ends) else "n/a",
            "duration": format_seconds((ends.max() - starts.min()).total_seconds())
            if len(starts) and len(ends)
            else "n/a",
            "command": experiment.get("reproduce") or "snakemake --cores 6 report",
        },
        "data_csv": data_csv.name,
        "comparisons_csv": comparisons_csv.name if comparisons_csv else None,
        "notebook": NOTEBOOK,
        "post_file": out.name,
    }
    checked = Checked(metric, comparisons, findings, untestable, labels, up, where)
    context["post"] = _post_context(
        experiment, tidy_df, cells, envs, summary, checked, cluster_starts, context, adapter
    )
    env = _environment()
    # Every table fits a blog's column: a wide one continues in the tables after it.
    text = narrow.fit(env.get_template("post.md.j2").render(**context))
    notebook = narrow.fit(env.get_template("notebook.md.j2").render(**context))
    out.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(data_csv, tidy_df.to_csv(index=False))
    if write_steady:
        steady.write(steady_df if steady_df is not None else steady.table(None), steady_csv)
    if resources_csv is not None:
        window = resources_df if resources_df is not None else pd.DataFrame()
        write_text_atomic(resources_csv, window.to_csv(index=False))
    if comparisons_csv is not None:
        table = pd.DataFrame(compare.as_records(comparisons), columns=COMPARISON_COLUMNS)
        write_text_atomic(comparisons_csv, table.to_csv(index=False))
    write_text_atomic(out.parent / NOTEBOOK, notebook)
    write_text_atomic(out, text)
    return text


@dataclass(frozen=True)
class Checked:
    """What the design checks and the comparisons made of an experiment's runs, for the post:
    its metric, comparisons, the checks that fired and those that could not, each cell's name
    by what ran, what else was up beside each run, and where each cell's data went."""

    metric: str | None
    comparisons: list[compare.Row]
    findings: list[design.Finding]
    untestable: list[design.Untestable]
    labels: dict[str, str]
    up: dict[tuple[str, str, int], list[str]]
    where: dict[str, dict[str, Any]]


def _post_context(
    experiment: dict[str, Any],
    tidy_df: pd.DataFrame,
    cells: pd.DataFrame,
    envs: dict[str, dict[str, Any]],
    summary: pd.DataFrame,
    checked: Checked,
    clusters: list[dict[str, Any]],
    full: dict[str, Any],
    adapter: Any,
) -> dict[str, Any]:
    """What the post itself says, from the notebook's context and the design checks."""
    metric, comparisons, findings = checked.metric, checked.comparisons, checked.findings
    axes = list(experiment["axes"])
    fallback = post.axis_effects(summary, axes, metric) if metric and not comparisons else []
    on_disk = {c: bool(w.get("on_disk")) for c, w in checked.where.items()}
    # Each cell's cluster starts: a comparison across starts can move as far as two differ.
    starts: dict[str, set[str]] = {}
    for cell, named in zip(cells.get("cell", []), cells.get("clusters", []), strict=False):
        starts.setdefault(str(cell), set()).update(named.split() if isinstance(named, str) else [])
    said = post.answer(comparisons, findings, fallback, on_disk, starts)
    cross = getattr(adapter, "CROSS", {}).get(metric) if metric else None
    if cross and comparisons:
        other, why = cross
        swapped = {
            **experiment,
            "compare": [
                {**c, "metric": other}
                for c in experiment.get("compare", [])
                if (c.get("metric") or metric) == metric
            ],
        }
        drawn = plot_metrics(
            adapter, experiment.get("params") or {}, experiment.get("daemon_metrics")
        )
        again = compare.experiment_comparisons(tidy_df, swapped, drawn)
        mine = [r for r in comparisons if r.metric == metric]
        said["lines"] += [
            x for x in verdicts.disagreements(mine, again, tidy_df, why) if x not in said["lines"]
        ]
        said["elapsed"] = verdicts.elapsed_claims(mine, again)
    keep = list(said["lead_cells"])
    roles = _roles(experiment, clusters)
    names = _names(tidy_df, cells, axes, checked.labels)
    covers = getattr(adapter, "COVERS", {}).get(metric) if metric else None
    table = post.results_table(tidy_df, axes, metric, names, covers) if metric else None
    figures = post.figures_shown(full["figures"], comparisons, said, metric)
    return {
        "answer": said,
        "hosts": [post.host_line(h, envs.get(h), r) for h, r in roles.items()],
        "clusters": post.cluster_lines(clusters),
        "setups": post.setup_lines(full["setups"]),
        "commands": _listings(cells, experiment, keep, names),
        "table": table,
        "figures": figures,
        "findings": findings,
        "untestable": checked.untestable,
        "flagged": [c for c in full["validity"] if c["flags"]],
        "tools": ", ".join(f"`{v}`" for v in full["tool_versions"]),
        "settings_line": ", ".join(post.changed_settings(clusters)),
        "settings_sided": post.one_side_only(clusters),
        "runs": runorder.design_sentence(experiment, cells, checked.up, full["overlap"]["most"]),
        "conclusion": post.conclusion(said, findings, experiment),
        "clients": clients.section(cells, metric, names),
        "trace": traced.section(experiment, tidy_df, names),
        "metric": metric_label(metric).lower() if metric else "",
    }
