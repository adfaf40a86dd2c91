"""The history store: every finished run's results, with its build and its machine.

A directory, ``history/`` beside ``results/`` unless the config's ``history:`` names another
(a nightly job's clones share one): ``runs/`` holds Parquet files, one per addition, each
written once under a new name and never rewritten or deleted; ``schema.json`` describes
their columns. ``pandas.read_parquet("history/runs")``, DuckDB's
``read_parquet('history/runs/*.parquet')`` or pyarrow's datasets read it as one table.

A run is added once: an addition skips every run (experiment, cell, host, repeat, attempt,
session, start) the store already holds, so adding a results directory again adds nothing.
Rows carry:

- the build: ``$PERFPOST_BUILD`` (and ``$PERFPOST_REVISION``) where the job that ran set
  them (the build a nightly job tests, as it names it); else the clusters the run used,
  kind and version (with the git revision their ``version`` command printed, and a user's
  build's file name); else the tool's version. ``build_from`` says which.
- the machine: the host's name and its fingerprint, a hash of its CPU (model, sockets,
  cores, threads), memory, disks (name, model, size, rotational) and kernel, from the
  environment perfpost captured; ``machine`` spells it out. Series never mix fingerprints.
- the measurement hash of the cell's config (what was measured, not where or by whom): a
  changed config starts a new series.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from perfpost.errors import PerfpostError
from perfpost.records import write_json_atomic

HISTORY_SCHEMA_VERSION = 1
RUNS = "runs"
SCHEMA = "schema.json"
BUILD_ENV = "PERFPOST_BUILD"
REVISION_ENV = "PERFPOST_REVISION"

RUN_KEY = ["experiment", "cell", "host", "repeat", "attempt", "session", "start"]
COLUMNS = {
    "experiment": "experiment name from the config",
    "cell": "cell id: axis=label pairs in axis order",
    "host": "host the run ran on",
    "repeat": "repeat number, from 1",
    "attempt": "attempt of the cell that made the run",
    "session": "the Snakemake run that made it",
    "start": "when the run started (UTC, ISO 8601)",
    "metric": "metric name",
    "value": "metric value in base units",
    "unit": "B, s, B/s, count or 1/s",
    "primary": "the metric the experiment's post compares on",
    "tool": "benchmark tool",
    "tool_version": "the tool's version as it printed it",
    "build": "the build under test (see build_from)",
    "revision": "its git revision, where known",
    "build_from": "given ($PERFPOST_BUILD), clusters or tool",
    "fingerprint": "hash of the host's CPU, memory, disks and kernel",
    "machine": "what the fingerprint hashes, readable",
    "measurement": "hash of what the cell's config measures",
    "perfpost_version": "perfpost that made the run",
    "added": "when the run entered the history (UTC, ISO 8601)",
}


def default_store(configured: str | None = None) -> Path:
    return Path(configured or "history")


def machine(env: Mapping[str, Any]) -> dict[str, Any]:
    """What a host is, as far as its results are comparable: CPU, memory, disks, kernel."""
    cpu = env.get("cpu") or {}
    disks = sorted(
        (
            {k: d.get(k) for k in ("name", "model", "size_bytes", "rotational")}
            for d in env.get("disks") or []
        ),
        key=lambda d: str(d["name"]),
    )
    return {
        "cpu": {k: cpu.get(k) for k in ("model", "sockets", "cores", "threads")},
        "memory_bytes": env.get("memory_bytes"),
        "disks": disks,
        "kernel": env.get("kernel"),
    }


def fingerprint(env: Mapping[str, Any]) -> str:
    blob = json.dumps(machine(env), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def describe(env: Mapping[str, Any]) -> str:
    m = machine(env)
    cpu = m["cpu"]
    parts = [f"{cpu.get('model') or 'unknown CPU'} x{cpu.get('threads') or '?'}"]
    if m["memory_bytes"]:
        parts.append(f"{m['memory_bytes'] / 2**30:.1f} GiB")
    for d in m["disks"]:
        size = f" {d['size_bytes'] / 1e9:.0f} GB" if d.get("size_bytes") else ""
        kind = " HDD" if d.get("rotational") else (" SSD" if d.get("rotational") is False else "")
        parts.append(f"{d['name']}{size}{kind}")
    parts.append(m["kernel"] or "unknown kernel")
    return ", ".join(parts)


_REVISION = re.compile(r"-r\s+([0-9a-f]{7,40})\b")


def _cluster_revision(results: Path, cluster: Mapping[str, Any]) -> tuple[str, str]:
    """The revision a cluster's ``version`` command printed, and its user build's name."""
    state = results / "clusters" / str(cluster.get("id")) / f"start-{cluster.get('start')}"
    try:
        dep = json.loads((state / "state.json").read_text())["deployment"]
    except (OSError, ValueError, KeyError, TypeError):
        return "", ""
    m = _REVISION.search(str(dep.get("version") or ""))
    build = (dep.get("spec") or {}).get("build")
    return (m.group(1) if m else ""), (Path(build).name if build else "")


def build_of(
    record: Mapping[str, Any], results: Path, environ: Mapping[str, str] = os.environ
) -> dict[str, str]:
    """The build a run tested (see the module's docstring)."""
    given = (environ.get(BUILD_ENV) or "").strip()
    if given:
        rev = (environ.get(REVISION_ENV) or "").strip()
        return {"build": given, "revision": rev, "build_from": "given"}
    clusters = record.get("clusters") or []
    if clusters:
        names, revs = [], []
        for c in sorted(clusters, key=lambda c: (str(c.get("kind")), str(c.get("id")))):
            rev, build = _cluster_revision(results, c)
            name = f"{c.get('kind')} {c.get('version')}"
            names.append(f"{name} ({build})" if build else name)
            if rev:
                revs.append(rev)
        return {
            "build": "; ".join(dict.fromkeys(names)),
            "revision": " ".join(dict.fromkeys(revs)),
            "build_from": "clusters",
        }
    version = str(record.get("tool_version") or "unknown")
    return {"build": version, "revision": "", "build_from": "tool"}


def runs_dir(store: Path) -> Path:
    return store / RUNS


def _parts(store: Path) -> list[Path]:
    d = runs_dir(store)
    return sorted(d.glob("*.parquet")) if d.is_dir() else []


def _check_schema(store: Path) -> None:
    path = store / SCHEMA
    if not path.is_file():
        return
    try:
        version = json.loads(path.read_text()).get("schema_version")
    except (OSError, ValueError) as e:
        raise PerfpostError(f"{path}: unreadable history schema: {e}") from None
    if version != HISTORY_SCHEMA_VERSION:
        raise PerfpostError(
            f"{path}: history schema version {version}; this perfpost reads"
            f" {HISTORY_SCHEMA_VERSION}"
        )


def read(store: Path, columns: list[str] | None = None) -> pd.DataFrame:
    """Every run in the store (only ``columns``, if given), one row per run and metric."""
    _check_schema(store)
    parts = _parts(store)
    if not parts:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in columns or COLUMNS})
    try:
        return pd.read_parquet(runs_dir(store), columns=columns)
    except (OSError, ValueError) as e:
        raise PerfpostError(f"{runs_dir(store)}: not a perfpost history: {e}") from None


