"""The settings reference, made from the config schema itself when the site is built.

mkdocs.yml names this file as a hook: the page ``settings.md`` holds the marker below, and
every build replaces it with one table per top-level key of
``workflow/perfpost/plan/config.schema.yaml``, a row per key (its path, type, default and
the schema's own description). The schema is what perfpost checks a config against, so the
reference cannot say anything else; a key without a description fails the build.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "workflow" / "perfpost" / "plan" / "config.schema.yaml"
MARKER = "<!-- settings: generated from config.schema.yaml -->"
PAGE = "settings.md"

# What stands for a name the config chooses, by the key whose entries they are.
PLACEHOLDERS = {
    "hosts": "<host>",
    "clusters": "<cluster>",
    "experiments": "<experiment>",
    "roles": "<role>",
    "jvm": "<role>",
    "env": "<VAR>",
    "axes": "<axis>",
    "params": "<param>",
    "core-site": "<key>",
    "hdfs-site": "<key>",
    "ozone-site": "<key>",
    "yarn-site": "<key>",
    "mapred-site": "<key>",
}


def load(path: Path = SCHEMA) -> dict[str, Any]:
    return yaml.safe_load(path.read_text())


def _resolve(node: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """``node`` with its ``$ref`` followed; its own keys (a description) win over the def's."""
    while "$ref" in node:
        ref = node["$ref"]
        target = schema
        for part in ref.removeprefix("#/").split("/"):
            target = target[part]
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def _branches(node: dict[str, Any], schema: dict[str, Any]) -> list[dict[str, Any]]:
    """The node and each of its ``oneOf``/``anyOf`` alternatives, resolved."""
    out = [node]
    for key in ("oneOf", "anyOf"):
        out += [_resolve(b, schema) for b in node.get(key, [])]
    return out


def _children(node: dict[str, Any], name: str, schema: dict[str, Any]):
    """(path part, schema) of every key under ``node`` (named ``name`` in its parent): its
    properties, a mapping's entries (a placeholder), a list's items ("[]"), in any of its
    alternatives."""
    for branch in _branches(node, schema):
        for key, sub in branch.get("properties", {}).items():
            yield key, _resolve(sub, schema)
        extra = branch.get("additionalProperties")
        if isinstance(extra, dict):
            yield PLACEHOLDERS.get(name, "<name>"), _resolve(extra, schema)
        items = branch.get("items")
        if isinstance(items, dict):
            yield "[]", _resolve(items, schema)


def entries(schema: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Every key of the schema, depth first in the schema's order: its dotted path, whether
    the config names it literally (not a placeholder or a list's items), and its schema."""
    schema = schema or load()
    out: list[dict[str, Any]] = []

    def walk(node: dict[str, Any], path: list[str]) -> None:
        for part, sub in _children(node, path[-1] if path else "", schema):
            here = [*path, part]
            literal = not (part.startswith("<") or part == "[]")
            # A name the config chooses, or a list's items, is a row where the schema
            # says what it is; its keys are rows of their own either way.
            if literal or str(sub.get("description", "")).strip():
                out.append({"path": here, "literal": literal, "schema": sub})
            walk(sub, here)

    walk(schema, [])
    return out


def dotted(path: list[str]) -> str:
    return ".".join(path).replace(".[]", "[]")


def type_of(node: dict[str, Any], schema: dict[str, Any]) -> str:
    """What a value may be, in words: ``integer, 1 to 1000``, ``one of `a`, `b```."""
    node = _resolve(node, schema)
    alternatives = node.get("oneOf") or node.get("anyOf")
    if alternatives:
        return " or ".join(type_of(b, schema) for b in alternatives)
    if "const" in node:
        return f"`{_yaml(node['const'])}`"
    if "enum" in node:
        return "one of " + ", ".join(f"`{_yaml(v)}`" for v in node["enum"])
    kind = node.get("type")
    if kind is None:
        kind = "mapping" if "properties" in node or "additionalProperties" in node else "any"
    names = {"object": "mapping", "array": "list", "null": "null"}
    words = " or ".join(names.get(k, k) for k in ([kind] if isinstance(kind, str) else kind))
    if kind == "array" and isinstance(node.get("items"), dict):
        inner = type_of(node["items"], schema)
        words = f"list of {inner}" if " " not in inner else f"list (each: {inner})"
    bounds = []
    low = node.get("minimum", node.get("exclusiveMinimum"))
    high = node.get("maximum", node.get("exclusiveMaximum"))
    if low is not None and high is not None:
        bounds.append(f"{_num(low)} to {_num(high)}")
    elif "exclusiveMinimum" in node:
        bounds.append(f"over {_num(node['exclusiveMinimum'])}")
    elif low is not None:
        bounds.append(f"at least {_num(low)}")
    elif high is not None:
        bounds.append(f"at most {_num(high)}")
    if "minItems" in node:
        bounds.append(f"at least {node['minItems']} item{'s' if node['minItems'] > 1 else ''}")
    return ", ".join([words, *bounds])


def _num(v: Any) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def _yaml(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value) if not isinstance(value, bool) else str(value).lower()


def _cell(text: str) -> str:
    """One table cell: on one line, its pipes escaped, and angle brackets outside code spans
    shown as text (``<cache>/<name>``), not taken for HTML."""
    parts = " ".join(text.split()).replace("|", "\\|").split("`")
    for i in range(0, len(parts), 2):  # the even parts lie outside backticks
        parts[i] = parts[i].replace("<", "&lt;").replace(">", "&gt;")
    return "`".join(parts)


def describe(node: dict[str, Any], path: list[str]) -> str:
    text = node.get("description", "")
    if not text.strip():
        raise ValueError(f"{SCHEMA.name}: key {dotted(path)} has no description")
    return _cell(text)


def reference(schema: dict[str, Any] | None = None) -> str:
    """The settings page's tables: one section per top-level key."""
    schema = schema or load()
    rows = entries(schema)
    out = []
    for top in schema["properties"]:
        out += [f"## `{top}`", ""]
        mine = [r for r in rows if r["path"][0] == top]
        out += ["| Key | Type | Default | Description |", "| --- | --- | --- | --- |"]
        for r in mine:
            sub = r["schema"]
            default = f"`{_yaml(sub['default'])}`" if "default" in sub else ""
            out.append(
                f"| `{dotted(r['path'])}` | {_cell(type_of(sub, schema))} | {default} | "
                f"{describe(sub, r['path'])} |"
            )
        out.append("")
    return "\n".join(out)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """mkdocs' hook: the settings page gets its tables."""
    if page.file.src_uri != PAGE:
        return markdown
    if MARKER not in markdown:
        raise ValueError(f"{PAGE}: the marker {MARKER} is missing")
    return markdown.replace(MARKER, reference())
