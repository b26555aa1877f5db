"""The built site loads nothing from elsewhere (docs/spec/docs-site.md "Nothing from elsewhere").

Two independent looks: every built HTML and CSS file is read for asset references (scripts,
stylesheets, fonts, images, frames, CSS ``url()`` and ``@import``) to another host; and headless
Chromium opens the main pages, in both palettes, from a loopback server and records every
request the pages make. Links in the text to other sites are fine: they load nothing by
themselves. Set ``ENGRAM_DOCS_SCREENSHOTS=<dir>`` to keep the browser's screenshots.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from docs_kit import REPO, Site

HERE = Path(__file__).resolve().parent
DRIVER = HERE / "site_pages.cjs"
NODE_MODULES = REPO / "tests" / "browser" / "node_modules"
# Attributes that make a browser fetch something, per element.
LOADS = {
    "script": ("src",),
    "img": ("src", "srcset"),
    "iframe": ("src",),
    "frame": ("src",),
    "source": ("src", "srcset"),
    "video": ("src", "poster"),
    "audio": ("src",),
    "embed": ("src",),
    "object": ("data",),
    "input": ("src",),
}
FETCHED_LINKS = {"stylesheet", "preload", "prefetch", "icon", "modulepreload", "manifest"}
CSS_URL = re.compile(r"""(?:url\(\s*['"]?|@import\s+['"])(?P<target>[^'")\s]+)""")
# The pages a reader meets first: home, a concept, a command, the API, a decision.
PAGES = ("", "concepts/context-protocol/", "cli/serve/", "http-api/", "spec/context-provider/")


def foreign(target: str) -> bool:
    """Whether a URL leaves the site: another scheme and host, or protocol-relative."""
    target = target.strip()
    return target.startswith("//") or bool(re.match(r"[a-z][a-z0-9+.-]*://", target, re.I))


def fetched_by(tag: str, attributes: dict[str, str]) -> Iterator[str]:
    for name in LOADS.get(tag, ()):
        for part in attributes.get(name, "").split(","):
            if part.strip():
                yield part.strip().split()[0]
    if tag == "link" and FETCHED_LINKS & set(attributes.get("rel", "").lower().split()):
        yield attributes.get("href", "")
    for target in CSS_URL.finditer(attributes.get("style", "")):
        yield target["target"]


@pytest.mark.req("engram.docs.offline")
def test_no_built_page_or_stylesheet_loads_anything_from_another_host(site: Site) -> None:
    found = []
    pages = sorted(site.root.rglob("*.html"))
    assert len(pages) > 40
    for html in pages:
        page = site.page(html.relative_to(site.root).as_posix())
        for tag, attributes in page.tags:
            found += [f"{html}: <{tag}> {t}" for t in fetched_by(tag, attributes) if foreign(t)]
            if tag == "pre" and "mermaid" in attributes.get("class", "").split():
                found.append(f"{html}: a Mermaid diagram (Material loads Mermaid from a CDN)")
    for css in sorted(site.root.rglob("*.css")):
        text = css.read_text(encoding="utf-8")
        found += [f"{css}: {m['target']}" for m in CSS_URL.finditer(text) if foreign(m["target"])]
    assert found == []


@pytest.mark.req("engram.docs.offline")
def test_the_check_sees_a_font_or_script_from_another_host() -> None:
    assert list(fetched_by("link", {"rel": "stylesheet", "href": "https://fonts.example/x.css"}))
    assert foreign("https://cdn.example/mermaid.js")
    assert foreign("//cdn.example/a.js")
    assert not foreign("../assets/javascripts/bundle.js")
    assert [m["target"] for m in CSS_URL.finditer("a{src:url('https://f.example/a.woff2')}")]


def _unavailable(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{reason} (CI=true: the browser test must run in CI)", pytrace=False)
    pytest.skip(reason)


def _node_env() -> dict[str, str]:
    paths = [str(NODE_MODULES), *filter(None, os.environ.get("NODE_PATH", "").split(os.pathsep))]
    return {**os.environ, "NODE_PATH": os.pathsep.join(paths)}


@pytest.fixture
def served(site: Site) -> Iterator[str]:
    """The built site over HTTP on a free loopback port."""
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(site.root))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


@pytest.mark.browser
@pytest.mark.req("engram.docs.offline")
def test_chromium_reading_the_main_pages_requests_nothing_from_another_host(
    served: str, tmp_path: Path
) -> None:
    chromium = os.environ.get("ENGRAM_CHROMIUM") or shutil.which("chromium")
    node = shutil.which("node")
    if not chromium or not Path(chromium).exists():
        _unavailable("chromium is not installed (Debian: apt-get install chromium)")
    if node is None:
        _unavailable("node is not installed (Debian: apt-get install nodejs)")
    assert chromium is not None
    assert node is not None
    shots = os.environ.get("ENGRAM_DOCS_SCREENSHOTS", "")
    result = subprocess.run(
        [node, str(DRIVER), served, chromium, shots, *PAGES],
        env=_node_env(),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    if "Cannot find module 'playwright-core'" in result.stderr:
        _unavailable("npm playwright-core is not installed (run: scripts/node-tools)")
    assert result.returncode == 0, result.stderr[-4000:]
    report = json.loads(result.stdout)
    assert report["foreign"] == []
    assert report["failed"] == []
    assert sorted(report["visited"]) == sorted(f"{p}:{s}" for p in PAGES for s in ("light", "dark"))
    # The palette follows the reader's system setting: each visit got the scheme it asked for.
    for page in PAGES:
        assert report["schemes"][f"{page}:light"] == "default"
        assert report["schemes"][f"{page}:dark"] == "slate"
