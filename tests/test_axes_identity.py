"""Axis values keep the label the config wrote (`1`, `1.5`, `10k`), from real dd runs through
the tidy tables (CSV and Parquet) to comparisons and figures: a table that turned `1` into
`1.0` made `{x: 1}` select no run and dropped its points from the figures."""

import json
import uuid
from pathlib import Path

import pytest

from perfpost import cli, tools
from perfpost.analysis import compare, tidy
from perfpost.glue import experiment_json
from perfpost.plan.build import build_plan
from perfpost.run.hosts import LocalHost
from perfpost.run.runner import run_cell

REPEATS = 2


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """Eight real dd cells (x: 1, 1.5 by bs: 1, 10k, two repeats each) on /dev/shm, and
    their tables written by the workflow's own step (`perfpost tables`)."""
    root = tmp_path_factory.mktemp("axes")
    shm = Path(f"/dev/shm/perfpost-axes-{uuid.uuid4().hex[:8]}")
    cfg = {
        "experiments": {
            "t": {
                "tool": "dd",
                "repeats": REPEATS,
                "params": {"dir": str(shm), "count": 8},
                # x names no dd option: a label only. bs is dd's block size: 1 byte and
                # 10k (10 x 1024 bytes, dd's own reading of `10k`).
                "axes": {"x": [1, 1.5], "bs": [1, "10k"]},
                "compare": [
                    {"baseline": {"x": 1}, "candidate": {"x": 1.5}, "metric": "throughput"},
                    {"baseline": {"bs": 1}, "candidate": {"bs": "10k"}, "metric": "throughput"},
                ],
            }
        }
    }
    plan = build_plan(cfg)
    records = []
    for spec in plan.jobs():
        path = root / "results" / spec.cell / f"r{spec.repeat}" / "attempt-1" / "record.json"
        run_cell(spec, path, LocalHost())
        records.append(str(path))
    out = root / "tables"
    args = cli.build_parser().parse_args(
        ["tables", "--axes", json.dumps(["x", "bs"]), "--out-dir", str(out), *records]
    )
    assert args.func(args) == 0
    if shm.exists():
        shm.rmdir()
    return {"plan": plan, "tables": out, "exp": json.loads(experiment_json(plan, "t"))}


# Every cell the config names, as the pairs of labels it wrote.
CELLS = {("1", "1"), ("1", "10k"), ("1.5", "1"), ("1.5", "10k")}


@pytest.mark.parametrize("name", ["tidy.csv", "tidy.parquet"])
def test_axis_columns_hold_the_labels_the_config_wrote(made, name):
    df = tidy.read(made["tables"] / name)
    assert set(zip(df["x"], df["bs"], strict=True)) == CELLS
    # The cell id is made of the same labels: the two never disagree.
    assert (df["cell"] == "x=" + df["x"] + ",bs=" + df["bs"]).all()
    done = tidy.results(df)
    assert len(done[done["metric"] == "throughput"]) == len(CELLS) * REPEATS


@pytest.mark.parametrize("name", ["tidy.csv", "tidy.parquet"])
def test_a_comparison_selecting_x_1_finds_its_runs(made, name):
    df = tidy.read(made["tables"] / name)
    rows = compare.experiment_comparisons(df, made["exp"], tools.get("dd").PLOT_METRICS)
    # Each comparison is made within each value of the other axis: one cell a side, so
    # every group has its REPEATS runs on both sides.
    groups = {(r.base_label, r.group): (r.result.n_base, r.result.n_cand) for r in rows}
    assert groups == {
        ("x=1", "bs=1"): (REPEATS, REPEATS),
        ("x=1", "bs=10k"): (REPEATS, REPEATS),
        ("bs=1", "x=1"): (REPEATS, REPEATS),
        ("bs=1", "x=1.5"): (REPEATS, REPEATS),
    }


