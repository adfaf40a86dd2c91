"""fio job files: what perfpost reads of them, where its overrides go, and that fio itself
takes those overrides (a tiny job run by the real fio, its I/O count from fio's report)."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from perfpost.errors import ConfigError
from perfpost.tools import fio
from perfpost.tools.fio import jobfile

FILE = """; a comment
# another
[global]
ioengine=psync
size=${SIZE}

[seq]
rw=write   ; trailing comment
bs=4k

[rand]
stonewall
rw=randread
"""


def test_sections_options_and_variables_are_read_as_fio_writes_them():
    job = jobfile.parse(FILE, "x.fio")
    assert [(s.name, s.line, s.is_job) for s in job.sections] == [
        ("global", 3, False),
        ("seq", 7, True),
        ("rand", 11, True),
    ]
    assert job.sections[1].options == (("rw", "write"), ("bs", "4k"))
    assert job.sections[2].options == (("stonewall", None), ("rw", "randread"))
    assert job.variables == (("SIZE", 5),)


@pytest.mark.parametrize(
    ("text", "line", "said"),
    [
        ("rw=read\n[a]\n", 1, "before any [section]"),
        ("[a]\nrw=read\ninclude other.fio\n", 3, "`include`"),
        ("[a]\nrw=read\n[a]\nrw=write\n", 3, "also at line 1"),
        ("[a]\nsize=${1X}\n", 2, "not a variable name"),
    ],
)
def test_a_file_perfpost_cannot_deliver_as_one_is_refused_at_its_line(text, line, said):
    with pytest.raises(ConfigError) as e:
        jobfile.parse(text, "x.fio")
    assert f"x.fio, line {line}" in str(e.value)
    assert said in str(e.value)


def test_a_file_of_global_sections_only_has_no_job():
    with pytest.raises(ConfigError, match="no job in the file"):
        jobfile.parse("[global]\nrw=read\n", "x.fio")


def test_overrides_follow_each_jobs_own_lines_and_never_touch_global():
    job = jobfile.parse(FILE, "x.fio")
    got = jobfile.render(job, {"size": "1m", "direct": True, "fsync": None}, {"rand": {"bs": 8192}})
    lines = got.splitlines()
    # The global section is as written; each job gets the lines before the blank that ends it.
    assert lines[2:6] == ["[global]", "ioengine=psync", "size=${SIZE}", ""]
    seq = lines.index("[seq]")
    assert lines[seq + 1 : seq + 7] == [
        "rw=write   ; trailing comment",
        "bs=4k",
        jobfile.OVERRIDE_NOTE,
        "size=1m",
        "direct",
        "",
    ]
    rand = lines.index("[rand]")
    assert lines[rand + 3 :] == [jobfile.OVERRIDE_NOTE, "size=1m", "direct", "bs=8192"]


def _params(tmp_path, text, **more):
    path = tmp_path / "job.fio"
    path.write_text(text)
    params = {"dir": str(tmp_path), "jobfile": str(path), **more}
    fio.check_params(params, "e.params")
    return fio.complete_params(params, {}, {})


def test_every_variable_needs_a_value_named_by_its_line(tmp_path):
    path = tmp_path / "job.fio"
    path.write_text(FILE)
    with pytest.raises(ConfigError) as e:
        fio.check_params({"dir": "/d", "jobfile": str(path)}, "e.params")
    assert str(e.value) == (
        "config: e.params.vars: the job file uses ${SIZE} (line 5): give its value as vars.SIZE"
    )


def test_a_section_override_names_a_job_of_the_file(tmp_path):
    path = tmp_path / "job.fio"
    path.write_text(FILE)
    params = {"dir": "/d", "jobfile": str(path), "vars": {"SIZE": "1m"}}
    with pytest.raises(ConfigError, match=r"sections\.nope: no job \[nope\] in the file"):
        fio.check_params({**params, "sections": {"nope": {"bs": "4k"}}}, "e.params")
    with pytest.raises(ConfigError, match="perfpost sets it from `jobfile`"):
        fio.check_params({**params, "jobfile_text": "x"}, "e.params")
    with pytest.raises(ConfigError, match="no such job file"):
        fio.check_params({"dir": "/d", "jobfile": str(tmp_path / "gone.fio")}, "e.params")
    with pytest.raises(ConfigError, match="only with a `jobfile`"):
        fio.check_params({"dir": "/d", "size": "1m", "vars": {"A": 1}}, "e.params")


def test_the_plan_writes_the_file_and_runs_fio_on_it_with_the_variables(tmp_path):
    params = _params(tmp_path, FILE, vars={"SIZE": "2m"}, rw="write")
    plan = fio.plan(params, "/w/perfpost-1")
    ((name, text),) = plan.files
    assert name == "job.fio"
    assert plan.measure[0].argv == (
        "env",
        "SIZE=2m",
        "fio",
        "--output-format=json",
        "/w/perfpost-1/job.fio",
    )
    assert plan.writes  # the override's rw
    assert text.count("directory=/w/perfpost-1") == 2  # each job's files in the scratch
    assert text.count("rw=write") == 3  # seq's own, and the override in both jobs


needs_fio = pytest.mark.skipif(not shutil.which("fio"), reason="fio is installed by scripts/setup")


@needs_fio
def test_fio_itself_takes_the_override_over_the_job_and_global_lines(tmp_path):
    """1 MiB in 64 KiB blocks is 16 writes; the file's own 4 KiB would make 256."""
    # fio refuses a directory that is not there as it reads the line, even if a later line
    # names another: perfpost comments the file's own out.
    text = "[global]\nbs=4k\nsize=4m\ndirectory=/nonexistent-perfpost\n[w]\nrw=write\nbs=4k\n"
    params = _params(tmp_path, text, bs="64k", size="1m")
    work = tmp_path / "work"
    work.mkdir()
    plan = fio.plan(params, str(work))
    (work / plan.files[0][0]).write_text(plan.files[0][1])
    got = subprocess.run(plan.measure[0].argv, capture_output=True, text=True, check=True)
    job = json.loads(got.stdout)["jobs"][0]
    assert job["write"]["total_ios"] == 16
    assert job["write"]["io_bytes"] == 1 << 20
    assert (work / "w.0.0").stat().st_size == 1 << 20  # laid out in the scratch directory


@needs_fio
def test_a_file_fio_refuses_is_refused_here_with_fios_own_words(tmp_path):
    params = _params(tmp_path, "[a]\nrw=read\nsize=1m\n", sections={"a": {"rw": "bogus"}})
    assert fio.refuse(params) == (
        "fio refuses the job file job.fio (fio --parse-only here): "
        "fio: failed parsing rw=bogus; fio: job a dropped"
    )
    assert fio.refuse(_params(tmp_path, "[a]\nrw=read\nsize=1m\n")) is None
    assert fio.refuse({"dir": "/d", "size": "1m"}) is None  # no job file: fio answers on the host
