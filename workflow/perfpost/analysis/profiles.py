"""Flight recordings' hottest methods (``profile:``, :mod:`perfpost.instrument.jfr`): a table
of every run's, and per cell and JVM the methods that took most of its samples."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

COLUMNS = ("experiment", "cell", "host", "repeat", "attempt", "jvm", "method", "samples", "of")
SHOWN = 5  # methods per cell and JVM in the post


def table(records: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """profile.csv: one row per finished run, recorded JVM and hot method; ``of`` is the
    recording's execution samples in all."""
    rows = []
    for r in records:
        if r.get("status") != "done":
            continue
        for jvm, got in (r.get("profile") or {}).items():
            for method, n in got.get("top") or []:
                rows.append(
                    {
                        **{k: r.get(k) for k in COLUMNS[:5]},
                        "jvm": jvm,
                        "method": method,
                        "samples": int(n),
                        "of": int(got.get("samples") or 0),
                    }
                )
    return pd.DataFrame(rows, columns=list(COLUMNS))


def read(path: str | Path) -> pd.DataFrame:
    return pd.read_csv(path, dtype={"cell": str, "host": str, "jvm": str, "method": str})


def section(df: pd.DataFrame | None) -> list[dict[str, Any]]:
    """Per cell and JVM (in the table's order): its runs' samples summed, and the methods
    that took most of them, with their share."""
    if df is None or df.empty:
        return []
    out = []
    for (cell, jvm), d in df.groupby(["cell", "jvm"], sort=False):
        total = int(d.drop_duplicates(["host", "repeat"])["of"].sum())
        if total <= 0:
            continue
        top = d.groupby("method")["samples"].sum().sort_values(ascending=False).head(SHOWN)
        out.append(
            {
                "cell": cell,
                "jvm": jvm,
                "runs": int(d[["host", "repeat"]].drop_duplicates().shape[0]),
                "samples": total,
                "methods": [
                    {"method": m, "share": f"{n / total:.0%}", "samples": int(n)}
                    for m, n in top.items()
                ],
            }
        )
    return out
