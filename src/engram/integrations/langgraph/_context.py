"""What every part of the LangGraph store shares: the engram store, the engine and its views.

A view is the engine seeing exactly some namespaces' rings (``engram.memory.internals.seat_view``);
its manifest is built once per ring set and kept (docs/integrations.md "The namespace table").
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import cache

from langgraph.store.base import Item, SearchItem

from engram.core.canonical import JsonObject, parse_strict
from engram.core.clock import Clock, parse_instant
from engram.integrations._schema import ring_id_for, scope_for
from engram.memory import MemoryEngine, OteSpec, default_manifest_text, parse_manifest
from engram.memory.internals import seat_view
from engram.store import Row, Store

KIND = "langgraph_item"
SEAT = "seat:langgraph"

Namespace = tuple[str, ...]


def namespace_text(namespace: Sequence[str]) -> str:
    """A namespace as the table spells it: its labels joined by ``.`` (never in a label)."""
    return ".".join(namespace)


def namespace_of(text: str) -> Namespace:
    return tuple(text.split(".")) if text else ()


@cache
def _epistemology() -> str:
    """The built-in manifest's ``[epistemology]`` table (graduation does not concern these
    rings, but a manifest needs one)."""
    text = default_manifest_text()
    start = text.index("\n[epistemology]")
    end = text.find("\n[", start + 1)
    return text[start : end if end != -1 else len(text)] + "\n"


def manifest_text(ring_ids: Sequence[str]) -> str:
    """An engram.ote.v1 manifest mounting ``ring_ids`` (M3, writable), with a budget so large
    (1,000,000 tokens, every share in the pool) that recall never cuts a search's slate."""
    mounts = "".join(
        f'\n[[topology.mounts]]\nring = "M3"\nring_id = "{r}"\naccess = "read_write"\n'
        "budget_share_pct = 0\n"
        for r in ring_ids
    )
    return (
        'schema_version = "engram.ote.v1"\n\n[seat]\n'
        f'seat_id = "{SEAT}"\narchetype = "archetype:langgraph"\n'
        "keyspace_budget_tokens = 1000000\n\n[ontology]\n"
        f'domain = "langgraph"\nallowed_kinds = ["{KIND}"]\n{mounts}{_epistemology()}'
    )


def stored_prefix(scope: str, namespace: Sequence[str]) -> str:
    """A namespace as the table spells it under ``scope``."""
    text = namespace_text(namespace)
    if not scope:
        return text
    return f"{scope}.{text}" if text else scope


def namespace_in(scope: str, stored: str) -> Namespace:
    """The namespace a caller of ``scope`` sees for a stored prefix (the scope taken off)."""
    if scope:
        stored = stored[len(scope) + 1 :]
    return namespace_of(stored)


def _value(row: Row) -> JsonObject:
    value = parse_strict(row["value"])
    assert isinstance(value, dict)  # written by put, which stores only JSON objects
    return value


def item_of(row: Row, scope: str = "") -> Item:
    """A LangGraph ``Item`` from a ``langgraph_items`` row."""
    return Item(
        namespace=namespace_in(scope, row["prefix"]),
        key=row["key"],
        value=_value(row),
        created_at=parse_instant(row["created_at"]),
        updated_at=parse_instant(row["updated_at"]),
    )


def search_item_of(row: Row, score: float | None = None, scope: str = "") -> SearchItem:
    """A LangGraph ``SearchItem`` (``score`` None when nothing ranked it)."""
    return SearchItem(
        namespace=namespace_in(scope, row["prefix"]),
        key=row["key"],
        value=_value(row),
        created_at=parse_instant(row["created_at"]),
        updated_at=parse_instant(row["updated_at"]),
        score=score,
    )


@dataclass
class Context:
    store: Store
    engine: MemoryEngine
    clock: Clock
    fields: list[str]
    compact_after: int
    scope: str = ""  # scope_for(subject): whose namespaces these are
    _specs: OrderedDict[tuple[str, ...], OteSpec] = field(default_factory=OrderedDict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def now(self) -> datetime:
        return self.clock.now()

    def stored(self, namespace: Sequence[str]) -> str:
        return stored_prefix(self.scope, namespace)

    def namespace(self, stored: str) -> Namespace:
        return namespace_in(self.scope, stored)

    def view(self, ring_ids: Sequence[str]) -> MemoryEngine:
        """The engine seeing exactly ``ring_ids``, with the engine's own retrieval settings."""
        key = tuple(sorted(set(ring_ids)))
        with self._lock:
            spec = self._specs.get(key)
            if spec is None:
                parsed = parse_manifest(manifest_text(key), "<langgraph store>")
                spec = replace(parsed, retrieval=self.engine.spec.retrieval)
                self._specs[key] = spec
                if len(self._specs) > 256:
                    self._specs.popitem(last=False)
            else:
                self._specs.move_to_end(key)
        return seat_view(self.engine, spec)


def base_manifest() -> OteSpec:
    return parse_manifest(manifest_text([ring_id_for("", 0)]), "<langgraph store>")


__all__ = [
    "KIND",
    "SEAT",
    "Context",
    "Namespace",
    "base_manifest",
    "item_of",
    "manifest_text",
    "namespace_of",
    "namespace_text",
    "ring_id_for",
    "scope_for",
    "search_item_of",
    "stored_prefix",
]
