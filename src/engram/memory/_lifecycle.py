"""Forget, restore and erase a memory, with its history (who did what, when).

Beyond engram.ote.v1 (issue 27; ``docs/spec/memory-ownership.md``):

- **forget** takes a memory out of recall, status counts and exports, reversibly: the row stays
  (``memory_withdrawn``, the table PAM retractions use) and **restore** brings it back.
- **erase** is irreversible: the row, its dense vectors, its outcome events and its withdrawal
  are deleted in one transaction that leaves a tombstone (id, ring, sha256 of the text, who,
  when) so an import of the same memory reports "erased here" instead of bringing it back. The
  database then reclaims the freed space (``Store.reclaim``: SQLite zeroes deleted content and
  truncates its log), and the retrieval index, told to rebuild by the same transaction, is
  rebuilt into a fresh folder and the old one deleted before erase returns.
- every step is a row of ``memory_history``; the history of an erased memory keeps its events
  and loses nothing but the words.

A caller sees a memory only in the rings it mounts (acting for a subject: the shared rings and
that subject's own ring), so another subject's memory is ``not_found``, exactly as an id that
never existed; a memory in a ring the caller mounts read-only is ``forbidden``.

Every write holds the memory generation row first (``_repo.bump``), which serialises writers on
PostgreSQL as SQLite's write lock does: two workers forgetting or erasing the same memory at once
produce one outcome, recorded once.
"""

# ruff: noqa: S608 - SQL text interpolates only "?" placeholder lists

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from engram.core.canonical import JsonObject
from engram.errors import ConflictError, Forbidden, InvalidRequest, ResourceNotFound
from engram.memory import _repo
from engram.memory._engine import MemoryEngine, writing
from engram.memory._models import Memory
from engram.memory._withdrawn import FORGOTTEN, SUPERSEDED, WITHDRAWN_COMPONENT
from engram.store import Component, Dialect, Migration, Tx
from engram.store.internals import is_migrated

MAX_IDS = 1_000
MAX_REASON = 500
MAX_ACTOR = 200
ERASED_TABLES = ("memory_items", "memory_dense_vectors", "memory_outcomes", "memory_withdrawn")


def _v1(d: Dialect) -> Sequence[str]:
    return [
        f"""CREATE TABLE memory_history (
            n {d.serial_pk},
            memory_id TEXT NOT NULL,
            event TEXT NOT NULL,
            actor TEXT NOT NULL,
            reason TEXT NOT NULL,
            at TEXT NOT NULL
        )""",
        "CREATE INDEX memory_history_memory ON memory_history (memory_id, n)",
        """CREATE TABLE memory_erased (
            memory_id TEXT PRIMARY KEY,
            ring_id TEXT NOT NULL,
            content_sha256 TEXT NOT NULL,
            erased_by TEXT NOT NULL,
            erased_at TEXT NOT NULL
        )""",
        "CREATE INDEX memory_erased_ring ON memory_erased (ring_id)",
    ]


def _v2(d: Dialect) -> Sequence[str]:  # noqa: ARG001 - portable DDL
    return [
        """CREATE TABLE memory_supersedes (
            old_id TEXT PRIMARY KEY,
            new_id TEXT NOT NULL,
            actor TEXT NOT NULL,
            at TEXT NOT NULL
        )""",
        "CREATE INDEX memory_supersedes_new ON memory_supersedes (new_id)",
    ]


LIFECYCLE_COMPONENT = Component(
    name="memory-lifecycle",
    migrations=[
        Migration(1, "memory history and erasure tombstones", _v1),
        Migration(2, "which memory superseded which", _v2),
    ],
)


@dataclass(frozen=True)
class LifecycleResult:
    """What one forget / restore / erase did to one memory."""

    memory_id: str
    action: str  # forget | restore | erase
    changed: bool  # False: it already was in that state (idempotent repeat)
    state: str  # active | forgotten | erased
    at: str

    def to_wire(self) -> JsonObject:
        return {
            "memory_id": self.memory_id,
            "action": self.action,
            "changed": self.changed,
            "state": self.state,
            "at": self.at,
        }


@dataclass(frozen=True)
class HistoryEntry:
    event: str  # recorded | forgotten | restored | erased | outcome
    at: str
    actor: str
    detail: str

    def to_wire(self) -> JsonObject:
        return {"event": self.event, "at": self.at, "actor": self.actor, "detail": self.detail}


@dataclass(frozen=True)
class MemoryHistory:
    memory_id: str
    state: str
    entries: tuple[HistoryEntry, ...]

    def to_wire(self) -> JsonObject:
        return {
            "memory_id": self.memory_id,
            "state": self.state,
            "history": [e.to_wire() for e in self.entries],
        }


