"""The ResourceManager's application records and teragen's console on YARN, as a real
single-node YARN 3.4.2 wrote them (tests/data/yarn/capture.sh): success, a failed map, a
kill through the REST API, a record read mid-run, an unknown id."""

import csv
import io
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfpost.errors import ConfigError, ParseError
from perfpost.plan.build import build_plan
from perfpost.tools import teragen
from perfpost.tools.teragen import yarnapp

DATA = Path(__file__).parent / "data" / "yarn"


def text(name: str) -> str:
    return (DATA / name).read_text()


def raw_app(name: str) -> dict:
    return json.loads(text(name))["app"]


@pytest.mark.parametrize("name", ["app-succeeded.json", "app-failed.json", "app-killed.json"])
def test_terminal_records_give_elapsed_time_and_resources_as_yarn_counts_them(name):
    app = raw_app(name)
    rec = yarnapp.parse(text(name), name)
    assert rec.final
    assert rec.id == app["id"]
    assert rec.status == f"{app['state']}/{app['finalStatus']}"
    m = {x.name: (x.value, x.unit) for x in rec.metrics()}
    assert m["app_elapsed"] == (app["elapsedTime"] / 1000, "s")
    assert m["app_vcore_seconds"] == (app["vcoreSeconds"], "vcore*s")
    # YARN's MB-seconds in byte-seconds: its MB is a MiB (ResourceInformation.MEMORY_MB, "Mi")
    assert m["app_memory_seconds"] == (app["memorySeconds"] * 1048576, "B*s")
    assert m["app_launch_delay"][0] == (app["launchTime"] - app["startedTime"]) / 1000
    assert m["app_elapsed"][0] == (app["finishedTime"] - app["startedTime"]) / 1000


def test_only_a_finished_success_counts_as_succeeded():
    assert yarnapp.parse(text("app-succeeded.json"), "x").succeeded
    failed = yarnapp.parse(text("app-failed.json"), "x")
    assert not failed.succeeded
    assert failed.status == "FINISHED/FAILED"  # YARN: the AM finished, the job failed
    assert failed.diagnostics.startswith("Task failed task_")
    killed = yarnapp.parse(text("app-killed.json"), "x")
    assert killed.status == "KILLED/KILLED"
    assert "killed by user" in killed.diagnostics


def test_a_record_read_while_the_job_runs_is_not_final_and_not_a_result():
    rec = yarnapp.parse(text("app-running.json"), "running.json")
    assert rec.state == "RUNNING"
    assert not rec.final
    assert not yarnapp.is_final(text("app-running.json"))
    with pytest.raises(ParseError, match=r"running.json: application_\d+_\d+ is still RUNNING"):
        yarnapp.parse_text(text("app-running.json"), "running.json")


def test_finished_but_still_releasing_containers_is_not_final():
    doc = json.loads(text("app-succeeded.json"))
    doc["app"]["runningContainers"] = 1  # as the RM reports right after FINISHED
    assert not yarnapp.is_final(json.dumps(doc))
    del doc["app"]["runningContainers"]  # RMs that do not say: terminal is final
    assert yarnapp.is_final(json.dumps(doc))


def test_an_unknown_application_is_the_rm_s_own_error():
    with pytest.raises(ParseError, match=r"nf.json: the ResourceManager answered NotFound"):
        yarnapp.parse(text("app-not-found.json"), "nf.json")


def test_a_cut_off_answer_is_refused_at_every_length():
    full = text("app-succeeded.json")
    whole = len(full.rstrip())  # a cut in trailing whitespace still has the whole record
    for cut in range(whole):
        with pytest.raises(ParseError, match=r"^cut.json"):
            yarnapp.parse(full[:cut], "cut.json")
    assert yarnapp.parse(full[:whole], "cut.json").final


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda a: a.pop("elapsedTime"), "lacks app.elapsedTime"),
        (lambda a: a.update(vcoreSeconds="27"), "app.vcoreSeconds is '27', expected a number"),
        (lambda a: a.update(memorySeconds=True), "app.memorySeconds is True"),
    ],
)
def test_a_damaged_record_names_the_key(change, message):
    doc = json.loads(text("app-succeeded.json"))
    change(doc["app"])
    with pytest.raises(ParseError, match=message):
        yarnapp.parse(json.dumps(doc), "bad.json")
    with pytest.raises(ParseError, match="no `app` object"):
        yarnapp.parse(json.dumps({"apps": None}), "bad.json")


def test_teragen_on_yarn_log_gives_job_application_and_counters():
    log = teragen.JobLog(text("yarn-success.log"), "s.log")
    assert log.job_id.startswith("job_")
    assert log.application_id == raw_app("app-succeeded.json")["id"]
    m = {x.name: x.value for x in teragen.parse_cell({"s.log": text("yarn-success.log")}, 15.0)}
    ms = int(
        text("yarn-success.log").split("vcore-milliseconds taken by all map tasks=")[1].split()[0]
    )
    assert m["map_vcore_seconds"] == ms / 1000
    assert m["map_tasks"] == 2
    assert m["bytes_written"] == 100781272
    assert teragen.summary(text("yarn-success.log"), "s")["status"] == "succeeded"


