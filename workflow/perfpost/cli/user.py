"""The commands for users: ``perfpost parse`` (tidy rows from logs made anywhere),
``compare`` (two runs' tidy tables), ``yarn-single-node`` (a YARN to try teragen on),
``cells`` (every cell and its status), ``rerun`` (new attempts of chosen cells) and
``publish`` (posts into a Hugo or Jekyll site)."""

from __future__ import annotations

import argparse
import csv
import signal
import sys
from pathlib import Path
from typing import Any

from perfpost.errors import ParseError, PerfpostError

DEFAULT_CONFIG = "config/config.yaml"


def _parser_for(name: str) -> Any:
    from perfpost import tools
    from perfpost.tools.teragen import yarnapp

    if name == yarnapp.NAME:
        return yarnapp
    try:
        return tools.get(name)
    except KeyError as e:
        raise PerfpostError(
            f"{e.args[0]}; or {yarnapp.NAME} for a ResourceManager record"
        ) from None


def _declarations(args: argparse.Namespace) -> dict[str, Any] | None:
    """A command's metric declarations (``--metrics``, as its experiment's ``params.metrics``
    has them), checked; None for a tool that knows its own numbers."""
    import yaml

    from perfpost.tools import command

    given = getattr(args, "metrics", None)
    if args.tool != command.NAME:
        if given:
            raise PerfpostError(f"--metrics: only for the command tool, not {args.tool}")
        return None
    if not given:
        raise PerfpostError(
            "perfpost parse command: a command's numbers are the ones its experiment declares; "
            "give them with --metrics, as in params.metrics: "
            "--metrics \"{rate: {regex: 'rate (?P<value>[0-9.]+)', unit: ops/s}}\""
        )
    try:
        metrics = yaml.safe_load(given)
    except yaml.YAMLError as e:
        raise PerfpostError(f"--metrics: not YAML: {e}") from None
    if not isinstance(metrics, dict) or not metrics:
        raise PerfpostError("--metrics: a mapping of metric names to declarations")
    import jsonschema

    for name, d in metrics.items():
        # The config's schema for one declaration: its keys, its unit among those perfpost
        # knows.
        error = jsonschema.exceptions.best_match(
            jsonschema.Draft7Validator(command.METRIC_SCHEMA).iter_errors(d)
        )
        if error is not None:
            where = "".join(f".{x}" for x in error.absolute_path)
            raise PerfpostError(f"--metrics.{name}{where}: {error.message}")
        if d.get("file"):
            raise PerfpostError(
                f"--metrics.{name}: reads {d['file']}; give that file as a log and drop file:"
            )
    command.check_metrics(metrics, "--metrics")
    return metrics


def _cmd_parse(args: argparse.Namespace) -> int:
    """Rows of every log; with the job (or application) id and status where the tool has
    them. A log that does not parse is reported with its reason and makes the exit code 2,
    after the others are printed."""
    parser = _parser_for(args.tool)
    declared = _declarations(args)
    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow(["source", "tool", "id", "status", "metric", "value", "unit"])
    failed = 0
    for path in args.logs:
        try:
            text = Path(path).read_bytes().decode(errors="replace")  # keep "\r" redraws
        except OSError as e:
            raise PerfpostError(f"{path}: cannot read: {e.strerror}") from None
        about = {"id": "", "status": ""}
        if hasattr(parser, "summary"):
            try:
                about = parser.summary(text, path)
            except ParseError:
                pass
        try:
            if declared is not None:  # a command: its numbers are the ones declared
                metrics = parser.parse_run({"metrics": declared}, {parser.LOG: text})
            else:
                metrics = parser.parse_text(text, path)
        except ParseError as e:
            failed += 1
            print(f"perfpost: {e}", file=sys.stderr)
            if about["id"] or about["status"]:
                writer.writerow([path, parser.NAME, about["id"], about["status"], "", "", ""])
            continue
        for m in metrics:
            writer.writerow(
                [path, parser.NAME, about["id"], about["status"], m.name, repr(m.value), m.unit]
            )
    return 2 if failed else 0


def _side_names(base: str, candidate: str) -> tuple[str, str]:
    """Column names for two tables: their file names, or as much of their paths as tells
    them apart (before/results/x/tidy.csv and after/results/x/tidy.csv: before, after)."""
    a, b = Path(base).resolve().parts, Path(candidate).resolve().parts
    if a[-1] != b[-1]:
        return a[-1], b[-1]
    common = 0
    while common < min(len(a), len(b)) - 1 and a[common] == b[common]:
        common += 1
    return a[common] if common < len(a) else base, b[common] if common < len(b) else candidate


