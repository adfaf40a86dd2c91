"""The fio adapter: its parser on real fio reports (tests/data/fio/capture.sh), on any text and
on reports with random numbers, and its command builder and parameter checks."""

from __future__ import annotations

import json
import math
import re
import subprocess
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perfpost.errors import ConfigError, ParseError
from perfpost.plan import build as config
from perfpost.run import hostscript
from perfpost.tools import fio

DATA = Path(__file__).parent / "data" / "fio"
SOURCE = "raw/fio.log"


def text_of(name: str) -> str:
    return (DATA / name).read_bytes().decode()


def report_of(name: str) -> dict:
    """fio's report as the json module reads it, independently of the adapter."""
    text = text_of(name)
    return json.loads(text[text.index("{\n") :])


def metrics(text: str) -> dict[str, tuple[float, str]]:
    return {m.name: (m.value, m.unit) for m in fio.parse_text(text, SOURCE)}


def values(text: str) -> dict[str, float]:
    return {k: v for k, (v, _) in metrics(text).items()}


# ---------------------------------------------------------------------------- real reports


@pytest.mark.parametrize(
    ("name", "direction"),
    [("randread.log", "read"), ("randwrite.log", "write"), ("randrw-grouped.log", "read")],
)
def test_one_report_parses_to_fios_own_numbers(name, direction):
    job = report_of(name)["jobs"][0]
    got = values(text_of(name))
    d = job[direction]
    assert got[f"{direction}.iops"] == d["iops"]
    assert got[f"{direction}.bandwidth"] == d["bw_bytes"]
    assert got[f"{direction}.bytes"] == d["io_bytes"]
    assert got[f"{direction}.ios"] == d["total_ios"]
    assert got[f"{direction}.runtime"] == d["runtime"] / 1000  # ms
    # Nanoseconds in seconds: the percentiles are whole ns, the means fio's 6 decimals.
    pct = d["clat_ns"]["percentile"]
    assert got[f"{direction}.clat_p50"] == pct["50.000000"] / 1e9
    assert got[f"{direction}.clat_p99"] == pct["99.000000"] / 1e9
    assert got[f"{direction}.clat_p99.9"] == pct["99.900000"] / 1e9
    assert got[f"{direction}.clat_p99.99"] == pct["99.990000"] / 1e9
    assert got[f"{direction}.lat_mean"] == pytest.approx(d["lat_ns"]["mean"] / 1e9, rel=1e-15)
    assert got[f"{direction}.lat_max"] == d["lat_ns"]["max"] / 1e9
    assert got[f"{direction}.clat_min"] == d["clat_ns"]["min"] / 1e9
    assert got["jobs"] == 1
    if [x for x in ("read", "write", "trim") if job[x]["total_ios"]] == [direction]:
        # One direction of one job did all the I/O: its latency is the run's.
        assert got["clat_p99"] == got[f"{direction}.clat_p99"]
        assert got["lat_mean"] == got[f"{direction}.lat_mean"]


def test_units_are_base_units():
    units = {k: u for k, (_, u) in metrics(text_of("randread.log")).items()}
    assert units["iops"] == units["read.iops"] == "1/s"
    assert units["throughput"] == units["read.bandwidth"] == "B/s"
    assert units["bytes"] == units["read.bytes"] == "B"
    assert units["read.clat_p99"] == units["read.lat_mean"] == units["runtime"] == "s"
    assert units["read.ios"] == units["jobs"] == "count"
    assert units["disk.vda.util"] == ""


def test_a_direction_without_io_has_no_rows():
    got = values(text_of("randread.log"))
    assert not [k for k in got if k.startswith(("write.", "trim.", "sync."))]
    assert got["iops"] == got["read.iops"]
    assert got["throughput"] == got["read.bandwidth"]


def test_mixed_report_totals_both_directions():
    job = report_of("randrw-grouped.log")["jobs"][0]
    got = values(text_of("randrw-grouped.log"))
    assert got["iops"] == pytest.approx(job["read"]["iops"] + job["write"]["iops"], rel=1e-15)
    assert got["throughput"] == job["read"]["bw_bytes"] + job["write"]["bw_bytes"]
    assert got["bytes"] == job["read"]["io_bytes"] + job["write"]["io_bytes"]
    # group_reporting: fio merged the clones itself, percentiles included.
    assert got["write.clat_p99"] == job["write"]["clat_ns"]["percentile"]["99.000000"] / 1e9
    # Over both directions: the mean of every I/O; no percentile, which cannot be merged.
    r, w = job["read"]["lat_ns"], job["write"]["lat_ns"]
    mean = (r["N"] * r["mean"] + w["N"] * w["mean"]) / (r["N"] + w["N"]) / 1e9
    assert got["lat_mean"] == pytest.approx(mean, rel=1e-12)
    assert got["lat_max"] == max(r["max"], w["max"]) / 1e9
    assert "clat_p99" not in got


