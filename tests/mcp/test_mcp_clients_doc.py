"""docs/mcp-clients.md stays usable: every snippet is JSON a client accepts and starts engram.

docs/spec/mcp.md "Client configuration".
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from engram.core.canonical import parse_strict

DOC = Path(__file__).resolve().parents[2] / "docs" / "mcp-clients.md"
SNIPPET = re.compile(r"```json\n(.*?)```", re.S)


def _snippets() -> list[Any]:
    return [parse_strict(block) for block in SNIPPET.findall(DOC.read_text(encoding="utf-8"))]


@pytest.mark.req("engram.mcp.client-snippets")
def test_the_client_guide_has_a_snippet_per_client() -> None:
    assert len(_snippets()) >= 5


@pytest.mark.req("engram.mcp.client-snippets")
@pytest.mark.parametrize("snippet", _snippets())
def test_each_snippet_is_an_mcp_servers_entry_that_starts_engram(snippet: Any) -> None:
    servers = snippet["mcpServers"]
    for entry in servers.values():
        if "url" in entry:
            assert entry["url"].endswith("/mcp")
            assert entry["headers"]["Authorization"].startswith("Bearer eng_")
        else:
            assert entry["command"] == "engram"
            assert entry["args"][0] == "mcp"
            assert all(isinstance(a, str) for a in entry["args"])
            assert all(isinstance(v, str) for v in entry.get("env", {}).values())
