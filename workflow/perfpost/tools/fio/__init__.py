"""``fio``, the flexible I/O tester, one module per concern: :mod:`.defaults` (names and the
metrics a post shows), :mod:`.command` (the typed options, the checks and the command line),
:mod:`.parser` (fio's JSON report) and :mod:`.method` (the post's method text).

One cell runs one fio job description, given on the command line::

    fio --output-format=json --name=NAME --directory={work} [--rw=... --bs=... ...] [OPTIONS]

The common job options are typed parameters (so an axis of the same name sets them, and the
config check catches a typo); ``options`` takes any other option fio accepts, by its own name:
``true`` is a bare flag (``--time_based``), ``false`` is ``=0``, ``null`` leaves it out, any
other value is ``--name=value`` as one argument (the runner quotes it for ``sh``). ``{work}``
in a value is the cell's own scratch directory on the host, where fio lays out its files.

fio prints its JSON report on stdout and its error messages (``fio: ...``) on stderr; the cell
keeps both in one raw log, ``fio.log`` (fio writes the report at the end, after any message).
The parser reads the report by its field names (fio 3.x: ``jobs[].read/write/trim`` with
``io_bytes``, ``bw_bytes``, ``iops``, ``runtime`` in ms and ``lat_ns``/``clat_ns``/``slat_ns``
in ns with their ``percentile`` maps; ``sync``; ``disk_util``), in base units, exactly: a
value is taken from the digits fio printed and converted with one rounding. A job with a
non-zero ``error``, a log without a report, or a report that is cut off is a
:class:`ParseError` with fio's own message, never a number.
"""

from perfpost.tools.fio.command import (
    PARAMS_SCHEMA,
    RESERVED,
    TYPED,
    argv,
    check_params,
    complete_params,
    install_marker,
    jobfile_name,
    jobfile_text,
    plan,
    refuse,
    version_argv,
)
from perfpost.tools.fio.defaults import (
    HOST_KEY,
    LOG,
    NAME,
    PARTS,
    PLOT_METRICS,
    RUN_TABLE,
    RUNTIME,
    RW_MODES,
    SYNC_ADJUST,
    TABLE_METRICS,
    WRITING,
)
from perfpost.tools.fio.method import PATTERNS, describe
from perfpost.tools.fio.parser import (
    DIRECTIONS,
    error_reason,
    parse_cell,
    parse_report,
    parse_text,
    parse_version,
)

__all__ = [
    "DIRECTIONS",
    "HOST_KEY",
    "LOG",
    "NAME",
    "PARAMS_SCHEMA",
    "PARTS",
    "PATTERNS",
    "PLOT_METRICS",
    "RESERVED",
    "RUNTIME",
    "RUN_TABLE",
    "RW_MODES",
    "SYNC_ADJUST",
    "TABLE_METRICS",
    "TYPED",
    "WRITING",
    "argv",
    "check_params",
    "complete_params",
    "describe",
    "error_reason",
    "install_marker",
    "jobfile_name",
    "jobfile_text",
    "parse_cell",
    "parse_report",
    "parse_text",
    "parse_version",
    "plan",
    "refuse",
    "version_argv",
]
