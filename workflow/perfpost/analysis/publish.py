"""Posts into a static site: each ``reports/<experiment>/`` folder copied as it is.

A post's folder is already a page with its files beside it (``index.md`` links its figures
and tables relatively), so publishing is a copy to where the generator keeps such pages:

- Hugo: ``content/<section>/<experiment>/``, a leaf page bundle. Hugo publishes a bundle's
  files beside the page (``build.publishResources`` is true by default), so the relative links
  resolve at ``/<section>/<experiment>/``.
- Jekyll: a post, ``_posts/<date>-<experiment>.md``, so that it is listed and in the feed as
  the site's other posts are, with ``permalink: /<section>/<experiment>/``; its figures and
  data go to ``<section>/<experiment>/`` (Jekyll copies nothing from ``_posts/`` but the
  post), static files at the post's own address. Its links to them are made root-relative
  (the site's ``baseurl``, the section, the experiment), which a feed's full text keeps
  working, where a relative link would resolve against the feed's address.

perfpost never writes over a page that differs from the post unless told to (``replace``):
the copy in the site may have been edited there.
"""

from __future__ import annotations

import filecmp
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from perfpost import paths
from perfpost.errors import PerfpostError

HUGO_CONFIGS = (
    "hugo.toml",
    "hugo.yaml",
    "hugo.yml",
    "hugo.json",
    "config.toml",
    "config.yaml",
    "config.yml",
    "config.json",
)
JEKYLL_CONFIGS = ("_config.yml", "_config.yaml", "_config.toml")
# Jekyll leaves out of the site what starts with these (and what _config.yml excludes).
JEKYLL_HIDDEN = (".", "_", "#", "~")

_FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.M | re.S)
_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_EXTERNAL = re.compile(r"^(?:[a-zA-Z][a-zA-Z0-9+.-]*:|#|//)")


@dataclass(frozen=True)
class Site:
    """A site perfpost can publish into: which generator, and the file that says so."""

    kind: str  # "hugo" or "jekyll"
    root: Path
    config: Path

    def folder(self, section: str) -> Path:
        """Where a section's pages live."""
        return self.root / "content" / section if self.kind == "hugo" else self.root / section


@dataclass(frozen=True)
class Published:
    """One post's outcome: ``new``, ``unchanged`` (the same files were there) or ``replaced``."""

    experiment: str
    dest: Path
    outcome: str


def detect(root: Path) -> Site:
    """The site at ``root``: Hugo (a hugo/config file and ``content/``) or Jekyll
    (``_config.yml``); anything else is an error that says what was looked for."""
    if not root.is_dir():
        raise PerfpostError(f"{root}: no such directory (the site's root, made by its generator)")
    hugo = [root / n for n in HUGO_CONFIGS if (root / n).is_file()]
    if (root / "config" / "_default").is_dir():
        hugo.append(root / "config" / "_default")
    jekyll = [root / n for n in JEKYLL_CONFIGS if (root / n).is_file()]
    if hugo and jekyll:
        raise PerfpostError(
            f"{root}: both a Hugo site ({hugo[0].name}) and a Jekyll site ({jekyll[0].name}); "
            "publish into one of them"
        )
    if jekyll:
        return Site("jekyll", root, jekyll[0])
    if hugo:
        if not (root / "content").is_dir():
            raise PerfpostError(
                f"{root}: a Hugo site ({hugo[0].name}) without a content/ folder; perfpost "
                "publishes into content/<section>/ (create it, or set no other contentDir)"
            )
        return Site("hugo", root, hugo[0])
    raise PerfpostError(
        f"{root}: not a Hugo or Jekyll site: no {', '.join(HUGO_CONFIGS)} with content/, "
        f"and no {', '.join(JEKYLL_CONFIGS)}"
    )


def check_section(section: str, site: Site) -> None:
    """A section is a relative folder inside the site, one the generator renders."""
    parts = Path(section).parts
    if not section or Path(section).is_absolute() or any(p in ("..", ".") for p in parts):
        raise PerfpostError(
            f"--section {section!r}: a folder inside the site, such as posts or blog/perf"
        )
    hidden = [p for p in parts if p.startswith(JEKYLL_HIDDEN)]
    if site.kind == "jekyll" and hidden:
        raise PerfpostError(
            f"--section {section!r}: Jekyll does not write folders whose names start with "
            f"{' '.join(JEKYLL_HIDDEN)} ({hidden[0]}) into the site"
        )


def local_links(markdown: str) -> list[str]:
    """The targets of the post's links and images that are files (not URLs or anchors),
    outside code blocks and code spans."""
    text = _CODE.sub("", _FENCE.sub("", markdown))
    return [t for t in _LINK.findall(text) if not _EXTERNAL.match(t)]


