"""What changed between two runs besides the code: their environments, fact by fact.

A performance difference between two runs of a matrix means something only when what was
meant to change (the code, or one setting) is all that changed. Each run left beside its tidy
table (``results/<experiment>/``) the environment of every host (``env/<host>.json``,
:mod:`perfpost.run.envinfo`), the tool versions its cells ran (``cells.csv``, from the
records) and the clusters they ran on (``results/clusters/<id>/start-<n>/state.json``).
:func:`differences` compares them as named facts; :func:`markdown` and :func:`warning` say
what differs for ``perfpost compare``.

Facts and their names (``--changed NAME`` names one fact, or every fact under ``NAME.``):

- per host: ``hostname``, ``vendor``, ``kernel``, ``os``, ``cpu.model``, ``cpu.sockets``,
  ``cpu.cores``, ``cpu.threads``, ``memory`` (bytes), ``disk.<name>.model``,
  ``disk.<name>.size`` (bytes), ``disk.<name>.rotational``, ``disk.<name>.transport``, the
  sysctls by their own names (``vm.dirty_ratio``, ...), ``java`` (``java -version``),
  ``ozone`` and ``hadoop`` (the release the host's own ``ozone``/``hadoop`` command names),
  ``tool_version`` (what the cells' tool printed), and ``host`` itself (a host only one run has);
- per cluster (the config's name for it), for the whole run: ``cluster.<name>`` (a cluster
  only one run has), ``cluster.<name>.kind``, ``cluster.<name>.version`` (its release),
  ``cluster.<name>.roles.<role>`` (its hosts), ``cluster.<name>.jvm.<role>``,
  ``cluster.<name>.env.<VAR>`` and ``cluster.<name>.conf.<key>`` (site keys not at the
  release's default, as the post lists them: perfpost's own addresses, ports and directories
  left out). A key that holds a secret (:func:`perfpost.hostenv.secret_setting`) is compared
  by the fingerprint its run kept of it (:class:`Masked`): it is said to have changed, never
  shown.

perfpost's own revision is the code under test; it is not among the facts.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from perfpost import hostenv, paths
from perfpost.analysis.report import clusters_of
from perfpost.clusters.base import release
from perfpost.run.envinfo import ENV_SCHEMA_VERSION
from perfpost.units import format_bytes

# How a fact absent from one run reads: a host or cluster it did not have, a site key left at
# the release's default.
ABSENT, PRESENT, DEFAULT = "absent", "present", "(default)"
BYTE_FACTS = ("memory", ".size")  # fact names (or their ends) whose values are bytes


@dataclass(frozen=True)
class Masked:
    """A secret setting's value as a run kept it: a keyed fingerprint
    (:func:`perfpost.hostenv.fingerprint`, ``<key id>:<digest>``), which tells two values
    apart without either being known. Fingerprints made with another key (on another
    machine) cannot be compared."""

    fingerprint: str

    @property
    def key(self) -> str:
        return self.fingerprint.partition(":")[0]

    def __str__(self) -> str:
        return "(a secret, not shown)"


@dataclass
class Run:
    """What one run recorded of its environment, as facts."""

    where: str  # the experiment directory the tidy table is in
    hosts: dict[str, dict[str, Any]] = field(default_factory=dict)  # host -> env facts
    tools: dict[str, dict[str, Any]] = field(default_factory=dict)  # host -> cells' facts
    clusters: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # name -> starts
    unread: dict[str, str] = field(default_factory=dict)  # host (or "") -> why no env facts
    cells: bool = False  # whether its cells.csv was read (tool versions, clusters)
    all_clusters: bool = True  # whether the state of every cluster it ran on was read
    notes: list[str] = field(default_factory=list)  # what else could not be read


def host_facts(env: dict[str, Any]) -> dict[str, Any]:
    """An ``env/<host>.json`` as named facts, in the order the post lists them."""
    cpu = env.get("cpu") or {}
    facts: dict[str, Any] = {
        "hostname": env.get("hostname"),
        "vendor": env.get("vendor"),
        "kernel": env.get("kernel"),
        "os": env.get("os"),
        **{f"cpu.{k}": cpu.get(k) for k in ("model", "sockets", "cores", "threads")},
        "memory": env.get("memory_bytes"),
    }
    for disk in env.get("disks") or []:
        name = disk.get("name")
        facts[f"disk.{name}.model"] = disk.get("model")
        facts[f"disk.{name}.size"] = disk.get("size_bytes")
        facts[f"disk.{name}.rotational"] = disk.get("rotational")
        facts[f"disk.{name}.transport"] = disk.get("transport")
    facts.update(sorted((env.get("sysctl") or {}).items()))
    facts["java"] = env.get("java")
    for tool, key in (("ozone", "ozone_version"), ("hadoop", "hadoop_version")):
        text = env.get(key)
        facts[tool] = release(text, text.strip().splitlines()[0]) if text else None
    return facts


def _cluster_facts(entry: dict[str, Any]) -> dict[str, Any]:
    """One cluster start (:func:`perfpost.analysis.report.clusters_of`) as named facts; its
    own id in a configured value (``{id}`` in a directory) reads as ``{id}`` again, since any
    other change of configuration changes the id."""
    name, ident = entry["name"], entry["id"]
    version = entry.get("version") or ""
    facts: dict[str, Any] = {
        f"cluster.{name}.kind": entry["kind"],
        f"cluster.{name}.version": release(version, version.strip()) or None,
    }
    for group in ("roles", "jvm", "prefix", "env"):
        for key, value in sorted((entry.get(group) or {}).items()):
            facts[f"cluster.{name}.{group}.{key}"] = value
    for key in sorted(entry.get("changed") or [], key=lambda k: k["key"]):
        fact = f"cluster.{name}.conf.{key['key']}"
        if hostenv.secret_setting(key["key"]):
            # A run of an older perfpost kept the value itself: it is fingerprinted here.
            facts[fact] = Masked(key.get("secret") or hostenv.fingerprint(str(key["value"])))
        else:
            facts[fact] = str(key["value"]).replace(ident, "{id}")
    return facts


def read_run(tidy_path: str | Path) -> Run:
    """The environment of the run whose tidy table is ``tidy_path``, from the files beside it
    (``results/<experiment>/``); what it lacks is said in ``unread`` and ``notes``."""
    exp_dir = Path(tidy_path).parent
    run = Run(where=str(exp_dir))
    env_dir = exp_dir / "env"
    cells_csv = exp_dir / Path(paths.CELLS_CSV).name
    env_files = sorted(env_dir.glob("*.json")) if env_dir.is_dir() else []
    cells = None
    if cells_csv.is_file():
        cells = pd.read_csv(cells_csv, dtype=str, keep_default_na=False)
    if not env_files and cells is None:
        run.unread[""] = f"no {env_dir}/<host>.json nor {cells_csv} beside its table"
        return run
    hosts = [p.stem for p in env_files]
    if cells is not None and "host" in cells:
        hosts += [h for h in dict.fromkeys(cells["host"]) if h and h not in hosts]
    for host in sorted(hosts):
        path = env_dir / f"{host}.json"
        try:
            env = json.loads(path.read_text())
        except FileNotFoundError:
            run.unread[host] = f"no {path}"
            continue
        except (OSError, ValueError) as e:
            run.unread[host] = f"{path}: not readable as JSON ({e})"
            continue
        if not isinstance(env, dict) or env.get("schema_version") != ENV_SCHEMA_VERSION:
            version = env.get("schema_version") if isinstance(env, dict) else None
            run.unread[host] = (
                f"{path}: environment schema version {version}, expected {ENV_SCHEMA_VERSION}"
            )
        elif env.get("error"):
            run.unread[host] = f"its capture failed ({env['error']})"
        else:
            run.hosts[host] = host_facts(env)
    if cells is None:
        run.notes.append(f"no {cells_csv}: tool versions and clusters not compared")
        return run
    run.cells = True
    if {"host", "tool_version"} <= set(cells.columns):
        for host, rows in cells.groupby("host", sort=True):
            # Cells that failed before the tool said its version say nothing of it.
            versions = sorted({v for v in rows["tool_version"] if v})
            run.tools[str(host)] = {"tool_version": "; ".join(versions)} if versions else {}
    # The workflow's directory: clusters_of finds results/clusters/ under it.
    root = exp_dir.resolve().parent.parent
    for entry in clusters_of(cells, root):
        if entry.get("error"):
            run.notes.append(f"cluster {entry['ref']}: {entry['error']}")
            run.all_clusters = False
            continue
        run.clusters.setdefault(entry["name"], []).append(_cluster_facts(entry))
    return run


def _joined(values: Iterable[Any]) -> Any:
    """The value of a fact over the starts of a cluster: itself when they agree."""
    distinct = sorted(set(values), key=lambda v: (v is None, str(v)))
    return distinct[0] if len(distinct) == 1 else "; ".join(_show(v) for v in distinct)


def _run_wide(run: Run, name: str, facts: Sequence[str]) -> dict[str, Any]:
    starts = run.clusters[name]
    out: dict[str, Any] = {}
    for fact in facts:
        fill = DEFAULT if ".conf." in fact else None
        out[fact] = _joined(s.get(fact, fill) for s in starts)
    return out


def expected(fact: str, changed: Sequence[str]) -> bool:
    """Whether ``--changed`` names ``fact``: the fact itself or a prefix ending at a dot
    (``cpu`` names ``cpu.model``, ``cluster.ozone`` every fact of that cluster)."""
    return any(fact == key or fact.startswith(key.rstrip(".") + ".") for key in changed)


def _compare(
    out: list[dict[str, Any]],
    host: str | None,
    old: dict[str, Any],
    new: dict[str, Any],
    changed: Sequence[str],
) -> None:
    for fact in [*old, *(f for f in new if f not in old)]:
        a, b = old.get(fact), new.get(fact)
        if a != b:
            row = {"fact": fact, "host": host, "old": a, "new": b}
            out.append({**row, "expected": expected(fact, changed)})


def differences(base: Run, cand: Run, changed: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Every fact that differs, as ``{fact, host, old, new, expected}``: per host (matched by
    name; ``host`` for one only a run has), then the clusters' (``host`` None). ``expected``
    says whether ``changed`` names it. Facts a run could not read are left out: its
    ``unread`` and ``notes`` say so."""
    out: list[dict[str, Any]] = []
    if "" in base.unread or "" in cand.unread:
        return out  # a run with nothing recorded: no fact of it to compare
    hosts = {h for r in (base, cand) for h in (*r.hosts, *r.tools, *r.unread) if h}
    for host in sorted(hosts):
        sides = [host in r.hosts or host in r.tools or host in r.unread for r in (base, cand)]
        if sides != [True, True]:
            old, new = (PRESENT, ABSENT) if sides[0] else (ABSENT, PRESENT)
            out.append(
                {
                    "fact": "host",
                    "host": host,
                    "old": old,
                    "new": new,
                    "expected": expected("host", changed),
                }
            )
            continue
        if host in base.hosts and host in cand.hosts:
            _compare(out, host, base.hosts[host], cand.hosts[host], changed)
        if host in base.tools and host in cand.tools:
            said = base.tools[host].keys() & cand.tools[host].keys()  # what both runs said
            told, tnew = ({k: r.tools[host][k] for k in sorted(said)} for r in (base, cand))
            _compare(out, host, told, tnew, changed)
    clusters = {*base.clusters, *cand.clusters} if base.cells and cand.cells else set()
    for name in sorted(clusters):
        if name not in base.clusters or name not in cand.clusters:
            if not (base.all_clusters and cand.all_clusters):
                continue  # perhaps the one whose state is missing: its note says so
            old, new = (PRESENT, ABSENT) if name in base.clusters else (ABSENT, PRESENT)
            fact = f"cluster.{name}"
            row = {"fact": fact, "host": None, "old": old, "new": new}
            out.append({**row, "expected": expected(fact, changed)})
            continue
        facts = list(
            dict.fromkeys(f for r in (base, cand) for start in r.clusters[name] for f in start)
        )
        _compare(out, None, _run_wide(base, name, facts), _run_wide(cand, name, facts), changed)
    return out


