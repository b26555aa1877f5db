"""The LangGraph store's namespace table, as one store component (SQLite and PostgreSQL alike).

docs/integrations.md "The namespace table". LangGraph addresses an item by (namespace tuple,
key); engram's memories are content addressed in rings. So:

- ``langgraph_items`` holds each item's value and timestamps under its namespace, spelt as
  its labels joined by ``.`` (LangGraph forbids ``.`` in a label, as its PostgreSQL store does);
- each namespace has a ring of its own, ``team:lg.<24 hex of sha256(namespace)>.<generation>``
  (``langgraph_rings``), so a search within a namespace is engram's recall over exactly that
  ring, however many other namespaces the store holds;
- ``langgraph_texts`` maps each indexed text of an item (one per field path) to the memory that
  holds it. An updated or deleted item leaves its old memory behind (memories are never
  deleted); search skips memories no live item maps to, and once a ring holds more such stale
  memories than live ones the namespace moves to a fresh ring (the next generation), where
  only the live texts are recorded again.
"""

from __future__ import annotations

from collections.abc import Sequence

from engram.store import Component, Dialect, Migration


def _v1(d: Dialect) -> Sequence[str]:
    return [
        f"""CREATE TABLE langgraph_items (
            prefix TEXT NOT NULL,
            key TEXT NOT NULL,
            value TEXT NOT NULL,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            expires_at TEXT,
            ttl_minutes {d.real},
            PRIMARY KEY (prefix, key)
        )""",
        "CREATE INDEX langgraph_items_updated ON langgraph_items (updated_at)",
        "CREATE INDEX langgraph_items_expires ON langgraph_items (expires_at)",
        """CREATE TABLE langgraph_texts (
            prefix TEXT NOT NULL,
            key TEXT NOT NULL,
            path TEXT NOT NULL,
            memory_id TEXT NOT NULL,
            ring_id TEXT NOT NULL,
            PRIMARY KEY (prefix, key, path)
        )""",
        "CREATE INDEX langgraph_texts_memory ON langgraph_texts (memory_id)",
        "CREATE INDEX langgraph_texts_ring ON langgraph_texts (ring_id)",
        f"""CREATE TABLE langgraph_rings (
            prefix TEXT PRIMARY KEY,
            ring_id TEXT NOT NULL,
            generation INTEGER NOT NULL,
            recorded {d.bigint} NOT NULL
        )""",
    ]


LANGGRAPH_COMPONENT = Component(
    name="langgraph-store", migrations=[Migration(1, "LangGraph items and namespaces", _v1)]
)


def like_prefix(prefix: str) -> str:
    """A LIKE pattern for every namespace below ``prefix`` (``\\`` escapes ``%`` and ``_``)."""
    escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped + ".%"


def prefix_clause(column: str, prefix: str) -> tuple[str, list[str]]:
    """SQL matching ``prefix`` and every namespace below it (all namespaces for ``""``)."""
    if not prefix:
        return "1 = 1", []
    return f"({column} = ? OR {column} LIKE ? ESCAPE '\\')", [prefix, like_prefix(prefix)]


__all__ = ["LANGGRAPH_COMPONENT", "like_prefix", "prefix_clause"]
