"""engram.memory's names for other engram packages, benchmarks and tests: not public API.

Two kinds of name live here. The adapters (``engram.mcp``, ``engram.provider``,
``engram.integrations``, the CLI) share pieces of the engine that an application never calls
itself: the seat loader, the subject header and caller, the attestation namespace, the signal
weights. And ``bench/`` measures the stages of recall one by one while the tests pin their exact
outputs, so both need the term analyser, the local vectors, the index schema, the bundled dense
model and the fusion step. They import them from here rather than from the private modules, so a
refactor of those modules has one place to keep working. Nothing here is a stable API: names may
change or go in any release. Applications use ``engram.memory``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from engram.core.lazy import lazy_attributes as _lazy_attributes

if TYPE_CHECKING:
    from engram.memory import _minilm as minilm
    from engram.memory import _static as static
    from engram.memory import _static_distill as static_distill
    from engram.memory._analysis import MAX_WORD, cache_sizes, fold, script_of
    from engram.memory._attestation import ATTESTATION_NAMESPACE, attestation_message
    from engram.memory._deferred import deferred_engine
    from engram.memory._engine import MemoryEngine, check_record, indexed_local_vector
    from engram.memory._epistemology import (
        BLOCKED,
        MCP_REFUSAL,
        SIGNALS,
        lower_bound,
        signal_weight,
    )
    from engram.memory._index import INDEX_VERSION, TEXT_SCHEMA, matvec
    from engram.memory._lifecycle import erase_rings, erased_among
    from engram.memory._minilm import DIMS, ENGINE, MiniLMEmbedder
    from engram.memory._owner import (
        SUBJECT_HEADER,
        SUBJECT_ID_PATTERN,
        Caller,
        check_subject,
        http_caller,
        owner_of,
        subject_spec,
    )
    from engram.memory._portable import ring_memory_pages
    from engram.memory._recall import DEFAULT_TUNING, Ranking, common_terms_query, fused_ranking
    from engram.memory._recall.slate import Slate, slate, slate_of
    from engram.memory._recall.time_intent import TimeIntent, time_intent
    from engram.memory._rowfile import RowFile
    from engram.memory._seat import (
        DEFAULT_SEAT_FILE,
        MODEL_MODULES,
        SeatSource,
        default_seat,
        load_seat,
        locate_seat,
        model_missing,
    )
    from engram.memory._text import (
        LOCAL_ENGINE,
        local_vector,
        local_vectors,
        terms,
        vector_to_blob,
        words,
    )
    from engram.memory._view import seat_view
    from engram.memory._withdrawn import withdrawn_among


def rebuild_index(engine: MemoryEngine) -> None:
    """Mark the derived index stale and rebuild it now (what an erase pays; bench/bench_erase)."""
    from engram.memory import _repo
    from engram.memory._engine import writing

    with writing(engine.store) as tx:
        _repo.bump(tx, rebuilt=True)
    with engine.lock:
        engine.index.sync(engine.store)


@contextmanager
def analysed_with(words_of: Callable[[str], list[str]]) -> Iterator[None]:
    """Terms and local vectors built from ``words_of`` instead of engram's analysis while the
    block runs (``bench multilingual`` compares analyses on one corpus with it); the caches are
    emptied on entry and exit so no word of one analysis serves the other."""
    from engram.memory import _text

    saved = _text.words
    setattr(_text, "words", words_of)  # noqa: B010 - the module global terms() and vectors read
    _text.clear_caches()
    try:
        yield
    finally:
        setattr(_text, "words", saved)  # noqa: B010
        _text.clear_caches()


# Bound on first use (engram.core.lazy), as engram.memory's own names are: a command that needs
# one constant from here does not load the recall stages or the dense model.
_LAZY = {
    "erase_rings": "engram.memory._lifecycle",
    "erased_among": "engram.memory._lifecycle",
    "withdrawn_among": "engram.memory._withdrawn",
    "owner_of": "engram.memory._owner",
    "MAX_WORD": "engram.memory._analysis",
    "cache_sizes": "engram.memory._analysis",
    "fold": "engram.memory._analysis",
    "script_of": "engram.memory._analysis",
    "ATTESTATION_NAMESPACE": "engram.memory._attestation",
    "attestation_message": "engram.memory._attestation",
    "deferred_engine": "engram.memory._deferred",
    "check_record": "engram.memory._engine",
    "indexed_local_vector": "engram.memory._engine",
    "BLOCKED": "engram.memory._epistemology",
    "MCP_REFUSAL": "engram.memory._epistemology",
    "SIGNALS": "engram.memory._epistemology",
    "lower_bound": "engram.memory._epistemology",
    "signal_weight": "engram.memory._epistemology",
    "INDEX_VERSION": "engram.memory._index",
    "TEXT_SCHEMA": "engram.memory._index",
    "matvec": "engram.memory._index",
    "DIMS": "engram.memory._minilm",
    "ENGINE": "engram.memory._minilm",
    "MiniLMEmbedder": "engram.memory._minilm",
    "Caller": "engram.memory._owner",
    "SUBJECT_HEADER": "engram.memory._owner",
    "SUBJECT_ID_PATTERN": "engram.memory._owner",
    "check_subject": "engram.memory._owner",
    "http_caller": "engram.memory._owner",
    "subject_spec": "engram.memory._owner",
    "ring_memory_pages": "engram.memory._portable",
    "DEFAULT_TUNING": "engram.memory._recall",
    "Ranking": "engram.memory._recall",
    "common_terms_query": "engram.memory._recall",
    "fused_ranking": "engram.memory._recall",
    "Slate": "engram.memory._recall.slate",
    "slate": "engram.memory._recall.slate",
    "slate_of": "engram.memory._recall.slate",
    "TimeIntent": "engram.memory._recall.time_intent",
    "time_intent": "engram.memory._recall.time_intent",
    "RowFile": "engram.memory._rowfile",
    "DEFAULT_SEAT_FILE": "engram.memory._seat",
    "MODEL_MODULES": "engram.memory._seat",
    "SeatSource": "engram.memory._seat",
    "default_seat": "engram.memory._seat",
    "load_seat": "engram.memory._seat",
    "locate_seat": "engram.memory._seat",
    "model_missing": "engram.memory._seat",
    "LOCAL_ENGINE": "engram.memory._text",
    "local_vector": "engram.memory._text",
    "local_vectors": "engram.memory._text",
    "terms": "engram.memory._text",
    "vector_to_blob": "engram.memory._text",
    "words": "engram.memory._text",
    "seat_view": "engram.memory._view",
}
# Whole private modules named here (the static model, its distiller, the dense model).
_MODULES = {
    "minilm": "engram.memory._minilm",
    "static": "engram.memory._static",
    "static_distill": "engram.memory._static_distill",
}

__all__ = [
    "ATTESTATION_NAMESPACE",
    "BLOCKED",
    "DEFAULT_SEAT_FILE",
    "DEFAULT_TUNING",
    "DIMS",
    "ENGINE",
    "INDEX_VERSION",
    "LOCAL_ENGINE",
    "MAX_WORD",
    "MCP_REFUSAL",
    "MODEL_MODULES",
    "SIGNALS",
    "SUBJECT_HEADER",
    "SUBJECT_ID_PATTERN",
    "TEXT_SCHEMA",
    "Caller",
    "MiniLMEmbedder",
    "Ranking",
    "RowFile",
    "SeatSource",
    "Slate",
    "TimeIntent",
    "analysed_with",
    "attestation_message",
    "cache_sizes",
    "check_record",
    "check_subject",
    "common_terms_query",
    "default_seat",
    "deferred_engine",
    "erase_rings",
    "erased_among",
    "fold",
    "fused_ranking",
    "http_caller",
    "indexed_local_vector",
    "load_seat",
    "local_vector",
    "local_vectors",
    "locate_seat",
    "lower_bound",
    "matvec",
    "minilm",
    "model_missing",
    "owner_of",
    "rebuild_index",
    "ring_memory_pages",
    "script_of",
    "seat_view",
    "signal_weight",
    "slate",
    "slate_of",
    "static",
    "static_distill",
    "subject_spec",
    "terms",
    "time_intent",
    "vector_to_blob",
    "withdrawn_among",
    "words",
]

_names = _lazy_attributes(__name__, _LAZY, globals())


def _attribute(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        return _names(name)
    value = importlib.import_module(module)
    globals()[name] = value
    return value


if not TYPE_CHECKING:  # type checkers read the imports above, so a misspelt name stays an error
    __getattr__ = _attribute
