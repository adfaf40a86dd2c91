"""The post's method names the clock freon's rate really came from, through the `post` step
itself, on tidy tables made from real freon logs (tests/data/freon)."""

import argparse
import json
from pathlib import Path

from perfpost import records
from perfpost.analysis import tidy
from perfpost.cli import steps
from perfpost.tools import freon
from tests.e2e import experiment_dict

DATA = Path(__file__).parent / "data" / "freon"
EXPERIMENT = experiment_dict(
    name="cmdw",
    title="cmdw",
    tool="freon",
    params={"program": "vapor", "subcommand": "cmdw", "dir": "/tmp"},
    axes={"log": ["old", "new"]},
    hosts=["h"],
)


def post(tmp_path: Path, runs: dict[str, str]) -> str:
    """Render the post of one run per cell (cell label -> freon log), as the workflow does."""
    recs = []
    for label, name in runs.items():
        text = (DATA / name).read_text()
        parsed = freon.parse_cell({name: text}, wall_time=2.5)
        rec = {
            "schema_version": records.RECORD_SCHEMA_VERSION,
            "experiment": "cmdw",
            "cell": f"log={label}",
            "host": "h",
            "repeat": 1,
            "attempt": 1,
            "labels": {"log": label},
            "tool": "freon",
            "status": "done",
            "exit_code": 0,
            "start": "2026-11-22T05:04:54+00:00",
            "end": "2026-11-22T05:04:57+00:00",
            "command": "ozone vapor cmdw",
            "logs": [],
            "metrics": [m.__dict__ for m in parsed],
        }
        path = tmp_path / label / "record.json"
        path.parent.mkdir()
        records.write_json_atomic(path, rec)
        recs.append((str(path), rec))
    axes = ["log"]
    tidy.write(
        tidy.from_records([r for _, r in recs], axes),
        tmp_path / "tidy.csv",
        tmp_path / "tidy.parquet",
        tmp_path / "tidy.schema.json",
        axes,
    )
    tidy.cells_table(recs).to_csv(tmp_path / "cells.csv", index=False)
    (tmp_path / "figures").mkdir()
    (tmp_path / "figures" / "figures.json").write_text("[]")
    args = argparse.Namespace(
        experiment=json.dumps({**EXPERIMENT, "axes": {"log": list(runs)}}),
        tidy=str(tmp_path / "tidy.parquet"),
        cells=str(tmp_path / "cells.csv"),
        figures=str(tmp_path / "figures"),
        env=[],
        out=str(tmp_path / "post" / "index.md"),
        data=str(tmp_path / "post" / "data.csv"),
        comparisons=None,
        steady=None,
        steady_data=None,
    )
    assert steps._cmd_post(args) == 0
    text = (tmp_path / "post" / "notebook.md").read_text()
    return text.split("## Test method")[1].split("\n## ")[0]


def test_a_post_of_whole_second_logs_says_the_rate_is_host_wall_time(tmp_path):
    # cmdw-oldpattern.log: log4j's "%d{yyyy-MM-dd HH:mm:ss}" pattern, whole seconds only.
    method = post(tmp_path, {"old": "cmdw-oldpattern.log"})
    assert "divided by the run's wall time on the host, JVM start included" in method
    assert "taken from freon's millisecond log timestamps" not in method


def test_a_post_of_millisecond_logs_says_the_rate_is_freons_timestamps(tmp_path):
    method = post(tmp_path, {"new": "cmdw-perchunk.log"})
    assert "taken from freon's millisecond log timestamps" in method
    assert "wall time" not in method


def test_a_post_of_both_names_each_cells_clock(tmp_path):
    method = post(tmp_path, {"old": "cmdw-oldpattern.log", "new": "cmdw-perchunk.log"})
    assert "(start of the test to its summary) in `log=new`;" in method
    assert "to the millisecond) in `log=old`." in method
