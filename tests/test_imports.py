"""The package's shape as a test: no import cycle, and every import goes down the layers.

Data flows one way: a config becomes a plan of cells (using what each tool says of its
parameters), cells run on hosts, records become tables and posts, and the Snakemake glue and
the command line sit on top. A module may import its own layer or a lower one, never a higher
one. Every import statement counts, including those inside functions: an import put there to
dodge a cycle at load time is still a cycle in the design.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

import perfpost

# PERFPOST_IMPORTS_ROOT checks another copy of the package (an older checkout's).
PACKAGE = Path(os.environ.get("PERFPOST_IMPORTS_ROOT") or Path(perfpost.__file__).resolve().parent)

# Lower layers never import higher ones. Modules directly in perfpost/ are the core (errors,
# units, paths, records, ...), except the Snakemake glue; subpackages are named here.
LAYERS = {
    "core": 0,
    "tools": 1,  # one folder per tool: command builder, parser, method text, provisioning
    "clusters": 1,  # clusters of the system under test perfpost sets up itself
    "instrument": 1,  # what runs beside a measurement: the Byteman agent, the resource sampler
    "plan": 2,  # config -> plan of cells
    "run": 3,  # cells on hosts -> records
    "analysis": 4,  # records -> tables, figures, posts
    "history": 5,  # finished runs of many sessions -> series over builds, change points
    "glue": 5,  # what the Snakemake rules call
    "cli": 6,  # the perfpost command
}


def module_name(path: Path, root: Path, package: str = "perfpost") -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([package, *parts])


def import_graph(root: Path, package: str = "perfpost") -> dict[str, set[str]]:
    """Module -> the package's modules it imports, from every import statement anywhere in
    it (module level, functions, methods, conditionals)."""
    files = {module_name(p, root, package): p for p in sorted(root.rglob("*.py"))}
    known = set(files)

    def resolve(name: str) -> str | None:
        """The module ``name`` is, or the package-module it lives in."""
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for mod, path in files.items():
        is_pkg = path.name == "__init__.py"
        here = mod if is_pkg else mod.rpartition(".")[0]
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = here.split(".")
                    anchor = anchor[: len(anchor) - (node.level - 1)]
                    base = ".".join([*anchor, base] if base else anchor)
                # `from perfpost.tools import dd` imports a module; `from x import name`
                # imports from module x.
                targets = [
                    f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names
                ]
            else:
                continue
            for t in targets:
                if t == package or t.startswith(package + "."):
                    found = resolve(t)
                    if found and found != mod:
                        edges.add(found)
        graph[mod] = edges
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as [a, b, ..., a], or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(mod: str) -> list[str] | None:
        state[mod] = 1
        path.append(mod)
        for dep in sorted(graph.get(mod, ())):
            if state.get(dep) == 1:
                return [*path[path.index(dep) :], dep]
            if dep not in state:
                found = visit(dep)
                if found:
                    return found
        path.pop()
        state[mod] = 2
        return None

    for mod in sorted(graph):
        if mod not in state:
            found = visit(mod)
            if found:
                return found
    return None


def layer(mod: str) -> str:
    parts = mod.split(".")
    if len(parts) == 1:
        return "core"  # perfpost/__init__.py
    if parts[1] in LAYERS:
        return parts[1]
    if parts[1] == "__main__":
        return "cli"
    return "core"


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Every import of a higher layer, as 'importer (layer) -> imported (layer)'."""
    out = []
    for mod, deps in sorted(graph.items()):
        for dep in sorted(deps):
            if LAYERS[layer(dep)] > LAYERS[layer(mod)]:
                out.append(f"{mod} ({layer(mod)}) -> {dep} ({layer(dep)})")
    return out


def test_the_package_has_no_import_cycle():
    cycle = find_cycle(import_graph(PACKAGE))
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_no_module_imports_a_higher_layer():
    assert upward_imports(import_graph(PACKAGE)) == []


def test_every_subpackage_has_a_layer():
    subpackages = {p.parent.relative_to(PACKAGE).parts[0] for p in PACKAGE.glob("*/__init__.py")}
    assert subpackages <= set(LAYERS), sorted(subpackages - set(LAYERS))


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_a_cycle_through_a_function_local_import_is_found(tmp_path):
    # a imports b at module level; b imports a only inside a function: still a cycle.
    root = _write(
        tmp_path / "perfpost",
        {
            "__init__.py": "",
            "a.py": "from perfpost import b\n",
            "b.py": "def f():\n    from perfpost.a import x\n    return x\n",
            "c.py": "import perfpost.a\n",
        },
    )
    graph = import_graph(root)
    assert graph["perfpost.c"] == {"perfpost.a"}
    assert find_cycle(graph) == ["perfpost.a", "perfpost.b", "perfpost.a"]


