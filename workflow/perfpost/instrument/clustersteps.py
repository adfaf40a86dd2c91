"""A cluster's life during a run (an experiment's ``cluster_steps``, ``daemon_metrics`` and
``until``): one role instance stopped, killed, started, restarted or wiped at a moment of the
run; any metric a daemon serves (a JMX bean's attribute, a Prometheus sample) read as a
metric of the run; and a bound on one of them that ends a run whose tool only waits.

Steps ``at: before`` run in order once the run is prepared, before it measures; the others
at their second into the measured step, counted from the moment the host's line says its
tools started, from a thread of their own. Each is recorded with
its epoch and, once the measurement's start is known, its offset from it (``steps`` in the
record). A step that fails fails the run with its reason; the steps after it are not done.
The actions themselves are :mod:`perfpost.clusters.actions`, on the deployment the cell
holds, whose state is saved as daemons change (:func:`perfpost.run.deploy.live`).

Daemon metrics are read from this machine over each daemon's HTTP port, summed over the
role's instances that answer: at the measured step's start and end, :data:`SETTLE` beyond
each where a change is asked (``value`` is the end's, ``delta`` the difference, ``rate`` the
difference per second of the measured step, as its host timed it, or of the time to the
bound in a run that waits for one).
"""

from __future__ import annotations

import json
import re
import shlex
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote

from perfpost.clusters.metrics import values as bean_values
from perfpost.errors import ConfigError
from perfpost.instrument.beside import Beside, Cell
from perfpost.tools.base import Metric
from perfpost.tools.wait import BOUNDS as _BOUNDS
from perfpost.tools.wait import bound_text

BEFORE = "before"
# With every daemon of the cluster stopped, after its start laid out its directories and
# before the run's other steps: data made offline (vapor cgscm, cgom, cgdn), then the
# daemons started again and the cluster ready.
OFFLINE = "offline"
# What can be done with the daemons down: perfpost stops and starts them around it.
OFFLINE_ACTIONS = ("run", "wipe")
ALL = "all"  # a step's instance: each of the role's, in order
READY_TIMEOUT = 300.0  # seconds the cluster may take to be ready again after offline steps
READ_TIMEOUT = 5.0
# Hadoop daemons publish their metrics once a period (1 s in the clusters perfpost deploys,
# lifecycle.METRICS2): a counter read right after the run can miss its last second (a
# Prometheus page read at the end of a freon run of 60 keys said 51). A change is read one
# period and a half after the step on either side.
SETTLE = 1.5
_QUOTED = r'"(?:[^"\\]|\\.)*"'
_PROM = re.compile(rf"^([A-Za-z_:][\w:]*)(\{{(?:[^\"}}]|{_QUOTED})*\}})?[ \t]+(\S+)", re.M)
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def _unit(unit: str) -> tuple[str, float]:
    from perfpost.tools.command.metrics import UNITS

    base, factor = UNITS[unit]
    return base, float(factor)


