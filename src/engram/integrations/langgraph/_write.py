"""The LangGraph store's writes: ``PutOp`` (a value, or None to delete), TTLs, ring compaction.

langgraph.store.base ``PutOp``: ``index`` is None (the store's fields), False (not searchable
by query) or a list of JSON paths; ``ttl`` is minutes from the last access. Each indexed text
becomes an engram memory (kind ``langgraph_item``) in the namespace's ring; the item row, its
texts and the ring's count change in one transaction after the memories are recorded (a crash
in between leaves only stale memories, which search skips). A value whose ``messages`` member
is a list of chat messages is a conversation: each turn is its own memory, with its speaker and
time (engram.memory.record_conversation), in a thread of its own. docs/integrations.md.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta

from langgraph.store.base import PutOp, get_text_at_path, tokenize_path

from engram.core.canonical import JsonObject, check_i_json
from engram.core.clock import format_instant_precise
from engram.core.jsonio import dumps_text
from engram.integrations.langgraph._context import KIND, Context, ring_id_for
from engram.memory import Memory, RecordInput, get_memory, record_conversation, record_many
from engram.store import Row, Tx

MAX_TEXT = 100_000  # engram's longest memory: a longer indexed text is cut, for the index only


def item_texts(value: Mapping[str, object], paths: Sequence[str]) -> list[tuple[str, str]]:
    """(path label, text) for each text to index, labelled as LangGraph's stores label them
    (``path``, or ``path.i`` when a path yields several)."""
    out: list[tuple[str, str]] = []
    for path in paths:
        texts = get_text_at_path(value, path if path == "$" else tokenize_path(path))
        for i, text in enumerate(texts):
            if text.strip():
                out.append((f"{path}.{i}" if len(texts) > 1 else path, text[:MAX_TEXT]))
    return out


def _rings(tx: Tx, prefixes: Iterable[str]) -> dict[str, str]:
    """Each namespace's current ring, created (generation 0) the first time it is written."""
    out: dict[str, str] = {}
    for prefix in prefixes:
        tx.execute(
            "INSERT INTO langgraph_rings (prefix, ring_id, generation, recorded) "
            "VALUES (?, ?, 0, 0) ON CONFLICT (prefix) DO NOTHING",
            (prefix, ring_id_for(prefix, 0)),
        )
        row = tx.one("SELECT ring_id FROM langgraph_rings WHERE prefix = ?", (prefix,))
        assert row is not None
        out[prefix] = row["ring_id"]
    return out


Write = tuple[str, PutOp, JsonObject, list[tuple[str, str]]]
MESSAGES = "messages"  # the member that makes a value a conversation


def conversation_of(value: Mapping[str, object], paths: Sequence[str]) -> list[object] | None:
    """The chat messages of a value indexed whole (``$``) or at ``messages``, when its
    ``messages`` member is a non-empty list of objects each with a ``role`` or a ``type``."""
    messages = value.get(MESSAGES)
    if not any(p == "$" or p == MESSAGES or p.startswith(MESSAGES + "[") for p in paths):
        return None
    if not isinstance(messages, list) or not messages:
        return None
    if not all(isinstance(m, dict) and ("role" in m or "type" in m) for m in messages):
        return None
    said = {"user", "assistant", "human", "ai"}  # a chat with nobody speaking is just a value
    if any(m.get("role") in said or m.get("type") in said for m in messages):
        return list(messages)
    return None


def _writes(ctx: Context, puts: Sequence[PutOp]) -> tuple[list[Write], dict[int, list[object]]]:
    """The puts' values and texts; and, by position in the list, the conversations among them
    (whose other paths are indexed as usual, ``$`` and ``messages`` by their turns)."""
    writes: list[Write] = []
    chats: dict[int, list[object]] = {}
    for op in puts:
        if op.value is None:
            continue
        # LangGraph types a value dict[str, Any]: it is JSON once check_i_json has passed.
        value: JsonObject = dict(op.value)
        check_i_json(value, "value")
        paths = [] if op.index is False else (op.index or ctx.fields)
        messages = conversation_of(value, paths)
        if messages is not None:
            chats[len(writes)] = messages
            paths = [p for p in paths if p != "$" and not p.startswith(MESSAGES)]
        writes.append((ctx.stored(op.namespace), op, value, item_texts(value, paths)))
    return writes, chats


