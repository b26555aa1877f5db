"""The slate: the fused ranking, reordered by the cross-encoder when one is configured,
diversified by MMR and cut to the seat's token budget; and ``recall``, which composes them.

Only the local stages run under ``engine.lock``; the dense query vector is fetched before it and
the cross-encoder called after it, so a slow endpoint stalls only its own recall.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from engram.errors import Forbidden, InvalidRequest, RemoteError
from engram.memory import _repo
from engram.memory._engine import MemoryEngine
from engram.memory._index import View
from engram.memory._manifest import Mount
from engram.memory._models import Memory, RecallHit, RecallResult
from engram.memory._recall.fusion import Parts, fused_ranking
from engram.memory._recall.stages import OK, embed_query
from engram.memory._recall.time_intent import time_intent
from engram.memory._recall.time_prior import TimeQuery
from engram.memory._recall.tuning import DEFAULT_TUNING, Tuning
from engram.memory._rowfile import RowFile
from engram.memory._supersede import hidden_as_of
from engram.memory._withdrawn import superseded_ns, withdrawn_ns

STAGES = ("lexical", "local_vector", "dense", "rerank")
DISABLED = "disabled"


@dataclass
class Ranked:
    """What recall takes out from under ``engine.lock``: the fused ranking, the cross-encoder's
    candidates and their texts, and the view MMR and the budget read (a view never changes:
    a newer index state is a new view)."""

    order: list[int]
    parts: Parts
    rerank: bool  # the cross-encoder stage is configured and enabled
    head: list[int]  # cross-encoder candidates (empty when the stage is disabled)
    head_texts: list[str]
    view: View
    local: np.ndarray | None
    exact: int | None  # the ranking's exact prefix (None: all of it)
    stages: dict[str, str]  # the local stages' statuses

    def local_rows(self, docs: Sequence[int]) -> np.ndarray:
        """The local vectors of these documents (read during ranking when it could)."""
        if self.local is None:
            return self.view.local.rows(docs)
        row_of = self.parts.row_of
        return np.asarray(self.local[[row_of[d] for d in docs]], dtype=np.float32)


@dataclass(frozen=True)
class Slate:
    """The ranked, budgeted slate as (row number n, index document) pairs, the per-stage scores
    of its documents, the tokens it uses, and every stage's status but the dense one's (fetched
    before ranking)."""

    picked: list[tuple[int, int]]
    parts: Parts
    used: int
    stages: dict[str, str]


def rank(
    engine: MemoryEngine,
    query: str,
    mounts: Sequence[Mount],
    query_vector: np.ndarray | None,
    tuning: Tuning,
    exact_head: bool = True,
    when: TimeQuery | None = None,
) -> Ranked:
    """The local stages and the cross-encoder's candidate texts; call under engine.lock.
    ``exact_head``: only the first ``mmr_depth`` places need be exact (``fused_ranking``)."""
    view = engine.index.sync(engine.store)
    cfg = engine.spec.retrieval.reranker
    rerank_on = engine.reranker is not None and cfg.enabled
    ranking = fused_ranking(
        engine,
        query,
        [m.ring_id for m in mounts],
        tuning,
        query_vector=query_vector,
        view=view,
        # Only MMR's head must be exact when no cross-encoder reads further (the slate checks
        # that its walk stayed in it, else ranks again in full: ``slate``).
        exact_head=None if rerank_on or not exact_head else tuning.mmr_depth,
        when=when,
    )
    order, dense = ranking.order, ranking.dense
    stages = dict(ranking.stages)
    head: list[int] = []
    texts: list[str] = []
    if not rerank_on:
        stages["rerank"] = DISABLED
    else:
        head = order[: cfg.candidates_k]
        if dense is not None and cfg.guaranteed_dense_k > 0:
            # The best dense hits get a seat at the cross-encoder even if fusion ranked them low.
            best_dense = sorted(dense, key=lambda d: -dense[d])[: cfg.guaranteed_dense_k]
            head += [d for d in best_dense if d not in head and dense[d] > 0.0]
        ns = [int(view.arrays["n"][d]) for d in head]
        with engine.store.read() as tx:
            found = _repo.texts_by_n(tx, ns)
        texts = [found[n] for n in ns]
    return Ranked(
        order, ranking.parts, rerank_on, head, texts, view, ranking.local, ranking.exact, stages
    )


def rerank(engine: MemoryEngine, query: str, ranked: Ranked) -> tuple[list[int], str]:
    """The order reordered by the cross-encoder (a remote call: never under engine.lock), with
    the stage's status; the cross-encoder's scores join the candidates' parts."""
    order, head = ranked.order, ranked.head
    if engine.reranker is None or not ranked.rerank:
        return order, DISABLED
    try:
        scores = engine.reranker.rerank(query, ranked.head_texts)
    except RemoteError as e:
        if not engine.spec.retrieval.fail_open:
            raise
        return order, f"degraded: {e.message}"
    for d, s in zip(head, scores, strict=True):
        ranked.parts[d]["rerank"] = s
    reranked = [d for _, d in sorted(zip(scores, head, strict=True), key=lambda p: -p[0])]
    return reranked + [d for d in order if d not in set(head)], OK


