"""Commands as a reader of the post wants them: short, exact, and runnable by hand.

A cell's scratch directory becomes ``$WORK``, and runs of lines that differ only in a counter
(``read-1``, ``read-2``, ...) become one ``for`` loop. Both are exact equivalents of what ran.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_NUM = re.compile(r"\d+")


def _shape(line: str) -> tuple[str, list[int]]:
    return _NUM.sub("#", line), [int(n) for n in _NUM.findall(line)]


def _loop(lines: Sequence[str]) -> tuple[str, int] | None:
    """A loop for ``lines`` if they are the same line with one counter going 1..N."""
    if len(lines) < 2:
        return None
    shapes = [_shape(line) for line in lines]
    if len({s for s, _ in shapes}) != 1:
        return None
    numbers = [n for _, n in shapes]
    differing = [i for i in range(len(numbers[0])) if len({n[i] for n in numbers}) > 1]
    if len(differing) != 1:
        return None
    pos = differing[0]
    if [n[pos] for n in numbers] != list(range(1, len(lines) + 1)):
        return None
    matches = list(_NUM.finditer(lines[0]))
    m = matches[pos]
    body = lines[0][: m.start()] + "$i" + lines[0][m.end() :]
    if body.endswith(" &"):
        return f"for i in $(seq 1 {len(lines)}); do {body} done; wait", len(lines)
    return f"for i in $(seq 1 {len(lines)}); do {body}; done", len(lines)


def collapse(lines: Sequence[str]) -> list[str]:
    """Replace each maximal run of counter-only-different lines by a loop."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        best = None
        for j in range(len(lines), i + 1, -1):
            loop = _loop(lines[i:j])
            if loop:
                best = loop
                break
        if best:
            out.append(best[0])
            i += best[1]
        else:
            out.append(lines[i])
            i += 1
    return out


def readable(lines: Sequence[str], workdir: str | None) -> list[str]:
    """``$WORK`` for the scratch directory, then loops for counted runs."""
    if workdir:
        lines = [line.replace(workdir, "$WORK") for line in lines]
    return collapse(lines)
