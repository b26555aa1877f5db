"""``engram_outcome`` offers only the signals it accepts (issue 32, point 5): its schema and
description list every model signal and name no attested one (sealed_* / human_*), which the
tool always refuses; an agent that sends one anyway is told where attested evidence goes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp_kit import error_text, stdio_session, write_seat

from engram.memory.internals import SIGNALS


@pytest.mark.req("engram.mcp.outcome-schema-accepted-only")
async def test_the_outcome_tool_lists_only_the_signals_it_accepts(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write_seat(repo)
    async with stdio_session(repo, f"sqlite:///{tmp_path / 'engram.db'}") as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        refused = await session.call_tool(
            "engram_outcome",
            {"memory_id": "mem:0", "signal": "human_accept", "decision_id": "pr-1"},
        )
    tool = tools["engram_outcome"]
    offered = json.dumps(tool.input_schema) + (tool.description or "")  # noqa: TID251 - a text search
    attested = [name for name, signal in SIGNALS.items() if signal.attested]
    accepted = [name for name, signal in SIGNALS.items() if not signal.attested]
    assert attested
    assert [name for name in attested if name in offered] == []
    assert "sealed_*" not in offered
    assert "human_*" not in offered
    assert [name for name in accepted if name not in offered] == []
    assert refused.is_error
    assert "engram outcome --attestation" in error_text(refused)
