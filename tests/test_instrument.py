"""instrument: which cells get the agent, the options that attach it, and what is made of
Byteman's output (real Byteman 4.0.27 messages, captured from its agent and its checker)."""

from __future__ import annotations

import copy
import json

import pytest

from perfpost import instrument
from perfpost.errors import ConfigError, ParseError, PerfpostError
from perfpost.plan.build import build_plan

FREON = {
    "experiments": {
        "f": {
            "tool": "freon",
            "params": {"subcommand": "dfsg", "dir": "/tmp/x", "options": {"t": "{t}"}},
            "axes": {"t": [1, 4, 10], "s": [1024, 4096]},
            "instrument": ["output"],
        }
    }
}


def plan_of(change=None):
    cfg = copy.deepcopy(FREON)
    if change:
        change(cfg["experiments"]["f"])
    return build_plan(cfg)


def test_instrument_adds_an_axis_with_the_first_cell_also_run_without_the_agent():
    exp = plan_of().experiments["f"]
    ids = [c.id for c in exp.cells]
    # Six cells of the matrix, each with the agent, and the first once more without it.
    assert len(ids) == 7
    assert ids[:2] == ["t=1,s=1024,instrument=on", "t=1,s=1024,instrument=off"]
    assert sum(i.endswith("instrument=off") for i in ids) == 1
    assert [r["name"] for r in exp.rules["t=4,s=4096,instrument=on"]] == ["output"]
    assert exp.rules["t=1,s=1024,instrument=off"] == []
    assert exp.axes["instrument"] == {"on": ["output"], "off": []}


def test_without_every_runs_each_cell_both_ways():
    def change(e):
        e["instrument"] = {"rules": ["output", "input"], "without": "every"}

    exp = plan_of(change).experiments["f"]
    assert len(exp.cells) == 12
    assert sum(c.id.endswith("instrument=off") for c in exp.cells) == 6


def test_a_cell_spec_carries_the_agent_only_where_it_runs():
    plan = plan_of()
    on = plan.spec("f", "t=1,s=1024,instrument=on", "localhost", 1)
    off = plan.spec("f", "t=1,s=1024,instrument=off", "localhost", 1)
    assert off.instrument == {}
    assert on.instrument["agent"] == "byteman 4.0.27"
    assert on.instrument["classes"].endswith("/ozone-2.2.0/lib")
    assert on.instrument["home"] == on.instrument["check_home"]  # localhost: provisioned
    # With and without the agent are two measurements; the params are the same.
    assert on.params == off.params
    assert on.measurement_id() != off.measurement_id()
    assert "instrument" in json.loads(on.param_json())
    assert "instrument" not in json.loads(off.param_json())


def test_a_changed_rule_file_is_another_measurement(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.btm").write_text(
        "RULE a\nCLASS A\nMETHOD a\nIF true\nDO traceln(1)\nENDRULE\n"
    )

    def change(e):
        e["instrument"] = ["mine.btm"]

    first = plan_of(change).spec("f", "t=1,s=1024,instrument=on", "localhost", 1)
    (tmp_path / "mine.btm").write_text(
        "RULE a\nCLASS A\nMETHOD a\nIF true\nDO traceln(2)\nENDRULE\n"
    )
    second = plan_of(change).spec("f", "t=1,s=1024,instrument=on", "localhost", 1)
    assert first.measurement_id() != second.measurement_id()
    assert first.instrument["rules"][0]["path"] == str(tmp_path / "mine.btm")


def test_an_instrument_axis_chooses_rules_per_cell():
    def change(e):
        del e["instrument"]
        e["axes"] = {
            "t": [1],
            "instrument": {"none": [], "out": ["output"], "both": ["output", "input"]},
        }

    exp = plan_of(change).experiments["f"]
    assert [len(exp.rules[c.id]) for c in exp.cells] == [0, 1, 2]


@pytest.mark.parametrize(
    ("change", "where", "words"),
    [
        (lambda e: e.update(instrument=["outptu"]), "experiments.f.instrument.rules[0]", "neither"),
        (
            lambda e: e.update(instrument=["nope.btm"]),
            "experiments.f.instrument.rules[0]",
            "no rule file",
        ),
        (
            lambda e: e.update(instrument=["output", "output"]),
            "experiments.f.instrument.rules[1]",
            "twice",
        ),
        (
            lambda e: e["axes"].update(instrument={"on": ["output"]}),
            "experiments.f.axes.instrument",
            "give one of the two",
        ),
        (
            lambda e: e.update(instrument=None) or e["axes"].update(instrument={"x": "output"}),
            "experiments.f.axes.instrument.x",
            "list of rule sets",
        ),
    ],
)
def test_mistakes_name_their_key(change, where, words):
    def fix(e):
        change(e)
        if e.get("instrument") is None:
            e.pop("instrument", None)

    with pytest.raises(ConfigError) as info:
        plan_of(fix)
    assert info.value.where == where
    assert words in info.value.message


