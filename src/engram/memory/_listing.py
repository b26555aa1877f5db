"""A page of memories, newest first: what the memory REST API lists and the /memories page shows.

Beyond engram.ote.v1 (issue 29; ``docs/spec/memory-ownership.md`` "Listing"). Recall answers a
question; a person looking at what agents remember about them wants the memories themselves,
newest first, including the ones they forgot (so they can restore them) and the ones a newer
memory superseded (so they can see what changed). Each listed memory says its state.

Which rings: the caller's mounted rings; ``own_only`` keeps only the rings the caller owns (a
subject's own ring, or for the seat every writable ring), which is what a person may forget or
erase. Paging is by an opaque cursor (the row number of the last memory shown), stable while
memories are added: a new memory lands before the first page, never inside a later one.
"""

# ruff: noqa: S608 - SQL text interpolates only "?" placeholder lists

from __future__ import annotations

from dataclasses import dataclass

from engram.core.canonical import JsonObject
from engram.errors import InvalidRequest
from engram.memory import _repo
from engram.memory._engine import MemoryEngine
from engram.memory._models import Memory
from engram.memory._owner import subject_ring_id
from engram.memory._withdrawn import WITHDRAWN_COMPONENT
from engram.store.internals import is_migrated

MAX_PAGE = 200
DEFAULT_PAGE = 50
CURRENT = "current"
_MAX_CURSOR_DIGITS = 19  # a row number fits a signed 64-bit integer
# The memory's columns, qualified: the listing joins the withdrawn table, which has its own.
_COLUMNS = ", ".join(f"m.{c.strip()}" for c in _repo.MEMORY_COLUMNS.split(","))


@dataclass(frozen=True)
class ListedMemory:
    memory: Memory
    state: str  # current | forgotten | superseded (or a PAM import's own withdrawal reason)
    withdrawn_at: str | None

    def to_wire(self) -> JsonObject:
        wire = self.memory.to_wire()
        assert isinstance(wire, dict)
        return {**wire, "state": self.state, "withdrawn_at": self.withdrawn_at}


@dataclass(frozen=True)
class MemoryPage:
    items: tuple[ListedMemory, ...]
    next_cursor: str | None  # None: this is the last page

    def to_wire(self) -> JsonObject:
        return {
            "memories": [m.to_wire() for m in self.items],
            "next_cursor": self.next_cursor,
        }


def _cursor(cursor: str | None) -> int | None:
    if cursor is None:
        return None
    if not cursor.isascii() or not cursor.isdigit() or len(cursor) > _MAX_CURSOR_DIGITS:
        raise InvalidRequest("cursor: not a cursor this server gave (use next_cursor as it is)")
    return int(cursor)


def _limit(limit: int) -> int:
    if not 1 <= limit <= MAX_PAGE:
        raise InvalidRequest(f"limit: must be between 1 and {MAX_PAGE}")
    return limit


def listed_rings(engine: MemoryEngine, *, own_only: bool) -> tuple[str, ...]:
    """The ring ids a listing reads: every mounted ring, or only the caller's own."""
    if not own_only:
        return engine.spec.ring_ids
    if engine.subject is not None:
        return (subject_ring_id(engine.subject),)
    return tuple(m.ring_id for m in engine.spec.mounts if m.access == "read_write")


def list_memories(
    engine: MemoryEngine,
    *,
    limit: int = DEFAULT_PAGE,
    cursor: str | None = None,
    own_only: bool = False,
    include_withdrawn: bool = True,
) -> MemoryPage:
    """Memories of the caller's rings, newest first, ``limit`` at a time after ``cursor``."""
    limit = _limit(limit)
    before = _cursor(cursor)
    rings = listed_rings(engine, own_only=own_only)
    if not rings:
        return MemoryPage((), None)
    marks = ", ".join("?" for _ in rings)
    params: list[object] = list(rings)
    where = f"m.ring_id IN ({marks})"
    if before is not None:
        where += " AND m.n < ?"
        params.append(before)
    with engine.store.read() as tx:
        withdrawn = is_migrated(tx, WITHDRAWN_COMPONENT)
        if withdrawn:
            sql = (
                f"SELECT m.n AS n, {_COLUMNS}, w.reason AS reason, w.withdrawn_at AS withdrawn_at "
                "FROM memory_items m LEFT JOIN memory_withdrawn w ON w.memory_id = m.id "
                f"WHERE {where}"
            )
            if not include_withdrawn:
                sql += " AND w.memory_id IS NULL"
        else:
            sql = (
                f"SELECT m.n AS n, {_COLUMNS}, NULL AS reason, NULL AS withdrawn_at "
                f"FROM memory_items m WHERE {where}"
            )
        rows = tx.execute(f"{sql} ORDER BY m.n DESC LIMIT ?", [*params, limit + 1])
    page = rows[:limit]
    items = tuple(
        ListedMemory(
            memory=_repo.to_memory(row),
            state=CURRENT if row["reason"] is None else str(row["reason"]),
            withdrawn_at=None if row["withdrawn_at"] is None else str(row["withdrawn_at"]),
        )
        for row in page
    )
    more = len(rows) > limit
    return MemoryPage(items, str(page[-1]["n"]) if more and page else None)


__all__ = ["DEFAULT_PAGE", "MAX_PAGE", "ListedMemory", "MemoryPage", "list_memories"]
