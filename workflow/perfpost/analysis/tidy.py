"""Tidy tables from cell records: one row per cell, host, repeat and metric.

Columns (schema version :data:`TIDY_SCHEMA_VERSION`), in this order:

- ``experiment``, ``cell`` (the cell id), ``host``, ``repeat``
- one column per matrix axis, holding the axis label as text (``1``, ``1.5``, ``10k``), never
  re-typed as a number: comparisons and figures match on the label the config wrote
- ``tool``, ``metric``, ``value``, ``unit`` (base units only: :data:`perfpost.units.BASE_UNITS`)
- ``status``: ``done``, ``failed`` or ``skipped``; only ``done`` rows are results
- ``attempt``: which attempt of the cell the row comes from

Every cell has an ``exit_code`` row, so failed and skipped cells appear in the table too.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from perfpost.columns import FIXED_COLUMNS, TAIL_COLUMNS
from perfpost.plan.matrix import label
from perfpost.records import write_json_atomic
from perfpost.tools import log4j
from perfpost.units import BASE_UNITS

# 2: freon timers in s (were ms), YARN memory-seconds in B*s (were MB*s), unit list named.
TIDY_SCHEMA_VERSION = 2

COLUMN_DOCS = {
    "experiment": "experiment name from the config",
    "cell": "cell id: axis=label pairs in axis order",
    "host": "host the cell ran on",
    "repeat": "repeat number, from 1",
    "<axis>": "one column per matrix axis, holding the cell's label on that axis",
    "tool": "benchmark tool (adapter name)",
    "metric": "metric name",
    "value": "metric value in base units",
    "unit": "B, s, B/s, count or 1/s",
    "status": "done, failed or skipped; only done rows are results",
    "attempt": "attempt of the cell that produced the row",
}

CELL_COLUMNS = (
    "experiment",
    "cell",
    "host",
    "repeat",
    "attempt",
    "status",
    "reason",
    "exit_code",
    "start",
    "end",
    "tool_version",
    "command",
    "job_id",
    "job_status",
    "clusters",
    "session",
    "cache_disk",
    "cache_rotational",
    "cache_transport",
    "cache_type",
    "cache_files_bytes",
    "start_ready_ahead",
    "delivered",
    "others_up",
    "record",
)


def _as_label(value: Any) -> str | None:
    return None if value is None else label(value)


def _one_sync_definition(metrics: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A record made when a run's sync was added to its time only above a threshold
    (``sync_added``, 0 below it), with the sync added whatever it took, as every run now
    has it (:func:`perfpost.tools.base.sync_adjusted`): a cell mixing the two would mix two
    definitions. Its one adjusted time gets the whole sync; each adjusted rate is its amount
    over that time."""
    by_name = {m["name"]: m for m in metrics}
    if "sync_added" not in by_name or "sync_time" not in by_name:
        return metrics
    extra = by_name["sync_time"]["value"] - by_name["sync_added"]["value"]
    times = [m for m in metrics if m["name"].endswith("_adjusted") and m["unit"] == "s"]
    if len(times) != 1:
        return [m for m in metrics if m["name"] != "sync_added"]
    before = times[0]["value"]
    after = before + extra
    out = []
    for m in metrics:
        if m["name"] == "sync_added":
            continue
        if m is times[0]:
            m = {**m, "value": after}
        elif m["name"].endswith("_adjusted") and after > 0:
            m = {**m, "value": m["value"] * before / after}  # amount / time, time changed
        out.append(m)
    return out


def from_records(records: Iterable[dict[str, Any]], axes: list[str] | None = None) -> pd.DataFrame:
    """The tidy table of ``records``; ``axes`` fixes the axis column order."""
    records = list(records)
    if axes is None:
        axes = []
        for r in records:
            axes += [a for a in r["labels"] if a not in axes]
    rows = []
    for r in records:
        base = {
            "experiment": r["experiment"],
            "cell": r["cell"],
            "host": r["host"],
            "repeat": r["repeat"],
            **{a: _as_label(r["labels"].get(a)) for a in axes},
            "tool": r["tool"],
            "status": r["status"],
            "attempt": r["attempt"],
        }
        exit_code = r.get("exit_code")
        rows.append(
            {
                **base,
                "metric": "exit_code",
                "value": float(exit_code) if exit_code is not None else float("nan"),
                "unit": "count",
            }
        )
        for m in _one_sync_definition(r.get("metrics", [])):
            rows.append(
                {**base, "metric": m["name"], "value": float(m["value"]), "unit": m["unit"]}
            )
    columns = [*FIXED_COLUMNS, *axes, *TAIL_COLUMNS]
    df = pd.DataFrame(rows, columns=columns)
    df["repeat"] = df["repeat"].astype("int64")
    df["attempt"] = df["attempt"].astype("int64")
    df["value"] = df["value"].astype("float64")
    return df


