"""The LangGraph store's reads: ``GetOp``, ``SearchOp`` (listed or ranked), ``ListNamespacesOp``.

langgraph.store.base: ``search`` without a query lists a namespace prefix's items (newest first,
as LangGraph's PostgreSQL store orders them), with a query ranks them by relevance and, as
LangGraph's stores do, answers the top ``limit`` items under the prefix (those recall did not
rank after those it did); ``filter`` applies either way; ``offset``/``limit`` page; expired
items are never returned.
docs/integrations.md.
"""

# ruff: noqa: S608 - SQL text interpolates only "?" placeholder lists and fixed clauses

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from dataclasses import replace
from datetime import datetime

from langgraph.store.base import Item, ListNamespacesOp, MatchCondition, SearchItem, SearchOp

from engram.core.canonical import parse_strict
from engram.core.clock import format_instant_precise
from engram.integrations.langgraph._context import (
    Context,
    Namespace,
    item_of,
    search_item_of,
)
from engram.integrations.langgraph._filter import check_filter, matches
from engram.integrations.langgraph._tables import prefix_clause
from engram.memory import Tuning, recall
from engram.store import Row

MAX_RANKED = 1_000  # recall's largest k: a query search ranks at most this many texts
PAGE = 500
_LIVE = "(expires_at IS NULL OR expires_at > ?)"


def get(ctx: Context, namespace: Namespace, key: str, now: datetime) -> Item | None:
    with ctx.store.read() as tx:
        row = tx.one(
            "SELECT prefix, key, value, created_at, updated_at FROM langgraph_items "
            f"WHERE prefix = ? AND key = ? AND {_LIVE}",
            (ctx.stored(namespace), str(key), format_instant_precise(now)),
        )
    return None if row is None else item_of(row, ctx.scope)


def search(ctx: Context, op: SearchOp, now: datetime) -> list[SearchItem]:
    check_filter(op.filter)
    offset, limit = max(op.offset, 0), op.limit
    if limit <= 0:
        return []
    prefix = ctx.stored(op.namespace_prefix)
    if op.query and op.query.strip():
        return ranked(ctx, prefix, op.query, op.filter, offset, limit, now)
    return listed(ctx, prefix, op.filter, offset, limit, now)


def listed(
    ctx: Context,
    prefix: str,
    wanted: Mapping[str, object] | None,
    offset: int,
    limit: int,
    now: datetime,
) -> list[SearchItem]:
    """Items newest first, the filter applied page by page (memory bounded by the page)."""
    clause, params = prefix_clause("prefix", prefix)
    sql = (
        "SELECT prefix, key, value, created_at, updated_at FROM langgraph_items "
        f"WHERE {clause} AND {_LIVE} ORDER BY updated_at DESC, prefix, key LIMIT ? OFFSET ?"
    )
    moment = format_instant_precise(now)
    if not wanted:
        with ctx.store.read() as tx:
            rows = tx.execute(sql, [*params, moment, limit, offset])
        return [search_item_of(r, scope=ctx.scope) for r in rows]
    found: list[SearchItem] = []
    skipped, start = 0, 0
    with ctx.store.read() as tx:
        while len(found) < limit:
            rows = tx.execute(sql, [*params, moment, PAGE, start])
            for row in rows:
                value = parse_strict(row["value"])
                if not isinstance(value, dict) or not matches(value, wanted):
                    continue
                if skipped < offset:
                    skipped += 1
                    continue
                found.append(search_item_of(row, scope=ctx.scope))
                if len(found) == limit:
                    break
            if len(rows) < PAGE:
                break
            start += PAGE
    return found


def _rings(ctx: Context, prefix: str) -> tuple[list[str], int]:
    """The rings holding the prefix's texts, and how many stale memories they hold."""
    clause, params = prefix_clause("prefix", prefix)
    with ctx.store.read() as tx:
        rings = [
            r["ring_id"]
            for r in tx.execute(
                f"SELECT DISTINCT ring_id FROM langgraph_texts WHERE {clause}", params
            )
        ]
        if not rings:
            return [], 0
        marks = ", ".join("?" for _ in rings)
        live = tx.scalar(
            f"SELECT COUNT(DISTINCT memory_id) FROM langgraph_texts WHERE ring_id IN ({marks})",
            rings,
        )
        recorded = tx.scalar(
            f"SELECT SUM(recorded) FROM langgraph_rings WHERE ring_id IN ({marks})", rings
        )
    return rings, max(int(recorded or 0) - int(live or 0), 0)


