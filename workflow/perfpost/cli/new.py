"""``perfpost new``: a commented starting config for one tool on the hosts a user names.

What a first experiment needs is there and set (the tool's parameters, one axis, the
repeats, a comparison), and the most useful other keys are there as comments, with the page
of the documentation that says more. The file loads as any config does; a user edits it and
runs it with ``snakemake --configfile FILE --replace-workflow-config report``.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

from perfpost.errors import PerfpostError

TOOLS = ("command", "dd", "fio", "freon", "teragen")
LOCALHOST = "localhost"
# As the schema's hosts.propertyNames: a name a host may have in the inventory.
_HOST_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")
_EXPERIMENT_NAME = _HOST_NAME

# What each tool's experiment sets: its name, title, description, the parameters (YAML
# lines under ``params:``), the axis, the comparison and the repeats, and what a remote host
# needs of its own (the inventory key whose ``provisioned`` delivers perfpost's runtime).
_TOOLS: dict[str, dict[str, Any]] = {
    "command": {
        "name": "my-command",
        "title": "A program of one's own: 100 MiB in 4 KiB vs 1 MiB blocks",
        "description": "How long a command of one's own takes to write 100 MiB on each host, "
        "read from the time it prints; here dd, in place of a lab's own script or tool.",
        "params": [
            "# Any program: a string runs in sh -c; {work} is the run's own directory.",
            "run: dd if=/dev/zero of={work}/out bs={bs} count={count} conv=fsync",
            "metrics:                      # each number, from the output (or file: ...)",
            "  seconds: {regex: 'copied, (?P<value>[\\d.]+) s', unit: s}",
            "  # calls: {json: summary.calls, unit: count, better: lower}",
            "# version: dd --version         # its first line names the program's version",
        ],
        "axes": ["bs: [4k, 1M]", "count: [25600, 100]           # 100 MiB either way"],
        "zip": "zip: [[bs, count]]             # they move together: 4k x 25600, 1M x 100",
        "compare": "{name: 1M vs 4k, baseline: {bs: 4k}, candidate: {bs: 1M}, by: []}",
        "after": False,
        "host_key": None,
        "page": "tools/command.md",
    },
    "dd": {
        "name": "dd-writes",
        "title": "dd writes: 4 KiB vs 1 MiB blocks, one fsync after the last",
        "description": "How fast each host's disk takes 100 MiB written in 4 KiB and in 1 MiB "
        "blocks, flushed to the device by one fsync after the last write.",
        "params": [
            "mode: write                   # or read: readers, file_size",
            "dir: /var/tmp/perfpost        # each run writes in a directory of its own here",
            "conv: fsync                   # one fsync after the last write; or oflag: [dsync]",
        ],
        "axes": ["bs: [4k, 1M]", "count: [25600, 100]           # 100 MiB either way"],
        "zip": "zip: [[bs, count]]             # they move together: 4k x 25600, 1M x 100",
        "compare": "{name: 1M vs 4k, baseline: {bs: 4k}, candidate: {bs: 1M}, by: []}",
        "after": True,
        "host_key": None,
        "page": "tools/dd.md",
    },
    "fio": {
        "name": "fio-randread",
        "title": "4 KiB random reads: queue depth 1 vs 16",
        "description": "How many 4 KiB random reads a second each host's disk serves with one "
        "I/O in flight and with sixteen (libaio, O_DIRECT: no page cache), and at what latency.",
        "params": [
            "dir: /var/tmp/perfpost        # each run lays out its files in a directory here",
            "rw: randread                  # read, write, randwrite, randrw (rwmixread), ...",
            "bs: 4k",
            "size: 256M",
            "ioengine: libaio",
            "direct: 1",
            "runtime: 10                   # seconds a run",
            "time_based: true",
            "# options: {lat_percentiles: true}   # any other fio option, by fio's own name",
        ],
        "axes": ["iodepth: [1, 16]"],
        "zip": None,
        "compare": "{name: iodepth 16 vs 1, baseline: {iodepth: 1}, candidate: {iodepth: 16}, "
        "metric: iops}",
        "after": False,
        "host_key": None,
        "page": "tools/fio.md",
    },
    "freon": {
        "name": "freon-files",
        "title": "freon dfsg: files of 10 KiB through the Hadoop FileSystem API, 1 vs 4 threads",
        "description": "How many files of 10 KiB a second freon writes through the Hadoop "
        "FileSystem API into the host's local file system (file://), from one thread and four.",
        "params": [
            "subcommand: dfsg              # any freon generator: ockg, omkg, dcg, dfsv, ...",
            "# program: vapor              # vapor's generators (cmdw, ...) instead of freon's",
            "dir: /var/tmp/perfpost        # each run gets its own directory in it: {work}",
            "options:                      # one letter: -n 1000; longer: --path=...",
            '  path: "file://{work}/fs"    # or {cluster.fs}/{run}: a cluster perfpost deploys',
            "  n: 1000",
            "  s: 10240",
            '  t: "{threads}"',
        ],
        "axes": ["threads: [1, 4]"],
        "zip": None,
        "compare": "{name: 4 threads vs 1, baseline: {threads: 1}, candidate: {threads: 4}}",
        "after": False,
        "host_key": ("ozone", "freon and vapor from here, delivered over SSH (needs a JDK)"),
        "page": "tools/freon.md",
    },
    "teragen": {
        "name": "teragen-local",
        "title": "teragen of 100 MB in MapReduce local mode: 1 vs 2 maps",
        "description": "How long teragen takes to write 100 MB (a million rows) into the host's "
        "local file system, the MapReduce job run in local mode with one map and with two.",
        "params": [
            "size: 100M                    # decimal, as teragen counts: rows of 100 bytes",
            "local: true                   # MapReduce local mode; or resourcemanager: <URL>",
            "dir: /var/tmp/perfpost",
            "# output: hdfs://nn:8020/bench   # default: the run's own directory (file://)",
            "defines:",
            '  mapreduce.job.maps: "{maps}"',
        ],
        "axes": ["maps: [1, 2]"],
        "zip": None,
        "compare": "{name: 2 maps vs 1, baseline: {maps: 1}, candidate: {maps: 2}}",
        "after": False,
        "host_key": ("yarn", "a Hadoop client from this machine, delivered over SSH (needs a JDK)"),
        "page": "tools/teragen.md",
    },
}


def config_text(tool: str, hosts: list[str], name: str | None = None) -> str:
    """The starting config for ``tool`` on ``hosts``, with its comments."""
    if tool not in _TOOLS:
        raise PerfpostError(f"unknown tool {tool!r}: one of {', '.join(TOOLS)}")
    if not hosts:
        raise PerfpostError("name at least one host (--hosts h1,h2; localhost is this machine)")
    for h in hosts:
        if not _HOST_NAME.match(h):
            raise PerfpostError(f"host name {h!r}: letters, digits and . _ + - only")
    if len(set(hosts)) != len(hosts):
        raise PerfpostError(f"a host named twice in {','.join(hosts)}")
    t = _TOOLS[tool]
    name = name or t["name"]
    if not _EXPERIMENT_NAME.match(name):
        raise PerfpostError(f"experiment name {name!r}: letters, digits and . _ + - only")
    remote = [h for h in hosts if h != LOCALHOST]
    out = [
        f"# A first {tool} experiment, written by `perfpost new`: edit it, then run it with",
        "#   snakemake --cores 6 --configfile THIS_FILE --replace-workflow-config report",
        "# (`snakemake -n ...` lists the runs without making them). Every key is in the",
        "# documentation's settings page (docs/settings.md); "
        f"{tool}'s parameters in docs/{t['page']}.",
        "",
    ]
    if remote:
        out += [
            "# How perfpost reaches each host over SSH: its address, user and key, e.g.",
            "#   h1: {address: 192.0.2.10, user: bench, key: ~/.ssh/id_ed25519}",
            "# or nothing, and its name is looked up in ~/.ssh/config (HostName, User, Port,",
            "# IdentityFile, ProxyJump). localhost is this machine and needs no entry.",
            "hosts:",
        ]
        for h in remote:
            if t["host_key"]:
                key, why = t["host_key"]
                out.append(f"  {h}: {{{key}: provisioned}}   # {why}")
            else:
                out.append(f"  {h}: {{}}")
        out += [
            "# Host keys are checked against ~/.ssh/known_hosts: a host not in it fails its",
            "# cells, saying how to add its key. For hosts you have just set up:",
            "# ssh: {trust_new_keys: true}",
            "",
        ]
    out += [
        "experiments:",
        f"  {name}:                      # the name is used in paths and in the post's address",
        f'    title: "{t["title"]}"',
        "    description: >",
        *(f"      {line}" for line in _wrap(t["description"], 84)),
        f"    tool: {tool}",
        f"    hosts: [{', '.join(hosts)}]   # every cell runs on each; one at a time on a host",
        "    params:",
        *(f"      {line}" for line in t["params"]),
        "    axes:                          # the matrix: every combination is a cell",
        *(f"      {line}" for line in t["axes"]),
    ]
    if t["zip"]:
        out.append(f"    {t['zip']}")
    out += [
        "    repeats: 5                     # or {min: 5, max: 20, precision: 5%}",
    ]
    if t["after"]:
        out.append("    after: [sync]                  # `sync` timed after each run")
    out += [
        "    compare:                       # the post's summary states it, if the runs say so",
        f"      - {t['compare']}",
        "    # timeout: 3600                # seconds a command may run before it is killed",
        "    # order: interleaved           # the default where there is a comparison",
        "    # background: {tool: fio, params: {...}, rate: 10MB/s}   # a load beside each run",
        "",
    ]
    return "\n".join(out)


def _wrap(text: str, width: int) -> list[str]:
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    return [*lines, line] if line else lines


def _cmd_new(args: argparse.Namespace) -> int:
    hosts = [h.strip() for h in args.hosts.split(",") if h.strip()]
    text = config_text(args.tool, hosts, args.name)
    if args.output in (None, "-"):
        sys.stdout.write(text)
        return 0
    path = Path(args.output)
    try:
        with path.open("x") as fh:  # never over a file that exists
            fh.write(text)
    except FileExistsError:
        raise PerfpostError(
            f"{path} exists: perfpost new never writes over a file (choose another name)"
        ) from None
    except OSError as e:
        raise PerfpostError(f"{path}: cannot write: {e.strerror}") from None
    print(f"perfpost: wrote {path}; run it with", file=sys.stderr)
    print(
        f"  snakemake --cores 6 --configfile {path} --replace-workflow-config report",
        file=sys.stderr,
    )
    return 0


def add_command(sub: Any) -> None:
    s = sub.add_parser(
        "new",
        help="write a commented starting config for a tool on hosts you name",
        description="Write a commented starting config: one experiment of TOOL on the hosts "
        "named, with an inventory entry for each (localhost is this machine and needs none), "
        "the settings a first run needs and the most useful others as comments. It loads as "
        "it is; edit it, then run it with snakemake --configfile FILE "
        "--replace-workflow-config report.",
    )
    s.add_argument("--tool", required=True, choices=TOOLS)
    s.add_argument(
        "--hosts", default=LOCALHOST, help="comma-separated host names (default: localhost)"
    )
    s.add_argument("--name", help="the experiment's name (default: one for the tool)")
    s.add_argument(
        "-o", "--output", metavar="FILE", help="write to FILE, never over one (default: stdout)"
    )
    s.set_defaults(func=_cmd_new)
