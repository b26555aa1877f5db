"""Memories out of a cartridge into a store, streamed.

Spec: lboel/acx@85f1358 SPEC.md §7.1-§7.6 and §12 items 8-10; docs/spec/acx.md §8.4. The CLI,
MCP and HTTP adapters call :func:`import_cartridge` (export: ``engram.transfer._export``);
neither reads a cartridge or a store itself.

:func:`import_cartridge` verifies the file, applies the trust decision, refuses malformed records
(§7.1), keeps field-learned records of another codebase out (§7.4: never re-projected), merges the
rest by §7.3's two keys within the batch, maps each survivor once to the store's content address,
and hands typed :class:`engram.memory.MemoryRecord` values to ``engram.memory.import_memories``,
whose one existence query per chunk makes "already known" a single lookup and a second import of
the same cartridge add nothing. Vectors in the file are never read: the store indexes the text
with its own engine (§7.6).

It reads the file in three passes inside one read transaction (``Cartridge.snapshot``: every pass
sees the bytes the first verified), none of which holds the memories (issue 33: 100,000 of them
took 780 MB): ``verify`` (``check_rom``, every row checked and dropped); one grouping query that
finds the §7.3 duplicate groups from the memory table's denormalised columns (verification proved
them equal to the signed payloads), whose members alone are read and folded in id order as
``merge_records`` folds them; and the import, which reads the rows in id order and streams each
record (a group's survivor in its first member's place, the others merged away) into
``import_memories`` in chunks, in one store transaction. The records, the order, the survivors,
the counts and the error raised for the first malformed record are those of checking and merging
a list of them all; a malformed record anywhere rolls the whole import back.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from datetime import datetime

from engram.cartridge import (
    DEFAULT_ACCEPT,
    Cartridge,
    TrustReport,
    require_state,
    verify,
)
from engram.cartridge.internals import (
    MemoryRow,
    merge_key,
    payload_record,
    record_problems,
    resolve_conflict,
)
from engram.core.bulk import gc_paused
from engram.core.canonical import JsonObject
from engram.errors import CartridgeFormatError, Forbidden
from engram.memory import Memory, MemoryEngine, MemoryRecord, MemoryStatus, import_memories
from engram.transfer._record import TransferRecord
from engram.trust import TrustRegistry, TrustState


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
    with Cartridge.open(path) as cartridge, cartridge.snapshot():
        report = verify(cartridge, registry=registry, local_keyids=local_keyids, now=now)
        require_state(report, accept)
        tally = _Tally(_folded_groups(cartridge, codebase_fingerprint))
        origin = f"{report.publisher_id}/{report.artifact_id}@{report.artifact_version}"
        created = engine.now()
        # Looked up once, not per memory (an enum's .value is a descriptor call; 100,000 of them).
        trust, candidate = report.state.value, MemoryStatus.CANDIDATE
        seat_id = engine.spec.seat.seat_id
        typed = (
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
            for r in _survivors(cartridge, codebase_fingerprint, tally)
        )
        result = import_memories(engine.store, typed)
    return ImportSummary(
        report=report,
        imported=result.imported,
        already_known=result.already_present,
        merged=tally.merged,
        quarantined=tally.quarantined,
        ring_id=mount.ring_id,
        erased=result.erased,
    )


_ROWS = "SELECT id, payload FROM memory ORDER BY id"
"""Every memory row (both zones) in id order, the order ``merge_records`` met them in."""

_GROUPED = """
WITH incoming AS (
  SELECT id, zone, artifact_fingerprint, codebase_fingerprint, payload, oid, created_at,
    zone = 'rom' AS portable, coalesce(codebase_fingerprint, '') AS codebase
  FROM memory WHERE zone = 'rom' OR codebase_fingerprint = ?1
), duplicated AS (
  SELECT artifact_fingerprint, portable, codebase FROM incoming
  GROUP BY artifact_fingerprint, portable, codebase HAVING count(*) > 1
)
SELECT id, zone, artifact_fingerprint, codebase_fingerprint, payload, oid, created_at
FROM incoming JOIN duplicated USING (artifact_fingerprint, portable, codebase)
ORDER BY id
"""
"""The rows of §7.3's fingerprint groups among the records imported (not quarantined), in id
order. The key is read from the denormalised columns, which verification proved equal to each
payload's ``zone``, ``artifactFingerprint`` and ``codebaseFingerprint`` (tier and fingerprint
rules hold for every record that is imported: a record that breaks them is refused). A record
whose columns would place it otherwise is malformed, and the import stops at it."""


@dataclass
class _Tally:
    folds: dict[tuple[str, bool, str], tuple[str, JsonObject]]
    """Per duplicated §7.3 key: the id its survivor keeps (its first member's) and the survivor."""
    merged: int = 0
    quarantined: int = 0


def _folded_groups(
    cartridge: Cartridge, codebase_fingerprint: str | None
) -> dict[tuple[str, bool, str], tuple[str, JsonObject]]:
    """Each duplicate group's survivor, folded over its members in id order as ``merge_records``
    folds them (``resolve_conflict``); only the groups' members are read. A member with problems
    is left out here: the import refuses it when it gets there."""
    folds: dict[tuple[str, bool, str], tuple[str, JsonObject]] = {}
    for row in cartridge.rows(_GROUPED, (codebase_fingerprint,)):
        members = _memory_row(row).record()
        if record_problems(members, f"memory:{row[0]}"):
            continue
        key = merge_key(members)
        if key in folds:
            first, fold = folds[key]
            folds[key] = (first, resolve_conflict(fold, members))
        else:
            folds[key] = (str(members["id"]), dict(members))
    return folds


def _survivors(
    cartridge: Cartridge, codebase_fingerprint: str | None, tally: _Tally
) -> Iterator[TransferRecord]:
    """The records to import, in id order: each checked (the first malformed one refused),
    foreign field-learned ones counted and left out, a duplicate group's survivor in its first
    member's place and its other members counted as merged."""
    for row in cartridge.rows(_ROWS):
        # Verified in this snapshot: id and payload are text.
        rid = str(row[0])
        members = payload_record(rid, str(row[1]))
        problems = record_problems(members, f"memory:{rid}")
        if problems:
            raise CartridgeFormatError("; ".join(problems[:5]))
        record = TransferRecord.from_wire(members)
        if not record.portable and record.codebase_fingerprint != codebase_fingerprint:
            tally.quarantined += 1  # foreign field-learned memory is never re-projected (§7.4)
            continue
        group = tally.folds.get(merge_key(members))
        if group is None:
            yield record
        elif group[0] == rid:
            yield TransferRecord.from_wire(group[1])
        else:
            tally.merged += 1


def _memory_row(row: tuple[object, ...]) -> MemoryRow:
    # Verified in this snapshot: every column is text (the codebase fingerprint may be NULL).
    rid, zone, afp, cbf, payload, oid, created = row
    return MemoryRow(
        str(rid), str(zone), str(afp), None if cbf is None else str(cbf), str(payload), str(oid),
        str(created),
    )  # fmt: skip


__all__ = ["ImportSummary", "import_cartridge"]
