"""POSIX sh scripts that run a cell's steps on a host, built from argument lists.

Every argument is quoted with :func:`shlex.quote`, so a parameter like ``1; touch /tmp/x``
reaches the tool as one literal argument. Timing is taken on the host (``date +%s.%N``) and
reported on stdout as one marker line per step::

    @perfpost <step> <start epoch s> <end epoch s> <exit code>[,<exit code>...]

The same scripts run under ``sh -c`` locally and through SSH on remote hosts.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from perfpost.errors import PerfpostError
from perfpost.shell import write_file_line
from perfpost.tools.base import Proc

MARKER = "@perfpost"


@dataclass(frozen=True)
class CommandResult:
    """What a host returns for a script, local or over SSH."""

    exit_code: int | None  # None when killed at the timeout
    stdout: str
    stderr: str
    timed_out: bool = False


UNPRIVILEGED = "@perfpost-unprivileged"
SCRATCH_PREFIX = "perfpost-"


def quote(argv: Sequence[str]) -> str:
    return shlex.join(argv)


def _check_scratch(path: str) -> str:
    # Scripts remove these directories recursively: refuse anything perfpost did not name.
    if not PurePosixPath(path).name.startswith(SCRATCH_PREFIX) or not path.startswith("/"):
        raise PerfpostError(f"refusing to use {path!r} as a scratch directory")
    return shlex.quote(path)


def prepare_script(
    workdir: str, logdir: str, procs: Sequence[Proc], files: Sequence[tuple[str, str]] = ()
) -> str:
    """Create the cell's work directory, write the plan's files into it and run the
    unmeasured preparation commands."""
    lines = [
        "set -u",
        "export LC_ALL=C",
        f"mkdir -p -- {_check_scratch(workdir)} {_check_scratch(logdir)} || exit $?",
    ]
    for name, text in files:
        if "/" in name or name in ("", ".", ".."):
            raise ValueError(f"a plan's file is a name in the scratch directory: {name!r}")
        lines.append(f"{write_file_line(f'{workdir}/{name}', text)} || exit $?")
    log = shlex.quote(f"{logdir}/prepare.log")
    for proc in procs:
        lines.append(f"{quote(proc.argv)} >>{log} 2>&1 || exit $?")
    return "\n".join(lines) + "\n"


CACHE_MARKER = "@perfpost-cache"

# A shell function: the device holding directory $1 (df's source), the whole disk it is on
# (the parent of a partition), and that disk's lsblk ROTA, TRAN and TYPE, each empty where
# unknown.
DISK_OF = """disk_of() {
  dev=$(df --output=source "$1" 2>/dev/null | tail -n 1)
  disk=$(lsblk -ndo PKNAME "$dev" 2>/dev/null | tr -d " ")
  [ -n "$disk" ] || disk=$(lsblk -ndo NAME "$dev" 2>/dev/null | tr -d " ")
  rota=$(lsblk -ndo ROTA "/dev/$disk" 2>/dev/null | tr -d " ")
  tran=$(lsblk -ndo TRAN "/dev/$disk" 2>/dev/null | tr -d " ")
  kind=$(lsblk -ndo TYPE "/dev/$disk" 2>/dev/null | tr -d " ")
}
"""


def drop_cache_script(workdir: str | None = None) -> str:
    """Flush and drop the page cache; exit 3 with a marker when this user may not.

    Then the evidence that it was dropped, on a ``@perfpost-cache`` line: ``Cached`` of
    /proc/meminfo before and after (bytes), how much of the cell's files in ``workdir`` is
    still in the page cache (fincore, bytes resident and bytes in all; ``-`` without
    fincore), and the device holding them (the disk of a partition) with lsblk's ROTA, TRAN
    and TYPE (``-`` where unknown), so reads faster than such a disk delivers can be flagged:
    TYPE says whether it is one disk (``disk``) or a volume of several (``lvm``, ``raid1``,
    ``crypt``, ``loop``...), which may read faster than any one of them."""
    lines = [
        "cached() { awk '/^Cached:/ {printf \"%.0f\\n\", $2 * 1024}' /proc/meminfo; }",
        "if [ ! -w /proc/sys/vm/drop_caches ]; then",
        f'  echo "{UNPRIVILEGED} /proc/sys/vm/drop_caches is not writable by user $(id -un)"',
        "  exit 3",
        "fi",
        "before=$(cached)",
        "sync && echo 3 > /proc/sys/vm/drop_caches || {",
        f'  echo "{UNPRIVILEGED} writing /proc/sys/vm/drop_caches failed for user $(id -un)"',
        "  exit 3",
        "}",
        "after=$(cached)",
    ]
    if workdir is None:
        lines.append(f'echo "{CACHE_MARKER} $before $after - - - - - -"')
    else:
        w = _check_scratch(workdir)
        lines += [
            "res=- all=-",
            "if command -v fincore >/dev/null 2>&1; then",
            f"  set -- $(find {w} -type f -exec fincore -b -n -o RES,SIZE {{}} + 2>/dev/null"
            " | awk '{r += $1; s += $2} END {printf \"%.0f %.0f\\n\", r, s}')",
            "  res=${1:--} all=${2:--}",
            "fi",
            DISK_OF.rstrip("\n"),
            f"disk_of {w}",
            f'echo "{CACHE_MARKER} $before $after $res $all '
            '${disk:--} ${rota:--} ${tran:--} ${kind:--}"',
        ]
    return "\n".join(lines) + "\n"


def parse_cache_line(stdout: str) -> dict[str, Any] | None:
    """The ``@perfpost-cache`` line of :func:`drop_cache_script` as facts (None: absent). A
    line from before TYPE was printed has seven fields: its ``type`` is None, unknown."""
    for line in stdout.splitlines():
        if line.startswith(CACHE_MARKER + " "):
            parts = line.split()[1:]
            if len(parts) == 7:
                parts.append("-")
            if len(parts) != 8:
                return None

            def num(text: str) -> int | None:
                return int(text) if text.isdigit() else None

            return {
                "cached_before": num(parts[0]),
                "cached_after": num(parts[1]),
                "files_resident": num(parts[2]),
                "files_bytes": num(parts[3]),
                "disk": None if parts[4] == "-" else parts[4],
                "rotational": {"1": True, "0": False}.get(parts[5]),
                "transport": None if parts[6] == "-" else parts[6],
                "type": None if parts[7] == "-" else parts[7],
            }
    return None


# The host's clock, read for a step's start and end markers. bash (5 and later) reads it in
# the shell itself ($EPOCHREALTIME, microseconds); plain sh forks ``date`` for each reading,
# whose start-up and exit add 2-5 ms to a step's recorded duration (a ``sleep 2`` read
# 2.002-2.005 s).
_CLOCK = (
    'if [ -n "${EPOCHREALTIME:-}" ]; then now() { t=$EPOCHREALTIME; }; '
    "else now() { t=$(date +%s.%N); }; fi"
)


AHEAD_MARKER = "@perfpost-ahead"
CPU_MARKER = "@perfpost-cpu"
# Printed the moment the measured step's tools start, while they run: what is timed from
# the step's start (a cluster step `at` a second into it) waits for this line.
BEGAN_MARKER = "@perfpost-began"


class LineWatch:
    """Calls ``fn`` with the epoch of a script's ``@perfpost-began`` line once it arrives:
    fed the script's standard output chunk by chunk, as the host sends it."""

    def __init__(self, fn: Callable[[float], None]) -> None:
        self.fn = fn
        self.tail = b""
        self.seen = False

    def __call__(self, data: bytes) -> None:
        if self.seen:
            return
        *lines, self.tail = (self.tail + data).split(b"\n")
        for line in lines:
            parts = line.decode(errors="replace").split()
            if len(parts) == 2 and parts[0] == BEGAN_MARKER:
                self.seen = True
                try:
                    self.fn(float(parts[1]))
                except ValueError:
                    self.fn(time.time())
                return


