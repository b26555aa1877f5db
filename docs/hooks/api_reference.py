"""MkDocs hook: the Python API reference, one page per package, from each package's ``__all__``.

Every package under ``src/engram`` (and the top-level modules ``engram.errors`` and
``engram.fetch``) gets a page ``reference/<name>.md`` holding mkdocstrings' ``::: engram.<name>``,
which renders exactly the names the package's ``__all__`` exports, with their signatures and
docstrings (docs/spec/docs-site.md "The API reference"). The package list is the source tree
itself, so a new package gets its page without anyone listing it; ``reference/index.md`` groups
them by product, in the order ``engram/__init__.py`` gives.
"""

from __future__ import annotations

from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

FOLDER = "reference"
SOURCE = Path(__file__).resolve().parents[2] / "src" / "engram"

# Product groups of the index page (engram/__init__.py). A package in none is listed under
# "Other packages", so a new package is never left out.
GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("The context protocol", ("context", "provider", "runtime")),
    ("The memory engine", ("memory", "mcp", "integrations")),
    (
        "Agent Cartridges",
        ("cartridge", "trust", "policy", "level", "workflow", "graph", "registry", "oci"),
    ),
    ("Beneath the products", ("core", "store", "fetch", "errors")),
    ("Bridges and tools", ("transfer", "conformance")),
)
# The command line is documented from its commands (cli/), not as a Python API.
NOT_AN_API = frozenset({"cli"})


def packages() -> list[str]:
    """The documented packages: every package and public top-level module of ``engram``."""
    names = {p.parent.name for p in SOURCE.glob("*/__init__.py")}
    names |= {p.stem for p in SOURCE.glob("*.py") if not p.stem.startswith("_")}
    return sorted(names - NOT_AN_API)


def _summary(name: str) -> str:
    init = SOURCE / name / "__init__.py"
    path = init if init.exists() else SOURCE / f"{name}.py"
    text = path.read_text(encoding="utf-8")
    start = text.find('"""')
    if start < 0:
        return ""
    first = text[start + 3 :].split("\n", 1)[0].strip()
    return first.removeprefix(f"engram.{name}: ").rstrip(".")


def index_page(names: list[str]) -> str:
    lines = [
        "# API reference",
        "",
        "One page per package, generated from what the package exports (`__all__`): each name's",
        "signature and docstring. Import from the package (`from engram.memory import recall`),",
        "never from a module whose name starts with `_`: those may change in any release.",
        "",
    ]
    listed: set[str] = set()
    for title, members in (*GROUPS, ("Other packages", tuple(names))):
        rows = [n for n in members if n in names and n not in listed]
        if not rows:
            continue
        lines += [f"## {title}", "", "| package | what it is |", "|---|---|"]
        lines += [f"| [`engram.{n}`]({n}.md) | {_summary(n)} |" for n in rows]
        lines.append("")
        listed.update(rows)
    return "\n".join(lines)


def package_page(name: str) -> str:
    return f"# engram.{name}\n\n::: engram.{name}\n"


def on_files(files: Files, config: MkDocsConfig) -> Files:
    names = packages()
    files.append(File.generated(config, f"{FOLDER}/index.md", content=index_page(names)))
    for name in names:
        files.append(File.generated(config, f"{FOLDER}/{name}.md", content=package_page(name)))
    return files
