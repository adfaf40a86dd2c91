"""Tables that fit a blog's column: a wide markdown table split into narrower ones.

Blog themes give a post a column of about 700 px (PaperMod 720, minima 740 less padding). A
table wider than that scrolls sideways in some (its right-hand columns out of view, the
verdict of a comparison among them) and widens the whole page in others. A browser wraps a
cell's text at its spaces, so a table needs at least the sum over its columns of its longest
word: where that is wider than :data:`WIDTH_PX`, the table is split into tables that each
repeat its key columns (the fewest leading ones that tell its rows apart: a cell's axes, a
comparison and its group, a test and its host)
and carry as many of the rest, in their order, as fit. The reader keeps every column, and
each table names its rows.

The width is an estimate from characters (:data:`CHAR_PX` each, the width of a digit or a
wide letter in a 16 px sans-serif, and monospace in code) plus a cell's padding and border;
the tests measure the result in Chromium. A table no split can make fit (a key column, or
another beside it, holding a long unbroken word: a settings key, a path) is left as it is.
"""

from __future__ import annotations

import re

WIDTH_PX = 680  # the column, less a margin for fonts wider than the estimate
CHAR_PX = 9.6
CELL_PX = 26  # padding each side and a border
_FENCE = re.compile(r"^(```|~~~)")
_ALIGN = re.compile(r"^\|(\s*:?-+:?\s*\|)+\s*$")


def _cells(line: str) -> list[str]:
    """A table row's cells: split at ``|`` outside code spans and not escaped."""
    out, cell, code, i = [], "", False, 0
    body = line.strip()
    if body.startswith("|"):
        body = body[1:]
    if body.endswith("|") and not body.endswith("\\|"):
        body = body[:-1]
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            cell += body[i : i + 2]
            i += 2
            continue
        if ch == "`":
            code = not code
        if ch == "|" and not code:
            out.append(cell.strip())
            cell = ""
        else:
            cell += ch
        i += 1
    out.append(cell.strip())
    return out


def _shown(cell: str) -> str:
    """What a reader sees of a cell: no markdown marks, links as their text."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", cell)
    return text.replace("`", "").replace("**", "").replace("\\|", "|")


def min_width(cells: list[str]) -> float:
    """A column's narrowest width in px: its longest word, with the cell's padding."""
    longest = max((len(w) for c in cells for w in _shown(c).split()), default=1)
    return longest * CHAR_PX + CELL_PX


def _key_columns(header: list[str], rows: list[list[str]]) -> int:
    """The leading columns that name a row: the fewest whose values tell every row apart
    (a cell's axes, a comparison and its group, a test, its host and repeat)."""
    for k in range(1, len(header)):
        names = [tuple(r[:k]) for r in rows]
        if len(set(names)) == len(names):
            return k
    return len(header) - 1


NUMBERED = 0.45  # keys wider than this share of the column: continued by row number instead


def split(
    header: list[str], rows: list[list[str]], width: float = WIDTH_PX
) -> tuple[list[list[int]], bool]:
    """The columns of each table the table becomes (one list: it fits, or cannot be split),
    and whether the rows are numbered: where the key columns take much of the column, the
    tables after the first name their rows by a number (``#``) instead of repeating them."""
    n = len(header)
    widths = [min_width([header[i], *(r[i] for r in rows if i < len(r))]) for i in range(n)]
    whole = [list(range(n))]
    if sum(widths) <= width or n < 3:
        return whole, False
    k = _key_columns(header, rows)
    key = sum(widths[:k])
    numbered = key > width * NUMBERED
    number = min_width(["#", str(len(rows))])
    first = key + (number if numbered else 0)
    later = number if numbered else key
    if max(first, later) + max(widths[k:]) > width:
        # A column too wide beside the key columns (a long path, an unbroken name): no split
        # would make the table fit, only repeat its keys.
        return whole, False
    parts: list[list[int]] = []
    current: list[int] = []
    used = first
    for i in range(k, n):
        if current and used + widths[i] > width:
            parts.append(current)
            current, used = [], later
        current.append(i)
        used += widths[i]
    parts.append(current)
    if numbered:
        return [list(range(k)) + parts[0], *parts[1:]], True
    return [list(range(k)) + p for p in parts], False


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def fit(markdown: str, width: float = WIDTH_PX) -> str:
    """``markdown`` with every table wider than ``width`` split (see the module's docstring);
    code blocks and narrow tables as they were."""
    lines = markdown.split("\n")
    out: list[str] = []
    fenced = False
    i = 0
    while i < len(lines):
        line = lines[i]
        if _FENCE.match(line):
            fenced = not fenced
        starts_table = (
            not fenced
            and line.startswith("|")
            and i + 1 < len(lines)
            and _ALIGN.match(lines[i + 1])
        )
        if not starts_table:
            out.append(line)
            i += 1
            continue
        j = i + 2
        while j < len(lines) and lines[j].startswith("|"):
            j += 1
        header = _cells(line)
        align = _cells(lines[i + 1])
        rows = [_cells(r) for r in lines[i + 2 : j]]
        parts, numbered = split(header, rows, width)
        if len(parts) == 1:
            out.extend(lines[i:j])
        else:
            keys = (
                len(parts[0]) - len([c for c in parts[0] if c not in parts[1]])
                if not numbered
                else 0
            )
            for n, cols in enumerate(parts):
                if n:
                    named = ", ".join(_shown(header[c]) for c in cols[keys:])
                    by = " (by #)" if numbered else ""
                    out += ["", f"*The same rows{by}, continued: {named}.*", ""]
                heads = [header[c] for c in cols]
                marks = [align[c] if c < len(align) else "---" for c in cols]
                body = [[r[c] if c < len(r) else "" for c in cols] for r in rows]
                if numbered:
                    heads, marks = ["#", *heads], ["---:", *marks]
                    body = [[str(m + 1), *b] for m, b in enumerate(body)]
                out.append(_row(heads))
                out.append(_row(marks))
                out += [_row(b) for b in body]
        i = j
    return "\n".join(out)