def parse_cpu(stdout: str) -> float | None:
    """CPU seconds (user and system) the measured step's processes used, from its shell's
    ``/proc/<pid>/stat`` (cutime and cstime: its waited-for children and theirs); None when
    the host has no such file."""
    for line in stdout.splitlines():
        if not line.startswith(CPU_MARKER + " "):
            continue
        head, _, rest = line[len(CPU_MARKER) + 1 :].partition(" ")
        fields = rest.rpartition(")")[2].split()
        try:
            tck = int(head)
            return (int(fields[13]) + int(fields[14])) / tck if tck > 0 else None
        except (IndexError, ValueError):
            return None
    return None


def parse_ahead(stdout: str) -> float | None:
    """Seconds the host was ready before a common start (:func:`measure_script`'s
    ``start_at``); negative if it was late; None if the script never got there."""
    for line in stdout.splitlines():
        if line.startswith(AHEAD_MARKER + " "):
            try:
                return float(line.split()[1])
            except (IndexError, ValueError):
                return None
    return None


PROC_STEP = "proc-"  # a process timed by itself: its own timing marker, step "proc-<i>"


def parse_procs(stdout: str) -> dict[int, tuple[float, float, int]]:
    """Each process's own start, end and exit code on the host (1-based, in the order given
    to :func:`measure_script` with ``each=True``), from its timing marker; a process whose
    line is missing is left out."""
    return {
        int(name[len(PROC_STEP) :]): (t.start, t.end, t.exit_codes[0])
        for name, t in parse_markers(stdout).items()
        if name.startswith(PROC_STEP) and name[len(PROC_STEP) :].isdigit()
    }


