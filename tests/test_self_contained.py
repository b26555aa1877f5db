"""The repository stands alone: no test, benchmark, doc or module points outside it.

A user clones engram with nothing beside it, so a path into a sibling checkout of the specs,
into the development machines (``/work/...``), a ``Path(__file__).parents[N]`` that climbs above
the repository, a Markdown link that leaves it, or the name of a specification file only our own
checkouts have, is a defect: the test or benchmark fails in a fresh clone, the reader of a doc
finds nothing. Specifications are cited by their public titles (docs/spec/sources.md); vectors
are copied under ``tests/`` with their SOURCE and LICENSE.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
# The sibling folder's name, spelled in parts so that the examples below (lines the scan must
# catch) are not themselves lines of the repository that point outside it.
SIBLING = "sha" + "red"
SCANNED = ("README.md", "docs", "src", "tests", "bench")
SKIPPED_DIRS = {"__pycache__", "node_modules", ".hypothesis", ".pytest_cache", ".mypy_cache"}

# Each pattern names something that exists only outside the repository.
OUTSIDE = {
    "a sibling checkout": re.compile(r"\.\./shared\b"),
    "the development machines": re.compile(r"(?<![\w.-])/work/"),
    "the shared folder of our checkouts": re.compile(
        r"(?<![\w.:-])shared/(?:specs|vectors|data|notes|hooks)\b|shared/(?:DESIGN|STYLE)\.md"
    ),
    "a path built into the shared folder": re.compile(
        r"""["']shared["']\s*/\s*["'](?:specs|vectors|data|notes)["']"""
        r"""|parents\[\d+\]\s*/\s*["']shared["']"""
    ),
    "a specification file only our checkouts have (cite its public title, docs/spec/sources.md)": (
        re.compile(
            r"\b(?:engram-context-v0\.1(?:-conformance)?|engram-ote-v1-and-mcp"
            r"|openwop-conformance-v2|acx-cartridge-conformance)\b"
        )
    ),
    # An ACX agent package has a STYLE.md of its own; ours was cited by habit or section.
    "a design note only our checkouts have": re.compile(r"\bDESIGN\.md\b|\bSTYLE\.md (?:habit|§)"),
}

# ``Path(__file__)`` followed by ``.parent`` steps and/or ``.parents[N]``.
FILE_ANCHOR = re.compile(
    r"Path\(__file__\)(?:\.resolve\(\)|\.absolute\(\))?(?P<steps>(?:\.parent\b)*)"
    r"(?:\.parents\[(?P<n>\d+)\])?"
)
MARKDOWN_LINK = re.compile(r"\[[^\]\n]*\]\((?P<target>[^)\s]+)\)")
# Pages the documentation site writes when it is built (docs/hooks/, docs/spec/docs-site.md);
# `mkdocs build --strict` (tests/docs/) checks every link to them, anchors included.
GENERATED_DOCS = (REPO / "docs" / "cli", REPO / "docs" / "http-api.md", REPO / "docs" / "reference")

# Files another engineer is changing right now; each entry must still be needed (see below), so
# it is removed as soon as the file is fixed.
KNOWN: dict[str, str] = {}


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    what: str
    text: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what}: {self.text.strip()[:120]}"


def _vendored(path: Path) -> bool:
    """A file copied verbatim from elsewhere: below a folder whose SOURCE.txt names its origin.

    Its own names (a reference package's STYLE.md, say) are its authors' business; the
    SOURCE.txt that describes the copy is ours and is scanned.
    """
    if path.name == "SOURCE.txt":
        return False
    inside = [f for f in path.parents if f.is_relative_to(REPO) and f != REPO]
    return any((folder / "SOURCE.txt").is_file() for folder in inside)


def scanned_files() -> Iterator[Path]:
    for name in SCANNED:
        root = REPO / name
        if root.is_file():
            yield root
            continue
        for path in sorted(root.rglob("*")):
            if (
                path.is_file()
                and not SKIPPED_DIRS & set(path.relative_to(REPO).parts)
                and not _vendored(path)
            ):
                yield path


