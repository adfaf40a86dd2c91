"""Apache Ozone ``ozone freon`` / ``ozone vapor`` generators, one module per concern:
:mod:`.defaults` (the release fetched, the metrics a post shows), :mod:`.command` (the command
line), :mod:`.parser` (every form freon's log takes), :mod:`.phase` (the measured phase a
run's rate is over, from its progress) and :mod:`.method` (the post's method text). This
module is the tool as :mod:`perfpost.tools.base` describes it."""

from __future__ import annotations

from perfpost.tools.freon.command import (
    PARAMS_SCHEMA,
    argv,
    check_params,
    complete_params,
    derive,
    for_clusters,
    install_marker,
    plan,
    primary_metric,
    version_argv,
)
from perfpost.tools.freon.defaults import (
    CLIENT_FLAGS,
    CLIENT_WINDOW,
    HOST_KEY,
    JVM_OPTS_VAR,
    LOG,
    NAME,
    PLOT_METRICS,
    READERS,
    RUN_TABLE,
    RUNTIME,
    SYNC_ADJUST,
    TABLE_METRICS,
    TIME_LAG,
    VERSION,
)
from perfpost.tools.freon.design import (
    CLOCKS,
    COVERS,
    CROSS,
    data_synced,
    forced_rates,
    written_bytes,
)
from perfpost.tools.freon.method import describe, rate_sources
from perfpost.tools.freon.parser import (
    RATE_SOURCES,
    error_reason,
    parse_cell,
    parse_series,
    parse_text,
)

__all__ = [
    "CLIENT_FLAGS",
    "CLIENT_WINDOW",
    "CLOCKS",
    "COVERS",
    "CROSS",
    "HOST_KEY",
    "JVM_OPTS_VAR",
    "LOG",
    "NAME",
    "PARAMS_SCHEMA",
    "PLOT_METRICS",
    "RATE_SOURCES",
    "READERS",
    "RUNTIME",
    "RUN_TABLE",
    "SYNC_ADJUST",
    "TABLE_METRICS",
    "TIME_LAG",
    "VERSION",
    "argv",
    "check_params",
    "complete_params",
    "data_synced",
    "derive",
    "describe",
    "error_reason",
    "for_clusters",
    "forced_rates",
    "install_marker",
    "parse_cell",
    "parse_series",
    "parse_text",
    "plan",
    "primary_metric",
    "rate_sources",
    "version_argv",
    "written_bytes",
]