def test_a_tool_without_a_jvm_cannot_be_instrumented():
    cfg = {
        "experiments": {
            "d": {"tool": "dd", "params": {"dir": "/tmp/x", "count": 1}, "instrument": ["output"]}
        }
    }
    with pytest.raises(ConfigError) as info:
        build_plan(cfg)
    assert info.value.where == "experiments.d.instrument"
    assert "JVM" in info.value.message


def test_java_options_attach_the_agent_with_its_rules_and_helper():
    opts = instrument.java_options(
        "/c/bm", ["/l/rules/1-output.btm", "/l/rules/2-mine.btm"], "/l/i.json"
    )
    assert opts.split() == [
        "-javaagent:/c/bm/lib/byteman.jar=script:/l/rules/1-output.btm,script:/l/rules/2-mine.btm,"
        "boot:/c/bm/lib/byteman.jar,boot:/c/bm/lib/perfpost-byteman.jar",
        "-Dorg.jboss.byteman.compile.to.bytecode=true",
        "-Dperfpost.instrument.out=/l/i.json",
    ]
    # Byteman splits its options at commas: a path with one cannot be passed.
    with pytest.raises(PerfpostError, match="comma"):
        instrument.java_options("/c/b,m", [], "/l/i.json")


def test_attach_goes_after_the_tool_s_own_jvm_options():
    p = {"java_opts": "-Xmx256m", "env": {"A": "1"}}
    assert (
        instrument.attach(p, "OZONE_OPTS", "-javaagent:x")["java_opts"] == "-Xmx256m -javaagent:x"
    )
    # An experiment that sets the variable itself keeps it, the agent after it.
    p = {"java_opts": "-Xmx256m", "env": {"OZONE_OPTS": "-Xmx1g"}}
    got = instrument.attach(p, "OZONE_OPTS", "-javaagent:x")
    assert got["env"]["OZONE_OPTS"] == "-Xmx1g -javaagent:x"
    assert p["env"]["OZONE_OPTS"] == "-Xmx1g"  # the planned params are not changed


def test_the_helper_s_json_becomes_metrics_in_base_units():
    text = json.dumps(
        {
            "schema_version": 1,
            "agent": "byteman",
            "unfinished": 0,
            "ops": {
                "close": {"calls": 200, "time_ns": 1_500_000_000, "bytes": 0, "threads": 4},
                "write": {"calls": 1000, "time_ns": 250_000, "bytes": 2_049_600, "threads": 4},
            },
            "threads": [{"name": "pool-1-thread-1", "ops": {"write": {"calls": 250}}}],
        }
    )
    metrics, info = instrument.parse_result(text)
    got = {m.name: (m.value, m.unit) for m in metrics}
    assert got["close.time"] == (1.5, "s")
    assert got["write.time"] == (0.00025, "s")
    assert got["write.call"] == (1000, "count")
    assert got["write.bytes"] == (2_049_600, "B")
    assert "close.bytes" not in got  # a close moves no bytes
    assert got["close.threads"] == (4, "count")
    assert info["threads"] == [{"name": "pool-1-thread-1", "ops": {"write": 250}}]
    with pytest.raises(ParseError):
        instrument.parse_result('{"schema_version": 99, "ops": {}}')
    with pytest.raises(ParseError):
        instrument.parse_result("write.call: 3")


# Byteman 4.0.27's words in a freon log, as its agent printed them here (a rule whose exit
# action did not type-check: the JVM went on, and the rule counted nothing).
AGENT_LOG = """\
2026-11-23 02:14:26,202 [Thread-3] INFO freon.ProgressBar: Progress: 0.00 % (0 out of 20)
Rule.ensureTypeCheckedCompiled : error type checking rule write(byte[],int,int) exit
org.jboss.byteman.rule.exception.TypeException: FieldExpresssion.typeCheck : \
invalid field reference int .length file /tmp/bm/bad-type.btm line 43
\tat org.jboss.byteman.rule.expression.FieldExpression.typeCheck(FieldExpression.java:137)
2026-11-23 02:14:27,203 [Thread-3] INFO freon.ProgressBar: Progress: 100.00 % (20 out of 20)
"""
JVM_LOG = """\
Error opening zip file or JAR manifest missing : /nonexistent/lib/byteman.jar
Error occurred during initialization of VM
agent library failed to init: instrument
"""


def test_byteman_s_complaints_are_found_in_a_tool_s_log():
    said = instrument.errors_in({"freon.log": AGENT_LOG})
    assert (
        said[0]
        == "Rule.ensureTypeCheckedCompiled : error type checking rule write(byte[],int,int) exit"
    )
    assert "invalid field reference int .length" in said[1]
    assert instrument.errors_in({"freon.log": JVM_LOG})[0].endswith("/nonexistent/lib/byteman.jar")
    clean = "2026-11-23 INFO freon: Successful executions: 20\nERRORS: 0\n"
    assert instrument.errors_in({"freon.log": clean}) == []


