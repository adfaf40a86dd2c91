"""Tidy tables, statistics and the environment, from records of real runs."""

import json
import math

import pandas as pd
import pyarrow.parquet as pq
import pytest

from perfpost.analysis import stats, tidy
from perfpost.plan.build import build_plan
from perfpost.records import read_record
from perfpost.run import envinfo
from perfpost.run.hosts import LocalHost
from perfpost.run.runner import run_cell
from tests.e2e import experiment_dict


@pytest.fixture(scope="module")
def real_records(tmp_path_factory):
    """Four real cells (2 storage x 2 repeats) and one that fails, run on localhost."""
    root = tmp_path_factory.mktemp("runs")
    (root / "a").mkdir()
    cfg = {
        "experiments": {
            "t": {
                "tool": "dd",
                "repeats": 2,
                "after": ["sync"],
                "params": {"dir": "{storage}", "bs": "4k", "count": 32},
                "axes": {"storage": {"a": str(root / "a"), "bad": "/proc/perfpost-no"}},
            }
        }
    }
    host = LocalHost()
    out = []
    for spec in build_plan(cfg).jobs():
        path = root / spec.cell / f"r{spec.repeat}" / "attempt-1" / "record.json"
        run_cell(spec, path, host)
        out.append((str(path), read_record(path)))
    return out


def test_one_row_per_cell_host_repeat_and_metric(real_records):
    df = tidy.from_records([r for _, r in real_records], ["storage"])
    assert list(df.columns) == [
        "experiment",
        "cell",
        "host",
        "repeat",
        "storage",
        "tool",
        "metric",
        "value",
        "unit",
        "status",
        "attempt",
    ]
    assert not df.duplicated(["cell", "host", "repeat", "metric"]).any()
    done = df[df["status"] == "done"]
    assert set(done["storage"]) == {"a"}
    assert set(done["metric"]) >= {
        "bytes",
        "elapsed",
        "throughput",
        "throughput_adjusted",
        "sync_time",
        "wall_time",
        "exit_code",
    }
    units = dict(zip(done["metric"], done["unit"], strict=False))
    assert (units["bytes"], units["elapsed"], units["throughput"]) == ("B", "s", "B/s")
    for path, rec in real_records:
        if rec["status"] != "done":
            continue
        rows = done[(done["cell"] == rec["cell"]) & (done["repeat"] == rec["repeat"])]
        by_metric = dict(zip(rows["metric"], rows["value"], strict=True))
        assert by_metric["bytes"] == 32 * 4096, path
        assert by_metric["throughput"] == pytest.approx(
            next(m["value"] for m in rec["metrics"] if m["name"] == "throughput")
        )


def test_failed_cells_are_in_the_table_but_not_results(real_records):
    df = tidy.from_records([r for _, r in real_records], ["storage"])
    failed = df[df["storage"] == "bad"]
    assert set(failed["status"]) == {"failed"}
    assert set(failed["metric"]) == {"exit_code"}
    assert tidy.results(df)["storage"].eq("a").all()
    cells = tidy.cells_table(real_records)
    bad = cells[cells["status"] == "failed"]
    assert len(bad) == 2
    assert bad["reason"].str.contains("preparing the cell failed").all()


def test_csv_and_parquet_carry_the_schema_version(real_records, tmp_path):
    df = tidy.from_records([r for _, r in real_records], ["storage"])
    tidy.write(df, tmp_path / "t.csv", tmp_path / "t.parquet", tmp_path / "s.json", ["storage"])
    meta = json.loads(pq.read_schema(tmp_path / "t.parquet").metadata[b"perfpost.tidy"])
    assert meta["schema_version"] == tidy.TIDY_SCHEMA_VERSION
    assert json.loads((tmp_path / "s.json").read_text())["columns"] == list(df.columns)
    back = tidy.read(tmp_path / "t.parquet")
    pd.testing.assert_frame_equal(back, df)
    assert len(pd.read_csv(tmp_path / "t.csv")) == len(df)


def test_a_table_of_another_schema_version_is_refused(tmp_path):
    pd.DataFrame({"a": [1]}).to_parquet(tmp_path / "old.parquet")
    with pytest.raises(ValueError, match="schema version None"):
        tidy.read(tmp_path / "old.parquet")


def test_summary_medians_come_from_finished_repeats(real_records):
    df = tidy.from_records([r for _, r in real_records], ["storage"])
    s = stats.summarize(df, ["storage"])
    row = s[(s["storage"] == "a") & (s["metric"] == "throughput")].iloc[0]
    values = [
        m["value"]
        for _, r in real_records
        if r["status"] == "done"
        for m in r["metrics"]
        if m["name"] == "throughput"
    ]
    assert row["n"] == 2
    assert row["median"] == pytest.approx(sorted(values)[0] / 2 + sorted(values)[1] / 2)
    assert row["min"] == min(values)
    # Two runs a and b, by hand: sample SD |a - b| / sqrt(2), mean (a + b) / 2.
    a, b = values
    assert row["cv"] == pytest.approx((abs(a - b) / math.sqrt(2)) / ((a + b) / 2), rel=1e-12)
    assert "bad" not in set(s["storage"])


