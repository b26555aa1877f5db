"""``recall``: hybrid retrieval over the seat's mounted rings, cut to its token budget.

Spec: engram.ote.v1 & MCP contract (Part V, Plate 03, §3.2) engram_recall: "Two-stage hybrid lexical
(FTS5 BM25 + Corpus IDF) + dense neural (/v1/embeddings) + cross-encoder reranked (/v1/rerank)
retrieval with MMR slate diversity", and §3.1 keyspace_budget_tokens / budget_share_pct / fail_open.

Recall ranks a bounded candidate set from the derived index (``_index``): the best memories by
BM25 from tantivy, the members of the best threads, their thread neighbours and, on small
stores, the best by vector scans; so its cost does not grow with N. Stages: (1) BM25 (corpus
IDF), smoothed with the neighbouring memories of the same thread and the thread's own BM25,
because an answer often sits next to the words that find it; (2) local-hash-128 cosine; (3)
dense cosine when an embedder is configured (the bundled MiniLM model or a remote endpoint); (4)
author and entity boosts; (4b) when the query names a time, a prior from when each memory
happened (``time_intent``, ``time_prior``); (5) fusion by score (rank fusion lost on LoCoMo);
(6) the optional cross-encoder reorders the first ``candidates_k`` (plus ``guaranteed_dense_k``
dense hits that fusion left out); (7) MMR; (8) the token budget, split across mounts by
``budget_share_pct`` (the unassigned share is a pool any mount may use). Remote failures degrade
to the local stages when ``fail_open`` is true and say so in ``stages``; otherwise they raise
RemoteError. The index handle is synced and read under ``engine.lock``, so one engine serves
many threads; the remote calls (query embedding, cross-encoder) run outside it. Decisions:
``docs/spec/memory-retrieval.md``.

Package layout: ``tuning`` (the constants), ``search`` (tantivy searches), ``stages`` (the
candidate set and one function per stage, each returning a typed column and a status),
``fusion`` (the columns summed into one ranking), ``slate`` (cross-encoder, MMR, budget, and
``recall``), ``time_intent`` (what a query says about time) and ``time_prior`` (its stage).
"""

from __future__ import annotations

from engram.memory._recall.fusion import Ranking, fused_ranking
from engram.memory._recall.search import common_terms_query, query_tags
from engram.memory._recall.slate import STAGES, recall
from engram.memory._recall.tuning import DEFAULT_TUNING, Tuning

__all__ = [
    "DEFAULT_TUNING",
    "STAGES",
    "Ranking",
    "Tuning",
    "common_terms_query",
    "fused_ranking",
    "query_tags",
    "recall",
]
