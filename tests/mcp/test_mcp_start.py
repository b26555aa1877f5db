"""``engram mcp`` answers ``initialize`` and ``tools/list`` before it loads what only tools need.

An agent host starts ``engram mcp`` at every session start (issue 33): the Streamable HTTP
transport, the provider, the memory engine (numpy, tantivy), the runtime client and jsonschema
are loaded only by the first tool call or resource read that needs them. The real command runs
as a subprocess speaking JSON-RPC lines on stdio; at its exit it prints which of those modules
it had imported.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp_kit import server_environment, write_seat

from engram.core.jsonio import dumps_text

LATE = (
    "engram.mcp._http",
    "engram.provider",
    "engram.memory._engine",
    "engram.memory._recall",
    "engram.runtime",
    "numpy",
    "tantivy",
    "jsonschema",
)
PROBE = f"""
import atexit, sys
def report():
    late = [m for m in {LATE!r} if m in sys.modules]
    print("loaded:", sorted(late), file=sys.stderr)
atexit.register(report)
sys.argv = ["engram", *sys.argv[1:]]
from engram.cli import main
main()
"""


def _serve(
    seat: Path, database: str, messages: list[dict[str, Any]]
) -> tuple[list[Any], list[str]]:
    """Send ``messages`` to a fresh ``engram mcp``, read one answer per request, then end its
    input; the answers and the late modules it had loaded."""
    with subprocess.Popen(
        [sys.executable, "-c", PROBE, "mcp", "--database", database],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=seat,
        env=server_environment(),
    ) as server:
        assert server.stdin is not None
        assert server.stdout is not None
        server.stdin.write("".join(dumps_text(m) + "\n" for m in messages))
        server.stdin.flush()
        answers = [json.loads(server.stdout.readline()) for m in messages if "id" in m]
        _, stderr = server.communicate(timeout=120)
    assert server.returncode == 0, stderr
    loaded = stderr.strip().splitlines()[-1]
    assert loaded.startswith("loaded: "), stderr
    return answers, list(ast.literal_eval(loaded.removeprefix("loaded: ")))


HELLO: list[dict[str, Any]] = [
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        },
    },
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
]


@pytest.mark.req("engram.mcp.lazy-start")
def test_initialize_and_tools_list_load_no_transport_engine_or_numpy(tmp_path: Path) -> None:
    write_seat(tmp_path)
    answers, loaded = _serve(tmp_path, f"sqlite:///{tmp_path / 'engram.db'}", HELLO)
    assert [a["id"] for a in answers] == [1, 2]
    assert answers[0]["result"]["serverInfo"]["name"] == "engram"
    assert len(answers[1]["result"]["tools"]) >= 6
    assert loaded == []


@pytest.mark.req("engram.mcp.lazy-start", "engram.mcp.status")
def test_the_first_tool_call_opens_the_engine_and_answers(tmp_path: Path) -> None:
    write_seat(tmp_path)
    call: dict[str, Any] = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": "engram_status", "arguments": {}},
    }
    answers, loaded = _serve(tmp_path, f"sqlite:///{tmp_path / 'engram.db'}", [*HELLO, call])
    status = answers[2]["result"]
    assert status["isError"] is False
    assert "rings" in status["structuredContent"]
    assert "engram.memory._engine" in loaded
    assert "engram.mcp._http" not in loaded
    assert "engram.provider" not in loaded