def test_two_jobs_are_summed_and_each_kept_under_its_name():
    a, b = report_of("randrw-2jobs.log")["jobs"]
    assert a["jobname"] == b["jobname"] == "randrw"
    got = values(text_of("randrw-2jobs.log"))
    assert got["jobs"] == 2
    for d in ("read", "write"):
        assert got[f"{d}.iops"] == pytest.approx(a[d]["iops"] + b[d]["iops"], rel=1e-15)
        assert got[f"{d}.bandwidth"] == a[d]["bw_bytes"] + b[d]["bw_bytes"]
        assert got[f"{d}.ios"] == a[d]["total_ios"] + b[d]["total_ios"]
        # The mean over every I/O of both jobs: each job's mean weighted by its count.
        na, nb = a[d]["lat_ns"]["N"], b[d]["lat_ns"]["N"]
        mean = (na * a[d]["lat_ns"]["mean"] + nb * b[d]["lat_ns"]["mean"]) / (na + nb) / 1e9
        assert got[f"{d}.lat_mean"] == pytest.approx(mean, rel=1e-12)
        assert got[f"{d}.lat_max"] == max(a[d]["lat_ns"]["max"], b[d]["lat_ns"]["max"]) / 1e9
        # Percentiles of two jobs cannot be merged from their summaries: only per job.
        assert f"{d}.clat_p99" not in got
        for k, job in ((1, a), (2, b)):
            assert got[f"job.randrw.{k}.{d}.iops"] == job[d]["iops"]
            p99 = job[d]["clat_ns"]["percentile"]["99.000000"]
            assert got[f"job.randrw.{k}.{d}.clat_p99"] == p99 / 1e9
    assert got["iops"] == pytest.approx(
        sum(j[d]["iops"] for j in (a, b) for d in ("read", "write")), rel=1e-15
    )
    assert "clat_p99" not in got


def test_fsync_calls_are_counted_with_their_latency():
    sync = report_of("randwrite.log")["jobs"][0]["sync"]
    got = values(text_of("randwrite.log"))
    assert got["sync.ios"] == sync["total_ios"] == 1499  # 23993 writes, fsync=16
    assert got["sync.lat_p99"] == sync["lat_ns"]["percentile"]["99.000000"] / 1e9


def test_disk_utilisation_is_a_fraction_and_ticks_are_seconds():
    disk = report_of("randread.log")["disk_util"][0]
    got = values(text_of("randread.log"))
    assert got["disk.vda.util"] == pytest.approx(disk["util"] / 100, rel=1e-15)
    assert got["disk.vda.read_ios"] == disk["read_ios"]
    assert got["disk.vda.read_ticks"] == disk["read_ticks"] / 1000


@pytest.mark.parametrize(
    ("name", "said", "line"),
    [
        ("failed-nodir.log", "fio printed no report: fio: /var/tmp/", 1),
        ("failed-engine.log", "fio printed no report: fio: engine nosuchengine not loadable", 1),
        ("failed-enospc.log", "fio job 'full' failed with error 28 (No space left on device)", 1),
        ("cut.log", "fio's JSON report is cut off", None),
    ],
)
def test_failed_runs_are_parse_errors_with_fios_message(name, said, line):
    with pytest.raises(ParseError) as e:
        fio.parse_text(text_of(name), SOURCE)
    assert said in e.value.message
    assert e.value.source == SOURCE
    if line is not None:
        assert e.value.line == line
    else:
        assert 1 <= e.value.line <= len(text_of(name).splitlines())


@pytest.mark.parametrize(
    ("name", "first"),
    [
        ("failed-nodir.log", "is not a directory"),
        ("failed-engine.log", "fio: engine nosuchengine not loadable"),
        ("failed-enospc.log", "fio: io_u error on file /dev/full: No space left on device"),
    ],
)
def test_a_failed_cells_reason_is_fios_first_message(name, first):
    reason = fio.error_reason({"fio.log": text_of(name)})
    assert reason.startswith("fio.log:1: fio: ")
    assert first in reason


