"""A slow remote stage must not stall other recalls on the same engine.

The MCP server and ``engram serve`` share one engine between worker threads. The embedding
and rerank calls of one recall may take seconds; the index lock is held only for the local
stages, so a second recall on another thread completes while the first one's remote call is
still in flight. The endpoint here is a real HTTP server on 127.0.0.1 that holds any request
whose text contains "slow" until the test releases it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from memory_kit import manifest_text

from engram.core.clock import FixedClock
from engram.memory import (
    MemoryEngine,
    RecallResult,
    RecordInput,
    open_engine,
    parse_manifest,
    recall,
    record_many,
    remote_stages,
)
from engram.memory.internals import words
from engram.store import Store

DIMS = 8
WAIT = 30.0  # seconds a test waits for an event before it fails (never reached when correct)


@dataclass
class Gate:
    """Requests to ``path`` whose text contains "slow" are held: ``arrived`` is set when one
    comes in, and it is answered after ``release``."""

    path: str = "/v1/embeddings"
    arrived: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)


def _embedding(text: str) -> list[float]:
    vec = [0.0] * DIMS
    for w in words(text):
        vec[sum(map(ord, w)) % DIMS] += 1.0
    return vec


def _handler(gate: Gate) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if self.path == "/v1/embeddings":
                texts: list[str] = body["input"]
                payload: object = {
                    "data": [{"index": i, "embedding": _embedding(t)} for i, t in enumerate(texts)]
                }
            else:
                texts = [body["query"]]
                query = set(words(body["query"]))
                payload = {
                    "results": [
                        {"index": i, "relevance_score": float(len(query & set(words(d))))}
                        for i, d in enumerate(body["documents"])
                    ]
                }
            if self.path == gate.path and any("slow" in t for t in texts):
                gate.arrived.set()
                gate.release.wait(WAIT)
            raw = json.dumps(payload).encode()  # noqa: TID251 - a fake server's wire body
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, *args: object) -> None:
            return

    return Handler


@pytest.fixture
def gated_endpoint() -> Iterator[tuple[str, Gate]]:
    gate = Gate()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(gate))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", gate
    finally:
        gate.release.set()
        server.shutdown()
        server.server_close()


@pytest.fixture
def shared_engine(
    any_store: Store, tmp_path: Path, gated_endpoint: tuple[str, Gate]
) -> Callable[[bool], MemoryEngine]:
    """An engine with a remote embedder (and the cross-encoder when asked) on the gated server."""

    def make(rerank: bool) -> MemoryEngine:
        text = (
            manifest_text()
            .replace(
                'embedding_provider = "local-hash-128"',
                'embedding_provider = "remote-openai"\nembedding_model = "toy"',
            )
            # The held call must not time out and free the lock.
            .replace("timeout_seconds = 5.0", "timeout_seconds = 120")
            .replace("embedding_dims = 128", f"embedding_dims = {DIMS}")
        )
        if rerank:
            text = text.replace("enabled = false", 'enabled = true\nmodel = "toy-reranker"')
        spec = parse_manifest(text, str(tmp_path / "ote.toml"), tmp_path)
        embedder, reranker = remote_stages(spec, gated_endpoint[0])
        engine = open_engine(any_store, spec, FixedClock(), embedder=embedder, reranker=reranker)
        record_many(
            engine,
            [
                RecordInput(text=f"widget {i} ships with gadget {i % 7}", kind="fact")
                for i in range(50)
            ],
        )
        return engine

    return make


def _start(call: Callable[[], RecallResult]) -> tuple[threading.Thread, list[RecallResult]]:
    out: list[RecallResult] = []
    thread = threading.Thread(target=lambda: out.append(call()), daemon=True)
    thread.start()
    return thread, out


@pytest.mark.req("engram.memory.engine-thread-safe")
@pytest.mark.parametrize("stage", ["dense", "rerank"])
def test_a_recall_completes_while_another_threads_remote_call_is_in_flight(
    shared_engine: Callable[[bool], MemoryEngine],
    gated_endpoint: tuple[str, Gate],
    stage: str,
) -> None:
    _, gate = gated_endpoint
    engine = shared_engine(stage == "rerank")
    gate.path = f"/v1/{'rerank' if stage == 'rerank' else 'embeddings'}"
    slow, slow_out = _start(lambda: recall(engine, "slow widget", k=3))
    try:
        assert gate.arrived.wait(WAIT), "the held remote call never reached the endpoint"
        quick, quick_out = _start(lambda: recall(engine, "gadget 3", k=3))
        quick.join(WAIT)
        assert not quick.is_alive(), "the second recall waited for the first one's remote call"
        assert slow.is_alive()  # the first recall is still waiting on its endpoint
        (result,) = quick_out
        assert result.stages["lexical"] == "ok"
        assert result.stages[stage] == "ok"
        assert len(result.hits) == 3
        assert all("gadget 3" in h.memory.text for h in result.hits)
    finally:
        gate.release.set()
    slow.join(WAIT)
    assert not slow.is_alive()
    (held,) = slow_out
    assert held.stages["dense"] == "ok"
    assert held.stages["rerank"] == ("ok" if stage == "rerank" else "disabled")
    assert not held.degraded
    assert len(held.hits) == 3