def settings(exp: Any, specs: Mapping[str, list[dict[str, Any]]], where: str) -> dict[str, Any]:
    """The experiment's ``cluster_steps``, ``daemon_metrics`` and ``until`` checked against
    the clusters its cells run on (``specs``: cell id -> ClusterSpec dicts) and normalised;
    empty when it has none."""
    steps, metrics, until = exp.cluster_steps or [], exp.daemon_metrics or {}, exp.until
    trace = exp.daemon_trace
    if exp.tool == "wait" and not until:
        raise ConfigError(f"{where}.until", "tool wait waits for an `until` bound: give one")
    if until and exp.tool != "wait":
        raise ConfigError(
            f"{where}.until", f"ends a run whose tool is `wait` (this experiment's is {exp.tool})"
        )
    if not (steps or metrics or until or trace):
        return {}
    if not specs:
        given = {"cluster_steps": steps, "daemon_metrics": metrics, "until": until}
        first = next((k for k, v in given.items() if v), "daemon_trace")
        raise ConfigError(f"{where}.{first}", "the experiment runs on no cluster (`cluster:`)")
    default = exp.cluster if isinstance(exp.cluster, str) else (exp.cluster or [None])[0]

    def roles_of(name: str, place: str, role: str) -> list[int]:
        counts = []
        for cell, cs in specs.items():
            found = [c for c in cs if c["name"] == name]
            if not found:
                raise ConfigError(
                    f"{place}.cluster",
                    f"cell {cell} runs on no cluster {name!r} (it runs on "
                    f"{', '.join(c['name'] for c in cs)})",
                )
            roles = found[0]["roles"]
            if role not in roles:
                raise ConfigError(
                    f"{place}.role",
                    f"cluster {name!r} ({found[0]['kind']}) has no role {role!r} "
                    f"(roles: {', '.join(roles)})",
                )
            counts.append(len(roles[role]))
        return counts

    out_steps = []
    for i, s in enumerate(steps):
        place = f"{where}.cluster_steps[{i}]"
        name = s.get("cluster") or default
        fewest = min(roles_of(name, place, s["role"]))
        given = s.get("instance", 0)
        instance: int | str = ALL if given == ALL else int(given)
        if instance != ALL and int(instance) >= fewest:
            raise ConfigError(
                f"{place}.instance",
                f"cluster {name!r} has {fewest} {s['role']} instance(s): instance {instance} "
                "is not one (0 is the first)",
            )
        if (s["do"] == "run") != bool(s.get("command")):
            raise ConfigError(
                f"{place}.command",
                "a run step names its command"
                if s["do"] == "run"
                else f"only a run step has a command (this one does {s['do']})",
            )
        at = s.get("at", BEFORE)
        if at == OFFLINE and s["do"] not in OFFLINE_ACTIONS:
            raise ConfigError(
                f"{place}.do",
                f"with the cluster stopped a step can {' or '.join(OFFLINE_ACTIONS)}, not "
                f"{s['do']}: perfpost stops every daemon before the offline steps and starts "
                "them again after",
            )
        out_steps.append(
            {
                "do": s["do"],
                "cluster": name,
                "role": s["role"],
                "instance": instance,
                "at": at if at in (BEFORE, OFFLINE) else float(at),
                **({"command": str(s["command"])} if s.get("command") else {}),
            }
        )
    out_metrics: dict[str, Any] = {}
    for name, m in metrics.items():
        place = f"{where}.daemon_metrics.{name}"
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", name):
            raise ConfigError(place, "a metric's name is a word: letters, digits and _")
        cluster = m.get("cluster") or default
        roles_of(cluster, place, m["role"])
        if ("jmx" in m) == ("prometheus" in m):
            raise ConfigError(place, "give one of jmx (with attribute) or prometheus")
        if "jmx" in m and not m.get("attribute"):
            raise ConfigError(f"{place}.attribute", "a JMX bean's metric names its attribute")
        try:
            base, factor = _unit(str(m["unit"]))
        except KeyError:
            raise ConfigError(f"{place}.unit", f"unknown unit {m['unit']!r}") from None
        if m["as"] == "rate" and base not in ("B/s", "1/s"):
            raise ConfigError(
                f"{place}.unit", f"a rate's unit is a rate (B/s, MB/s, 1/s), not {m['unit']!r}"
            )
        out_metrics[name] = {
            "cluster": cluster,
            "role": m["role"],
            **({"jmx": m["jmx"], "attribute": m["attribute"]} if "jmx" in m else {}),
            **({"prometheus": m["prometheus"]} if "prometheus" in m else {}),
            "as": m["as"],
            "unit": base,
            "factor": factor,
            **({"better": m["better"]} if m.get("better") else {}),
        }
    out: dict[str, Any] = {"steps": out_steps, "metrics": out_metrics}
    if trace:
        place = f"{where}.daemon_trace"
        name = trace.get("cluster") or default
        counts = roles_of(name, place, trace["role"])
        if trace.get("instance") is not None and int(trace["instance"]) >= min(counts):
            raise ConfigError(
                f"{place}.instance",
                f"cluster {name!r} has {min(counts)} {trace['role']} instance(s)",
            )
        out["trace"] = {
            "cluster": name,
            "role": trace["role"],
            "instance": trace.get("instance"),
            "command": trace.get("command", "strace -f -c"),
        }
    if until:
        bounds = [k for k, _ in _BOUNDS if k in until]
        if until["metric"] not in out_metrics:
            raise ConfigError(
                f"{where}.until.metric",
                f"{until['metric']!r} is not one of daemon_metrics ({', '.join(out_metrics)})",
            )
        if len(bounds) != 1:
            raise ConfigError(f"{where}.until", "give one bound: below, above or equals")
        out["until"] = {
            "metric": until["metric"],
            bounds[0]: float(until[bounds[0]]),
            "every": float(until.get("every", 1)),
            **({"once_above": float(until["once_above"])} if "once_above" in until else {}),
            **({"hold": float(until["hold"])} if "hold" in until else {}),
        }
    return out