def check_post(folder: Path, site: Site) -> None:
    """Every file the post links is in its folder, by a relative path the site will serve."""
    index = folder / "index.md"
    text = index.read_text()
    if not text.startswith("---\n"):
        raise PerfpostError(f"{index}: no YAML front matter (a first line ---)")
    try:
        meta = yaml.safe_load(text.split("---\n", 2)[1])
    except yaml.YAMLError as e:
        raise PerfpostError(f"{index}: the front matter is not YAML: {e}") from None
    if not isinstance(meta, dict) or not meta.get("title"):
        raise PerfpostError(f"{index}: the front matter has no title")
    links = local_links(text)
    if (folder / NOTEBOOK).is_file():
        links += local_links((folder / NOTEBOOK).read_text())
    for link in links:
        target = link.split("#", 1)[0]
        rel = Path(target)
        if rel.is_absolute() or ".." in rel.parts:
            raise PerfpostError(
                f"{index}: link {link!r} leaves the post's folder; links must be relative to it"
            )
        if not (folder / rel).is_file():
            raise PerfpostError(f"{index}: link {link!r}: no such file {folder / rel}")
        hidden = [p for p in rel.parts if p.startswith(JEKYLL_HIDDEN)]
        if site.kind == "jekyll" and hidden:
            raise PerfpostError(
                f"{index}: link {link!r}: Jekyll leaves {hidden[0]} out of the site "
                f"(names starting with {' '.join(JEKYLL_HIDDEN)})"
            )


def _hidden(name: str) -> bool:
    """Names starting with a dot are bookkeeping (Snakemake's ``.snakemake_timestamp`` in
    ``figures/``), not the post: never copied nor compared."""
    return name.startswith(".")


def _files(root: Path) -> dict[str, Path]:
    return {
        str(p.relative_to(root)): p
        for p in sorted(root.rglob("*"))
        if not p.is_dir() and not any(_hidden(part) for part in p.relative_to(root).parts)
    }


def difference(src: Path, dest: Path) -> str | None:
    """How ``dest`` differs from ``src`` (the first file that does), or None when it holds
    the same files with the same bytes."""
    if not dest.is_dir():
        return "not a folder"
    ours, theirs = _files(src), _files(dest)
    for rel in sorted(set(ours) | set(theirs)):
        if rel not in theirs:
            return f"no {rel}"
        if rel not in ours:
            return f"{rel} is not in the post"
        if not filecmp.cmp(ours[rel], theirs[rel], shallow=False):
            return f"{rel} differs"
    return None


def posts(reports: Path, experiments: list[str]) -> list[str]:
    """The experiments to publish: those named, each with a post, or every post there is."""
    if not reports.is_dir():
        raise PerfpostError(
            f"{reports}: no such folder; run perfpost publish where `snakemake --cores 6 report` "
            "ran, after it"
        )
    if not experiments:
        found = sorted(p.parent.name for p in reports.glob("*/index.md"))
        if not found:
            raise PerfpostError(f"{reports}: no posts (<experiment>/index.md) to publish")
        return found
    pattern = re.compile(paths.WILDCARDS["experiment"] + "$")
    for exp in experiments:
        if not pattern.match(exp):
            raise PerfpostError(f"{exp!r}: not an experiment's name")
        if not (reports / exp / "index.md").is_file():
            raise PerfpostError(f"{reports / exp / 'index.md'}: no such post")
    return list(dict.fromkeys(experiments))


def _copy_in(src: Path, dest: Path) -> None:
    """Copy ``src`` to ``dest`` through a hidden folder beside it (neither generator reads
    names starting with a dot), so a failed copy never leaves half a page in the site."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.perfpost-", dir=dest.parent))
    try:
        shutil.copytree(src, tmp / "new", ignore=lambda _, names: [n for n in names if _hidden(n)])
        if dest.exists() or dest.is_symlink():
            dest.rename(tmp / "old")
        (tmp / "new").rename(dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _outcome(why: str | None, replace: bool) -> str | None:
    """What publishing does where the site has the post already: nothing (the same), replace
    it (asked to), or None: refuse, naming ``why`` it differs."""
    if why is None:
        return "unchanged"
    return "replaced" if replace else None


_DATE = re.compile(r"^(\d{4}-\d{2}-\d{2})")


def _jekyll_config(site: Site) -> dict[str, Any]:
    if site.config.suffix not in (".yml", ".yaml"):
        return {}
    try:
        config = yaml.safe_load(site.config.read_text()) or {}
    except (OSError, yaml.YAMLError):
        return {}
    return config if isinstance(config, dict) else {}


def _post_has_layout(config: dict[str, Any]) -> bool:
    """Whether the site's ``defaults`` give posts a layout."""
    for entry in config.get("defaults") or []:
        if not isinstance(entry, dict):
            continue
        scope, values = entry.get("scope") or {}, entry.get("values") or {}
        if scope.get("type") == "posts" and not scope.get("path") and values.get("layout"):
            return True
    return False


