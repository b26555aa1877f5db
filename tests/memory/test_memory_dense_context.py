"""Dense context (docs/spec/memory-retrieval.md "Dense context"): a memory recorded in a thread
is embedded after the memories just before it in that thread and ring, from the same batch or
from the store; the query is embedded alone; the memory itself is never cut for its context.

The recording embedder here is a test peer written against the ``Embedder`` protocol alone: it
writes down what it is asked and answers with vectors of its own."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest
from memory_kit import manifest_text

from engram.core.clock import FixedClock
from engram.memory import (
    MemoryEngine,
    RecordInput,
    open_engine,
    parse_manifest,
    recall,
    record,
    record_many,
    remote_stages,
)
from engram.memory.internals import MiniLMEmbedder
from engram.store import Store


class RecordingEmbedder:
    """Answers every text with the same unit vector; keeps each (context, text) it was given."""

    def __init__(self) -> None:
        self.asked: list[tuple[tuple[str, ...], str]] = []
        self.plain: list[str] = []

    @property
    def engine(self) -> str:
        return "peer:recording:4"

    def embed(self, texts: Sequence[str]) -> list[np.ndarray]:
        self.plain += list(texts)
        return [np.asarray([1.0, 0.0, 0.0, 0.0], dtype=np.float32) for _ in texts]

    def embed_in_context(
        self, texts: Sequence[str], contexts: Sequence[Sequence[str]]
    ) -> list[np.ndarray]:
        self.asked += [(tuple(c), t) for t, c in zip(texts, contexts, strict=True)]
        return [np.asarray([0.0, 1.0, 0.0, 0.0], dtype=np.float32) for _ in texts]

    def close(self) -> None:
        """Nothing to release."""


@pytest.fixture
def peer_engine(
    any_store: Store, tmp_path: Path
) -> Callable[[str], tuple[MemoryEngine, RecordingEmbedder]]:
    def make(extra: str = "") -> tuple[MemoryEngine, RecordingEmbedder]:
        text = manifest_text().replace("dense_context = 2", extra or "dense_context = 2")
        spec = parse_manifest(text, str(tmp_path / "ote.toml"), tmp_path)
        peer = RecordingEmbedder()
        return open_engine(any_store, spec, FixedClock(), embedder=peer), peer

    return make


def _turn(text: str, thread: str, ring: str = "M4") -> RecordInput:
    return RecordInput(text, "episode", ring, {}, thread)


@pytest.mark.req("engram.memory.dense-context")
def test_a_batch_reads_its_own_earlier_turns_then_the_store_newest_first_kept_in_order(
    peer_engine: Callable[[str], tuple[MemoryEngine, RecordingEmbedder]],
) -> None:
    engine, peer = peer_engine("")
    record_many(engine, [_turn(t, "chat-1") for t in ("t1", "t2", "t3")] + [_turn("o1", "chat-2")])
    assert peer.asked == [((), "t1"), (("t1",), "t2"), (("t1", "t2"), "t3"), ((), "o1")]
    peer.asked.clear()
    # A later call finds the thread's newest memories in the store (through the index).
    record(engine, "t4", "episode", "M4", thread="chat-1")
    record_many(engine, [_turn("t5", "chat-1"), _turn("t6", "chat-1"), _turn("o2", "chat-2")])
    assert peer.asked == [
        (("t2", "t3"), "t4"),
        (("t3", "t4"), "t5"),
        (("t4", "t5"), "t6"),
        (("o1",), "o2"),
    ]
    # The query is embedded alone, and the vectors recall reads are the in-context ones.
    peer.plain.clear()
    hits = recall(engine, "t6", k=3).hits
    assert peer.plain == ["t6"]
    assert hits[0].memory.text == "t6"
    assert hits[0].components["dense"] == 0.0  # the peer's query and passage axes differ


@pytest.mark.req("engram.memory.dense-context")
def test_context_never_crosses_rings_or_threads_and_unthreaded_memories_have_none(
    peer_engine: Callable[[str], tuple[MemoryEngine, RecordingEmbedder]],
) -> None:
    engine, peer = peer_engine("")
    record_many(engine, [_turn("m4 first", "shared"), _turn("m2 first", "shared", "M2")])
    record_many(engine, [_turn("m4 second", "shared"), _turn("m2 second", "shared", "M2")])
    record(engine, "loose note", "episode", "M4")
    assert peer.asked[:2] == [((), "m4 first"), ((), "m2 first")]
    assert peer.asked[2:4] == [(("m4 first",), "m4 second"), (("m2 first",), "m2 second")]
    # No thread: no context, and still the memory side (``embed`` is only ever a query).
    assert peer.asked[4:] == [((), "loose note")]
    assert peer.plain == []


@pytest.mark.req("engram.memory.dense-context")
def test_the_seat_sets_how_many_earlier_memories_are_read_and_zero_turns_it_off(
    peer_engine: Callable[[str], tuple[MemoryEngine, RecordingEmbedder]],
) -> None:
    engine, peer = peer_engine("dense_context = 1")
    assert engine.spec.retrieval.dense_context == 1
    record_many(engine, [_turn(t, "c") for t in ("a", "b", "c")])
    assert peer.asked == [((), "a"), (("a",), "b"), (("b",), "c")]
    off, peer_off = peer_engine("dense_context = 0")
    record_many(off, [_turn(t, "d") for t in ("x", "y")])
    assert peer_off.asked == [((), "x"), ((), "y")]  # memories, read alone
    assert peer_off.plain == []


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    return MiniLMEmbedder()


@pytest.mark.req("engram.memory.dense-context")
def test_the_bundled_model_stores_the_in_context_vector_and_it_answers_about_the_context(
    any_store: Store, tmp_path: Path, minilm: MiniLMEmbedder
) -> None:
    text = manifest_text().replace(
        'embedding_provider = "local-hash-128"', 'embedding_provider = "minilm-l6-v2"'
    )
    spec = parse_manifest(text, str(tmp_path / "ote.toml"), tmp_path)
    embedder, _ = remote_stages(spec, None)
    assert embedder is not None
    engine = open_engine(any_store, spec, FixedClock(), embedder=embedder)
    before, turn = "Our team moved the billing service to Rust.", "It cut our p99 latency in half."
    record(engine, before, "episode", "M4", thread="standup")
    stored = record(engine, turn, "episode", "M4", thread="standup")
    with engine.store.read() as tx:
        blob = tx.scalar(
            "SELECT vector FROM memory_dense_vectors WHERE memory_id = ?", (stored.memory.id,)
        )
    vec = np.frombuffer(bytes(blob), dtype="<f4")
    in_context = minilm.embed_in_context([turn], [(before,)])[0]
    alone = minilm.embed_in_context([turn], [()])[0]  # the memory read alone
    np.testing.assert_allclose(vec, in_context, atol=1e-6)
    assert float(np.abs(in_context - alone).max()) > 0.01
    question = minilm.embed(["Which language rewrite made billing faster?"])[0]
    # Read after its turn, the memory is about billing and Rust too (0.35 against 0.16).
    assert float(in_context @ question) > float(alone @ question) + 0.1


@pytest.mark.req("engram.memory.dense-context")
def test_the_memory_keeps_its_words_and_the_nearest_context_fills_the_rest(
    minilm: MiniLMEmbedder,
) -> None:
    own = minilm._pieces("the memory itself")
    context = " ".join(f"word{i}" for i in range(2000))
    ids = minilm._ids("the memory itself", context)
    assert len(ids) == 256
    assert ids[-len(own) - 1 : -1] == own
    assert (ids[0], ids[-1]) == (minilm._cls, minilm._sep)
    tail = minilm._pieces(context[-200:])
    assert ids[-len(own) - 1 - len(tail) // 2 : -len(own) - 1] == tail[-(len(tail) // 2) :]
    # A memory that fills the window alone is read without context, and cut as before.
    long_text = " ".join(["memory"] * 400)
    assert minilm._ids(long_text, context) == minilm._ids(long_text, "")
    np.testing.assert_array_equal(
        minilm.embed_in_context([long_text], [("some context",)])[0],
        minilm.embed_in_context([long_text], [()])[0],
    )