def _draw(made, tmp_path, plot):
    exp = {**made["exp"], "plot": plot}
    args = cli.build_parser().parse_args(
        [
            "figures",
            "--experiment",
            json.dumps(exp),
            "--tidy",
            str(made["tables"] / "tidy.parquet"),
            "--out-dir",
            str(tmp_path / "figures"),
        ]
    )
    assert args.func(args) == 0


def _points(ax) -> int:
    return sum(len(c.get_offsets()) for c in ax.collections)


@pytest.mark.parametrize(
    ("x", "ticks", "scale", "positions"),
    [
        ("x", ["1", "1.5"], "linear", [1.0, 1.5]),
        # 10k is 10240 bytes to dd; 1 to 10240 spans four decades: a log axis.
        ("bs", ["1", "10k"], "log", [1.0, 10240.0]),
    ],
)
def test_every_run_and_median_is_drawn(made, tmp_path, figures, x, ticks, scale, positions):
    _draw(made, tmp_path, {"x": x})
    fig = next(f for f in figures if "Throughput" in f.get_suptitle())
    (ax,) = fig.axes
    # Every run a point, and every cell a median bar: 8 runs, 4 cells.
    assert _points(ax) == len(CELLS) * REPEATS + len(CELLS)
    assert [t.get_text() for t in ax.get_xticklabels()] == ticks
    assert ax.get_xscale() == scale
    assert list(ax.get_xticks()) == positions


def test_a_boolean_axis_is_matched_by_the_label_true(made):
    """`true` in a comparison is the label `true` that the cell ids and tables hold; the
    config check and the tables agree on it."""
    cfg = {
        "experiments": {
            "t": {
                "tool": "dd",
                "params": {"dir": "/dev/shm/unused", "bs": "4k", "count": 1},
                "axes": {"warm": [True, False]},
                "compare": [{"baseline": {"warm": False}, "candidate": {"warm": True}}],
            }
        }
    }
    plan = build_plan(cfg)
    assert [c.id for c in plan.experiments["t"].cells] == ["warm=true", "warm=false"]
    records = [
        {
            "experiment": "t",
            "cell": f"warm={w}",
            "host": "localhost",
            "repeat": r,
            "labels": {"warm": w},
            "tool": "dd",
            "status": "done",
            "attempt": 1,
            "exit_code": 0,
            "metrics": [{"name": "throughput", "value": 1e6 * r, "unit": "B/s"}],
        }
        for w in ("true", "false")
        for r in (1, 2)
    ]
    df = tidy.from_records(records, ["warm"])
    exp = json.loads(experiment_json(plan, "t"))
    (row,) = compare.experiment_comparisons(df, exp, ["throughput"])
    assert (row.result.n_base, row.result.n_cand) == (2, 2)


def test_labels_pandas_would_retype_come_back_as_written(tmp_path):
    """`NA` and `null` are values, not missing ones; `01` and `1.50` are not the number 1 or
    1.5."""
    records = [
        {
            "experiment": "t",
            "cell": f"region={g},v={v}",
            "host": "localhost",
            "repeat": 1,
            "labels": {"region": g, "v": v},
            "tool": "dd",
            "status": "done",
            "attempt": 1,
            "exit_code": 0,
            "metrics": [],
        }
        for g, v in (("NA", "01"), ("null", "1.50"), ("EU", "10k"))
    ]
    df = tidy.from_records(records, ["region", "v"])
    paths = [tmp_path / "tidy.csv", tmp_path / "tidy.parquet", tmp_path / "tidy.schema.json"]
    tidy.write(df, *paths, ["region", "v"])
    want = [("NA", "01"), ("null", "1.50"), ("EU", "10k")]
    for path in paths[:2]:
        back = tidy.read(path)
        assert list(zip(back["region"], back["v"], strict=True)) == want, path
    # Without the schema file beside it (a post's copy of the data), the header says which
    # columns are axes: those between the fixed columns and `tool`.
    copy = tmp_path / "copy" / "data.csv"
    copy.parent.mkdir()
    copy.write_text(paths[0].read_text())
    back = tidy.read(copy)
    assert list(zip(back["region"], back["v"], strict=True)) == want
