"""The memory engine's tables, as one store Component (runs on SQLite and PostgreSQL).

Spec: engram.ote.v1 & MCP contract (Part V, Plate 03, §3.2): memories with "dual-table vector
storage (memory_vectors 128-dim local baseline + memory_dense_vectors neural vector)", and outcome
events with their oracle and decision_id. ``memory_generation`` is a one-row counter every write
bumps: the database's change sequence. The derived retrieval index beside the store
(``engram.memory._index``) records the sequence it was built from and whether it must load new rows
(``appended``) or rebuild (``rebuilt``, after ring ids move; ``instance``, another database).
Writers update it first, which serialises them on PostgreSQL, so ``n`` order is commit order and
incremental loading never skips a row.

Version 2 (issue 16): the local-hash-128 vectors leave the database (they are derived from the text
bit for bit, ``tests/memory/test_memory_local_vector_pinned.py``, and now live in the derived
index), and ``memory_counts`` / ``memory_event_counts`` / ``memory_dense_counts`` keep the figures
``status`` reports, updated in the same transaction as the rows they count, so status reads a few
rows instead of every memory. Decisions: ``docs/spec/memory-retrieval.md``.
"""

from __future__ import annotations

from collections.abc import Sequence

from engram.store import Component, Dialect, Migration, Store


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


def _v2(d: Dialect) -> Sequence[str]:
    random_id = "lower(hex(randomblob(16)))" if d.is_sqlite else "md5(random()::text)"
    return [
        "DROP TABLE memory_vectors",
        "ALTER TABLE memory_generation ADD COLUMN instance TEXT",
        f"UPDATE memory_generation SET instance = {random_id}, rebuilt = rebuilt + 1",  # noqa: S608
        f"""CREATE TABLE memory_counts (
            ring_id TEXT NOT NULL,
            status TEXT NOT NULL,
            memories {d.bigint} NOT NULL,
            PRIMARY KEY (ring_id, status)
        )""",
        "INSERT INTO memory_counts (ring_id, status, memories) "
        "SELECT ring_id, status, COUNT(*) FROM memory_items GROUP BY ring_id, status",
        f"""CREATE TABLE memory_event_counts (
            ring_id TEXT NOT NULL,
            oracle TEXT NOT NULL,
            events {d.bigint} NOT NULL,
            reverify {d.bigint} NOT NULL,
            PRIMARY KEY (ring_id, oracle)
        )""",
        "INSERT INTO memory_event_counts (ring_id, oracle, events, reverify) "
        "SELECT m.ring_id, o.oracle, COUNT(*), SUM(o.reverify) FROM memory_outcomes o "
        "JOIN memory_items m ON m.id = o.memory_id GROUP BY m.ring_id, o.oracle",
        f"""CREATE TABLE memory_dense_counts (
            ring_id TEXT NOT NULL,
            engine TEXT NOT NULL,
            vectors {d.bigint} NOT NULL,
            PRIMARY KEY (ring_id, engine)
        )""",
        "INSERT INTO memory_dense_counts (ring_id, engine, vectors) "
        "SELECT m.ring_id, v.engine, COUNT(*) FROM memory_dense_vectors v "
        "JOIN memory_items m ON m.id = v.memory_id GROUP BY m.ring_id, v.engine",
        # The index loads rows by n and looks memories up by n: the primary key serves both.
        # The thread's neighbours are found in the index itself, so no (thread, n) index here.
    ]


MEMORY_COMPONENT = Component(
    name="memory",
    migrations=[
        Migration(1, "memories, vectors, outcomes", _v1),
        Migration(2, "derived local vectors, status counts, database instance id", _v2),
    ],
)


def _withdrawn_v1(dialect: Dialect) -> Sequence[str]:  # noqa: ARG001 - portable DDL
    return [
        """CREATE TABLE memory_withdrawn (
            memory_id TEXT PRIMARY KEY,
            reason TEXT NOT NULL,
            withdrawn_at TEXT NOT NULL
        )"""
    ]


# Memories withdrawn from recall (``engram.memory._withdrawn``): a separate component so the
# memory tables' own migrations are untouched; declared here so opening an engine (the
# composition root) migrates it with them, not each withdraw or reinstate call.
WITHDRAWN_COMPONENT = Component(
    name="memory-withdrawn",
    migrations=[Migration(1, "memories withdrawn from recall", _withdrawn_v1)],
)
ENGINE_COMPONENTS = (MEMORY_COMPONENT, WITHDRAWN_COMPONENT)


def migrate_memory(store: Store) -> None:
    """Bring the memory tables up to date, taking the write lock only when a step is pending.

    Opening an engine on a current schema is then a read, so ``engram status`` or a recall
    started beside a long import never waits for the import's write lock.
    """
    versions = store.schema_versions()
    if any(versions.get(c.name, 0) != len(c.migrations) for c in ENGINE_COMPONENTS):
        # Applies what is pending, or refuses a newer schema.
        store.migrate(*ENGINE_COMPONENTS)


__all__ = ["ENGINE_COMPONENTS", "MEMORY_COMPONENT", "WITHDRAWN_COMPONENT", "migrate_memory"]
