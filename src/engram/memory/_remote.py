"""Remote retrieval stages: OpenAI-compatible ``/v1/embeddings`` and a ``/v1/rerank`` cross-encoder.

Spec: engram.ote.v1 & MCP contract (Part V, Plate 03, §3.1) ``[retrieval]`` (embedding_provider
"remote-openai" and reranker provider "vllm-rerank" require an explicit endpoint or THALAMUS_URL;
there is no default URL) and §3.2 engram_recall. These clients raise
:class:`~engram.errors.RemoteError` on any failure; the engine decides whether that degrades
(``fail_open = true``) or fails the call.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # httpx costs 70 ms to import, numpy 60-150: only a remote stage needs them
    import httpx
    import numpy as np

    from engram.fetch import Fetcher

from engram.errors import ManifestError, RemoteError
from engram.memory._manifest import OteSpec


class Embedder(Protocol):
    """Dense vectors for texts, tagged with the engine id they came from."""

    @property
    def engine(self) -> str: ...

    def embed(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Queries' vectors (never stored). They must be comparable with ``embed_in_context``'s
        by cosine; an embedder may compute them another way (the bundled model uses its int8
        query graph, docs/spec/memory-retrieval.md "The query graph")."""
        ...

    def embed_in_context(
        self, texts: Sequence[str], contexts: Sequence[Sequence[str]]
    ) -> list[np.ndarray]:
        """Memories' vectors, the ones the store keeps: each text read after its context, the
        earlier memories of its thread, oldest first (docs/spec/memory-retrieval.md "Dense
        context"; empty contexts for memories without one). The text itself is never cut for
        its context."""
        ...


# A remote model's window is unknown here: the context sent before a memory is its last
# 2,000 characters (about 500 tokens), so the memory itself keeps the endpoint's room.
REMOTE_CONTEXT_CHARS = 2000


def passage(text: str, context: Sequence[str], limit: int = REMOTE_CONTEXT_CHARS) -> str:
    """``text`` after the last ``limit`` characters of its context, one memory a line."""
    before = "\n".join(context)[-limit:] if context else ""
    return f"{before}\n{text}" if before else text


class CrossEncoder(Protocol):
    """Relevance scores of documents for a query, one per document, in order."""

    def rerank(self, query: str, documents: Sequence[str]) -> list[float]: ...


def _base(url: str) -> str:
    url = url.rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


def _post(fetcher: Fetcher, url: str, body: dict[str, Any]) -> Any:
    """The JSON answer of a model endpoint, read under the fetch discipline
    (docs/spec/limits.md §1): a total deadline of ``timeout_seconds``, a byte cap, one line."""
    from engram.fetch import FetchError, post_json

    try:
        return post_json(fetcher, url, body)
    except FetchError as e:
        raise RemoteError(f"{url}: {e.message}") from e