def test_environment_of_this_host():
    result = LocalHost().run(envinfo.SCRIPT, 60)
    env = envinfo.parse(result.stdout)
    assert env["complete"]
    assert env["hostname"]
    assert env["cpu"]["threads"] >= 1
    assert env["cpu"]["model"]
    with open("/proc/meminfo") as fh:
        kib = int(fh.readline().split()[1])
    assert env["memory_bytes"] == kib * 1024
    assert set(env["sysctl"]) >= {"vm.dirty_ratio", "vm.dirty_background_ratio"}
    assert env["kernel"].startswith("Linux")


def test_environment_parser_reads_lsblk_and_cpuinfo_topology():
    text = "\n".join(
        [
            "@@section vendor",
            "Dell Inc.",
            "PowerEdge R440",
            "@@section cpuinfo",
            "processor\t: 0",
            "model name\t: Intel(R) Xeon(R) CPU E5-2630 v3 @ 2.40GHz",
            "physical id\t: 0",
            "core id\t: 0",
            "processor\t: 1",
            "model name\t: Intel(R) Xeon(R) CPU E5-2630 v3 @ 2.40GHz",
            "physical id\t: 1",
            "core id\t: 0",
            "@@section lsblk",
            json.dumps(
                {
                    "blockdevices": [
                        {
                            "name": "sda",
                            "model": "HUS726060AL4210",
                            "vendor": "HGST    ",
                            "size": 6001175126016,
                            "rota": True,
                            "type": "disk",
                            "tran": "sas",
                        },
                        {
                            "name": "loop0",
                            "model": None,
                            "size": 1000,
                            "rota": False,
                            "type": "loop",
                        },
                    ]
                }
            ),
            "@@section end",
        ]
    )
    env = envinfo.parse(text)
    assert env["vendor"] == "Dell Inc. PowerEdge R440"  # the posts' VENDOR line
    assert envinfo.parse("@@section end")["vendor"] is None  # VMs without DMI
    assert env["cpu"] == {
        "model": "Intel(R) Xeon(R) CPU E5-2630 v3 @ 2.40GHz",
        "threads": 2,
        "sockets": 2,
        "cores": 2,
    }
    assert env["disks"] == [
        {
            "name": "sda",
            "model": "HGST HUS726060AL4210",
            "size_bytes": 6001175126016,
            "rotational": True,
            "transport": "sas",
        }
    ]


def _tidy(values: dict[str, dict[str, list[float]]]) -> pd.DataFrame:
    """A tidy table by hand: {cell's bs: {metric: one value per repeat}}."""
    units = {"throughput": "B/s", "elapsed": "s"}
    rows = [
        {
            "experiment": "t",
            "cell": f"bs={bs}",
            "host": "localhost",
            "repeat": i + 1,
            "bs": bs,
            "tool": "dd",
            "metric": metric,
            "value": v,
            "unit": units[metric],
            "status": "done",
            "attempt": 1,
        }
        for bs, metrics in values.items()
        for metric, vs in metrics.items()
        for i, v in enumerate(vs)
    ]
    return pd.DataFrame(rows)


def test_a_cell_with_one_run_has_no_cv():
    df = _tidy({"4k": {"throughput": [5e8]}, "1M": {"throughput": [1e9, 1.1e9]}})
    s = stats.summarize(df, ["bs"]).set_index("bs")
    assert math.isnan(s.loc["4k", "cv"])  # one run: no spread to speak of, not 0%
    assert s.loc["1M", "cv"] == pytest.approx(math.sqrt(0.5e8**2 * 2) / 1.05e9)


def test_the_cv_warning_names_the_shaky_cell_when_the_table_has_two_metrics(tmp_path):
    from perfpost.analysis import report

    # 4k's throughput: mean 103.33 MB/s, sample sd sqrt((3.33^2 + 26.67^2 + 23.33^2) / 2)
    # = 25.17 MB/s: CV 24.4%. 1M's: CV 0.5%. 64k ran once.
    df = _tidy(
        {
            "4k": {"throughput": [100e6, 130e6, 80e6], "elapsed": [1.0, 0.77, 1.25]},
            "1M": {"throughput": [200e6, 201e6, 199e6], "elapsed": [0.5, 0.5, 0.5]},
            "64k": {"throughput": [150e6], "elapsed": [0.67]},
        }
    )
    exp = experiment_dict(name="t", axes={"bs": ["4k", "1M", "64k"]}, repeats=3)
    cells = pd.DataFrame(columns=list(tidy.CELL_COLUMNS))
    report.render(exp, df, cells, {}, [], tmp_path / "index.md", tmp_path / "d.csv")
    post = (tmp_path / "notebook.md").read_text()  # the record in full: summary, every table
    summary = post.split("## Summary")[1].split("## ")[0]
    (warning,) = [ln for ln in summary.splitlines() if "with care" in ln]
    assert "bs=4k (CV 24.4%)" in warning
    assert "1M" not in warning
    assert "64k" not in warning
    table = post.split("## Results")[1]
    (header,) = [ln for ln in table.splitlines() if ln.startswith("| bs |")]
    cv_col = [c.strip() for c in header.split("|")].index("CV")
    by_cell = {
        cols[1]: cols[cv_col]
        for ln in table.splitlines()
        if ln.startswith("| ") and not ln.startswith("| bs")
        for cols in [[c.strip() for c in ln.split("|")]]
    }
    assert by_cell["4k"] == "24.4% (!)"
    assert by_cell["1M"] == "0.5%"
    assert by_cell["64k"] == "n/a"


