"""End to end in a real browser: the provider runs under uvicorn on a loopback port with a memory
engine, and headless Debian Chromium (npm ``playwright-core``, ``tests/browser/``) uses
``/memories`` with JavaScript disabled: signs in, lists, searches, reads a history, forgets with the
keyboard and restores, erases after the second question, signs out; then another subject signs in
and sees none of it; then, with JavaScript on, a memory holding markup shows as text and runs
nothing (docs/spec/review-page.md, "Memories").

Set ``ENGRAM_REVIEW_SCREENSHOTS=<dir>`` to keep screenshots (light and dark, wide and narrow) of
each page (never committed). Skipped or failed without the tools as ``browser_kit`` says.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest
from browser_kit import HERE, browser_tools, loopback_socket, node_env, serving
from memories_kit import manifest_engine

from engram.context import Permission, create_subject, issue_token
from engram.context.internals import seed_demo
from engram.core.clock import SystemClock
from engram.core.jsonio import dumps_text
from engram.memory import (
    MemoryEngine,
    RecordInput,
    get_memory,
    outcome,
    record,
    subject_view,
    supersede,
)
from engram.provider import ProviderConfig, create_app
from engram.store import open_store

DRIVER = HERE / "memories_flow.cjs"
LONDON = "Ada lives in London and cycles to work."
LEEDS = "Ada lives in Leeds and walks to the office."
PEANUTS = "Ada is allergic to peanuts."
PASSPORT = "Ada's passport number is X1234567."
PAYLOAD = (
    '<script>window.__pwned = 1; alert(1)</script><img src=x onerror="window.__pwned = 2">'
    " Ada's note"
)
GRACE = "Grace lives in Leeds too, near the station."


@dataclass
class Served:
    base: str
    engine: MemoryEngine
    ada_id: str
    config: dict[str, str]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    sock, base = loopback_socket()
    store = open_store(f"sqlite://{tmp_path / 'engram.db'}")
    clock = SystemClock()
    engine = manifest_engine(store, clock, tmp_path)
    app = create_app(ProviderConfig(public_url=base), store, clock, memory=engine)
    demo = seed_demo(store, clock)
    grace = create_subject(store, clock, "Grace Hopper", "America/New_York")
    grace_token = issue_token(store, clock, grace.id, [Permission.CONFIRM], timedelta(days=1))
    ada = subject_view(engine, demo.subject.id)
    london = record(ada, LONDON, "fact").memory.id
    for text in (PASSPORT, PEANUTS, PAYLOAD):
        record(ada, text, "fact")
    leeds = supersede(ada, london, RecordInput(LEEDS, "fact"), actor="token:assistant-7")
    leeds_id = leeds.record.memory.id
    outcome(ada, leeds_id, "tests_pass", "decision-1")
    record(subject_view(engine, grace.id), GRACE, "fact")
    config = {
        "adaToken": demo.token,
        "graceToken": grace_token,
        "leedsId": leeds_id,
        "londonId": london,
        "london": LONDON,
        "peanuts": PEANUTS,
        "passport": PASSPORT,
    }
    try:
        with serving(app, sock):
            yield Served(base, engine, demo.subject.id, config)
    finally:
        store.close()


@pytest.mark.browser
@pytest.mark.req(
    "engram.memory.page.browser-e2e",
    "engram.memory.page.isolation",
    "engram.memory.page.escaping",
    "engram.memory.page.erase-confirm",
)
def test_memories_in_chromium_without_javascript_and_isolated_per_subject(
    served: Served,
) -> None:
    node, chromium = browser_tools()
    shots = os.environ.get("ENGRAM_REVIEW_SCREENSHOTS", "")
    driven = subprocess.run(
        [node, str(DRIVER), served.base, dumps_text(served.config), chromium]
        + ([shots] if shots else []),
        env=node_env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert driven.returncode == 0, driven.stderr
    seen = json.loads(driven.stdout)

    assert seen["greeting"] == "Hello, Ada Example"
    assert seen["listed"][0] == LEEDS
    assert set(seen["listed"]) == {LEEDS, PAYLOAD, PEANUTS, PASSPORT, LONDON}
    assert seen["states"][seen["listed"].index(LONDON)] == "superseded"
    assert seen["nav"].split() == ["Corrections", "Memories"]
    assert seen["searched"][0] == LEEDS  # best first; the superseded London one is not served
    assert LONDON not in seen["searched"]
    assert seen["historyState"] == "superseded"
    assert [e.split(" · ")[0] for e in seen["history"]] == [
        "Recorded",
        f"Superseded by {served.config['leedsId']}",
    ]
    assert seen["history"][1].endswith("by token:assistant-7")
    assert seen["forgottenNotice"].startswith("Forgotten.")
    assert seen["forgottenState"] == "forgotten"
    assert seen["restoredNotice"].startswith("Restored.")
    assert [e.split(" · ")[0] for e in seen["restoredEntries"]] == [
        "Recorded",
        "Forgotten",
        "Restored",
    ]
    assert seen["restoredEntries"][2].endswith("by you, on this page")
    assert seen["question"] == "Erase this memory for good?"
    assert seen["erasedNotice"].startswith("Erased.")
    assert PASSPORT not in seen["afterErase"]
    assert {"name": "engram_review", "httpOnly": True, "sameSite": "Strict", "secure": False} in (
        seen["cookies"]
    )
    assert seen["signedOut"] == "You are signed out."
    # Grace's session: her memory only, whatever she searches or guesses.
    assert seen["grace"] == [GRACE]
    assert seen["graceSearch"] == [GRACE]
    assert seen["graceGuess"]["status"] == 404
    assert "Ada" not in seen["graceGuess"]["text"]
    # The payload is text on the page; nothing of it ran.
    assert seen["payloadShown"] == PAYLOAD
    assert seen["injected"] == 0
    assert seen["pwned"] is None
    assert seen["dialogs"] == 0
    assert seen["titleAfter"] == seen["titleBefore"] == "Your memories · engram memories"
    assert seen["foreign"] == []
    assert not [m for m in seen["console"] if "Content Security Policy" in m]
    assert get_memory(subject_view(served.engine, served.ada_id), served.config["londonId"])