class RemoteEmbedder:
    """``POST {endpoint}/v1/embeddings`` with ``{"model", "input", "dimensions"}``."""

    def __init__(
        self,
        endpoint: str,
        model: str,
        dims: int,
        timeout: float,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.url = _base(endpoint) + "/v1/embeddings"
        self.model, self.dims = model, dims
        from engram.fetch import model_fetcher

        self._client = model_fetcher(self.url, timeout, transport)

    @property
    def engine(self) -> str:
        return f"remote-openai:{self.model}:{self.dims}"

    def embed_in_context(
        self, texts: Sequence[str], contexts: Sequence[Sequence[str]]
    ) -> list[np.ndarray]:
        return self.embed([passage(t, c) for t, c in zip(texts, contexts, strict=True)])

    def embed(self, texts: Sequence[str]) -> list[np.ndarray]:
        if not texts:
            return []
        import numpy as np  # `engram mcp` builds its stages before any tool runs (issue 33)

        body = _post(
            self._client,
            self.url,
            {"model": self.model, "input": list(texts), "dimensions": self.dims},
        )
        try:
            items = sorted(body["data"], key=lambda item: int(item["index"]))
            vectors = [np.asarray(item["embedding"], dtype=np.float32) for item in items]
        except (KeyError, TypeError, ValueError) as e:
            raise RemoteError(f"{self.url}: not an OpenAI embeddings response") from e
        if len(vectors) != len(texts):
            raise RemoteError(f"{self.url}: {len(vectors)} embeddings for {len(texts)} inputs")
        out: list[np.ndarray] = []
        for vec in vectors:
            if vec.ndim != 1 or vec.shape[0] < self.dims or not np.all(np.isfinite(vec)):
                raise RemoteError(f"{self.url}: an embedding is not {self.dims} finite numbers")
            vec = vec[: self.dims]  # Matryoshka models may ignore "dimensions": truncate
            norm = float(np.linalg.norm(vec))
            out.append(vec / norm if norm > 0 else vec)
        return out

    def close(self) -> None:
        self._client.close()


class RemoteReranker:
    """``POST {endpoint}/v1/rerank``: ``{"model", "query", "documents"}`` (vLLM / Jina shape)."""

    def __init__(
        self,
        endpoint: str,
        model: str,
        timeout: float,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.url = _base(endpoint) + "/v1/rerank"
        self.model = model
        from engram.fetch import model_fetcher

        self._client = model_fetcher(self.url, timeout, transport)

    def rerank(self, query: str, documents: Sequence[str]) -> list[float]:
        if not documents:
            return []
        body = _post(
            self._client,
            self.url,
            {"model": self.model, "query": query, "documents": list(documents)},
        )
        scores = [math.nan] * len(documents)
        try:
            for item in body["results"]:
                scores[int(item["index"])] = float(item["relevance_score"])
        except (KeyError, TypeError, ValueError, IndexError) as e:
            raise RemoteError(f"{self.url}: not a rerank response") from e
        if any(not math.isfinite(s) for s in scores):
            raise RemoteError(f"{self.url}: a document got no finite relevance score")
        return scores

    def close(self) -> None:
        self._client.close()


def remote_stages(
    spec: OteSpec,
    thalamus_url: str | None,
    transport: httpx.BaseTransport | None = None,
) -> tuple[Any, RemoteReranker | None]:
    """Build the dense stage and cross-encoder a manifest asks for: the bundled MiniLM model
    (``embedding_provider = "minilm-l6-v2"``) or its static table (``"minilm-l6-v2-static"``),
    or remote clients whose endpoint is explicit or
    THALAMUS_URL. Both have ``close()``.

    ``thalamus_url`` is passed in by the caller (the CLI reads the environment, not this module).
    """
    r = spec.retrieval
    embedder: Any = None
    reranker = None
    if r.embedding_provider == "minilm-l6-v2-static":
        from engram.memory._static import StaticEmbedder

        embedder = StaticEmbedder()
    elif r.local_dense:
        from engram.memory._minilm import MiniLMEmbedder

        embedder = MiniLMEmbedder()
    if r.dense_enabled:
        url = r.embedding_endpoint or thalamus_url
        if not url:
            raise ManifestError(
                f"{spec.source}: retrieval.embedding_provider: 'remote-openai' "
                "needs retrieval.embedding_endpoint or THALAMUS_URL (no default)"
            )
        embedder = RemoteEmbedder(
            url, r.embedding_model, r.embedding_dims, r.timeout_seconds, transport
        )
    if r.reranker.enabled:
        url = r.reranker.endpoint or thalamus_url
        if not url:
            raise ManifestError(
                f"{spec.source}: retrieval.reranker.enabled: the reranker needs "
                "retrieval.reranker.endpoint or THALAMUS_URL (no default)"
            )
        reranker = RemoteReranker(url, r.reranker.model, r.timeout_seconds, transport)
    return embedder, reranker


__all__ = ["CrossEncoder", "Embedder", "RemoteEmbedder", "RemoteReranker", "remote_stages"]
