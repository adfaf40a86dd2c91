"""The post and its notebook as HTML pages, for Snakemake's report (``snakemake --report``):
a folder with ``index.html`` (the post), ``notebook.html`` and the figures they show, so
the report holds what a reader of the blog would read, not only its parts."""

from __future__ import annotations

import html
import re
import shutil
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
"""
_FRONT = re.compile(r"\A---\n(.*?)\n---\n", re.S)
_TITLE = re.compile(r'^title:\s*"(.*)"\s*$', re.M)
PAGES = {"index.md": "index.html", "notebook.md": "notebook.html"}


def page(text: str) -> str:
    """One markdown page (front matter and all) as a whole HTML page."""
    m = _FRONT.match(text)
    title = ""
    if m:
        t = _TITLE.search(m.group(1))
        title = t.group(1).replace('\\"', '"') if t else ""
        text = text[m.end() :]
    for md, target in PAGES.items():
        text = re.sub(rf"\]\({re.escape(md)}(#[^)]*)?\)", rf"]({target}\1)", text)
    body = markdown.markdown(text, extensions=["tables", "fenced_code"])
    head = f"<h1>{html.escape(title)}</h1>\n" if title else ""
    return (
        "<!DOCTYPE html>\n<html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>{STYLE}</style></head>\n"
        f"<body>\n{head}{body}\n</body></html>\n"
    )


def write(post_dir: Path, out: Path) -> list[Path]:
    """The post folder ``post_dir``'s pages and figures as HTML into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    made = []
    for md, target in PAGES.items():
        src = post_dir / md
        if src.is_file():
            write_text_atomic(out / target, page(src.read_text()))
            made.append(out / target)
    figures = post_dir / "figures"
    if figures.is_dir():
        dest = out / "figures"
        dest.mkdir(exist_ok=True)
        for f in figures.glob("*.png"):
            shutil.copyfile(f, dest / f.name)
    return made
