"""The order an experiment's runs are made in.

Unset (None): the runs come in the workflow's own order, mostly a cell's runs together.
Back to back: every run of a cell, then the next cell's. Anything that drifts over the
session (a disk filling, a cache warming, a neighbour arriving) then differs between cells as
if their axes had made it. Interleaved: round k makes one run of every cell, in the
declared order in odd rounds and the reverse in even ones, so two cells go A B B A A B ...
(ABBA): a drift linear in time adds the same to both. Random: each round in a seeded shuffle.

The order is a plan for each host: a host makes its runs one at a time, in this order (the
cell jobs' priorities); hosts run side by side. What was made when is in ``cells.csv``
(``start``), and the post compares it with the plan.

Cells against clusters, interleaved, need every configuration compared at hand at once:
kept up side by side (each started once, stopped after its last run) where the hosts'
memory allows, else alternated with restarts (``fresh: cell``: each run starts a cluster of
its own, from empty directories). :func:`cluster_mode` chooses, from the daemons' heaps on
each host against half its memory, where that memory is known when the plan is made (this
machine); clusters already ``fresh: cell`` are alternated with restarts anyway.
"""

from __future__ import annotations

import random
import re
import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from perfpost.errors import ConfigError

BACK_TO_BACK = "back-to-back"
INTERLEAVED = "interleaved"


def settings(raw: Any, where: str, *, clusters: bool, together: bool, compares: bool) -> Any:
    """``order:`` as given (the schema checked its form), refused where perfpost cannot keep
    it: start_together runs are one job for every host. Unset, an experiment that compares
    its cells is interleaved where it costs nothing (no clusters: with them, the
    configurations compared must be up side by side or restarted, so it is asked for), and
    any other keeps the workflow's order. With a precision target the plan covers every run
    a cell may get; a cell that stops early leaves its place in later rounds to the others."""
    if raw is None:
        return INTERLEAVED if compares and not (clusters or together) else None
    if together:
        raise ConfigError(
            f"{where}.order",
            "runs cannot be reordered here: start_together runs are planned per cell for every"
            " host at once",
        )
    return raw


SIDE_BY_SIDE = "side by side"
RESTARTS = "restarts"
# One configuration at a time, its cells interleaved while it is up, stopped before the next
# starts: a run measures with no cluster it does not use up on its host.
ONE_AT_A_TIME = "one at a time"
DEFAULT_HEAP = "512m"  # what perfpost starts every daemon with (clusters/<kind>: HEAP)
JVM_OVERHEAD = 256 * 2**20  # a JVM's memory beyond its heap: metaspace, code, threads
MEMORY_SHARE = 0.5  # of a host's memory the daemons may take; the rest is the tools' and cache's
_SIZE = re.compile(r"^-Xmx(\d+)([kKmMgG]?)$")


def _heap(spec: Mapping[str, Any], role: str) -> int:
    """A daemon's heap in bytes: perfpost's, then the config's (the last -Xmx wins)."""
    jvm = spec.get("jvm") or {}
    opts = ["-Xmx" + DEFAULT_HEAP, *shlex.split(jvm.get(role, jvm.get("all", "")))]
    size = 0
    for o in opts:
        m = _SIZE.match(o)
        if m:
            size = int(m.group(1)) * {"": 1, "k": 2**10, "m": 2**20, "g": 2**30}[m.group(2).lower()]
    return size


def cluster_mode(
    configs: Iterable[Mapping[str, Any]], memory: Callable[[str], int | None]
) -> tuple[str, str]:
    """How the clusters of an interleaved experiment are kept, and why: ``configs`` its
    distinct cluster configurations (ClusterSpec dicts), ``memory`` a host's memory in
    bytes, or None where it is not known when the plan is made."""
    configs = list(configs)
    if all(c.get("fresh") == "cell" for c in configs):
        return RESTARTS, "its clusters are `fresh: cell`"
    if len(configs) > 1 and not all(c.get("shared") for c in configs):
        return ONE_AT_A_TIME, (
            "no run measures beside a cluster it does not use, unless the clusters are "
            "`shared: true`"
        )
    need: dict[str, int] = {}
    for c in configs:
        for role, hosts in c["roles"].items():
            for h in hosts:
                need[h] = need.get(h, 0) + _heap(c, role) + JVM_OVERHEAD
    unknown = []
    for host, n in sorted(need.items()):
        total = memory(host)
        if total is None:
            unknown.append(host)
        elif n > total * MEMORY_SHARE:
            return RESTARTS, (
                f"their daemons up at once would take about {n / 2**30:.1f} GiB on {host},"
                f" more than half its {total / 2**30:.1f} GiB"
            )
    most = max(need.items(), key=lambda kv: kv[1]) if need else ("", 0)
    said = f"their daemons take about {most[1] / 2**30:.1f} GiB on {most[0]}"
    if unknown:
        said += f" (the memory of {', '.join(unknown)} was not known when the plan was made)"
    return SIDE_BY_SIDE, said


