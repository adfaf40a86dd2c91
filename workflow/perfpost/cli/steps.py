"""The workflow's steps: what the rules run, one command each, so the rules stay one line.

``run-cell`` and ``run-together`` run cells (with new attempts while they fail and the run's
``retries`` allow), ``env`` captures a host, ``tables``, ``figures`` and ``post`` turn records
into the post, ``provision`` fetches a runtime. Imports are local to each command so that
``run-cell``, which runs once per cell, does not pay for pandas and matplotlib.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from perfpost.cli.attempts import hold_log, keep, run_attempts
from perfpost.errors import PerfpostError
from perfpost.run import lifeline


def runtimes() -> dict[str, Any]:
    """Everything perfpost can provision, by name: the tools' runtimes and the clusters'."""
    from perfpost.glue import provisioning

    return provisioning.runtimes()


def _secret_guard(specs: list[Any]) -> tuple[list[dict[str, str]], Any]:
    """Each spec's environment, and a redactor that masks its secrets (its environment's
    and its settings') in this job's output."""
    from perfpost import hostenv

    envs, secrets = [], []
    for spec in specs:
        values, hidden = hostenv.resolve(spec.cell_env())
        envs.append(values)
        secrets += hidden
        secrets += hostenv.setting_secrets(spec.params, spec.clusters)  # -D, site keys
    redactor = hostenv.Redactor(secrets)
    if redactor:
        sys.stdout = hostenv.RedactingStream(sys.stdout, redactor)
        sys.stderr = hostenv.RedactingStream(sys.stderr, redactor)
    return envs, redactor


def _finished_already(specs: list[Any], outs: list[str]) -> bool:
    """Whether every record of this job is there already, finished, of this measurement.

    Snakemake killed after the job wrote its records but before it noted the job's end
    (a cell releasing its cluster, stopping it after the last cell, takes seconds) runs the
    job again (``rerun-incomplete``), in place: the records (``update`` outputs) are kept
    as they are, for a finished measurement is never made again.
    """
    from perfpost import records

    for spec, out in zip(specs, outs, strict=True):
        try:
            rec = records.read_record(out)
        except (OSError, ValueError):
            return False
        if rec["status"] not in (records.DONE, records.SKIPPED):
            return False
        if rec.get("measurement") != spec.measurement_id():
            return False
    return True


def _say(rec: dict[str, Any]) -> None:
    """The job log's line for a record: which run, which attempt, how it ended and why."""
    line = (
        f"{rec['experiment']} {rec['cell']} {rec['host']} r{rec['repeat']} "
        f"attempt {rec['attempt']}: {rec['status']}"
    )
    print(line + (f" ({rec['reason']})" if rec["reason"] else ""), flush=True)


def _cmd_run_cell(args: argparse.Namespace) -> int:
    import traceback

    from perfpost import provision
    from perfpost.errors import unforeseen
    from perfpost.plan.specs import CellSpec
    from perfpost.run.cell.record import record_failure
    from perfpost.run.hosts import close_all, open_hosts
    from perfpost.run.runner import run_cell

    spec = CellSpec.from_json(args.spec)
    if _finished_already([spec], [args.out]):
        return keep([args.out])
    hold_log()
    if spec.params.get("launcher"):
        provision.refresh_launcher(spec.params["launcher"], runtimes())
    (env,), redactor = _secret_guard([spec])
    unmet = provision.failed_outcomes(args.needs, runtimes(), os.environ.get(lifeline.ENV))

    def run(outs: list[str]) -> list[dict[str, Any]]:
        began = time.time()
        if unmet:  # a runtime it needs could not be provisioned: a record saying so
            record = record_failure(spec, outs[0], unmet, redactor, began)
        else:
            hosts = open_hosts([spec], [env])
            try:
                record = run_cell(spec, outs[0], hosts[0], redactor)
            except Exception as e:
                traceback.print_exc()
                record = record_failure(spec, outs[0], unforeseen(e), redactor, began)
            finally:
                close_all(hosts)
        _say(record)
        return [record]

    run_attempts([args.out], run, args.retries)
    return 0