def met(until: Mapping[str, Any], value: float) -> bool:
    """Whether ``value`` meets the ``until`` bound."""
    if "below" in until:
        return value < until["below"]
    if "above" in until:
        return value > until["above"]
    return value == until["equals"]


def prometheus_sum(text: str, wanted: str) -> float | None:
    """The sum of the samples of ``wanted`` (a name, or ``name{label="v",...}``: samples
    with those labels) in a Prometheus text page; None when it has none. A label's value
    may hold newlines (an OM's ``ratisevents``): samples are found in the whole text."""
    name, _, labels = wanted.partition("{")
    want = dict(_LABEL.findall(labels))
    total, seen = 0.0, False
    for m in _PROM.finditer(text):
        if m.group(1) != name:
            continue
        have = dict(_LABEL.findall(m.group(2) or ""))
        if any(have.get(k) != v for k, v in want.items()):
            continue
        try:
            total += float(m.group(3))
            seen = True
        except ValueError:
            continue
    return total if seen else None


def jmx_sum(beans: list[dict[str, Any]], pattern: str, attribute: str) -> float | None:
    """The sum of ``attribute`` over the beans whose name matches ``pattern``; None when none
    has it as a number."""
    found = bean_values(beans, pattern, attribute)
    return sum(found) if found else None


def _get(url: str) -> str:
    req = urllib.request.Request(url, headers={"Accept": "application/json, text/plain"})
    with urllib.request.urlopen(req, timeout=READ_TIMEOUT) as resp:
        return resp.read().decode(errors="replace")


