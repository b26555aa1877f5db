"""The LangGraph store's tables (engram.integrations.langgraph; docs/integrations.md "The
namespace table"): items, the texts each item indexes, and each namespace's current ring."""

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


__all__ = ["LANGGRAPH_COMPONENT"]