def _show(value: Any, fact: str = "") -> str:
    if value is None:
        return "(none)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) and (fact == BYTE_FACTS[0] or fact.endswith(BYTE_FACTS[1])):
        return f"{value} B ({format_bytes(value)})"
    return " / ".join(ln.strip() for ln in str(value).splitlines() if ln.strip()) or '""'


def _change(d: dict[str, Any]) -> str:
    old, new = d["old"], d["new"]
    if isinstance(old, Masked) and isinstance(new, Masked):
        if old.key != new.key:
            return (
                "perhaps changed (a secret, fingerprinted with another machine's key: not "
                "comparable; neither value is shown)"
            )
        return "changed (a secret; neither value is shown)"
    return f"{_show(old, d['fact'])} -> {_show(new, d['fact'])}"


def _where(d: dict[str, Any]) -> str:
    return f" on {d['host']}" if d["host"] else ""


def warning(diffs: Sequence[dict[str, Any]], changed: Sequence[str] = ()) -> str | None:
    """The one line that says something besides the thing under test changed, or None."""
    other = [d for d in diffs if not d["expected"]]
    if not other:
        return None
    listed = "; ".join(f"`{d['fact']}`{_where(d)} ({_change(d)})" for d in other)
    named = "what --changed names" if changed else "the code"
    return (
        f"Warning: besides {named}, {len(other)} fact{'' if len(other) == 1 else 's'} of the "
        f"environment changed: {listed}. A difference in the table may come from "
        f"{'it' if len(other) == 1 else 'them'}; name what you meant to change with --changed."
    )


