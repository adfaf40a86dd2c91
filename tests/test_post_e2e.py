"""Posts with comparisons, rendered from tidy tables of real dd runs: sections, links, the
summary's numbers against the table, overlapping runs not claimed, too few runs refused, a
failed cell listed; `perfpost compare` between two runs; the HTML report in Chromium."""

import base64
import csv
import datetime as dt
import html
import io
import itertools
import json
import math
import re
import shutil
import statistics
import subprocess
import sys
import threading
import uuid
from contextlib import contextmanager
from functools import partial
from html.parser import HTMLParser
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pandas as pd
import pytest
from scipy.stats import mannwhitneyu

from perfpost.analysis import report, tidy
from perfpost.cli import main
from tests.e2e import experiment_dict, front_matter, image_links, make_checkout, sections, snakemake

pytestmark = pytest.mark.e2e

# The post, in the reference posts' shape, and the notebook beside it with the full record.
POST_SECTIONS = ["How it was run", "Results", "Caveats", "Conclusion"]
SECTIONS = [
    "Summary of the runs",
    "Test method",
    "Test commands",
    "Environment",
    "Results",
    "Resources",
    "Design checks",
    "Validity",
    "Failed cells",
    "Detailed results",
    "Provenance",
]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    work = tmp_path_factory.mktemp("post")
    shm = Path(f"/dev/shm/perfpost-post-{uuid.uuid4().hex[:8]}")
    blocked = work / "blocked"
    blocked.write_text("a file where a directory should be\n")
    config = {
        "experiments": {
            "blocks": {
                "title": "Write 8 MiB to memory: block size",
                "tags": ["dd", "test"],
                "description": 'Eight MiB into memory\n  in blocks of 4 KiB or 1 MiB: "quoted".',
                "tool": "dd",
                "params": {"dir": "{storage}", "bs": "{bs}", "count": "{count}"},
                "axes": {
                    "bs": ["4k", "1M"],
                    "count": [2048, 8],
                    "storage": {"shm": str(shm), "blocked": str(blocked)},
                },
                "zip": [["bs", "count"]],
                "repeats": 5,
                "compare": [
                    {
                        "name": "1M blocks vs 4k",
                        "baseline": {"bs": "4k"},
                        "candidate": {"bs": "1M"},
                        "metric": "throughput",
                        "by": ["storage"],
                    }
                ],
            }
        }
    }
    make_checkout(work, config)
    result = snakemake(work, "--cores", "2", "report")
    assert result.returncode == 0, result.stderr[-3000:]
    yield work
    for p in shm.glob("*"):
        p.rmdir()
    if shm.exists():
        shm.rmdir()


def test_the_post_is_a_bundle_with_every_section_and_resolving_links(run):
    post_dir = run / "reports" / "blocks"
    post = (post_dir / "index.md").read_text()
    notebook = (post_dir / "notebook.md").read_text()
    fm = front_matter(post)
    assert fm["title"] == "Write 8 MiB to memory: block size"
    assert str(fm["date"])
    assert fm["tags"] == ["dd", "test"]
    assert sections(post) == POST_SECTIONS
    assert sections(notebook) == SECTIONS
    assert "](notebook.md)" in post  # the full record, linked from the post
    assert front_matter(notebook)["title"] == "Write 8 MiB to memory: block size: the lab notebook"
    for text in (post, notebook):
        links = image_links(text) + re.findall(r"\]\(([^)#]+\.(?:csv|svg|md))(?:#[^)]*)?\)", text)
        assert "figures/compare-1.png" in links
        for link in links:
            assert not link.startswith(("/", "http")), link  # relative: the bundle moves as one
            assert (post_dir / link).is_file(), link


