"""envs/perfpost.yaml, the environment of every rule under `snakemake --use-conda`, holds
what the rules run: perfpost, and every dependency pyproject.toml declares.

conda is not needed here: the file is read as the data conda and Snakemake read."""

import re
import tomllib

import yaml

from tests.conftest import ROOT

ENV = ROOT / "envs" / "perfpost.yaml"
# conda-forge ships these PyPI distributions under another name.
CONDA_NAMES = {"snakemake": "snakemake-minimal", "matplotlib": "matplotlib-base"}


def _name(spec: str) -> str:
    return re.split(r"[<>=!~ \[]", spec.strip(), maxsplit=1)[0].lower()


def test_every_dependency_of_the_package_is_in_the_environment():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    env = yaml.safe_load(ENV.read_text())["dependencies"]
    conda = {_name(d) for d in env if isinstance(d, str)}
    missing = [d for d in deps if CONDA_NAMES.get(_name(d), _name(d)) not in conda]
    assert missing == []
    assert "python=3.11" in env
    assert "pip" in conda


def test_the_environment_installs_this_checkout_from_where_snakemake_puts_it():
    env = yaml.safe_load(ENV.read_text())["dependencies"]
    pip = next(d["pip"] for d in env if isinstance(d, dict) and "pip" in d)
    editable = [p.split(None, 1)[1] for p in pip if p.startswith("-e ")]
    assert len(editable) == 1
    # Snakemake writes the file to <workdir>/.snakemake/conda/<hash>.yaml, conda runs pip
    # in that directory, and the workflow runs in the checkout's root.
    copied_to = ROOT / ".snakemake" / "conda"
    target = (copied_to / editable[0]).resolve()
    assert target == ROOT
    assert tomllib.loads((target / "pyproject.toml").read_text())["project"]["name"] == "perfpost"