def _cmd_run_together(args: argparse.Namespace) -> int:
    import traceback

    from perfpost import provision
    from perfpost.errors import unforeseen
    from perfpost.plan.specs import CellSpec
    from perfpost.run.cell.record import record_failure
    from perfpost.run.hosts import close_all, open_hosts
    from perfpost.run.runner import run_together

    specs = [CellSpec.from_json(json.dumps(s)) for s in json.loads(args.specs)]
    for s in specs:
        if s.params.get("launcher"):
            provision.refresh_launcher(s.params["launcher"], runtimes())
    if len(specs) != len(args.outs):
        raise PerfpostError(f"{len(specs)} specs but {len(args.outs)} record paths")
    if _finished_already(specs, list(args.outs)):
        return keep(list(args.outs))
    hold_log()
    envs, redactor = _secret_guard(specs)
    unmet = provision.failed_outcomes(args.needs, runtimes(), os.environ.get(lifeline.ENV))

    def run(outs: list[str]) -> list[dict[str, Any]]:
        began = time.time()
        if unmet:  # a runtime they need could not be provisioned: a record each saying so
            done = [
                record_failure(s, o, unmet, redactor, began)
                for s, o in zip(specs, outs, strict=True)
            ]
        else:
            hosts = open_hosts(specs, envs)
            try:
                done = run_together(specs, outs, hosts, redactor)
            except Exception as e:
                traceback.print_exc()
                done = [
                    record_failure(s, o, unforeseen(e), redactor, began)
                    for s, o in zip(specs, outs, strict=True)
                ]
            finally:
                close_all(hosts)
        for rec in done:
            _say(rec)
        skew = done[0].get("start_skew")
        if skew is not None:
            print(f"start skew between hosts: {skew * 1000:.1f} ms", flush=True)
        return done

    run_attempts(list(args.outs), run, args.retries)
    return 0


def _cmd_env(args: argparse.Namespace) -> int:
    from perfpost.plan.specs import RUNTIME_ENV
    from perfpost.records import write_json_atomic
    from perfpost.run import diskprobe, envinfo

    host_spec = json.loads(args.host)
    known = json.loads(os.environ.get(RUNTIME_ENV) or "{}").get("hosts", {})
    host_spec = {**known.get(host_spec["name"], {}), **host_spec}
    dirs = diskprobe.data_dirs(args.window, host_spec["name"]) if args.window else []
    try:
        env = envinfo.capture(host_spec, dirs)
    except PerfpostError as e:
        # The post is still made; it says this host's environment could not be read, and why.
        env = {"schema_version": envinfo.ENV_SCHEMA_VERSION, "complete": False, "error": str(e)}
        print(f"perfpost: environment of {host_spec['name']}: {e}", file=sys.stderr)
    env["host"] = host_spec["name"]
    write_json_atomic(args.out, env)
    return 0


