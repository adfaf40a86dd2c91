"""The ``perfpost`` command: what the workflow's rules call, and tools for users.

User commands are in :mod:`perfpost.cli.user`, the workflow's steps in
:mod:`perfpost.cli.steps`; this module builds the parser and turns errors and signals into
exit codes.
"""

from __future__ import annotations

import signal
import sys
from functools import cache

from perfpost.errors import ConfigError, ParseError, PerfpostError

# This module starts every cell job's process, most of which only hand their cell to the
# run's cell server: typing is imported for annotations only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from typing import Any


@cache
def build_parser() -> argparse.ArgumentParser:
    """perfpost's parser, built once per process (the cell server builds it before forking
    its cells; argparse spends milliseconds in gettext for each of its hundreds of strings)."""
    import argparse

    from perfpost.cli import new, steps, user

    p = argparse.ArgumentParser(prog="perfpost", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    user.add_commands(sub)
    new.add_command(sub)
    steps.add_commands(sub)
    return p


def _interrupt(signum: int, frame: Any) -> None:
    # SIGTERM (Snakemake stopping a job) unwinds like Ctrl-C, so every host kills the tools
    # it started before perfpost exits. Remote commands are killed right here, on channels of
    # their own, before anything else unwinds.
    remote = sys.modules.get("perfpost.run.remote")
    if remote is not None:
        remote.interrupt()
    raise KeyboardInterrupt(f"signal {signum}")


# Workflow steps that stop (killing their tools) when the Snakemake run that started them dies.
_STEPS = {"run-cell", "run-together", "env", "provision"}


def main(argv: list[str] | None = None) -> int:
    if argv is None:  # a process of its own (a cell server's child passes argv)
        from perfpost.run import cellclient

        served = cellclient.hand_over(sys.argv[1:])
        if served is not None:
            return served
    signal.signal(signal.SIGTERM, _interrupt)
    args = build_parser().parse_args(argv)
    if args.command in _STEPS:
        from perfpost.run import lifeline

        lifeline.stop_when_run_dies()
    try:
        return args.func(args)
    except (ParseError, ConfigError, PerfpostError) as e:
        print(f"perfpost: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 1
    except KeyboardInterrupt as e:
        # The tools were stopped on every host on the way out; no record says otherwise.
        print(f"perfpost: interrupted ({e or 'Ctrl-C'}): tools stopped, nothing recorded")
        return 130


if __name__ == "__main__":
    sys.exit(main())
