"""The in-process retrieval index: BM25 with corpus IDF over an inverted index, and vector matrices.

Spec: engram.ote.v1 & MCP contract (Part V, Plate 03, §3.2) engram_recall ("lexical (FTS5 BM25 +
Corpus IDF) + dense"). SQLite's FTS5 does not exist on PostgreSQL and pgvector is not installed, so
both lexical and vector scoring run here, in numpy, over an index loaded from the store and kept
current through the ``memory_generation`` counter (new rows are loaded incrementally; a ring move
rebuilds). The BM25 ranking function is the one FTS5 uses (k1 = 1.2, b = 0.75, IDF = ln((N - n +
0.5) / (n + 0.5) + 1) over the whole corpus). Decisions: ``docs/spec/memory-retrieval.md``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from engram.memory import _repo
from engram.memory._text import LOCAL_DIMS, blob_to_vector, local_vector, terms
from engram.store import Row, Store

K1 = 1.2
B = 0.75
_LOAD_BATCH = 5000


def _matvec(matrix: np.ndarray, vec: np.ndarray) -> np.ndarray:
    """matrix @ vec through numpy's own SIMD loop: a single-row product is memory-bound, and
    BLAS's threads only contend for the two cores (measured: 2.5 ms vs 5-11 ms at 100k rows)."""
    out: np.ndarray = np.einsum("ij,j->i", matrix, vec.astype(np.float32))
    return out


class _Grow:
    """A float32 matrix (or vector) that grows by doubling."""

    def __init__(self, width: int | None) -> None:
        self.width = width
        shape = (1024, width) if width else (1024,)
        self.data = np.zeros(shape, dtype=np.float32)
        self.size = 0

    def append(self, row: np.ndarray | float) -> None:
        if self.size == self.data.shape[0]:
            bigger = np.zeros((self.size * 2, *self.data.shape[1:]), dtype=np.float32)
            bigger[: self.size] = self.data
            self.data = bigger
        self.data[self.size] = row
        self.size += 1

    def view(self) -> np.ndarray:
        return self.data[: self.size]


_NO_DOCS = np.zeros(0, dtype=np.int64)
_NO_TFS = np.zeros(0, dtype=np.float32)


@dataclass
class _Postings:
    """One term's postings: numpy arrays, plus Python lists of rows added since the last query.

    Pending rows are folded into the arrays when the term is next scored (or at the end of a
    sync), so millions of postings never sit in Python lists the garbage collector must walk.
    """

    docs: list[int] = field(default_factory=list)
    tfs: list[float] = field(default_factory=list)
    doc_array: np.ndarray = field(default_factory=lambda: _NO_DOCS)
    tf_array: np.ndarray = field(default_factory=lambda: _NO_TFS)

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        if self.docs:
            self.doc_array = np.concatenate([self.doc_array, np.asarray(self.docs, np.int64)])
            self.tf_array = np.concatenate([self.tf_array, np.asarray(self.tfs, np.float32)])
            self.docs.clear()
            self.tfs.clear()
        return self.doc_array, self.tf_array


