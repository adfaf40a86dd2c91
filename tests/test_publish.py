"""`perfpost publish`: which sites it knows, where a post goes in each, and that it never
writes over a page that differs (the real post in a real Hugo build: tests/test_post_e2e.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfpost.analysis import publish
from perfpost.cli import main
from perfpost.errors import PerfpostError

POST = """---
title: "A post"
date: 2026-01-02T03:04:05+00:00
draft: false
tags: ["dd"]
---

Numbers in [data.csv](data.csv), see [the results](#results).

![Throughput](figures/throughput.png)

```sh
echo '![not a link](figures/nowhere.png)'
```
"""


def make_post(reports: Path, name: str = "blocks", text: str = POST) -> Path:
    post = reports / name
    (post / "figures").mkdir(parents=True)
    (post / "index.md").write_text(text)
    (post / "data.csv").write_text("a,b\n1,2\n")
    (post / "figures" / "throughput.png").write_bytes(b"\x89PNG not really")
    (post / "figures" / ".snakemake_timestamp").write_text("")
    return post


def hugo_site(root: Path, config: str = "hugo.toml") -> Path:
    (root / "content").mkdir(parents=True)
    (root / config).write_text('title = "t"\n')
    return root


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize("config", ["hugo.toml", "config.toml", "config.yaml", "hugo.yaml"])
def test_a_hugo_site_gets_a_page_bundle_under_content(tmp_path, config):
    make_post(tmp_path / "reports")
    site = hugo_site(tmp_path / "site", config)
    (done,) = publish.publish(site, [], reports=tmp_path / "reports")
    assert done.dest == site / "content" / "posts" / "blocks"
    assert done.outcome == "new"
    # The post's files as they are; Snakemake's marker file is not part of it.
    assert tree(done.dest) == {
        "index.md": POST.encode(),
        "data.csv": b"a,b\n1,2\n",
        "figures/throughput.png": b"\x89PNG not really",
    }
    assert [p.name for p in done.dest.parent.iterdir()] == ["blocks"]  # no temporary left


def test_a_jekyll_site_gets_a_post_with_its_files_at_its_address(tmp_path):
    make_post(tmp_path / "reports")
    site = tmp_path / "site"
    site.mkdir()
    (site / "_config.yml").write_text("title: t\nbaseurl: /blog\n")
    (done,) = publish.publish(site, ["blocks"], "perf", reports=tmp_path / "reports")
    # A post, named by the day of its date, so it is listed and in the feed.
    assert done.dest == site / "_posts" / "2026-01-02-blocks.md"
    text = done.dest.read_text()
    head = text.split("---\n")[1]
    assert "permalink: /perf/blocks/\n" in head
    assert "layout: post\n" in head  # the site's defaults give posts none
    # Links root-relative, under the site's baseurl: right on the page and in a feed; the
    # anchor and the fenced code as they were.
    assert "[data.csv](/blog/perf/blocks/data.csv)" in text
    assert "![Throughput](/blog/perf/blocks/figures/throughput.png)" in text
    assert "[the results](#results)" in text
    assert "echo '![not a link](figures/nowhere.png)'" in text
    # Its files where the links point, the post itself not among them.
    files = tree(site / "perf" / "blocks")
    assert files == {"data.csv": b"a,b\n1,2\n", "figures/throughput.png": b"\x89PNG not really"}
    # Again: nothing to do. The same post made later (a new date) replaces the old one
    # only when asked, and leaves one post.
    (again,) = publish.publish(site, ["blocks"], "perf", reports=tmp_path / "reports")
    assert again.outcome == "unchanged"
    later = POST.replace("2026-01-02T03:04:05", "2026-02-03T03:04:05")
    (tmp_path / "reports" / "blocks" / "index.md").write_text(later)
    with pytest.raises(PerfpostError, match=r"2026-01-02-blocks.md is there"):
        publish.publish(site, ["blocks"], "perf", reports=tmp_path / "reports")
    (third,) = publish.publish(site, ["blocks"], "perf", True, reports=tmp_path / "reports")
    assert third.outcome == "replaced"
    assert [p.name for p in (site / "_posts").iterdir()] == ["2026-02-03-blocks.md"]


def test_a_jekyll_site_whose_defaults_give_posts_a_layout_keeps_it(tmp_path):
    make_post(tmp_path / "reports")
    site = tmp_path / "site"
    site.mkdir()
    (site / "_config.yml").write_text(
        "defaults:\n  - scope: {type: posts}\n    values: {layout: article}\n"
    )
    (done,) = publish.publish(site, ["blocks"], reports=tmp_path / "reports")
    assert "layout:" not in done.dest.read_text().split("---\n")[1]
    assert "![Throughput](/posts/blocks/figures/throughput.png)" in done.dest.read_text()


def test_publishing_the_same_post_again_changes_nothing(tmp_path):
    make_post(tmp_path / "reports")
    site = hugo_site(tmp_path / "site")
    publish.publish(site, [], reports=tmp_path / "reports")
    (again,) = publish.publish(site, [], reports=tmp_path / "reports")
    assert again.outcome == "unchanged"


def test_a_page_that_differs_is_refused_unless_replace(tmp_path):
    post = make_post(tmp_path / "reports")
    site = hugo_site(tmp_path / "site")
    publish.publish(site, [], reports=tmp_path / "reports")
    dest = site / "content" / "posts" / "blocks"
    (dest / "notes.txt").write_text("added in the site\n")
    (post / "data.csv").write_text("a,b\n1,3\n")  # the post made again, other numbers
    before = tree(site)
    with pytest.raises(PerfpostError) as e:
        publish.publish(site, [], reports=tmp_path / "reports")
    assert str(dest) in str(e.value)
    assert "--replace" in str(e.value)
    assert tree(site) == before
    (done,) = publish.publish(site, [], replace=True, reports=tmp_path / "reports")
    assert done.outcome == "replaced"
    # The post's files now, and nothing else: the page's own file went with it.
    assert tree(dest) == {k: v for k, v in tree(post).items() if "snakemake" not in k}
    assert (dest / "data.csv").read_text() == "a,b\n1,3\n"


def test_one_refusal_publishes_none_of_the_posts(tmp_path):
    make_post(tmp_path / "reports", "a")
    make_post(tmp_path / "reports", "b")
    site = hugo_site(tmp_path / "site")
    (site / "content" / "posts" / "b").mkdir(parents=True)
    with pytest.raises(PerfpostError, match=r"posts/b exists and differs"):
        publish.publish(site, [], reports=tmp_path / "reports")
    assert not (site / "content" / "posts" / "a").exists()


@pytest.mark.parametrize(
    ("link", "words"),
    [
        ("figures/missing.png", "no such file"),
        ("/figures/throughput.png", "relative"),
        ("../blocks/data.csv", "leaves the post's folder"),
    ],
)
def test_a_post_whose_link_would_not_resolve_is_refused(tmp_path, link, words):
    make_post(tmp_path / "reports", text=POST + f"\n![broken]({link})\n")
    site = hugo_site(tmp_path / "site")
    with pytest.raises(PerfpostError, match=words) as e:
        publish.publish(site, [], reports=tmp_path / "reports")
    assert "index.md" in str(e.value)
    assert link in str(e.value)
    assert not (site / "content" / "posts").exists()


def test_a_file_jekyll_would_leave_out_is_refused_for_jekyll(tmp_path):
    post = make_post(tmp_path / "reports", text=POST + "\n![x](figures/_x.png)\n")
    (post / "figures" / "_x.png").write_bytes(b"png")
    site = tmp_path / "site"
    site.mkdir()
    (site / "_config.yml").write_text("")
    with pytest.raises(PerfpostError, match=r"Jekyll leaves _x\.png out"):
        publish.publish(site, [], reports=tmp_path / "reports")
    with pytest.raises(PerfpostError, match="Jekyll does not write"):
        publish.publish(site, [], "_drafts", reports=tmp_path / "reports")


def test_sites_it_does_not_know_are_clear_errors(tmp_path):
    (tmp_path / "plain").mkdir()
    with pytest.raises(PerfpostError, match="not a Hugo or Jekyll site"):
        publish.detect(tmp_path / "plain")
    (tmp_path / "nocontent").mkdir()
    (tmp_path / "nocontent" / "hugo.toml").write_text("")
    with pytest.raises(PerfpostError, match="without a content/ folder"):
        publish.detect(tmp_path / "nocontent")
    both = hugo_site(tmp_path / "both")
    (both / "_config.yml").write_text("")
    with pytest.raises(PerfpostError, match="both a Hugo site"):
        publish.detect(both)
    with pytest.raises(PerfpostError, match="a folder inside the site"):
        publish.check_section("../elsewhere", publish.detect(hugo_site(tmp_path / "h")))


def test_the_command_names_what_it_refused_and_exits_2(tmp_path, monkeypatch, capsys):
    make_post(tmp_path / "reports")
    site = hugo_site(tmp_path / "site")
    monkeypatch.chdir(tmp_path)
    assert main(["publish", "--site", "site"]) == 0
    assert capsys.readouterr().out == f"blocks -> {Path('site/content/posts/blocks')} (new)\n"
    (site / "content" / "posts" / "blocks" / "data.csv").write_text("edited\n")
    assert main(["publish", "--site", "site", "blocks"]) == 2
    err = capsys.readouterr().err
    assert "site/content/posts/blocks exists and differs" in err
    assert "(data.csv differs)" in err
    assert main(["publish", "--site", "site", "nope"]) == 2
    assert "reports/nope/index.md: no such post" in capsys.readouterr().err