def _cmd_compare(args: argparse.Namespace) -> int:
    """benchstat for perfpost: two runs' tidy tables, cell by cell; then what changed in
    their environments, with a warning when it is more than what ``--changed`` names."""
    from perfpost import paths
    from perfpost.analysis import compare, envdiff, resource_checks, resources, tidy

    tables = []
    for path in (args.base, args.candidate):
        try:
            tables.append(tidy.read(path))
        except FileNotFoundError:
            raise PerfpostError(
                f"{path}: no such tidy table (results/<experiment>/tidy.csv)"
            ) from None
        except (ValueError, KeyError) as e:
            raise PerfpostError(f"{path}: not a perfpost tidy table: {e}") from None
    for path, df in zip((args.base, args.candidate), tables, strict=True):
        missing = {"experiment", "cell", "metric", "value", "unit", "status"} - set(df.columns)
        if missing:
            raise PerfpostError(f"{path}: not a perfpost tidy table (no {sorted(missing)})")
    rows = compare.compare_tables(tables[0], tables[1], args.metric or None)
    if not rows:
        raise PerfpostError("the two tables have no finished cell and metric in common")
    print(compare.markdown(rows, *_side_names(args.base, args.candidate)), end="")
    # What each side's hosts did, where the runs kept telemetry (resources-window.csv).
    sides = []
    for name, path, df in zip(
        _side_names(args.base, args.candidate), (args.base, args.candidate), tables, strict=True
    ):
        window = Path(path).parent / Path(paths.RESOURCES_WINDOW_CSV).name
        if window.is_file():
            sides.append((name, resources.read_window(window), df))
    if len(sides) == 2:
        text = resource_checks.compare_markdown(sides)
        if text:
            print()
            print(text, end="")
    base, cand = envdiff.read_run(args.base), envdiff.read_run(args.candidate)
    changed = args.changed or []
    diffs = envdiff.differences(base, cand, changed)
    print()
    print(envdiff.markdown(diffs, base, cand, changed), end="")
    warn = envdiff.warning(diffs, changed)
    if warn:
        print(warn, file=sys.stderr)
    return 0


def _cmd_yarn_single_node(args: argparse.Namespace) -> int:
    """A single-node YARN in the foreground until Ctrl-C or SIGTERM; its addresses go to
    stdout and to DIR/cluster.json."""
    from perfpost import provision
    from perfpost.clusters import base, lifecycle
    from perfpost.clusters.yarn import RUNTIME, VERSION
    from perfpost.hostenv import LOCALHOST
    from perfpost.records import write_json_atomic
    from perfpost.run.hosts import open_host

    version = args.version or VERSION
    launcher = provision.install(RUNTIME, version, args.cache or None)
    root = Path(args.dir).resolve()
    spec = base.ClusterSpec(
        name="yarn",
        kind="yarn",
        version=version,
        roles={"resourcemanager": [LOCALHOST], "nodemanager": [LOCALHOST]},
        site={
            "yarn-site": {
                "yarn.nodemanager.resource.memory-mb": str(args.memory_mb),
                "yarn.nodemanager.resource.cpu-vcores": str(args.vcores),
            }
        },
        dir=str(root),
    )
    home = str(launcher.resolve().parents[1])
    hosts = {LOCALHOST: {"name": LOCALHOST}}
    try:
        with lifecycle.running(spec, hosts, {LOCALHOST: home}, open_host, log=sys.stderr) as dep:
            info = {
                "resourcemanager": dep.values["url"],
                "rm_address": dep.values["rm"],
                "hadoop_conf_dir": str(lifecycle.write_client_conf(dep, root / "client-conf")),
                "logs": f"{dep.root(LOCALHOST)}/logs",
            }
            write_json_atomic(root / "cluster.json", info)
            for k, v in info.items():
                print(f"{k}: {v}", flush=True)
            signal.pause()
    except KeyboardInterrupt:
        pass
    finally:
        (root / "cluster.json").unlink(missing_ok=True)
    return 0


