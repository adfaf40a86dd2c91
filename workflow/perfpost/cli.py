"""The ``perfpost`` command: what the workflow's rules call, and tools for users.

User commands: ``perfpost parse TOOL LOG...`` (tidy rows from logs made anywhere), ``perfpost
cells [EXPERIMENT]`` (every cell and its status). The others are the workflow's steps, kept
here so the rules stay one line each. Imports are local to each command so that ``run-cell``,
which runs once per cell, does not pay for pandas and matplotlib.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

from perfpost.errors import ConfigError, ParseError, PerfpostError

DEFAULT_CONFIG = "config/config.yaml"
# The workflow's `retries` (profile or command line), set for the cell jobs when a run starts.
RETRIES_ENV = "PERFPOST_RETRIES"


def _secret_guard(specs: list[Any]) -> tuple[list[dict[str, str]], Any]:
    """Each spec's environment, and a redactor that masks its secrets in this job's output."""
    from perfpost import hostenv

    envs, secrets = [], []
    for spec in specs:
        values, hidden = hostenv.resolve(spec.cell_env())
        envs.append(values)
        secrets += hidden
    redactor = hostenv.Redactor(secrets)
    if redactor:
        sys.stdout = hostenv.RedactingStream(sys.stdout, redactor)
        sys.stderr = hostenv.RedactingStream(sys.stderr, redactor)
    return envs, redactor


def _next_attempt(outs: list[str]) -> list[str]:
    """Record paths of a new attempt after every attempt any of ``outs``' hosts has."""
    from perfpost import paths

    n = max(max(paths.attempts_in(Path(o).parent.parent), default=0) for o in outs)
    return [str(Path(o).parent.parent / f"attempt-{n + 1}" / Path(o).name) for o in outs]


def _log_to(record_path: str) -> None:
    """Send this job's output to the new attempt's own log, as Snakemake does for the first."""
    from perfpost import paths

    log = Path(record_path).parent / Path(paths.CELL_LOG).name
    log.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def _attempts(outs: list[str], run: Any, retries: int) -> None:
    """Run a cell's attempt and, while it fails and the profile's ``retries`` allow, new
    attempts: each in its own attempt-<n> directory with its own log, failed ones kept."""
    from perfpost import paths

    for tried in range(1, retries + 2):
        done = run(outs)
        if not any(r["status"] == "failed" for r in done) or tried > retries:
            return
        failed, outs = paths.attempt_of(outs[0]), _next_attempt(outs)
        again = paths.attempt_of(outs[0])
        print(
            f"perfpost: retry {tried} of {retries}: attempt {again}, "
            f"logged in {Path(outs[0]).parent}/{Path(paths.CELL_LOG).name}",
            flush=True,
        )
        _log_to(outs[0])
        print(f"perfpost: attempt {again}: retry {tried} of {retries} after attempt {failed}")


def _cmd_run_cell(args: argparse.Namespace) -> int:
    import traceback

    from perfpost import provision
    from perfpost.config import CellSpec
    from perfpost.hosts import close_all, open_hosts
    from perfpost.runner import record_failure, run_cell, unforeseen

    spec = CellSpec.from_json(args.spec)
    provision.refresh_launcher(spec.params.get("launcher"))
    (env,), redactor = _secret_guard([spec])

    def run(outs: list[str]) -> list[dict[str, Any]]:
        hosts = open_hosts([spec], [env])
        try:
            record = run_cell(spec, outs[0], hosts[0], redactor)
        except Exception as e:
            traceback.print_exc()
            record = record_failure(spec, outs[0], unforeseen(e), redactor)
        finally:
            close_all(hosts)
        line = f"{spec.experiment} {spec.cell} {spec.host['name']} r{spec.repeat}"
        line += f" attempt {record['attempt']}: {record['status']}"
        print(line + (f" ({record['reason']})" if record["reason"] else ""), flush=True)
        return [record]

    _attempts([args.out], run, args.retries)
    return 0