def measure_script(
    step: str,
    logdir: str,
    procs: Sequence[Proc],
    background: Sequence[Proc] = (),
    start_at: float | None = None,
    each: bool = False,
) -> str:
    """Run ``procs`` concurrently (one runs in the foreground), timed on the host.

    With ``start_at`` (epoch seconds) the host sleeps until that moment first, so several
    hosts can start one measurement together, and says how long before it it was ready
    (:func:`parse_ahead`). With ``each``, every process is also timed by itself
    (:func:`parse_procs`: several clients' own windows). The script runs under bash where
    the host has one (see ``_CLOCK``), else under sh as it is.
    """
    if not procs:
        raise ValueError("a measured step needs at least one process")
    lines = ["set -u", _CLOCK, f"cd -- {_check_scratch(logdir)} || exit 97"]
    if start_at is not None:
        # How long before the start the host was ready (negative: it was late, and its start
        # measures the set-up, not the wake-up): the record says so for each host.
        lines.append(
            f'd=$(awk -v t={start_at:.6f} -v n="$(date +%s.%N)" '
            "'BEGIN { printf \"%.6f\", t - n }')"
        )
        lines.append(f'echo "{AHEAD_MARKER} $d"; case $d in -*) ;; *) sleep "$d" ;; esac')
    for i, proc in enumerate(background, start=1):
        lines.append(f"{quote(proc.argv)} >/dev/null 2>&1 & bg{i}=$!")
    lines.append(f'now; t0=$t; echo "{BEGAN_MARKER} $t0"')

    def redirect(proc: Proc) -> str:
        return f">{shlex.quote(proc.log)} 2>&1" if proc.log else ">/dev/null 2>&1"

    if each:
        # A subshell per process: its own start and end, stamped as close to it as the
        # shell can; its exit code is the process's.
        for i, proc in enumerate(procs, start=1):
            lines.append(
                f"{{ now; s=$t; {quote(proc.argv)} {redirect(proc)}; r=$?; now; "
                f'echo "{MARKER} {PROC_STEP}{i} $s $t $r"; exit $r; }} & p{i}=$!'
            )
        for i in range(1, len(procs) + 1):
            lines.append(f"wait $p{i}; r{i}=$?")
    elif len(procs) == 1:
        lines.append(f"{quote(procs[0].argv)} {redirect(procs[0])}; r1=$?")
    else:
        for i, proc in enumerate(procs, start=1):
            lines.append(f"{quote(proc.argv)} {redirect(proc)} & p{i}=$!")
        for i in range(1, len(procs) + 1):
            lines.append(f"wait $p{i}; r{i}=$?")
    lines.append("now; t1=$t")
    # The CPU time of the step's processes (this shell's waited-for children: the tools,
    # every process under them), before any background process is waited for.
    lines.append(
        f'read -r c < /proc/$$/stat 2>/dev/null && echo "{CPU_MARKER} '
        '$(getconf CLK_TCK 2>/dev/null) $c"'
    )
    for i in range(1, len(background) + 1):
        lines.append(f"kill $bg{i} 2>/dev/null; wait $bg{i} 2>/dev/null")
    rcs = ",".join(f"$r{i}" for i in range(1, len(procs) + 1))
    lines.append(f'printf \'{MARKER} %s %s %s %s\\n\' {shlex.quote(step)} "$t0" "$t1" "{rcs}"')
    body = "\n".join(lines) + "\n"
    # LC_ALL=C first: bash writes $EPOCHREALTIME with the locale's decimal separator.
    return (
        "export LC_ALL=C\n"
        'if [ -z "${EPOCHREALTIME:-}" ] && command -v bash >/dev/null 2>&1; then '
        f"exec bash -c {shlex.quote(body)}; fi\n" + body
    )


