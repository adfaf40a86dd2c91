"""Clusters of the system under test that perfpost sets up itself, one folder per kind.

A kind's folder holds the module that configures, starts and checks it (a subclass of
:class:`perfpost.clusters.deployment.Kind`) and what perfpost fetches to run it (a
:class:`perfpost.provision.Runtime`: its pom, log4j settings and launcher). What every kind
shares is in :mod:`perfpost.clusters.base` (configurations, daemons, hosts, site files),
:mod:`perfpost.clusters.deployment` (a configuration on its hosts) and
:mod:`perfpost.clusters.lifecycle` (start and stop).
"""

from __future__ import annotations

import importlib
from typing import Any

# Every kind perfpost can deploy; each is clusters/<name>/ with a class named KIND in it.
NAMES = ("ozone", "hdfs", "yarn")


def get(kind: str) -> Any:
    """The :class:`~perfpost.clusters.deployment.Kind` subclass of ``kind``; KeyError naming the
    known kinds otherwise."""
    if kind not in NAMES:
        raise KeyError(f"unknown cluster kind {kind!r} (known: {', '.join(NAMES)})")
    return importlib.import_module(f"perfpost.clusters.{kind}").KIND
