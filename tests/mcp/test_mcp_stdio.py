"""``engram mcp`` as a real subprocess, driven over stdio by the official MCP Python client.

engram.ote.v1 & MCP contract (Part V, Plate 03, §3.2); docs/spec/mcp.md.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp.shared.exceptions import MCPError
from mcp_kit import LoopbackServer, error_text, stdio_session, structured, write_seat

from engram.context import issue_token
from engram.context.internals import seed_demo
from engram.core.clock import SystemClock
from engram.provider import ProviderConfig, create_app
from engram.store import open_store

TOOLS = {
    "engram_recall",
    "engram_record",
    "engram_distill",
    "engram_complete",
    "engram_outcome",
    "engram_status",
    "engram_forget",
    "engram_record_conversation",
}


@pytest.fixture
def seat_dir(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    write_seat(repo)
    return repo


@pytest.fixture
def database(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'engram.db'}"


@pytest.mark.req("engram.mcp.tools.six", "engram.mcp.stdio")
async def test_engram_mcp_lists_six_tools_with_described_inputs_and_output_schemas(
    seat_dir: Path, database: str
) -> None:
    async with stdio_session(seat_dir, database) as session:
        tools = (await session.list_tools()).tools

    assert {t.name for t in tools} == TOOLS
    for tool in tools:
        assert tool.description, tool.name
        assert tool.output_schema is not None, tool.name
        for name, field in tool.input_schema.get("properties", {}).items():
            assert field.get("description"), f"{tool.name}.{name} has no description"


@pytest.mark.req(
    "engram.mcp.record",
    "engram.mcp.recall",
    "engram.mcp.outcome-capped",
    "engram.mcp.outcome-attested-refused",
    "engram.mcp.stdio",
)
async def test_what_is_recorded_is_recalled_and_judged_over_stdio(
    seat_dir: Path, database: str
) -> None:
    text = "ADR-0042: the billing cache is keyed by tenant id, never by user id"
    async with stdio_session(seat_dir, database) as session:
        recorded = structured(
            await session.call_tool("engram_record", {"text": text, "kind": "decision"})
        )
        memory_id = recorded["memory"]["id"]
        recalled = structured(
            await session.call_tool("engram_recall", {"query": "how is the billing cache keyed?"})
        )
        judged = structured(
            await session.call_tool(
                "engram_outcome",
                {
                    "memory_id": memory_id,
                    "signal": "model_accept",
                    "decision_id": "run-1",
                    "weight": 0.9,
                },
            )
        )
        sealed = await session.call_tool(
            "engram_outcome",
            {"memory_id": memory_id, "signal": "sealed_test_pass", "decision_id": "run-2"},
        )
        after = structured(await session.call_tool("engram_status", {}))

    assert recorded["created"] is True
    assert recorded["memory"]["ring"] == "M4"
    assert recorded["memory"]["entities"] == ["ADR-0042"]
    assert recalled["hits"][0]["memory"]["id"] == memory_id
    assert judged["delta_alpha"] == pytest.approx(0.30)
    assert judged["oracle"] == "model"
    assert judged["alpha"] == pytest.approx(1.30)
    assert sealed.is_error
    assert "engram outcome --attestation" in error_text(sealed)
    assert after["oracle_split"] == {"model": 1}


@pytest.mark.req("engram.mcp.tool-errors", "engram.mcp.stdio")
async def test_refused_calls_say_why_and_write_nothing(seat_dir: Path, database: str) -> None:
    calls = {
        "unknown kind": ("engram_record", {"text": "a fact", "kind": "gossip"}),
        "read-only ring": ("engram_record", {"text": "a fact", "kind": "fact", "ring": "M0"}),
        "unmounted ring": ("engram_record", {"text": "a fact", "kind": "fact", "ring": "M9"}),
        "oversize": ("engram_record", {"text": "x" * 100_001, "kind": "fact"}),
        "malformed": ("engram_recall", {"query": "cache", "k": "many"}),
        "missing": ("engram_record", {"kind": "fact"}),
        "unknown argument": ("engram_outcome", {"memory": "mem:1", "signal": "tests_pass"}),
    }
    async with stdio_session(seat_dir, database) as session:
        results = {label: await session.call_tool(n, a) for label, (n, a) in calls.items()}
        status = structured(await session.call_tool("engram_status", {}))

    messages = {label: error_text(r) for label, r in results.items()}
    assert all(r.is_error for r in results.values())
    assert "'gossip' is not in this seat's allowed_kinds" in messages["unknown kind"]
    assert "read-only" in messages["read-only ring"]
    assert "not mounted" in messages["unmounted ring"]
    assert "at most 100000 characters" in messages["oversize"]
    assert "argument 'k' must be of JSON type integer, not string" in messages["malformed"]
    assert "missing required argument 'text'" in messages["missing"]
    assert all(m.startswith(f"Error executing tool {calls[k][0]}: ") for k, m in messages.items())
    assert "unknown argument 'memory'" in messages["unknown argument"]
    assert sum(ring["memories"] for ring in status["rings"]) == 0


@pytest.mark.req("engram.mcp.seat")
@pytest.mark.parametrize("origin", ["--ote", "ENGRAM_OTE", ".engram/ote.toml"])
async def test_engram_status_says_which_seat_manifest_is_in_use(
    tmp_path: Path, database: str, origin: str
) -> None:
    manifest = write_seat(tmp_path / "elsewhere" if origin != ".engram/ote.toml" else tmp_path)
    work = tmp_path / "work" / "deeper"
    work.mkdir(parents=True)
    args = ("--ote", str(manifest)) if origin == "--ote" else ()
    env = {"ENGRAM_OTE": str(manifest)} if origin == "ENGRAM_OTE" else {}
    async with stdio_session(work, database, *args, env=env) as session:
        status = structured(await session.call_tool("engram_status", {}))

    assert status["seat"] == {"origin": origin, "path": str(manifest.resolve())}


@pytest.mark.req("engram.mcp.context-resource", "engram.mcp.stdio")
async def test_context_resource_serves_the_verified_export_from_the_provider(
    seat_dir: Path, tmp_path: Path, database: str
) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'provider.db'}")
    clock = SystemClock()
    try:
        with LoopbackServer(create_app(ProviderConfig(), store, clock)) as provider:
            demo = seed_demo(store, clock)
            token = issue_token(store, clock, demo.subject.id, ["read"])
            env = {"ENGRAM_PROVIDER_URL": provider.url, "ENGRAM_TOKEN": token}
            async with stdio_session(seat_dir, database, env=env) as session:
                listed = (await session.list_resources()).resources
                templates = (await session.list_resource_templates()).resource_templates
                full = await session.read_resource("engram://context")
                with pytest.raises(MCPError, match="invalid_scope"):
                    await session.read_resource("engram://context/no-such-scope")
    finally:
        store.close()

    assert [str(r.uri) for r in listed] == ["engram://context"]
    assert [t.uri_template for t in templates] == ["engram://context/{scope}"]
    text = full.contents[0].text  # type: ignore[union-attr]
    assert '"verified": true' in text
    assert demo.subject.id in text


@pytest.mark.req("engram.memory.owner.subject-ring", "engram.mcp.forget")
async def test_engram_mcp_for_a_subject_records_into_their_ring_and_forgets(
    seat_dir: Path, database: str
) -> None:
    store = open_store(database)
    try:
        subject = seed_demo(store, SystemClock()).subject.id
    finally:
        store.close()
    async with stdio_session(seat_dir, database, "--subject", subject) as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        recorded = structured(
            await session.call_tool(
                "engram_record", {"text": "I take the 7:40 train.", "kind": "decision"}
            )
        )
        forgot = structured(
            await session.call_tool("engram_forget", {"memory_id": recorded["memory"]["id"]})
        )
        recalled = structured(await session.call_tool("engram_recall", {"query": "train"}))
    assert recorded["memory"]["ring_id"] == f"subject:{subject}"
    assert "the user's own ring" in (tools["engram_record"].description or "")
    assert tools["engram_forget"].annotations is not None
    assert tools["engram_forget"].annotations.destructive_hint is True
    assert (forgot["state"], forgot["changed"]) == ("forgotten", True)
    assert recalled["hits"] == []


@pytest.mark.req("engram.mcp.record-conversation")
async def test_a_conversation_recorded_over_mcp_is_recalled_with_speaker_and_time(
    seat_dir: Path, database: str
) -> None:
    chat = [
        {"role": "system", "content": "You are a release assistant."},
        {
            "role": "user",
            "name": "Priya",
            "content": "The release train leaves on Thursdays at noon now.",
            "timestamp": "2026-05-04T10:15:00Z",
        },
        {"role": "assistant", "content": "Understood: Thursday noon releases."},
    ]
    async with stdio_session(seat_dir, database) as session:
        first = structured(
            await session.call_tool("engram_record_conversation", {"messages": chat})
        )
        again = structured(
            await session.call_tool("engram_record_conversation", {"messages": chat})
        )
        recalled = structured(
            await session.call_tool("engram_recall", {"query": "when does the release train leave"})
        )
    assert (first["counts"]["recorded"], first["counts"]["skipped"]) == (2, 1)
    assert (again["counts"]["recorded"], again["counts"]["duplicate"]) == (0, 2)
    turn = next(h["memory"] for h in recalled["hits"] if "Thursdays" in h["memory"]["text"])
    assert turn["provenance"]["speaker"] == "Priya"
    assert turn["provenance"]["occurred_at"].startswith("2026-05-04T10:15:00")
    assert turn["thread"] == first["thread"]
