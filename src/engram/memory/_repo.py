"""SQL for the memory tables (portable subset: runs unchanged on SQLite and PostgreSQL).

Spec: engram.ote.v1 & MCP contract (Part V, Plate 03, §3.2); tables in :mod:`engram.memory._schema`.
"""

# ruff: noqa: S608 - SQL text interpolates only "?" placeholder lists and constant table names

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engram.core.canonical import parse_strict
from engram.core.jsonio import dumps_text
from engram.memory._models import Memory, MemoryStatus, OutcomeEvent
from engram.store import Row, Tx, rows_where_in

MEMORY_COLUMNS = (
    "id, ring, ring_id, kind, text, entities, provenance, thread, seat_id, tokens, "
    "alpha, beta, status, graduated_at, origin, created_at"
)


def _json_column(text: str) -> Any:
    # Most memories carry no provenance and many no entities (recall reads ten rows a query).
    if text == "{}":
        return {}
    if text == "[]":
        return []
    return parse_strict(text)


def to_memory(row: Row) -> Memory:
    return Memory(
        id=row["id"],
        ring=row["ring"],
        ring_id=row["ring_id"],
        kind=row["kind"],
        text=row["text"],
        entities=tuple(_json_column(row["entities"])),
        provenance=_json_column(row["provenance"]),
        thread=row["thread"],
        seat_id=row["seat_id"],
        tokens=int(row["tokens"]),
        alpha=float(row["alpha"]),
        beta=float(row["beta"]),
        status=MemoryStatus(row["status"]),
        graduated_at=row["graduated_at"],
        origin=row["origin"],
        created_at=row["created_at"],
    )


_COLUMN_NAMES = tuple(c.strip() for c in MEMORY_COLUMNS.split(","))


def memory_from_row(row: Sequence[Any]) -> Memory:
    """A Memory from an insert row in MEMORY_COLUMNS order (no round trip to the database)."""
    return to_memory(dict(zip(_COLUMN_NAMES, row, strict=True)))


def bump(tx: Tx, *, rebuilt: bool = False) -> None:
    """Mark the memory tables changed; done first in a write so writers serialise (PostgreSQL)."""
    if rebuilt:
        tx.execute(
            "UPDATE memory_generation SET rebuilt = rebuilt + 1, appended = appended + 1 "
            "WHERE id = 1"
        )
    else:
        tx.execute("UPDATE memory_generation SET appended = appended + 1 WHERE id = 1")


def generation(tx: Tx) -> tuple[int, int]:
    row = tx.one("SELECT appended, rebuilt FROM memory_generation WHERE id = 1")
    return (0, 0) if row is None else (int(row["appended"]), int(row["rebuilt"]))


def change_sequence(tx: Tx) -> tuple[str, int, int, int]:
    """(database instance id, rebuilt, appended, highest n): what the derived index checks."""
    # One statement, not two: every recall asks (on PostgreSQL each is a network round trip).
    row = tx.one(
        "SELECT instance, appended, rebuilt, (SELECT MAX(n) FROM memory_items) AS top "
        "FROM memory_generation WHERE id = 1"
    )
    if row is None:
        return ("", 0, 0, 0)
    top = row["top"]
    return (str(row["instance"]), int(row["rebuilt"]), int(row["appended"]), int(top or 0))


def _add_to(tx: Tx, table: str, key: str, column: str, deltas: dict[tuple[str, str], int]) -> None:
    """Add ``deltas`` per (ring_id, key) to a count table, in the caller's transaction."""
    rows = [(r, k, d) for (r, k), d in sorted(deltas.items()) if d]
    if rows:
        tx.execute_many(
            f"INSERT INTO {table} (ring_id, {key}, {column}) VALUES (?, ?, ?) "
            f"ON CONFLICT (ring_id, {key}) DO UPDATE SET "
            f"{column} = {table}.{column} + excluded.{column}",
            rows,
        )


def add_counts(tx: Tx, deltas: dict[tuple[str, str], int]) -> None:
    """Add to ``memory_counts`` per (ring_id, status)."""
    _add_to(tx, "memory_counts", "status", "memories", deltas)