def mmr(
    local: RowFile | np.ndarray,
    order: list[int],
    relevance_of: dict[int, float] | None,
    tuning: Tuning,
    picks: int | None = None,
) -> list[int]:
    """Maximal marginal relevance over the head of the ranking (local vectors as similarity).

    Relevance is the fused score over the best one (or rank-based after a cross-encoder);
    near-duplicates of a chosen memory (cosine >= duplicate_cosine) go behind everything else.
    ``picks`` stops the greedy choice early (recall needs k plus a margin for the budget's
    skips); the rest of the head follows in ranked order, near-duplicates last.
    ``local`` is the index's vector file, or the head's rows already read.
    """
    depth = min(len(order), tuning.mmr_depth)
    if depth <= 1 or tuning.mmr_lambda >= 1.0:
        return order
    head = np.asarray(order[:depth], dtype=np.int64)
    vecs = local.rows(head) if isinstance(local, RowFile) else local[:depth]
    relevance: np.ndarray
    if relevance_of is None:
        relevance = 1.0 - np.arange(depth, dtype=np.float32) / depth  # rank-based, in (0, 1]
    else:
        raw = np.asarray([relevance_of[d] for d in order[:depth]], dtype=np.float32)
        relevance = raw / (float(raw.max()) or 1.0)
    chosen: list[int] = []
    best_sim = np.zeros(depth, dtype=np.float32)
    taken = np.zeros(depth, dtype=np.float32)  # -inf once chosen
    base = tuning.mmr_lambda * relevance
    diversity = 1 - tuning.mmr_lambda
    duplicate = tuning.duplicate_cosine
    score = np.empty(depth, dtype=np.float32)
    near = np.empty(depth, dtype=bool)
    # The same float32 operations as ``score = base - diversity * best_sim; score[near] -= 2``
    # in the same order, written into buffers with ``out=``/``where=``: the loop runs k + 10
    # times per recall and the temporaries and boolean indexing were most of its cost.
    for _ in range(depth if picks is None else min(depth, picks)):
        np.multiply(best_sim, diversity, out=score)
        np.subtract(base, score, out=score)
        np.greater_equal(best_sim, duplicate, out=near)
        np.subtract(score, 2.0, out=score, where=near)
        np.add(score, taken, out=score)
        pick = int(score.argmax())
        chosen.append(pick)
        taken[pick] = -np.inf
        # Only the chosen rows of the similarity matrix are ever read: one row per pick, as an
        # ``einsum`` (not ``vecs @ vecs.T``: that goes through OpenBLAS, which waits for a second
        # thread the other, busy core cannot run; issue 16: 14.0 ms vs 0.98 ms recall p50
        # under load; and the whole 60 x 60 einsum cost more than these k + 10 rows).
        np.maximum(best_sim, np.einsum("id,d->i", vecs, vecs[pick]), out=best_sim)
    rest: list[int] = np.flatnonzero(taken == 0).tolist()
    last = (best_sim >= duplicate).tolist()
    rest.sort(key=last.__getitem__)  # stable: rank order, near-duplicates last
    return [order[i] for i in chosen + rest] + order[depth:]


def slate(
    engine: MemoryEngine,
    query: str,
    k: int,
    mounts: Sequence[Mount],
    tuning: Tuning,
    query_vector: np.ndarray | None,
    hidden: frozenset[int] = frozenset(),
    when: TimeQuery | None = None,
) -> Slate:
    """The slate of ``k``, leaving out the rows numbered in ``hidden``."""
    # A slate of k needs about k places of MMR's head; a larger k ranks everything exactly.
    head_only = k + 10 <= tuning.mmr_depth
    while True:
        found = slate_of(engine, query, k, mounts, tuning, query_vector, head_only, hidden, when)
        if found is not None:
            return found
        head_only = False  # the budget walked past the exact head: rank again, in full


