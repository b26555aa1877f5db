"""``export_pam``: a seat's memories as one Portable AI Memory (PAM) 1.0 memory-store document.

Spec: Portable AI Memory (PAM) Specification v1.0 §3 (root), §4-§11 (memory objects), §14
(conversations index, consistent with ``provenance.conversation_ref``), §15 (integrity), §16
(incremental exports: ``since`` and ``base_export_id``), §18 (the optional Ed25519 signature),
§21.1 (memories marked ``exportable: false`` are never exported). The mapping is in
``_pam_map``; decisions in docs/spec/pam.md.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from engram.core.bulk import gc_paused
from engram.core.canonical import Json, JsonObject
from engram.core.clock import format_instant_precise
from engram.core.keys import PrivateKey
from engram.errors import Forbidden, NotFound
from engram.memory import MemoryEngine, MemoryRecord, export_memories, withdrawn_among
from engram.transfer import _pam_tables as tables
from engram.transfer import _wire as wire
from engram.transfer._pam_format import (
    SCHEMA_NAME,
    SCHEMA_VERSION,
    SPEC_URI,
    checksum,
    format_instant,
    normal_memory,
    parse_instant,
    signature_block,
    utc,
)
from engram.transfer._pam_map import (
    EXTRACTOR,
    PLATFORM,
    changed_at,
    native_object,
    refreshed_object,
)


@dataclass(frozen=True)
class PamExport:
    """A written PAM document and what went into it."""

    document: JsonObject
    export_id: str
    export_type: str
    memories: int
    withheld: int  # memories marked exportable: false, left out (§21.1)
    ring_ids: tuple[str, ...]
    signer: str | None  # the Multikey of the signing key

    def to_wire(self) -> JsonObject:
        return {
            "export_id": self.export_id,
            "export_type": self.export_type,
            "memories": self.memories,
            "withheld": self.withheld,
            "relations": len(wire.objects(self.document.get("relations"), "relations")),
            "conversations": len(
                wire.objects(self.document.get("conversations_index"), "conversations_index")
            ),
            "ring_ids": list(self.ring_ids),
            "checksum": wire.block(self.document, "integrity").get("checksum"),
            "signed_by": self.signer,
        }


def _ring_ids(engine: MemoryEngine, rings: Sequence[str] | None) -> tuple[str, ...]:
    if rings is None:
        return engine.spec.ring_ids
    out: list[str] = []
    for ring in rings:
        mount = engine.spec.mount_for(ring)
        if mount is None:
            raise Forbidden(f"ring {ring!r} is not mounted by {engine.spec.seat.seat_id}")
        if mount.ring_id not in out:
            out.append(mount.ring_id)
    return tuple(out)


def _owner(engine: MemoryEngine, owner_id: str | None) -> JsonObject:
    """The owner named, else the store's (set by its first import or export), else a new
    UUID v4 kept for every later export (§6: stable across exports). Acting for a subject:
    the owner named, else the subject itself; the store's owner is never another subject's
    (docs/spec/memory-ownership.md)."""
    if engine.subject is not None:
        return {"id": owner_id or engine.subject}
    with engine.store.transaction() as tx:
        kept = tables.owner(tx)
        if kept is None:
            created = format_instant(engine.clock.now())
            kept = {"id": owner_id or str(uuid.uuid4()), "created_at": created}
            tables.set_owner(tx, kept, engine.now())
    if owner_id is not None and owner_id != kept.get("id"):
        return {"id": owner_id}
    return kept


def _since(engine: MemoryEngine, since: datetime | None, base: str | None) -> datetime | None:
    if base is None:
        return since
    with engine.store.read() as tx:
        logged = tables.logged_export(tx, base)
    if logged is None:
        raise NotFound(
            f"base export {base!r} is not an export this store has written or imported; "
            "name a known export id, or give --since alone"
        )
    return since or parse_instant(logged.export_date, "export_date")


def _created(memory: JsonObject) -> datetime:
    return utc(parse_instant(wire.block(memory, "temporal").get("created_at"), "created_at"))


def _conversations(
    memories: Sequence[JsonObject], kept: dict[str, JsonObject], *, full: bool
) -> list[JsonObject]:
    """§14.1: each conversation a memory refers to, its ``derived_memories`` exactly the
    exported memories that refer to it (in the order the source listed them, then the rest)."""
    refs: dict[str, list[JsonObject]] = {}
    for m in memories:
        ref = wire.opt_text(wire.block(m, "provenance").get("conversation_ref"), "conversation_ref")
        if ref is not None:
            refs.setdefault(ref, []).append(m)
    out: list[JsonObject] = []
    for conv_id in sorted(set(refs) | (set(kept) if full else set())):
        derived_ids = [m["id"] for m in refs.get(conv_id, [])]
        entry = dict(kept.get(conv_id) or {})
        if not entry:
            first = min(refs[conv_id], key=lambda m: _created(m))
            entry = {
                "id": conv_id,
                "platform": PLATFORM,
                "temporal": {"created_at": wire.block(first, "temporal").get("created_at")},
                "tags": [],
            }
        carried = wire.arr(entry.get("derived_memories", []), "derived_memories")
        listed = [d for d in carried if d in derived_ids]
        entry["derived_memories"] = listed + [d for d in derived_ids if d not in listed]
        out.append(entry)
    return out


def export_pam(
    engine: MemoryEngine,
    *,
    rings: Sequence[str] | None = None,
    owner_id: str | None = None,
    since: datetime | None = None,
    base_export_id: str | None = None,
    sign_key: PrivateKey | None = None,
) -> PamExport:
    """The memories of ``rings`` (every mounted ring when None) as a PAM document.

    ``since`` / ``base_export_id`` make an incremental export (§16): only memories created or
    changed here after ``since`` (default: the base export's ``export_date``). Memories kept
    but not served (retracted, superseded, archived) are exported with their status, never
    dropped. The export is logged so a later delta can name it as its base.
    """
    with gc_paused():  # one dict per memory, up to the document's cap (engram.core.bulk)
        return _export_pam(
            engine,
            rings=rings,
            owner_id=owner_id,
            since=since,
            base_export_id=base_export_id,
            sign_key=sign_key,
        )


def _export_pam(
    engine: MemoryEngine,
    *,
    rings: Sequence[str] | None,
    owner_id: str | None,
    since: datetime | None,
    base_export_id: str | None,
    sign_key: PrivateKey | None,
) -> PamExport:
    tables.migrate(engine.store)
    ring_ids = _ring_ids(engine, rings)
    owner = _owner(engine, owner_id)
    cutoff = _since(engine, since, base_export_id)
    incremental = cutoff is not None or base_export_id is not None

    records: dict[str, MemoryRecord] = {}
    for ring_id in ring_ids:
        for record in export_memories(engine.store, ring_id):
            records[record.memory.id] = record
    with engine.store.read() as tx:
        rows = tables.rows_in_rings(tx, list(ring_ids))
        # A withdrawn memory no PAM record holds is the old content of one that changed.
        replaced = withdrawn_among(tx, list(records))
        relations = tables.objects(tx, "pam_relations")
        conversations = {
            wire.text(obj["id"], "conversation id"): obj
            for obj, _ in tables.objects(tx, "pam_conversations")
        }

    objects: dict[str, tuple[JsonObject, datetime]] = {}
    claimed: set[str] = set()
    for row in rows:
        holder = records.get(row.memory_id or "")
        obj = refreshed_object(row.object, holder, row.decisions)
        obj["status"] = row.status
        moment = utc(parse_instant(row.changed_at, "changed_at"))
        if holder is not None:
            claimed.add(holder.memory.id)
            moment = max(moment, changed_at(holder))
        objects[row.pam_id] = (obj, moment)
    for memory_id, record in records.items():
        if memory_id not in claimed and memory_id not in objects and memory_id not in replaced:
            objects[memory_id] = (native_object(record), changed_at(record))

    memories: list[JsonObject] = []
    withheld = 0
    for pam_id in sorted(objects):
        obj, moment = objects[pam_id]
        if wire.block(obj, "access").get("exportable") is False:
            withheld += 1
            continue
        if cutoff is not None and moment <= utc(cutoff):
            continue
        memories.append(normal_memory(obj, f"memory {pam_id}"))

    exported = {m["id"] for m in memories}
    now = engine.clock.now()
    export_id = str(uuid.uuid4())
    export_type = "incremental" if incremental else "full"
    export_date = format_instant(now)
    digest = checksum(memories)
    kept_relations: list[Json] = [
        r for r, _ in relations if r["from"] in exported and r["to"] in exported
    ]
    document: JsonObject = {
        "schema": SCHEMA_NAME,
        "schema_version": SCHEMA_VERSION,
        "spec_uri": SPEC_URI,
        "export_id": export_id,
        "exported_by": EXTRACTOR,
        "export_date": export_date,
        "owner": owner,
        "memories": [*memories],
        "relations": kept_relations,
        "conversations_index": [*_conversations(memories, conversations, full=not incremental)],
        "integrity": {
            "canonicalization": "RFC8785",
            "checksum": digest,
            "total_memories": len(memories),
        },
        "export_type": export_type,
    }
    if engine.subject is None:
        with engine.store.read() as tx:
            registry = tables.type_registry(tx)
        if registry is not None:
            document["type_registry"] = registry  # as the imported documents named it
    if base_export_id is not None:
        document["base_export_id"] = base_export_id
    since_text = None if cutoff is None else format_instant(cutoff)
    if since_text is not None:
        document["since"] = since_text
    signer = None
    if sign_key is not None:
        block = signature_block(document, sign_key, now)
        document["signature"] = block
        signer = wire.text(block["public_key"], "signature.public_key")
    with engine.store.transaction() as tx:
        tables.log_export(
            tx,
            export_id=export_id,
            direction="export",
            export_type=export_type,
            export_date=export_date,
            since=since_text,
            base_export_id=base_export_id,
            owner_id=wire.text(owner.get("id"), "owner.id"),
            checksum=digest,
            signer=signer,
            now=format_instant_precise(now),
        )
    return PamExport(
        document,
        export_id,
        export_type,
        len(memories),
        withheld,
        ring_ids,
        signer,
    )


__all__ = ["PamExport", "export_pam"]
