"""The static Exchange in a real browser: headless Debian Chromium driven by npm playwright-core
(``exchange_driver.cjs``; the set-up the review page tests use). Each artifact's verdict is what
§17.6 allows it to be, computed by the page itself (JCS + WebCrypto Ed25519), and one changed
byte in the built site turns it into a failure (lboel/acx@85f1358 SPEC.md §17.6).

Without chromium, node or playwright-core the test is skipped naming what is missing; with
``CI=true`` it fails instead. ``ENGRAM_EXCHANGE_SCREENSHOTS=<dir>`` keeps screenshots.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import rfc8785
from exchange_kit import built_site, serve

HERE = Path(__file__).resolve().parent
DRIVER = HERE / "exchange_driver.cjs"
NODE_MODULES = HERE.parent / "browser" / "node_modules"


def _unavailable(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{reason} (CI=true: the browser test must run in CI)", pytrace=False)
    pytest.skip(reason)


def _node_env() -> dict[str, str]:
    # scripts/node-tools installs playwright-core in tests/browser; NODE_PATH may name others.
    paths = [str(NODE_MODULES), *filter(None, os.environ.get("NODE_PATH", "").split(os.pathsep))]
    return {**os.environ, "NODE_PATH": os.pathsep.join(paths)}


def _tools() -> tuple[str, str]:
    chromium = os.environ.get("ENGRAM_CHROMIUM") or shutil.which("chromium")
    node = shutil.which("node")
    if not chromium or not Path(chromium).exists():
        _unavailable("chromium is not installed (Debian: apt-get install chromium)")
    if node is None:
        _unavailable("node is not installed (Debian: apt-get install nodejs)")
    assert chromium is not None
    assert node is not None
    probe = subprocess.run(
        [node, "-e", "require.resolve('playwright-core')"],
        capture_output=True,
        check=False,
        env=_node_env(),
    )
    if probe.returncode != 0:
        _unavailable("npm playwright-core is not installed (run: scripts/node-tools)")
    return node, chromium


def drive(base: str, pages: list[str], shots: str | None = None) -> dict[str, Any]:
    node, chromium = _tools()
    args = [node, str(DRIVER), base, json.dumps(pages), chromium]  # noqa: TID251
    if shots:
        args.append(shots)
    done = subprocess.run(
        args, capture_output=True, text=True, check=False, timeout=180, env=_node_env()
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


@pytest.mark.browser
@pytest.mark.req(
    "engram.registry.browser-verify",
    "engram.registry.browser-portable",
    "engram.registry.browser-cartridge",
    "engram.registry.site-no-js",
)
def test_every_artifact_gets_the_verdict_it_may_have_and_one_changed_byte_fails(
    tmp_path: Path,
) -> None:
    _tools()
    _registry, site = built_site(tmp_path)
    exchange = json.loads((site / "data/index.json").read_text())
    pages = ["index.html", *[a["page"] for a in exchange["artifacts"]]]
    shots = os.environ.get("ENGRAM_EXCHANGE_SCREENSHOTS")
    with serve(site) as base:
        seen = drive(base, pages, shots)
    assert seen["foreign"] == []  # no third-party request
    assert seen["console"] == []
    assert seen["pages"]["index.html"]["cards"] == len(exchange["artifacts"]) == 8
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for artifact in exchange["artifacts"]:
        by_kind.setdefault(artifact["artifactType"], []).append(seen["pages"][artifact["page"]])
    assert len(by_kind["workflow"]) == 3
    assert len(by_kind["agent-graph"]) == 2
    for page in by_kind["workflow"] + by_kind["agent-graph"]:
        assert page["state"] == "portable", page
        assert page["verdict"] == "Signature verified in this browser: portable"
        text = " ".join(page["lines"])
        assert "RFC 8785 digest is sha256:" in text
        assert "Ed25519 DSSE/in-toto signature holds" in text
        assert "Not proved here: that this key belongs to" in text
        assert "portable, not trusted" in text
    for page in by_kind["agent"]:
        assert page["state"] == "download-only", page
        text = " ".join(page["lines"])
        assert "Not verified in this browser: the cartridge itself" in text
        assert "engram cartridge verify" in text
    assert by_kind["template"][0]["state"] == "download-only"
    # The in-page JCS agrees with Python's rfc8785 on numbers, escapes and key order.
    value: dict[str, Any] = {
        "b": [1e21, 0.1, -0.0, "\u00e9\u2028"],
        "a": {"\u20ac": 1, "\u00e9": None},
    }
    assert seen["jcs"].encode() == rfc8785.dumps(value)

    # One byte changed in the built site: each page now says it failed.
    graph = next(
        a
        for a in exchange["artifacts"]
        if a["artifactType"] == "agent-graph" and "lboel" in a["path"]
    )
    flow = next(
        a
        for a in exchange["artifacts"]
        if a["artifactType"] == "workflow" and "example" in a["path"]
    )
    card = next(
        a for a in exchange["artifacts"] if a["artifactType"] == "agent" and "acme" in a["path"]
    )
    for artifact, old, new in (
        (graph, b"Product Owner", b"Product Ownex"),
        (flow, b"Build and review", b"Build and reviex"),
    ):
        path = site / "files" / artifact["path"]
        data = path.read_bytes()
        assert data.count(old) >= 1
        path.write_bytes(data.replace(old, new, 1))
    path = site / "files" / card["path"]
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    with serve(site) as base:
        after = drive(base, [graph["page"], flow["page"], card["page"]])
    for artifact in (graph, flow, card):
        page = after["pages"][artifact["page"]]
        assert page["state"] == "failed", page
        assert page["verdict"].startswith("Failed")
    assert "digest" in " ".join(after["pages"][flow["page"]]["lines"])
