"""Recall's fusion constants."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Tuning:
    """Fusion constants (chosen on the LoCoMo development half; see bench/bench_locomo.py)."""

    pool: int = 200  # candidates kept after fusion, and from each exact vector scan
    lexical_k: int = 100  # candidates by BM25 from the index (200: same LoCoMo figures, slower)
    context: float = 0.5  # share of a thread neighbour's BM25 added to a memory's own
    context_window: int = 2  # neighbours on each side; each further step halves the share
    thread: float = 0.8  # weight of the whole thread's BM25 (scaled to the best memory's)
    threads_k: int = 20  # best threads whose members join the candidates
    thread_members: int = 200  # at most this many members of one thread join
    w_local: float = 0.1  # local-hash-128 cosine, added to the normalised lexical score
    w_dense: float = 0.5  # dense cosine over the best candidate's, added likewise
    dense_context: float = 0.0  # share of the thread neighbours' (±1) dense cosine (0: lost)
    dense_floor: float = 0.0  # cosines up to this count nothing (tried 0.2-0.3: lost)
    dense_scaled: bool = True  # dense cosine over its best candidate's, as lexical is
    dense_thread: float = 0.6  # cosine with the thread's centroid (below SCAN_LIMIT memories)
    w_author: float = 0.3  # the query names the memory's author (provenance author/speaker)
    w_entity: float = 0.2  # the query names one of the memory's entities
    mmr_lambda: float = 0.85
    mmr_depth: int = 60
    duplicate_cosine: float = 0.9  # a candidate this close to a chosen one goes to the back
    # The exact common-terms rewrite of the BM25 query (``common_terms_query``); it changes
    # how fast the lexical top is found, never what it is. A share above 1 turns it off.
    common_term_share: float = 0.1  # a term in more than this share of the documents is common
    common_rare_share: float = 0.05  # ... and the rare terms' postings must stay under this share
    common_min_docs: int = 50_000  # below this many documents the rewrite does not pay
    common_bound_share: float = 0.8  # skip it when the common terms' bound nears a rare term's
    # The time stage (queries that name a time only): the fused score is multiplied by
    # 1 + the sum of these shares (``time_prior``). Window and order: the best of 8 settings on
    # LoCoMo's tuning folds, the smallest among equals (bench/README.md "locomo").
    w_time_window: float = 0.5  # inside the window the query names (fading outside it)
    w_time_order: float = 0.25  # newest (or oldest) among the candidates, for "latest"/"first"
    w_superseded: float = 1.0  # a superseded memory, for "before"/"previously"


DEFAULT_TUNING = Tuning()