def test_checks_these_runs_cannot_test_are_one_caveat_their_reasons_in_the_notebook(tmp_path):
    from perfpost.analysis import report

    # Three runs a cell: no order of three can give Mann-Kendall's exact two-sided p <= 0.05
    # (the smallest, for a perfect trend, is 2/3! = 0.33), so drift is not testable. The post
    # names it in one caveat; the reason is the notebook's, where the link goes.
    df = _tidy(
        {
            "4k": {"throughput": [100e6, 130e6, 80e6]},
            "1M": {"throughput": [200e6, 201e6, 199e6]},
        }
    )
    exp = experiment_dict(name="t", axes={"bs": ["4k", "1M"]}, repeats=3)
    runs = df[["cell", "host", "repeat"]].drop_duplicates().reset_index(drop=True)
    cells = pd.DataFrame(
        [
            {
                **{c: None for c in tidy.CELL_COLUMNS},
                **r,
                "experiment": "t",
                "attempt": 1,
                "status": "done",
                "start": f"2026-12-03T10:00:{2 * i:02d}+00:00",
                "end": f"2026-12-03T10:00:{2 * i + 1:02d}+00:00",
                "record": str(tmp_path / "record.json"),
            }
            for i, r in enumerate(runs.to_dict("records"))
        ]
    )
    (tmp_path / "record.json").write_text('{"schema_version": 1, "status": "done"}')
    report.render(exp, df, cells, {}, [], tmp_path / "index.md", tmp_path / "d.csv")
    post = (tmp_path / "index.md").read_text()
    caveats = post.split("## Caveats", 1)[1].split("\n## ", 1)[0]
    untested = [ln for ln in caveats.splitlines() if "testable" in ln]
    assert len(untested) == 1, caveats
    assert untested[0].startswith("- Not testable at these runs: ")
    assert "drift" in untested[0]
    assert "](notebook.md#design-checks)" in untested[0]
    notebook = (tmp_path / "notebook.md").read_text()
    checks = notebook.split("## Design checks", 1)[1].split("\n## ", 1)[0]
    assert "- Drift: no cell has 5 or more finished runs." in checks


def test_an_axis_named_like_a_series_column_is_left_to_the_cell_id():
    # freon's threads as an axis `t`: the series' own `t` (seconds) stays the only `t`.
    from perfpost.analysis import tidy

    rec = {
        "experiment": "e",
        "cell": "t=4",
        "host": "localhost",
        "repeat": 1,
        "labels": {"t": "4", "s": "1k"},
        "status": "done",
        "series": {"progress": [{"t": 1.0, "completed": 10, "total": 20, "rate": 10.0}]},
    }
    df = tidy.series_table([rec], ["t", "s"])
    assert list(df.columns).count("t") == 1
    assert df["t"].tolist() == [1.0]
    assert df["s"].tolist() == ["1k"]


def test_records_made_with_a_sync_threshold_get_the_one_definition():
    """Records written when a sync was added only above a threshold: one run's 0.05 s sync
    was not added (throughput_adjusted = raw), another's 0.5 s was. The table gives both the
    sync added, by hand: 1e9 B over 2 + 0.05 s = 487.8 MB/s, over 2 + 0.5 s = 400 MB/s."""

    def rec(repeat, sync, added):
        metrics = [
            {"name": "bytes", "value": 1e9, "unit": "B"},
            {"name": "elapsed", "value": 2.0, "unit": "s"},
            {"name": "throughput", "value": 5e8, "unit": "B/s"},
            {"name": "sync_time", "value": sync, "unit": "s"},
            {"name": "sync_added", "value": added, "unit": "s"},
            {"name": "elapsed_adjusted", "value": 2.0 + added, "unit": "s"},
            {"name": "throughput_adjusted", "value": 1e9 / (2.0 + added), "unit": "B/s"},
        ]
        return {"experiment": "e", "cell": "c=1", "host": "h", "repeat": repeat,
                "labels": {"c": "1"}, "tool": "dd", "status": "done", "attempt": 1,
                "exit_code": 0, "metrics": metrics}  # fmt: skip

    df = tidy.from_records([rec(1, 0.05, 0.0), rec(2, 0.5, 0.5)], ["c"])
    got = df.set_index(["repeat", "metric"])["value"]
    assert got[(1, "throughput_adjusted")] == pytest.approx(1e9 / 2.05)
    assert got[(1, "elapsed_adjusted")] == pytest.approx(2.05)
    assert got[(2, "throughput_adjusted")] == pytest.approx(4e8)
    assert "sync_added" not in set(df["metric"])
    assert got[(1, "throughput")] == 5e8  # the raw rate as measured
