"""Posts into a static site: each ``reports/<experiment>/`` folder copied as it is.

A post's folder is already a page with its files beside it (``index.md`` links its figures
and tables relatively), so publishing is a copy to where the generator keeps such pages:

- Hugo: ``content/<section>/<experiment>/``, a leaf page bundle. Hugo publishes a bundle's
  files beside the page (``build.publishResources`` is true by default), so the relative links
  resolve at ``/<section>/<experiment>/``.
- Jekyll: ``<section>/<experiment>/``, a page. Jekyll copies the folder's other files as
  static files beside ``index.html``. A post under ``_posts/`` could not keep them: Jekyll
  copies nothing else from there, and a post's URL is made from its date, not its folder.

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
    for link in local_links(text):
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
    plan: list[tuple[str, Path, str]] = []
    refused = []
    for exp in chosen:
        src = reports / exp
        check_post(src, site)
        dest = site.folder(section) / exp
        if not (dest.exists() or dest.is_symlink()):
            plan.append((exp, dest, "new"))
            continue
        why = difference(src, dest)
        if why is None:
            plan.append((exp, dest, "unchanged"))
        elif replace:
            plan.append((exp, dest, "replaced"))
        else:
            refused.append(f"{dest} exists and differs from {src} ({why})")
    if refused:
        raise PerfpostError(
            "; ".join(refused) + ": nothing published (--replace replaces such a page)"
        )
    done = []
    for exp, dest, outcome in plan:
        if outcome != "unchanged":
            try:
                _copy_in(reports / exp, dest)
            except OSError as e:
                raise PerfpostError(f"{dest}: cannot publish {reports / exp}: {e}") from None
        done.append(Published(exp, dest, outcome))
    return done


def layout_hint(site: Site, section: str) -> str | None:
    """For a Jekyll site whose _config.yml gives pages under the section no layout: what to
    add. The post names no layout itself, so the site's own choice applies; without one,
    Jekyll writes the page as bare HTML."""
    if site.kind != "jekyll" or site.config.suffix not in (".yml", ".yaml"):
        return None
    try:
        config: Any = yaml.safe_load(site.config.read_text()) or {}
    except (OSError, yaml.YAMLError):
        return None
    for entry in (config.get("defaults") or []) if isinstance(config, dict) else []:
        if not isinstance(entry, dict):
            continue
        scope, values = entry.get("scope") or {}, entry.get("values") or {}
        where = str(scope.get("path", "")).strip("/")
        applies = not where or section == where or section.startswith(where + "/")
        if applies and scope.get("type", "pages") == "pages" and values.get("layout"):
            return None
    return (
        f"{site.config} gives pages under {section}/ no layout, so Jekyll renders them without "
        f"one; to use your theme's, add to it:\n"
        f"defaults:\n  - scope:\n      path: {section}\n    values:\n      layout: post"
    )