def _cmd_run_together(args: argparse.Namespace) -> int:
    import traceback

    from perfpost import provision
    from perfpost.config import CellSpec
    from perfpost.hosts import close_all, open_hosts
    from perfpost.runner import record_failure, run_together, unforeseen

    specs = [CellSpec.from_json(json.dumps(s)) for s in json.loads(args.specs)]
    for s in specs:
        provision.refresh_launcher(s.params.get("launcher"))
    if len(specs) != len(args.outs):
        raise PerfpostError(f"{len(specs)} specs but {len(args.outs)} record paths")
    envs, redactor = _secret_guard(specs)

    def run(outs: list[str]) -> list[dict[str, Any]]:
        hosts = open_hosts(specs, envs)
        try:
            done = run_together(specs, outs, hosts, redactor)
        except Exception as e:
            traceback.print_exc()
            done = [
                record_failure(s, o, unforeseen(e), redactor)
                for s, o in zip(specs, outs, strict=True)
            ]
        finally:
            close_all(hosts)
        for rec in done:
            line = (
                f"{rec['experiment']} {rec['cell']} {rec['host']} r{rec['repeat']} "
                f"attempt {rec['attempt']}: {rec['status']}"
            )
            print(line + (f" ({rec['reason']})" if rec["reason"] else ""), flush=True)
        skew = done[0].get("start_skew")
        if skew is not None:
            print(f"start skew between hosts: {skew * 1000:.1f} ms", flush=True)
        return done

    _attempts(list(args.outs), run, args.retries)
    return 0


def _cmd_env(args: argparse.Namespace) -> int:
    from perfpost import envinfo
    from perfpost.config import RUNTIME_ENV
    from perfpost.hosts import open_host
    from perfpost.records import write_json_atomic

    host_spec = json.loads(args.host)
    known = json.loads(os.environ.get(RUNTIME_ENV) or "{}").get("hosts", {})
    host_spec = {**known.get(host_spec["name"], {}), **host_spec}
    try:
        host = open_host(host_spec)
        try:
            result = host.run(envinfo.SCRIPT, 120)
        finally:
            host.close()
        env = envinfo.parse(result.stdout)
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
    from perfpost import tidy
    from perfpost.records import write_text_atomic

    loaded = _load_records(args.records)
    axes = json.loads(args.axes)
    out = Path(args.out_dir)
    df = tidy.from_records([r for _, r in loaded], axes)
    tidy.write(df, out / "tidy.csv", out / "tidy.parquet", out / "tidy.schema.json", axes)
    series = tidy.series_table([r for _, r in loaded], axes)
    write_text_atomic(out / "cells.csv", tidy.cells_table(loaded).to_csv(index=False))
    write_text_atomic(out / "series.csv", series.to_csv(index=False))
    print(f"{len(loaded)} records, {len(df)} rows -> {out}/tidy.csv")
    return 0


def _cmd_figures(args: argparse.Namespace) -> int:
    from perfpost import adapters, plots, tidy

    exp = json.loads(args.experiment)
    df = tidy.read(args.tidy)
    labels = {a: list(v) for a, v in exp["axes"].items()}
    drawn = plots.plot_experiment(
        df,
        exp["title"],
        labels,
        list(adapters.get(exp["tool"]).PLOT_METRICS),
        exp["plot"].get("x"),
        Path(args.out_dir),
        exp["plot"].get("facet"),
        roles=exp.get("compare", [None])[0] if exp.get("compare") else None,
        zips=exp.get("zip") or [],
    )
    from perfpost import compare

    rows = compare.experiment_comparisons(df, exp, adapters.get(exp["tool"]).PLOT_METRICS)
    for i, name in enumerate(dict.fromkeys(r.name for r in rows), start=1):
        fig = plots.plot_comparison(
            [r for r in rows if r.name == name],
            f"{exp['title']}: {name}",
            Path(args.out_dir) / f"compare-{i}",
        )
        if fig:
            drawn.append({**fig, "comparison": name})
    if args.series:
        import pandas as pd

        series = pd.read_csv(args.series)
        fig = plots.plot_series(
            series, f"{exp['title']}: rate over time", Path(args.out_dir) / "rate_over_time"
        )
        if fig:
            drawn.append(fig)
    Path(args.out_dir).mkdir(parents=True, exist_ok=True)
    from perfpost.records import write_text_atomic

    write_text_atomic(Path(args.out_dir) / "figures.json", json.dumps(drawn, indent=2) + "\n")
    print(f"{len(drawn)} figures -> {args.out_dir}")
    return 0


