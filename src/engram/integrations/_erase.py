"""Erase what the framework adapters keep for one subject (``engram subject delete``).

A LangGraph store opened for a subject keeps its items under that subject's scope and records
their texts as memories in per-namespace rings; an Agents SDK session opened for a subject keeps
its items under a key marked with the subject. Deleting the subject deletes all of it: the rows
here, and the rings' memories through :func:`engram.memory.erase_rings` (every generation a
namespace has had), so the words leave the database and the index as any erased memory's do.
Plain SQL: no framework is imported, so it runs on any install.
"""

# ruff: noqa: S608 - SQL text interpolates only "?" placeholder lists and constant table names

from __future__ import annotations

from engram.integrations._schema import (
    AGENTS_COMPONENT,
    LANGGRAPH_COMPONENT,
    SUBJECT_MARK,
    ring_id_for,
    scope_for,
)
from engram.memory import MemoryEngine
from engram.memory.internals import check_subject, erase_rings
from engram.store.internals import is_migrated


def erase_subject_integrations(engine: MemoryEngine, subject: str, *, actor: str) -> int:
    """Delete ``subject``'s LangGraph items and Agents sessions; returns how many rows and
    memories went."""
    check_subject(subject)
    scope = scope_for(subject)
    under = "(prefix = ? OR substr(prefix, 1, ?) = ?)"
    scoped = (scope, len(scope) + 1, scope + ".")
    key = f"{SUBJECT_MARK}{subject}{SUBJECT_MARK}"
    rings: list[str] = []
    removed = 0
    with engine.store.transaction() as tx:
        if is_migrated(tx, LANGGRAPH_COMPONENT):
            for row in tx.execute(
                f"SELECT prefix, generation FROM langgraph_rings WHERE {under}", scoped
            ):
                rings += [ring_id_for(row["prefix"], g) for g in range(int(row["generation"]) + 1)]
            for table in ("langgraph_texts", "langgraph_items", "langgraph_rings"):
                removed += int(tx.scalar(f"SELECT COUNT(*) FROM {table} WHERE {under}", scoped))
                tx.execute(f"DELETE FROM {table} WHERE {under}", scoped)
        if is_migrated(tx, AGENTS_COMPONENT):
            match = ("substr(session_id, 1, ?) = ?", (len(key), key))
            removed += int(
                tx.scalar(f"SELECT COUNT(*) FROM agents_session_items WHERE {match[0]}", match[1])
            )
            tx.execute(f"DELETE FROM agents_session_items WHERE {match[0]}", match[1])
    if rings:
        removed += erase_rings(engine, rings, actor=actor)
    return removed


__all__ = ["erase_subject_integrations"]
