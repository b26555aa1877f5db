"""MCP protocol conformance of engram's server, seen by the official client and by a raw
JSON-RPC probe (issue 12, "MCP server"; docs/spec/mcp.md "Errors" and "Tools").

- an unknown tool is a JSON-RPC error -32602, not a tool result;
- argument validation errors are tool errors in engram's documented shape, and JSON Schema's
  types are not coerced ("3" is not an integer);
- reading ``engram://context/<invalid scope>`` is invalid params (-32602), not -32603;
- the tool annotations tell the truth: read-only tools leave the store as it was, idempotent
  ones change nothing the second time.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp.shared.exceptions import MCPError
from mcp_kit import ENGRAM, HTTP_BASE, error_text, http_session, server_environment, write_seat
from starlette.applications import Starlette

from engram.cli.internals import provider_app_with_mcp
from engram.context import issue_token
from engram.context.internals import DemoSubject, seed_demo
from engram.core.clock import SystemClock
from engram.core.jsonio import dumps_text
from engram.mcp import SeatSource
from engram.provider import ProviderConfig
from engram.store import Store, open_store

CLOCK = SystemClock()
INVALID_PARAMS = -32602
READ_ONLY = {"engram_recall", "engram_status"}


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = open_store(f"sqlite:///{tmp_path / 'engram.db'}")
    yield opened
    opened.close()


@pytest.fixture
def demo(store: Store) -> DemoSubject:
    return seed_demo(store, CLOCK)


@pytest.fixture
def app(store: Store, tmp_path: Path, demo: DemoSubject) -> Starlette:
    seat = SeatSource("--ote", write_seat(tmp_path / "repo"))
    return provider_app_with_mcp(ProviderConfig(public_url=HTTP_BASE), store, CLOCK, seat)


@pytest.fixture
def admin(store: Store, demo: DemoSubject) -> str:
    return issue_token(store, CLOCK, demo.subject.id, ["admin"])


async def _raw(app: Starlette, token: str, message: dict[str, Any]) -> dict[str, Any]:
    """One JSON-RPC message POSTed to /mcp as bytes; the JSON-RPC answer as parsed."""
    async with (
        app.router.lifespan_context(app),
        httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=HTTP_BASE) as c,
    ):
        response = await c.post(
            "/mcp",
            content=dumps_text(message).encode(),
            headers={
                "authorization": f"Bearer {token}",
                "content-type": "application/json",
                "accept": "application/json, text/event-stream",
                "mcp-protocol-version": "2025-06-18",
            },
        )
    answer = response.json()
    assert isinstance(answer, dict)
    return answer


@pytest.mark.req("engram.mcp.unknown-tool")
async def test_an_unknown_tool_is_a_json_rpc_invalid_params_error(
    app: Starlette, admin: str
) -> None:
    async with http_session(app, admin) as session:
        with pytest.raises(MCPError) as raised:
            await session.call_tool("engram_teleport", {})
    assert raised.value.error.code == INVALID_PARAMS
    assert "Unknown tool: engram_teleport" in raised.value.error.message


@pytest.mark.req("engram.mcp.unknown-tool")
async def test_a_raw_json_rpc_probe_of_an_unknown_tool_gets_the_error(
    app: Starlette, admin: str
) -> None:
    raw = await _raw(
        app,
        admin,
        {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "nope", "arguments": {}},
        },
    )
    assert raw["id"] == 7
    assert "result" not in raw
    assert raw["error"]["code"] == INVALID_PARAMS


@pytest.mark.req("engram.mcp.unknown-tool")
def test_the_stdio_server_answers_a_raw_probe_the_same_way(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write_seat(repo)
    lines: list[dict[str, Any]] = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw-probe", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "nope"}},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "engram_recall", "arguments": {"query": "cache", "k": "3"}},
        },
        {
            "jsonrpc": "2.0",
            "id": 4,
            "method": "resources/read",
            "params": {"uri": "engram://context/bogus"},
        },
    ]
    answers = _stdio_exchange(repo, tmp_path / "e.db", lines, wanted={1, 2, 3, 4})
    assert answers[2]["error"]["code"] == INVALID_PARAMS
    refused = answers[3]["result"]
    assert refused["isError"] is True
    assert refused["content"][0]["text"] == (
        "Error executing tool engram_recall: invalid_request: "
        "argument 'k' must be of JSON type integer, not string"
    )
    # No provider is configured over stdio: that is the server's situation, not bad params.
    assert answers[4]["error"]["code"] == -32603


def _stdio_exchange(
    cwd: Path, database: Path, messages: list[dict[str, Any]], wanted: set[int]
) -> dict[int, dict[str, Any]]:
    """Write raw JSON-RPC lines to a real ``engram mcp`` and read until every id is answered."""
    process = subprocess.Popen(
        [*ENGRAM, "mcp", "--database", f"sqlite:///{database}"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=cwd,
        env=server_environment(),
    )
    assert process.stdin is not None
    assert process.stdout is not None
    answers: dict[int, dict[str, Any]] = {}
    try:
        for message in messages:
            process.stdin.write(dumps_text(message) + "\n")
        process.stdin.flush()
        while not wanted <= answers.keys():
            line = process.stdout.readline()
            if not line:
                break
            answer = json.loads(line)
            if isinstance(answer.get("id"), int):
                answers[answer["id"]] = answer
    finally:
        process.stdin.close()
        process.wait(timeout=60)
        process.stdout.close()  # a pipe left to the garbage collector is a ResourceWarning
    return answers


@pytest.mark.req("engram.mcp.argument-errors")
async def test_argument_errors_are_tool_errors_in_the_documented_shape(
    app: Starlette, admin: str
) -> None:
    calls: dict[str, tuple[str, dict[str, Any]]] = {
        "string for integer": ("engram_recall", {"query": "q", "k": "3"}),
        "bool for integer": ("engram_recall", {"query": "q", "k": True}),
        "missing": ("engram_outcome", {"memory_id": "mem:1", "signal": "tests_pass"}),
        "too long": ("engram_recall", {"query": "q" * 4001}),
        "below minimum": ("engram_recall", {"query": "q", "k": 0}),
        "enum": ("engram_distill", {"episodes": ["e"], "kind": "gossip"}),
        "json text for object": (
            "engram_record",
            {"text": "t", "kind": "fact", "provenance": "{}"},
        ),
    }
    async with http_session(app, admin) as session:
        texts = {
            label: error_text(await session.call_tool(n, a)) for label, (n, a) in calls.items()
        }
    prefix = "Error executing tool {}: invalid_request: "
    assert all(t.startswith(prefix.format(calls[k][0])) for k, t in texts.items()), texts
    assert texts["string for integer"].endswith(
        "argument 'k' must be of JSON type integer, not string"
    )
    assert texts["bool for integer"].endswith(
        "argument 'k' must be of JSON type integer, not boolean"
    )
    assert texts["missing"].endswith("missing required argument 'decision_id'")
    assert texts["too long"].endswith("argument 'query' must be at most 4000 characters")
    assert texts["below minimum"].endswith("argument 'k' must be at least 1")
    assert "argument 'kind' must be one of known_process, invariant" in texts["enum"]
    assert "argument 'provenance'" in texts["json text for object"]
    # No pydantic text, and a long value is never echoed back.
    assert not any("pydantic" in t or "qqqq" in t for t in texts.values())


@pytest.mark.req("engram.mcp.context-invalid-scope")
async def test_an_invalid_scope_resource_is_invalid_params(
    app: Starlette, demo: DemoSubject
) -> None:
    async with http_session(app, demo.token) as session:
        with pytest.raises(MCPError) as raised:
            await session.read_resource("engram://context/everything")
    assert raised.value.error.code == INVALID_PARAMS
    assert raised.value.error.message.startswith("invalid_scope: ")


def _state(store: Store) -> list[tuple[object, ...]]:
    with store.read() as tx:
        rows = tx.execute("SELECT * FROM memory_items ORDER BY id")
        events = tx.execute("SELECT * FROM memory_outcomes ORDER BY 1")
    return [tuple(r.values()) for r in rows] + [tuple(e.values()) for e in events]


@pytest.mark.req("engram.mcp.tool-annotations")
async def test_tool_annotations_say_the_truth(app: Starlette, admin: str, store: Store) -> None:
    async with http_session(app, admin) as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        recorded = await session.call_tool("engram_record", {"text": "uses uv", "kind": "fact"})
        memory_id = (recorded.structured_content or {})["memory"]["id"]
        calls: dict[str, dict[str, Any]] = {
            "engram_recall": {"query": "uv"},
            "engram_status": {},
            "engram_record": {"text": "uses uv", "kind": "fact"},
            "engram_outcome": {"memory_id": memory_id, "signal": "tests_pass", "decision_id": "d1"},
            "engram_complete": {},
            "engram_distill": {"episodes": ["cache miss; fixed by warming", "cache miss again"]},
        }
        for name, arguments in calls.items():
            annotations = tools[name].annotations
            assert annotations is not None
            assert annotations.title
            assert tools[name].title == annotations.title
            assert annotations.open_world_hint is False
            before = _state(store)
            first = await session.call_tool(name, arguments)
            assert not first.is_error, error_text(first)
            after_one = _state(store)
            if annotations.read_only_hint:
                assert after_one == before, f"{name} says read-only but changed the store"
            second = await session.call_tool(name, arguments)
            assert not second.is_error, error_text(second)
            if annotations.idempotent_hint:
                assert _state(store) == after_one, f"{name} says idempotent but changed the store"
            assert annotations.read_only_hint is (name in READ_ONLY)
            assert annotations.destructive_hint is (name == "engram_complete")
