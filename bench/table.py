"""The documentation's performance table, written from a bench run's JSON.

    python bench/table.py            # bench/results/latest.json -> docs/performance.md
    python bench/table.py --check    # exit 1 if the page's table is not what the JSON gives

The table goes between two markers of the page, with the run it came from: its command, the
commit it measured (``git describe --dirty`` at the run), when, on what machine, and how busy
the machine was with other work during each item. It is never copied by hand: the suite checks
that the page holds what this command writes (tests/test_docs.py).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
RESULTS = ROOT / "bench" / "results" / "latest.json"
PAGE = ROOT / "docs" / "performance.md"
START = "<!-- bench-table: start (written by python bench/table.py; do not edit) -->"
END = "<!-- bench-table: end -->"
from benchlib import SETTLE_CORES, SETTLE_WINDOW_S  # noqa: E402

ITEMS = ("parse", "cell", "matrix", "remote", "agent", "scale", "deliver", "sampler", "history")


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _fmt(v: float | None, unit: str) -> str:
    """A figure as the bench prints it (benchlib.Row's formats)."""
    from benchlib import Row

    return Row("", "", None, "")._fmt(v, unit)


def table(doc: dict[str, Any]) -> str:
    """The run's rows as a markdown table, under a paragraph saying what run it was."""
    m = doc["machine"]
    size = doc.get("size", "quick" if doc.get("quick") else "full")
    lines = [
        f"Measured by `python bench/{' '.join(doc['command'])}` ({size} size) at commit "
        f"`{m.get('perfpost_git') or 'unknown'}`, {m['time']}, on {m['cpus']} cores "
        f"({m['cpu_model']}), {m['os']}, Python {m['python']}; the run took "
        f"{doc['duration_s']:.0f} s.",
        "",
    ]
    busy = [
        f"{c['foreign_cores']:.2f} during {name}"
        for name, c in doc["contention"].items()
        if c.get("foreign_cores", 0) > 0.3
    ]
    if busy:
        lines += [
            "CPU the bench could not count as its own kept cores busy while it ran, on average "
            f"{', '.join(busy)} (of {m['cpus']}): other work on the machine, or processes an "
            "item started in a session of its own (a run's cell server) that it cannot reap. "
            "Where it was other work, figures in seconds read long, and ratios move.",
            "",
        ]
    waits = {n: c["settle_s"] for n, c in doc["contention"].items() if c.get("settle_s")}
    if waits:
        worst = max(waits, key=waits.get)
        lines += [
            "Before each item the bench waited for the machine to fall quiet (under "
            f"{SETTLE_CORES} busy cores over {SETTLE_WINDOW_S:.0f} s): "
            f"{sum(waits.values()):.0f} s in all, the longest "
            f"{waits[worst]:.0f} s before {worst}.",
            "",
        ]
    missing = [i for i in ITEMS if i not in doc["items"]]
    if missing:
        lines += [f"Items not in this run: {', '.join(missing)}.", ""]
    if doc.get("errors"):
        lines += [
            "Items that failed: "
            + "; ".join(f"{k}: {_cell(v)}" for k, v in doc["errors"].items())
            + ".",
            "",
        ]
    lines += [
        "| item | measure | perfpost | baseline | figure | target | met |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in doc["rows"]:
        mine = _fmt(r.get("perfpost"), r.get("baseline_unit", ""))
        base = _fmt(r.get("baseline"), r.get("baseline_unit", ""))
        if r.get("baseline_name") and r.get("baseline") is not None:
            base += f" ({r['baseline_name']})"
        met = "-" if r.get("met") is None else ("yes" if r["met"] else "no")
        if r.get("met") is False and r.get("why"):
            met += f": {r['why']}"
        # An indented measure belongs to the one above it, as the bench prints it.
        figure = ("... " if r["figure"].startswith(" ") else "") + r["figure"].strip()
        cells = (r["item"], figure, mine, base, r["shown"], r.get("target") or "-")
        lines.append("| " + " | ".join(_cell(c) for c in (*cells, met)) + " |")
    return "\n".join(lines) + "\n"


def rewrite(page: str, block: str) -> str:
    """``page`` with the text between its markers replaced by ``block``."""
    if START not in page or END not in page:
        raise SystemExit(f"{PAGE}: the markers {START} ... {END} are missing")
    head, rest = page.split(START, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{START}\n\n{block}\n{END}{tail}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", default=str(RESULTS), help="a bench run's JSON")
    ap.add_argument("--page", default=str(PAGE), help="the page with the markers")
    ap.add_argument("--check", action="store_true", help="only check the page is current")
    args = ap.parse_args(argv)
    doc = json.loads(Path(args.results).read_text())
    if doc.get("size") == "smoke":
        raise SystemExit(f"{args.results}: a smoke run's figures mean nothing; measure first")
    page = Path(args.page)
    text = page.read_text()
    new = rewrite(text, table(doc))
    if args.check:
        if new != text:
            print(f"{page}: its table is not what {args.results} gives: run bench/table.py")
            return 1
        return 0
    page.write_text(new)
    print(f"{page}: table of {len(doc['rows'])} rows from {args.results}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
