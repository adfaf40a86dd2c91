"""Summary statistics over repeats: what a results table shows for each cell.

Medians, not means, lead: a storage benchmark's repeats often have one slow outlier (a
writeback storm, a cold cache), and the median is what a reader can expect. The spread is
shown as min..max and the coefficient of variation, so a shaky cell is visible.
"""

from __future__ import annotations

import pandas as pd

from perfpost.tidy import results

CV_WARN = 0.10


def summarize(df: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Per ``by`` + metric: n, median, mean, min, max, std and CV of finished cells' values."""
    done = results(df)
    keys = [*by, "metric", "unit"]
    if done.empty:
        return pd.DataFrame(columns=[*keys, "n", "median", "mean", "min", "max", "std", "cv"])
    g = done.groupby(keys, sort=False, dropna=False)["value"]
    out = g.agg(n="count", median="median", mean="mean", min="min", max="max", std="std")
    out = out.reset_index()
    out["std"] = out["std"].fillna(0.0)
    out["cv"] = (out["std"] / out["mean"]).where(out["mean"] != 0)
    return out
