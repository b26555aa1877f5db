"""SQL for the memory tables (portable subset: runs unchanged on SQLite and PostgreSQL).

Spec: engram.ote.v1 & MCP contract (Part V, Plate 03, §3.2); tables in :mod:`engram.memory._schema`.
"""

# ruff: noqa: S608 - SQL text interpolates only "?" placeholder lists and constant table names

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engram.core.canonical import parse_strict
from engram.core.jsonio import dumps_text
from engram.memory._models import Memory
from engram.store import Row, Tx

MEMORY_COLUMNS = (
    "id, ring, ring_id, kind, text, entities, provenance, thread, seat_id, tokens, "
    "alpha, beta, status, graduated_at, origin, created_at"
)


def to_memory(row: Row) -> Memory:
    return Memory(
        id=row["id"],
        ring=row["ring"],
        ring_id=row["ring_id"],
        kind=row["kind"],
        text=row["text"],
        entities=tuple(parse_strict(row["entities"])),
        provenance=parse_strict(row["provenance"]),
        thread=row["thread"],
        seat_id=row["seat_id"],
        tokens=int(row["tokens"]),
        alpha=float(row["alpha"]),
        beta=float(row["beta"]),
        status=row["status"],
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


def existing_ids(tx: Tx, ids: Sequence[str]) -> set[str]:
    found: set[str] = set()
    for start in range(0, len(ids), 500):
        chunk = list(ids[start : start + 500])
        marks = ", ".join("?" for _ in chunk)
        found.update(
            r["id"] for r in tx.execute(f"SELECT id FROM memory_items WHERE id IN ({marks})", chunk)
        )
    return found


def insert_memories(tx: Tx, rows: Sequence[tuple[Any, ...]]) -> None:
    """Insert rows in MEMORY_COLUMNS order (``updated_at`` equals ``created_at``)."""
    tx.execute_many(
        f"INSERT INTO memory_items ({MEMORY_COLUMNS}, updated_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [(*r, r[-1]) for r in rows],
    )


def insert_vectors(tx: Tx, rows: Sequence[tuple[str, str, int, bytes]]) -> None:
    tx.execute_many(
        "INSERT INTO memory_vectors (memory_id, engine, dims, vector) "
        "VALUES (?, ?, ?, ?) ON CONFLICT (memory_id) DO NOTHING",
        rows,
    )


def insert_dense(tx: Tx, rows: Sequence[tuple[str, str, int, bytes]]) -> None:
    tx.execute_many(
        "INSERT INTO memory_dense_vectors (memory_id, engine, dims, vector) "
        "VALUES (?, ?, ?, ?) ON CONFLICT (memory_id, engine) DO NOTHING",
        rows,
    )


def get_memory(tx: Tx, memory_id: str) -> Memory | None:
    row = tx.one(
        f"SELECT {MEMORY_COLUMNS} FROM memory_items WHERE id = ?",
        (memory_id,),
    )
    return None if row is None else to_memory(row)


def get_memories(tx: Tx, ids: Sequence[str]) -> dict[str, Memory]:
    out: dict[str, Memory] = {}
    for start in range(0, len(ids), 500):
        chunk = list(ids[start : start + 500])
        marks = ", ".join("?" for _ in chunk)
        for row in tx.execute(
            f"SELECT {MEMORY_COLUMNS} FROM memory_items WHERE id IN ({marks})",
            chunk,
        ):
            out[row["id"]] = to_memory(row)
    return out


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


def index_rows_after(tx: Tx, after_n: int, limit: int) -> list[Row]:
    """Rows the retrieval index loads: text, ring, thread, order and the local vector."""
    return tx.execute(
        "SELECT m.n, m.id, m.ring_id, m.text, m.thread, m.tokens, v.vector "
        "FROM memory_items m LEFT JOIN memory_vectors v ON v.memory_id = m.id "
        "WHERE m.n > ? ORDER BY m.n LIMIT ?",
        (after_n, limit),
    )


def dense_rows(tx: Tx, engine: str, ids: Sequence[str]) -> list[Row]:
    out: list[Row] = []
    for start in range(0, len(ids), 500):
        chunk = list(ids[start : start + 500])
        marks = ", ".join("?" for _ in chunk)
        out += tx.execute(
            "SELECT memory_id, dims, vector FROM memory_dense_vectors "
            f"WHERE engine = ? AND memory_id IN ({marks})",
            [engine, *chunk],
        )
    return out


def events_for(tx: Tx, memory_id: str) -> list[Row]:
    return tx.execute(
        "SELECT memory_id, decision_id, seat_id, signal, oracle, delta_alpha, delta_beta, "
        "attested, verified, principal, key_fingerprint, signature, reverify, origin, created_at "
        "FROM memory_outcomes WHERE memory_id = ? ORDER BY n",
        (memory_id,),
    )


def event(tx: Tx, memory_id: str, decision_id: str) -> Row | None:
    return tx.one(
        "SELECT memory_id, decision_id, seat_id, signal, oracle, delta_alpha, delta_beta, "
        "attested, verified, principal, key_fingerprint, signature, reverify, origin, created_at "
        "FROM memory_outcomes WHERE memory_id = ? AND decision_id = ?",
        (memory_id, decision_id),
    )


def insert_event(tx: Tx, e: dict[str, Any]) -> None:
    tx.execute(
        "INSERT INTO memory_outcomes (memory_id, decision_id, seat_id, signal, oracle, "
        "delta_alpha, delta_beta, attested, verified, principal, key_fingerprint, signature, "
        "reverify, origin, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            e["memory_id"],
            e["decision_id"],
            e["seat_id"],
            e["signal"],
            e["oracle"],
            e["delta_alpha"],
            e["delta_beta"],
            int(e["attested"]),
            int(e["verified"]),
            e["principal"],
            e["key_fingerprint"],
            e["signature"],
            int(e["reverify"]),
            e["origin"],
            e["created_at"],
        ),
    )


def lock_memory(tx: Tx, memory_id: str) -> None:
    """Take the memory row lock for the rest of ``tx`` (SQLite holds the write lock already)."""
    tx.execute("UPDATE memory_items SET updated_at = updated_at WHERE id = ?", (memory_id,))


def set_posterior(tx: Tx, memory_id: str, alpha: float, beta: float, now: str) -> None:
    tx.execute(
        "UPDATE memory_items SET alpha = ?, beta = ?, updated_at = ? WHERE id = ?",
        (alpha, beta, now, memory_id),
    )


def set_status(tx: Tx, memory_id: str, status: str, graduated_at: str | None, now: str) -> None:
    tx.execute(
        "UPDATE memory_items SET status = ?, graduated_at = ?, updated_at = ? WHERE id = ?",
        (status, graduated_at, now, memory_id),
    )


def json_text(value: Any) -> str:
    # Most memories carry no provenance and many no entities: skip the encoder for those.
    if type(value) is dict and not value:
        return "{}"
    if type(value) is list and not value:
        return "[]"
    return dumps_text(value)


__all__ = [
    "MEMORY_COLUMNS",
    "bump",
    "dense_rows",
    "event",
    "events_for",
    "existing_ids",
    "generation",
    "get_memories",
    "get_memory",
    "index_rows_after",
    "insert_dense",
    "insert_event",
    "insert_memories",
    "insert_vectors",
    "json_text",
    "lock_memory",
    "memories_in_rings",
    "memory_from_row",
    "set_posterior",
    "set_status",
    "to_memory",
]