HTTP_MARKER = "@perfpost-http"


def http_get_script(url: str, timeout: float = 10.0) -> str:
    """GET ``url`` with curl on the host (the service may be reachable only from the
    cluster), following redirects (a standby RM points to the active one); the body goes to
    stdout, then a ``@perfpost-http <status>`` line."""
    return (
        "command -v curl >/dev/null 2>&1 || { echo 'curl is not installed on the host' >&2; "
        "exit 127; }\n"
        f"exec curl -sS -L --max-time {timeout:g} -H 'Accept: application/json' "
        f"-w '\\n{HTTP_MARKER} %{{http_code}}\\n' -- {shlex.quote(url)}\n"
    )


def http_put_script(url: str, body: str, timeout: float = 10.0) -> str:
    """PUT the JSON ``body`` to ``url`` with curl on the host; output as
    :func:`http_get_script`'s."""
    return (
        "command -v curl >/dev/null 2>&1 || { echo 'curl is not installed on the host' >&2; "
        "exit 127; }\n"
        f"exec curl -sS -L --max-time {timeout:g} -X PUT -H 'Content-Type: application/json' "
        f"-H 'Accept: application/json' --data {shlex.quote(body)} "
        f"-w '\\n{HTTP_MARKER} %{{http_code}}\\n' -- {shlex.quote(url)}\n"
    )


def parse_http(stdout: str) -> tuple[int | None, str]:
    """The status and body printed by :func:`http_get_script` (status None if cut off)."""
    body, sep, tail = stdout.rpartition(f"\n{HTTP_MARKER} ")
    if not sep:
        return None, stdout
    code = tail.strip()
    return (int(code) if code.isdigit() else None), body


def sync_script() -> str:
    """``sync`` timed on the host, as the posts' ``time sync``."""
    return (
        "t0=$(date +%s.%N); sync; r=$?; t1=$(date +%s.%N)\n"
        f'printf \'{MARKER} sync %s %s %s\\n\' "$t0" "$t1" "$r"\n'
    )


LEFT_MARKER = "@perfpost-left"


def cleanup_script(*paths: str) -> str:
    """Remove the cell's scratch: the tool's files and its unmasked logs must not stay on
    the host. A tool may leave directories it cannot write (read-only caches): those are made
    writable and removed again. Whatever is still there is named on a ``@perfpost-left`` line.
    """
    quoted = " ".join(_check_scratch(p) for p in paths)
    return (
        f"rm -rf -- {quoted} 2>/dev/null || {{ chmod -R u+rwx -- {quoted} 2>/dev/null; "
        f"rm -rf -- {quoted}; }}\n"
        f'for p in {quoted}; do [ -e "$p" ] && echo "{LEFT_MARKER} $p"; done; exit 0\n'
    )


RELEASE = "release"
RELEASE_WAIT = 10.0  # seconds a released guard gets to end


