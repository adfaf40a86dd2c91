"""Metric names with dots and dashes (freon's `chunk-write.mean`, fio's `read.clat_p99`)
keep their identity in figure files and in the post's per-run table."""

from __future__ import annotations

import pandas as pd

from perfpost.analysis import plots
from perfpost.analysis.report import run_table


def rows(metric: str, unit: str, values: list[float]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "experiment": "e",
                "cell": f"x={x}",
                "host": "localhost",
                "repeat": 1,
                "x": str(x),
                "tool": "freon",
                "metric": metric,
                "value": v,
                "unit": unit,
                "status": "done",
                "attempt": 1,
            }
            for x, v in zip((1, 2), values, strict=True)
        ]
    )


def test_two_dotted_metrics_get_two_figures(tmp_path):
    df = pd.concat(
        [rows("chunk-write.mean", "s", [0.0007, 0.0009]), rows("chunk-write.p99", "s", [1, 2])]
    )
    drawn = plots.plot_experiment(
        df, "t", {"x": ["1", "2"]}, ["chunk-write.mean", "chunk-write.p99"], "x", tmp_path
    )
    names = sorted(f["png"] for f in drawn)
    assert names == ["chunk-write.mean.png", "chunk-write.p99.png"]
    assert all((tmp_path / n).is_file() for n in names)


def test_the_per_run_table_reads_dotted_names_and_times_in_one_unit():
    # 0.0007 s and 0.0009 s: 700 and 900 us, in a column headed (us).
    table = run_table(rows("chunk-write.mean", "s", [0.0007, 0.0009]), ["chunk-write.mean"])
    assert table["header"][-1].endswith("(us)"), table["header"]
    assert [r[-1] for r in table["rows"]] == ["700", "900"]


def test_the_per_run_table_reads_byte_rates_in_one_unit():
    # 336,040,473 B/s and 357,642,206 B/s (two cluster-read runs): 336.0 and 357.6 MB/s,
    # in a column headed (MB/s), as the results table shows them.
    table = run_table(rows("throughput", "B/s", [336_040_473, 357_642_206]), ["throughput"])
    assert table["header"][-1] == "Throughput (MB/s)", table["header"]
    assert [r[-1] for r in table["rows"]] == ["336.0", "357.6"]