@pytest.mark.parametrize(
    ("name", "state", "why"),
    [("yarn-failed.log", "FAILED", "Task failed task_"), ("yarn-killed.log", "KILLED", "killed")],
)
def test_failed_and_killed_jobs_on_yarn_are_failures_with_yarn_s_reason(name, state, why):
    with pytest.raises(ParseError, match=f"failed with state|{state}") as e:
        teragen.parse_text(text(name), name)
    assert state in str(e.value)
    assert why in str(e.value)
    assert teragen.summary(text(name), name) == {
        "id": teragen.JobLog(text(name), name).job_id,
        "status": "failed",
    }


def test_the_record_to_fetch_follows_the_job_in_the_log():
    params = {"resourcemanager": ["http://rm1:8088/", "http://rm2:8088"], "app_record_timeout": 9}
    (fetch,) = teragen.fetches(params, {"t.log": text("yarn-success.log")})
    app = raw_app("app-succeeded.json")["id"]
    assert fetch.urls == (
        f"http://rm1:8088/ws/v1/cluster/apps/{app}",
        f"http://rm2:8088/ws/v1/cluster/apps/{app}",
    )
    assert fetch.timeout == 9
    assert fetch.final(text("app-succeeded.json"))
    assert not fetch.final(text("app-running.json"))
    metrics, info = fetch.parse(text("app-failed.json"), "raw/yarn-app.json")
    assert info["status"] == "FINISHED/FAILED"
    assert {m.name for m in metrics} >= {"app_elapsed", "app_vcore_seconds"}
    # No RM configured, or a local job (job_local...): nothing to read.
    assert teragen.fetches({}, {"t.log": text("yarn-success.log")}) == ()
    local = (Path(__file__).parent / "data" / "teragen" / "local-100MB.log").read_text()
    assert teragen.fetches(params, {"t.log": local}) == ()
    with pytest.raises(ValueError, match="not a YARN application id"):
        yarnapp.url("http://rm:8088", "application_1; rm -rf /")


def _teragen_plan(**params):
    exp = {"tool": "teragen", "params": {"size": "1M", "dir": "/tmp", **params}}
    return build_plan({"experiments": {"t": exp}})


def test_config_refuses_a_resourcemanager_for_a_local_job_and_a_bad_url():
    with pytest.raises(ConfigError, match=r"experiments.t.* local job .* no application record"):
        _teragen_plan(local=True, resourcemanager="http://rm:8088")
    with pytest.raises(ConfigError, match=r"params.resourcemanager: 'rm:8088' does not match"):
        _teragen_plan(resourcemanager="rm:8088")
    with pytest.raises(ConfigError, match=r"params.resourcemanager\[1\]: 'b' does not match"):
        _teragen_plan(resourcemanager=["http://a:8088", "b"])
    plan = _teragen_plan(resourcemanager=["http://a:8088", "https://b:8090"])
    assert next(plan.jobs()).params["app_record_timeout"] == 60


def test_perfpost_parse_prints_ids_and_statuses_and_fails_on_the_bad_ones():
    files = [str(DATA / n) for n in ("app-succeeded.json", "app-killed.json", "app-running.json")]
    result = subprocess.run(
        [sys.executable, "-m", "perfpost", "parse", "yarn-app", *files],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "is still RUNNING" in result.stderr
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    ok = [r for r in rows if r["source"] == files[0]]
    assert {r["id"] for r in ok} == {raw_app("app-succeeded.json")["id"]}
    assert {r["status"] for r in ok} == {"FINISHED/SUCCEEDED"}
    by = {r["metric"]: r for r in ok}
    assert float(by["app_vcore_seconds"]["value"]) == raw_app("app-succeeded.json")["vcoreSeconds"]
    assert {r["status"] for r in rows if r["source"] == files[1]} == {"KILLED/KILLED"}
    # The running record: its id and state, no numbers.
    (running,) = [r for r in rows if r["source"] == files[2]]
    assert running["status"] == "RUNNING/UNDEFINED"
    assert running["metric"] == ""

    log = str(DATA / "yarn-failed.log")
    result = subprocess.run(
        [sys.executable, "-m", "perfpost", "parse", "teragen", log],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    (row,) = csv.DictReader(io.StringIO(result.stdout))
    assert row["id"].startswith("job_")
    assert row["status"] == "failed"


def test_what_yarn_does_not_know_is_left_out_not_reported_as_minus_one():
    # The RM writes -1 for the resources of an application the user may not see.
    doc = json.loads(text("app-succeeded.json"))
    doc["app"].update(vcoreSeconds=-1, memorySeconds=-1)
    m = {x.name for x in yarnapp.parse_text(json.dumps(doc), "x.json")}
    assert "app_elapsed" in m
    assert not m & {"app_vcore_seconds", "app_memory_seconds"}
    doc["app"]["elapsedTime"] = -1
    with pytest.raises(ParseError, match=r"x.json: app.elapsedTime is -1"):
        yarnapp.parse_text(json.dumps(doc), "x.json")


SETTINGS = settings(max_examples=300, deadline=None, derandomize=True, database=None)


@SETTINGS
@given(st.text(max_size=400))
def test_parser_never_crashes_on_garbage(body):
    try:
        yarnapp.parse_text(body, "g.json")
    except ParseError as e:
        failed = e.source
    else:
        return
    assert failed == "g.json"


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**20), 10**20)
    | st.floats()  # NaN and infinities too: Python's json writes and reads them
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=6,
)