def _thread(prefix: str, key: str) -> str:
    """The thread of an item's conversation: ``langgraph:<namespace>/<key>``, or a digest of
    them when that is longer than a thread may be."""
    name = f"langgraph:{prefix}/{key}"
    if len(name) <= 200:
        return name
    return "langgraph:" + hashlib.sha256(f"{prefix}\x1f{key}".encode()).hexdigest()[:32]


def _record_chats(
    ctx: Context, writes: list[Write], chats: dict[int, list[object]], ring_of: dict[str, str]
) -> tuple[dict[str, int], dict[tuple[str, str, str], str]]:
    """Record each conversation's turns in its namespace's ring: how many memories each
    namespace gained, and each turn's memory by (namespace, key, ``messages.<i>``)."""
    gained: dict[str, int] = {}
    memory_of: dict[tuple[str, str, str], str] = {}
    for position, messages in chats.items():
        prefix, op, _, _ = writes[position]
        result = record_conversation(
            ctx.view([ring_of[prefix]]),
            messages,
            thread=_thread(prefix, str(op.key)),
            ring=ring_of[prefix],
            kind=KIND,
        )
        for m in result.messages:
            if m.memory_id is not None:  # skipped messages (system, tool) have none
                memory_of[(prefix, str(op.key), f"{MESSAGES}.{m.index}")] = m.memory_id
        gained[prefix] = gained.get(prefix, 0) + result.counts()["recorded"]
    return gained, memory_of


def put(ctx: Context, puts: Sequence[PutOp], now: datetime) -> None:
    """Apply puts and deletes (one per key: the batch kept the last)."""
    writes, chats = _writes(ctx, puts)
    with ctx.store.transaction() as tx:
        wanted = {w[0] for i, w in enumerate(writes) if w[3] or i in chats}
        ring_of = _rings(tx, sorted(wanted))
    created, memory_of = _record_chats(ctx, writes, chats, ring_of)
    for prefix, ring_id in ring_of.items():
        entries = [
            (str(op.key), path, text)
            for p, op, _, texts in writes
            if p == prefix
            for path, text in texts
        ]
        if not entries:  # a namespace written only with conversations
            continue
        recorded = record_many(
            ctx.view([ring_id]),
            [RecordInput(text=text, kind=KIND, ring=ring_id) for _, _, text in entries],
        )
        for (key, path, _), result in zip(entries, recorded, strict=True):
            memory_of[(prefix, key, path)] = result.memory.id
        created[prefix] = created.get(prefix, 0) + sum(r.created for r in recorded)
    paths_of: dict[tuple[str, str], list[str]] = {}
    for prefix, key, path in memory_of:
        paths_of.setdefault((prefix, key), []).append(path)
    moment = format_instant_precise(now)
    with ctx.store.transaction() as tx:
        for op in puts:
            prefix, key = ctx.stored(op.namespace), str(op.key)
            tx.execute("DELETE FROM langgraph_texts WHERE prefix = ? AND key = ?", (prefix, key))
            if op.value is None:
                tx.execute(
                    "DELETE FROM langgraph_items WHERE prefix = ? AND key = ?", (prefix, key)
                )
        for prefix, op, value, _ in writes:
            key = str(op.key)
            expires = None
            if op.ttl is not None:
                expires = format_instant_precise(now + timedelta(minutes=op.ttl))
            tx.execute(
                "INSERT INTO langgraph_items (prefix, key, value, created_at, updated_at, "
                "expires_at, ttl_minutes) VALUES (?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (prefix, key) DO UPDATE SET value = excluded.value, "
                "updated_at = excluded.updated_at, expires_at = excluded.expires_at, "
                "ttl_minutes = excluded.ttl_minutes",
                (prefix, key, dumps_text(value), moment, moment, expires, op.ttl),
            )
            tx.execute_many(
                "INSERT INTO langgraph_texts (prefix, key, path, memory_id, ring_id) "
                "VALUES (?, ?, ?, ?, ?)",
                [
                    (prefix, key, path, memory_of[(prefix, key, path)], ring_of[prefix])
                    for path in paths_of.get((prefix, key), [])
                ],
            )
        for prefix, count in created.items():
            if count:
                tx.execute(
                    "UPDATE langgraph_rings SET recorded = recorded + ? "
                    "WHERE prefix = ? AND ring_id = ?",
                    (count, prefix, ring_of[prefix]),
                )
    for prefix in sorted({ctx.stored(op.namespace) for op in puts}):
        compact(ctx, prefix)


