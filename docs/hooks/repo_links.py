"""MkDocs hook: a link from a page to a file of the repository outside ``docs/`` keeps working.

The pages under ``docs/`` are read in two places: on the code host, where a link such as
``[requirements.json](../../requirements.json)`` from ``docs/spec/README.md`` opens the file, and
on the documentation site, whose pages are built from ``docs/`` alone (docs/spec/docs-site.md
"Links that leave docs/"). So that both readers get the file, each such target is published in the
site under ``repository/<its path in the repository>`` and the link is rewritten to it, at build
time only: the Markdown stays as the code host reads it.

Only a file that exists and is not Markdown is published. A target that does not exist, climbs out
of the repository, or is another Markdown file (which the site would have to render as a page of
its own) is left as it is, so ``mkdocs build --strict`` reports it as a broken link.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

PUBLISHED = "repository"

# An inline Markdown link or image target: ](target) or ](target "title"). Reference-style
# definitions are rare in these pages and are left to mkdocs' own checks.
LINK = re.compile(r"(?P<open>\]\()(?P<target><[^>\n]+>|[^)\s]+)(?P<rest>(?:\s+\"[^\"\n]*\")?\))")
FENCE = re.compile(r"^(?P<fence>`{3,}|~{3,})")


def repository_root(config: MkDocsConfig) -> Path:
    """The folder that holds mkdocs.yml, which is the repository's root."""
    return Path(config.config_file_path).resolve().parent


def outside_target(page_src: str, target: str, config: MkDocsConfig) -> PurePosixPath | None:
    """The repository path a relative link from ``page_src`` names, when it leaves docs/ for an
    existing non-Markdown file of the repository; otherwise None (the link is left alone)."""
    if target.startswith("<") and target.endswith(">"):
        target = target[1:-1]
    path, _, _fragment = target.partition("#")
    if not path or "://" in path or path.startswith(("/", "mailto:", "data:")):
        return None
    docs = Path(config.docs_dir).resolve()
    root = repository_root(config)
    resolved = ((docs / page_src).parent / path).resolve()
    if resolved.is_relative_to(docs) or not resolved.is_relative_to(root):
        return None
    if resolved.suffix.lower() in (".md", ".markdown") or not resolved.is_file():
        return None
    return PurePosixPath(resolved.relative_to(root).as_posix())


def _outside_lines(markdown: str) -> list[tuple[int, str]]:
    """(line number, line) of each line outside fenced code blocks."""
    lines, fence = [], ""
    for number, line in enumerate(markdown.splitlines(keepends=True)):
        opened = FENCE.match(line.lstrip())
        if opened and (not fence or opened["fence"].startswith(fence)):
            fence = "" if fence else opened["fence"][:3]
            continue
        if not fence:
            lines.append((number, line))
    return lines


def _targets(markdown: str, page_src: str, config: MkDocsConfig) -> set[PurePosixPath]:
    found = set()
    for _, line in _outside_lines(markdown):
        for match in LINK.finditer(line):
            target = outside_target(page_src, match["target"], config)
            if target is not None:
                found.add(target)
    return found


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Publish every repository file a page links to from outside docs/."""
    root = repository_root(config)
    wanted: set[PurePosixPath] = set()
    for file in files.documentation_pages():
        if file.abs_src_path is None:
            continue  # generated pages link only inside the site
        text = Path(file.abs_src_path).read_text(encoding="utf-8")
        wanted |= _targets(text, file.src_uri, config)
    for target in sorted(wanted):
        src_uri = f"{PUBLISHED}/{target}"
        if files.get_file_from_path(src_uri) is None:
            files.append(File.generated(config, src_uri, abs_src_path=str(root / target)))
    return files


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, **_: Any) -> str:
    """Point each link that leaves docs/ for a published file at its copy in the site."""
    depth = len(PurePosixPath(page.file.src_uri).parent.parts)
    up = "../" * depth

    def rewrite(match: re.Match[str]) -> str:
        target = outside_target(page.file.src_uri, match["target"], config)
        if target is None:
            return match[0]
        _, hash_, fragment = match["target"].strip("<>").partition("#")
        new = f"{up}{PUBLISHED}/{target}{hash_}{fragment}"
        return f"{match['open']}{new}{match['rest']}"

    lines = markdown.splitlines(keepends=True)
    for number, line in _outside_lines(markdown):
        lines[number] = LINK.sub(rewrite, line)
    return "".join(lines)
