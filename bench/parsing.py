"""Item 5, parsing: perfpost's freon parser against one ``re.finditer`` pass, same text.

The input is a real freon log (tests/data/freon/cmdw-perchunk.log: log4j lines, Progress
lines, the TIMER line and the summary) with its body repeated to ~200 MB (20 MB with
--quick), written to a temporary file and read back as the runner reads a fetched log. The
baseline is a single pass of one regular expression that splits every log4j line into
timestamp, thread, level, logger and message and touches the message: the least a parser
that understands the log must do. Both run in this process, alternately, best of N.
"""

from __future__ import annotations

import gc
import re
import tempfile
import time
from pathlib import Path

from benchlib import ROOT, Row, check, pick

LOG = ROOT / "tests" / "data" / "freon" / "cmdw-perchunk.log"
BASELINE = re.compile(
    r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) \[([^\]]*)\] (\w+) ([\w.$]+): (.*)$", re.M
)


def big_log(size: int) -> str:
    """The real log with its body (everything between the first line and the summary)
    repeated until the text is about ``size`` bytes; the summary stays last."""
    lines = LOG.read_bytes().decode().splitlines(keepends=True)
    head, body, tail = lines[:1], lines[1:-4], lines[-4:]
    chunk = "".join(body)
    reps = max(1, (size - len("".join(head + tail))) // len(chunk))
    return "".join(head) + chunk * reps + "".join(tail)


def baseline_scan(text: str) -> int:
    n = 0
    for m in BASELINE.finditer(text):
        n += len(m.group(5))
    return n


def run(scale: str, log=print) -> list[Row]:
    from perfpost.tools import freon

    size = pick(scale, 200, 20, 1) * 1_000_000
    reps = pick(scale, 3, 2, 1)
    with tempfile.NamedTemporaryFile(prefix="perfpost-bench-freon-", suffix=".log") as fh:
        fh.write(big_log(size).encode())
        fh.flush()
        text = Path(fh.name).read_bytes().decode(errors="replace")  # as the runner reads it
    mb = len(text.encode()) / 1e6
    lines = text.count("\n")

    def perfpost_parse() -> int:
        return len(freon.parse_text(text, "big.log"))

    def perfpost_series() -> int:
        return len(freon.parse_series({"big.log": text}))

    timings: dict[str, list[float]] = {"perfpost": [], "baseline": [], "series": []}
    for i in range(reps):
        for name, fn in (
            ("baseline", lambda: baseline_scan(text)),
            ("perfpost", perfpost_parse),
            ("series", perfpost_series),
        )[:: 1 if i % 2 == 0 else -1]:
            gc.collect()
            t = time.perf_counter()
            fn()
            timings[name].append(time.perf_counter() - t)
        log(
            f"  rep {i + 1}: " + ", ".join(f"{k} {mb / v[-1]:.1f} MB/s" for k, v in timings.items())
        )
    best = {k: min(v) for k, v in timings.items()}
    rate = {k: mb / v for k, v in best.items()}
    details = {"mb": round(mb, 1), "lines": lines, "seconds": timings, "input": str(LOG)}
    return [
        check(
            Row(
                "5 parsing",
                "freon parse_text MB/s / one-pass re.finditer MB/s",
                rate["perfpost"] / rate["baseline"],
                "x",
                details=details,
                perfpost=rate["perfpost"],
                baseline=rate["baseline"],
                baseline_unit="MB/s",
                baseline_name="re.finditer",
            ),
            lambda v: v >= 0.5,
            ">= 0.5x",
        ),
        Row(
            "5 parsing",
            f"  freon parse_text on {mb:.0f} MB ({lines} lines)",
            rate["perfpost"],
            "MB/s",
        ),
        Row("5 parsing", "  one-pass re.finditer baseline", rate["baseline"], "MB/s"),
        Row(
            "5 parsing",
            "  freon parse_series (a 2nd pass run-cell also makes)",
            rate["series"],
            "MB/s",
        ),
    ]