class ClusterLife(Beside):
    """The steps, the daemon metrics and the ``until`` watcher of one run."""

    name = "cluster_steps"

    def __init__(self, life: Mapping[str, Any]) -> None:
        self.steps = list(life.get("steps", []))
        self.metrics = dict(life.get("metrics", {}))
        self.until = dict(life.get("until") or {})
        self.done: list[dict[str, Any]] = []
        self.failure: str | None = None
        self.kinds: dict[str, Any] = {}
        self.first: dict[str, float] | None = None  # the readings at the step's start
        self.last: tuple[float, dict[str, float]] | None = None
        self.read_errors: list[str] = []
        self.reached: float | None = None
        self.armed_at: float | None = None
        self.last_reading: tuple[float, float | None] | None = None
        self.lock = threading.Lock()
        self.halt = threading.Event()
        # Set once the measured step's tools started on the host (or it ended): timed steps
        # count their seconds from there, not from perfpost's launch of the step, which
        # other companions' starts and the host's round trip can delay by seconds.
        self.going = threading.Event()
        self.thread: threading.Thread | None = None
        self.t0 = 0.0

    # -- steps --------------------------------------------------------------------------
    def _kind(self, cell: Cell, name: str) -> Any:
        if name not in self.kinds:
            self.kinds[name] = cell.cluster_kind(name)
        return self.kinds[name]

    def _do(self, cell: Cell, step: Mapping[str, Any]) -> bool:
        from perfpost.clusters.actions import act

        kind = self._kind(cell, step["cluster"])
        if step["instance"] == ALL:
            count = len(kind.dep.spec.roles.get(step["role"]) or [])
            # In order, and none after one that failed.
            return all(self._do(cell, {**step, "instance": i}) for i in range(count))
        do, role, index, command = step["do"], step["role"], step["instance"], step.get("command")
        return self._note(step, lambda: act(kind, do, role, index, command=command or ""))

    def _note(self, step: Mapping[str, Any], action: Callable[[], dict[str, str]]) -> bool:
        """``action()`` done and recorded as ``step``: what it did, or why it could not."""
        begun = time.time()
        entry = {**step, "epoch": begun}
        try:
            entry.update(action())
            entry["status"] = "done"
        except Exception as e:  # the run fails with it; the steps after it are not done
            entry["status"] = "failed"
            entry["reason"] = str(e)
            with self.lock:
                if self.failure is None:
                    self.failure = (
                        f"cluster step {step['do']} {step['role']} {step['instance']} "
                        f"({step['cluster']}) failed: {e}"
                    )
        entry["took"] = time.time() - begun
        with self.lock:
            self.done.append(entry)
        return entry["status"] == "done"

    def _offline(self, cell: Cell, steps: list[dict[str, Any]]) -> bool:
        """Every daemon of the steps' clusters stopped, the steps done in order, every
        daemon started again and each cluster ready: what an engineer does to make data
        offline into the daemons' own directories."""
        from perfpost.clusters import actions

        names = list(dict.fromkeys(s["cluster"] for s in steps))

        def whole(name: str, do: str) -> bool:
            kind = self._kind(cell, name)
            step = {"do": do, "cluster": name, "role": "cluster", "instance": ALL, "at": OFFLINE}
            if do == "stop":
                return self._note(step, lambda: {"did": actions.stop_all(kind)})
            return self._note(step, lambda: {"did": actions.start_all(kind, READY_TIMEOUT)})

        return (
            all(whole(n, "stop") for n in names)
            and all(self._do(cell, s) for s in steps)
            and all(whole(n, "start") for n in names)
        )

    def start(self, cell: Cell) -> None:
        offline = [s for s in self.steps if s["at"] == OFFLINE]
        if offline and not self._offline(cell, offline):
            self._give_up(cell)
            return
        for s in [s for s in self.steps if s["at"] == BEFORE]:
            if not self._do(cell, s):
                self._give_up(cell)
                return
        if self._changes():
            time.sleep(SETTLE)
        if self.metrics:
            self.first = self._read(cell)
        self.t0 = time.time()
        timed = sorted(
            (s for s in self.steps if s["at"] not in (BEFORE, OFFLINE)), key=lambda s: s["at"]
        )
        if timed or self.until:
            cell.when_measuring(self._going)
            self.thread = threading.Thread(target=self._watch, args=(cell, timed), daemon=True)
            self.thread.start()

    def _going(self, epoch: float) -> None:
        # This machine's clock when the host's line came: a step is never early on the
        # host's, whatever the two clocks say.
        self.t0 = time.time()
        self.going.set()

    def _watch(self, cell: Cell, timed: list[dict[str, Any]]) -> None:
        self.going.wait()
        for s in timed:
            if self.halt.wait(max(0.0, self.t0 + s["at"] - time.time())):
                return
            if not self._do(cell, s):
                self._give_up(cell)
                return
        if not self.until:
            return
        every = self.until["every"]
        name = self.until["metric"]
        # With once_above, the bound counts once the metric has read above it (the SCM's
        # under-replicated count is 0 until its replication manager has seen the loss).
        armed = "once_above" not in self.until
        since: float | None = None
        while not self.halt.is_set():
            now = time.time()
            value = self._read(cell, [name]).get(name)
            self.last_reading = (now - self.t0, value)
            if value is not None and not armed and value > self.until["once_above"]:
                armed = True
                self.armed_at = now
            if value is not None and armed and met(self.until, value):
                # With hold, the bound must keep holding that long (a second wave of
                # under-replicated containers, found by the SCM seconds after the first);
                # the run's time is the first reading of the readings that held.
                since = now if since is None else since
                if now - since >= self.until.get("hold", 0.0):
                    self.reached = since
                    self._end_wait(cell)
                    return
            else:
                since = None
            self.halt.wait(max(0.0, every - (time.time() - now)))

    def _give_up(self, cell: Cell) -> None:
        """A step failed: a wait has nothing left to wait for (the run fails with the step's
        reason), so it ends now rather than at its timeout."""
        if self.until:
            self._end_wait(cell)

    def _end_wait(self, cell: Cell) -> None:
        from perfpost.tools import wait

        got = cell.host.run(f"touch -- {shlex.quote(wait.flag(cell.record['workdir']))}", 30.0)
        if got.exit_code != 0:
            with self.lock:
                self.failure = f"until: the run's end could not be signalled: {got.stderr}"

    # -- daemon metrics -----------------------------------------------------------------
    def _read(self, cell: Cell, names: list[str] | None = None) -> dict[str, float]:
        """Each metric (``names``, default all) summed over its role's instances that
        answer; a metric none answered is missing, and why is kept."""
        out: dict[str, float] = {}
        pages: dict[str, str | None] = {}
        for name in names or list(self.metrics):
            m = self.metrics[name]
            kind = self._kind(cell, m["cluster"])
            total, seen, why = 0.0, 0, []
            for i in range(len(kind.dep.spec.roles[m["role"]])):
                base = kind.http_url(m["role"], i)
                if base is None:
                    why.append(f"{m['role']} {i} serves no HTTP port perfpost knows")
                    continue
                url = (
                    f"{base}/jmx?qry={quote(m['jmx'], safe='=:,*')}"
                    if "jmx" in m
                    else f"{base}/prom"
                )
                if url not in pages:
                    try:
                        pages[url] = _get(url)
                    except (OSError, urllib.error.URLError, ValueError) as e:
                        pages[url] = None
                        why.append(f"{url}: {e}")
                text = pages[url]
                if text is None:
                    continue
                if "jmx" in m:
                    try:
                        beans = json.loads(text).get("beans") or []
                    except ValueError:
                        beans = []
                    v = jmx_sum(beans, m["jmx"], m["attribute"])
                else:
                    v = prometheus_sum(text, m["prometheus"])
                if v is None:
                    what = f"{m['jmx']} {m['attribute']}" if "jmx" in m else m["prometheus"]
                    why.append(f"{url} has no {what}")
                    continue
                total += v
                seen += 1
            if seen:
                out[name] = total
            elif why:
                self.read_errors.append(f"{name}: {why[-1]}")
        return out

    def _changes(self) -> bool:
        return any(m["as"] != "value" for m in self.metrics.values())

    def stop(self, cell: Cell) -> None:
        self.halt.set()
        self.going.set()
        if self.thread is not None:
            self.thread.join(timeout=120.0)
        if self.metrics and self.first is not None:
            if self._changes():
                time.sleep(SETTLE)
            self.last = (time.time(), self._read(cell))
        record = cell.record
        if self.done:
            record["cluster_steps"] = [dict(d) for d in self.done]
        if self.until:
            info: dict[str, Any] = {**self.until, "met": self.reached is not None}
            if self.last_reading is not None:
                info["last_reading"] = {"at": self.last_reading[0], "value": self.last_reading[1]}
            record["until"] = info

    def collect(
        self, cell: Cell, texts: Mapping[str, str], parsed: list[Metric]
    ) -> tuple[list[Metric], str | None]:
        record = cell.record
        start = record.get("start_epoch")
        for d in record.get("cluster_steps", []):
            if start is not None:
                d["offset"] = d["epoch"] - start
        if self.failure is not None:
            return [], self.failure
        out: list[Metric] = []
        if self.until:
            if self.reached is None:
                last = self.last_reading
                seen = (
                    "no reading" if last is None else f"last reading {last[1]} at {last[0]:.1f} s"
                )
                return [], (
                    f"until: {self.until['metric']} never read {bound_text(self.until)} ({seen})"
                )
            at = self.reached - (start if start is not None else self.t0)
            record["until"]["at"] = at
            if self.armed_at is not None:
                record["until"]["armed_at"] = self.armed_at - (
                    start if start is not None else self.t0
                )
            out.append(Metric("until_time", at, "s"))
        if self.metrics:
            first = self.first or {}
            last = self.last[1] if self.last else {}
            # A rate is over the measured step, as the host timed it; a run that waited for a
            # bound, over its time to the bound: the hold after it is no part of the work (a
            # re-replication's bytes over its whole wait would be diluted by it).
            end = record.get("end_epoch")
            span = (end - start) if start is not None and end is not None else 0.0
            over = "the measured step"
            if self.until and start is not None:
                span, over = record["until"]["at"], "the time to the bound"
            values: dict[str, float] = {}
            for name, m in self.metrics.items():
                if name not in last or (m["as"] != "value" and name not in first):
                    why = next((e for e in self.read_errors if e.startswith(f"{name}:")), "")
                    return out, f"daemon metric {why or name + ': not read'}"
                if m["as"] == "value":
                    v = last[name]
                elif m["as"] == "delta":
                    v = last[name] - first[name]
                else:
                    v = (last[name] - first[name]) / span if span > 0 else float("nan")
                values[name] = v * m["factor"]
                out.append(Metric(name, values[name], m["unit"]))
            record["daemon_metrics"] = {
                "start": first,
                "end": last,
                "seconds": span,
                "over": over,
                "values": values,
            }
        return out, None

    def cleanup(self, cell: Cell) -> None:
        self.halt.set()
        for kind in self.kinds.values():
            try:
                kind.dep.close()
            except Exception:
                pass
