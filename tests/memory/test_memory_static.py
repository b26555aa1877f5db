"""The cheap dense stage: a static table distilled from the bundled all-MiniLM-L6-v2 model
(docs/spec/memory-retrieval.md "Dense: the static table")."""

from __future__ import annotations

import time
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from memory_kit import manifest_text

from engram.core.clock import FixedClock
from engram.memory import (
    RecordInput,
    open_engine,
    parse_manifest,
    recall,
    record_many,
    remote_stages,
)
from engram.memory.internals import static, static_distill
from engram.store import Store


@pytest.mark.req("engram.memory.dense-static")
def test_the_shipped_table_is_the_bundled_models_distillation() -> None:
    """Rows re-derived from the int8 ONNX model (its own forward pass, run here) with the
    shipped projection equal the shipped rows: the table is what the recipe makes of this model,
    not a table from elsewhere."""
    pytest.importorskip("onnxruntime")  # the model's runtime; the table itself needs none
    table, scales = np.load(static.TABLE), np.load(static.SCALES)
    projection = np.load(static.TABLE.with_name("projection.npy"))
    assert table.dtype == np.int8
    assert table.shape[1] == static.DIMS
    rng = np.random.default_rng(30)
    ids = np.sort(rng.choice(table.shape[0], 48, replace=False))
    vectors = static_distill.piece_vectors(ids)
    projected = static_distill.project(vectors, projection, ids, table.shape[0])
    rows, row_scales = static_distill.quantize(projected)
    np.testing.assert_allclose(row_scales, scales[ids], rtol=1e-3)
    assert int(np.abs(rows.astype(np.int16) - table[ids]).max()) <= 1  # float rounding only


@pytest.mark.req("engram.memory.dense-static")
def test_a_static_seat_finds_a_paraphrase_through_the_dense_stage(
    any_store: Store, tmp_path: Path
) -> None:
    text = manifest_text().replace(
        'embedding_provider = "local-hash-128"', 'embedding_provider = "minilm-l6-v2-static"'
    )
    spec = parse_manifest(text, str(tmp_path / "ote.toml"), tmp_path)
    embedder, _ = remote_stages(spec, None)
    assert isinstance(embedder, static.StaticEmbedder)
    engine = open_engine(any_store, spec, FixedClock(), embedder=embedder)
    texts = [
        "My kittens sleep on the windowsill every afternoon.",
        "The quarterly revenue report is due on Friday.",
        "Rotate the database credentials before the audit.",
    ]
    results = record_many(engine, [RecordInput(t, "fact", "M2") for t in texts])
    assert {r.dense for r in results} == {f"stored:{static.ENGINE}"}
    result = recall(engine, "where does my feline nap", k=1)  # no word in common
    assert result.stages["dense"] == "ok"
    assert result.hits[0].memory.text == texts[0]
    assert result.hits[0].components["lexical"] == 0.0


@pytest.mark.req("engram.memory.dense-static")
def test_the_text_is_never_cut_for_its_context_and_context_moves_the_vector() -> None:
    embedder = static.StaticEmbedder()
    alone = embedder.embed(["It cut our p99 latency in half"])[0]
    same = embedder.embed_in_context(["It cut our p99 latency in half"], [()])[0]
    np.testing.assert_array_equal(alone, same)
    read_after = embedder.embed_in_context(
        ["It cut our p99 latency in half"], [("We moved the billing service to Rust",)]
    )[0]
    billing = embedder.embed(["billing service Rust"])[0]
    assert float(read_after @ billing) > float(alone @ billing)
    # A context many times the text's length leaves the text's own pieces in the mean.
    flooded = embedder.embed_in_context(["kittens"], [("weather report " * 5000,)])[0]
    assert float(flooded @ embedder.embed(["kittens"])[0]) > 0.2


@pytest.mark.req("engram.memory.dense-static")
def test_hostile_texts_embed_in_bounded_time_and_memory() -> None:
    embedder = static.StaticEmbedder()
    cjk = "".join(chr(0x4E00 + i) for i in range(10_000))
    hostile = ["", "\u200d\u200f\u0301", "🙂" * 50, "a" * 1_000_000, cjk, "Grüße aus München"]
    tracemalloc.start()
    started = time.process_time()
    vectors = embedder.embed(hostile)
    seconds = time.process_time() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(vectors) == len(hostile)
    assert all(v.shape == (static.DIMS,) and np.isfinite(v).all() for v in vectors)
    assert not vectors[0].any()  # nothing to embed: a zero vector, never a division by zero
    assert all(abs(float(np.linalg.norm(v)) - 1.0) < 1e-4 for v in vectors[4:])
    assert seconds < 30  # generous: a bound, not a speed target
    assert peak < 512 * 2**20
