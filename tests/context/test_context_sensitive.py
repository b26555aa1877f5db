"""One source for the categories (issue 28). The sensitive ones: the scopes that serve beliefs
(``engram.context``) and the wire reading that a conformance probe and the runtime apply to any
provider's export (``engram.core.context_wire.is_sensitive``) withhold the same categories. All
of them: what the HTTP API, the CLI and the discovery document offer is read from
``engram.context.CATEGORIES``, and the demo subject shows every one."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from engram.cli import cli, run_cli
from engram.context import CATEGORIES, SENSITIVE_CATEGORIES, ensure_schema
from engram.context.internals import SCOPES, seed_demo
from engram.core import context_wire
from engram.core.clock import FixedClock
from engram.provider import openapi_document
from engram.store import open_store


@pytest.mark.req("engram.context.sensitive-one-source")
def test_the_scopes_and_the_wire_withhold_the_same_categories() -> None:
    assert SENSITIVE_CATEGORIES is context_wire.SENSITIVE_CATEGORIES
    assert SENSITIVE_CATEGORIES
    assert set(CATEGORIES) >= SENSITIVE_CATEGORIES
    for category in CATEGORIES:
        sensitive = context_wire.is_sensitive({"category": category})
        assert SCOPES["professional"].admits(category) is not sensitive, category
        assert SCOPES["full"].admits(category)


@pytest.mark.req("engram.context.categories-one-source")
def test_every_offer_of_a_category_reads_the_one_declaration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document: Any = openapi_document()  # a JSON document: walked, not typed
    schemas = document["components"]["schemas"]
    enums = [
        member["enum"]
        for schema in schemas.values()
        for name, member in schema.get("properties", {}).items()
        if name == "category" and "enum" in member
    ]
    assert enums
    assert all(enum == list(CATEGORIES) for enum in enums)
    assert run_cli(cli, ["belief", "add", "--help"]) == 0
    assert f"[{'|'.join(CATEGORIES)}]" in " ".join(capsys.readouterr().out.split())
    store = open_store(f"sqlite:///{tmp_path / 'demo.db'}")
    try:
        ensure_schema(store)
        demo = seed_demo(store, FixedClock(datetime(2026, 1, 1, tzinfo=UTC)))
    finally:
        store.close()
    assert sorted(b.category for b in demo.beliefs) == sorted(CATEGORIES)
