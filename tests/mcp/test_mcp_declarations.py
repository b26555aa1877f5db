"""Each MCP tool is declared once (issue 28), and what the server lists is what was declared.

- The served ``tools/list`` of the real ``engram mcp`` (a subprocess, read by the official MCP
  client) names exactly the declared tools, in their order, each with the declared title, hints
  and description, the input schema of its function's parameters and the output schema of its
  return annotation.
- The output shapes say what the engine returns: every tool, called on a real engine, answers
  with exactly the fields its output model declares, at every depth (the models allow extra
  fields, so without this a field the engine adds or renames would pass unseen).
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult
from mcp_kit import stdio_session, structured, write_seat
from pydantic import BaseModel, TypeAdapter

from engram.core.clock import SystemClock
from engram.mcp import SeatSource, create_server, load_seat
from engram.mcp.internals import EngramTools, SeatWords, declared_tools
from engram.memory import open_engine
from engram.store import Store, open_store


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = open_store(f"sqlite:///{tmp_path / 'engram.db'}")
    yield opened
    opened.close()


@pytest.mark.req("engram.mcp.tools-declared-once")
async def test_the_served_tool_list_is_what_the_declarations_say(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    manifest = write_seat(repo)
    async with stdio_session(repo, f"sqlite:///{tmp_path / 'engram.db'}") as session:
        served = (await session.list_tools()).tools
    spec = load_seat(SeatSource("--ote", manifest))
    words = SeatWords.of(spec)
    declarations = declared_tools(EngramTools)
    assert [t.name for t in served] == [d.name for d in declarations]
    assert len(served) == 8
    for tool, declaration in zip(served, declarations, strict=True):
        method = getattr(EngramTools, declaration.name)
        assert tool.title == declaration.title
        assert tool.annotations == declaration.annotations()
        assert tool.description == declaration.description(words)
        parameters = list(inspect.signature(method).parameters.values())[1:]  # without self
        schema = tool.input_schema
        assert list(schema["properties"]) == [p.name for p in parameters], tool.name
        required = [p.name for p in parameters if p.default is inspect.Parameter.empty]
        assert schema.get("required", []) == required, tool.name
        returned = typing.get_type_hints(method)["return"]
        assert tool.output_schema == TypeAdapter(returned).json_schema(), tool.name


def _undeclared(value: Any, model: type[BaseModel], where: str) -> list[str]:
    """Fields of ``value`` that ``model`` does not declare, and declared fields it lacks,
    descending into nested output models."""
    assert isinstance(value, dict), where
    problems = [f"{where}.{k} (not declared)" for k in value if k not in model.model_fields]
    problems += [  # an optional field (default None) may be left out, as to_wire leaves it
        f"{where}.{k} (missing)"
        for k, field in model.model_fields.items()
        if k not in value and field.is_required()
    ]
    for name, field in model.model_fields.items():
        inner = field.annotation
        args = typing.get_args(inner)
        if isinstance(inner, type) and issubclass(inner, BaseModel) and name in value:
            problems += _undeclared(value[name], inner, f"{where}.{name}")
        elif typing.get_origin(inner) is list and args and issubclass(args[0], BaseModel):
            for i, item in enumerate(value.get(name, [])):
                problems += _undeclared(item, args[0], f"{where}.{name}[{i}]")
    return problems


@pytest.mark.req("engram.mcp.output-matches-engine")
async def test_every_tool_answers_with_exactly_the_fields_its_output_model_declares(
    tmp_path: Path, store: Store
) -> None:
    source = SeatSource("--ote", write_seat(tmp_path / "repo"))
    server: MCPServer = create_server(open_engine(store, load_seat(source), SystemClock()), source)

    async def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = await server.call_tool(name, arguments)
        assert isinstance(result, CallToolResult)
        answer = structured(result)
        returned = typing.get_type_hints(getattr(EngramTools, name))["return"]
        assert _undeclared(answer, returned, name) == []
        return answer

    text = "The deploy cache must be flushed after a schema migration."
    recorded = await call("engram_record", {"text": text, "kind": "fact"})
    memory_id = recorded["memory"]["id"]
    answers = {
        "engram_record": recorded,
        "engram_recall": await call("engram_recall", {"query": "schema migration cache"}),
        "engram_distill": await call(
            "engram_distill",
            {"episodes": ["The build failed: the cache was stale.", "Stale cache broke it."]},
        ),
        "engram_outcome": await call(
            "engram_outcome",
            {"memory_id": memory_id, "signal": "tests_pass", "decision_id": "run-1"},
        ),
        "engram_record_conversation": await call(
            "engram_record_conversation",
            {
                "messages": [
                    {"role": "system", "content": "Be brief."},
                    {
                        "role": "user",
                        "name": "Ada",
                        "content": "The staging database moved to port 5433.",
                        "timestamp": "2026-03-14T09:30:00Z",
                    },
                ]
            },
        ),
        "engram_complete": await call("engram_complete", {"apply": False}),
        "engram_status": await call("engram_status", {}),
        "engram_forget": await call("engram_forget", {"memory_id": memory_id}),
    }
    assert set(answers) == {d.name for d in declared_tools(EngramTools)}
    assert answers["engram_recall"]["hits"], "the recall must have hits to check their shape"
    assert answers["engram_complete"]["verdicts"], "complete must have verdicts to check"
