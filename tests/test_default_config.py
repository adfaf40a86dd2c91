"""The README's main command, `snakemake --cores 6 report`, on the shipped default config."""

import pytest

from tests.conftest import ROOT
from tests.e2e import front_matter, image_links, make_checkout, sections, snakemake

pytestmark = pytest.mark.e2e


def test_default_config_measures_this_machine_into_posts(tmp_path):
    work = make_checkout(tmp_path, (ROOT / "config" / "config.yaml").read_text())
    result = snakemake(work, "--cores", "6", "report", timeout=900)
    assert result.returncode == 0, result.stderr[-4000:]
    for experiment in ("dd-fsync", "local-reads"):
        post = (work / "reports" / experiment / "index.md").read_text()
        assert front_matter(post)["title"]
        assert "Environment" in sections(post)
        links = image_links(post)
        assert links
        assert all((work / "reports" / experiment / link).is_file() for link in links)
        assert "dd (coreutils)" in post
    reads = (work / "reports" / "local-reads" / "index.md").read_text()
    # 12 cells x 3 repeats; dropped-cache cells are measured as root and skipped otherwise.
    assert "36 runs in all" in reads
