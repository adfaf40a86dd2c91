"""Commands as a person types them, for the post: the tool and its options, no wrapper.

A record keeps the command exactly as it ran (the notebook shows that): its JVM options
variable with perfpost's GC log and agent, the launcher's path in perfpost's cache, the
cell's scratch directory. A reader wants what they would type on their own host:
``ozone freon dfsg -n 200 ...``, ``yarn jar hadoop-mapreduce-examples-3.4.2.jar teragen
...``, ``dd ... of=/var/tmp/perfpost/dd.out``. So: the environment the experiment itself
set stays (``export HADOOP_USER_NAME=...``), the JVM options variables perfpost fills go,
a program or jar in perfpost's cache is named by its file name, a cluster's install
(``{cluster.home}``) by its ``bin/`` on the PATH and ``$HADOOP_HOME`` or ``$OZONE_HOME``, the
scratch directory is the directory the config gave (``dir``), and a run's own name
(``perfpost-<hex>``) reads ``test``. Everything else is as it ran.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from perfpost.analysis import commands
from perfpost.tools.wait import bound_text

# Variables perfpost fills with a JVM's options (heap, GC log, agents): not the experiment's.
JVM_VARS = ("OZONE_OPTS", "HADOOP_CLIENT_OPTS", "HADOOP_OPTS", "JAVA_TOOL_OPTIONS")
# The parameters that name a program or jar perfpost provisioned or was given by path.
PROGRAM_PARAMS = ("launcher", "jar")
_RUN = re.compile(r"perfpost-[0-9a-f]{12}")
_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def line(text: str, env: Mapping[str, str], programs: Mapping[str, str] | None = None) -> list[str]:
    """One recorded command line as typed: ``export`` lines for the experiment's own
    environment (``env``), then the command without perfpost's JVM options, each path in
    ``programs`` (a launcher's, a jar's) by the name it has there."""
    try:
        words = shlex.split(text)
    except ValueError:
        return [text]
    exports: list[str] = []
    if words and words[0] == "env":
        words = words[1:]
    while words and _ASSIGN.match(words[0]):
        key, _, value = words.pop(0).partition("=")
        if key in env and key not in JVM_VARS:
            exports.append(f"export {key}={shlex.quote(value)}")
    if not words:
        return [*exports, text]
    script = _script(words)
    if script is not None:
        # A shell script as its author wrote it (a command tool's run: string), not
        # quoted again inside sh -c '...'.
        lines = script.strip().splitlines()
        return [*exports, *(wrap_raw(x) if len(x) > WIDTH else x for x in lines)]
    words = [(programs or {}).get(w, w) for w in words]
    return [*exports, wrap(words)]


WIDTH = 80  # a listing's lines, as a blog's code block shows them without scrolling
SHELL_OPERATORS = frozenset({"&", "&&", "||", ";", "|", ">", ">>", "<", "2>&1", "2>", "&>"})


def wrap_raw(text: str) -> str:
    """A shell line as its author wrote it, continued with backslashes at spaces outside
    quotes where it would pass :data:`WIDTH`; nothing in it re-quoted, so ``$i`` and
    ``'lib/*'`` mean what they meant; its indentation (a loop's body) kept."""
    indent = text[: len(text) - len(text.lstrip(" "))]
    parts, current, quote = [], "", ""
    for ch in text.lstrip(" "):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == " ":
            parts.append(current)
            current = ""
            continue
        current += ch
    parts.append(current)
    return indent + _pack([p for p in parts if p]).replace("\n  ", "\n  " + indent)


def _pack(units: Sequence[str]) -> str:
    """``units`` (words, or an option with its value) on lines of at most :data:`WIDTH`,
    each line continued with a backslash and the next indented."""
    out, current = [], ""
    for u in units:
        if current and len(current) + 1 + len(u) > WIDTH:
            out.append(current + " \\")
            current = "  " + u
        else:
            current = f"{current} {u}" if current else u
    out.append(current)
    return "\n".join(out)


def _script(words: Sequence[str]) -> str | None:
    """The script of ``sh -c SCRIPT``, None for any other command."""
    if len(words) == 3 and words[0] in ("sh", "/bin/sh") and words[1] == "-c":
        return words[2]
    return None


def wrap(words: Sequence[str]) -> str:
    """``words`` as one shell command, continued with backslashes before a word where a line
    would pass :data:`WIDTH`: an option and its value stay on one line."""
    units: list[str] = []
    for w in words:
        # A shell's own operators (a command run in the background, joined to another, or
        # redirected) stay operators: quoted, `&` became an argument of the command.
        q = w if w in SHELL_OPERATORS else shlex.quote(w)
        last = units[-1] if units else ""
        if (
            units
            and last.startswith("-")
            and " " not in last
            and not w.startswith("-")
            and "=" not in last
        ):
            units[-1] = f"{last} {q}"
        else:
            units.append(q)
    return _pack(units)


def _commands(text: str) -> list[str]:
    """A recorded measured step's command lines: one per line, but a shell script given to
    ``sh -c`` (a command tool's ``run:``), whose lines are one argument, is one command."""
    try:
        words = shlex.split(text)
    except ValueError:
        return text.splitlines()
    while words and (words[0] == "env" or _ASSIGN.match(words[0])):
        words = words[1:]
    if _script(words) is not None and "\n" in text:
        return [text]
    return text.splitlines()


# How a person names a cluster's install ({cluster.home}) in a command they type.
HOME_VARS = {"ozone": "$OZONE_HOME"}
HADOOP_HOME = "$HADOOP_HOME"


def installs(rec: Mapping[str, Any]) -> dict[str, str]:
    """Each cluster install a run's command named (``{<cluster>.home}``, a path in perfpost's
    cache) -> how a person names it: its ``bin/`` on their PATH (``yarn ...``), the rest
    as ``$HADOOP_HOME`` or ``$OZONE_HOME``. Longest first, so no path eats a longer one."""
    kinds = {c.get("name"): c.get("kind") for c in rec.get("clusters") or []}
    named: dict[str, str] = {}
    # {cluster.home} is the first cluster's, named by its own name too: those first.
    fields = sorted(
        (rec.get("cluster_fields") or {}).items(), key=lambda kv: kv[0].startswith("cluster.")
    )
    for key, value in fields:
        name, _, field = key.partition(".")
        if field == "home" and isinstance(value, str) and value.startswith("/"):
            named.setdefault(value.rstrip("/"), HOME_VARS.get(kinds.get(name) or "", HADOOP_HOME))
    return dict(sorted(named.items(), key=lambda kv: -len(kv[0])))


def cell_listing(rec: Mapping[str, Any], after: Sequence[str]) -> list[str]:
    """What a person types for one run of a cell, from its record: prepare steps, a dropped
    page cache, a background load, the measured command, and ``time sync`` after it."""
    params = rec.get("params") or {}
    env = params.get("env") or {}
    programs = {
        str(params[k]): str(params[k]).rsplit("/", 1)[-1]
        for k in PROGRAM_PARAMS
        if isinstance(params.get(k), str) and "/" in params[k]
    }
    workdir = rec.get("workdir")
    where = params.get("dir")
    homes = installs(rec)

    def typed(lines: Sequence[str]) -> list[str]:
        out: list[str] = []
        for raw in lines:
            text = raw
            if workdir and where:
                text = text.replace(workdir, where.rstrip("/"))
            for home, var in homes.items():
                text = text.replace(home + "/bin/", "").replace(home, var)
            text = _RUN.sub("test", text)
            out += line(text, env, programs)
        return out

    lines: list[str] = []
    lines += typed(rec.get("prepare_commands") or [])
    if params.get("drop_cache"):
        lines.append("sync; echo 3 > /proc/sys/vm/drop_caches")
    steps = rec.get("cluster_steps") or []
    # What was done to the cluster, as the run's record says it was done.
    # With the cluster's daemons stopped first (data made offline), then before it measured;
    # a command a step ran, as typed on its host.
    for s in [s for s in steps if s.get("at") == "offline"] + [
        s for s in steps if s.get("at") == "before"
    ]:
        if s.get("ran"):
            lines.append(f"# on {s['host']}, for the {s['daemon']}:")
            lines += typed([s["ran"]])
        else:
            lines.append(f"# {s.get('did') or s.get('reason')}")
    lines += [f"{b} &" for b in typed(rec.get("background_commands") or [])]
    each = (rec.get("clients") or {}).get("each") or []
    until = rec.get("until") or {}
    if rec.get("tool") == "wait" and until:
        bound = bound_text(until)
        held = f", and still {bound} {until['hold']:g} s later" if until.get("hold") else ""
        lines.append(
            f"# wait until {until.get('metric')} {bound}{held} (read every {until['every']:g} s)"
        )
    elif len(each) > 1:
        # Several clients ran the same command at one moment, each in a directory of its
        # own: the first one's, said once.
        lines.append(f"# {len(each)} clients at once, each in a directory of its own; each ran:")
        lines += typed(_commands(each[0].get("command") or ""))
    else:
        lines += typed(_commands(rec.get("command") or ""))
    lines += [
        f"#   {float(s['at']):g} s into it: {s.get('did') or s.get('reason')}"
        for s in steps
        if s.get("at") not in ("before", "offline")
    ]
    if "sync" in after:
        lines.append("time sync")
    # The environment once, first: a reader exports it once for every command.
    exports = list(dict.fromkeys(x for x in lines if x.startswith("export ")))
    rest = [x for x in lines if not x.startswith("export ")]
    return exports + commands.collapse(rest)