def _cmd_post(args: argparse.Namespace) -> int:
    import pandas as pd

    from perfpost import adapters, report, tidy

    exp = json.loads(args.experiment)
    tidy_df = tidy.read(args.tidy)
    exp["method"] = adapters.get(exp["tool"]).describe(exp, tidy.results(tidy_df))
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
    )
    print(f"post -> {out}")
    return 0


def _parser_for(name: str) -> Any:
    from perfpost import adapters, yarnapp

    if name == yarnapp.NAME:
        return yarnapp
    try:
        return adapters.get(name)
    except KeyError as e:
        raise PerfpostError(
            f"{e.args[0]}; or {yarnapp.NAME} for a ResourceManager record"
        ) from None


def _cmd_parse(args: argparse.Namespace) -> int:
    """Rows of every log; with the job (or application) id and status where the tool has
    them. A log that does not parse is reported with its reason and makes the exit code 2,
    after the others are printed."""
    parser = _parser_for(args.tool)
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


def _cmd_compare(args: argparse.Namespace) -> int:
    """benchstat for perfpost: two runs' tidy tables, cell by cell."""
    from perfpost import compare, tidy

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
    print(compare.markdown(rows, Path(args.base).name, Path(args.candidate).name), end="")
    return 0


def _cmd_yarn_single_node(args: argparse.Namespace) -> int:
    """A single-node YARN in the foreground until Ctrl-C or SIGTERM; its addresses go to
    stdout and to DIR/cluster.json."""
    from perfpost import provision
    from perfpost.records import write_json_atomic
    from perfpost.singleyarn import SingleNodeYarn

    launcher = provision.install("yarn", args.version, args.cache or None)
    root = Path(args.dir).resolve()
    yarn = SingleNodeYarn(launcher, root, memory_mb=args.memory_mb, vcores=args.vcores)
    yarn.start()
    try:
        info = {
            "resourcemanager": yarn.rm_url,
            "rm_address": yarn.rm_address,
            "hadoop_conf_dir": str(yarn.client_conf),
            "logs": str(root / "logs"),
        }
        write_json_atomic(root / "cluster.json", info)
        for k, v in info.items():
            print(f"{k}: {v}", flush=True)
        signal.pause()
    except KeyboardInterrupt:
        pass
    finally:
        yarn.stop()
        (root / "cluster.json").unlink(missing_ok=True)
    return 0


def _cmd_cells(args: argparse.Namespace) -> int:
    from perfpost import config
    from perfpost import workflow as pw

    plan = config.load_plan(args.configfile)
    if args.experiment and args.experiment not in plan.experiments:
        raise PerfpostError(
            f"no experiment {args.experiment!r} in {args.configfile} "
            f"(there are: {', '.join(plan.experiments)})"
        )
    rows = pw.statuses(plan, args.experiment)
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

    from perfpost import config
    from perfpost import workflow as pw

    plan = config.load_plan(args.configfile)
    chosen = pw.select_runs(plan, args.runs)
    seen = set()
    for spec in chosen:
        exp = plan.experiments[spec.experiment]
        hosts = exp.hosts if exp.start_together else [spec.host["name"]]
        key = (spec.experiment, spec.cell, tuple(hosts), spec.repeat)
        if key in seen:
            continue
        seen.add(key)
        attempt = pw.request_rerun(spec.experiment, spec.cell, hosts, spec.repeat)
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


def _cmd_provision(args: argparse.Namespace) -> int:
    from perfpost import provision

    version = args.version or provision.DEFAULT_VERSIONS[args.tool]
    print(provision.install(args.tool, version, args.cache or None, args.log))
    return 0


