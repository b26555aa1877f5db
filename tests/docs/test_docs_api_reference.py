"""The Python API reference: every name a package exports has its section (issue 28)."""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Callable

import pytest
from docs_kit import REPO, Site

# The hook is not a package (mkdocs loads it by path), nor on the type checker's path.
sys.path.insert(0, str(REPO / "docs" / "hooks"))
packages: Callable[[], list[str]] = importlib.import_module("api_reference").packages


@pytest.mark.req("engram.docs.api-reference")
def test_every_exported_name_of_every_package_has_a_section(site: Site) -> None:
    missing = []
    for name in packages():
        module = importlib.import_module(f"engram.{name}")
        ids = site.page(f"reference/{name}/").ids
        missing += [
            f"engram.{name}.{export}"
            for export in getattr(module, "__all__", ())
            if f"engram.{name}.{export}" not in ids
        ]
    assert missing == []


@pytest.mark.req("engram.docs.api-reference")
def test_the_reference_index_links_every_package_once(site: Site) -> None:
    html = site.page("reference/").path.read_text(encoding="utf-8")
    article = html[html.index("<article") : html.index("</article>")]
    links = re.findall(r'href="([^"]+)"', article)
    for name in packages():
        assert links.count(f"{name}/") == 1, f"reference/index lists engram.{name} not once"
    assert "cli" not in packages()  # the command line has its own reference (cli/)


@pytest.mark.req("engram.docs.api-reference")
def test_the_reference_documents_exactly_the_public_names_never_the_internals(site: Site) -> None:
    # Each page holds the package's __all__ and nothing else of it: an internals module (names
    # other engram packages and the tests share, free to change) has no section of its own, and
    # its names none under the package unless they are public too (tests/test_public_api.py
    # keeps the two apart).
    extra = []
    for name in packages():
        module = importlib.import_module(f"engram.{name}")
        exported = set(getattr(module, "__all__", ()))
        prefix = f"engram.{name}."
        ids = site.page(f"reference/{name}/").ids
        top = {i.removeprefix(prefix).split(".")[0] for i in ids if i.startswith(prefix)}
        extra += [f"{prefix}{n}" for n in sorted(top - exported)]
    assert extra == []