# Byteman's checker (TestScript) on a rule file with a type error, as it printed it.
CHECKER = """\
Checking rule write(byte[],int,int) exit against class \
org.apache.hadoop.fs.FSDataOutputStream$PositionCache
Parsed rule "write(byte[],int,int) exit" for class \
org.apache.hadoop.fs.FSDataOutputStream$PositionCache
ERROR : Failed to type check rule "write(byte[],int,int) exit" loaded from bad-type.btm \
line 42 against method write(byte[],int,int) void
org.jboss.byteman.rule.exception.TypeException: FieldExpresssion.typeCheck : \
invalid field reference int .length file bad-type.btm line 43

TestScript: 1 total errors
            0 total warnings
"""


def test_the_checker_s_errors_carry_their_reason():
    errors = instrument._check_errors(CHECKER)
    assert len(errors) == 1
    assert errors[0].startswith('Failed to type check rule "write(byte[],int,int) exit"')
    assert errors[0].endswith("invalid field reference int .length file bad-type.btm line 43")
    assert instrument._check_errors("TestScript: no errors\n") == []


def test_map_tasks_get_the_agent_after_the_job_s_own_options():
    p = {"defines": {"mapreduce.map.java.opts": "-Xmx300m", "mapreduce.job.maps": 2}}
    got = instrument.attach_tasks(p, "-javaagent:x -Dperfpost.instrument.out=/l/t-@taskid@.json")
    assert got["defines"]["mapreduce.map.java.opts"] == (
        "-Xmx300m -javaagent:x -Dperfpost.instrument.out=/l/t-@taskid@.json"
    )
    assert got["defines"]["mapreduce.job.maps"] == 2
    assert instrument.attach_tasks({}, "-javaagent:x")["defines"] == {
        "mapreduce.map.java.opts": "-javaagent:x"
    }


def test_the_tasks_counts_are_summed_under_their_own_names():
    def task(calls, ns, nbytes):
        ops = {"write": {"calls": calls, "time_ns": ns, "bytes": nbytes, "threads": 1}}
        return json.dumps({"schema_version": 1, "unfinished": 0, "ops": ops})

    metrics, info = instrument.merge_tasks(
        {
            "a.json": task(20_002, 1_000_000_000, 1_000_008),
            "b.json": task(20_002, 500_000_000, 1_000_008),
        }
    )
    got = {m.name: m.value for m in metrics}
    assert got["map-write.call"] == 40_004
    assert got["map-write.time"] == 1.5
    assert got["map-write.bytes"] == 2_000_016
    assert got["map-write.threads"] == 2
    assert [t["ops"]["write"] for t in info["tasks"]] == [20_002, 20_002]


def test_only_teragen_has_map_tasks():
    def change(e):
        e["instrument"] = {"rules": ["output"], "tasks": True}

    with pytest.raises(ConfigError) as info:
        plan_of(change)
    assert info.value.where == "experiments.f.instrument.tasks"


def test_the_post_section_has_medians_per_cell_and_the_cost_as_a_ratio_of_medians():
    import pandas as pd

    from perfpost.analysis import instrumented

    rows = []

    def add(inst, repeat, **values):
        for metric, value in values.items():
            rows.append(
                {
                    "b": "x",
                    "instrument": inst,
                    "repeat": repeat,
                    "host": "localhost",
                    "metric": metric.replace("_", ".", 1) if metric != "wall_time" else metric,
                    "value": value,
                    "status": "done",
                }
            )

    add("on", 1, write_call=10, write_time=1.0, close_call=5, close_time=0.5, wall_time=4.0)
    add("on", 2, write_call=10, write_time=3.0, close_call=5, close_time=0.5, wall_time=6.0)
    add("off", 1, wall_time=2.0)
    add("off", 2, wall_time=3.0)
    experiment = {
        "axes": {"b": ["x"], "instrument": {"on": ["output"], "off": []}},
        "hosts": ["localhost"],
    }
    got = instrumented.section(pd.DataFrame(rows), experiment)
    assert got["header"] == [
        "b",
        "runs",
        "write calls",
        "write time",
        "close calls",
        "close time",
        "wall time",
    ]
    # Medians: write time (1 + 3) / 2 = 2 s, wall (4 + 6) / 2 = 5 s; the off cell has no row.
    assert got["rows"] == [["x", "2", "10", "2 s", "5", "500 ms", "5 s"]]
    # Cost: median with (5 s) / median without (2.5 s).
    (cost,) = got["cost"]
    assert (cost["cell"], cost["ratio"], cost["with"], cost["without"]) == (
        "b=x",
        "2.00x",
        "5 s",
        "2.5 s",
    )
    assert cost["interval"] is None  # 2 against 2 runs: no 95% interval exists
    assert got["uncalled"] == ["hsync", "hflush"]
    assert got["most"].startswith(
        "`write` took the most time in every instrumented cell (up to 2 s"
    )
    assert got["without"] is True
    # With every cell instrumented, there is no cost to state, and the post must not point
    # at `instrument=off` cells that do not exist.
    only_on = [r for r in rows if r["instrument"] == "on"]
    experiment["axes"]["instrument"] = {"on": ["output"]}
    got = instrumented.section(pd.DataFrame(only_on), experiment)
    assert (got["without"], got["cost"]) == (False, [])
