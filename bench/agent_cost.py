"""Item 7: what the Byteman agent `instrument:` attaches costs freon, measured both ways.

The same freon dfsg run (files of 10 KiB on file://, 2 threads) with perfpost's agent and
rule set `output`, attached exactly as a cell attaches it (instrument.java_options), and
without it, alternately, so drift hits both alike. With the default copy buffer (4 KiB: a
few write calls per file) and with --copy-buffer=1 (one write call per byte, the HCFS
post's worst case). The figure is the ratio of the median wall times, with / without.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from benchlib import Row, median, pick, timed


def run(scale: str, log=print) -> list[Row]:
    from perfpost import instrument, provision
    from perfpost.tools import freon

    cache = os.environ.get("PERFPOST_CACHE")
    launcher = provision.install(freon.RUNTIME, None, cache)
    provision.install(instrument.RUNTIME, None, cache)
    home = str(provision.home(instrument.NAME, instrument.VERSION, cache))
    rounds = pick(scale, 4, 2, 1)
    modes = (
        ("default copy buffer", pick(scale, 2000, 500, 10), None),
        ("--copy-buffer=1", pick(scale, 200, 50, 2), 1),
    )
    rows = []
    for name, files, buffer in modes:
        walls: dict[str, list[float]] = {"with": [], "without": []}
        calls = None
        for i in range(rounds):
            for way in ("without", "with") if i % 2 == 0 else ("with", "without"):
                with tempfile.TemporaryDirectory(prefix="perfpost-bench-agent-") as d:
                    opts = "-Xmx256m"
                    if way == "with":
                        out = f"{d}/instrument.json"
                        opts += " " + instrument.java_options(
                            home, [str(instrument.RULE_SETS["output"])], out
                        )
                    argv = ["env", f"OZONE_OPTS={opts}", str(launcher), "freon", "dfsg"]
                    argv += ["-n", str(files), "-s", "10240", "-t", "2", "--path", f"file://{d}/fs"]
                    if buffer:
                        argv.append(f"--copy-buffer={buffer}")
                    wall, done = timed(argv, timeout=900)
                    if done.returncode != 0:
                        raise RuntimeError(f"freon failed: {done.stderr[-500:]}")
                    if way == "with":
                        import json

                        calls = json.loads(Path(out).read_text())["ops"]["write"]["calls"]
                walls[way].append(wall)
                log(f"  {name}, round {i + 1}, {way} the agent: {wall:.2f} s")
        ratio = median(walls["with"]) / median(walls["without"])
        rows.append(
            Row(
                "7 agent",
                f"freon dfsg {files} files, {name}: wall with the Byteman agent / without "
                f"({median(walls['with']):.1f} / {median(walls['without']):.1f} s, "
                f"{calls:,} write calls)",
                ratio,
                "x",
                details={"walls": walls, "files": files, "write_calls": calls},
                perfpost=median(walls["with"]),
                baseline=median(walls["without"]),
                baseline_unit="s",
                baseline_name="no agent",
            )
        )
    return rows
