"""Memories out of a store into a cartridge, and out of a cartridge into a store.

Spec: lboel/acx@85f1358 SPEC.md §7.1-§7.6 and §12 items 8-10; docs/spec/acx.md §8.4. The CLI,
MCP and HTTP adapters call these two functions; neither reads a cartridge or a store itself.

- :func:`ring_records` turns one ring's memories into author records (``title`` the kind,
  ``summary`` the text, ``tags`` the entities); a repo ring's memories (M2) are field-learned
  with ``repoId`` the ring id, so export quarantines them unless asked, and then fingerprints
  them with the installation salt (§7.2).
- :func:`import_cartridge` verifies the file, applies the trust decision, refuses malformed
  records (§7.1), keeps field-learned records of another codebase out (§7.4: never
  re-projected), merges the rest by §7.3's two keys within the batch, maps each survivor once to
  the store's content address, and hands typed :class:`engram.memory.MemoryRecord` values to
  ``engram.memory.import_memories``, whose one existence query per batch makes "already known"
  a single lookup and a second import of the same cartridge add nothing. Vectors in the file
  are never read: the store indexes the text with its own engine (§7.6).
"""

from __future__ import annotations

import os
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime

from engram.cartridge import (
    DEFAULT_ACCEPT,
    Cartridge,
    TrustReport,
    merge_records,
    record_problems,
    require_state,
    verify_rom,
)
from engram.core.bulk import gc_paused
from engram.core.canonical import JsonObject
from engram.errors import CartridgeFormatError, Forbidden
from engram.memory import (
    Memory,
    MemoryEngine,
    MemoryRecord,
    MemoryStatus,
    export_memories,
    import_memories,
    owner_of,
    withdrawn_among,
)
from engram.transfer._record import TransferRecord
from engram.trust import TrustRegistry, TrustState


def ring_records(engine: MemoryEngine, ring: str) -> list[JsonObject]:
    """One ring's memories as author records for export (M2 memories are field-learned)."""
    mount = engine.spec.mount_for(ring)
    ring_id = mount.ring_id if mount else ring
    if mount is None and (owner_of(ring_id) is not None or engine.subject is not None):
        # A subject's memories go only where that subject's own caller takes them.
        raise Forbidden(f"ring {ring!r} is not mounted by this caller")
    with gc_paused():
        return _ring_records(engine, ring_id)


def _ring_records(engine: MemoryEngine, ring_id: str) -> list[JsonObject]:
    items = export_memories(engine.store, ring_id)
    with engine.store.read() as tx:
        forgotten = withdrawn_among(tx, [item.memory.id for item in items])
    records: list[JsonObject] = []
    for item in items:
        m = item.memory
        if m.id in forgotten:
            continue  # forgotten (or retracted): never exported
        records.append(
            {
                "id": m.id.removeprefix("mem:")[:32],
                "title": m.kind,
                "summary": m.text,
                "sourceType": m.kind,
                "tags": list(m.entities),
                "timestamp": m.created_at,
                "repoId": m.ring_id if m.ring == "M2" else None,
                "impact": "neutral",
                "xpAwarded": 0,
            }
        )
    return records


@dataclass(frozen=True)
class ImportSummary:
    report: TrustReport
    imported: int
    already_known: int
    merged: int
    quarantined: int
    ring_id: str
    erased: int = 0  # erased here before: reported, not imported again

    def to_wire(self) -> JsonObject:
        return {
            "trust": self.report.to_wire(),
            "ringId": self.ring_id,
            "imported": self.imported,
            "alreadyKnown": self.already_known,
            "merged": self.merged,
            "quarantined": self.quarantined,
            "erasedHere": self.erased,
        }


def import_cartridge(
    engine: MemoryEngine,
    path: str | os.PathLike[str],
    *,
    ring: str = "M4",
    codebase_fingerprint: str | None = None,
    registry: TrustRegistry | None = None,
    local_keyids: Collection[str] = (),
    accept: Collection[TrustState] = DEFAULT_ACCEPT,
    now: datetime | None = None,
) -> ImportSummary:
    with gc_paused():
        return _import_cartridge(
            engine,
            path,
            ring=ring,
            codebase_fingerprint=codebase_fingerprint,
            registry=registry,
            local_keyids=local_keyids,
            accept=accept,
            now=now,
        )


def _import_cartridge(
    engine: MemoryEngine,
    path: str | os.PathLike[str],
    *,
    ring: str,
    codebase_fingerprint: str | None,
    registry: TrustRegistry | None,
    local_keyids: Collection[str],
    accept: Collection[TrustState],
    now: datetime | None,
) -> ImportSummary:
    mount = engine.spec.mount_for(ring)
    if mount is None or not mount.writable:
        raise Forbidden(f"ring {ring!r} is not a writable mount of {engine.spec.seat.seat_id}")
    with Cartridge.open(path) as cartridge:
        report, rom = verify_rom(cartridge, registry=registry, local_keyids=local_keyids, now=now)
    require_state(report, accept)
    incoming: list[TransferRecord] = []
    quarantined = 0
    for row in sorted(rom.memories.values(), key=lambda r: r.id):
        members = row.record()
        problems = record_problems(members, f"memory:{row.id}")
        if problems:
            raise CartridgeFormatError("; ".join(problems[:5]))
        record = TransferRecord.from_wire(members)
        if not record.portable and record.codebase_fingerprint != codebase_fingerprint:
            quarantined += 1  # foreign field-learned memory is never re-projected (§7.4)
            continue
        incoming.append(record)
    merged = merge_records([], [r.to_wire() for r in incoming])
    survivors = [TransferRecord.from_wire(r) for r in merged.records]
    origin = f"{report.publisher_id}/{report.artifact_id}@{report.artifact_version}"
    created = engine.now()
    # Looked up once, not per memory (an enum's .value is a descriptor call; 100,000 memories).
    trust, candidate, seat_id = report.state.value, MemoryStatus.CANDIDATE, engine.spec.seat.seat_id
    typed = [
        MemoryRecord(
            Memory(
                id=r.memory_id(mount.ring_id),
                ring=mount.ring,
                ring_id=mount.ring_id,
                kind=r.kind,
                text=r.text,
                entities=r.tags,
                provenance={
                    "acxRecordId": r.id,
                    "artifactFingerprint": r.artifact_fingerprint,
                    "cartridge": origin,
                    "manifestHash": report.manifest_hash,
                    "trust": trust,
                },
                thread="",
                seat_id=seat_id,
                tokens=0,
                alpha=1.0,
                beta=1.0,
                status=candidate,
                graduated_at=None,
                origin="import",
                created_at=created,
            ),
            (),
        )
        for r in survivors
    ]
    result = import_memories(engine.store, typed)
    return ImportSummary(
        report=report,
        imported=result.imported,
        already_known=result.already_present,
        merged=len(merged.by_id) + len(merged.by_fingerprint),
        quarantined=quarantined,
        ring_id=mount.ring_id,
        erased=result.erased,
    )


__all__ = ["ImportSummary", "import_cartridge", "ring_records"]
