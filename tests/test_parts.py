"""A run's parts as an axis: the rows of each job (or group) of a fio job file, renamed to the
metric they are of, with the part in a column of its own; the run's totals left out."""

from __future__ import annotations

import pandas as pd

from perfpost.analysis import parts
from perfpost.columns import FIXED_COLUMNS, TAIL_COLUMNS


def tidy(rows):
    out = []
    for metric, value in rows:
        row = {c: None for c in (*FIXED_COLUMNS, "iodepth", *TAIL_COLUMNS)}
        row.update(experiment="e", cell="iodepth=1", host="h", repeat=1, attempt=1)
        row.update(status="done", iodepth="1", metric=metric, value=value, unit="1/s")
        out.append(row)
    return pd.DataFrame(out, columns=[*FIXED_COLUMNS, "iodepth", *TAIL_COLUMNS])


ROWS = [
    ("iops", 300.0),
    ("job.w.1.iops", 100.0),
    ("job.w.2.iops", 110.0),
    ("job.r.1.iops", 90.0),
    ("job.r.1.read.clat_p99", 0.002),
    ("group.w.iops", 210.0),
    ("group.r.iops", 90.0),
]


def test_by_job_each_job_is_a_label_and_clones_are_numbered():
    exp = {"axes": {"iodepth": ["1"]}, "plot": {"by": "job"}}
    got_exp, got = parts.view(exp, tidy(ROWS))
    assert got_exp["axes"] == {"iodepth": ["1"], "job": ["w#1", "w#2", "r"]}
    assert got_exp["parts_axis"] == "job"
    assert exp["axes"] == {"iodepth": ["1"]}  # the experiment given is left as it was
    assert list(zip(got["job"], got["metric"], got["value"], strict=True)) == [
        ("w#1", "iops", 100.0),
        ("w#2", "iops", 110.0),
        ("r", "iops", 90.0),
        ("r", "read.clat_p99", 0.002),
    ]
    # The part's column follows the axes, before the value columns.
    cols = list(got.columns)
    assert cols.index("job") == cols.index("iodepth") + 1


def test_by_group_and_without_a_view():
    exp = {"axes": {"iodepth": ["1"]}, "plot": {"by": "group"}}
    _, got = parts.view(exp, tidy(ROWS))
    assert dict(zip(got["group"], got["value"], strict=True)) == {"w": 210.0, "r": 90.0}
    _, same = parts.view({"axes": {}, "plot": {}}, tidy(ROWS))
    assert len(same) == len(ROWS)
    assert "job" not in same.columns
