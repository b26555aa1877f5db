"""The cheap dense stage: a static embedding distilled from the bundled all-MiniLM-L6-v2.

Spec: engram.ote.v1 & MCP contract (Plate 03) §3.2 engram_record / engram_recall ("dense
neural"); §3.1 ``[retrieval].embedding_provider``, where engram adds ``"minilm-l6-v2-static"``.
The table holds one vector per word piece of the model's vocabulary: the model's own output for
that piece alone, reduced by PCA and weighted down for frequent pieces (the model2vec recipe,
Tulkens & van Dongen 2024), computed once from the int8 ONNX model by ``python -m
engram.memory._static_distill`` and shipped in ``_data/minilm-l6-v2-static/`` with its SOURCE.
A text's vector is the mean of its pieces' rows, L2-normalised: no forward pass, no onnxruntime,
microseconds per memory. Decisions and figures: ``docs/spec/memory-retrieval.md`` "Dense: the
static table".
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from engram import DISTRIBUTION
from engram.errors import MissingDependency

_DATA = Path(__file__).parent / "_data"
TABLE = _DATA / "minilm-l6-v2-static" / "table.npy"
SCALES = TABLE.with_name("scales.npy")
_TOKENIZER = _DATA / "all-minilm-l6-v2" / "tokenizer.json"
DIMS = 128
# A changed table is another vector space, so another engine id (the index keeps vectors per id).
ENGINE = "minilm-l6-v2-static-1:128"
# A thread's earlier memories, together, weigh this much of the memory's own pieces
# (docs/spec/memory-retrieval.md "Dense context"); only their last characters are read.
CONTEXT_WEIGHT = 0.5
_CONTEXT_CHARS = 4096
_CHUNK = 512  # texts summed at a time
_BULK_PIECES = 4096  # from this many pieces in one call, the float32 copy pays (16 MB, ~20 ms)


def _starts(lengths: np.ndarray) -> np.ndarray:
    starts: np.ndarray = np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(np.int64)
    return starts


class StaticEmbedder:
    """Mean of distilled word-piece vectors. Safe to share between threads (read-only)."""

    def __init__(self, table: Path = TABLE, engine: str = ENGINE) -> None:
        """``table``: int8 rows (one per word piece) with ``scales.npy`` beside it, or float
        rows alone (the distillation experiments)."""
        try:
            from tokenizers import Tokenizer
        except ImportError as e:
            raise MissingDependency(
                "the minilm-l6-v2-static dense stage needs tokenizers: "
                f"pip install '{DISTRIBUTION}[server]'"
            ) from e
        self._engine = engine
        # Memory-mapped: a cold recall reads only the rows of its query's pieces.
        self._table: np.ndarray = np.load(table, mmap_mode="r")
        scales = table.with_name("scales.npy")
        self._scales: np.ndarray = (
            np.load(scales).astype(np.float32)
            if self._table.dtype == np.int8 and scales.is_file()
            else np.ones(self._table.shape[0], dtype=np.float32)
        )
        self._tokenizer: Any = Tokenizer.from_file(str(_TOKENIZER))
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()
        unk = self._tokenizer.token_to_id("[UNK]")
        if unk is not None:  # an unknown piece says nothing about the meaning
            self._scales[int(unk)] = 0.0
        self._encode_batch = getattr(
            self._tokenizer, "encode_batch_fast", self._tokenizer.encode_batch
        )
        self._floats: np.ndarray | None = None  # the whole table as float32, for bulk writes
        self._floats_lock = threading.Lock()

    @property
    def engine(self) -> str:
        return self._engine

    def embed(self, texts: Sequence[str]) -> list[np.ndarray]:
        return self.embed_in_context(texts, [()] * len(texts))

    def embed_in_context(
        self, texts: Sequence[str], contexts: Sequence[Sequence[str]]
    ) -> list[np.ndarray]:
        """Each text's pieces at weight 1, its context's (the thread's earlier memories, oldest
        first) sharing ``CONTEXT_WEIGHT`` times the text's weight: the text is never cut or
        outweighed by its context."""
        own = [e.ids for e in self._encode(list(texts))]
        vectors, known = self._sums(own)
        joined = ["\n".join(c)[-_CONTEXT_CHARS:] for c in contexts]
        with_context = [i for i, c in enumerate(joined) if c]
        if with_context:
            before = [e.ids for e in self._encode([joined[i] for i in with_context])]
            sums, known_before = self._sums(before)
            # The context as a whole weighs CONTEXT_WEIGHT of the text, however long it is.
            share = CONTEXT_WEIGHT * np.maximum(known[with_context], 1.0)
            share /= np.maximum(known_before, 1.0)
            vectors[with_context] += sums * share[:, None]
        norms = np.sqrt(np.einsum("bd,bd->b", vectors, vectors))[:, None]
        return list(vectors / np.maximum(norms, 1e-12))

    def _encode(self, texts: list[str]) -> list[Any]:
        if len(texts) == 1:  # a query: no hand-off to the tokenizer's thread pool
            return [self._tokenizer.encode(texts[0], add_special_tokens=False)]
        # The fast variant skips character offsets, which nothing here reads.
        encoded: list[Any] = self._encode_batch(texts, add_special_tokens=False)
        return encoded

    def _sums(self, pieces: Sequence[list[int]]) -> tuple[np.ndarray, np.ndarray]:
        """Each list's sum of rows, and how many of its pieces are known (not [UNK])."""
        lengths = np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces))
        flat = np.fromiter(itertools.chain.from_iterable(pieces), np.int64, int(lengths.sum()))
        out = np.zeros((len(pieces), self._table.shape[1]), dtype=np.float32)
        counts = np.zeros(len(pieces), dtype=np.float32)
        filled = np.flatnonzero(lengths)  # reduceat cannot sum an empty segment: skip them
        starts = _starts(lengths)
        if filled.size:
            counts[filled] = np.add.reduceat(self._scales[flat] != 0, starts[filled])
        # In chunks, so the gathered rows stay in cache and memory stays bounded; one sum per
        # text without a BLAS product (the OpenBLAS lesson, _index.matvec).
        for first in range(0, filled.size, _CHUNK):
            texts = filled[first : first + _CHUNK]
            lo, hi = int(starts[texts[0]]), int(starts[texts[-1]] + lengths[texts[-1]])
            rows = self._rows(flat[lo:hi])
            out[texts] = np.add.reduceat(rows, starts[texts] - lo, axis=0)
        return out, counts

    def _rows(self, ids: np.ndarray) -> np.ndarray:
        """Float rows of ``ids``, scaled: from the mapped int8 table for a few (a query), from
        a float32 copy made once for many (a bulk write)."""
        if self._floats is None and ids.size < _BULK_PIECES:
            rows: np.ndarray = self._table[ids].astype(np.float32) * self._scales[ids][:, None]
            return rows
        with self._floats_lock:
            if self._floats is None:
                self._floats = np.asarray(self._table, dtype=np.float32) * self._scales[:, None]
        bulk: np.ndarray = self._floats[ids]
        return bulk

    def close(self) -> None:
        """Nothing to release (kept for the remote clients' interface)."""


__all__ = ["DIMS", "ENGINE", "StaticEmbedder"]