NOTEBOOK = "notebook.md"


def _rewrite_links(markdown: str, prefix: str, pages: dict[str, str] | None = None) -> str:
    """Local links and images pointed at ``prefix`` + their target, outside code; a link to
    one of ``pages`` (a markdown file the site renders as a page: ``notebook.md``) at that
    page's address instead, its anchor kept."""

    def one(m: re.Match[str]) -> str:
        target = m.group(1)
        if _EXTERNAL.match(target):
            return m.group(0)
        path, hash_, anchor = target.partition("#")
        if pages and path in pages:
            return m.group(0).replace(target, pages[path] + hash_ + anchor, 1)
        return m.group(0).replace(target, prefix + target, 1)

    out, last = [], 0
    for fence in _FENCE.finditer(markdown):
        out.append(_LINK.sub(one, markdown[last : fence.start()]))
        out.append(fence.group(0))
        last = fence.end()
    out.append(_LINK.sub(one, markdown[last:]))
    return "".join(out)


def _split(text: str) -> tuple[dict[str, Any], str, str]:
    """A page's front matter (parsed and as text) and its body."""
    head, body = text.split("---\n", 2)[1:]
    return yaml.safe_load(head) or {}, head, body


def hugo_notebook(text: str, url: str) -> str:
    """The notebook as a Hugo page of its own at ``url`` (``/<section>/<experiment>/notebook/``,
    beside its post), listed nowhere (``_build: list: never``: not on the home page, in no
    feed), its links pointing at the post's files one folder up."""
    _, head, body = _split(text)
    extra = f"url: {url}\n_build:\n  list: never\n"
    return f"---\n{head}{extra}---\n" + _rewrite_links(body, "../", {"index.md": "../"})


def hugo_post(text: str) -> str:
    """The post as its Hugo bundle holds it: its notebook link at the notebook's address."""
    _, head, body = _split(text)
    return f"---\n{head}---\n" + _rewrite_links(body, "", {NOTEBOOK: "notebook/"})


def jekyll_notebook(text: str, url: str, baseurl: str) -> str:
    """The notebook as a Jekyll page at ``url`` + ``notebook/``: no ``title`` in its front
    matter (minima lists every titled page in its header), its title as its first heading
    instead; root-relative links to the post's files."""
    meta, _, body = _split(text)
    title = str(meta.get("title") or "")
    keep = {k: v for k, v in meta.items() if k != "title"}
    keep["permalink"] = f"{url}notebook/"
    keep.setdefault("layout", "page")
    head = yaml.safe_dump(keep, sort_keys=False, allow_unicode=True)
    body = _rewrite_links(body, baseurl + url, {"index.md": baseurl + url})
    return f"---\n{head}---\n\n# {title}\n" + body


def jekyll_post(text: str, index: Path, url: str, baseurl: str, layout: bool) -> tuple[str, str]:
    """The post as Jekyll's ``_posts/`` wants it: its file name (the day of its ``date``,
    then the experiment) and its text, with the address its files are at and, where the
    site gives posts none, minima's ``post`` layout."""
    head, body = text.split("---\n", 2)[1:]
    meta = yaml.safe_load(head) or {}
    day = _DATE.match(str(meta.get("date") or ""))
    if not day:
        raise PerfpostError(f"{index}: the front matter has no date (YYYY-MM-DD...)")
    extra = f"permalink: {url}\n"
    if layout and "layout" not in meta:
        extra += "layout: post\n"
    pages = {NOTEBOOK: f"{baseurl}{url}notebook/"}
    return day.group(1), f"---\n{head}{extra}---\n" + _rewrite_links(body, baseurl + url, pages)


def _jekyll_existing(site: Site, exp: str) -> list[Path]:
    return sorted(
        (site.root / "_posts").glob(f"[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]-{exp}.md")
    )


def _write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.perfpost-tmp"
    tmp.write_text(text)
    tmp.rename(path)


