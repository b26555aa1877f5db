"""The default dense stage: a static embedding distilled from the bundled all-MiniLM-L6-v2.

Spec: engram.ote.v1 & MCP contract (Plate 03) §3.2 engram_record / engram_recall ("dense
neural"); §3.1 ``[retrieval].embedding_provider``, where engram adds ``"minilm-l6-v2-static"``.
The table holds one vector per word piece of the model's vocabulary: the model's own output for
that piece alone, reduced by PCA and weighted down for frequent pieces (the model2vec recipe,
Tulkens & van Dongen 2024), computed once from the int8 ONNX model by
``scripts/distill_static.py`` and shipped in ``_data/minilm-l6-v2-static/`` with its SOURCE. A
text's vector is the mean of its pieces' rows, L2-normalised: no forward pass, no onnxruntime,
microseconds per memory. Decisions and figures: ``docs/spec/memory-retrieval.md`` "Dense: the
static default".
"""

from __future__ import annotations

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
        self._scales: np.ndarray | None = (
            np.load(scales) if self._table.dtype == np.int8 and scales.is_file() else None
        )
        self._tokenizer: Any = Tokenizer.from_file(str(_TOKENIZER))
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()
        unk = self._tokenizer.token_to_id("[UNK]")
        self._unk = -1 if unk is None else int(unk)

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
        joined = ["\n".join(c)[-_CONTEXT_CHARS:] for c in contexts]
        own = self._tokenizer.encode_batch(list(texts), add_special_tokens=False)
        with_context = [i for i, c in enumerate(joined) if c]
        before = (
            self._tokenizer.encode_batch(
                [joined[i] for i in with_context], add_special_tokens=False
            )
            if with_context
            else []
        )
        pieces: list[list[int]] = [e.ids for e in own]
        weights: list[list[float]] = [[1.0] * len(p) for p in pieces]
        for i, e in zip(with_context, before, strict=True):
            if not e.ids:
                continue
            # The context as a whole weighs CONTEXT_WEIGHT of the text, however long it is.
            share = CONTEXT_WEIGHT * max(len(pieces[i]), 1) / len(e.ids)
            pieces[i] = [*e.ids, *pieces[i]]
            weights[i] = [share] * len(e.ids) + weights[i]
        return list(self._pool(pieces, weights))

    def _pool(self, pieces: Sequence[list[int]], weights: Sequence[list[float]]) -> np.ndarray:
        lengths = np.fromiter((len(p) for p in pieces), dtype=np.int64, count=len(pieces))
        flat = np.fromiter((i for p in pieces for i in p), dtype=np.int64, count=int(lengths.sum()))
        w = np.fromiter((x for ws in weights for x in ws), dtype=np.float32, count=flat.size)
        w[flat == self._unk] = 0.0  # an unknown piece says nothing about the meaning
        out = np.zeros((len(pieces), self._table.shape[1]), dtype=np.float32)
        filled = np.flatnonzero(lengths)
        if filled.size:
            if self._scales is not None:
                w = w * self._scales[flat]
            rows = np.asarray(self._table[flat], dtype=np.float32) * w[:, None]
            starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))[filled]
            # One weighted sum per text, without a BLAS product (the OpenBLAS lesson,
            # _index.matvec); texts without pieces stay zero.
            out[filled] = np.add.reduceat(rows, starts, axis=0)
        norms = np.sqrt(np.einsum("bd,bd->b", out, out))[:, None]
        result: np.ndarray = out / np.maximum(norms, 1e-12)
        return result

    def close(self) -> None:
        """Nothing to release (kept for the remote clients' interface)."""


__all__ = ["DIMS", "ENGINE", "StaticEmbedder"]