class RetrievalIndex:
    """Documents in insertion order; ``ids[i]`` is the memory id of row ``i``."""

    def __init__(self, dense_engine: str | None = None) -> None:
        self.dense_engine = dense_engine
        self._reset()

    def _reset(self) -> None:
        self.ids: list[str] = []
        self.position: dict[str, int] = {}
        self.ring_codes: dict[str, int] = {}
        self.ring_of = _Grow(None)
        self.tokens = _Grow(None)
        self.doc_len = _Grow(None)
        self.prev_in_thread: list[int] = []
        self.next_in_thread: list[int] = []
        self._last_in_thread: dict[str, int] = {}
        self.postings: dict[str, _Postings] = {}
        self._touched: set[str] = set()
        # Threads as documents too: a thread's terms are the sum of its memories' terms.
        self.thread_codes: dict[str, int] = {}
        self.thread_of = _Grow(None)
        self.thread_len: list[float] = []
        self.thread_postings: dict[str, dict[int, float]] = {}
        self.local = _Grow(LOCAL_DIMS)
        self.dense: _Grow | None = None
        self.has_dense = _Grow(None)
        self.loaded_n = 0
        self.seen: tuple[int, int] = (-1, -1)
        self._neighbour_cache: tuple[np.ndarray, np.ndarray] | None = None
        self._mask_cache: dict[tuple[str, ...], tuple[int, np.ndarray]] = {}

    def __len__(self) -> int:
        return len(self.ids)

    def sync(self, store: Store) -> None:
        """Load rows written since the last sync (or everything, after ring ids moved)."""
        with store.read() as tx:
            current = _repo.generation(tx)
            if current == self.seen:
                return
            if current[1] != self.seen[1]:
                self._reset()
            while True:
                rows = _repo.index_rows_after(tx, self.loaded_n, _LOAD_BATCH)
                for row in rows:
                    vec = (
                        blob_to_vector(row["vector"], LOCAL_DIMS)
                        if row["vector"] is not None
                        else local_vector(row["text"])
                    )
                    self._add(
                        row["id"],
                        row["ring_id"],
                        row["text"],
                        row["thread"],
                        int(row["tokens"]),
                        vec,
                    )
                    self.loaded_n = int(row["n"])
                if self.dense_engine and rows:
                    self._load_dense(
                        tx_rows=_repo.dense_rows(tx, self.dense_engine, [r["id"] for r in rows])
                    )
                if len(rows) < _LOAD_BATCH:
                    break
            for term in self._touched:
                self.postings[term].arrays()
            self._touched.clear()
            self.seen = current

    def _load_dense(self, tx_rows: Sequence[Row]) -> None:
        for row in tx_rows:
            i = self.position.get(row["memory_id"])
            if i is None:
                continue
            vec = blob_to_vector(row["vector"], int(row["dims"]))
            if self.dense is None:
                self.dense = _Grow(vec.shape[0])
            if vec.shape[0] != self.dense.width:
                continue  # another dimensionality under the same engine id: not comparable
            while self.dense.size <= i:
                self.dense.append(np.zeros(vec.shape[0], dtype=np.float32))
            self.dense.data[i] = vec
            self.has_dense.data[i] = 1.0

    def _add(
        self, memory_id: str, ring_id: str, text: str, thread: str, tokens: int, vec: np.ndarray
    ) -> None:
        doc = len(self.ids)
        self._neighbour_cache = None
        self.ids.append(memory_id)
        self.position[memory_id] = doc
        self.ring_of.append(float(self.ring_codes.setdefault(ring_id, len(self.ring_codes))))
        self.tokens.append(float(tokens))
        counts = Counter(terms(text))
        self.doc_len.append(float(sum(counts.values())))
        for term, tf in counts.items():
            p = self.postings.get(term)
            if p is None:
                p = self.postings[term] = _Postings()
            p.docs.append(doc)
            p.tfs.append(float(tf))
            self._touched.add(term)
        self.local.append(vec)
        self.has_dense.append(0.0)
        if thread:
            code = self.thread_codes.setdefault(thread, len(self.thread_codes))
            if code == len(self.thread_len):
                self.thread_len.append(0.0)
            self.thread_len[code] += self.doc_len.data[doc]
            for term, tf in counts.items():
                self.thread_postings.setdefault(term, {})[code] = (
                    self.thread_postings.get(term, {}).get(code, 0.0) + tf
                )
            self.thread_of.append(float(code))
        else:
            self.thread_of.append(-1.0)
        prev = self._last_in_thread.get(thread, -1) if thread else -1
        self.prev_in_thread.append(prev)
        self.next_in_thread.append(-1)
        if prev >= 0:
            self.next_in_thread[prev] = doc
        if thread:
            self._last_in_thread[thread] = doc

    @property
    def has_threads(self) -> bool:
        return bool(self.thread_codes)

    def ring_mask(self, ring_ids: Sequence[str]) -> np.ndarray:
        """Which documents are in these rings (cached until the index grows)."""
        key = (tuple(sorted(ring_ids)), len(self.ids))
        cached = self._mask_cache.get(key[0])
        if cached is not None and cached[0] == key[1]:
            return cached[1]
        codes = [self.ring_codes[r] for r in ring_ids if r in self.ring_codes]
        mask = np.isin(self.ring_of.view(), np.asarray(codes, dtype=np.float32))
        self._mask_cache[key[0]] = (key[1], mask)
        return mask

    def bm25(
        self, query_terms: Sequence[str], weights: Sequence[float] | None = None
    ) -> np.ndarray:
        """BM25 score of every document for the query terms (corpus IDF, FTS5's constants)."""
        n_docs = len(self.ids)
        scores = np.zeros(n_docs, dtype=np.float32)
        if n_docs == 0:
            return scores
        lengths = self.doc_len.view()
        avgdl = float(lengths.mean()) or 1.0
        for qi, term in enumerate(query_terms):
            p = self.postings.get(term)
            if p is None:
                continue
            docs, tfs = p.arrays()
            df = docs.shape[0]
            idf = float(np.log((n_docs - df + 0.5) / (df + 0.5) + 1.0))
            w = 1.0 if weights is None else weights[qi]
            norm = K1 * (1.0 - B + B * lengths[docs] / avgdl)
            scores[docs] += (w * idf) * tfs * (K1 + 1.0) / (tfs + norm)
        return scores

    def thread_bm25(self, query_terms: Sequence[str]) -> np.ndarray:
        """Each memory gets the BM25 score of its whole thread (0 outside any thread)."""
        n_threads = len(self.thread_len)
        out = np.zeros(len(self.ids), dtype=np.float32)
        if n_threads == 0:
            return out
        lengths = np.asarray(self.thread_len, dtype=np.float32)
        avgdl = float(lengths.mean()) or 1.0
        per_thread = np.zeros(n_threads + 1, dtype=np.float32)  # last slot: "no thread"
        for term in query_terms:
            postings = self.thread_postings.get(term)
            if not postings:
                continue
            codes = np.fromiter(postings.keys(), dtype=np.int64, count=len(postings))
            tfs = np.fromiter(postings.values(), dtype=np.float32, count=len(postings))
            df = codes.shape[0]
            idf = float(np.log((n_threads - df + 0.5) / (df + 0.5) + 1.0))
            norm = K1 * (1.0 - B + B * lengths[codes] / avgdl)
            per_thread[codes] += idf * tfs * (K1 + 1.0) / (tfs + norm)
        codes_of = self.thread_of.view().astype(np.int64)
        codes_of[codes_of < 0] = n_threads
        out[:] = per_thread[codes_of]
        return out

    def local_scores(self, query_vec: np.ndarray) -> np.ndarray:
        """Cosine of every memory's local vector with the query's (rows are unit length)."""
        return _matvec(self.local.view(), query_vec)

    def dense_scores(self, query_vec: np.ndarray) -> np.ndarray | None:
        if self.dense is None or self.dense.width != query_vec.shape[0]:
            return None
        out = np.full(len(self.ids), -1.0, dtype=np.float32)
        m = self.dense.view()
        out[: m.shape[0]] = _matvec(m, query_vec)
        mask = self.has_dense.view() > 0
        out[~mask] = -1.0
        return out

    def neighbours(self) -> tuple[np.ndarray, np.ndarray]:
        """Index of the previous and next document in the same thread (-1 for none)."""
        if self._neighbour_cache is None:
            self._neighbour_cache = (
                np.asarray(self.prev_in_thread, dtype=np.int64),
                np.asarray(self.next_in_thread, dtype=np.int64),
            )
        return self._neighbour_cache


__all__ = ["RetrievalIndex"]