def test_the_version_is_read_from_fio_and_the_report():
    assert fio.parse_version("fio-3.33\n") == "3.33"
    assert fio.parse_version(report_of("randread.log")["fio version"]) == "3.33"
    assert fio.version_argv({"command": "/opt/fio/bin/fio"}) == ("/opt/fio/bin/fio", "--version")


# ---------------------------------------------------------------------------- any text

REAL = sorted(p.name for p in DATA.glob("*.log"))
TEXTS = {name: text_of(name) for name in REAL}
NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
JUNK = ("NaN", "Infinity", "-1", "-0.5", "1e999", "1e-999", '"7"', "true", "null", "[]", "{}")
JUNK += ("9" * 4400, "1.2.3", "", "0", "99999999999999999999999")


@st.composite
def damaged_reports(draw) -> str:
    """A real fio log cut, with a number made junk, a line dropped or repeated, or a
    character inserted."""
    text = TEXTS[draw(st.sampled_from(REAL))]
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(("cut", "number", "drop", "repeat", "insert")))
        if op == "cut":
            text = text[: draw(st.integers(0, len(text)))]
        elif op == "number":
            spans = [m.span() for m in NUMBER.finditer(text)]
            if spans:
                a, b = spans[draw(st.integers(0, len(spans) - 1))]
                text = text[:a] + draw(st.sampled_from(JUNK)) + text[b:]
        elif op in ("drop", "repeat"):
            lines = text.split("\n")
            i = draw(st.integers(0, len(lines) - 1))
            lines[i : i + 1] = [] if op == "drop" else [lines[i], lines[i]]
            text = "\n".join(lines)
        else:
            i = draw(st.integers(0, len(text)))
            text = text[:i] + draw(st.sampled_from('{}[]",:0 \n\r-e.')) + text[i:]
    return text


def outcome(text: str) -> list | ParseError:
    """The metrics of ``text``, or its ParseError; any other exception fails the test."""
    try:
        return fio.parse_cell({SOURCE: text})
    except ParseError as e:
        return e


garbage = st.one_of(
    st.text(max_size=300),
    st.binary(max_size=300).map(lambda b: b.decode("latin-1")),
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
        lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=10), kids),
        max_leaves=20,
    ).map(lambda v: json.dumps(v, indent=2)),
    damaged_reports(),
)


@settings(max_examples=600, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])  # fmt: skip
@given(text=garbage)
def test_any_text_parses_or_is_a_parse_error_naming_the_log(text):
    got = outcome(text)
    if isinstance(got, ParseError):
        assert got.source == SOURCE
        assert got.line is None or 1 <= got.line <= max(len(text.splitlines()), 1)
    else:
        for m in got:
            assert math.isfinite(m.value), m
            assert m.value >= 0, m
    fio.error_reason({SOURCE: text})  # the runner's other reader answers too


@pytest.mark.parametrize(
    "text",
    ["", "\n", "{", "[" * 100_000, "{\n" + '{"a":' * 50_000, '{"fio version": "fio-3.33"}'],
)
def test_hostile_text_is_a_parse_error(text):
    with pytest.raises(ParseError):
        fio.parse_text(text, SOURCE)


# ---------------------------------------------------------------------------- random numbers

ns = st.integers(0, 10**13)
fixed6 = st.integers(0, 10**15).map(lambda n: f"{n // 10**6}.{n % 10**6:06d}")  # fio's %f
PCTS = ("1.000000", "50.000000", "99.000000", "99.900000", "99.990000")