def add_dense_counts(tx: Tx, deltas: dict[tuple[str, str], int]) -> None:
    """Add to ``memory_dense_counts`` per (ring_id, engine)."""
    _add_to(tx, "memory_dense_counts", "engine", "vectors", deltas)


def add_event_count(tx: Tx, ring_id: str, oracle: str, events: int, reverify: int) -> None:
    tx.execute(
        "INSERT INTO memory_event_counts (ring_id, oracle, events, reverify) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (ring_id, oracle) DO UPDATE SET "
        "events = memory_event_counts.events + excluded.events, "
        "reverify = memory_event_counts.reverify + excluded.reverify",
        (ring_id, oracle, events, reverify),
    )


def ids_in(tx: Tx, table: str, column: str, ids: Sequence[str]) -> set[str]:
    """Which of ``ids`` stand in ``table.column``."""
    return {
        str(r["v"]) for r in rows_where_in(tx, f"SELECT {column} AS v FROM {table}", column, ids)
    }


def existing_ids(tx: Tx, ids: Sequence[str]) -> set[str]:
    return ids_in(tx, "memory_items", "id", ids)


def insert_memories(tx: Tx, rows: Sequence[tuple[Any, ...]]) -> None:
    """Insert new rows in MEMORY_COLUMNS order (``updated_at`` equals ``created_at``) and count
    them per ring and status."""
    tx.execute_many(
        f"INSERT INTO memory_items ({MEMORY_COLUMNS}, updated_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [(*r, r[-1]) for r in rows],
    )
    deltas: dict[tuple[str, str], int] = {}
    for r in rows:
        key = (r[2], str(r[12]))  # ring_id, status
        deltas[key] = deltas.get(key, 0) + 1
    add_counts(tx, deltas)


def insert_new_memories(tx: Tx, rows: Sequence[tuple[Any, ...]]) -> set[str]:
    """Insert the rows whose id is not stored yet (MEMORY_COLUMNS order, distinct ids), count
    them, and return the ids inserted.

    One ``INSERT ... ON CONFLICT DO NOTHING`` instead of looking every id up first: content ids
    are random keys, and at 1M memories the look-up walked the id index a second time for
    every row (a bulk import is almost always all new). Writers hold the generation row
    (``bump``) first, so the rows above the highest ``n`` before the insert are this batch's.
    """
    if not rows:
        return set()
    before = int(tx.scalar("SELECT MAX(n) FROM memory_items") or 0)
    tx.execute_many(
        f"INSERT INTO memory_items ({MEMORY_COLUMNS}, updated_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (id) DO NOTHING",
        [(*r, r[-1]) for r in rows],
    )
    added = int(tx.scalar("SELECT COUNT(*) FROM memory_items WHERE n > ?", (before,)) or 0)
    if added == len(rows):
        new = list(rows)
        ids = {str(r[0]) for r in rows}
    else:
        ids = {
            str(r["id"]) for r in tx.execute("SELECT id FROM memory_items WHERE n > ?", (before,))
        }
        new = [r for r in rows if r[0] in ids]
    deltas: dict[tuple[str, str], int] = {}
    for r in new:
        key = (r[2], str(r[12]))  # ring_id, status
        deltas[key] = deltas.get(key, 0) + 1
    add_counts(tx, deltas)
    return ids


def insert_dense(
    tx: Tx, rows: Sequence[tuple[str, str, int, bytes]], ring_of: dict[str, str]
) -> None:
    """Dense vectors of new memories (``ring_of``: memory id -> ring id, for the counts)."""
    tx.execute_many(
        "INSERT INTO memory_dense_vectors (memory_id, engine, dims, vector) "
        "VALUES (?, ?, ?, ?) ON CONFLICT (memory_id, engine) DO NOTHING",
        rows,
    )
    deltas: dict[tuple[str, str], int] = {}
    for r in rows:
        key = (ring_of[r[0]], r[1])
        deltas[key] = deltas.get(key, 0) + 1
    add_dense_counts(tx, deltas)


def get_memory(tx: Tx, memory_id: str) -> Memory | None:
    row = tx.one(
        f"SELECT {MEMORY_COLUMNS} FROM memory_items WHERE id = ?",
        (memory_id,),
    )
    return None if row is None else to_memory(row)


