"""The commands a post shows, as a person types them: the environment once, then each
distinct command under a comment naming its cells; where listings are long and alike but for
a few values, the first in full and each other as what it changes ("the same with -l
FILE_PER_BLOCK"). A module of its own beside :mod:`perfpost.analysis.post`, whose set-up
section it fills."""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Any

from perfpost.analysis import typed

TERSE_OVER = 8  # lines of listing past which listings alike are shown by what they change
TERSE_WORDS = 6  # words of change past which a listing is shown in full


def _words(body: Sequence[str]) -> list[str]:
    return [w for w in " ".join(body).split() if w != "\\"]


def _key(word: str) -> str:
    """An option's name in ``name=value`` (dd's ``oflag=dsync``); the word itself else."""
    return word.split("=", 1)[0] if "=" in word else word


def _changed(first: Sequence[str], other: Sequence[str]) -> str | None:
    """What ``other`` changes in ``first``, word by word ("-l FILE_PER_BLOCK -s 1048576",
    "without --copy-buffer=1"), a changed value with its flag; None past a few words."""
    a, b = _words(first), _words(other)
    said: list[str] = []
    gone: list[str] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "equal":
            continue
        if op == "delete":
            gone += a[i1:i2]
            continue
        new = b[j1:j2]
        old = a[i1:i2]
        if (
            op == "replace"
            and len(old) == len(new) == 1
            and "=" in old[0] + new[0]
            and _key(old[0]) != _key(new[0])
        ):
            said.append(f"{new[0]} instead of {old[0]}")  # another option, not a value
            continue
        if j1 > 0 and b[j1 - 1].startswith("-") and not new[0].startswith("-"):
            new = [b[j1 - 1], *new]  # the value's flag with it
        said += new
    if (not said and not gone) or len(said) + len(gone) > TERSE_WORDS:
        return None
    return " ".join([*said, *(["without", *gone] if gone else [])])


def _height(body: Sequence[str]) -> int:
    """A listing's lines as shown: a wrapped command counts each of its lines."""
    return len("\n".join(body).splitlines())


def _terse(bodies: Sequence[tuple[str, ...]]) -> dict[tuple[str, ...], str] | None:
    """What each listing but the first changes in it, where the listings are long, of one
    shape and each changes a few words; else None."""
    if len(bodies) < 2 or sum(_height(k) for k in bodies) <= TERSE_OVER:
        return None
    if len({_shape(k) for k in bodies}) != 1:
        return None
    changes = {body: _changed(bodies[0], body) for body in bodies[1:]}
    if any(c is None for c in changes.values()):
        return None
    return {k: str(v) for k, v in changes.items()}


def _shape(body: Sequence[str]) -> tuple[str, ...]:
    """A listing's commands without their arguments: what it does, not with which values
    (a command continued over lines is one command)."""
    logical = "\n".join(body).replace("\\\n", " ").splitlines()
    return tuple(x.split(maxsplit=1)[0] if x.strip() else "" for x in logical)


def listings(
    per_cell: Mapping[str, list[str]], names: Mapping[str, str], keep: Sequence[str]
) -> dict[str, Any]:
    """The commands the post shows, in one listing: the environment once, then each distinct
    command under a comment naming its cells (by the axes that vary). Where the cells are
    many or their listings long, only those of the answer's cells (``keep``) and one of each
    other shape of listing (a step more, such as a dropped cache), and how many more there
    are: those differ from a shown one only in their values."""
    distinct: dict[tuple[str, ...], list[str]] = {}
    exports: list[str] = []
    for cell, lines in per_cell.items():
        exports += [x for x in lines if x.startswith("export ") and x not in exports]
        body = tuple(x for x in lines if not x.startswith("export "))
        distinct.setdefault(body, []).append(cell)
    # Listings alike but for a few values: the first in full, each other as what it
    # changes, as a person writes "the same with -l FILE_PER_BLOCK"; then every cell fits.
    terse = _terse(list(distinct))
    small = (terse is not None and len(distinct) <= 12) or (
        len(distinct) <= 6 and sum(_height(k) for k in distinct) <= 24
    )
    shown = distinct
    if not small:
        shown = {k: cs for k, cs in distinct.items() if any(c in keep for c in cs)}
        shown = shown or dict(list(distinct.items())[:2])
        shapes = {_shape(k) for k in shown}
        for body, cells in distinct.items():
            if _shape(body) not in shapes:
                shapes.add(_shape(body))
                shown[body] = cells
        terse = _terse(list(shown))
    lines = list(exports)
    for body, cells in shown.items():
        named = "; ".join(names.get(c, c) for c in cells)
        if terse and body in terse:
            said = f"# {named}: the same with {terse[body]}"
            if len(said) > typed.WIDTH:
                said = f"# {named}:\n#   the same with {terse[body]}"
            lines += said.split("\n")
            continue
        if len(distinct) > 1:
            lines.append(f"# {named}")
        lines += body
    rest = len(per_cell) - sum(len(cs) for cs in shown.values())
    return {"lines": lines, "rest": rest}
