"""The Byteman agent as a :class:`~perfpost.instrument.beside.Beside`: its rules checked
here and put on the host before the measured step, the JVM options that attach it added to
that step alone, and its counts (the client's, and each map task's on YARN) read back into
the record once the tool ended."""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from perfpost import instrument as byteman
from perfpost import paths, shell
from perfpost.errors import ParseError
from perfpost.instrument.beside import Beside, Cell
from perfpost.tools.base import Metric

SHORT_TIMEOUT = 60.0
TASK_WAIT = 30.0  # seconds the map tasks' counts get to arrive after the job ended
# Seconds more for the counts of attempts the job killed, once every other one arrived.
KILLED_GRACE = 3.0


class Agent(Beside):
    name = "byteman"

    def __init__(self) -> None:
        # NodeManager hosts other than the cell's own whose map tasks get the agent.
        self.task_hosts: list[Any] = []

    @staticmethod
    def _nodemanagers(cell: Cell) -> list[Any]:
        """The seats of the cell's YARN NodeManagers on hosts other than the cell's own."""
        return [
            seat
            for seat in cell.seats()
            if not seat.own
            and any(r.split(" ", 1)[-1].startswith("nodemanager") for r in seat.roles)
        ]

    def _to_nodemanagers(self, cell: Cell, home: str, texts: dict[str, str]) -> str | None:
        """The agent, its rules and the tasks' directory on every other NodeManager host, at
        the paths the cell's own host has them: the map tasks' JVM options are one string
        for all. A reason when a host cannot have them there."""
        from perfpost import deliver

        planned = cell.spec.instrument.get("planned_home", cell.spec.instrument["home"])
        for seat in self._nodemanagers(cell):
            mapping, done = deliver.deliver_for(seat.host, [planned])
            there = deliver.localize(planned, mapping) if mapping else planned
            if done:
                cell.record.setdefault("delivered", []).extend(d.record() for d in done)
            if there != home:
                return (
                    f"the Byteman agent is at {there} on {seat.name} but at {home} on "
                    f"{cell.spec.host['name']}: map tasks take one -javaagent path, so their "
                    "hosts' login users need one cache path (the inventory's `cache`)"
                )
            put = seat.host.run(shell.write_files_script(texts), SHORT_TIMEOUT)
            if put.exit_code != 0:
                return f"writing the Byteman rules on {seat.name} failed: {put.stderr}"
            self.task_hosts.append(seat)
        return None

    @staticmethod
    def _tasks(cell: Cell) -> bool:
        """The job's map tasks run in JVMs of their own (on YARN) and get the agent too."""
        return bool(cell.spec.instrument.get("tasks")) and not cell.spec.params.get("local")

    def setup(self, cell: Cell) -> str | None:
        """Check the cell's rules (here, against the tool's jars), put them on the host, and
        attach the agent to the measured step: a rule that does not compile is never run."""
        from perfpost import tools

        inst = cell.spec.instrument
        errors = byteman.check(inst["rules"], inst["check_home"], inst["classes"])
        if errors:
            more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
            return f"Byteman's rule checker: {errors[0]}{more}"
        where = byteman.host_rule_paths(inst, cell.logdir)
        texts = {}
        for rule in inst["rules"]:
            text = Path(rule["path"]).read_text()
            texts[where[rule["name"]]] = text
            cell.keep(f"rules-{Path(where[rule['name']]).name}", text)
        if self._tasks(cell):
            # The map tasks' JVMs write one file each into this directory, made here.
            texts[f"{cell.logdir}/{byteman.TASKS_DIR}/.perfpost"] = ""
        put = cell.run_step("rules", shell.write_files_script(texts), SHORT_TIMEOUT)
        if put.exit_code != 0:
            return f"writing the Byteman rules on the host failed: {put.stderr}"
        rule_paths = list(where.values())
        options = byteman.java_options(inst["home"], rule_paths, f"{cell.logdir}/{byteman.RESULT}")
        cell.record["instrument"] = {
            "agent": inst["agent"],
            "rules": [{"name": r["name"], "sha256": r["sha256"]} for r in inst["rules"]],
            "java_options": options,
        }
        jvm_var = tools.get(cell.spec.tool).JVM_OPTS_VAR
        params = byteman.attach(cell.measure_params, jvm_var, options)
        if self._tasks(cell):
            why = self._to_nodemanagers(cell, inst["home"], texts)
            if why is not None:
                return why
            out = f"{cell.logdir}/{byteman.TASKS_DIR}/{byteman.TASK_RESULT}"
            task_options = byteman.java_options(inst["home"], rule_paths, out)
            cell.record["instrument"]["task_java_options"] = task_options
            params = byteman.attach_tasks(params, task_options)
        cell.measure_params = params
        return None

    def explain(self, cell: Cell, texts: Mapping[str, str]) -> str | None:
        said = byteman.errors_in(texts)
        return f"the Byteman agent failed: {said[0]}" if said else None

    def collect(
        self, cell: Cell, texts: Mapping[str, str], parsed: list[Metric]
    ) -> tuple[list[Metric], str | None]:
        counted, why = self._counts(cell, texts)
        if why is None and self._tasks(cell):
            tasks, why = self._task_counts(cell, parsed)
            counted += tasks
        return counted, why

    def _counts(self, cell: Cell, texts: Mapping[str, str]) -> tuple[list[Metric], str | None]:
        """The agent's counts of this run as metrics, or why they cannot be trusted: Byteman
        complained in the tool's log (a rule that did not compile counts nothing), the
        helper wrote nothing (no agent attached), or calls never returned."""
        said = byteman.errors_in(texts)
        if said:
            return [], f"the Byteman agent failed: {said[0]}"
        text = cell.read_log(f"{cell.logdir}/{byteman.RESULT}", byteman.RESULT)
        if text is None:
            return [], (
                f"the Byteman agent wrote no counts ({byteman.RESULT} is missing): "
                "was it attached to the tool's JVM?"
            )
        try:
            metrics, info = byteman.parse_result(text, byteman.RESULT)
        except ParseError as e:
            return [], f"unparseable counts: {paths.RAW}/{byteman.RESULT}: {e.message}"
        # Which thread made the calls (freon's workers, a local job's map task, main).
        cell.record["instrument"].update(ops=info["ops"], threads=info["threads"])
        if info["unfinished"]:
            return metrics, (
                f"{info['unfinished']} instrumented call(s) never returned: an exit rule that "
                "did not run, or a thread still inside a call when the JVM exited"
            )
        return metrics, None

    def _task_counts(self, cell: Cell, parsed: list[Metric]) -> tuple[list[Metric], str | None]:
        """The map tasks' counts (one file per task JVM, written as it exits, which may be
        after the client saw the job end): waited for, one per launched map, for 30 s. An
        attempt the job killed (a speculative copy, ``Killed map tasks``) may have been
        stopped before its JVM started, so it may leave no file: the launched maps less the
        killed ones must all have written theirs."""
        from shlex import quote

        said = {m.name: int(m.value) for m in parsed if m.name in ("map_tasks", "map_tasks_killed")}
        launched = said.get("map_tasks")
        killed = said.get("map_tasks_killed", 0)
        kept = None if launched is None else launched - killed  # must each have written
        where = f"{cell.logdir}/{byteman.TASKS_DIR}"
        hosts = [cell.host, *(seat.host for seat in self.task_hosts)]
        deadline = time.monotonic() + TASK_WAIT
        enough_at = None  # when every attempt the job kept had written
        while True:
            found = []  # (host, file name): each NodeManager host's tasks wrote theirs there
            for host in hosts:
                got = host.run(f"ls -1 -- {quote(where)} 2>/dev/null; true", SHORT_TIMEOUT)
                found += [(host, n) for n in sorted(got.stdout.split()) if n.endswith(".json")]
            now = time.monotonic()
            if kept is not None and len(found) >= kept and enough_at is None:
                enough_at = now
            if (
                (launched is not None and len(found) >= launched)
                or (enough_at is not None and now - enough_at >= KILLED_GRACE)
                or now > deadline
            ):
                break
            time.sleep(1.0)
        texts: dict[str, Any] = {}
        for host, name in found:
            text = cell.read_log(f"{where}/{name}", f"task-{name}", host)
            if text is not None:
                texts[name] = text
        if not texts or (kept is not None and len(texts) < kept):
            of = "?" if launched is None else str(launched)
            if killed:
                of += f" launched map tasks ({killed} killed by the job, which may not write)"
            else:
                of += " map tasks"
            return [], (
                f"counts of {len(texts)} of {of} arrived in {where} on the NodeManagers' "
                "hosts: could the tasks' JVMs load the agent and write there (as the "
                "NodeManager's user)?"
            )
        try:
            metrics, info = byteman.merge_tasks(texts)
        except ParseError as e:
            return [], f"unparseable map task counts: {e}"
        cell.record["instrument"]["tasks"] = info["tasks"]
        if info["unfinished"]:
            return metrics, f"{info['unfinished']} instrumented call(s) in map tasks never returned"
        return metrics, None

    def cleanup(self, cell: Cell) -> None:
        """The rules and the tasks' counts on the other NodeManager hosts go with the cell."""
        from shlex import quote

        for seat in self.task_hosts:
            try:
                seat.host.run(f"rm -rf -- {quote(cell.logdir)}", SHORT_TIMEOUT, force=True)
            except Exception:
                pass