def scratch_guard() -> str:
    """For ``sh -c GUARD perfpost ABANDON``, started before a cell makes its scratch: ABANDON
    (the cell's :func:`cleanup_script`) runs when standard input closes, unless a ``release``
    line came first. perfpost holds that standard input open for the whole cell, steps and
    the moments between them (copying a log back, parsing, waiting for the next step), and
    releases the guard once it removed the scratch itself; so when perfpost dies, even by
    SIGKILL, the pipe or SSH channel closes and the host removes the scratch. (The step
    that was running removes it again once its tool is dead: a tool still writing could
    have put files back.)"""
    return f'IFS= read -r l; [ "$l" = {RELEASE} ] || sh -c "$1" >/dev/null 2>&1'


def parse_left(stdout: str) -> list[str]:
    """The paths a :func:`cleanup_script` could not remove."""
    prefix = f"{LEFT_MARKER} "
    return [ln[len(prefix) :] for ln in stdout.splitlines() if ln.startswith(prefix)]


@dataclass(frozen=True)
class Timing:
    """One step's host-side timing and exit codes."""

    step: str
    start: float
    end: float
    exit_codes: tuple[int, ...]

    @property
    def elapsed(self) -> float:
        return self.end - self.start


def parse_markers(stdout: str) -> dict[str, Timing]:
    """Timing markers from a script's stdout; other lines are ignored."""
    out = {}
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) != 5 or parts[0] != MARKER:
            continue
        try:
            codes = tuple(int(c) for c in parts[4].split(","))
            out[parts[1]] = Timing(parts[1], float(parts[2]), float(parts[3]), codes)
        except ValueError:
            continue
    return out


# Ozone's and Hadoop's own launchers (a build's bin/ozone, bin/hadoop) refuse to start without
# JAVA_HOME ("JAVA_HOME is not set and could not be found"), which a stock host reached over
# SSH does not set though java is on its PATH: every step gets the JDK that java belongs to,
# as an admin's profile would set it, where JAVA_HOME is not set already.
JAVA_HOME_FALLBACK = (
    'if [ -z "${JAVA_HOME:-}" ] && j=$(command -v java 2>/dev/null) '
    '&& j=$(readlink -f "$j" 2>/dev/null); then '
    'case "$j" in */bin/java) export JAVA_HOME="${j%/bin/java}" ;; esac; fi; '
)
# The line a version step adds to its output: the JAVA_HOME the tool's launcher was given.
JAVA_HOME_MARK = "@perfpost-java-home="


def split_java_home(stdout: str) -> tuple[str, str | None]:
    """A version step's output without the line it added, and the JAVA_HOME that line names
    (None where the host has none and no java on its PATH)."""
    head, sep, rest = ("\n" + stdout).rpartition("\n" + JAVA_HOME_MARK)
    if not sep:
        return stdout, None
    value = rest.split("\n", 1)[0].strip()
    return head[1:], value or None


# Wrappers every script runs in. Both read the cell's environment from standard input first
# (``NAME=<base64 value>`` lines up to a line ``.``: secrets never reach a command line), then
# keep standard input as a lifeline: perfpost holds its other end open while the script runs,
# so when perfpost dies (even by SIGKILL) the pipe or SSH channel closes and a watcher kills
# the script's whole process group. No tool outlives the process that measures it.
_READ_ENV = (
    'while IFS= read -r l && [ "$l" != . ]; do '
    'v=$(printf %s "${l#*=}" | base64 -d) || exit 125; export "${l%%=*}=$v"; done; '
    + JAVA_HOME_FALLBACK
)


def env_block(env: dict[str, str]) -> bytes:
    """What perfpost writes to the wrapper's standard input before the script runs."""
    import base64

    lines = [f"{k}={base64.b64encode(v.encode()).decode()}" for k, v in env.items()]
    return ("".join(line + "\n" for line in lines) + ".\n").encode()


def local_wrapper() -> str:
    """For ``sh -c WRAPPER perfpost SCRIPT [ABANDON]`` in a process group of its own: when
    perfpost goes away the watcher stops the group, runs ABANDON (removing the cell's
    scratch) and kills what is left."""
    return (
        _READ_ENV + "exec 3<&0; "
        "{ cat <&3 >/dev/null 2>&1; trap '' TERM; kill -TERM 0; sleep 1; "
        '[ -n "${2:-}" ] && sh -c "$2"; kill -KILL 0; } >/dev/null 2>&1 & '
        'exec 3<&-; sh -c "$1" </dev/null'
    )