def test_the_front_matter_is_what_hugo_and_jekyll_read(run):
    fm = front_matter((run / "reports" / "blocks" / "index.md").read_text())
    # A YAML timestamp with its offset: Hugo and Jekyll (Ruby's YAML) both read one, and
    # neither takes it for a future date in a site west of UTC.
    assert isinstance(fm["date"], dt.datetime)
    assert fm["date"].utcoffset() == dt.timedelta(0)
    assert fm["draft"] is False
    assert fm["render_with_liquid"] is False  # commands and logs are not Liquid templates
    # What search results and social previews show: the answer, on one line, plain text;
    # the experiment's own description opens the post instead.
    post = (run / "reports" / "blocks" / "index.md").read_text()
    assert "\n" not in fm["description"]
    assert "`" not in fm["description"]
    assert "1M blocks" in fm["description"]
    assert "4k" in fm["description"]
    assert 'Eight MiB into memory\n  in blocks of 4 KiB or 1 MiB: "quoted".' in post
    # Every fenced block names its language, so a theme's highlighter does not guess one
    # for a log or a version block (PaperMod coloured them as sql, apache, ini).
    opening, fenced = [], False
    notebook = (run / "reports" / "blocks" / "notebook.md").read_text()
    for line in (post + notebook).splitlines():
        if line.startswith("```"):
            if not fenced:
                opening.append(line)
            fenced = not fenced
    assert opening
    assert set(opening) <= {"```sh", "```text"}, set(opening)
    # Hugo looks for a publish date under `published`; a `layout` would override the one
    # the site gives its pages (Jekyll's `defaults`, Hugo's section templates).
    assert not {"published", "layout"} & set(fm)
    # The title is the theme's to show: the body does not repeat it as a heading.
    body = re.sub(
        r"^```.*?^```$",
        "",
        (run / "reports" / "blocks" / "index.md").read_text(),
        flags=re.M | re.S,
    )
    assert not re.search(r"^# ", body, re.M)


def expected_comparison(base, cand):
    """The comparison worked out here, apart from perfpost: scipy's Mann-Whitney p, and the
    Hodges-Lehmann ratio with its 95% interval from every pair of runs and every split of
    the ten runs into two sides of five."""
    pooled = [*base, *cand]
    method = "exact" if len(set(pooled)) == len(pooled) else "asymptotic"
    p = mannwhitneyu(cand, base, method=method).pvalue
    logs = sorted(math.log(c) - math.log(b) for b in base for c in cand)
    null = []
    for picked in itertools.combinations(range(len(pooled)), len(base)):
        null.append(sum(c > b for c in range(len(pooled)) if c not in picked for b in picked))
    k = 0  # the largest k with P(U <= k - 1) <= 2.5%
    while sum(u <= k for u in null) / len(null) <= 0.025:
        k += 1
    low, high = math.expm1(logs[k - 1]), math.expm1(logs[-k])
    return {
        "p": p,
        "change": math.expm1(statistics.median(logs)),
        "low": low,
        "high": high,
        "detectable": -math.expm1(-(logs[-k] - logs[k - 1]) / 2),
        "detectable_up": math.expm1((logs[-k] - logs[k - 1]) / 2),
        "claim": p <= 0.05 and (low > 0 or high < 0),
    }