def content_sha256(text: str) -> str:
    """The tombstone's digest of an erased memory's words (UTF-8, surrogates as the store
    keeps them)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _ids(memory_ids: Sequence[str]) -> list[str]:
    if isinstance(memory_ids, str) or not memory_ids:
        raise InvalidRequest("memory ids: expected one or more ids")
    if len(memory_ids) > MAX_IDS:
        raise InvalidRequest(f"memory ids: at most {MAX_IDS} in one call")
    out: list[str] = []
    for i in memory_ids:
        if not isinstance(i, str) or not i.strip() or len(i) > 200:
            raise InvalidRequest(f"memory id: expected an id such as mem:…, got {str(i)[:80]!r}")
        if i not in out:
            out.append(i)
    return out


def text_argument(name: str, value: str, limit: int) -> str:
    if not isinstance(value, str) or len(value) > limit:
        raise InvalidRequest(f"{name}: expected a string of at most {limit} characters")
    return value


def _visible(engine: MemoryEngine, memory: Memory | None, memory_id: str) -> Memory:
    """The memory if this caller mounts its ring; ``not_found`` otherwise, worded exactly as for
    an id that never existed (another subject's memory is not revealed)."""
    if memory is None or engine.spec.mount_for(memory.ring_id) is None:
        raise ResourceNotFound(f"no memory {memory_id!r}")
    return memory


def _writable(engine: MemoryEngine, memory: Memory, action: str) -> None:
    mount = engine.spec.mount_for(memory.ring_id)
    if mount is None or not mount.writable:
        raise Forbidden(
            f"cannot {action} {memory.id}: it is in ring {memory.ring} ({memory.ring_id}), "
            "which this caller mounts read-only"
        )


def ensure_schema(engine: MemoryEngine) -> None:
    engine.store.migrate(WITHDRAWN_COMPONENT, LIFECYCLE_COMPONENT)


def note(tx: Tx, memory_id: str, event: str, actor: str, reason: str, at: str) -> None:
    tx.execute(
        "INSERT INTO memory_history (memory_id, event, actor, reason, at) VALUES (?, ?, ?, ?, ?)",
        (memory_id, event, actor, reason, at),
    )


def _erased_visible(engine: MemoryEngine, tx: Tx, memory_id: str) -> bool:
    """Whether ``memory_id`` was erased from a ring this caller mounts (its tombstone)."""
    ring_id = tx.scalar("SELECT ring_id FROM memory_erased WHERE memory_id = ?", (memory_id,))
    return ring_id is not None and engine.spec.mount_for(str(ring_id)) is not None


def forget(
    engine: MemoryEngine, memory_ids: Sequence[str], *, actor: str, reason: str = ""
) -> list[LifecycleResult]:
    """Take memories out of recall, counts and exports (reversible with :func:`restore`).

    Every id is checked before anything changes: one unknown id refuses the whole call."""
    ids = _ids(memory_ids)
    reason = text_argument("reason", reason, MAX_REASON)
    actor = text_argument("actor", actor, MAX_ACTOR)
    ensure_schema(engine)
    now = engine.now()
    with writing(engine.store) as tx:
        _repo.bump(tx)
        targets = _live_targets(engine, tx, ids, "forget")
        results = []
        for memory_id in ids:
            memory = targets[memory_id]
            if memory is None:  # erased: nothing left to forget
                results.append(LifecycleResult(memory_id, "forget", False, "erased", now))
                continue
            already = tx.one(
                "SELECT reason FROM memory_withdrawn WHERE memory_id = ?", (memory_id,)
            )
            if already is None:
                tx.execute(
                    "INSERT INTO memory_withdrawn (memory_id, reason, withdrawn_at) "
                    "VALUES (?, ?, ?)",
                    (memory_id, FORGOTTEN, now),
                )
                note(tx, memory_id, "forgotten", actor, reason, now)
            results.append(LifecycleResult(memory_id, "forget", already is None, "forgotten", now))
    return results


def restore(
    engine: MemoryEngine, memory_ids: Sequence[str], *, actor: str
) -> list[LifecycleResult]:
    """Serve forgotten (or PAM-retracted) memories again; an erased one cannot come back."""
    ids = _ids(memory_ids)
    actor = text_argument("actor", actor, MAX_ACTOR)
    ensure_schema(engine)
    now = engine.now()
    with writing(engine.store) as tx:
        _repo.bump(tx)
        targets = _live_targets(engine, tx, ids, "restore")
        results = []
        for memory_id in ids:
            if targets[memory_id] is None:
                results.append(LifecycleResult(memory_id, "restore", False, "erased", now))
                continue
            gone = tx.one("SELECT reason FROM memory_withdrawn WHERE memory_id = ?", (memory_id,))
            if gone is not None and gone["reason"] == SUPERSEDED:
                raise ConflictError(
                    f"memory {memory_id!r} was superseded: it stays in history (recall it "
                    "with --as-of), and the memory that replaced it is served"
                )
            if gone is not None:
                tx.execute("DELETE FROM memory_withdrawn WHERE memory_id = ?", (memory_id,))
                note(tx, memory_id, "restored", actor, "", now)
            results.append(LifecycleResult(memory_id, "restore", gone is not None, "active", now))
    return results


def _live_targets(
    engine: MemoryEngine, tx: Tx, ids: Sequence[str], action: str
) -> dict[str, Memory | None]:
    """Each id's memory (None: erased in a ring the caller mounts), all checked first."""
    found = _repo.get_memories(tx, list(ids))
    return {i: _checked(engine, tx, found.get(i), i, action) for i in ids}


def live_target(engine: MemoryEngine, tx: Tx, memory_id: str, action: str) -> Memory | None:
    """``memory_id``'s memory if the caller may ``action`` it; None when it was erased in a
    ring the caller mounts; not_found or forbidden otherwise."""
    return _checked(engine, tx, _repo.get_memory(tx, memory_id), memory_id, action)


def _checked(
    engine: MemoryEngine, tx: Tx, memory: Memory | None, memory_id: str, action: str
) -> Memory | None:
    if memory is None and _erased_visible(engine, tx, memory_id):
        return None
    memory = _visible(engine, memory, memory_id)
    _writable(engine, memory, action)
    return memory


Dependent = Callable[[Tx, Sequence[str]], None]


def erase(
    engine: MemoryEngine,
    memory_ids: Sequence[str],
    *,
    actor: str,
    dependents: Sequence[Dependent] = (),
) -> list[LifecycleResult]:
    """Erase memories for good (see the module docstring); a second erase says it already was.

    Returns after the database has reclaimed the space and the index has been rebuilt without
    them; a kill before the commit leaves every memory as it was, after it only tombstones.
    ``dependents`` delete what packages above this one keep of the erased ids (PAM objects:
    ``engram.transfer.erase_memories``), in the same transaction."""
    ids = _ids(memory_ids)
    actor = text_argument("actor", actor, MAX_ACTOR)
    ensure_schema(engine)
    now = engine.now()
    with writing(engine.store) as tx:
        _repo.bump(tx)  # first: concurrent erasers of one memory serialise here
        targets = _live_targets(engine, tx, ids, "erase")
        erasing = [m for m in targets.values() if m is not None]
        if erasing:
            _repo.bump(tx, rebuilt=True)  # every process's index rebuilds without them
            _delete(tx, erasing, actor, now)
            for dependent in dependents:
                dependent(tx, [m.id for m in erasing])
    if erasing:
        _scrub(engine)
    return [LifecycleResult(i, "erase", targets[i] is not None, "erased", now) for i in ids]


def erase_rings(
    engine: MemoryEngine,
    ring_ids: Sequence[str],
    *,
    actor: str,
    dependents: Sequence[Dependent] = (),
) -> int:
    """Erase every memory of ``ring_ids`` (a subject's ring when the subject is deleted);
    returns how many. The caller is trusted to name rings it may erase (an adapter above the
    domain layers: ``engram subject delete``)."""
    ensure_schema(engine)
    now = engine.now()
    total = 0
    while True:  # in batches, so a subject with a million memories is not one huge transaction
        with writing(engine.store) as tx:
            _repo.bump(tx)
            marks = ", ".join("?" for _ in ring_ids)
            rows = tx.execute(
                f"SELECT {_repo.MEMORY_COLUMNS} FROM memory_items WHERE ring_id IN ({marks}) "
                "ORDER BY n LIMIT 5000",
                list(ring_ids),
            )
            batch = [_repo.to_memory(r) for r in rows]
            if batch:
                _repo.bump(tx, rebuilt=True)
                _delete(tx, batch, actor, now)
                for dependent in dependents:
                    dependent(tx, [m.id for m in batch])
        total += len(batch)
        if len(batch) < 5000:
            break
    if total:
        _scrub(engine)
    return total


def _delete(tx: Tx, memories: Sequence[Memory], actor: str, now: str) -> None:
    """Delete the rows and their derived rows, keep the counts true, leave tombstones."""
    counts: dict[tuple[str, str], int] = {}
    dense: dict[tuple[str, str], int] = {}
    for m in memories:
        counts[(m.ring_id, m.status.value)] = counts.get((m.ring_id, m.status.value), 0) - 1
        for row in tx.execute(
            "SELECT engine FROM memory_dense_vectors WHERE memory_id = ?", (m.id,)
        ):
            key = (m.ring_id, str(row["engine"]))
            dense[key] = dense.get(key, 0) - 1
        for row in tx.execute(
            "SELECT oracle, COUNT(*) AS c, SUM(reverify) AS r FROM memory_outcomes "
            "WHERE memory_id = ? GROUP BY oracle",
            (m.id,),
        ):
            _repo.add_event_count(
                tx, m.ring_id, str(row["oracle"]), -int(row["c"]), -int(row["r"] or 0)
            )
        for table, column in (
            ("memory_dense_vectors", "memory_id"),
            ("memory_outcomes", "memory_id"),
            ("memory_withdrawn", "memory_id"),
            ("memory_items", "id"),
        ):
            tx.execute(f"DELETE FROM {table} WHERE {column} = ?", (m.id,))
        tx.execute(
            "INSERT INTO memory_erased (memory_id, ring_id, content_sha256, erased_by, erased_at) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT (memory_id) DO NOTHING",
            (m.id, m.ring_id, content_sha256(m.text), actor, now),
        )
        # A reason given when it was forgotten may quote it: reasons go with the words.
        tx.execute("UPDATE memory_history SET reason = '' WHERE memory_id = ?", (m.id,))
        note(tx, m.id, "erased", actor, "", now)
    _repo.add_counts(tx, counts)
    _repo.add_dense_counts(tx, dense)


def _scrub(engine: MemoryEngine) -> None:
    """After the commit: the database reclaims the deleted bytes, the index is rebuilt without
    them (the old generation folder is deleted by the rebuild)."""
    engine.store.reclaim(ERASED_TABLES)
    with engine.lock:
        engine.index.sync(engine.store)


def erased_among(tx: Tx, memory_ids: Sequence[str]) -> set[str]:
    """Which of ``memory_ids`` were erased here (imports report them, never bring them back)."""
    if not memory_ids or not is_migrated(tx, LIFECYCLE_COMPONENT):
        return set()
    return _repo.ids_in(tx, "memory_erased", "memory_id", memory_ids)


def history(engine: MemoryEngine, memory_id: str) -> MemoryHistory:
    """A memory's life, oldest first: recorded, outcome events, forgotten, restored, erased."""
    (memory_id,) = _ids([memory_id])
    with engine.store.read() as tx:
        memory = _repo.get_memory(tx, memory_id)
        lifecycle = is_migrated(tx, LIFECYCLE_COMPONENT)
        erased = lifecycle and memory is None and _erased_visible(engine, tx, memory_id)
        if not erased:
            memory = _visible(engine, memory, memory_id)
        entries: list[HistoryEntry] = []
        if memory is not None:
            entries.append(
                HistoryEntry("recorded", memory.created_at, memory.seat_id, memory.ring_id)
            )
            entries += [
                HistoryEntry("outcome", e.created_at, e.seat_id, f"{e.signal} ({e.oracle})")
                for e in _repo.events_for(tx, memory_id)
            ]
        if lifecycle:
            entries += [
                HistoryEntry(str(r["event"]), str(r["at"]), str(r["actor"]), str(r["reason"]))
                for r in tx.execute(
                    "SELECT event, actor, reason, at FROM memory_history WHERE memory_id = ? "
                    "ORDER BY n",
                    (memory_id,),
                )
            ]
        withdrawn = (
            tx.one("SELECT reason FROM memory_withdrawn WHERE memory_id = ?", (memory_id,))
            if memory is not None and is_migrated(tx, WITHDRAWN_COMPONENT)
            else None
        )
    if memory is None:
        state = "erased"
    elif withdrawn is None:
        state = "active"
    else:  # superseded, or forgotten (a PAM retraction reads as forgotten too)
        state = SUPERSEDED if withdrawn["reason"] == SUPERSEDED else FORGOTTEN
    entries.sort(key=lambda e: e.at)  # stable: same-instant events keep their written order
    return MemoryHistory(memory_id, state, tuple(entries))


__all__ = [
    "LIFECYCLE_COMPONENT",
    "MAX_ACTOR",
    "Dependent",
    "HistoryEntry",
    "LifecycleResult",
    "MemoryHistory",
    "content_sha256",
    "erase",
    "erase_rings",
    "erased_among",
    "forget",
    "history",
    "live_target",
    "note",
    "restore",
    "text_argument",
]
