"""The memory engine's tables, as one store Component (runs on SQLite and PostgreSQL).

Spec: engram.ote.v1 & MCP contract (Part V, Plate 03, §3.2): memories with "dual-table vector
storage (memory_vectors 128-dim local baseline + memory_dense_vectors neural vector)", and outcome
events with their oracle and decision_id. ``memory_generation`` is a one-row counter every write
bumps, so a process holding an in-memory retrieval index knows cheaply whether to load new rows
(``appended``) or rebuild (``rebuilt``, after ring ids move). Writers update it first, which
serialises them on PostgreSQL, so ``n`` order is commit order and incremental loading never skips a
row.
"""

from __future__ import annotations

from collections.abc import Sequence

from engram.store._base import Component, Dialect, Migration


def _v1(d: Dialect) -> Sequence[str]:
    return [
        f"""CREATE TABLE memory_items (
            n {d.serial_pk},
            id TEXT NOT NULL UNIQUE,
            ring TEXT NOT NULL,
            ring_id TEXT NOT NULL,
            kind TEXT NOT NULL,
            text TEXT NOT NULL,
            entities TEXT NOT NULL,
            provenance TEXT NOT NULL,
            thread TEXT NOT NULL,
            seat_id TEXT NOT NULL,
            tokens INTEGER NOT NULL,
            alpha {d.real} NOT NULL,
            beta {d.real} NOT NULL,
            status TEXT NOT NULL,
            graduated_at TEXT,
            origin TEXT NOT NULL,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        )""",
        "CREATE INDEX memory_items_ring ON memory_items (ring_id, status)",
        f"""CREATE TABLE memory_vectors (
            memory_id TEXT PRIMARY KEY,
            engine TEXT NOT NULL,
            dims INTEGER NOT NULL,
            vector {d.blob} NOT NULL
        )""",
        f"""CREATE TABLE memory_dense_vectors (
            memory_id TEXT NOT NULL,
            engine TEXT NOT NULL,
            dims INTEGER NOT NULL,
            vector {d.blob} NOT NULL,
            PRIMARY KEY (memory_id, engine)
        )""",
        f"""CREATE TABLE memory_outcomes (
            n {d.serial_pk},
            memory_id TEXT NOT NULL,
            decision_id TEXT NOT NULL,
            seat_id TEXT NOT NULL,
            signal TEXT NOT NULL,
            oracle TEXT NOT NULL,
            delta_alpha {d.real} NOT NULL,
            delta_beta {d.real} NOT NULL,
            attested INTEGER NOT NULL,
            verified INTEGER NOT NULL,
            principal TEXT,
            key_fingerprint TEXT,
            signature TEXT,
            reverify INTEGER NOT NULL,
            origin TEXT NOT NULL,
            created_at TEXT NOT NULL,
            UNIQUE (memory_id, decision_id)
        )""",
        "CREATE INDEX memory_outcomes_memory ON memory_outcomes (memory_id)",
        f"""CREATE TABLE memory_generation (
            id INTEGER PRIMARY KEY,
            appended {d.bigint} NOT NULL,
            rebuilt {d.bigint} NOT NULL
        )""",
        "INSERT INTO memory_generation (id, appended, rebuilt) VALUES (1, 0, 0)",
    ]


MEMORY_COMPONENT = Component(
    name="memory",
    migrations=[Migration(1, "memories, vectors, outcomes", _v1)],
)

__all__ = ["MEMORY_COMPONENT"]