@st.composite
def reports(draw) -> tuple[str, dict]:
    """A report with fio's fields and layout and random numbers, and those numbers."""
    d = {
        "io_bytes": draw(st.integers(1, 10**15)),
        "bw_bytes": draw(st.integers(0, 10**12)),
        "iops": draw(fixed6),
        "runtime": draw(st.integers(0, 10**9)),
        "total_ios": draw(st.integers(1, 10**12)),
        "mean": draw(fixed6),
        "stddev": draw(fixed6),
        "min": draw(ns),
        "max": draw(ns),
        "pct": [draw(ns) for _ in PCTS],
    }
    lat = (
        f'{{"min" : {d["min"]}, "max" : {d["max"]}, "mean" : {d["mean"]}, '
        f'"stddev" : {d["stddev"]}, "N" : {d["total_ios"]}'
    )
    pct = ", ".join(f'"{p}" : {v}' for p, v in zip(PCTS, d["pct"], strict=True))
    direction = draw(st.sampled_from(fio.DIRECTIONS))
    block = (
        f'{{"io_bytes" : {d["io_bytes"]}, "bw_bytes" : {d["bw_bytes"]}, "iops" : {d["iops"]}, '
        f'"runtime" : {d["runtime"]}, "total_ios" : {d["total_ios"]}, "short_ios" : 0, '
        f'"drop_ios" : 0, "lat_ns" : {lat}}}, "clat_ns" : {lat}, "percentile" : {{{pct}}}}}}}'
    )
    text = (
        '{\n  "fio version" : "fio-3.33",\n  "jobs" : [\n    {"jobname" : "j", "error" : 0, '
        f'"{direction}" : {block}}}\n  ]\n}}\n'
    )
    return text, {**d, "direction": direction}


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(case=reports())
def test_a_valid_report_parses_to_exactly_its_numbers_converted(case):
    text, d = case
    got = values(text)
    p = d["direction"]
    # Every conversion rounds once, from the decimal text: computed here with fractions.
    assert got[f"{p}.iops"] == float(Fraction(d["iops"])) == got["iops"]
    assert got[f"{p}.bandwidth"] == d["bw_bytes"] == got["throughput"]
    assert got[f"{p}.bytes"] == d["io_bytes"]
    assert got[f"{p}.runtime"] == float(Fraction(d["runtime"], 1000))
    assert got[f"{p}.lat_mean"] == float(Fraction(d["mean"]) / 10**9)
    assert got[f"{p}.clat_stddev"] == float(Fraction(d["stddev"]) / 10**9)
    assert got[f"{p}.lat_min"] == float(Fraction(d["min"], 10**9))
    assert got[f"{p}.lat_max"] == float(Fraction(d["max"], 10**9))
    for name, v in zip(("p1", "p50", "p99", "p99.9", "p99.99"), d["pct"], strict=True):
        assert got[f"{p}.clat_{name}"] == float(Fraction(v, 10**9))


def test_nanoseconds_are_converted_with_one_rounding():
    # 0.3 s written as fio writes it: 300000000.000001 ns. Through a double first, then
    # divided, it would be 0.30000000000000004 s; from the digits it is the double nearest.
    text = (
        '{\n"fio version" : "fio-3.33", "jobs" : [{"jobname" : "j", "error" : 0, "read" : '
        '{"io_bytes" : 1, "bw_bytes" : 1, "iops" : 1.0, "runtime" : 1, "total_ios" : 1, '
        '"lat_ns" : {"min" : 1, "max" : 1, "mean" : 300000000.000001, "stddev" : 0.0, "N" : 1}}'
        "}]}\n"
    )
    exact = Fraction("300000000.000001") / 10**9
    assert values(text)["read.lat_mean"] == float(exact)


# ---------------------------------------------------------------------------- commands


def test_option_values_reach_fio_as_one_argument_each_through_sh():
    params = {
        "dir": "/var/tmp/perfpost",
        "name": "q",
        "rw": "randread",
        "size": "64M",
        "direct": True,
        "time_based": True,
        "options": {
            "description": 'it\'s a "quoted" value; with $HOME and `spaces`',
            "lat_percentiles": True,
            "norandommap": None,
            "randrepeat": False,
            "percentile_list": "50:99:99.9",
            "write_bw_log": "{work}/bw log",
        },
    }
    work = "/var/tmp/perfpost/perfpost-abc"
    argv = fio.argv(params, work)
    assert argv == [
        "fio",
        "--output-format=json",
        "--name=q",
        f"--directory={work}",
        "--rw=randread",
        "--size=64M",
        "--direct=1",
        "--time_based",
        '--description=it\'s a "quoted" value; with $HOME and `spaces`',
        "--lat_percentiles",
        "--randrepeat=0",
        "--percentile_list=50:99:99.9",
        f"--write_bw_log={work}/bw log",
    ]
    # What sh hands the program is exactly that list.
    script = "printf '%s\\0' " + hostscript.quote(argv)
    out = subprocess.run(["sh", "-c", script], capture_output=True, check=True).stdout
    assert out.decode().split("\0")[:-1] == argv


def test_a_filename_replaces_the_directory():
    params = {"dir": "/d", "size": "1M", "options": {"filename": "{work}/f"}}
    argv = fio.argv(params, "/d/perfpost-x")
    assert "--filename=/d/perfpost-x/f" in argv
    assert not [a for a in argv if a.startswith("--directory")]


