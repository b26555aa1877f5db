"""Memories between stores (cartridges) and the canon:fleet -> canon:shared ring move.

Spec: engram.ote.v1 & MCP contract (Part V, Plate 03, §3.2) engram_complete ("neither does a
graduation imported from another replica until this store verifies the attested evidence behind it")
and §3.1 ("pre-S2 stores used canon:fleet; `engram migrate --rings` moves them"). An imported memory
keeps its content address (checked on import), its events (attested ones arrive unverified and are
verified by ``complete`` against this store's anchor) and a posterior recomputed from those events;
an imported graduation becomes ``held_import``. Decisions: ``docs/spec/memory-portable.md``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from engram.errors import DigestMismatch, InvalidRequest
from engram.memory import _repo
from engram.memory._engine import memory_id
from engram.memory._epistemology import SIGNALS
from engram.memory._lifecycle import erased_among
from engram.memory._manifest import RING_PREFIX, RINGS
from engram.memory._models import Memory, MemoryRecord, MemoryStatus, OutcomeEvent
from engram.memory._owner import SUBJECT_LEVEL, owner_of
from engram.memory._schema import migrate_memory
from engram.memory._seed import BUILTIN_M0, LEGACY_M0
from engram.memory._text import token_cost
from engram.memory._withdrawn import withdrawn_among
from engram.store import Store, Tx


def export_memories(store: Store, ring_id: str) -> list[MemoryRecord]:
    """Every memory of one ring with its events, oldest first (private keys are never here)."""
    migrate_memory(store)
    with store.read() as tx:
        memories = _repo.memories_in_rings(tx, [ring_id])
        # One query per 500 memories, not one each (most have no events).
        events = _repo.events_for_many(tx, [m.id for m in memories])
        return [
            MemoryRecord(m, tuple(e.to_export_json() for e in events.get(m.id, ())))
            for m in memories
        ]


def ring_memory_pages(store: Store, ring_id: str, page: int = 1000) -> Iterator[list[Memory]]:
    """Every served memory of one ring (the withdrawn left out: forgotten, retracted or
    superseded memories are never exported), oldest first as :func:`export_memories` has
    them, ``page`` at a time and without their events, read in one transaction: what a
    cartridge export needs, without 100,000 memories (and a query each for their events) held
    at once (issue 33)."""
    migrate_memory(store)
    with store.read() as tx:
        after = -1
        while True:
            rows = _repo.ring_memories_after(tx, ring_id, after, page)
            if not rows:
                return
            after = int(rows[-1]["n"])
            withdrawn = withdrawn_among(tx, [str(r["id"]) for r in rows])
            yield [_repo.to_memory(r) for r in rows if r["id"] not in withdrawn]


@dataclass(frozen=True)
class ImportResult:
    imported: int
    already_present: int
    events_added: int
    held: int  # imported graduations held until their attested evidence verifies here
    erased: int = 0  # erased here before: not imported again

    def to_wire(self) -> dict[str, int]:
        return {
            "imported": self.imported,
            "already_present": self.already_present,
            "events_added": self.events_added,
            "held": self.held,
            "erased_here": self.erased,
        }


def _field(obj: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    value = obj.get(key)
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise InvalidRequest(f"{where}.{key}: expected {getattr(kind, '__name__', kind)}")
    return value


def _check_record(raw: Any, where: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    if isinstance(raw, MemoryRecord):
        raw = raw.to_wire()
    if not isinstance(raw, dict) or not isinstance(raw.get("memory"), dict):
        raise InvalidRequest(f"{where}: expected {{'memory': {{...}}, 'events': [...]}}")
    m = raw["memory"]
    for key in (
        "id",
        "ring",
        "ring_id",
        "kind",
        "text",
        "thread",
        "seat_id",
        "status",
        "created_at",
    ):
        _field(m, key, str, f"{where}.memory")
    subject_ring = m["ring"] == SUBJECT_LEVEL and owner_of(m["ring_id"]) is not None
    if m["ring"] not in RINGS or not (
        m["ring_id"].startswith(RING_PREFIX[m["ring"]]) or subject_ring
    ):
        raise InvalidRequest(f"{where}.memory.ring_id: {m['ring_id']!r} is not a {m['ring']} id")
    if memory_id(m["ring_id"], m["kind"], m["text"]) != m["id"]:
        raise DigestMismatch(
            f"{where}.memory.id: {m['id']} is not the content address of its ring_id, kind and text"
        )
    events = raw.get("events", [])
    if not isinstance(events, list):
        raise InvalidRequest(f"{where}.events: expected a list")
    for i, e in enumerate(events):
        w = f"{where}.events[{i}]"
        if not isinstance(e, dict):
            raise InvalidRequest(f"{w}: expected an object")
        for key in ("decision_id", "seat_id", "signal", "created_at"):
            _field(e, key, str, w)
        signal = SIGNALS.get(e["signal"])
        if signal is None:
            raise InvalidRequest(f"{w}.signal: unknown signal {e['signal']!r}")
        for key in ("delta_alpha", "delta_beta"):
            value = _field(e, key, (int, float), w)
            if value < 0 or (signal.capped and value > 0.30 + 1e-12):
                raise InvalidRequest(f"{w}.{key}: {value} breaks the cap for {e['signal']}")
    return m, events


def import_memories(store: Store, records: Iterable[MemoryRecord | dict[str, Any]]) -> ImportResult:
    """Merge exported memories into this store in one transaction (all or nothing).

    ``records`` is gone through once, _CHUNK at a time, so an iterator of 100,000 is never
    held whole (issue 33): each chunk is checked, which of its memories are already present
    (here, or earlier in the records) or erased here is asked once per 500 ids, the new ones
    are inserted with one statement, then its events are merged record by record. A record
    refused in any chunk rolls back every chunk before it.
    """
    migrate_memory(store)
    tally = _Tally()
    with store.transaction() as tx:
        _repo.bump(tx)
        chunk: list[MemoryRecord | dict[str, Any]] = []
        at = 0
        for record in records:
            chunk.append(record)
            if len(chunk) == _CHUNK:
                _import_chunk(tx, chunk, at, tally)
                at += len(chunk)
                chunk = []
        _import_chunk(tx, chunk, at, tally)
    return ImportResult(tally.imported, tally.present, tally.added, tally.held, len(tally.erased))


@dataclass
class _Tally:
    imported: int = 0
    present: int = 0
    added: int = 0
    held: int = 0
    erased: set[str] = field(default_factory=set)
    """Erased here before (a set: one id met twice is one erased memory)."""


_CHUNK = 2000
"""Records checked and inserted at a time by :func:`import_memories`."""


def _import_chunk(
    tx: Tx, records: list[MemoryRecord | dict[str, Any]], at: int, tally: _Tally
) -> None:
    checked = [_check_record(r, f"records[{at + i}]") for i, r in enumerate(records)]
    if not checked:
        return
    known = _repo.existing_ids(tx, [m["id"] for m, _ in checked])
    # Erased here: reported, never brought back (docs/spec/memory-ownership.md).
    gone = erased_among(tx, [m["id"] for m, _ in checked])
    checked = [(m, events) for m, events in checked if m["id"] not in gone]
    new: list[dict[str, Any]] = []
    for m, _ in checked:
        if m["id"] in known:
            tally.present += 1  # in the store already, or earlier in the records
            continue
        known.add(m["id"])
        new.append(m)
    rows: list[tuple[Any, ...]] = []
    for m in new:
        status = (
            MemoryStatus.HELD_IMPORT
            if m["status"] in ("graduated", "held_import")
            else MemoryStatus.CANDIDATE
        )
        tally.held += status == MemoryStatus.HELD_IMPORT
        rows.append(
            (
                m["id"],
                m["ring"],
                m["ring_id"],
                m["kind"],
                m["text"],
                _repo.json_text(list(m.get("entities", []))),
                _repo.json_text(m.get("provenance", {})),
                m["thread"],
                m["seat_id"],
                token_cost(m["text"]),
                1.0,
                1.0,
                status.value,
                None,
                "import",
                m["created_at"],
            )
        )
    _repo.insert_memories(tx, rows)
    tally.imported += len(new)
    tally.erased |= gone
    for m, events in checked:
        for e in events:
            if _repo.event(tx, m["id"], e["decision_id"]) is not None:
                continue
            signal = SIGNALS[e["signal"]]
            event = OutcomeEvent(
                memory_id=m["id"],
                decision_id=e["decision_id"],
                seat_id=e["seat_id"],
                signal=e["signal"],
                oracle=signal.oracle,
                delta_alpha=float(e["delta_alpha"]),
                delta_beta=float(e["delta_beta"]),
                attested=signal.attested,
                verified=False,
                principal=None,
                key_fingerprint=None,
                signature=e.get("signature"),
                reverify=False,
                origin="import",
                created_at=e["created_at"],
            )
            _repo.add_event(tx, event, m["ring_id"], None)
            tally.added += 1


@dataclass(frozen=True)
class RingMigration:
    moved: int
    merged: int

    def to_wire(self) -> dict[str, int]:
        return {"moved": self.moved, "merged": self.merged}


def migrate_rings(store: Store) -> RingMigration:
    """Move memories from ring canon:fleet to canon:shared (re-keyed); running it again is a no-op.

    A memory already present under canon:shared absorbs the old one's events.
    """
    migrate_memory(store)
    moved = merged = 0
    with store.transaction() as tx:
        rows = tx.execute(
            "SELECT id, kind, text, status FROM memory_items WHERE ring_id = ?", (LEGACY_M0,)
        )
        if not rows:
            return RingMigration(0, 0)
        _repo.bump(tx, rebuilt=True)
        for row in rows:
            old, new = row["id"], memory_id(BUILTIN_M0, row["kind"], row["text"])
            merging = _repo.get_memory(tx, new) is not None
            _repo.add_counts(tx, {(LEGACY_M0, row["status"]): -1})
            if merging:
                merged += 1
            else:
                tx.execute(
                    "UPDATE memory_items SET id = ?, ring_id = ? WHERE id = ?",
                    (new, BUILTIN_M0, old),
                )
                _repo.add_counts(tx, {(BUILTIN_M0, row["status"]): 1})
                moved += 1
            for e in _repo.events_for(tx, old):
                _repo.add_event_count(tx, LEGACY_M0, e.oracle, -1, -int(e.reverify))
                if _repo.event(tx, new, e.decision_id) is not None:
                    continue  # the same decision is already one event of the target
                tx.execute(
                    "UPDATE memory_outcomes SET memory_id = ? WHERE memory_id = ? "
                    "AND decision_id = ?",
                    (new, old, e.decision_id),
                )
                _repo.add_event_count(tx, BUILTIN_M0, e.oracle, 1, int(e.reverify))
                if merging:  # a moved row already carries its own posterior
                    _repo.apply_posterior(tx, new, e.delta_alpha, e.delta_beta, None)
            tx.execute("DELETE FROM memory_outcomes WHERE memory_id = ?", (old,))
            tx.execute("DELETE FROM memory_items WHERE id = ?", (old,))
            for d in tx.execute(
                "SELECT engine FROM memory_dense_vectors WHERE memory_id = ?", (old,)
            ):
                _repo.add_dense_counts(tx, {(LEGACY_M0, d["engine"]): -1})
                if not merging:
                    _repo.add_dense_counts(tx, {(BUILTIN_M0, d["engine"]): 1})
            if merging:
                tx.execute("DELETE FROM memory_dense_vectors WHERE memory_id = ?", (old,))
            else:
                tx.execute(
                    "UPDATE memory_dense_vectors SET memory_id = ? WHERE memory_id = ?", (new, old)
                )
    return RingMigration(moved, merged)


__all__ = [
    "ImportResult",
    "RingMigration",
    "export_memories",
    "import_memories",
    "migrate_rings",
    "ring_memory_pages",
]
