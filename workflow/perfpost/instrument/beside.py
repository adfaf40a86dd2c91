"""What runs beside a measurement, in one shape: set up before the measured step, stopped
right after it, its findings collected into the cell's record.

The runner (:mod:`perfpost.run.runner`) sequences them and knows none of them by name: it
asks :func:`perfpost.instrument.lineup.for_cell` which a cell has, calls
:meth:`Beside.setup` on each before the cell prepares (in that order), :meth:`Beside.start`
right before the measured step,
:meth:`Beside.stop` right after it (in reverse order, whatever the step's outcome),
:meth:`Beside.collect` once the tool's logs are parsed, and :meth:`Beside.cleanup` however
the cell ends. What they need of the cell (its spec, record, host and the hosts of its
clusters, a way to run a step or copy a file back) is the :class:`Cell` protocol, so
nothing here imports the run layer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from perfpost.tools.base import Metric


@dataclass
class HostSeat:
    """A host the cell involves: the cell's own, or one of its clusters' (with the daemons
    it runs there, pid -> label, and the roles it has)."""

    name: str
    host: Any  # perfpost.run.hosts.Host
    own: bool  # the host the cell's tool runs on
    daemons: dict[int, str] = field(default_factory=dict)
    roles: list[str] = field(default_factory=list)
    # Directories whose disks matter (the cell's work directory, a datanode's data dirs).
    dirs: list[str] = field(default_factory=list)
    # Daemons' metrics to read there: (label, URLs), and label -> what they are
    # (perfpost.clusters.metrics.Source).
    scrapes: list[tuple[str, list[str]]] = field(default_factory=list)
    sources: dict[str, tuple[Any, ...]] = field(default_factory=dict)


class Cell(Protocol):
    """What a :class:`Beside` sees of the cell it runs beside."""

    spec: Any  # perfpost.plan.specs.CellSpec
    record: dict[str, Any]
    logdir: str
    host: Any
    # The parameters the measured step runs with: a beside may change them (an agent's JVM
    # options), the rest of the cell's steps keep the spec's own.
    measure_params: dict[str, Any]

    def run_step(
        self,
        name: str,
        script: str,
        timeout: float,
        host: Any = None,
        on_stdout: Callable[[bytes], None] | None = None,
    ) -> Any: ...

    def when_measuring(self, fn: Callable[[float], None]) -> None:
        """``fn`` is called with the host's epoch once the measured step's tools start
        there (from another thread; never if the step fails to start)."""

    def read_log(self, remote_path: str, name: str, host: Any = None) -> str | None: ...

    def keep(self, name: str, data: str | bytes) -> Path: ...

    def seats(self) -> list[HostSeat]: ...

    def cluster_kind(self, name: str) -> Any: ...


class Beside:
    """One thing that runs beside the measured step. Every hook may be left as it is."""

    name = ""

    def setup(self, cell: Cell) -> str | None:
        """Before the cell prepares (it may change the measured step's parameters); a reason
        fails the cell before anything of it runs."""
        return None

    def start(self, cell: Cell) -> None:
        """Right before the measured step, once the cell is prepared (never fails it)."""

    def stop(self, cell: Cell) -> None:
        """Right after the measured step, whatever its outcome: stop, and keep what was
        found in the record (never fails the cell)."""

    def collect(
        self, cell: Cell, texts: Mapping[str, str], parsed: list[Metric]
    ) -> tuple[list[Metric], str | None]:
        """Once the tool's logs parsed: metrics to add, and why the run cannot be trusted
        (None when it can)."""
        return [], None

    def explain(self, cell: Cell, texts: Mapping[str, str]) -> str | None:
        """Why the tool failed, when this beside is the cause (an agent that broke the JVM)."""
        return None

    def cleanup(self, cell: Cell) -> None:
        """However the cell ends: nothing of this beside is left on any host."""
