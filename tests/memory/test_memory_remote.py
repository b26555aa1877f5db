"""Dense embeddings and the cross-encoder over real loopback HTTP: fail_open true and false.

The fake endpoint is a real HTTP server on 127.0.0.1 speaking the OpenAI ``/v1/embeddings`` and
vLLM ``/v1/rerank`` shapes; the stopped endpoint is a port nothing listens on.
"""

from __future__ import annotations

import json
import socket
import threading
import zlib
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest
from memory_kit import manifest_text

from engram.errors import ManifestError, RemoteError
from engram.memory import (
    MemoryEngine,
    parse_manifest,
    recall,
    record,
    remote_stages,
    status,
)
from engram.memory.internals import words

DIMS = 16
TOPICS = {"cat": 0, "kitten": 0, "feline": 0, "dog": 1, "puppy": 1, "database": 2, "sql": 2}


def fake_embedding(text: str) -> list[float]:
    """A toy semantic space: synonyms share a dimension, so 'kitten' finds 'feline'."""
    vec = np.zeros(DIMS)
    for w in words(text):
        vec[TOPICS.get(w, 3 + zlib.crc32(w.encode()) % (DIMS - 3))] += 1.0
    return [float(x) for x in vec]


# Every text the fake endpoint was asked to embed, in order (cleared for each test's endpoint).
EMBEDDED: list[str] = []


class _Handler(BaseHTTPRequestHandler):
    calls: list[str]

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.calls.append(self.path)  # type: ignore[attr-defined]
        if self.path == "/v1/embeddings":
            self.server.inputs.extend(body["input"])  # type: ignore[attr-defined]
            data = [
                {"index": i, "embedding": fake_embedding(t)} for i, t in enumerate(body["input"])
            ]
            payload = {"data": data, "model": body["model"]}
        elif self.path == "/v1/rerank":
            query = set(words(body["query"]))
            scores = [
                len(query & set(words(d))) + (5.0 if "answer" in d else 0.0)
                for d in body["documents"]
            ]
            payload = {
                "results": [{"index": i, "relevance_score": s} for i, s in enumerate(scores)]
            }
        else:
            self.send_response(404)
            self.end_headers()
            return
        raw = json.dumps(payload).encode()  # noqa: TID251 - a fake server's wire body
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args: object) -> None:
        return


@pytest.fixture
def fake_endpoint() -> Iterator[tuple[str, list[str]]]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.calls = []  # type: ignore[attr-defined]
    server.inputs = EMBEDDED  # type: ignore[attr-defined]
    EMBEDDED.clear()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", server.calls  # type: ignore[attr-defined]
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def stopped_endpoint() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"  # closed: connections are refused


def remote_toml(fail_open: bool, rerank: bool = False) -> str:
    text = (
        manifest_text()
        .replace(
            'embedding_provider = "local-hash-128"',
            'embedding_provider = "remote-openai"\nembedding_model = "toy"',
        )
        .replace("embedding_dims = 128", f"embedding_dims = {DIMS}")
    )
    text = text.replace("fail_open = true", f"fail_open = {'true' if fail_open else 'false'}")
    if rerank:
        text = text.replace("enabled = false", 'enabled = true\nmodel = "toy-reranker"')
    return text


@pytest.fixture
def remote_engine(
    make_engine: Callable[..., MemoryEngine], tmp_path: Path
) -> Callable[[str, bool, bool], MemoryEngine]:
    def make(url: str, fail_open: bool, rerank: bool = False) -> MemoryEngine:
        spec = parse_manifest(remote_toml(fail_open, rerank), "remote.toml", tmp_path)
        embedder, reranker = remote_stages(spec, url)
        engine = make_engine()
        engine.spec = spec
        engine.embedder, engine.reranker = embedder, reranker
        engine.index.dense_engine = embedder.engine if embedder else None
        return engine

    return make


@pytest.mark.req("engram.memory.remote-no-default-url")
def test_remote_stages_need_an_explicit_endpoint_or_thalamus_url() -> None:
    spec = parse_manifest(remote_toml(True), "remote.toml")
    with pytest.raises(ManifestError, match=r"needs retrieval\.embedding_endpoint or THALAMUS_URL"):
        remote_stages(spec, None)
    embedder, _ = remote_stages(spec, "http://127.0.0.1:9/v1")
    assert embedder is not None
    assert embedder.url == "http://127.0.0.1:9/v1/embeddings"


