"""The memory engine's building blocks, named for benchmarks and tests.

``bench/`` measures the stages of recall one by one and the tests pin their exact outputs, so
both need pieces that ``engram.memory``'s API does not offer (the term analyser, the local
vectors, the index schema, the bundled dense model, the fusion step). They import them from here
rather than from the private modules, so a refactor of those modules has one place to keep
working. Nothing here is a stable API for applications: use ``engram.memory``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from engram.memory import _minilm as minilm
from engram.memory import _repo, _text
from engram.memory import _static as static
from engram.memory import _static_distill as static_distill
from engram.memory._analysis import MAX_WORD, cache_sizes, fold, script_of
from engram.memory._engine import MemoryEngine, memory_id, writing
from engram.memory._index import INDEX_VERSION, TEXT_SCHEMA, matvec
from engram.memory._minilm import DIMS, ENGINE, MiniLMEmbedder
from engram.memory._recall import Ranking, common_terms_query, fused_ranking
from engram.memory._recall.slate import Slate, slate, slate_of
from engram.memory._recall.time_intent import TimeIntent, time_intent
from engram.memory._rowfile import RowFile
from engram.memory._text import local_vector, local_vectors, terms, vector_to_blob, words


def rebuild_index(engine: MemoryEngine) -> None:
    """Mark the derived index stale and rebuild it now (what an erase pays; bench/bench_erase)."""
    with writing(engine.store) as tx:
        _repo.bump(tx, rebuilt=True)
    with engine.lock:
        engine.index.sync(engine.store)


@contextmanager
def analysed_with(words_of: Callable[[str], list[str]]) -> Iterator[None]:
    """Terms and local vectors built from ``words_of`` instead of engram's analysis while the
    block runs (``bench multilingual`` compares analyses on one corpus with it); the caches are
    emptied on entry and exit so no word of one analysis serves the other."""
    saved = _text.words
    setattr(_text, "words", words_of)  # noqa: B010 - the module global terms() and vectors read
    _text.clear_caches()
    try:
        yield
    finally:
        setattr(_text, "words", saved)  # noqa: B010
        _text.clear_caches()


__all__ = [
    "DIMS",
    "ENGINE",
    "INDEX_VERSION",
    "MAX_WORD",
    "TEXT_SCHEMA",
    "MiniLMEmbedder",
    "Ranking",
    "RowFile",
    "Slate",
    "TimeIntent",
    "analysed_with",
    "cache_sizes",
    "common_terms_query",
    "fold",
    "fused_ranking",
    "local_vector",
    "local_vectors",
    "matvec",
    "memory_id",
    "minilm",
    "rebuild_index",
    "script_of",
    "slate",
    "slate_of",
    "static",
    "static_distill",
    "terms",
    "time_intent",
    "vector_to_blob",
    "words",
]