def _text(path: Path) -> str | None:
    data = path.read_bytes()
    if b"\x00" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def findings_in(relative: str, text: str, location: Path) -> list[Finding]:
    """What in ``text`` (the file ``relative``, at ``location`` on disk) points outside REPO."""
    found: list[Finding] = []
    for number, line in enumerate(text.splitlines(), start=1):
        for what, pattern in OUTSIDE.items():
            if pattern.search(line):
                found.append(Finding(relative, number, what, line))
        if relative.endswith(".py"):
            for match in FILE_ANCHOR.finditer(line):
                up = match.group("steps").count(".parent") + (
                    int(match.group("n")) + 1 if match.group("n") is not None else 0
                )
                target = location.resolve()
                for _ in range(up):
                    target = target.parent
                if up and not target.is_relative_to(REPO):
                    found.append(Finding(relative, number, "a path above the repository", line))
        if relative.endswith(".md"):
            for match in MARKDOWN_LINK.finditer(line):
                link = match.group("target").split("#", 1)[0]
                if not link or re.match(r"^[a-z][a-z0-9+.-]*:", link):
                    continue  # an anchor in the same page, or a URL
                target = (location.parent / link).resolve()
                if not target.is_relative_to(REPO):
                    found.append(Finding(relative, number, "a link out of the repository", line))
                elif not target.exists() and not any(
                    target == g or target.is_relative_to(g) for g in GENERATED_DOCS
                ):
                    found.append(Finding(relative, number, "a link to nothing", line))
    return found


def _all_findings() -> list[Finding]:
    me = Path(__file__).resolve()
    found: list[Finding] = []
    for path in scanned_files():
        text = _text(path)
        if text is None or path.resolve() == me:
            continue
        found += findings_in(path.relative_to(REPO).as_posix(), text, path)
    return found


def _known_by(entry: str, finding: Finding) -> bool:
    return finding.path == entry or (entry.endswith("/") and finding.path.startswith(entry))


def _known(finding: Finding) -> bool:
    return any(_known_by(entry, finding) for entry in KNOWN)


@pytest.mark.req("engram.package.self-contained")
def test_nothing_in_the_repository_points_outside_it() -> None:
    unexpected = [f for f in _all_findings() if not _known(f)]
    assert not unexpected, "\n".join(str(f) for f in unexpected)


@pytest.mark.req("engram.package.self-contained")
def test_every_known_exception_is_still_needed() -> None:
    found = _all_findings()
    stale = [k for k in KNOWN if not any(_known_by(k, f) for f in found)]
    assert not stale, f"fixed, so drop from KNOWN: {stale}"


@pytest.mark.req("engram.package.self-contained")
@pytest.mark.parametrize(
    ("relative", "line"),
    [
        ("tests/x/test_y.py", f'VECTORS = Path(__file__).resolve().parents[3] / "{SIBLING}" / "v"'),
        ("tests/x/test_y.py", 'DATA = Path(__file__).parents[3] / "data" / "locomo.json"'),
        ("tests/x/test_y.py", "ROOT = Path(__file__).resolve().parent.parent.parent.parent"),
        ("bench/b.py", f'root / "{SIBLING}" / "data" / "locomo"'),
        ("docs/spec/a.md", f"Source: `{SIBLING}/specs/engram-ote-v1-and-mcp.txt` §3.2"),
        ("docs/spec/a.md", "Normative sources: `openwop-conformance-v2.txt`"),
        ("src/engram/m.py", "Spec: engram-context-v0.1 §Tiers"),
        ("docs/a.md", f"see ../{SIBLING}/vectors/sqlar"),
        ("docs/a.md", f"see /work/{SIBLING}/DESIGN.md"),
        ("src/engram/m.py", '"""Exports a sorted ``__all__`` (STYLE.md habit 1)."""'),
        ("docs/spec/a.md", "as [the design](../../../DESIGN.md) says"),
        ("docs/spec/a.md", "see [the page](missing-page.md)"),
    ],
)
def test_the_scan_catches_what_would_break_a_fresh_clone(relative: str, line: str) -> None:
    assert findings_in(relative, line, REPO / relative), line


@pytest.mark.req("engram.package.self-contained")
@pytest.mark.parametrize(
    ("relative", "line"),
    [
        ("tests/x/test_y.py", 'ring_id = "canon:shared"  # team:shared too'),
        ("tests/x/test_y.py", "from mcp.shared.exceptions import MCPError"),
        ("tests/x/test_y.py", 'VECTORS = Path(__file__).resolve().parents[1] / "vectors"'),
        ("src/engram/m.py", "# One operation at a time: the cache is shared state."),
        ("src/engram/m.py", 'ROLES = ("AGENTS.md", "STYLE.md")  # an agent package\'s files'),
        ("docs/spec/a.md", "[sources](sources.md), [OpenWOP](https://openwop.dev/spec/v2/core)"),
        ("docs/spec/a.md", "Source: engram.ote.v1 & MCP contract (Part V, Plate 03, §3.2)"),
    ],
)
def test_the_scan_leaves_what_stays_inside_alone(relative: str, line: str) -> None:
    assert findings_in(relative, line, REPO / relative) == []
