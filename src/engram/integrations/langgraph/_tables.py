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

from engram.integrations._schema import LANGGRAPH_COMPONENT


def like_prefix(prefix: str) -> str:
    """A LIKE pattern for every namespace below ``prefix`` (``\\`` escapes ``%`` and ``_``)."""
    escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped + ".%"


def prefix_clause(column: str, prefix: str) -> tuple[str, list[str]]:
    """SQL matching ``prefix`` and every namespace below it (every unscoped namespace for
    ``""``: a store opened for a subject keeps its own under a prefix starting with ``.``)."""
    if not prefix:
        return f"{column} NOT LIKE '.%'", []
    return f"({column} = ? OR {column} LIKE ? ESCAPE '\\')", [prefix, like_prefix(prefix)]


__all__ = ["LANGGRAPH_COMPONENT", "like_prefix", "prefix_clause"]