@SETTINGS
@given(
    name=st.sampled_from(["app-succeeded.json", "app-failed.json", "app-killed.json"]),
    changes=st.dictionaries(
        st.sampled_from([*yarnapp.REQUIRED, "launchTime", "memorySeconds", "vcoreSeconds"]),
        json_values,
        min_size=1,
        max_size=3,
    ),
    wrap=st.sampled_from(["app", "RemoteException"]),
)
def test_any_value_in_a_record_is_refused_or_read_as_the_record_says(name, changes, wrap):
    app = {**raw_app(name), **changes}
    try:
        m = {x.name: x.value for x in yarnapp.parse_text(json.dumps({wrap: app}), "r.json")}
    except ParseError as e:
        message = str(e)
    else:
        assert all(math.isfinite(v) and v >= 0 for v in m.values()), m
        # Every number is the record's own, in seconds.
        assert m["app_elapsed"] == int(app["elapsedTime"]) / 1000
        for metric, key, per in (
            ("app_vcore_seconds", "vcoreSeconds", 1),
            ("app_memory_seconds", "memorySeconds", 2**20),  # MB-seconds (MiB) in B*s
        ):
            if metric in m:
                assert m[metric] == int(app[key]) * per
        if "app_launch_delay" in m:
            delay = (int(app["launchTime"]) - int(app["startedTime"])) / 1000
            assert m["app_launch_delay"] == delay
        return
    assert message.startswith("r.json: ")


def test_the_succeeded_records_memory_seconds_are_byte_seconds():
    # app-succeeded.json: "memorySeconds":14550 (MB-seconds; YARN's MB is 2^20 bytes), so
    # 14550 * 1,048,576 = 15,256,780,800 byte-seconds.
    m = {
        x.name: (x.value, x.unit) for x in yarnapp.parse(text("app-succeeded.json"), "a").metrics()
    }
    assert m["app_memory_seconds"] == (15_256_780_800, "B*s")
    assert m["app_vcore_seconds"] == (27, "vcore*s")


def test_teragen_on_yarn_counters_in_milliseconds_are_stored_in_seconds():
    # yarn-success.log, as Hadoop 3.4.2 printed it: "Total vcore-milliseconds taken by all map
    # tasks=8900", "Total megabyte-milliseconds taken by all map tasks=4556800",
    # "CPU time spent (ms)=1650", "GC time elapsed (ms)=115". By hand: 8.9 vcore-s;
    # 4556.8 MB-s * 1,048,576 B/MB = 4,777,312,256 + 838,860.8 = 4,778,151,116.8 B*s (512 MB
    # containers: 4556800 / 8900 = 512); 1.65 s; 0.115 s.
    m = {x.name: (x.value, x.unit) for x in teragen.parse_cell({"s": text("yarn-success.log")})}
    assert m["map_vcore_seconds"] == (8.9, "vcore*s")
    assert m["map_memory_seconds"] == (4_778_151_116.8, "B*s")
    assert m["cpu_time"] == (1.65, "s")
    assert m["gc_time"] == (0.115, "s")


def test_hadoop_2_counter_labels_in_seconds_land_in_the_same_metrics():
    # Hadoop 2.6/2.7 labelled the same counters "vcore-seconds" and "megabyte-seconds".
    old = (
        text("yarn-success.log")
        .replace(
            "Total vcore-milliseconds taken by all map tasks=8900",
            "Total vcore-seconds taken by all map tasks=9",
        )
        .replace(
            "Total megabyte-milliseconds taken by all map tasks=4556800",
            "Total megabyte-seconds taken by all map tasks=4557",
        )
    )
    assert "vcore-seconds taken by all map tasks=9" in old
    m = {x.name: (x.value, x.unit) for x in teragen.parse_cell({"s": old})}
    assert m["map_vcore_seconds"] == (9, "vcore*s")
    assert m["map_memory_seconds"] == (4557 * 1_048_576, "B*s")
