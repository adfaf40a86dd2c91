"""The post and its notebook as one self-contained HTML page, for Snakemake's report
(``snakemake --report``): the post, then the notebook under it, their figures inlined as
data URIs, so the report holds what a reader of the blog reads, not only its parts, and a
pure-HTML report can carry it (it refuses folders)."""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path

import markdown

from perfpost.records import write_text_atomic

STYLE = """
body { font-family: system-ui, sans-serif; max-width: 46rem; margin: 2rem auto; padding: 0 1rem;
       line-height: 1.5; color: #222; }
img { max-width: 100%; }
table { border-collapse: collapse; margin: 1rem 0; font-size: 0.9rem; }
th, td { border: 1px solid #ccc; padding: 0.2rem 0.5rem; text-align: left; }
pre { background: #f6f6f6; padding: 0.6rem; overflow-x: auto; font-size: 0.85rem; }
code { font-size: 0.9em; }
hr { margin: 3rem 0; }
"""
_FRONT = re.compile(r"\A---\n(.*?)\n---\n", re.S)
_TITLE = re.compile(r'^title:\s*"(.*)"\s*$', re.M)
_IMG = re.compile(r'(<img [^>]*src=")(figures/[^"]+\.png)(")')
NOTEBOOK_ANCHOR = "notebook"


def _body(text: str) -> tuple[str, str]:
    """A markdown page's title (front matter) and its HTML body."""
    m = _FRONT.match(text)
    title = ""
    if m:
        t = _TITLE.search(m.group(1))
        title = t.group(1).replace('\\"', '"') if t else ""
        text = text[m.end() :]
    # The notebook is on this page, under the post: its links become anchors.
    text = re.sub(
        r"\]\(notebook\.md(#[^)]*)?\)", lambda x: f"]({x.group(1) or '#' + NOTEBOOK_ANCHOR})", text
    )
    text = re.sub(r"\]\(index\.md(#[^)]*)?\)", "](#)", text)
    return title, markdown.markdown(text, extensions=["tables", "fenced_code"])


def _inline(body: str, folder: Path) -> str:
    """Each figure the page shows as a data URI: the page stands alone."""

    def one(m: re.Match[str]) -> str:
        path = folder / m.group(2)
        if not path.is_file():
            return m.group(0)
        data = base64.b64encode(path.read_bytes()).decode()
        return f"{m.group(1)}data:image/png;base64,{data}{m.group(3)}"

    return _IMG.sub(one, body)


def page(post_dir: Path) -> str:
    """The post of ``post_dir`` and its notebook as one HTML page."""
    title, body = _body((post_dir / "index.md").read_text())
    parts = [f"<h1>{html.escape(title)}</h1>", body]
    notebook = post_dir / "notebook.md"
    if notebook.is_file():
        nb_title, nb_body = _body(notebook.read_text())
        parts += [f'<hr><h1 id="{NOTEBOOK_ANCHOR}">{html.escape(nb_title)}</h1>', nb_body]
    return (
        "<!DOCTYPE html>\n<html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>{STYLE}</style></head>\n<body>\n"
        + _inline("\n".join(parts), post_dir)
        + "\n</body></html>\n"
    )


def write(post_dir: Path, out: Path) -> Path:
    """The page (:func:`page`) of the post in ``post_dir``, to ``out``."""
    out.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out, page(post_dir))
    return out
