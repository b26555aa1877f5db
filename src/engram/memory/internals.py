"""The memory engine's building blocks, named for benchmarks and tests.

``bench/`` measures the stages of recall one by one and the tests pin their exact outputs, so
both need pieces that ``engram.memory``'s API does not offer (the term analyser, the local
vectors, the index schema, the bundled dense model, the fusion step). They import them from here
rather than from the private modules, so a refactor of those modules has one place to keep
working. Nothing here is a stable API for applications: use ``engram.memory``.
"""

from __future__ import annotations

from engram.memory import _repo
from engram.memory._engine import MemoryEngine, memory_id, writing
from engram.memory._index import TEXT_SCHEMA, RowFile, matvec
from engram.memory._minilm import DIMS, ENGINE, MiniLMEmbedder
from engram.memory._recall import common_terms_query, fused_ranking
from engram.memory._text import local_vector, local_vectors, terms, vector_to_blob, words


def rebuild_index(engine: MemoryEngine) -> None:
    """Mark the derived index stale and rebuild it now (what an erase pays; bench/bench_erase)."""
    with writing(engine.store) as tx:
        _repo.bump(tx, rebuilt=True)
    with engine.lock:
        engine.index.sync(engine.store)


__all__ = [
    "DIMS",
    "ENGINE",
    "TEXT_SCHEMA",
    "MiniLMEmbedder",
    "RowFile",
    "common_terms_query",
    "fused_ranking",
    "local_vector",
    "local_vectors",
    "matvec",
    "memory_id",
    "rebuild_index",
    "terms",
    "vector_to_blob",
    "words",
]
