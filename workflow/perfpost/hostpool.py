"""Steps that touch several hosts at once (delivery, a common start's phases, clean-up,
stopping a cluster's daemons), on a pool of at most :data:`PARALLEL_HOSTS` threads.

Each host's work is mostly waiting on its SSH channel, so hosts go in parallel; a bound keeps
a large inventory from opening as many connections (key exchanges, thread stacks) at the same
moment, where Fabric's ThreadingGroup opens a thread per host with none."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

PARALLEL_HOSTS = 32

T = TypeVar("T")
R = TypeVar("R")


def each(fn: Callable[[T], R], items: Iterable[T], limit: int = PARALLEL_HOSTS) -> list[R]:
    """``fn`` of every item, at most ``limit`` at a time, results in the items' order. Every
    item is tried: a failure (the first in the items' order) is raised once all have ended."""
    items = list(items)
    if not items:
        return []
    with ThreadPoolExecutor(max_workers=min(len(items), max(1, limit))) as pool:
        futures = [pool.submit(fn, item) for item in items]
        concurrent.futures.wait(futures)
    return [f.result() for f in futures]
