"""The documentation's promise about tidy units (docs/outputs.md), on tidy tables made from
real logs (tests/data): every ``unit`` in tidy.csv is one it lists, with no prefixes (s, never
ms)."""

import csv
import json
import re
from pathlib import Path

from perfpost.analysis import tidy
from perfpost.tools import dd, freon, teragen
from perfpost.tools.base import sync_adjusted
from perfpost.tools.teragen import yarnapp

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"


def documented_units() -> dict[str, str]:
    """The table of units under the "Tidy values are in base units" sentence of the
    documentation's page on what a run writes."""
    lines = (ROOT / "docs" / "outputs.md").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if "Tidy values are in base units" in line)
    table = []
    for line in lines[start:]:
        if line.startswith("|"):
            table.append(line)
        elif table:
            break
    units = {}
    for row in table[2:]:  # after the header and its rule
        cell, meaning = (c.strip() for c in row.strip("|").split("|", 1))
        units["" if cell == "(empty)" else cell.strip("`")] = meaning
    return units


def record(tool: str, cell: str, metrics: list) -> dict:
    return {
        "experiment": "e",
        "cell": cell,
        "host": "h",
        "repeat": 1,
        "labels": {"case": cell},
        "tool": tool,
        "status": "done",
        "attempt": 1,
        "exit_code": 0,
        "metrics": [m.__dict__ for m in metrics],
    }


def real_records() -> list[dict]:
    """Records as the runner writes them (its own wall time and sync rows included), from
    real dd, freon, teragen and YARN output."""
    out = []
    for tool, adapter, name in (
        ("dd", dd, "dd/write-fsync.log"),
        ("dd", dd, "dd/read.log"),
        ("freon", freon, "freon/dfsg.log"),
        ("freon", freon, "freon/cmdw-oldpattern.log"),
        ("freon", freon, "freon/cmdw.tty.log"),
        ("teragen", teragen, "yarn/yarn-success.log"),
        ("teragen", teragen, "teragen/local-100MB.log"),
    ):
        parsed = adapter.parse_cell({name: (DATA / name).read_bytes().decode()}, wall_time=3.5)
        if name == "yarn/yarn-success.log":
            parsed += yarnapp.parse((DATA / "yarn/app-succeeded.json").read_text(), "a").metrics()
        runner_rows = sync_adjusted(parsed, 0.25, adapter.SYNC_ADJUST)
        out.append(record(tool, name, [*parsed, *runner_rows]))
    return out


def test_every_unit_in_a_real_tidy_table_is_a_base_unit_the_docs_list(tmp_path):
    df = tidy.from_records(real_records())
    paths = [tmp_path / n for n in ("tidy.csv", "tidy.parquet", "tidy.schema.json")]
    tidy.write(df, *paths, axes=["case"])
    with paths[0].open(newline="") as f:
        rows = list(csv.DictReader(f))
    used = {r["unit"] for r in rows}
    documented = documented_units()
    assert used <= set(documented), used - set(documented)
    # Timers, rates, byte-seconds and vcore-seconds all made it into the table.
    assert {"s", "1/s", "B", "B/s", "count", "B*s", "vcore*s"} <= used
    by_metric = {r["metric"]: r["unit"] for r in rows}
    assert by_metric["file-create.mean"] == "s"
    assert by_metric["app_memory_seconds"] == "B*s"


def test_the_docs_the_schema_file_and_the_code_name_the_same_units(tmp_path):
    from perfpost.units import BASE_UNITS

    paths = [tmp_path / n for n in ("tidy.csv", "tidy.parquet", "tidy.schema.json")]
    tidy.write(tidy.from_records(real_records()), *paths, axes=["case"])
    schema = json.loads(paths[2].read_text())
    assert set(schema["units"]) == set(documented_units()) == set(BASE_UNITS)
    assert schema["schema_version"] == tidy.TIDY_SCHEMA_VERSION == 2
    page = (ROOT / "docs" / "outputs.md").read_text()
    assert re.search(r"\(schema version 2\)", page)
    # No prefixed unit anywhere in the list: the post, not the table, picks ms or GB.
    assert not {"ms", "us", "ns", "MB", "MB*s", "kB", "GB"} & set(documented_units())