def get_memories(tx: Tx, ids: Sequence[str]) -> dict[str, Memory]:
    select = f"SELECT {MEMORY_COLUMNS} FROM memory_items"
    return {row["id"]: to_memory(row) for row in rows_where_in(tx, select, "id", ids)}


def memories_in_rings(tx: Tx, ring_ids: Sequence[str]) -> list[Memory]:
    if not ring_ids:
        return []
    marks = ", ".join("?" for _ in ring_ids)
    return [
        to_memory(r)
        for r in tx.execute(
            f"SELECT {MEMORY_COLUMNS} FROM memory_items WHERE ring_id IN ({marks}) ORDER BY n",
            list(ring_ids),
        )
    ]


def ring_memories_after(tx: Tx, ring_id: str, after_n: int, limit: int) -> list[Row]:
    """A page of one ring's memory rows (``n`` and MEMORY_COLUMNS) above ``after_n``, by ``n``."""
    # ``ring_id || ''`` keeps SQLite off the (ring_id, status) index, which is not in ``n``
    # order: through it every page sorted the whole rest of the ring (100,000 memories in
    # 100 pages: 2 s); walking the primary key from ``after_n`` stops at ``limit`` (0.06 s).
    return tx.execute(
        f"SELECT n, {MEMORY_COLUMNS} FROM memory_items WHERE n > ? AND ring_id || '' = ? "
        "ORDER BY n LIMIT ?",
        (after_n, ring_id, limit),
    )


def index_rows_after(tx: Tx, after_n: int, limit: int) -> list[Row]:
    """Rows the retrieval index loads: order, ring, text, thread, tokens, entities, provenance."""
    return tx.execute(
        "SELECT n, ring_id, text, thread, tokens, entities, provenance "
        "FROM memory_items WHERE n > ? ORDER BY n LIMIT ?",
        (after_n, limit),
    )


def memories_by_n(tx: Tx, ns: Sequence[int]) -> dict[int, Memory]:
    """Memories by their row number ``n`` (what the index hands back)."""
    select = f"SELECT n, {MEMORY_COLUMNS} FROM memory_items"
    return {int(row["n"]): to_memory(row) for row in rows_where_in(tx, select, "n", ns)}


def texts_by_n(tx: Tx, ns: Sequence[int]) -> dict[int, str]:
    select = "SELECT n, text FROM memory_items"
    return {int(row["n"]): row["text"] for row in rows_where_in(tx, select, "n", ns)}


def dense_rows_after(tx: Tx, engine: str, after_n: int, upto_n: int) -> list[Row]:
    """Dense vectors of one engine for memories with after_n < n <= upto_n, by n."""
    return tx.execute(
        "SELECT m.n, d.dims, d.vector FROM memory_dense_vectors d "
        "JOIN memory_items m ON m.id = d.memory_id "
        "WHERE d.engine = ? AND m.n > ? AND m.n <= ? ORDER BY m.n",
        (engine, after_n, upto_n),
    )


_EVENT_COLUMNS = (
    "memory_id, decision_id, seat_id, signal, oracle, delta_alpha, delta_beta, attested, "
    "verified, principal, key_fingerprint, signature, reverify, origin, created_at"
)


def events_for(tx: Tx, memory_id: str) -> list[OutcomeEvent]:
    return [
        OutcomeEvent.from_row(r)
        for r in tx.execute(
            f"SELECT {_EVENT_COLUMNS} FROM memory_outcomes WHERE memory_id = ? ORDER BY n",
            (memory_id,),
        )
    ]


def events_for_many(tx: Tx, memory_ids: Sequence[str]) -> dict[str, list[OutcomeEvent]]:
    """:func:`events_for` of many memories, 500 to a query: the ones that have events."""
    out: dict[str, list[OutcomeEvent]] = {}
    select = f"SELECT {_EVENT_COLUMNS} FROM memory_outcomes"
    for r in rows_where_in(tx, select, "memory_id", memory_ids, order_by="n"):
        out.setdefault(r["memory_id"], []).append(OutcomeEvent.from_row(r))
    return out


def event(tx: Tx, memory_id: str, decision_id: str) -> OutcomeEvent | None:
    row = tx.one(
        f"SELECT {_EVENT_COLUMNS} FROM memory_outcomes WHERE memory_id = ? AND decision_id = ?",
        (memory_id, decision_id),
    )
    return None if row is None else OutcomeEvent.from_row(row)


