"""The JDK the suite's JVMs run on: this machine's, whose ``java`` starts with the client
compiler alone.

No test measures how fast Java runs; they check what perfpost does with what a tool printed.
Most of the suite's CPU goes to JVMs (daemons, freon, vapor, MapReduce tasks), and a JVM's
C2 compiler spends seconds of it on code that runs for seconds: `freon --help` took 1.7
CPU-s with the JDK's defaults and 0.9 with ``-XX:TieredStopAtLevel=1``, and a suite file that
runs freon and HDFS on localhost 151 CPU-s against 129 (one run each, cpuacct group).

The JDK here is a directory beside the real one: ``bin/java`` a script that runs the real
``java`` with :data:`OPTIONS` first (a JVM option given later, by a config, still wins), and
every other entry a link to the real JDK's. The tests put its ``bin`` first on the ``PATH``
of localhost commands and of the testbed hosts' logins, so perfpost finds it where it finds
any host's java (on ``PATH``, ``JAVA_HOME`` from it). The session's default run (the
README's main command) runs on it too: its test checks what the posts say and how they are
made, not what Java's C2 compiler would make of freon; a user's run is on the host's JDK."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

OPTIONS = "-XX:TieredStopAtLevel=1"
NAME = "perfpost-quick-jdk"
MARK = "QUICK"  # in the JDK's root: its bin is skipped when the real java is looked for


def _is_quick(directory: str) -> bool:
    return (Path(directory).parent / MARK).is_file()


def real_jdk(path: str | None = None) -> Path:
    """The JDK of the first ``java`` on ``path`` that is not a quick one."""
    dirs = (path if path is not None else os.environ.get("PATH", "")).split(os.pathsep)
    found = shutil.which("java", path=os.pathsep.join(d for d in dirs if d and not _is_quick(d)))
    if found is None:
        raise FileNotFoundError("no java on PATH")
    java = Path(found).resolve()
    return java.parent.parent


def make(dest: Path, real: Path | None = None) -> Path:
    """The quick JDK at ``dest`` (made again if there), beside ``real`` (default: the JDK
    of the java on PATH). Returns ``dest``."""
    real = real or real_jdk()
    if dest.exists():
        shutil.rmtree(dest)
    (dest / "bin").mkdir(parents=True)
    for entry in real.iterdir():
        if entry.name != "bin":
            (dest / entry.name).symlink_to(entry)
    for tool in (real / "bin").iterdir():
        if tool.name != "java":
            (dest / "bin" / tool.name).symlink_to(tool)
    java = dest / "bin" / "java"
    java.write_text(f'#!/bin/sh\nexec {real / "bin" / "java"} {OPTIONS} "$@"\n')
    java.chmod(0o755)
    (dest / MARK).write_text(f"{OPTIONS}\n")
    dest.chmod(0o755)
    return dest
