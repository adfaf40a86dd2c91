"""What else was up on a host while a run measured there: the clusters of this directory's
runs that were starting or up on it and that the run does not use. The job order keeps them
away (:func:`perfpost.glue.cell_priority`); each record says what it found, so the post
states it from the records rather than from the plan."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from perfpost import paths

ACTIVE = ("starting", "up")


def clusters_up(host: str, mine: Iterable[str], root: Path = Path()) -> list[str]:
    """The names (with their start, ``hdfs/start-2``) of the clusters starting or up on
    ``host`` whose ids are not in ``mine``, and that are not ``shared``."""
    mine = set(mine)
    out = []
    # Every start of every cluster: the glob is the pattern's, under the clusters' folder
    # (a "*" in the folder's own path would be taken as a name).
    for state_file in sorted((root / paths.CLUSTERS_DIR).glob("*/start-*/state.json")):
        ident = state_file.parent.parent.name
        if ident in mine:
            continue
        try:
            state = json.loads(state_file.read_text())
            spec = state["deployment"]["spec"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if state.get("status") not in ACTIVE or spec.get("shared"):
            continue
        hosts = {h for hs in (spec.get("roles") or {}).values() for h in hs}
        if host in hosts:
            out.append(f"{spec.get('name', ident)} ({ident}/{state_file.parent.name})")
    return out