def ranked(
    ctx: Context,
    prefix: str,
    query: str,
    wanted: Mapping[str, object] | None,
    offset: int,
    limit: int,
    now: datetime,
) -> list[SearchItem]:
    """engram's recall over the rings of the namespaces searched, best item first.

    Recall is asked for every candidate it scores (k covers the page, the stale memories and a
    margin; the view's budget never cuts), each item takes the best score of its texts (as
    LangGraph's stores take the best of an item's vectors), memories no live item maps to are
    skipped, the filter applies. Items rank by the fused score (the cross-encoder's when it
    ran), not in MMR's slate order: a store search is asked for relevance, not diversity.
    """
    rings, stale = _rings(ctx, prefix)
    need = offset + limit
    if not rings:
        return listed(ctx, prefix, wanted, offset, limit, now)  # nothing indexed: no scores
    k = MAX_RANKED if wanted else min(MAX_RANKED, 2 * need + stale + 10)
    tuning = replace(Tuning(), pool=max(Tuning().pool, k))
    result = recall(ctx.view(rings), query, k, tuning=tuning)
    reranked = result.stages.get("rerank") == "ok"
    score_of: dict[str, float] = {}
    for hit in result.hits:
        score = hit.components.get("rerank", hit.score) if reranked else hit.score
        score_of[hit.memory.id] = max(score, score_of.get(hit.memory.id, float("-inf")))
    scored: dict[tuple[str, str], tuple[float, Row]] = {}
    ids = list(score_of)
    clause, params = prefix_clause("i.prefix", prefix)
    with ctx.store.read() as tx:
        for start in range(0, len(ids), PAGE):
            chunk = ids[start : start + PAGE]
            marks = ", ".join("?" for _ in chunk)
            rows = tx.execute(
                "SELECT t.memory_id, i.prefix, i.key, i.value, i.created_at, i.updated_at "
                "FROM langgraph_texts t JOIN langgraph_items i "
                "ON i.prefix = t.prefix AND i.key = t.key "
                f"WHERE t.memory_id IN ({marks}) AND {clause} "
                "AND (i.expires_at IS NULL OR i.expires_at > ?)",
                [*chunk, *params, format_instant_precise(now)],
            )
            for row in rows:
                where = (row["prefix"], row["key"])
                score = score_of[row["memory_id"]]
                if where not in scored or scored[where][0] < score:
                    scored[where] = (score, row)
    order = sorted(scored.values(), key=lambda pair: pair[1]["updated_at"], reverse=True)
    order.sort(key=lambda pair: -pair[0])  # stable: equal scores stay newest first
    out: list[SearchItem] = []
    skipped = 0
    candidates: Iterator[tuple[float | None, Row]] = itertools.chain(
        order,
        _unranked(ctx, prefix, {(r["prefix"], r["key"]) for _, r in order}, wanted, need, now),
    )
    for found, row in candidates:
        value = parse_strict(row["value"])
        if wanted and (not isinstance(value, dict) or not matches(value, wanted)):
            continue
        if skipped < offset:
            skipped += 1
            continue
        out.append(search_item_of(row, found, ctx.scope))
        if len(out) == limit:
            break
    return out


def _unranked(
    ctx: Context,
    prefix: str,
    ranked_keys: set[tuple[str, str]],
    wanted: Mapping[str, object] | None,
    need: int,
    now: datetime,
) -> Iterator[tuple[float | None, Row]]:
    """The prefix's other live items, after the ranked ones, as LangGraph's stores return them
    (a query search answers the top ``limit`` items under the prefix, not only those that
    match): indexed items recall did not rank (score 0.0), newest first, then items put with
    ``index=False`` (score None). At most ``need`` unindexed rows are held while scanning."""
    clause, params = prefix_clause("i.prefix", prefix)
    sql = (
        "SELECT i.prefix, i.key, i.value, i.created_at, i.updated_at, "
        "EXISTS (SELECT 1 FROM langgraph_texts t WHERE t.prefix = i.prefix AND t.key = i.key) "
        "AS indexed FROM langgraph_items i "
        f"WHERE {clause} AND (i.expires_at IS NULL OR i.expires_at > ?) "
        "ORDER BY i.updated_at DESC, i.prefix, i.key LIMIT ? OFFSET ?"
    )
    moment = format_instant_precise(now)
    unindexed: list[Row] = []
    start = 0
    while True:
        with ctx.store.read() as tx:
            rows = tx.execute(sql, [*params, moment, PAGE, start])
        for row in rows:
            if (row["prefix"], row["key"]) in ranked_keys:
                continue
            if row["indexed"]:
                yield 0.0, row
            elif len(unindexed) < need and (not wanted or _matches_row(row, wanted)):
                unindexed.append(row)
        if len(rows) < PAGE:
            break
        start += PAGE
    for row in unindexed:
        yield None, row


def _matches_row(row: Row, wanted: Mapping[str, object]) -> bool:
    value = parse_strict(row["value"])
    return isinstance(value, dict) and matches(value, wanted)


def _does_match(condition: MatchCondition, namespace: Namespace) -> bool:
    path = condition.path
    if len(namespace) < len(path):
        return False
    pairs = (
        zip(namespace, path, strict=False)
        if condition.match_type == "prefix"
        else zip(reversed(namespace), reversed(path), strict=False)
    )
    return all(p == "*" or n == p for n, p in pairs)


def list_namespaces(ctx: Context, op: ListNamespacesOp, now: datetime) -> list[Namespace]:
    """Namespaces holding live items, matched, cut to ``max_depth``, sorted, paged."""
    clause, params = prefix_clause("prefix", ctx.stored(()))
    with ctx.store.read() as tx:
        rows = tx.execute(
            f"SELECT DISTINCT prefix FROM langgraph_items WHERE {clause} AND {_LIVE}",
            (*params, format_instant_precise(now)),
        )
    namespaces = [ctx.namespace(r["prefix"]) for r in rows]
    if op.match_conditions:
        namespaces = [n for n in namespaces if all(_does_match(c, n) for c in op.match_conditions)]
    if op.max_depth is not None:
        namespaces = sorted({n[: op.max_depth] for n in namespaces})
    else:
        namespaces = sorted(namespaces)
    return namespaces[op.offset : op.offset + op.limit]


__all__ = ["MAX_RANKED", "get", "list_namespaces", "listed", "ranked", "search"]