def compact(ctx: Context, prefix: str) -> bool:
    """Move a namespace whose ring holds more stale than live memories (and more than
    ``compact_after``) to a fresh ring, recording only its live texts there."""
    with ctx.store.read() as tx:
        ring = tx.one(
            "SELECT ring_id, generation, recorded FROM langgraph_rings WHERE prefix = ?",
            (prefix,),
        )
        if ring is None:
            return False
        live = int(
            tx.scalar(
                "SELECT COUNT(DISTINCT memory_id) FROM langgraph_texts "
                "WHERE prefix = ? AND ring_id = ?",
                (prefix, ring["ring_id"]),
            )
            or 0
        )
        if int(ring["recorded"]) - live <= max(ctx.compact_after, live):
            return False
        texts = tx.execute(
            "SELECT key, path, memory_id FROM langgraph_texts WHERE prefix = ?", (prefix,)
        )
    generation = int(ring["generation"]) + 1
    fresh = ring_id_for(prefix, generation)
    contents: list[tuple[Row, Memory]] = []
    for row in texts:
        memory = get_memory(ctx.engine, row["memory_id"])
        if memory is not None:
            contents.append((row, memory))
    # A conversation's turns keep their speaker, time and thread in the fresh ring.
    recorded = record_many(
        ctx.view([fresh]),
        [
            RecordInput(
                text=m.text, kind=KIND, ring=fresh, provenance=m.provenance, thread=m.thread
            )
            for _, m in contents
        ],
    )
    with ctx.store.transaction() as tx:
        moved = tx.execute(
            "UPDATE langgraph_rings SET ring_id = ?, generation = ?, recorded = ? "
            "WHERE prefix = ? AND generation = ? RETURNING prefix",
            (fresh, generation, sum(r.created for r in recorded), prefix, generation - 1),
        )
        if not moved:
            return False  # another writer compacted it first; its ring stands
        for (row, _), result in zip(contents, recorded, strict=True):
            tx.execute(
                "UPDATE langgraph_texts SET memory_id = ?, ring_id = ? "
                "WHERE prefix = ? AND key = ? AND path = ? AND memory_id = ?",
                (result.memory.id, fresh, prefix, row["key"], row["path"], row["memory_id"]),
            )
    return True


def refresh_ttl(ctx: Context, keys: set[tuple[str, str]], now: datetime) -> None:
    """Push back the expiry of items read with ``refresh_ttl`` (those that have a TTL)."""
    with ctx.store.transaction() as tx:
        for prefix, key in sorted(keys):
            row = tx.one(
                "SELECT ttl_minutes FROM langgraph_items WHERE prefix = ? AND key = ?",
                (prefix, key),
            )
            if row is None or row["ttl_minutes"] is None:
                continue
            expires = now + timedelta(minutes=float(row["ttl_minutes"]))
            tx.execute(
                "UPDATE langgraph_items SET expires_at = ? WHERE prefix = ? AND key = ?",
                (format_instant_precise(expires), prefix, key),
            )


def sweep(ctx: Context, now: datetime) -> int:
    """Delete the items whose TTL has passed (every read already hides them)."""
    with ctx.store.transaction() as tx:
        gone = tx.execute(
            "DELETE FROM langgraph_items WHERE expires_at IS NOT NULL AND expires_at <= ? "
            "RETURNING prefix, key",
            (format_instant_precise(now),),
        )
        tx.execute_many(
            "DELETE FROM langgraph_texts WHERE prefix = ? AND key = ?",
            [(r["prefix"], r["key"]) for r in gone],
        )
    return len(gone)


__all__ = ["MAX_TEXT", "compact", "item_texts", "put", "refresh_ttl", "sweep"]