def test_summary_numbers_equal_those_computed_from_the_table(run):
    post = (run / "reports" / "blocks" / "notebook.md").read_text()
    df = pd.read_csv(run / "results" / "blocks" / "tidy.csv")
    done = df[(df["status"] == "done") & (df["metric"] == "throughput")]
    base = done[(done["bs"] == "4k") & (done["storage"] == "shm")]["value"].tolist()
    cand = done[(done["bs"] == "1M") & (done["storage"] == "shm")]["value"].tolist()
    assert len(base) == len(cand) == 5
    # storage=blocked has no finished run, so the family has one test: p is not adjusted.
    want = expected_comparison(base, cand)
    (line,) = [ln for ln in post.splitlines() if ln.startswith("- 1M blocks vs 4k (storage=shm)")]
    # Both medians, in one unit of the sentence's choosing, to the 3 digits shown.
    prefix = {"": 1, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
    shown = [
        float(n.replace(",", "")) * prefix[p]
        for n, p in re.findall(r"(\d[\d,]*(?:\.\d+)?) ([kMGT]?)B/s", line)
    ]
    for median in (statistics.median(cand), statistics.median(base)):
        assert any(v == pytest.approx(median, rel=5e-3) for v in shown), (median, line)
    assert f"95% CI {want['low']:+.1%} .. {want['high']:+.1%}" in line
    assert "n = 5/5" in line
    assert f"Mann-Whitney p = {want['p']:.2g})" in line
    # The change is not the medians' ratio; the summary says which it is, once.
    summary = post.split("## Summary")[1].split("## ")[0]
    (said,) = [ln for ln in summary.splitlines() if "Hodges-Lehmann" in ln]
    assert "the median of the ratios of every candidate run to every baseline run" in said
    rows = list(csv.DictReader((run / "reports" / "blocks" / "comparisons.csv").open()))
    shm_row = next(x for x in rows if x["group"] == "storage=shm")
    if want["claim"]:
        word = "faster" if want["change"] > 0 else "slower"
        assert f"storage=shm): {abs(want['change']):.1%} {word} in throughput" in line
        assert shm_row["verdict"] == ("better" if want["change"] > 0 else "worse")
    else:
        assert f"no significant difference in throughput ({want['change']:+.1%}," in line
        # A drop and a rise of one half-width on the log scale are different percentages.
        assert f"a drop smaller than about {want['detectable']:.1%} " in line
        assert f"or a rise smaller than about {want['detectable_up']:.1%}." in line
        assert shm_row["verdict"] == "no significant difference"
    assert float(shm_row["change"]) == pytest.approx(want["change"])
    assert float(shm_row["ci_low"]) == pytest.approx(want["low"])
    assert float(shm_row["ci_high"]) == pytest.approx(want["high"])
    assert float(shm_row["p_value"]) == pytest.approx(want["p"])
    assert float(shm_row["p_adjusted"]) == pytest.approx(want["p"])
    assert shm_row["tests"] == "1"


def test_the_failed_cells_are_listed_and_their_comparison_says_why_not(run):
    post = (run / "reports" / "blocks" / "notebook.md").read_text()
    failed = post.split("## Failed cells")[1].split("## ")[0]
    assert failed.count("storage=blocked") == 10  # 2 cells x 5 repeats, each with its reason
    assert "too few runs to say (n = 0/0" in post


def _render(run, tmp_path, tidy_df, comp):
    exp = experiment_dict(
        name="blocks",
        axes={"bs": ["4k", "1M", "again"], "storage": ["shm"]},
        repeats=5,
        compare=[comp],
    )
    cells = pd.read_csv(run / "results" / "blocks" / "cells.csv")
    cells["record"] = [str(run / r) for r in cells["record"]]
    report.render(exp, tidy_df, cells, {}, [], tmp_path / "index.md", tmp_path / "data.csv")
    return (tmp_path / "notebook.md").read_text()


def test_overlapping_runs_are_not_claimed_and_three_a_side_are_refused(run, tmp_path):
    df = tidy.read(run / "results" / "blocks" / "tidy.parquet")
    shm = df[df["storage"] == "shm"]
    # The same real runs again under another label: as overlapping as two sides can be.
    again = shm[shm["bs"] == "1M"].assign(bs="again", cell=lambda d: d["cell"] + "-again")
    text = _render(
        run,
        tmp_path,
        pd.concat([shm, again]),
        {"baseline": {"bs": "1M"}, "candidate": {"bs": "again"}, "metric": "throughput"},
    )
    assert "no significant difference in throughput" in text
    assert "spans zero" in text
    few = shm[shm["repeat"] <= 3]
    text = _render(
        run,
        tmp_path,
        few,
        {"baseline": {"bs": "4k"}, "candidate": {"bs": "1M"}, "metric": "throughput"},
    )
    # 3 runs a side: the smallest two-sided p is 2 / C(6, 3) = 0.1, so no 95% interval exists.
    assert "too few runs to say (n = 3/3: the smallest possible p-value is 0.1, above 0.05)" in text
    assert "faster" not in text.split("## Summary")[1].split("## ")[0]


def test_perfpost_compare_prints_a_benchstat_table_between_two_runs(run, tmp_path):
    df = tidy.read(run / "results" / "blocks" / "tidy.parquet")
    # A "second run" of the same matrix: the 4k cell's real runs slowed by f, at most half
    # their min/max ratio, so every slowed run is below every original one (this machine's
    # dd runs to memory have varied fourfold): p = 2 / C(10, 5) = 0.0079, 0.016 after Holm
    # over the table's two rows, and the median of all the pairwise ratios is exactly f. The
    # claim below cannot depend on the machine's noise. The 1M cell is the same runs on both
    # sides: all ties, p = 1.
    slower = df.copy()
    slow = (slower["bs"] == "4k") & (slower["metric"] == "throughput")
    runs = df.loc[slow & (df["storage"] == "shm") & (df["status"] == "done"), "value"]
    assert runs.nunique() == 5  # no ties: the exact p above
    f = 0.5 * runs.min() / runs.max()
    slower.loc[slow, "value"] = slower.loc[slow, "value"] * f
    base, cand = tmp_path / "before.csv", tmp_path / "after.csv"
    df.to_csv(base, index=False)
    slower.to_csv(cand, index=False)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "perfpost",
            "compare",
            str(base),
            str(cand),
            "--metric",
            "throughput",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    lines = [ln for ln in result.stdout.splitlines() if ln.startswith("| blocks")]
    by_cell = {re.search(r"`([^`]+)`", ln).group(1): ln for ln in lines}
    slow_line = by_cell["bs=4k,count=2048,storage=shm"]
    same_line = by_cell["bs=1M,count=8,storage=shm"]
    assert f"| {f - 1:+.1%} |" in slow_line
    assert "| 0.0079 | 0.016 |" in slow_line  # p, and Holm's 2 x p
    assert "| ~ |" in same_line
    assert "before.csv" in result.stdout.splitlines()[0]


def test_perfpost_compare_warns_of_exactly_the_environment_fact_that_changed(run, tmp_path):
    # A second run of the matrix whose one difference is the host's vm.dirty_ratio: the
    # first run's results tree, copied, with that sysctl edited in its env JSON.
    before = run / "results" / "blocks"
    after = tmp_path / "after" / "results" / "blocks"
    after.mkdir(parents=True)
    for name in ("tidy.csv", "cells.csv", "env"):
        copy = shutil.copytree if (before / name).is_dir() else shutil.copy
        copy(before / name, after / name)
    env_json = after / "env" / "localhost.json"
    env = json.loads(env_json.read_text())
    old = Path("/proc/sys/vm/dirty_ratio").read_text().strip()  # what the capture read
    new = str(int(old) + 7)
    env["sysctl"]["vm.dirty_ratio"] = new
    env_json.write_text(json.dumps(env))

    def compare(*extra):
        return subprocess.run(
            [sys.executable, "-m", "perfpost", "compare", *map(str, extra)],
            capture_output=True,
            text=True,
            timeout=120,
        )

    result = compare(before / "tidy.csv", after / "tidy.csv", "--metric", "throughput")
    assert result.returncode == 0, result.stderr
    (warning,) = [ln for ln in result.stdout.splitlines() if ln.startswith("Warning:")]
    assert warning in result.stderr.splitlines()
    assert (
        f"1 fact of the environment changed: `vm.dirty_ratio` on localhost ({old} -> {new})."
        in warning
    )
    assert warning.count("`") == 2  # that fact alone
    assert f"- localhost:\n  - `vm.dirty_ratio`: {old} -> {new}\n" in result.stdout
    # Two tables named tidy.csv: the columns are named by where their paths part.
    header = [c.strip() for c in result.stdout.splitlines()[0].split("|")]
    assert header[4:6] == [before.parents[1].name, tmp_path.name]

    named = compare(before / "tidy.csv", after / "tidy.csv", "--changed", "vm.dirty_ratio")
    assert named.returncode == 0, named.stderr
    assert "Warning" not in named.stdout + named.stderr
    assert f"`vm.dirty_ratio`: {old} -> {new} (named by --changed)" in named.stdout

    same = compare(before / "tidy.csv", before / "tidy.csv")
    assert "Warning" not in same.stdout + same.stderr
    assert f"({before}): no difference in the environment (host localhost).\n" in same.stdout


def test_a_missing_table_is_a_clear_error(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "perfpost", "compare", str(tmp_path / "a.csv"), "b.csv"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "a.csv" in result.stderr


def test_the_html_report_shows_figures_and_tables_in_headless_chromium(run):
    result = snakemake(run, "--report", "report.html")
    assert result.returncode == 0, result.stderr[-3000:]
    html = (run / "report.html").read_text(errors="replace")
    assert "tidy table of experiment" in html  # a caption, rendered per experiment
    # Snakemake 9 keeps every result in the page, in a script: `var results = {<path>:
    # {..., "mime_type": ..., "data_uri": "data:<type>;...;base64,<the file>"}}`.
    found = re.search(r'<script id="results">\s*var results = (.*?);\s*</script>', html, re.S)
    assert found, "the report has no results script"
    results = json.loads(found.group(1))

    def embedded(rel: str) -> bytes:
        return base64.b64decode(results[rel]["data_uri"].split(";base64,", 1)[1])

    # Each figure perfpost drew, byte for byte: the throughput and the comparison. No
    # resources figure: 8 MiB into memory takes milliseconds, under two 1-s samples, so the
    # samples cannot show what the step did (the post's Resources section says so).
    pngs = sorted((run / "reports" / "blocks" / "figures").glob("*.png"))
    assert [p.name for p in pngs] == ["compare-1.png", "throughput.png"]
    post = (run / "reports" / "blocks" / "notebook.md").read_text()
    assert "every cell's measured step was shorter than two sampling intervals" in post
    for png in pngs:
        rel = str(png.relative_to(run))
        assert results[rel]["mime_type"] == "image/png"
        assert embedded(rel) == png.read_bytes(), rel
    # The post as its reader reads it, with its notebook under it, one page that stands
    # alone: its figures inlined, byte for byte.
    page = results["results/blocks/post.html"]
    assert page["mime_type"] == "text/html"
    text = embedded("results/blocks/post.html").decode()
    assert "<h1>Write 8 MiB to memory: block size</h1>" in text
    assert 'id="notebook">Write 8 MiB to memory: block size: the lab notebook</h1>' in text
    assert 'href="#notebook"' in text
    inlined = re.findall(r'src="data:image/png;base64,([^"]+)"', text)
    assert {base64.b64decode(x) for x in inlined} == {p.read_bytes() for p in pngs}
    # Each table, row for row. The config makes 2 x 2 cells of 5 repeats (20 runs), and
    # its one comparison has a group per storage (2).
    for rel, n_rows in (
        ("results/blocks/cells.csv", 20),
        ("reports/blocks/comparisons.csv", 2),
        ("results/blocks/tidy.csv", None),
    ):
        rows = list(csv.reader(io.StringIO(embedded(rel).decode())))
        assert rows == list(csv.reader((run / rel).open())), rel
        if n_rows is not None:
            assert len(rows) == 1 + n_rows, rel
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    assert chromium, "chromium is missing: scripts/setup --test installs it"
    import matplotlib.image

    def screenshot(budget_ms: int):
        shot = run / f"report-{budget_ms}.png"
        browser = subprocess.run(
            [
                chromium,
                "--headless",
                "--no-sandbox",  # root in a container has no user namespace sandbox
                "--disable-gpu",
                "--hide-scrollbars",
                "--window-size=1280,900",
                # Let the report's scripts draw before the shot.
                f"--virtual-time-budget={budget_ms}",
                f"--screenshot={shot}",
                (run / "report.html").as_uri(),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert shot.is_file(), browser.stderr[-2000:]
        pixels = matplotlib.image.imread(shot)[:, :, :3]
        return pixels, (pixels > 0.97).all(axis=2)

    # Headless Chromium sometimes shoots before the report's scripts have drawn (seen once
    # in a full run: a blank page); a page that never draws stays blank with more time.
    for budget_ms in (8000, 20000, 40000):
        pixels, background = screenshot(budget_ms)
        if background.mean() < 0.9:
            break
    assert pixels.shape[:2] == (900, 1280)
    # Not blank: a good share of the page is not background, and it has many colours.
    assert background.mean() < 0.9
    colours = {tuple(p) for p in (pixels[::7, ::7] * 255).astype(int).reshape(-1, 3)}
    assert len(colours) > 50


# A Hugo site as small as one can be: no theme, Goldmark's defaults (tables on, raw HTML off:
# the post has none). Its page template marks every image with its natural width once the
# page has loaded (0 for one the browser could not load); Chromium's --dump-dom reads it back.
HUGO_CONFIG = """baseURL = "http://127.0.0.1/"
title = "perfpost publish test"
disableKinds = ["taxonomy", "term", "RSS", "sitemap"]
"""
# Its page is a column of 700 px whose tables scroll sideways where they are wider, as
# PaperMod's do (PaperMod itself cannot be fetched here). The page template marks every
# image with its natural width once the page has loaded (0 for one the browser could not
# load), and every table with the key columns out of view: its first, and a comparison's
# change, interval, verdict and p. Chromium's --dump-dom reads them back.
HUGO_SINGLE = """<!doctype html>
<html><head><meta charset="utf-8"><title>{{ .Title }}</title>
<style>
main { max-width: 700px; margin: 0 auto; font: 16px/1.6 sans-serif; }
table { display: block; overflow-x: auto; border-collapse: collapse; }
th, td { padding: 4px 8px; border: 1px solid #ccc; }
</style></head>
<body><main><h1>{{ .Title }}</h1>
{{ .Content }}
</main>
<script>
window.addEventListener("load", () => {
  for (const img of document.images) img.setAttribute("data-natural-width", img.naturalWidth);
  const keys = ["change", "95% CI", "verdict", "p (Holm)"];
  for (const t of document.querySelectorAll("table")) {
    const column = t.closest("main, .wrapper") || document.body;
    const limit = Math.min(t.getBoundingClientRect().right, column.getBoundingClientRect().right);
    const hidden = [];
    t.querySelectorAll("tr:first-child th").forEach((th, j) => {
      const name = th.textContent.trim();
      if ((j === 0 || keys.includes(name)) && th.getBoundingClientRect().right > limit + 1) {
        hidden.push(name);
      }
    });
    t.setAttribute("data-hidden", hidden.join("|"));
  }
  document.body.setAttribute("data-checked", "yes");
});
</script>
</body></html>
"""
HUGO_LIST = """<!doctype html>
<html><body>{{ range .Pages }}<a href="{{ .RelPermalink }}">{{ .Title }}</a>{{ end }}</body></html>
"""


def markdown_table_rows(markdown: str) -> list[int]:
    """Rows of each table in the markdown (the header's too, not the --- line), counted here
    apart from any renderer: runs of lines starting with |, outside fenced code."""
    counts, run_ = [], 0
    fenced = False
    for line in [*markdown.splitlines(), ""]:
        if line.startswith("```"):
            fenced = not fenced
        if line.startswith("|") and not fenced:
            run_ += 1
        elif run_:
            counts.append(run_ - 1)
            run_ = 0
    return counts


class PageParts(HTMLParser):
    """The images (with their attributes) and each table's number of rows in a DOM."""

    def __init__(self) -> None:
        super().__init__()
        self.images: list[dict] = []
        self.tables: list[int] = []
        self.hidden: list[str] = []
        self.checked = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "img":
            self.images.append(attrs)
        elif tag == "table":
            self.tables.append(0)
            self.hidden.append(attrs.get("data-hidden") or "")
        elif tag == "tr":
            self.tables[-1] += 1
        elif tag == "body":
            self.checked = attrs.get("data-checked") == "yes"


def page_problems(dom: str, markdown: str) -> list[str]:
    """What the rendered page lacks of its markdown: an image that is not there or did not
    load, a table with other rows."""
    page = PageParts()
    page.feed(dom)
    if not page.checked:
        return ["the page's load script did not run"]
    problems = []
    links = image_links(markdown)
    if len(page.images) != len(links):
        problems.append(f"{len(page.images)} images on the page, {len(links)} in the markdown")
    shown = {img.get("src"): img for img in page.images}
    for link in links:
        img = shown.get(link)
        if img is None:
            problems.append(f"{link}: no <img>")
        elif int(img.get("data-natural-width", "0")) <= 0:
            problems.append(f"{link}: did not load")
    if page.tables != markdown_table_rows(markdown):
        problems.append(
            f"table rows {page.tables}, {markdown_table_rows(markdown)} in the markdown"
        )
    for i, hidden in enumerate(page.hidden):
        if hidden:
            problems.append(f"table {i + 1}: {hidden.replace('|', ', ')} out of view")
    return problems


@contextmanager
def serving(root: Path):
    """A static HTTP server for ``root`` on a loopback port, stopped on the way out."""

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(Quiet, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def dump_dom(url: str, profile: Path) -> str:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    assert chromium, "chromium is missing: scripts/setup --test installs it"
    browser = subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",  # root in a container has no user namespace sandbox
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            "--virtual-time-budget=5000",  # the load event, then the dump
            "--dump-dom",
            url,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert browser.returncode == 0, browser.stderr[-2000:]
    return browser.stdout


def test_a_published_post_builds_in_hugo_and_shows_every_figure_and_table(
    run, tmp_path, monkeypatch, capsys
):
    hugo = shutil.which("hugo")
    assert hugo, "hugo is missing: scripts/setup --test installs it"
    site = tmp_path / "site"
    (site / "content").mkdir(parents=True)
    (site / "layouts" / "_default").mkdir(parents=True)
    (site / "hugo.toml").write_text(HUGO_CONFIG)
    (site / "layouts" / "_default" / "single.html").write_text(HUGO_SINGLE)
    (site / "layouts" / "_default" / "list.html").write_text(HUGO_LIST)
    perfpost = [sys.executable, "-m", "perfpost", "publish", "--site", str(site)]
    published = subprocess.run(perfpost, cwd=run, capture_output=True, text=True, timeout=120)
    assert published.returncode == 0, published.stderr
    assert published.stdout == f"blocks -> {site / 'content' / 'posts' / 'blocks'} (new)\n"
    post = (run / "reports" / "blocks" / "index.md").read_text()

    # The same post with a figure that is not there: publish refuses it, and a copy put in
    # the site by hand is what the page check below must catch.
    other = tmp_path / "other"
    shutil.copytree(run / "reports" / "blocks", other / "reports" / "broken")
    broken = post + "\n![A figure that was never drawn](figures/missing.png)\n"
    (other / "reports" / "broken" / "index.md").write_text(broken)
    monkeypatch.chdir(other)
    assert main(["publish", "--site", str(site)]) == 2
    assert "figures/missing.png" in capsys.readouterr().err
    shutil.copytree(other / "reports" / "broken", site / "content" / "posts" / "broken")

    built = subprocess.run(
        [hugo, "--source", str(site), "--destination", str(tmp_path / "public"), "--quiet"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    assert "WARN" not in built.stdout + built.stderr, built.stdout + built.stderr
    notebook = (run / "reports" / "blocks" / "notebook.md").read_text()
    with serving(tmp_path / "public") as base:
        good = dump_dom(f"{base}/posts/blocks/", tmp_path / "profile-1")
        bad = dump_dom(f"{base}/posts/broken/", tmp_path / "profile-2")
        # The notebook beside it, at the address the post links: a page of its own.
        beside = dump_dom(f"{base}/posts/blocks/notebook/", tmp_path / "profile-3")
    # The post: two figures (throughput, the comparison) and one table, the results.
    assert len(image_links(post)) == 2
    assert len(markdown_table_rows(post)) == 1 + post.count("*The same rows, continued: ")
    assert page_problems(good, post) == []
    assert page_problems(bad, broken) == ["figures/missing.png: did not load"]
    assert 'href="notebook/"' in good
    # The notebook: its figures loaded one folder up, every table with its rows (results,
    # comparisons, resources, failed cells; some continued to fit the column).
    continued = notebook.count("*The same rows, continued: ")
    assert continued >= 2  # the results and the comparisons, wider than 700 px in one table
    assert len(markdown_table_rows(notebook)) == 4 + continued
    nb_links = [f"../{link}" for link in image_links(notebook)]
    assert page_problems(beside, notebook.replace("](figures/", "](../figures/")) == []
    assert nb_links
    # Listed nowhere: the section's list has the posts, not the notebook.
    listed = (tmp_path / "public" / "posts" / "index.html").read_text()
    assert "/posts/blocks/" in listed
    assert "notebook" not in listed


# A Jekyll site as `jekyll new` makes one, with Debian's Jekyll 4.3 and its minima theme and
# feed plugin: a home page that lists the posts, an About page in the header's menu. The
# footer is minima's own with the load script above added, so the page says which of its
# images loaded.
JEKYLL_CONFIG = """title: perfpost publish test
description: Storage benchmarks.
url: "http://127.0.0.1"
baseurl: ""
theme: minima
plugins:
  - jekyll-feed
"""
MINIMA_FOOTER = Path("/usr/share/rubygems-integration/all/gems")
LOAD_SCRIPT = HUGO_SINGLE.split("<script>", 1)[1].split("</script>", 1)[0]


def test_a_published_post_is_a_post_of_a_minima_site_listed_in_its_feed(
    run, tmp_path, monkeypatch, capsys
):
    jekyll = shutil.which("jekyll")
    assert jekyll, "jekyll is missing: scripts/setup --test installs it (and minima, jekyll-feed)"
    site = tmp_path / "jekyll"
    (site / "_includes").mkdir(parents=True)
    (site / "_config.yml").write_text(JEKYLL_CONFIG)
    (site / "index.md").write_text("---\nlayout: home\n---\n")
    (site / "about.md").write_text(
        "---\nlayout: page\ntitle: About\npermalink: /about/\n---\nHi.\n"
    )
    (footer,) = MINIMA_FOOTER.glob("minima-*/_includes/footer.html")
    (site / "_includes" / "footer.html").write_text(
        footer.read_text() + f"<script>{LOAD_SCRIPT}</script>\n"
    )
    monkeypatch.chdir(run)
    assert main(["publish", "--site", str(site)]) == 0
    out = capsys.readouterr().out
    (post_file,) = (site / "_posts").glob("*-blocks.md")
    assert out == f"blocks -> {post_file} (new)\n"
    made = front_matter((run / "reports" / "blocks" / "index.md").read_text())
    assert post_file.name == f"{made['date']:%Y-%m-%d}-blocks.md"
    post = post_file.read_text()
    built = subprocess.run(
        [jekyll, "build", "--source", str(site), "--destination", str(tmp_path / "_site")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    home = (tmp_path / "_site" / "index.html").read_text()
    title = html.escape(made["title"], quote=False)
    # Listed on the home page as a post, at its address; the header's menu has About alone.
    assert 'href="/posts/blocks/"' in home
    assert title in home.split('class="post-list"', 1)[1]
    menu = home.split('class="trigger"', 1)[1].split("</div>", 1)[0]
    assert "About" in menu
    assert title not in menu
    # In the feed, its figures at addresses a feed reader resolves.
    feed = (tmp_path / "_site" / "feed.xml").read_text()
    assert made["title"] in html.unescape(feed)
    assert "/posts/blocks/figures/" in html.unescape(feed)
    assert 'src="figures/' not in html.unescape(feed)
    # Readable by a web server running as another user: the data and the page.
    for rel in ("posts/blocks/data.csv", "posts/blocks/comparisons.csv", "posts/blocks/index.html"):
        assert (tmp_path / "_site" / rel).stat().st_mode & 0o004, rel
    with serving(tmp_path / "_site") as base:
        dom = dump_dom(f"{base}/posts/blocks/", tmp_path / "profile")
        beside = dump_dom(f"{base}/posts/blocks/notebook/", tmp_path / "profile-2")
    assert page_problems(dom, post) == []
    # The notebook: a page at the address the post links, not in the header's menu nor on
    # the home page, its figures and tables whole.
    assert 'href="/posts/blocks/notebook/"' in dom
    assert "notebook" not in menu
    assert "notebook" not in home.split('class="post-list"', 1)[1]
    notebook = (site / "posts" / "blocks" / "notebook.md").read_text()
    assert page_problems(beside, notebook) == []
