"""Preparing a cell: everything before its measurement, none of it measured.

In order: the tool may refuse the cell outright (no host touched); the host's guard is set,
so that from here on the host removes the cell's scratch should perfpost die; the tool's
runtime (and an agent) are delivered to a remote host that lacks them; what runs beside the
measured step is set up (it may fail the cell before anything runs, or change the measured
step's parameters); the commands are recorded; the cluster's client configuration is written;
the tool's version is asked; the prepare steps run; the page cache is dropped if asked (an
unprivileged host fails or skips the cell, as configured); and what runs beside the measured
step is started. A cell that cannot go on ends here with its record; one that can returns
None, ready to measure.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from perfpost import deliver, paths, shell
from perfpost.clusters.base import site_xml
from perfpost.records import FAILED, SKIPPED
from perfpost.run import hostscript
from perfpost.run.cell import clients
from perfpost.run.cell.attempt import (
    CONF_VARS,
    LOG_VARS,
    SHORT_TIMEOUT,
    Attempt,
    shown,
    tail,
)
from perfpost.run.cell.record import finish
from perfpost.run.hostscript import JAVA_HOME_MARK, split_java_home


def prepare(cell: Attempt) -> dict[str, Any] | None:
    """Tool version, preparation and the page cache: everything before the measurement.
    Returns the record when the cell is already over (failed or skipped)."""
    cell.raw.mkdir(parents=True, exist_ok=True)
    refuse = getattr(cell.adapter, "refuse", None)
    why = refuse(cell.spec.params) if refuse is not None else None
    if why is not None:  # decided here: no host was touched, none needs cleaning
        cell._cleaned = True
        return finish(cell, FAILED, why)
    # Before any step can make scratch: from here on the host removes it should perfpost
    # die, whatever it is doing (a step, copying a log back, or nothing on the host).
    cell.guard = cell.host.guard(cell.scratch_cleanup)
    _deliver(cell)
    spec = cell.spec
    cell.measure_params = spec.params
    cell.plan = plan = _plan(cell, spec.params)
    # What runs beside the measured step is set up first: an agent's rule that does not
    # compile fails the cell before anything of it runs, and what a beside adds to the
    # measured step (an agent's JVM options) is in the command the record keeps.
    for b in cell.besides:
        cell.set_up.append(b)
        why = b.setup(cell)
        if why is not None:
            return finish(cell, FAILED, why)
    if cell.measure_params is not spec.params:
        # Only the measured step carries it: not teragen's removal of its output.
        before = cell.clients
        measured = _plan(cell, cell.measure_params)
        cell.plan = plan = dataclasses.replace(plan, measure=measured.measure)
        # Each client's removal and preparation stay as planned from the spec's parameters.
        cell.clients = [
            dataclasses.replace(b, plan=dataclasses.replace(b.plan, measure=a.plan.measure))
            for a, b in zip(cell.clients, before, strict=True)
        ]
    _show_command(cell)
    cell.record["prepare_commands"] = [shown(p.argv) for p in plan.prepare]
    cell.record["remove_commands"] = [shown(p.argv) for p in plan.remove]
    cell.record["background_commands"] = [shown(p.argv) for p in plan.background]
    cell.record["description"] = plan.description
    if cell.client_site:
        conf = cell.run_step(
            "client_conf",
            shell.write_files_script(
                {
                    f"{cell.logdir}/conf/{name}.xml": site_xml(keys)
                    for name, keys in cell.client_site.items()
                }
            ),
            SHORT_TIMEOUT,
        )
        if conf.exit_code != 0:
            return finish(
                cell, FAILED, f"writing the cluster's client configuration failed: {conf.stderr}"
            )

    # The step also says which JDK the tool's launcher was given (JAVA_HOME: the host's own,
    # or the one its java belongs to, hostscript.JAVA_HOME_FALLBACK), for the record.
    version = cell.run_step(
        "version",
        f"{hostscript.quote(cell.adapter.version_argv(spec.params))}; rc=$?; "
        f"printf '\\n{JAVA_HOME_MARK}%s\\n' \"${{JAVA_HOME:-}}\"; exit $rc",
        SHORT_TIMEOUT,
    )
    said, java_home = split_java_home(version.stdout)
    env = getattr(cell.host, "env", {})
    cell.record["launcher_env"] = {
        "JAVA_HOME": java_home,
        **{var: env[var] for var in (*CONF_VARS, *LOG_VARS) if var in env},
    }
    if version.exit_code == 0 and said.strip():
        cell.record["tool_version"] = said.strip().splitlines()[0]

    prep = cell.run_step(
        "prepare",
        clients.prepare_script(cell.clients, cell.logdir)
        if cell.clients
        else hostscript.prepare_script(cell.workdir, cell.logdir, plan.prepare, plan.files),
        spec.timeout,
    )
    for name, text in plan.files:  # what ran, as it ran (a job file)
        cell.keep(name, text)
        cell.record["logs"].append(f"{paths.RAW}/{name}")
    cell.record["files"] = [name for name, _ in plan.files]
    if prep.exit_code != 0:
        detail = cell.redactor.text(prep.stderr)
        detail = cell.read_log(f"{cell.logdir}/prepare.log", "prepare.log") or detail
        why = "timed out" if prep.timed_out else f"exit code {prep.exit_code}"
        detail = tail(detail, 2)
        return finish(cell, FAILED, f"preparing the cell failed ({why}): {detail}".strip())

    if plan.drop_cache:
        drop = cell.run_step(
            "drop_cache", hostscript.drop_cache_script(cell.workdir), SHORT_TIMEOUT
        )
        if drop.exit_code != 0:
            msg = next(
                (
                    ln.split(" ", 1)[1]
                    for ln in drop.stdout.splitlines()
                    if ln.startswith(hostscript.UNPRIVILEGED)
                ),
                None,
            )
            reason = (
                "cannot drop the page cache: "
                + (msg or f"exit code {drop.exit_code}: {tail(drop.stderr, 2)}")
                + "; run as root on the host, or drop `drop_cache` from the cell"
            )
            skip = spec.params.get("on_unprivileged") == "skip" and msg is not None
            return finish(cell, SKIPPED if skip else FAILED, reason)
        # The evidence it was dropped, for the post's validity checks.
        cell.record["cache_drop"] = hostscript.parse_cache_line(drop.stdout)
    for b in cell.set_up:
        b.start(cell)
    return None


def _deliver(cell: Attempt) -> None:
    """Put what the cell runs from perfpost's installs here (the tool's runtime, the
    agent) on a remote host that lacks it, and point the params at the host's copy. The
    record keeps the params as planned (its measurement) and says what was shipped."""
    spec, inst = cell.spec, dict(cell.spec.instrument or {})
    load = dict(spec.background or {})
    mapping, done = deliver.deliver_for(
        cell.host, [spec.params, inst.get("home"), load.get("params")]
    )
    if not mapping:
        return
    if load:  # the load's launcher too (freon beside teragen)
        load["params"] = deliver.localize(load["params"], mapping)
        spec = dataclasses.replace(spec, background=load)
    cell.record["delivered"] = [d.record() for d in done]
    if inst:
        # This machine's path too: the agent may go on to other hosts (NodeManagers).
        inst.setdefault("planned_home", inst["home"])
        inst["home"] = deliver.localize(inst["home"], mapping)
    cell.spec = dataclasses.replace(
        spec, params=deliver.localize(spec.params, mapping), instrument=inst or spec.instrument
    )


def _plan(cell: Attempt, params: dict[str, Any]) -> Any:
    """The tool's plan for these parameters: with ``clients`` above 1, every client's at
    once (each client's part kept in ``cell.clients``)."""
    n = clients.count(params)
    if n == 1:
        return cell.adapter.plan(params, cell.workdir)
    combined, cell.clients = clients.plan(cell.adapter, params, cell.workdir, n)
    return combined


def _show_command(cell: Attempt) -> None:
    cell.record["command"] = _command(cell.plan.measure)
    if cell.clients:
        # Each client's own command, logs and scratch (the measured step fills in its times).
        cell.record["clients"] = {
            "count": len(cell.clients),
            "each": [
                {
                    "client": c.index,
                    "command": _command(c.plan.measure),
                    "workdir": c.workdir,
                    "logs": sorted(c.names),
                }
                for c in cell.clients
            ],
        }


def _command(procs: Any) -> str:
    return "\n".join(shown(p.argv) + (" &" if len(procs) > 1 else "") for p in procs)
