"""What a design check says when it fires (:class:`Finding`), or why it could not
(:class:`Untestable`), and the cells' names in it as the post writes them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

ALPHA = 0.05


@dataclass(frozen=True)
class Finding:
    """One design check that fired: the caveat a reader of the post gets, the facts the
    notebook gives, and what it does to the post's cells and comparisons."""

    check: str
    caveat: str
    facts: tuple[str, ...] = ()
    cells: tuple[str, ...] = ()  # the cells whose results it concerns
    # Comparisons resting on these cells are not claimed (the cells did not differ as their
    # labels say, or one side is not what its name says).
    undermines: bool = False
    ran: Mapping[str, str] = field(default_factory=dict)  # cell -> what ran, for its label
    # Why this machine cannot answer the question, for the answer's first line; the clause a
    # claim resting on these cells carries; what set-up would answer it.
    headline: str = ""
    short: str = ""
    remedy: str = ""
    # Which comparisons it undermines: "any" that rests on its cells, or "placement": only
    # those whose two sides put their data in different places (memory against a disk),
    # the question a run that never reached its disk cannot answer; or "one side": those
    # with cells of it on one side only (a cache called a disk against memory), not a
    # comparison of two set-ups on that one device.
    scope: str = "any"


@dataclass(frozen=True)
class Untestable:
    """A check that could not fire at these numbers of runs, and why."""

    check: str
    why: str


def as_label(cell: str, findings: Sequence[Finding]) -> str:
    """A cell's name as the post writes it: what ran, where a setting did not take effect."""
    for f in findings:
        if cell in f.ran:
            return f"{cell} ({f.ran[cell]})"
    return cell


def renamed(f: Finding, names: Mapping[str, str]) -> Finding:
    """``f`` with each cell named as the post names it (``names``: cell id -> name) in its
    sentences; every cell of the experiment named at once reads "every cell", and every cell
    of a setting "the 6 cells with `cache=dropped`"."""
    listed = ", ".join(f"`{c}`" for c in f.cells)
    every = set(names)
    ours = set(f.cells)
    # The settings (``axis=value``) the finding's cells share and the others do not.
    pairs = [set(c.split(",")) for c in f.cells]
    everywhere = set.intersection(*(set(c.split(",")) for c in every)) if every else set()
    shared = [p for p in f.cells[0].split(",") if all(p in x for x in pairs)] if pairs else []
    shared = [p for p in shared if p not in everywhere]
    picked = {c for c in every if set(shared) <= set(c.split(","))}

    def text(s: str) -> str:
        if len(f.cells) > 1 and ours == every and listed in s:
            s = s.replace(f"The data of {listed}", "The data of every cell").replace(
                listed, "every cell"
            )
        elif len(f.cells) > 1 and shared and picked == ours and listed in s:
            s = s.replace(listed, f"the {len(ours)} cells with `{', '.join(shared)}`")
        for cell in sorted(names, key=len, reverse=True):
            s = s.replace(f"`{cell}`", f"`{names[cell]}`")
        return s

    return replace(
        f,
        caveat=text(f.caveat),
        facts=tuple(text(x) for x in f.facts),
        headline=text(f.headline),
        short=text(f.short),
    )