def _publish_jekyll(
    site: Site, section: str, chosen: list[str], replace: bool, reports: Path
) -> list[Published]:
    """Each post into ``_posts/``, its files into ``<section>/<experiment>/``: every post
    checked and compared before anything is written."""
    config = _jekyll_config(site)
    baseurl = str(config.get("baseurl") or "").rstrip("/")
    layout = not _post_has_layout(config)
    staging = Path(tempfile.mkdtemp(prefix="perfpost-publish-"))
    try:
        plan, refused = [], []
        for exp in chosen:
            src = reports / exp
            index = src / "index.md"
            url = f"/{section}/{exp}/"
            day, text = jekyll_post(index.read_text(), index, url, baseurl, layout)
            post = site.root / "_posts" / f"{day}-{exp}.md"
            files = staging / exp
            shutil.copytree(
                src,
                files,
                ignore=lambda d, names, src=src: [
                    n for n in names if _hidden(n) or (Path(d) == src and n == "index.md")
                ],
            )
            if (files / NOTEBOOK).is_file():
                (files / NOTEBOOK).write_text(
                    jekyll_notebook((files / NOTEBOOK).read_text(), url, baseurl)
                )
            folder = site.folder(section) / exp
            old = _jekyll_existing(site, exp)
            if not old and not (folder.exists() or folder.is_symlink()):
                plan.append((exp, post, text, files, folder, old, "new"))
                continue
            why = None
            if [post] != old:
                why = f"{old[0].name} is there" if old else f"no {post.name}"
            elif post.read_text() != text:
                why = f"{post.name} differs"
            else:
                why = difference(files, folder)
                why = None if why is None else f"{folder}: {why}"
            outcome = _outcome(why, replace)
            if outcome:
                plan.append((exp, post, text, files, folder, old, outcome))
            else:
                refused.append(f"{exp}: the site's copy differs ({why})")
        if refused:
            raise PerfpostError(
                "; ".join(refused) + ": nothing published (--replace replaces such a post)"
            )
        done = []
        for exp, post, text, files, folder, old, outcome in plan:
            if outcome != "unchanged":
                try:
                    _copy_in(files, folder)
                    _write_text(post, text)
                    for stale in old:
                        if stale != post:
                            stale.unlink()
                except OSError as e:
                    raise PerfpostError(f"{post}: cannot publish {reports / exp}: {e}") from None
            done.append(Published(exp, post, outcome))
        return done
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def publish(
    site_root: Path,
    experiments: list[str],
    section: str = "posts",
    replace: bool = False,
    reports: Path = Path(paths.REPORTS),
) -> list[Published]:
    """Copy the posts into the site. Every post is checked, and every destination compared,
    before anything is written: a refusal leaves the site as it was."""
    site = detect(site_root)
    check_section(section, site)
    chosen = posts(reports, experiments)
    for exp in chosen:
        check_post(reports / exp, site)
    if site.kind == "jekyll":
        return _publish_jekyll(site, section, chosen, replace, reports)
    staging = Path(tempfile.mkdtemp(prefix="perfpost-publish-"))
    try:
        return _publish_hugo(site, section, chosen, replace, reports, staging)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _publish_hugo(
    site: Site, section: str, chosen: list[str], replace: bool, reports: Path, staging: Path
) -> list[Published]:
    """Each post as a page bundle ``content/<section>/<experiment>/``, its notebook as a page
    of its own beside it (``<experiment>-notebook.md``, at the bundle's address +
    ``notebook/``): a markdown file inside a leaf bundle is a resource Hugo never renders."""
    plan: list[tuple[str, Path, Path, Path | None, str]] = []
    refused = []
    for exp in chosen:
        src = reports / exp
        bundle = staging / exp
        shutil.copytree(
            src,
            bundle,
            ignore=lambda d, names, src=src: [
                n for n in names if _hidden(n) or (Path(d) == src and n == NOTEBOOK)
            ],
        )
        (bundle / "index.md").write_text(hugo_post((src / "index.md").read_text()))
        note_src = src / NOTEBOOK
        note = None
        if note_src.is_file():
            note = staging / f"{exp}-notebook.md"
            note.write_text(hugo_notebook(note_src.read_text(), f"/{section}/{exp}/notebook/"))
        dest = site.folder(section) / exp
        note_dest = site.folder(section) / f"{exp}-notebook.md"
        if not (dest.exists() or dest.is_symlink() or note_dest.exists()):
            plan.append((exp, bundle, dest, note, "new"))
            continue
        why = difference(bundle, dest)
        if why is None and note is not None:
            if not note_dest.is_file():
                why = f"no {note_dest.name}"
            elif note_dest.read_text() != note.read_text():
                why = f"{note_dest.name} differs"
        outcome = _outcome(why, replace)
        if outcome:
            plan.append((exp, bundle, dest, note, outcome))
        else:
            refused.append(f"{dest} exists and differs from {src} ({why})")
    if refused:
        raise PerfpostError(
            "; ".join(refused) + ": nothing published (--replace replaces such a page)"
        )
    done = []
    for exp, bundle, dest, note, outcome in plan:
        if outcome != "unchanged":
            try:
                _copy_in(bundle, dest)
                if note is not None:
                    _write_text(dest.parent / note.name, note.read_text())
            except OSError as e:
                raise PerfpostError(f"{dest}: cannot publish {reports / exp}: {e}") from None
        done.append(Published(exp, dest, outcome))
    return done
