"""Config mistakes perfpost refuses, each with the key path and the words its error must
hold: checked in process by tests/test_config.py and through snakemake, before any job
starts, by tests/test_faults.py (whose count the documentation promises, docs/layout.md)."""

from __future__ import annotations

import copy
from typing import Any

import yaml


def config_text(base: dict, change: Any) -> str:
    """The config ``change`` makes of ``base``, as YAML text (or the raw text it is)."""
    cfg = copy.deepcopy(base)
    if callable(change):
        change(cfg)
        return yaml.safe_dump(cfg, sort_keys=False)
    return change  # raw YAML text


def _set(*path_value: Any) -> Any:
    *path, value = path_value

    def change(cfg: dict) -> None:
        node = cfg
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = value

    return change


W = ("experiments", "w")
GOOD = {
    "experiments": {
        "w": {
            "tool": "dd",
            "repeats": 4,
            "axes": {"fs": ["a", "b"]},
            "params": {"dir": "/tmp/perfpost-{fs}", "bs": "4k", "count": 10},
        }
    }
}
MISTAKES = [
    ("unknown top-level key", _set("colour", "red"), "(top level)", "unknown key"),
    ("misspelt experiment key", _set(*W, "repeat", 3), "experiments.w", "unknown key"),
    ("wrong type", _set(*W, "repeats", "three"), "experiments.w.repeats", "not of type"),
    ("zero repeats", _set(*W, "repeats", 0), "experiments.w.repeats", "minimum"),
    ("unknown tool", _set(*W, "tool", "iozone"), "experiments.w.tool", "unknown tool 'iozone'"),
    ("unknown host", _set(*W, "hosts", ["nowhere"]), "experiments.w.hosts[0]", "unknown host"),
    (
        "host listed twice",
        _set(*W, "hosts", ["localhost", "localhost"]),
        "experiments.w.hosts",
        "twice",
    ),
    ("empty axis", _set(*W, "axes", "fs", []), "experiments.w.axes.fs", "should be non-empty"),
    ("bad size unit", _set(*W, "params", "bs", "4 parsecs"), "params.bs", "bad size"),
    (
        "template names no axis",
        _set(*W, "params", "dir", "/tmp/{nope}"),
        "params.dir",
        "names no axis",
    ),
    ("unknown flag value", _set(*W, "params", "oflag", ["sideways"]), "params.oflag", "not one of"),
    ("plot axis unknown", _set(*W, "plot", {"x": "nope"}), "experiments.w.plot.x", "not an axis"),
    ("unknown after-step", _set(*W, "after", ["fsck"]), "experiments.w.after[0]", "not one of"),
    ("no experiments", _set("experiments", {}), "experiments", "non-empty"),
    (
        "param set twice",
        _set(*W, "axes", "bs", ["4k", "8k"]),
        "params.bs",
        "set here and by the axis",
    ),
    (
        "axis named like a column",
        _set(*W, "axes", "n", [1, 2]),
        "experiments.w.axes.n",
        "names a column",
    ),
    ("negative timeout", _set(*W, "timeout", -5), "experiments.w.timeout", "less than or equal"),
    (
        "port out of range",
        _set("hosts", "h9", {"address": "127.0.0.1", "port": 70000}),
        "hosts.h9.port",
        "maximum",
    ),
    (
        "localhost with an address",
        _set("hosts", "localhost", {"address": "10.0.0.1"}),
        "hosts.localhost",
        "without SSH",
    ),
    ("bad env name", _set(*W, "env", {"MY-VAR": "x"}), "experiments.w.env", "does not match"),
    (
        "secret not set",
        _set(*W, "env", {"TOKEN": {"secret": "PERFPOST_UNSET_SECRET"}}),
        "experiments.w.env.TOKEN",
        "PERFPOST_UNSET_SECRET, which is not set",
    ),
    (
        "comparison selects nothing",
        _set(*W, "compare", [{"baseline": {"fs": "a"}, "candidate": {"fs": "zz"}}]),
        "experiments.w.compare[0].candidate",
        "selects no cell",
    ),
    (
        "comparison names no axis",
        _set(*W, "compare", [{"baseline": {"fs": "a"}, "candidate": {"disk": "b"}}]),
        "experiments.w.compare[0].candidate",
        "not an axis",
    ),
    (
        "duplicate experiment",
        "experiments:\n  w: {tool: dd, params: {dir: /tmp/x}}\n"
        "  w: {tool: dd, params: {dir: /tmp/y}}\n",
        "config/config.yaml: line 3",
        "duplicate key 'w' (first at line 2)",
    ),
    (
        "YAML syntax error",
        "experiments:\n  w: {tool: dd, params: {dir: /tmp/x}\n",
        "config.yaml",
        "line",
    ),
    (
        "set-up step with no command",
        _set(*W, "setup", [{"sudo": True}]),
        "experiments.w.setup[0]",
        "give `run: <command>` or `python: file.py:function`",
    ),
    (
        "set-up function in no file",
        _set(*W, "teardown", [{"python": "nowhere/prep.py:undo"}]),
        "experiments.w.teardown[0].python",
        "no file 'nowhere/prep.py'",
    ),
]
