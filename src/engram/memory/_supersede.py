"""Supersede: a newer memory replaces an older one, which stays in history; recall "as of".

Beyond engram.ote.v1 (issue 29; ``docs/spec/memory-ownership.md`` "Supersede and as-of"). A
fact changes ("moved to Leeds"): the new memory is recorded as superseding the old one. Recall
then serves the current version and never both; the old one is kept (withdrawn from recall with
the reason ``superseded``) and its history says by what and when. Chains stay linear: a memory
is superseded at most once (supersede the newest instead), never by itself, never by a memory
it already superseded (a cycle). Both must be the caller's to write: another subject's memory is
``not_found`` as everywhere.

Recording and marking are two steps (the new memory is recorded as any memory is, then the old
one is marked in one transaction): a crash between them leaves the new memory recorded and the
old one still served, and running the same supersede again finishes it (recording is
idempotent).
"""

# ruff: noqa: S608 - SQL text interpolates only "?" placeholder lists

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from engram.core.canonical import JsonObject
from engram.core.clock import format_instant_precise
from engram.errors import ConflictError, InvalidRequest
from engram.memory import _repo
from engram.memory._engine import MemoryEngine, check_record, record_many, writing
from engram.memory._lifecycle import (
    MAX_ACTOR,
    ensure_schema,
    live_target,
    note,
    text_argument,
)
from engram.memory._models import RecordInput, RecordResult
from engram.memory._withdrawn import SUPERSEDED, withdrawn_ns
from engram.store import Tx

MAX_CHAIN = 10_000  # a chain walked to find a cycle is bounded (each step is one row)


@dataclass(frozen=True)
class SupersedeResult:
    record: RecordResult
    superseded: str  # the old memory's id
    changed: bool  # False: it already was superseded by this memory (a repeat)

    def to_wire(self) -> JsonObject:
        return {**self.record.to_wire(), "supersedes": self.superseded, "changed": self.changed}


def superseded_by(tx: Tx, memory_id: str) -> str | None:
    row = tx.one("SELECT new_id FROM memory_supersedes WHERE old_id = ?", (memory_id,))
    return None if row is None else str(row["new_id"])


def _predecessors(tx: Tx, memory_id: str) -> set[str]:
    """Every memory ``memory_id`` superseded, directly or through others."""
    seen: set[str] = set()
    frontier = [memory_id]
    while frontier and len(seen) < MAX_CHAIN:
        current = frontier.pop()
        for row in tx.execute("SELECT old_id FROM memory_supersedes WHERE new_id = ?", (current,)):
            old = str(row["old_id"])
            if old not in seen:
                seen.add(old)
                frontier.append(old)
    return seen


def supersede(
    engine: MemoryEngine, old_id: str, item: RecordInput, *, actor: str
) -> SupersedeResult:
    """Record ``item`` as superseding ``old_id`` (see the module docstring)."""
    actor = text_argument("actor", actor, MAX_ACTOR)
    new_id = check_record(engine, item, "record")  # refused exactly as recording it would be
    if new_id == old_id:
        raise InvalidRequest("supersedes: a memory cannot supersede itself (the same text)")
    ensure_schema(engine)
    with engine.store.read() as tx:
        old = live_target(engine, tx, old_id, "supersede")
        if old is None:
            raise ConflictError(f"memory {old_id!r} was erased: nothing to supersede")
        _refuse_cycles(tx, old_id, new_id)
    recorded = record_many(engine, [item])[0]
    now = engine.now()
    with writing(engine.store) as tx:
        _repo.bump(tx)  # serialises with other writers of these memories
        _refuse_cycles(tx, old_id, new_id)
        if superseded_by(tx, old_id) == new_id:
            return SupersedeResult(recorded, old_id, False)
        tx.execute(
            "INSERT INTO memory_supersedes (old_id, new_id, actor, at) VALUES (?, ?, ?, ?)",
            (old_id, new_id, actor, now),
        )
        tx.execute(
            "INSERT INTO memory_withdrawn (memory_id, reason, withdrawn_at) VALUES (?, ?, ?) "
            "ON CONFLICT (memory_id) DO UPDATE SET reason = excluded.reason, "
            "withdrawn_at = excluded.withdrawn_at",
            (old_id, SUPERSEDED, now),
        )
        note(tx, old_id, "superseded", actor, f"by {new_id}", now)
        note(tx, new_id, "supersedes", actor, old_id, now)
    return SupersedeResult(recorded, old_id, True)


def _refuse_cycles(tx: Tx, old_id: str, new_id: str) -> None:
    later = superseded_by(tx, old_id)
    if later is not None and later != new_id:
        raise ConflictError(
            f"memory {old_id!r} is already superseded by {later!r}: supersede that one instead"
        )
    if new_id in _predecessors(tx, old_id):
        raise ConflictError(
            f"supersedes: {new_id!r} was itself superseded, through {old_id!r}: a cycle"
        )


def hidden_as_of(tx: Tx, ring_ids: Sequence[str], instant: datetime) -> frozenset[int]:
    """Row numbers recall leaves out when it answers as of ``instant``: memories recorded
    after it, memories superseded at or before it, and every forgotten or retracted one
    (forgetting is the owner's wish, not a moment in time)."""
    if not ring_ids:
        return frozenset()
    at = format_instant_precise(instant)
    marks = ", ".join("?" for _ in ring_ids)
    later = {
        int(r["n"])
        for r in tx.execute(
            f"SELECT n FROM memory_items WHERE ring_id IN ({marks}) AND created_at > ?",
            (*ring_ids, at),
        )
    }
    return frozenset(later | withdrawn_ns(tx, ring_ids, superseded_after=at))


__all__ = ["SupersedeResult", "hidden_as_of", "supersede", "superseded_by"]