def sequence(order: Any, cells: Iterable[str], repeats: int) -> list[tuple[str, int]]:
    """(cell id, repeat) in the order a host makes them."""
    cells = list(cells)
    if order == BACK_TO_BACK:
        return [(c, r) for c in cells for r in range(1, repeats + 1)]
    out: list[tuple[str, int]] = []
    rng = random.Random(order["random"]) if isinstance(order, Mapping) else None
    for r in range(1, repeats + 1):
        if rng is not None:
            round_ = cells[:]
            rng.shuffle(round_)
        else:
            round_ = cells if r % 2 else cells[::-1]
        out += [(c, r) for c in round_]
    return out


def describe_clusters(mode: str, why: str, configs: int) -> str:
    """The post's sentence on how interleaved runs had their clusters."""
    if mode == ONE_AT_A_TIME:
        return (
            f"The {configs} cluster configurations ran one after another, each started once, "
            f"its cells' runs interleaved while it was up, and stopped before the next started "
            f"({why}): a drift between the configurations' blocks is not balanced by the order."
        )
    if mode == SIDE_BY_SIDE:
        return (
            f"The {configs} cluster configurations were kept up side by side, each started "
            f"once and stopped after its last run ({why})."
        )
    return (
        f"The {configs} cluster configurations were alternated with restarts: each run "
        f"started a cluster of its own from empty directories ({why})."
    )


def describe(order: Any) -> str:
    """The post's sentence on the order."""
    if order is None:
        return (
            "No order was asked for (`order:`): the runs came in the workflow's own order, so "
            "a drift over the session may differ between cells as if their axes had made it."
        )
    if order == BACK_TO_BACK:
        return (
            "Each cell's runs were made back to back, one cell after another, so a drift over "
            "the session differs between cells as if their axes had made it."
        )
    if isinstance(order, Mapping):
        return (
            "The runs were interleaved: each round made one run of every cell, in an order "
            f"shuffled with the seed {order['random']}, so a drift over the session falls on "
            "every cell alike."
        )
    return (
        "The runs were interleaved: each round made one run of every cell, in the declared "
        "order in odd rounds and the reverse in even ones (A B B A ...), so a drift linear in "
        "time adds the same to every cell."
    )


def followed(planned: list[tuple[str, int]], made: list[tuple[str, int]]) -> int:
    """How many of ``made`` (a host's runs as they started) came where the plan put them,
    among the planned runs that were made."""
    made_set, planned_set = set(made), set(planned)
    kept = [x for x in planned if x in made_set]
    came = [x for x in made if x in planned_set]
    return sum(a == b for a, b in zip(kept, came, strict=True))


def configuration_order(sets: Sequence[Sequence[str]]) -> list[tuple[str, ...]]:
    """The order cells' sets of clusters (idents ``<kind>-<hash>``, the sets by first
    appearance) run in, so that no two configurations of one kind are up at once where the
    sets allow it: a configuration stays up until its last set has run, so every set that
    holds one Ozone comes before any that holds the next Ozone, whichever experiment it is
    in (an HCFS experiment on Ozone A after a teragen one on YARN with Ozone A and B would
    otherwise keep A up beside B). Kinds with one configuration (a YARN both Ozones use)
    do not order the blocks. Within a block, a set that shares no cluster with the next
    block runs first, so a cluster the next block needs is not kept up idle, and the sets
    that share a cluster run side by side."""
    distinct = list(dict.fromkeys(tuple(s) for s in sets))
    kind = {i: i.rsplit("-", 1)[0] for s in distinct for i in s}  # an ident is <kind>-<hash>
    seen: dict[str, dict[str, int]] = {}  # kind -> ident -> its rank among the kind's
    for ident, k in kind.items():
        seen.setdefault(k, {}).setdefault(ident, len(seen[k]))
    several = [k for k, idents in seen.items() if len(idents) > 1]

    def block(s: tuple[str, ...]) -> tuple[int, ...]:
        # A set without a configuration of the kind comes before the kind's first.
        mine = {kind[i]: seen[kind[i]][i] for i in s}
        return tuple(mine.get(k, -1) for k in several)

    blocks: dict[tuple[int, ...], list[tuple[str, ...]]] = {}
    for s in distinct:
        blocks.setdefault(block(s), []).append(s)
    keys = sorted(blocks)
    out: list[tuple[str, ...]] = []
    for i, key in enumerate(keys):
        after = {c for s in blocks[keys[i + 1]] for c in s} if i + 1 < len(keys) else set()
        out += _chain(blocks[key], after)
    return out


def _chain(sets: list[tuple[str, ...]], after: set[str]) -> list[tuple[str, ...]]:
    """One block's sets: first one that shares nothing with the next block, then each time
    the set sharing most clusters with the last one (a cluster's sets side by side, so it
    stops before the next starts); ties by first appearance."""
    left = list(sets)
    now = min(left, key=lambda s: bool(after.intersection(s)))  # min is the first of ties
    out = [now]
    left.remove(now)
    while left:
        now = max(left, key=lambda s: (len(set(now) & set(s)), -left.index(s)))
        out.append(now)
        left.remove(now)
    return out
