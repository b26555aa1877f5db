"""distill through an OpenAI-compatible chat endpoint on loopback, and the package's public API."""

from __future__ import annotations

import json
import socket
import threading
import types
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import engram.memory
from engram.errors import InvalidRequest
from engram.memory import ChatDistiller, ExtractiveDistiller, MemoryEngine, distill

EPISODES = [
    "Build broke: the lockfile drifted. Regenerated it with uv lock. Build green.",
    "Build broke again: lockfile drift. Fix was uv lock and commit the lockfile.",
]


class _Chat(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        assert self.path == "/v1/chat/completions"
        assert "lockfile" in body["messages"][0]["content"]
        text = "When the build breaks on lockfile drift: (1) run uv lock (2) commit the lockfile."
        raw = json.dumps(  # noqa: TID251 - a fake server's wire body
            {"choices": [{"message": {"role": "assistant", "content": text}}]}
        ).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args: object) -> None:
        return


@pytest.fixture
def chat_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Chat)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.req("engram.memory.distill-llm")
def test_a_configured_chat_model_writes_the_distilled_memory(
    engine: MemoryEngine,
    chat_url: str,
) -> None:
    result = distill(engine, EPISODES, llm=ChatDistiller(chat_url, "toy-chat"))
    assert result.memory.text.startswith("When the build breaks on lockfile drift")
    assert result.memory.provenance["distiller"] == "llm:toy-chat"


@pytest.mark.req("engram.memory.distill-llm")
def test_an_unreachable_chat_model_falls_back_to_the_extractive_distiller(
    engine: MemoryEngine,
) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = distill(engine, EPISODES, llm=ChatDistiller(f"http://127.0.0.1:{port}", "gone"))
    assert result.memory.provenance["distiller"] == "extractive-v1"


@pytest.mark.req("engram.memory.distill-extractive")
def test_the_extractive_distiller_is_deterministic_and_refuses_empty_input(
    engine: MemoryEngine,
) -> None:
    one = ExtractiveDistiller().distill(EPISODES, "known_process")
    assert one == ExtractiveDistiller().distill(EPISODES, "known_process")
    assert "lockfile" in one
    with pytest.raises(InvalidRequest):
        distill(engine, [])
    with pytest.raises(InvalidRequest):
        distill(engine, EPISODES, kind="incident")


def _ruff_order(name: str) -> tuple[int, str]:
    # ruff RUF022: SCREAMING_CASE constants, then CamelCase classes, then the rest.
    return (0 if name.isupper() else 1 if name[:1].isupper() else 2, name)


def test_the_public_api_is_sorted_and_complete() -> None:
    names = engram.memory.__all__
    assert names == sorted(names, key=_ruff_order)
    for name in names:
        assert hasattr(engram.memory, name), name
    # Submodules (engram.memory.internals, once imported) are attributes too, not API names.
    public = {
        n
        for n in dir(engram.memory)
        if not n.startswith("_") and not isinstance(getattr(engram.memory, n), types.ModuleType)
    }
    assert public - set(names) - {"annotations"} == set()
