"""The LangGraph store's tables (engram.integrations.langgraph; docs/integrations.md "The
namespace table"): items, the texts each item indexes, and each namespace's current ring."""

from __future__ import annotations

import hashlib
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


def ring_id_for(prefix: str, generation: int) -> str:
    """The ring of a namespace: ``team:lg.<24 hex of sha256(namespace)>.<generation>``."""
    digest = hashlib.sha256(prefix.encode("utf-8")).hexdigest()[:24]
    return f"team:lg.{digest}.{generation}"


def scope_for(subject: str | None) -> str:
    """Where a store opened for ``subject`` keeps its namespaces: under a first label that no
    LangGraph namespace can spell (its text starts with ``.``, and labels are never empty),
    ``.s<32 hex of sha256(subject)>``; ``""`` (unscoped) for a store of the seat's own."""
    if subject is None:
        return ""
    return ".s" + hashlib.sha256(subject.encode("utf-8")).hexdigest()[:32]


__all__ = ["LANGGRAPH_COMPONENT", "ring_id_for", "scope_for"]