def add_event(tx: Tx, e: OutcomeEvent, ring_id: str, now: str | None) -> None:
    """Record one event and apply it to the memory's posterior: the one place both happen.

    ``now`` stamps ``updated_at`` (None keeps it: imports do not touch a memory's time).
    """
    tx.execute(
        f"INSERT INTO memory_outcomes ({_EVENT_COLUMNS}) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            e.memory_id,
            e.decision_id,
            e.seat_id,
            e.signal,
            e.oracle,
            e.delta_alpha,
            e.delta_beta,
            int(e.attested),
            int(e.verified),
            e.principal,
            e.key_fingerprint,
            e.signature,
            int(e.reverify),
            e.origin,
            e.created_at,
        ),
    )
    apply_posterior(tx, e.memory_id, e.delta_alpha, e.delta_beta, now)
    add_event_count(tx, ring_id, e.oracle, 1, int(e.reverify))


def apply_posterior(tx: Tx, memory_id: str, d_alpha: float, d_beta: float, now: str | None) -> None:
    """Beta(α, β) += (Δα, Δβ): the conjugate update, written once."""
    if now is None:
        tx.execute(
            "UPDATE memory_items SET alpha = alpha + ?, beta = beta + ? WHERE id = ?",
            (d_alpha, d_beta, memory_id),
        )
    else:
        tx.execute(
            "UPDATE memory_items SET alpha = alpha + ?, beta = beta + ?, updated_at = ? "
            "WHERE id = ?",
            (d_alpha, d_beta, now, memory_id),
        )


def mark_verified(tx: Tx, memory_id: str, decision_id: str, principal: str, fp: str) -> None:
    tx.execute(
        "UPDATE memory_outcomes SET verified = 1, principal = ?, key_fingerprint = ? "
        "WHERE memory_id = ? AND decision_id = ?",
        (principal, fp, memory_id, decision_id),
    )


def lock_memory(tx: Tx, memory_id: str) -> None:
    """Take the memory row lock for the rest of ``tx`` (SQLite holds the write lock already)."""
    tx.execute("UPDATE memory_items SET updated_at = updated_at WHERE id = ?", (memory_id,))


def set_status(
    tx: Tx, memory: Memory, status: MemoryStatus, graduated_at: str | None, now: str
) -> None:
    """Move a memory to ``status`` and move it between the status counts."""
    tx.execute(
        "UPDATE memory_items SET status = ?, graduated_at = ?, updated_at = ? WHERE id = ?",
        (status.value, graduated_at, now, memory.id),
    )
    add_counts(tx, {(memory.ring_id, memory.status.value): -1, (memory.ring_id, status.value): 1})


def graduated_in_rings(tx: Tx, ring_ids: Sequence[str]) -> list[Memory]:
    """Graduated memories of these rings (few: graduation needs attested evidence)."""
    if not ring_ids:
        return []
    marks = ", ".join("?" for _ in ring_ids)
    return [
        to_memory(r)
        for r in tx.execute(
            f"SELECT {MEMORY_COLUMNS} FROM memory_items WHERE ring_id IN ({marks}) "
            "AND status = 'graduated' ORDER BY n",
            list(ring_ids),
        )
    ]


def json_text(value: Any) -> str:
    # Most memories carry no provenance and many no entities: skip the encoder for those.
    if type(value) is dict and not value:
        return "{}"
    if type(value) is list and not value:
        return "[]"
    return dumps_text(value)


__all__ = [
    "MEMORY_COLUMNS",
    "add_counts",
    "add_dense_counts",
    "add_event",
    "add_event_count",
    "apply_posterior",
    "bump",
    "change_sequence",
    "dense_rows_after",
    "event",
    "events_for",
    "existing_ids",
    "generation",
    "get_memories",
    "get_memory",
    "graduated_in_rings",
    "index_rows_after",
    "insert_dense",
    "insert_memories",
    "insert_new_memories",
    "json_text",
    "lock_memory",
    "mark_verified",
    "memories_by_n",
    "memories_in_rings",
    "memory_from_row",
    "ring_memories_after",
    "set_status",
    "texts_by_n",
    "to_memory",
]