def markdown(
    diffs: Sequence[dict[str, Any]],
    base: Run,
    cand: Run,
    changed: Sequence[str] = (),
    labels: tuple[str, str] = ("base", "candidate"),
) -> str:
    """The differences per host, old -> new; one line when there are none; then what could
    not be compared and the warning (:func:`warning`)."""
    head = f"Environment, {labels[0]} ({base.where}) -> {labels[1]} ({cand.where})"
    missing = []
    for label, run in zip(labels, (base, cand), strict=True):
        for host, why in sorted(run.unread.items()):
            who = f"{host}: environment" if host else "environment"
            missing.append(f"- {who} not recorded in {label}: {why}")
        missing += [f"- {label}: {note}" for note in run.notes]
    nothing = "" in base.unread or "" in cand.unread  # a run with no environment at all
    if nothing:
        lines = [f"{head}: not compared.", "", *missing]
    elif not diffs:
        scope = "what both runs recorded" if missing else "the environment"
        hosts = sorted({h for r in (base, cand) for h in (*r.hosts, *r.tools) if h})
        clusters = sorted({*base.clusters, *cand.clusters})
        what = [f"host{'' if len(hosts) == 1 else 's'} {', '.join(hosts)}"] if hosts else []
        if clusters:
            what.append(f"cluster{'' if len(clusters) == 1 else 's'} {', '.join(clusters)}")
        lines = [f"{head}: no difference in {scope} ({'; '.join(what) or 'nothing recorded'})."]
    else:
        lines = [f"{head}:", ""]
        by_host: dict[str | None, list[dict[str, Any]]] = {}
        for d in diffs:
            by_host.setdefault(d["host"], []).append(d)
        for host, found in by_host.items():
            if host and len(found) == 1 and found[0]["fact"] == "host":
                side = labels[0] if found[0]["old"] == PRESENT else labels[1]
                mark = " (named by --changed)" if found[0]["expected"] else ""
                lines.append(f"- {host}: only in {side}{mark}")
                continue
            lines.append(f"- {host}:" if host else "- clusters:")
            for d in found:
                mark = " (named by --changed)" if d["expected"] else ""
                lines.append(f"  - `{d['fact']}`: {_change(d)}{mark}")
    if missing and not nothing:
        lines += ["", "Not compared:", "", *missing]
    facts = [d["fact"] for d in diffs]
    unused = [k for k in changed if not any(expected(f, [k]) for f in facts)]
    if unused:
        lines += ["", f"--changed {', '.join(unused)}: no such fact differs."]
    warn = warning(diffs, changed)
    if warn:
        lines += ["", warn]
    return "\n".join(lines) + "\n"
