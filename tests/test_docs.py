"""The documentation: the site builds in strict mode (no broken link or anchor, no page
outside the navigation), its settings page lists every key of the config schema, its
performance table is the one bench/table.py writes from the bench's JSON, and the README
stays a short way in."""

from __future__ import annotations

import html
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import BIN, ROOT, env_with_venv

SCHEMA = ROOT / "workflow" / "perfpost" / "plan" / "config.schema.yaml"
DOCS = ROOT / "docs"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [str(BIN / "mkdocs"), "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**env_with_venv(), "NO_MKDOCS_2_WARNING": "1"},
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    return out


def _nav_pages(nav) -> list[str]:
    out = []
    for entry in nav:
        for value in entry.values() if isinstance(entry, dict) else [entry]:
            out += _nav_pages(value) if isinstance(value, list) else [value]
    return out


def test_every_page_is_in_the_navigation_and_built(site):
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    nav = _nav_pages(config["nav"])
    pages = sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md") if "hooks" not in p.parts)
    assert sorted(nav) == pages
    for page in pages:
        built = site / (
            "index.html" if page == "index.md" else page.removesuffix(".md") + "/index.html"
        )
        assert built.is_file(), page


def schema_keys() -> set[tuple[str, ...]]:
    """Every key of the schema a config names literally, as the path of key names that leads
    to it (the names a config chooses, hosts or experiments, and list items left out)."""
    schema = yaml.safe_load(SCHEMA.read_text())

    def resolve(node: dict) -> dict:
        while "$ref" in node:
            target = schema["$defs"][node["$ref"].rsplit("/", 1)[1]]
            node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        return node

    keys: set[tuple[str, ...]] = set()

    def walk(node: dict, path: tuple[str, ...]) -> None:
        node = resolve(node)
        for alternative in [node, *node.get("oneOf", []), *node.get("anyOf", [])]:
            alternative = resolve(alternative)
            for name, sub in alternative.get("properties", {}).items():
                keys.add((*path, name))
                walk(sub, (*path, name))
            for nested in ("additionalProperties", "items"):
                if isinstance(alternative.get(nested), dict):
                    walk(alternative[nested], path)

    walk(schema, ())
    return keys


def settings_rows(site: Path) -> dict[tuple[str, ...], list[str]]:
    """The settings page's table rows: the key's path (placeholders such as <experiment> and
    list items [] left out) -> its cells."""
    page = (site / "settings" / "index.html").read_text()
    rows = {}
    for row in re.findall(r"<tr>(.*?)</tr>", page, re.S):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
        if not cells:
            continue
        key = re.fullmatch(r"<code>(.*?)</code>", cells[0].strip())
        assert key, cells[0]
        parts = html.unescape(key.group(1)).replace("[]", "").split(".")
        path = tuple(p for p in parts if not p.startswith("<"))
        rows[path] = [html.unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in cells]
    return rows


def test_the_settings_page_lists_every_key_of_the_schema(site):
    keys = schema_keys()
    rows = settings_rows(site)
    # Keys deep in the schema, in an alternative and under a list, are counted too.
    assert {
        ("experiments", "repeats", "precision"),
        ("experiments", "compare", "control"),
        ("experiments", "order", "random"),
        ("hosts", "env", "secret"),
    } <= keys
    assert len(keys) > 90
    assert keys - rows.keys() == set()
    for key in keys:
        _, kind, _, description = rows[key]
        assert kind, key
        assert description, key


def test_the_settings_page_says_what_the_schema_says(site):
    rows = settings_rows(site)
    schema = yaml.safe_load(SCHEMA.read_text())
    repeats = schema["$defs"]["experiment"]["properties"]["repeats"]
    _, kind, default, description = rows[("experiments", "repeats")]
    assert default == "3" == str(repeats["default"])
    assert kind == "integer, 1 to 1000 or mapping"
    # The schema's words, its `code` shown as code.
    assert description == " ".join(repeats["description"].replace("`", "").split())
    _, kind, default, _ = rows[("experiments", "order")]
    assert kind == "one of back-to-back, interleaved or mapping"
    assert default == ""


def test_the_performance_table_is_written_from_the_bench_json():
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "table.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    page = (DOCS / "performance.md").read_text()
    assert re.search(r"at commit `[0-9a-f]{7,}", page)


def test_the_readme_is_a_short_way_in():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 300
    assert "scripts/setup && . .venv/bin/activate && snakemake --cores 6 report" in readme
    test_command = "scripts/setup --test && . .venv/bin/activate && pytest"
    assert test_command in readme
    assert (ROOT / ".ci" / "run").read_text().strip().endswith(test_command)
    links = re.findall(r"\]\((docs/[^)#]+)(?:#[^)]*)?\)", readme)
    assert len(links) >= 10
    for link in links:
        assert (ROOT / link).is_file(), link


def test_the_readmes_first_experiment_is_a_config_perfpost_loads():
    from perfpost.plan.build import build_plan

    readme = (ROOT / "README.md").read_text()
    (block,) = re.findall(r"```yaml\n(.*?)```", readme, re.S)
    plan = build_plan(yaml.safe_load(block))
    cells = [(s.cell, s.host["name"]) for s in plan.jobs()]
    # Two cells (iodepth 1 and 16), each on the three hosts, five times.
    assert len(cells) == 2 * 3 * 5
    assert {h for _, h in cells} == {"h1", "h2", "h3"}