def build_parser() -> argparse.ArgumentParser:
    retries = int(os.environ.get(RETRIES_ENV) or 0)
    retries_help = f"new attempts after a failed one (default: ${RETRIES_ENV}, else 0)"
    from perfpost import provision

    p = argparse.ArgumentParser(prog="perfpost", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("parse", help="print tidy rows (CSV) parsed from tool logs")
    s.add_argument("tool", help="dd, freon, teragen, or yarn-app (a ResourceManager record)")
    s.add_argument("logs", nargs="+")
    s.set_defaults(func=_cmd_parse)

    s = sub.add_parser(
        "compare", help="compare two runs' tidy tables cell by cell (a markdown table)"
    )
    s.add_argument("base", help="the baseline run's tidy.csv or tidy.parquet")
    s.add_argument("candidate", help="the candidate run's tidy table")
    s.add_argument("--metric", action="append", help="only this metric (repeatable)")
    s.set_defaults(func=_cmd_compare)

    s = sub.add_parser(
        "yarn-single-node",
        help="run a single-node YARN (ResourceManager + NodeManager) until interrupted",
    )
    s.add_argument("dir", help="where its configuration, logs and data go")
    s.add_argument("--version", default=provision.DEFAULT_VERSIONS["yarn"])
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

    s = sub.add_parser("provision", help="provision a runtime from Maven Central")
    s.add_argument("tool", choices=sorted(provision.TOOLS))
    s.add_argument("--version", help="default: Ozone 2.2.0, Hadoop 3.4.2")
    s.add_argument("--cache", help="default ~/.cache/perfpost or $PERFPOST_CACHE")
    s.add_argument("--log")
    s.set_defaults(func=_cmd_provision)

    s = sub.add_parser("run-cell", help="(workflow step) run one cell, write its record")
    s.add_argument("--spec", required=True, help="the cell spec as JSON")
    s.add_argument("--out", required=True, help="record path")
    s.add_argument("--retries", type=int, default=retries, help=retries_help)
    s.set_defaults(func=_cmd_run_cell)

    s = sub.add_parser("run-together", help="(workflow step) run one cell on all its hosts at once")
    s.add_argument("--specs", required=True, help="the cell specs (one per host) as JSON")
    s.add_argument("--outs", required=True, nargs="+", help="record paths, in the same order")
    s.add_argument("--retries", type=int, default=retries, help=retries_help)
    s.set_defaults(func=_cmd_run_together)

    s = sub.add_parser("env", help="(workflow step) capture a host's environment")
    s.add_argument("--host", required=True, help="the host spec as JSON")
    s.add_argument("--out", required=True)
    s.set_defaults(func=_cmd_env)

    s = sub.add_parser("tables", help="(workflow step) tidy tables from cell records")
    s.add_argument("--axes", required=True, help="axis names as a JSON list")
    s.add_argument("--out-dir", required=True)
    s.add_argument("records", nargs="*")
    s.set_defaults(func=_cmd_tables)

    s = sub.add_parser("figures", help="(workflow step) draw an experiment's figures")
    s.add_argument("--experiment", required=True, help="the experiment as JSON")
    s.add_argument("--tidy", required=True)
    s.add_argument("--series", help="the time-series table (series.csv)")
    s.add_argument("--out-dir", required=True)
    s.set_defaults(func=_cmd_figures)

    s = sub.add_parser("post", help="(workflow step) render an experiment's post")
    s.add_argument("--experiment", required=True, help="the experiment as JSON")
    s.add_argument("--tidy", required=True)
    s.add_argument("--cells", required=True)
    s.add_argument("--figures", required=True, help="the figures directory")
    s.add_argument("--env", nargs="*", default=[])
    s.add_argument("--out", required=True)
    s.add_argument("--data", required=True, help="where the post's CSV goes")
    s.add_argument("--comparisons", help="where the comparisons' CSV goes")
    s.set_defaults(func=_cmd_post)
    return p


def _interrupt(signum: int, frame: Any) -> None:
    # SIGTERM (Snakemake stopping a job) unwinds like Ctrl-C, so every host kills the tools
    # it started before perfpost exits. Remote commands are killed right here: Fabric would
    # otherwise wait for them to end by themselves.
    remote = sys.modules.get("perfpost.remote")
    if remote is not None:
        remote.interrupt()
    raise KeyboardInterrupt(f"signal {signum}")


# Workflow steps that stop (killing their tools) when the Snakemake run that started them dies.
_STEPS = {"run-cell", "run-together", "env", "provision"}


def main(argv: list[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, _interrupt)
    args = build_parser().parse_args(argv)
    if args.command in _STEPS:
        from perfpost import lifeline

        lifeline.stop_when_run_dies()
    try:
        return args.func(args)
    except (ParseError, ConfigError, PerfpostError) as e:
        print(f"perfpost: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 1
    except KeyboardInterrupt as e:
        # The tools were stopped on every host on the way out; no record says otherwise.
        print(f"perfpost: interrupted ({e or 'Ctrl-C'}): tools stopped, nothing recorded")
        return 130


if __name__ == "__main__":
    sys.exit(main())