def test_relative_imports_and_submodules_are_resolved(tmp_path):
    root = _write(
        tmp_path / "perfpost",
        {
            "__init__.py": "",
            "errors.py": "",
            "tools/__init__.py": "from perfpost.tools import dd\n",
            "tools/dd/__init__.py": "from ..base import Proc\nfrom ... import errors\n",
            "tools/base.py": "",
            "plan/__init__.py": "",
            "plan/config.py": "from perfpost.tools import get\n",
        },
    )
    graph = import_graph(root)
    assert graph["perfpost.tools"] == {"perfpost.tools.dd"}
    assert graph["perfpost.tools.dd"] == {"perfpost.tools.base", "perfpost.errors"}
    assert graph["perfpost.plan.config"] == {"perfpost.tools"}
    assert find_cycle(graph) is None
    assert upward_imports(graph) == []


def test_an_import_of_a_higher_layer_is_named(tmp_path):
    root = _write(
        tmp_path / "perfpost",
        {
            "__init__.py": "",
            "tools/__init__.py": "def f():\n    from perfpost.plan import config\n",
            "plan/__init__.py": "",
            "plan/config.py": "",
        },
    )
    assert upward_imports(import_graph(root)) == [
        "perfpost.tools (tools) -> perfpost.plan.config (plan)"
    ]


@pytest.mark.parametrize("mod", ["perfpost", "perfpost.units", "perfpost.__main__"])
def test_top_level_modules_sit_in_core_or_cli(mod):
    assert layer(mod) == ("cli" if mod.endswith("__main__") else "core")


def module_strings(root: Path, package: str = "perfpost") -> list[tuple[str, str]]:
    """(module, text) of every string literal that is a dotted name in the package: how
    ``python -m`` commands and ``sys.modules`` look-ups name modules."""
    out = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            value = getattr(node, "value", None) if isinstance(node, ast.Constant) else None
            if isinstance(value, str) and value.startswith(package + ".") and value.count(" ") == 0:
                if all(part.isidentifier() for part in value.split(".")):
                    out.append((module_name(path, root, package), value))
    return out


def test_modules_named_in_strings_exist():
    # `python -m perfpost.cli.janitor`, sys.modules.get("perfpost.run.remote"): a module
    # that moved would otherwise fail only when a run is killed.
    known = set(import_graph(PACKAGE))
    assert [(m, s) for m, s in module_strings(PACKAGE) if s not in known] == []


def test_a_string_naming_a_moved_module_is_found(tmp_path):
    root = _write(
        tmp_path / "perfpost",
        {
            "__init__.py": "",
            "run/__init__.py": "",
            "run/lifeline.py": 'ARGV = ["-m", "perfpost.lifeline"]\nKEY = b"perfpost.x"\n',
        },
    )
    known = set(import_graph(root))
    found = [(m, s) for m, s in module_strings(root) if s not in known]
    assert found == [("perfpost.run.lifeline", "perfpost.lifeline")]


def test_a_dd_cell_imports_neither_other_tools_nor_http():
    # A cell's process builds the command line and loads its own tool: every other tool's
    # parser, every cluster kind and urllib.request (ssl, email) would be start-up paid per cell.
    code = (
        "import sys\n"
        "from perfpost import cli, tools\n"
        "cli.build_parser()\n"
        "assert tools.get('dd').RUNTIME is None\n"
        "print(sorted(m for m in sys.modules if m.startswith(('perfpost.tools.', "
        "'perfpost.clusters.', 'urllib.request'))))\n"
        "print(sorted(tools.every()) == sorted(tools.NAMES))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    loaded, every = done.stdout.splitlines()
    # dd's own modules only: its tool and the hooks its design checks read.
    assert loaded == "['perfpost.tools.base', 'perfpost.tools.dd', 'perfpost.tools.dd.design']"
    assert every == "True"


def _imported_when_run(source: str) -> set[str]:
    """Every module a script imports when it runs: anywhere in it (functions, the
    ``__main__`` block, any other ``if``), except under ``if TYPE_CHECKING:``, which is never
    true when it runs."""
    tree = ast.parse(source)
    imported: set[str] = set()
    for node in tree.body:
        if (
            isinstance(node, ast.If)
            and isinstance(node.test, ast.Name)
            and node.test.id == "TYPE_CHECKING"
        ):
            imported |= _imported_when_run(ast.unparse(ast.Module(node.orelse, [])))
            continue
        for n in ast.walk(node):
            if isinstance(n, ast.Import):
                imported |= {a.name for a in n.names}
            elif isinstance(n, ast.ImportFrom):
                imported.add(n.module or "")
    return imported


def test_the_cell_job_client_needs_nothing_but_the_interpreter():
    # The rules run perfpost/run/cellclient.py by its path with `python -S`: it must import
    # neither perfpost (not on sys.path then) nor modules that cost what it exists to save.
    source = (PACKAGE / "run" / "cellclient.py").read_text()
    assert _imported_when_run(source) == {"_signal", "_socket", "os", "sys"}
    # An import the client would make when run, wherever it stands, is seen: in the
    # __main__ block, in any other top-level if, in a function.
    for extra in (
        'if __name__ == "__main__":\n    import json\n',
        "if sys.platform:\n    import json\n",
        "def f():\n    import json\n",
    ):
        assert "json" in _imported_when_run(source + "\n" + extra)
