"""End to end in a real browser: the provider runs under uvicorn on a loopback port, headless
Debian Chromium (driven by npm ``playwright-core``, ``tests/browser/``) signs in to ``/review`` and
confirms a correction a runtime proposed over HTTP, and the next signed export carries it
(docs/spec/review-page.md, "Testing").

Without chromium, node or playwright-core the test is skipped with the reason; with ``CI=true`` it
fails instead (``browser_kit``). Set
``ENGRAM_REVIEW_SCREENSHOTS=<dir>`` to keep screenshots of the pages (never committed).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from browser_kit import HERE, browser_tools, loopback_socket, node_env, serving
from review_kit import verified_export

from engram.context.internals import seed_demo
from engram.core.clock import SystemClock
from engram.provider import ProviderConfig, create_app
from engram.store import open_store

DRIVER = HERE / "review_flow.cjs"
LONDON = "Lives in London and cycles to work."
LEEDS = "Lives in Leeds and walks to the office."


@pytest.fixture
def provider(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """(base URL, demo token) of a real provider on SQLite, served on a free loopback port."""
    sock, base = loopback_socket()
    store = open_store(f"sqlite://{tmp_path / 'engram.db'}")
    app = create_app(ProviderConfig(public_url=base), store, SystemClock())
    demo = seed_demo(store, SystemClock())
    try:
        with serving(app, sock):
            yield base, demo.token
    finally:
        store.close()


@pytest.mark.browser
@pytest.mark.req("engram.review.browser-e2e", "engram.review.confirm-applies")
def test_confirming_in_chromium_changes_the_next_signed_export(
    provider: tuple[str, str], tmp_path: Path
) -> None:
    node, chromium = browser_tools()
    base, token = provider
    auth = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=base, headers=auth, timeout=30) as api:
        beliefs = api.get("/v1/beliefs").json()["beliefs"]
        belief_id = next(b["id"] for b in beliefs if b["statement"] == LONDON)
        proposed = api.post(
            "/v1/context/correct",
            json={"belief_id": belief_id, "new_value": LEEDS, "runtime_id": "assistant-7"},
        )
        assert proposed.json()["status"] == "pending_user_confirmation"
        correction_id = proposed.json()["id"]
        shots = os.environ.get("ENGRAM_REVIEW_SCREENSHOTS", "")
        profile = tmp_path / "chromium-profile"
        profile.mkdir()

        driven = subprocess.run(
            [node, str(DRIVER), base, token, correction_id, belief_id, str(profile), chromium]
            + ([shots] if shots else []),
            env=node_env(),
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )

        assert driven.returncode == 0, driven.stderr
        seen = json.loads(driven.stdout)
        export = verified_export(
            api.get("/v1/context").content, api.get("/.well-known/engram-keys").content
        )

    assert seen["greeting"] == "Hello, Ada Example"
    assert (seen["now"], seen["proposed"]) == (LONDON, LEEDS)
    assert seen["notice"].startswith("Confirmed.")
    assert seen["pendingAfter"] == 0
    assert seen["history"][0].startswith("Corrected · version 2")
    assert LONDON in seen["history"][0]
    assert LEEDS in seen["history"][0]
    assert seen["signedOut"] is True
    assert {"name": "engram_review", "httpOnly": True, "sameSite": "Strict", "secure": False} in (
        seen["cookies"]
    )
    assert seen["foreign"] == []
    assert not [m for m in seen["console"] if "Content Security Policy" in m]

    belief = next(b for b in export["beliefs"] if b["id"] == belief_id)
    assert (belief["statement"], belief["version"]) == (LEEDS, 2)
    entry = export["evolution"][0]
    assert (entry["belief_id"], entry["change"], entry["correction_id"]) == (
        belief_id,
        "corrected",
        correction_id,
    )
    assert (entry["previous"], entry["value"]) == (LONDON, LEEDS)
