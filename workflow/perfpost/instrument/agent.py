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


class Agent(Beside):
    name = "byteman"

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
        after the client saw the job end): waited for, one per launched map, for 30 s."""
        from shlex import quote

        launched = next((int(m.value) for m in parsed if m.name == "map_tasks"), None)
        where = f"{cell.logdir}/{byteman.TASKS_DIR}"
        deadline = time.monotonic() + TASK_WAIT
        while True:
            got = cell.host.run(f"ls -1 -- {quote(where)}", SHORT_TIMEOUT)
            names = sorted(n for n in got.stdout.split() if n.endswith(".json"))
            if (launched is not None and len(names) >= launched) or time.monotonic() > deadline:
                break
            time.sleep(1.0)
        texts: dict[str, Any] = {}
        for name in names:
            text = cell.read_log(f"{where}/{name}", f"task-{name}")
            if text is not None:
                texts[name] = text
        if not texts or (launched is not None and len(texts) < launched):
            return [], (
                f"counts of {len(texts)} of {launched if launched is not None else '?'} map "
                f"tasks arrived in {where}: could the tasks' JVMs load the agent and write "
                "there (the NodeManager on the cell's host, as its user)?"
            )
        try:
            metrics, info = byteman.merge_tasks(texts)
        except ParseError as e:
            return [], f"unparseable map task counts: {e}"
        cell.record["instrument"]["tasks"] = info["tasks"]
        if info["unfinished"]:
            return metrics, f"{info['unfinished']} instrumented call(s) in map tasks never returned"
        return metrics, None