@pytest.mark.req("engram.memory.record-dense-vector", "engram.memory.recall-dense")
def test_dense_vectors_are_stored_tagged_and_find_synonyms(
    remote_engine: Callable[..., MemoryEngine],
    fake_endpoint: tuple[str, list[str]],
) -> None:
    url, calls = fake_endpoint
    engine = remote_engine(url, False)
    stored = record(engine, "the feline sleeps on the sofa", "fact")
    record(engine, "the puppy chews shoes", "fact")
    assert stored.dense == "stored:remote-openai:toy:16"
    coverage = status(engine).vector_coverage
    assert coverage["dense"] == {"remote-openai:toy:16": 2}
    result = recall(engine, "kitten", k=1)
    assert result.stages["dense"] == "ok"
    assert [h.memory.text for h in result.hits] == ["the feline sleeps on the sofa"]
    assert result.hits[0].components["dense"] > 0.2
    assert "/v1/embeddings" in calls


@pytest.mark.req("engram.memory.recall-fail-open")
@pytest.mark.parametrize("rerank", [False, True])
def test_fail_open_degrades_to_local_stages_and_says_so(
    remote_engine: Callable[..., MemoryEngine],
    stopped_endpoint: str,
    rerank: bool,
) -> None:
    engine = remote_engine(stopped_endpoint, True, rerank)
    stored = record(engine, "the build cache goes stale", "fact")
    assert stored.dense.startswith("degraded: ")
    result = recall(engine, "stale cache", k=1)
    assert result.degraded
    assert result.stages["dense"].startswith("degraded: ")
    assert result.stages["lexical"] == "ok"
    assert [h.memory.text for h in result.hits] == ["the build cache goes stale"]
    if rerank:
        assert result.stages["rerank"].startswith("degraded: ")


@pytest.mark.req("engram.memory.recall-fail-closed")
def test_fail_open_false_makes_an_unreachable_endpoint_an_error(
    remote_engine: Callable[..., MemoryEngine],
    stopped_endpoint: str,
    fake_endpoint: tuple[str, list[str]],
) -> None:
    url, _ = fake_endpoint
    good = remote_engine(url, False)
    record(good, "written while the endpoint was up", "fact")
    bad = remote_engine(stopped_endpoint, False)
    with pytest.raises(RemoteError, match="cannot reach"):
        record(bad, "never written", "fact")
    with pytest.raises(RemoteError):
        recall(bad, "written")
    assert status(good).vector_coverage["memories"] == 1


@pytest.mark.req("engram.memory.recall-rerank")
def test_the_cross_encoder_reorders_the_candidates(
    remote_engine: Callable[..., MemoryEngine],
    fake_endpoint: tuple[str, list[str]],
) -> None:
    url, calls = fake_endpoint
    engine = remote_engine(url, False, True)
    record(engine, "deploy deploy deploy checklist", "fact")
    record(engine, "the answer: deploy after the migration", "fact")
    result = recall(engine, "deploy", k=2)
    assert result.stages["rerank"] == "ok"
    assert result.hits[0].memory.text == "the answer: deploy after the migration"
    assert "rerank" in result.hits[0].components
    assert "/v1/rerank" in calls


@pytest.mark.req("engram.memory.dense-context")
def test_a_remote_model_reads_a_threaded_memory_after_its_context_lines(
    remote_engine: Callable[..., MemoryEngine],
    fake_endpoint: tuple[str, list[str]],
) -> None:
    url, _ = fake_endpoint
    engine = remote_engine(url, False)
    long_turn = "the meeting notes say " + "x" * 3000
    for text in ("we adopted a kitten", long_turn, "she chews the cables"):
        record(engine, text, "fact", thread="home")
    record(engine, "no thread here", "fact")
    assert EMBEDDED[:2] == ["we adopted a kitten", f"we adopted a kitten\n{long_turn}"]
    # The context sent is its last 2,000 characters; the memory itself is sent whole.
    assert EMBEDDED[2] == f"{long_turn[-2000:]}\nshe chews the cables"
    assert EMBEDDED[3] == "no thread here"
    recall(engine, "kitten", k=1)
    assert EMBEDDED[4] == "kitten"  # the query alone