def _load_records(planned: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """The records of the attempts Snakemake planned, or of later ones a retry made."""
    from perfpost.records import latest_of, read_record

    latest = [latest_of(p) for p in planned]
    return [(p, read_record(p)) for p in latest]


def _cmd_tables(args: argparse.Namespace) -> int:
    from perfpost import paths
    from perfpost.analysis import profiles, resources, steady, tidy
    from perfpost.records import write_text_atomic

    loaded = _load_records(args.records)
    axes = json.loads(args.axes)
    out = Path(args.out_dir)
    df = tidy.from_records([r for _, r in loaded], axes)
    tidy.write(df, out / "tidy.csv", out / "tidy.parquet", out / "tidy.schema.json", axes)
    series = tidy.series_table([r for _, r in loaded], axes)
    write_text_atomic(out / "cells.csv", tidy.cells_table(loaded).to_csv(index=False))
    write_text_atomic(out / "series.csv", series.to_csv(index=False))
    steady.write(steady.table(series), out / Path(paths.STEADY_CSV).name)
    resources.write([r for _, r in loaded], axes, out)
    write_text_atomic(
        out / Path(paths.PROFILE_CSV).name,
        profiles.table([r for _, r in loaded]).to_csv(index=False),
    )
    print(f"{len(loaded)} records, {len(df)} rows -> {out}/tidy.csv")
    return 0


def _cmd_history_add(args: argparse.Namespace) -> int:
    """Add an experiment's finished runs to the history store (those it lacks) and write a
    receipt of what was added."""
    from perfpost.analysis import compare, tidy
    from perfpost.history import store
    from perfpost.records import write_json_atomic

    exp = json.loads(args.experiment)
    cells = pd_read_csv(args.cells)
    loaded = _load_records([str(r) for r in cells["record"].dropna()])
    df = tidy.read(args.tidy)
    envs = {}
    for path in args.env:
        try:
            env = json.loads(Path(path).read_text())
        except (OSError, ValueError):
            continue
        envs[str(env.get("host") or Path(path).stem)] = env
    # The metric the post compares on: the first comparison's, else the tool's first.
    declared = [c.get("metric") for c in exp.get("compare") or [] if c.get("metric")]
    primary = declared[0] if declared else None
    if primary is None:
        primary = compare.default_metric(df, _drawn(exp))
    rows = store.rows(df, loaded, envs, primary, Path(args.results))
    if args.store:
        added = store.add(Path(args.store), rows)
        added["store"] = args.store
    else:
        added = {"store": None, "added_runs": 0, "added_rows": 0, "file": None}
    added["experiment"] = exp["name"]
    added["runs"] = int(rows.drop_duplicates(store.RUN_KEY).shape[0]) if len(rows) else 0
    write_json_atomic(args.out, added)
    print(
        f"{added['added_runs']} of {added['runs']} finished runs added to {args.store}"
        if args.store
        else "history: off (config history: false)"
    )
    return 0


def pd_read_csv(path: str) -> Any:
    import pandas as pd

    return pd.read_csv(path, dtype=str, keep_default_na=False).replace("", None)


def _cmd_round(args: argparse.Namespace) -> int:
    from perfpost.analysis import precision
    from perfpost.records import write_json_atomic

    settings = json.loads(args.settings)
    loaded = _load_records(args.records)
    decision = precision.decide([r for _, r in loaded], settings, settings["previous"])
    write_json_atomic(args.out, decision)
    if not decision["more"] and settings.get("clusters"):
        # The runs after this one will never come: its clusters need not wait for them.
        from perfpost.run import deploy

        here = Path(args.out).parents[1]  # results/<experiment>/cells/<cell>/<host>

        def never(record: str) -> bool:
            p = Path(record)
            return p.parents[2] == here and int(p.parents[1].name[1:]) > decision["runs"]

        for line in deploy.settle(settings["clusters"], never):
            print(f"perfpost: {line}")
    shown = "n/a" if decision["precision"] is None else f"{decision['precision']:.2%}"
    print(
        f"{decision['runs']} runs, {decision['finished']} finished: median "
        f"{decision['metric']} +-{shown} (target {settings['precision']:.2%}): "
        f"{decision['why']}" + (f", next {decision['next']} runs" if decision["more"] else "")
    )
    return 0


def _not_applied(args: argparse.Namespace) -> list[Any]:
    """The settings that did not take effect (a release that does not take one): the figures
    name the cells by what ran, and draw no comparison resting on them, as the post says."""
    if not getattr(args, "cells", None):
        return []
    import pandas as pd

    from perfpost.analysis import design, systems

    return design.settings_not_applied(systems.clusters_of(pd.read_csv(args.cells)))


def _cmd_figures(args: argparse.Namespace) -> int:
    from perfpost.analysis import design, parts, plots, tidy

    whole = json.loads(args.experiment), tidy.read(args.tidy)
    exp, df = parts.view(*whole)  # by job or group, where the plot asks
    # The axes that vary name the series (the x axis, facet and their partners stay).
    keep = {*tidy.varying(df, list(exp["axes"])), exp["plot"].get("x"), exp["plot"].get("facet")}
    keep |= {a for group in exp.get("zip") or [] for a in group}
    labels = {a: list(v) for a, v in exp["axes"].items() if a in keep}
    metrics = list(_drawn(exp))
    facet, zips = exp["plot"].get("facet"), exp.get("zip") or []
    not_applied = _not_applied(args)
    ran = design.ran_by_axis(not_applied, df, list(labels))
    drawn = plots.plot_experiment(
        df,
        exp["title"],
        labels,
        metrics,
        exp["plot"].get("x"),
        Path(args.out_dir),
        facet,
        zips,
        ran,
    )
    # One colour per series in every figure of the post, one unit per metric.
    palette = plots.Palette.of_experiment(
        labels, plots.experiment_x(labels, exp["plot"].get("x"), facet, zips), facet, zips
    )
    axes = [a for a in labels if a in df.columns]
    cell_labels = {
        str(c): dict(zip(axes, vals, strict=True))
        for c, *vals in df.drop_duplicates("cell")[["cell", *axes]].itertuples(index=False)
    }
    scales = plots.metric_scales(df, metrics)

    def colour_of(cells: Any) -> Any:
        return palette.colour(cell_labels.get(str(cells[0]), {}))

    from perfpost.analysis import compare, comparison_plot, progress_plot

    void = {c for f in not_applied for c in f.cells}
    rows = compare.experiment_comparisons(df, exp, metrics)
    rows = [r for r in rows if not void & {*r.base_cells, *r.cand_cells}]
    for i, name in enumerate(dict.fromkeys(r.name for r in rows), start=1):
        mine = [r for r in rows if r.name == name]
        fig = comparison_plot.plot_comparison(
            mine,
            comparison_plot.figure_title(exp["title"], name, mine[0].control),
            Path(args.out_dir) / f"compare-{i}",
            colour_of,
            scales.get(mine[0].metric),
        )
        if fig:
            drawn.append({**fig, "comparison": name})
    if args.series:
        import pandas as pd

        from perfpost.analysis import steady

        series = pd.read_csv(args.series, dtype={"cell": str, "host": str})
        found = steady.read(args.steady) if args.steady else None
        fig = progress_plot.plot_series(
            series,
            f"{exp['title']}: rate over time",
            Path(args.out_dir) / "rate_over_time",
            found,
            palette,
            cell_labels,
        )
        if fig:
            drawn.append(fig)
    if getattr(args, "resources_window", None):
        import pandas as pd

        from perfpost.analysis import resource_plots, resources

        window = resources.read_window(args.resources_window)
        if not window.empty:
            series = pd.read_csv(args.resources, dtype={"cell": str, "host": str, "node": str})
            progress = pd.read_csv(args.series) if args.series else None
            drawn += resource_plots.draw(
                window,
                series,
                progress,
                whole[1],
                list(whole[0]["axes"]),
                compare.default_metric(whole[1], _drawn(exp)),
                exp["title"],
                Path(args.out_dir),
                names={
                    c: n + "".join(f" ({f.ran[c]})" for f in not_applied if c in f.ran)
                    for c, n in tidy.cell_names(whole[1], list(whole[0]["axes"])).items()
                },
            )
    Path(args.out_dir).mkdir(parents=True, exist_ok=True)
    from perfpost.records import write_text_atomic

    write_text_atomic(Path(args.out_dir) / "figures.json", json.dumps(drawn, indent=2) + "\n")
    print(f"{len(drawn)} figures -> {args.out_dir}")
    return 0


def _drawn(exp: dict[str, Any]) -> tuple[str, ...]:
    """The metrics an experiment's post draws (:func:`perfpost.tools.base.plot_metrics`)."""
    from perfpost.tools import base, get

    return base.plot_metrics(get(exp["tool"]), exp.get("params") or {}, exp.get("daemon_metrics"))


def _cmd_post(args: argparse.Namespace) -> int:
    import pandas as pd

    from perfpost import tools
    from perfpost.analysis import parts, profiles, report, resources, steady, tidy
    from perfpost.instrument import clustermethod

    exp = json.loads(args.experiment)
    tidy_df = tidy.read(args.tidy)
    method = tools.get(exp["tool"]).describe(exp, tidy.results(tidy_df))
    exp["method"] = [*method, *clustermethod.describe(exp)]
    exp, tidy_df = parts.view(exp, tidy_df)  # by job or group, where the plot asks
    envs = {}
    for path in args.env:
        data = json.loads(Path(path).read_text())
        envs[data["host"]] = data
    figures = json.loads((Path(args.figures) / "figures.json").read_text())
    cells = pd.read_csv(args.cells)
    out = Path(args.out)
    report.render(
        exp,
        tidy_df,
        cells,
        envs,
        figures,
        out,
        Path(args.data),
        comparisons_csv=Path(args.comparisons) if args.comparisons else None,
        steady_df=steady.read(args.steady) if args.steady else None,
        steady_csv=Path(args.steady_data) if args.steady_data else None,
        # Callers that name none of these (an older workflow's rule) get a post without them.
        resources_df=(
            resources.read_window(args.resources) if getattr(args, "resources", None) else None
        ),
        profile_df=profiles.read(args.profile) if getattr(args, "profile", None) else None,
        resources_csv=(
            Path(args.resources_data) if getattr(args, "resources_data", None) else None
        ),
    )
    print(f"post -> {out}")
    return 0


def _cmd_html(args: argparse.Namespace) -> int:
    from perfpost.analysis import html

    html.write(Path(args.post).parent, Path(args.out))
    print(f"post and notebook -> {args.out}")
    return 0


def _cmd_provision(args: argparse.Namespace) -> int:
    from perfpost import provision

    known = runtimes()
    if args.tool not in known:
        raise PerfpostError(
            f"no runtime {args.tool!r} to provision (known: {', '.join(sorted(known))})"
        )
    runtime = known[args.tool]
    version = args.version or runtime.version
    what = {"tool": args.tool, "version": version, "cache": str(provision.cache_dir(args.cache))}
    what["run"] = os.environ.get(lifeline.ENV, "")  # tried in this run: its cells do not try again
    try:
        launcher = provision.install(runtime, version, args.cache or None, args.log)
    except (PerfpostError, OSError, subprocess.SubprocessError) as e:
        if not args.outcome:
            raise
        # The run goes on: the cells that need this runtime fail with this reason.
        provision.write_outcome(args.outcome, status="failed", reason=str(e), **what)
        print(f"perfpost: provisioning {args.tool} {version} failed: {e}", file=sys.stderr)
        return 0
    if args.outcome:
        provision.write_outcome(args.outcome, status="done", launcher=str(launcher), **what)
    print(launcher)
    return 0


def add_commands(sub: Any) -> None:
    """The workflow's steps, as subcommands of ``perfpost``."""
    retries = int(os.environ.get(lifeline.RETRIES_ENV) or 0)
    retries_help = f"new attempts after a failed one (default: ${lifeline.RETRIES_ENV}, else 0)"

    # The runtimes are listed when the command runs, not here: listing them loads every
    # tool and cluster kind, which each run-cell would pay for.
    s = sub.add_parser("provision", help="provision a runtime from Maven Central")
    s.add_argument(
        "tool", help="a tool's or cluster kind's runtime: ozone, hadoop, hdfs, yarn, byteman"
    )
    s.add_argument("--version", help="default: the version perfpost was verified with")
    s.add_argument("--cache", help="default ~/.cache/perfpost or $PERFPOST_CACHE")
    s.add_argument("--log")
    s.add_argument(
        "--outcome",
        help="write done/failed (with the reason) here as JSON and exit 0 either way: the "
        "cells that need the runtime read it",
    )
    s.set_defaults(func=_cmd_provision)

    s = sub.add_parser("run-cell", help="(workflow step) run one cell, write its record")
    s.add_argument("--spec", required=True, help="the cell spec as JSON")
    s.add_argument("--out", required=True, help="record path")
    s.add_argument("--retries", type=int, default=retries, help=retries_help)
    s.add_argument(
        "--needs", nargs="*", default=[], help="the installs the cell needs, by their markers"
    )
    s.set_defaults(func=_cmd_run_cell)

    s = sub.add_parser("run-together", help="(workflow step) run one cell on all its hosts at once")
    s.add_argument("--specs", required=True, help="the cell specs (one per host) as JSON")
    s.add_argument("--outs", required=True, nargs="+", help="record paths, in the same order")
    s.add_argument("--retries", type=int, default=retries, help=retries_help)
    s.add_argument(
        "--needs", nargs="*", default=[], help="the installs the cell needs, by their markers"
    )
    s.set_defaults(func=_cmd_run_together)

    s = sub.add_parser("env", help="(workflow step) capture a host's environment")
    s.add_argument("--host", required=True, help="the host spec as JSON")
    s.add_argument("--window", help="the experiment's resources window (CSV): where its data went")
    s.add_argument("--out", required=True)
    s.set_defaults(func=_cmd_env)

    s = sub.add_parser("tables", help="(workflow step) tidy tables from cell records")
    s.add_argument("--axes", required=True, help="axis names as a JSON list")
    s.add_argument("--out-dir", required=True)
    s.add_argument("records", nargs="*")
    s.set_defaults(func=_cmd_tables)

    s = sub.add_parser("history-add", help="(workflow step) add finished runs to the history")
    s.add_argument("--experiment", required=True, help="the experiment as JSON")
    s.add_argument("--tidy", required=True)
    s.add_argument("--cells", required=True)
    s.add_argument("--env", nargs="*", default=[])
    s.add_argument("--results", default="results", help="the results directory (clusters/)")
    s.add_argument("--store", default="", help="the history store; empty: history off")
    s.add_argument("--out", required=True, help="the receipt (JSON)")
    s.set_defaults(func=_cmd_history_add)

    s = sub.add_parser("round", help="(workflow step) decide whether a cell needs more runs")
    s.add_argument("--settings", required=True, help="the precision target and round, as JSON")
    s.add_argument("--out", required=True, help="the decision's path")
    s.add_argument("records", nargs="+", help="the cell's records so far, on one host")
    s.set_defaults(func=_cmd_round)

    s = sub.add_parser("figures", help="(workflow step) draw an experiment's figures")
    s.add_argument("--experiment", required=True, help="the experiment as JSON")
    s.add_argument("--tidy", required=True)
    s.add_argument("--series", help="the time-series table (series.csv)")
    s.add_argument("--steady", help="the steady-state table (steady.csv), to mark boundaries")
    s.add_argument("--resources", help="every sampling interval of every run (resources.csv)")
    s.add_argument("--resources-window", help="each run's measured step (resources-window.csv)")
    s.add_argument("--out-dir", required=True)
    s.add_argument(
        "--cells", help="cells.csv: what ran, to name a setting that did not take effect"
    )
    s.set_defaults(func=_cmd_figures)

    s = sub.add_parser("post", help="(workflow step) render an experiment's post")
    s.add_argument("--experiment", required=True, help="the experiment as JSON")
    s.add_argument("--tidy", required=True)
    s.add_argument("--cells", required=True)
    s.add_argument("--steady", help="the steady-state table (steady.csv)")
    s.add_argument("--figures", required=True, help="the figures directory")
    s.add_argument("--env", nargs="*", default=[])
    s.add_argument("--out", required=True)
    s.add_argument("--data", required=True, help="where the post's CSV goes")
    s.add_argument("--comparisons", help="where the comparisons' CSV goes")
    s.add_argument("--steady-data", help="where the post's copy of the steady-state table goes")
    s.add_argument("--resources", help="each run's measured step per host (resources-window.csv)")
    s.add_argument("--resources-data", help="where the post's copy of that table goes")
    s.add_argument("--profile", help="flight recordings' hottest methods (profile.csv)")
    s.set_defaults(func=_cmd_post)

    s = sub.add_parser("html", help="(workflow step) a post and its notebook as HTML pages")
    s.add_argument("--post", required=True, help="the post's index.md (its folder is read)")
    s.add_argument("--out", required=True, help="the HTML page to write")
    s.set_defaults(func=_cmd_html)