def _cmd_cells(args: argparse.Namespace) -> int:
    from perfpost.glue import attempts
    from perfpost.plan.build import load_plan

    plan = load_plan(args.configfile)
    if args.experiment and args.experiment not in plan.experiments:
        raise PerfpostError(
            f"no experiment {args.experiment!r} in {args.configfile} "
            f"(there are: {', '.join(plan.experiments)})"
        )
    rows = attempts.statuses(plan, args.experiment)
    columns = ["id", "experiment", "cell", "host", "repeat", "attempt", "status", "reason"]
    writer = csv.DictWriter(sys.stdout, columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    summary = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    print(f"perfpost: {len(rows)} runs: {summary}", file=sys.stderr)
    return 0


def _cmd_rerun(args: argparse.Namespace) -> int:
    import shutil
    import subprocess

    from perfpost.glue import attempts
    from perfpost.plan.build import load_plan

    plan = load_plan(args.configfile)
    chosen = attempts.select_runs(plan, args.runs)
    seen = set()
    for spec in chosen:
        exp = plan.experiments[spec.experiment]
        hosts = exp.hosts if exp.start_together else [spec.host["name"]]
        key = (spec.experiment, spec.cell, tuple(hosts), spec.repeat)
        if key in seen:
            continue
        seen.add(key)
        attempt = attempts.request_rerun(spec.experiment, spec.cell, hosts, spec.repeat)
        for h in hosts:
            print(f"{spec.experiment}/{spec.cell}/{h}/r{spec.repeat}: attempt {attempt}")
    if args.no_run:
        return 0
    snakemake = Path(sys.executable).with_name("snakemake")
    command = [
        str(snakemake) if snakemake.exists() else shutil.which("snakemake") or "snakemake",
        "--cores",
        str(args.cores),
    ]
    if args.configfile != DEFAULT_CONFIG:
        command += ["--configfile", args.configfile]
    command += [*args.snakemake_args, "report"]
    print("perfpost: " + " ".join(command), flush=True)
    return subprocess.run(command, check=False).returncode


def _cmd_publish(args: argparse.Namespace) -> int:
    from perfpost.analysis import publish

    site = Path(args.site)
    for p in publish.publish(site, args.experiments, args.section, args.replace):
        print(f"{p.experiment} -> {p.dest} ({p.outcome})")
    return 0


def _cmd_history(args: argparse.Namespace) -> int:
    """Each series over builds: a table and a figure; exit 1 when a newest build is worse
    than the builds before it beyond the noise floor (a CI gate)."""
    from perfpost.history import store, view

    where = store.default_store(args.store)
    if not store.runs_dir(where).is_dir():
        raise PerfpostError(
            f"{where}: no history here (a run's report adds to history/ beside results/;"
            " --store names another)"
        )
    df = store.read(where)
    chosen = view.select(df, args.experiment, args.cell, args.host, args.metric)
    if chosen.empty:
        asked = ", ".join(
            f"{k} {v}"
            for k, v in (
                ("experiment", args.experiment),
                ("cell", args.cell),
                ("host", args.host),
                ("metric", args.metric),
            )
            if v
        )
        raise PerfpostError(f"{where}: no runs in the history for {asked or 'any experiment'}")
    found = view.series(chosen, by=args.by)
    out = Path(args.out)
    figures = {view.slug(s): view.figure(s, out) for s in found}
    text = view.markdown(found, figures)
    out.mkdir(parents=True, exist_ok=True)
    from perfpost.records import write_text_atomic

    write_text_atomic(out / "history.md", text)
    print(text, end="")
    print(f"\n{len(found)} series; figures and history.md in {out}/")
    bad = view.worse(found)
    for s in bad:
        print(f"perfpost history: worse at the newest point: {view.title(s)}", file=sys.stderr)
    return 1 if bad else 0


def add_commands(sub: Any) -> None:
    """The user commands, as subcommands of ``perfpost``. Building them imports nothing
    more: every perfpost step (one per cell) builds this parser."""
    s = sub.add_parser("parse", help="print tidy rows (CSV) parsed from tool logs")
    s.add_argument(
        "tool", help="dd, fio, freon, teragen, command, or yarn-app (a ResourceManager record)"
    )
    s.add_argument("logs", nargs="+")
    s.add_argument(
        "--metrics",
        help="for command: the numbers to read, as an experiment's params.metrics declares "
        "them (YAML: \"{rate: {regex: 'rate (?P<value>[0-9.]+)', unit: ops/s}}\")",
    )
    s.set_defaults(func=_cmd_parse)

    s = sub.add_parser(
        "compare",
        help="compare two runs' tidy tables cell by cell (a markdown table), and their "
        "environments",
        description="Compare two runs of a matrix cell by cell (a benchstat-style markdown "
        "table), then list what differs between the environments they recorded beside their "
        "tables (results/<experiment>/env/<host>.json, cells.csv, results/clusters/), old -> "
        "new, and warn (on stdout and stderr) when a fact changed that --changed does not name.",
        epilog="Facts, per host: hostname, vendor, kernel, os, cpu.model, cpu.sockets, "
        "cpu.cores, cpu.threads, memory, disk.<name>.model, disk.<name>.size, "
        "disk.<name>.rotational, disk.<name>.transport, vm.dirty_* (each by its sysctl name), "
        "java, ozone, hadoop, tool_version, host (a host one run lacks); per cluster "
        "(the config's name for it): cluster.<name> (a cluster one run lacks), "
        "cluster.<name>.kind, cluster.<name>.version, cluster.<name>.roles.<role>, "
        "cluster.<name>.jvm.<role>, cluster.<name>.env.<VAR>, cluster.<name>.conf.<key>. "
        "--changed KEY names the fact KEY and every fact whose name starts with KEY and a dot "
        "(cpu: every cpu.* fact; cluster.ozone.conf: every configuration key of cluster "
        "ozone).",
    )
    s.add_argument("base", help="the baseline run's tidy.csv or tidy.parquet")
    s.add_argument("candidate", help="the candidate run's tidy table")
    s.add_argument("--metric", action="append", help="only this metric (repeatable)")
    s.add_argument(
        "--changed",
        action="append",
        metavar="KEY",
        help="a fact you meant to change (repeatable), or the part of fact names before a dot "
        "(java, vm.dirty_ratio, cpu, cluster.ozone.conf.ozone.scm.container.size); any other "
        "difference is warned about",
    )
    s.set_defaults(func=_cmd_compare)

    s = sub.add_parser(
        "yarn-single-node",
        help="run a single-node YARN (ResourceManager + NodeManager) until interrupted",
    )
    s.add_argument("dir", help="where its configuration, logs and data go")
    s.add_argument("--version", help="Hadoop's version (default: the one perfpost deploys)")
    s.add_argument("--cache", help="default ~/.cache/perfpost or $PERFPOST_CACHE")
    s.add_argument("--memory-mb", type=int, default=4096, help="memory the NodeManager offers")
    s.add_argument("--vcores", type=int, default=4, help="vcores the NodeManager offers")
    s.set_defaults(func=_cmd_yarn_single_node)

    s = sub.add_parser(
        "cells",
        help="list every run of every cell (CSV): its id, latest attempt, status and reason",
    )
    s.add_argument("experiment", nargs="?")
    s.add_argument("--configfile", default=DEFAULT_CONFIG)
    s.set_defaults(func=_cmd_cells)

    s = sub.add_parser(
        "rerun",
        help="run chosen cells again, finished or not, in new attempts; then the report",
        description="Ask for a new attempt of each run named (ids from `perfpost cells`: "
        "experiment/cell/host/rN; trailing parts may be left out, parts may be patterns such "
        "as 'dd-fsync/*/localhost'), then run `snakemake --cores N report`. Earlier attempts "
        "keep their logs and records.",
    )
    s.add_argument("runs", nargs="+", metavar="CELL_ID")
    s.add_argument("--configfile", default=DEFAULT_CONFIG)
    s.add_argument("--cores", type=int, default=6)
    s.add_argument(
        "--no-run", action="store_true", help="only ask; the next snakemake run does them"
    )
    s.add_argument(
        "--snakemake-args",
        nargs=argparse.REMAINDER,
        default=[],
        help="everything after this goes to snakemake",
    )
    s.set_defaults(func=_cmd_rerun)

    s = sub.add_parser(
        "publish",
        help="copy posts (reports/<experiment>/) into a Hugo or Jekyll site",
        description="Copy each post into an existing site: a Hugo site "
        "(hugo.toml or config.toml/yaml/json, and content/) gets content/SECTION/EXPERIMENT/, "
        "a page bundle; a Jekyll site (_config.yml) gets a post, _posts/DATE-EXPERIMENT.md, "
        "at /SECTION/EXPERIMENT/, its figures and data in SECTION/EXPERIMENT/. A post already "
        "there that differs is never written over without --replace. Run it where the posts "
        "were made.",
    )
    s.add_argument("experiments", nargs="*", metavar="EXPERIMENT", help="default: every post")
    s.add_argument("--site", required=True, metavar="DIR", help="the site's root folder")
    s.add_argument("--section", default="posts", help="the site's folder for them (posts)")
    s.add_argument(
        "--replace", action="store_true", help="replace a page already there that differs"
    )
    s.set_defaults(func=_cmd_publish)

    s = sub.add_parser(
        "history",
        help="every series over builds: change points, a table and a figure; exit 1 when the "
        "newest build is worse beyond the noise floor",
        description="Read the history store (every finished run's results, with its build, "
        "its host's fingerprint and its config's measurement hash) and show, per experiment, "
        "cell, host and metric, the series over builds (or sessions) as a table and a figure, "
        "with change points found by PELT. Exits 1 when a series' newest build is worse than "
        "the builds before it beyond the noise floor, 0 otherwise, 2 on an error.",
    )
    s.add_argument("--store", help="the history store (default: history/, beside results/)")
    s.add_argument("--experiment")
    s.add_argument("--cell", help="a cell id, as in the post (storage=disk)")
    s.add_argument("--host")
    s.add_argument("--metric", help="default: the metric each experiment's post compares on")
    s.add_argument(
        "--by",
        choices=("build", "session"),
        default="build",
        help="one point per build, in the order first measured (default), or per session",
    )
    s.add_argument("--out", default="reports/history", help="where figures and history.md go")
    s.set_defaults(func=_cmd_history)