def cells_table(records: Iterable[tuple[str, dict[str, Any]]]) -> pd.DataFrame:
    """One row per cell attempt that counts: its status and reason, for the failures list."""
    rows = []
    for path, r in records:
        row = {
            k: r.get(k)
            for k in CELL_COLUMNS
            if k not in ("record", "clusters", "delivered", "others_up")
        }
        # Clusters it did not use that were up on its host while it measured (run.quiet).
        row["others_up"] = "; ".join(r.get("others_up") or []) or None
        # What perfpost put on the host for it (run.deliver): JSON, one entry per install.
        row["delivered"] = json.dumps(r["delivered"]) if r.get("delivered") else None
        # A service's own record of the run (YARN's application): its id and final state.
        service = next(iter((r.get("service_records") or {}).values()), {})
        row["job_id"] = service.get("id")
        row["job_status"] = service.get("status")
        # The clusters it ran on, as <id>/start-<n>: results/clusters/<id>/start-<n>/.
        row["clusters"] = " ".join(f"{c['id']}/start-{c['start']}" for c in r.get("clusters", []))
        # The disk under a dropped page cache: the ceiling its reads are checked against.
        drop = r.get("cache_drop") or {}
        row["cache_disk"] = drop.get("disk")
        row["cache_rotational"] = drop.get("rotational")
        row["cache_transport"] = drop.get("transport")
        row["cache_type"] = drop.get("type")  # None in records made before it was kept
        row["cache_files_bytes"] = drop.get("files_bytes")
        row["record"] = path
        rows.append(row)
    return pd.DataFrame(rows, columns=list(CELL_COLUMNS))


SERIES_COLUMNS = (
    "experiment",
    "cell",
    "host",
    "repeat",
    "series",
    "t",
    "completed",
    "total",
    "rate",
    "t_step",
)


def step_time(at: float | None, start_epoch: float | None) -> float | None:
    """Seconds from the measured step's start (the host's clock) to a log stamp ``at``,
    the time zone a log's stamps were read in taken off."""
    if at is None or start_epoch is None:
        return None
    offset = at - start_epoch
    return offset - log4j.zone_offset(offset)


def series_table(records: Iterable[dict[str, Any]], axes: list[str]) -> pd.DataFrame:
    """Time series a tool reported while running (freon's progress lines): one row per point,
    ``t`` in seconds since the run started, ``rate`` in operations per second since the last
    point, ``t_step`` the same moment in seconds since the measured step started (the clock
    the hosts' telemetry counts from; empty in records made before it was kept). Only
    finished cells' series are results; others are left out.

    An axis named like a column of the series' own (freon's threads as an axis ``t``) gets no
    column here, where it would be a second ``t``: the cell id names its value."""
    axes = [a for a in axes if a not in SERIES_COLUMNS]
    rows = []
    for r in records:
        if r["status"] != "done":
            continue
        for name, points in (r.get("series") or {}).items():
            for p in points:
                p = dict(p)
                at = p.pop("at", None)
                rows.append(
                    {
                        "experiment": r["experiment"],
                        "cell": r["cell"],
                        "host": r["host"],
                        "repeat": r["repeat"],
                        **{a: r["labels"].get(a) for a in axes},
                        "series": name,
                        **p,
                        "t_step": step_time(at, r.get("start_epoch")),
                    }
                )
    cols = [*SERIES_COLUMNS[:4], *axes, *SERIES_COLUMNS[4:]]
    return pd.DataFrame(rows, columns=cols)


def schema_doc(axes: list[str]) -> dict[str, Any]:
    """The columns, and every unit a ``value`` may be in, so a reader of tidy.csv needs no
    other document to know that ``s`` is seconds and ``B*s`` byte-seconds."""
    return {
        "schema_version": TIDY_SCHEMA_VERSION,
        "columns": [*FIXED_COLUMNS, *axes, *TAIL_COLUMNS],
        "axes": axes,
        "docs": {
            **COLUMN_DOCS,
            "value": "metric value in the base unit named in `unit` (no prefixes: s, not ms)",
            "unit": "one of the units listed under `units` (an empty unit: none printed)",
        },
        "units": dict(BASE_UNITS),
    }


