"""The house style is checked like any other promise: ruff, snakefmt and snakemake --lint."""

import shutil
import subprocess

import pytest

from tests.conftest import BIN, ROOT, env_with_venv, snakemake_bin

SMK = [
    "Snakefile",
    *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "workflow" / "rules").glob("*.smk")),
]


def tool(name: str) -> str:
    path = BIN / name
    if path.exists():
        return str(path)
    found = shutil.which(name)
    if not found:
        pytest.fail(f"{name} is not installed: run scripts/setup --test")
    return found


def check(argv):
    result = subprocess.run(
        argv, cwd=ROOT, capture_output=True, text=True, timeout=300, env=env_with_venv()
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    return result


def test_ruff_is_clean():
    check([tool("ruff"), "check", "."])


def test_snakefmt_is_clean():
    check([tool("snakefmt"), "--check", *SMK])


def test_snakemake_lint_is_clean():
    result = check([snakemake_bin(), "--lint"])
    assert "Congratulations" in result.stdout + result.stderr


def test_no_module_of_the_package_is_over_600_lines():
    """A module past a few hundred lines holds several concerns: it is cut by concern, each
    part readable alone (the rooms a newcomer walks through)."""
    package = ROOT / "workflow" / "perfpost"
    long = {
        str(p.relative_to(package)): n
        for p in package.rglob("*.py")
        if (n := len(p.read_text().splitlines())) > 600
    }
    assert long == {}