TIMED_OUT_MARKER = "@perfpost-timed-out"

# What `timeout` runs: the script, under a shell that tells its own end from `timeout`'s. It
# makes the file "$2" once the script has ended by itself; a TERM (sent when `timeout` fires)
# is caught, so this shell waits for the script, and `timeout` goes on to KILL a script that
# ignores TERM, as before. A caught signal is not inherited: the script gets TERM as usual.
# This shell's own standard error is /dev/null, as it is while it waits for the script: it
# writes "Terminated" there when the script dies of TERM. The script gets the real one back.
_OWN_END = (
    "exec 4>&2 2>/dev/null; t=; trap t=1 TERM; "
    """sh -c 'exec 2>&4 4>&-; exec sh -c "$1"' perfpost "$1"; r=$?; """
    '[ -n "$t" ] || : >"$2"; exit $r'
)


def timed_out_mark(pidfile: str) -> str:
    """What :func:`remote_wrapper` adds to standard error when ``timeout`` stopped the script:
    named after the command's pidfile, so no output of the script can be taken for it."""
    return f"\n{TIMED_OUT_MARKER} {pidfile}\n"


def split_timed_out(stderr: str, pidfile: str) -> tuple[bool, str]:
    """Whether :func:`remote_wrapper` marked its script as stopped by ``timeout``, and the
    script's standard error without the mark, as the script wrote it."""
    head, mark, tail = stderr.rpartition(timed_out_mark(pidfile))
    return (True, head + tail) if mark else (False, stderr)


def remote_wrapper(pidfile: str, timeout: float, kill_after: float) -> str:
    """For ``sh -c WRAPPER perfpost SCRIPT [ABANDON]`` over SSH: ``timeout`` puts the script
    in a new process group (its pid, the group id, goes to ``pidfile`` so perfpost can kill
    it); the watcher kills that group when the SSH channel closes before the script ends,
    then runs ABANDON (removing the cell's scratch, which perfpost can no longer do).

    The wrapper stops the watcher (TERM) once the script has ended, as after any script;
    after a lost channel it is the watcher that ended it, so the watcher ignores TERM from
    the moment it takes over, and ABANDON runs whether or not sshd has closed the channel's
    output yet (the wrapper may then die of SIGPIPE, or live on to that TERM).

    The exit status is the script's. ``timeout`` exits 124 when it fires (137 when it had to
    KILL), which a script may exit with too: so once the script has ended, the wrapper says
    on standard error that ``timeout`` stopped it (:func:`timed_out_mark`), where the status
    is one of those and the script did not end by itself (the shell that runs it makes
    ``<pidfile>.ended`` when it does); :func:`split_timed_out` takes the mark off."""
    pf = shlex.quote(pidfile)
    ended = shlex.quote(f"{pidfile}.ended")
    kill = (
        f'kill -TERM "-$p" 2>/dev/null; sleep 1; kill -KILL "-$p" 2>/dev/null; '
        f'rm -f {pf} {ended}; [ -n "${{2:-}}" ] && sh -c "$2"'
    )
    mark = shlex.quote(timed_out_mark(pidfile).strip("\n"))
    return (
        _READ_ENV + "exec 3<&0; "
        f"timeout -k {kill_after:g} {timeout:g} sh -c {shlex.quote(_OWN_END)} perfpost "
        f'"$1" {ended} </dev/null 3<&- & p=$!; '
        f'echo "$p" > {pf}; '
        f"{{ cat <&3 >/dev/null 2>&1; trap '' TERM; if [ -e {pf} ]; then {kill}; fi; }} "
        ">/dev/null 2>&1 & "
        # dash says "Killed" on standard error when `timeout` dies of its own KILL.
        'w=$!; exec 3<&-; wait "$p" 2>/dev/null; rc=$?; '
        f"case $rc in 124|137) [ -e {ended} ] || printf '\\n%s\\n' {mark} >&2 ;; esac; "
        f'rm -f {pf} {ended}; kill "$w" 2>/dev/null; exit $rc'
    )