def write(
    df: pd.DataFrame, csv: str | Path, parquet: str | Path, schema: str | Path, axes: list[str]
) -> None:
    """CSV for people and spreadsheets, Parquet (with the schema in its metadata) for code."""
    Path(csv).parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(f"{csv}.tmp")
    df.to_csv(tmp, index=False)
    tmp.replace(csv)
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(df, preserve_index=False)
    meta = dict(table.schema.metadata or {})
    meta[b"perfpost.tidy"] = json.dumps(schema_doc(axes)).encode()
    tmp = Path(f"{parquet}.tmp")
    pq.write_table(table.replace_schema_metadata(meta), tmp)
    tmp.replace(parquet)
    write_json_atomic(schema, schema_doc(axes))


def _text_labels(df: pd.DataFrame, axes: list[str]) -> pd.DataFrame:
    """Axis columns as text, whatever a reader inferred (a table written before labels were
    kept as text has ``1`` as an integer column)."""
    for a in axes:
        if a in df.columns and not pd.api.types.is_string_dtype(df[a]):
            df[a] = [_as_label(v) if pd.notna(v) else None for v in df[a]]
    return df


def _csv_axes(path: Path, header: list[str]) -> list[str]:
    """The axis columns of a tidy CSV: from the schema file written beside it, else the
    columns between the fixed ones and the tail (the order :func:`from_records` writes)."""
    schema = path.with_name(path.name.removesuffix(".csv") + ".schema.json")
    if schema.exists():
        try:
            axes = json.loads(schema.read_text()).get("axes", [])
        except (ValueError, AttributeError) as e:
            raise ValueError(f"{schema}: not a tidy schema file: {e}") from None
        return [a for a in axes if a in header]
    if header[: len(FIXED_COLUMNS)] != list(FIXED_COLUMNS) or TAIL_COLUMNS[0] not in header:
        return []
    return header[len(FIXED_COLUMNS) : header.index(TAIL_COLUMNS[0])]


def read(path: str | Path) -> pd.DataFrame:
    """A tidy table written by :func:`write`, refusing other schema versions. Axis columns come
    back as the text labels they were written as: left to itself, pandas would read ``1`` as
    an integer and ``1.5`` as a float, and ``NA`` as a missing value."""
    path = Path(path)
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        meta = pq.read_schema(path).metadata or {}
        doc = json.loads(meta.get(b"perfpost.tidy", b"{}"))
        if doc.get("schema_version") != TIDY_SCHEMA_VERSION:
            raise ValueError(
                f"{path}: tidy schema version {doc.get('schema_version')}, "
                f"expected {TIDY_SCHEMA_VERSION}"
            )
        return _text_labels(pd.read_parquet(path), list(doc.get("axes", [])))
    header = list(pd.read_csv(path, nrows=0).columns)
    axes = _csv_axes(path, header)
    df = pd.read_csv(path, usecols=[c for c in header if c not in axes])
    if axes:
        # Read as text, and only an empty field is a missing label: `NA` or `null` is a value.
        labels = pd.read_csv(path, usecols=axes, dtype=str, keep_default_na=False, na_values=[""])
        df = pd.concat([df, labels], axis=1)[header]
    return df


def cell_name(row: Any, axes: list[str]) -> str:
    """A cell as a post names it: its axis values (``bs=4k, storage=disk``), else its id."""
    return ", ".join(f"{a}={getattr(row, a)}" for a in axes) or str(row.cell)


def varying(df: pd.DataFrame, axes: list[str]) -> list[str]:
    """The axes whose value differs between the cells, which name them: an axis of one value
    (``instrument=on`` in every cell) tells one cell from another no more than none does."""
    return [a for a in axes if a in df and len(set(df[a].dropna())) > 1]


def cell_names(df: pd.DataFrame, axes: list[str]) -> dict[str, str]:
    """Each cell as the post and its figures name it: by the axes that vary, else its id."""
    shown = varying(df, axes)
    firsts = df.drop_duplicates("cell")
    return {
        str(r.cell): cell_name(r, shown) if shown else str(r.cell).replace(",", ", ")
        for r in firsts.itertuples(index=False)
    }


def results(df: pd.DataFrame) -> pd.DataFrame:
    """Only rows that are results: cells that finished and parsed."""
    return df[df["status"] == "done"]