def slate_of(
    engine: MemoryEngine,
    query: str,
    k: int,
    mounts: Sequence[Mount],
    tuning: Tuning,
    query_vector: np.ndarray | None,
    head_only: bool,
    hidden: frozenset[int] = frozenset(),
    when: TimeQuery | None = None,
) -> Slate | None:
    """``slate``'s work; None when the ranking was exact only in its head and the budget's
    walk would have read past it."""
    with engine.lock:  # the index handle is shared by every thread using this engine
        ranked = rank(engine, query, mounts, query_vector, tuning, head_only, when)
    order, rerank_status = rerank(engine, query, ranked)
    stages = {**ranked.stages, "rerank": rerank_status}
    fused_of = (
        None if rerank_status == OK else ranked.parts.column("fused", order[: tuning.mmr_depth])
    )
    order = mmr(ranked.local_rows(order[: tuning.mmr_depth]), order, fused_of, tuning, k + 10)
    picked = budgeted(engine, mounts, ranked.view, order, k, ranked.exact, hidden)
    if picked is None:
        return None
    return Slate(picked[0], ranked.parts, picked[1], stages)


def budgeted(
    engine: MemoryEngine,
    mounts: Sequence[Mount],
    view: View,
    order: list[int],
    k: int,
    exact: int | None,
    hidden: frozenset[int],
) -> tuple[list[tuple[int, int]], int] | None:
    """The first ``k`` of ``order`` that fit the token budget, split across mounts by
    ``budget_share_pct`` (the unassigned share is a pool any mount may use), and the tokens
    they use; None when the walk would read past the ranking's exact prefix ``exact``."""
    spec = engine.spec
    budget = spec.seat.keyspace_budget_tokens
    left = {m.ring_id: budget * m.budget_share_pct // 100 for m in mounts}
    pool = budget - sum(budget * m.budget_share_pct // 100 for m in spec.mounts)
    picked: list[tuple[int, int]] = []
    used = 0
    ring_of, tokens, n_of = view.arrays["ring"], view.arrays["tokens"], view.arrays["n"]
    limit = len(order) if exact is None else exact
    for at, doc in enumerate(order):
        if len(picked) == k:
            break
        if at >= limit:
            return None
        if hidden and int(n_of[doc]) in hidden:
            continue
        ring_id = view.ring_names[int(ring_of[doc])]
        cost = int(tokens[doc])
        if left.get(ring_id, 0) >= cost:
            left[ring_id] -= cost
        elif pool >= cost:
            pool -= cost
        else:
            continue
        picked.append((int(n_of[doc]), doc))
        used += cost
    return picked, used


def recall(
    engine: MemoryEngine,
    query: str,
    k: int = 10,
    *,
    rings: Sequence[str] | None = None,
    tuning: Tuning = DEFAULT_TUNING,
    as_of: datetime | None = None,
) -> RecallResult:
    """The best memories for ``query`` from the seat's mounted rings, within its token budget;
    ``as_of``: from the memories that were current at that instant (recorded by then, not yet
    superseded; docs/spec/memory-ownership.md "Supersede and as-of")."""
    if not isinstance(query, str) or not query.strip():
        raise InvalidRequest("query: expected a non-empty string")
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 1000:
        raise InvalidRequest(f"k: expected an integer from 1 to 1000, got {k!r}")
    spec = engine.spec
    mounts = list(spec.mounts)
    if rings is not None:
        chosen = [spec.mount_for(r) for r in rings]
        missing = [r for r, m in zip(rings, chosen, strict=True) if m is None]
        if missing:
            raise Forbidden(f"ring {missing[0]!r} is not mounted by {spec.seat.seat_id}")
        mounts = [m for m in chosen if m is not None]
    # Relative times ("last week") are read against the recall instant.
    intent = time_intent(query, as_of if as_of is not None else engine.clock.now())
    back: frozenset[int] = frozenset()
    with engine.store.read() as tx:
        # Forgotten and retracted memories are kept, never served: left out of the slate
        # itself, so they take no place of k and none of the token budget.
        ring_ids = [m.ring_id for m in mounts]
        hidden = withdrawn_ns(tx, ring_ids) if as_of is None else hidden_as_of(tx, ring_ids, as_of)
        if intent is not None and intent.previous:
            # "What was it before": the memories superseded by then were current once.
            back = superseded_ns(tx, ring_ids, as_of or engine.clock.now())
    when = None if intent is None else TimeQuery(intent, back)
    dense = embed_query(engine, query)
    chosen_slate = slate(engine, query, k, mounts, tuning, dense.vector, hidden - back, when)
    picked, parts = chosen_slate.picked, chosen_slate.parts
    with engine.store.read() as tx:
        found: dict[int, Memory] = _repo.memories_by_n(tx, [n for n, _ in picked])
    hits = tuple(RecallHit(found[n], parts[d]["fused"], parts[d]) for n, d in picked if n in found)
    stages = {"dense": dense.status, **chosen_slate.stages}
    return RecallResult(
        query,
        hits,
        {s: stages.get(s, DISABLED) for s in STAGES},
        any(v.startswith("degraded") for v in stages.values()),
        spec.seat.keyspace_budget_tokens,
        chosen_slate.used,
    )