def test_plan_measures_one_fio_into_its_log():
    plan = fio.plan({"dir": "/d", "rw": "randwrite", "bs": "4k", "size": "1M"}, "/d/perfpost-x")
    (proc,) = plan.measure
    assert proc.log == fio.LOG
    assert plan.writes
    assert not fio.plan({"dir": "/d", "rw": "randread", "size": "1M"}, "/d/p").writes


def experiment(params: dict, axes: dict | None = None) -> dict:
    return {"experiments": {"e": {"tool": "fio", "params": params, "axes": axes or {}}}}


@pytest.mark.parametrize(
    ("params", "where", "said"),
    [
        ({"size": "1M"}, "experiments.e[default].params", "'dir' is a required property"),
        ({"dir": "/d"}, "experiments.e[default].params", "needs to know how much I/O"),
        ({"dir": "/d", "size": "1M", "rw": "randred"}, "params.rw", "does not match"),
        ({"dir": "/d", "size": "1M", "iodepth": 0}, "params.iodepth", "less than the minimum"),
        ({"dir": "/d", "size": "1M", "options": {"output": "x"}}, "options.output", "sets"),
        ({"dir": "/d", "size": "1M", "options": {"iodepth": 4}}, "options.iodepth", "own"),
        ({"dir": "/d", "size": "1M", "options": {"bad name": 1}}, "options.bad name", "names"),
        ({"dir": "/d", "size": "1M", "options": {"cpus_allowed": [0, 1]}}, "cpus_allowed", "one"),
        ({"dir": "/d", "options": {"filename": "rel"}}, "options.filename", "absolute"),
        ({"dir": "/d", "size": "1M", "blocksize": "4k"}, "params", "unknown key"),
    ],
)
def test_config_mistakes_name_the_key(params, where, said):
    with pytest.raises(ConfigError) as e:
        config.build_plan(experiment(params))
    assert where in e.value.where
    assert said in e.value.message


def test_axes_set_typed_options_and_templates_fill_free_ones():
    plan = config.build_plan(
        experiment(
            {"dir": "/d", "size": "1M", "options": {"ioengine_note": "{mode}"}},
            {"iodepth": [1, 16], "mode": ["a"]},
        )
    )
    params = [plan.experiments["e"].resolved[c.id] for c in plan.experiments["e"].cells]
    assert [p["iodepth"] for p in params] == [1, 16]
    assert params[0]["options"] == {"ioengine_note": "a"}


def test_the_method_names_pattern_depth_and_cache():
    lines = fio.describe(
        {
            "params": {"dir": "/var/tmp/perfpost", "bs": "4k", "size": "64M", "direct": 1,
                       "ioengine": "libaio", "runtime": 3, "time_based": True},
            "axes": {"rw": ["randread", "randwrite"], "iodepth": [1, 16]},
        }
    )  # fmt: skip
    text = " ".join(lines)
    for said in ("`randread` or `randwrite` (the `rw` axis)", "blocks of `4k`", "O_DIRECT"):
        assert said in text
    for said in ("`libaio` with `1` or `16` (the `iodepth` axis)", "for `3` s (`time_based`)"):
        assert said in text


def test_a_slow_sync_after_writes_is_added_to_the_write_time():
    from perfpost.tools.base import sync_adjusted

    write = report_of("randwrite.log")["jobs"][0]["write"]
    adjusted = {
        m.name: m.value
        for m in sync_adjusted(fio.parse_text(text_of("randwrite.log"), SOURCE), 0.5,
                               fio.SYNC_ADJUST)
    }  # fmt: skip
    seconds = write["runtime"] / 1000 + 0.5
    assert adjusted["write.runtime_adjusted"] == pytest.approx(seconds)
    assert adjusted["write.bandwidth_adjusted"] == pytest.approx(write["io_bytes"] / seconds)


@pytest.mark.parametrize("name", REAL)
def test_every_unit_is_a_base_unit(name):
    from perfpost.units import BASE_UNITS

    try:
        got = fio.parse_text(text_of(name), SOURCE)
    except ParseError:
        return
    assert {m.unit for m in got} <= set(BASE_UNITS)


FOREIGN = sorted(
    str(p.relative_to(DATA.parent))
    for tool in ("dd", "freon", "teragen", "yarn")
    for p in (DATA.parent / tool).iterdir()
    if p.suffix in (".log", ".json")
)


@pytest.mark.parametrize("rel", FOREIGN)
def test_another_tools_log_is_a_parse_error(rel):
    with pytest.raises(ParseError):
        fio.parse_text((DATA.parent / rel).read_bytes().decode(), SOURCE)
