"""Build the documentation site the way CI does, and read what was built (docs/spec/docs-site.md).

``build`` runs ``mkdocs build --strict`` in a subprocess, as a developer or CI would, with the
``mkdocs`` of the running interpreter; ``Site`` reads the built pages back: their ids, their
navigation and the sitemap, with the standard library's HTML parser.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# What a build reads besides docs/: its config, the hooks' inputs and the snippets it includes.
BUILD_INPUTS = ("mkdocs.yml", "docs", "openapi.json", "requirements.json", "bench/README.md")


def build(root: Path, out: Path) -> subprocess.CompletedProcess[str]:
    """``mkdocs build --strict`` of the tree at ``root`` into ``out``."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def copy_tree(into: Path) -> Path:
    """A copy of what the build reads, to change without touching the repository."""
    for name in BUILD_INPUTS:
        source = REPO / name
        target = into / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, target)
    return into


class _Page(HTMLParser):
    """Element ids, the primary navigation's links, and every tag with its attributes."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.nav_links: list[str] = []
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.text: list[str] = []
        self._nav_depth = 0
        self._stack: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        self.tags.append((tag, values))
        if "id" in values:
            self.ids.add(values["id"])
        primary = tag == "nav" and "md-nav--primary" in values.get("class", "").split()
        if primary or (self._nav_depth and tag == "nav"):
            self._nav_depth += 1
        elif tag == "a" and self._nav_depth and "href" in values:
            self.nav_links.append(values["href"])

    def handle_endtag(self, tag: str) -> None:
        if tag == "nav" and self._nav_depth:
            self._nav_depth -= 1

    def handle_data(self, data: str) -> None:
        self.text.append(data)


@dataclass(frozen=True)
class Page:
    path: Path
    ids: frozenset[str]
    nav_links: tuple[str, ...]
    tags: tuple[tuple[str, dict[str, str]], ...]
    text: str


@dataclass(frozen=True)
class Site:
    root: Path

    def page(self, url: str) -> Page:
        """The built page at a site URL such as ``cli/serve/`` (``""`` is the home page)."""
        path = self.root / url / "index.html" if not url.endswith(".html") else self.root / url
        parser = _Page()
        parser.feed(path.read_text(encoding="utf-8"))
        return Page(
            path,
            frozenset(parser.ids),
            tuple(parser.nav_links),
            tuple(parser.tags),
            "".join(parser.text),
        )

    def page_urls(self) -> set[str]:
        """Every page the build wrote, as URLs relative to the site root (``cli/serve/``)."""
        pages = set()
        for index in self.root.rglob("index.html"):
            folder = index.parent.relative_to(self.root).as_posix()
            pages.add("" if folder == "." else f"{folder}/")
        return pages

    def nav_urls(self) -> set[str]:
        """The pages the navigation of the home page links to, relative to the site root."""
        urls = set()
        for href in self.page("").nav_links:
            target = href.split("#", 1)[0]
            if "://" in target:
                continue
            urls.add("" if target in ("", ".", "./") else target.removeprefix("./"))
        return urls