def rows(
    tidy_df: pd.DataFrame,
    records: Iterable[tuple[str, Mapping[str, Any]]],
    envs: Mapping[str, Mapping[str, Any]],
    primary: str | None,
    results: Path,
    environ: Mapping[str, str] = os.environ,
) -> pd.DataFrame:
    """The history rows of the finished runs among ``records`` ((path, record) pairs),
    their values from ``tidy_df``."""
    done = tidy_df[tidy_df["status"] == "done"]
    about = []
    for _, rec in records:
        if rec.get("status") != "done":
            continue
        env = envs.get(str(rec.get("host"))) or {}
        about.append(
            {
                "experiment": rec["experiment"],
                "cell": rec["cell"],
                "host": rec["host"],
                "repeat": int(rec["repeat"]),
                "attempt": int(rec.get("attempt") or 1),
                "session": str(rec.get("session") or ""),
                "start": str(rec.get("start") or ""),
                "tool_version": str(rec.get("tool_version") or ""),
                **build_of(rec, results, environ),
                "fingerprint": fingerprint(env) if env else "unknown",
                "machine": describe(env) if env else "unknown: no environment captured",
                "measurement": str(rec.get("measurement") or ""),
                "perfpost_version": str(rec.get("perfpost_version") or ""),
            }
        )
    if not about or done.empty:
        return pd.DataFrame(columns=list(COLUMNS))
    runs = pd.DataFrame(about)
    run = ["experiment", "cell", "host", "repeat", "attempt"]
    values = done[[*run, "tool", "metric", "value", "unit"]]
    values = values[values["metric"] != "exit_code"]
    out = values.merge(runs, on=run, how="inner")
    out["primary"] = out["metric"] == primary
    out["added"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return out[list(COLUMNS)]


def add(store: Path, new: pd.DataFrame) -> dict[str, Any]:
    """Append the runs of ``new`` the store does not hold yet, as one new Parquet file;
    what was added."""
    _check_schema(store)
    if not new.empty and _parts(store):
        held = read(store, RUN_KEY).drop_duplicates()
        held = held.astype({k: new[k].dtype for k in RUN_KEY})
        seen = new[RUN_KEY].merge(held, on=RUN_KEY, how="left", indicator=True)["_merge"]
        new = new[(seen == "left_only").to_numpy()]
    runs = 0 if new.empty else len(new.drop_duplicates(RUN_KEY))
    if new.empty:
        return {"added_runs": 0, "added_rows": 0, "file": None}
    d = runs_dir(store)
    d.mkdir(parents=True, exist_ok=True)
    if not (store / SCHEMA).exists():
        write_json_atomic(
            store / SCHEMA,
            {"schema_version": HISTORY_SCHEMA_VERSION, "run_key": RUN_KEY, "columns": COLUMNS},
        )
    blob = pd.util.hash_pandas_object(new[[*RUN_KEY, "metric"]], index=False).to_numpy()
    digest = hashlib.sha256(blob.tobytes()).hexdigest()[:12]
    name = f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{digest}"
    tmp = d / f".{name}.{os.getpid()}.tmp"
    target = d / f"{name}.parquet"
    new.reset_index(drop=True).to_parquet(tmp, index=False)
    try:
        os.link(tmp, target)  # never replaces a file already there
    except FileExistsError:
        pass  # the same rows, added by a concurrent addition a moment ago
    finally:
        tmp.unlink(missing_ok=True)
    return {"added_runs": runs, "added_rows": len(new), "file": str(target)}
