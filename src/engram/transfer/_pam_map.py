"""engram memories as PAM memory objects and back (docs/spec/pam.md "The mapping").

Spec: Portable AI Memory (PAM) Specification v1.0 §4 (the memory object), §5 (the closed type
taxonomy, ``custom`` for the rest), §8 (confidence: "system-computed", with a decay model), §10
(``metadata`` is the one block open to extensions), §11 (provenance); engram.ote.v1 & MCP
contract (Part V, Plate 03, §3.2) for what an engram memory is: content addressed in a ring,
a kind, entities, a thread, a Beta posterior rebuilt from outcome events, a graduation status.

What PAM has no member for travels in ``metadata.engram`` (ring, ring id, kind, status,
posterior, entities, thread, seat, provenance and the outcome events with their signatures),
so an engram → PAM → engram trip keeps everything; what engram has no place for stays in the
PAM record (``_pam_tables``) and goes back out unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime

from engram import __version__
from engram.core.canonical import Json, JsonObject
from engram.core.clock import format_instant_precise
from engram.memory import Memory, MemoryRecord
from engram.transfer import _wire as wire
from engram.transfer._pam_format import (
    PAM_TYPES,
    TAG,
    content_hash,
    format_instant,
    parse_instant,
    strip_object,
    utc,
)

ENGRAM_MEMBER = "engram"  # metadata.engram: what only engram reads
PLATFORM = "engram"
EXTRACTOR = f"engram/{__version__}"
_KIND = re.compile(r"^[a-z][a-z0-9_]{0,63}$")


def type_of_kind(kind: str) -> tuple[str, str | None]:
    """An engram kind as a PAM (type, custom_type): a kind the taxonomy names is that type."""
    return (kind, None) if kind in PAM_TYPES else ("custom", kind)


def kind_of(obj: Mapping[str, Json]) -> str:
    """The engram kind of a PAM memory: engram's own when it wrote the object, else the type,
    else the custom type folded to a kind name (``security-clearance`` → ``security_clearance``)."""
    carried = engram_member(obj).get("kind")
    if isinstance(carried, str) and _KIND.match(carried):
        return carried
    if obj["type"] != "custom":
        return str(obj["type"])
    folded = re.sub(r"[^a-z0-9_]+", "_", str(obj.get("custom_type") or "").lower()).strip("_")
    if not folded:
        return "custom"
    if not folded[0].isalpha():
        folded = "custom_" + folded
    return folded[:64]


def engram_member(obj: Mapping[str, Json]) -> JsonObject:
    metadata = obj.get("metadata")
    carried = metadata.get(ENGRAM_MEMBER) if isinstance(metadata, dict) else None
    return carried if isinstance(carried, dict) else {}


def pam_part(obj: Mapping[str, Json]) -> JsonObject:
    """A memory object without ``metadata.engram`` (and without ``metadata`` left empty)."""
    out = dict(obj)
    metadata = {k: v for k, v in wire.block(obj, "metadata").items() if k != ENGRAM_MEMBER}
    if metadata:
        out["metadata"] = metadata
    else:
        out.pop("metadata", None)
    return out


def tags_of(entities: Sequence[str]) -> list[str]:
    """Entities as PAM tags (lower case, ``[a-z0-9][a-z0-9_-]*``, each once); entities that
    fold to nothing are left out of the tags (they travel whole in ``metadata.engram``)."""
    out: list[str] = []
    for entity in entities:
        tag = re.sub(r"[^a-z0-9_-]+", "-", entity.lower()).strip("-_")
        if tag and TAG.match(tag) and tag not in out:
            out.append(tag)
    return out


def changed_at(record: MemoryRecord) -> datetime:
    """When a memory last changed: created, graduated, or given its latest outcome event."""
    times = [parse_instant(record.memory.created_at, "created_at")]
    if record.memory.graduated_at:
        times.append(parse_instant(record.memory.graduated_at, "graduated_at"))
    times += [parse_instant(e["created_at"], "event.created_at") for e in record.events]
    return max(utc(t) for t in times)


def engram_metadata(record: MemoryRecord) -> JsonObject:
    m = record.memory
    value: JsonObject = {
        "memory_id": m.id,
        "ring": m.ring,
        "ring_id": m.ring_id,
        "kind": m.kind,
        "status": str(m.status),
        "graduated_at": m.graduated_at,
        "alpha": float(m.alpha),
        "beta": float(m.beta),
        "entities": list(m.entities),
        "thread": m.thread or None,
        "seat_id": m.seat_id,
        "origin": m.origin,
        "provenance": dict(m.provenance) or None,
        "events": [{k: v for k, v in e.items() if v is not None} for e in record.events],
    }
    return {k: v for k, v in value.items() if v is not None}


def _confidence(record: MemoryRecord, base: Mapping[str, Json] | None) -> JsonObject:
    """§8: the posterior mean Beta(α, β) is engram's current confidence; no time decay."""
    m = record.memory
    out: JsonObject = {
        "initial": 0.5,  # Beta(1, 1), every memory's prior
        "decay_model": "none",
        **{k: v for k, v in (base or {}).items() if k in ("initial", "decay_model")},
        "current": m.alpha / (m.alpha + m.beta),
    }
    if record.events:
        out["last_reinforced"] = format_instant(
            max(parse_instant(e["created_at"], "event.created_at") for e in record.events)
        )
    return out


def native_object(record: MemoryRecord) -> JsonObject:
    """The PAM memory object of an engram memory that never came from a PAM document."""
    m = record.memory
    type_, custom = type_of_kind(m.kind)
    created = parse_instant(m.created_at, "created_at")
    provenance: JsonObject = {"platform": PLATFORM, "extractor": EXTRACTOR}
    if m.thread:
        provenance["conversation_ref"] = m.thread
    obj: JsonObject = {
        "id": m.id,
        "type": type_,
        "status": "active",
        "content": m.text,
        "content_hash": content_hash(m.text),
        "tags": [*tags_of(m.entities)],
        "confidence": _confidence(record, None),
        "temporal": {
            "created_at": format_instant(created),
            "updated_at": format_instant(max(created, changed_at(record))),
        },
        "provenance": provenance,
        "metadata": {ENGRAM_MEMBER: engram_metadata(record)},
    }
    if custom is not None:
        obj["custom_type"] = custom
    return obj


def refreshed_object(
    stored: Mapping[str, Json], record: MemoryRecord | None, decisions: frozenset[str]
) -> JsonObject:
    """A PAM object kept from a document, brought up to date with the engram memory serving it.

    Unchanged since it arrived (no outcome event it did not bring), it goes out exactly as it
    came (its own confidence, its own ``updated_at``); with new evidence, the confidence is
    engram's posterior and ``updated_at`` the latest event. ``metadata.engram`` always says
    where engram keeps it. ``embedding_ref`` never goes out: engram writes no embeddings file
    (§12.1 rule 2).
    """
    obj: JsonObject = {k: v for k, v in stored.items() if k != "embedding_ref"}
    if record is None:
        return obj
    metadata = dict(wire.block(obj, "metadata"))
    metadata[ENGRAM_MEMBER] = engram_metadata(record)
    obj["metadata"] = metadata
    fresh = [e for e in record.events if e["decision_id"] not in decisions]
    if fresh:
        base = obj.get("confidence")
        obj["confidence"] = _confidence(record, base if isinstance(base, dict) else None)
        temporal = dict(wire.obj(obj["temporal"], "temporal"))
        latest = max(parse_instant(e["created_at"], "event.created_at") for e in fresh)
        previous = temporal.get("updated_at") or temporal["created_at"]
        if utc(latest) > utc(parse_instant(previous, "updated_at")):
            temporal["updated_at"] = format_instant(latest)
        obj["temporal"] = temporal
    return obj


def incoming_memory(
    obj: Mapping[str, Json],
    *,
    ring: str,
    ring_id: str,
    memory_id: str,
    seat_id: str,
    export_id: str | None,
) -> JsonObject:
    """The ``import_memories`` record for a PAM memory (content address already computed)."""
    carried = engram_member(obj)
    entities = carried.get("entities")
    if not (isinstance(entities, list) and all(isinstance(e, str) for e in entities)):
        entities = list(wire.arr(obj.get("tags") or [], "tags"))
    thread = carried.get("thread")
    if not isinstance(thread, str):
        thread = wire.block(obj, "provenance").get("conversation_ref") or ""
    provenance = carried.get("provenance")
    if not isinstance(provenance, dict):
        source = wire.obj(obj["provenance"], "provenance")
        provenance = strip_object(
            {"pam": {"id": obj["id"], "platform": source["platform"], "export_id": export_id}}
        )
    graduated = carried.get("status") in ("graduated", "held_import")
    seat = carried.get("seat_id")
    temporal = wire.obj(obj["temporal"], "temporal")
    created = utc(parse_instant(temporal["created_at"], "temporal.created_at"))
    memory: JsonObject = {
        "id": memory_id,
        "ring": ring,
        "ring_id": ring_id,
        "kind": kind_of(obj),
        "text": obj["content"],
        "entities": entities,
        "provenance": dict(provenance),
        "thread": thread,
        "seat_id": seat if isinstance(seat, str) and seat else seat_id,
        "status": "graduated" if graduated else "candidate",
        "created_at": format_instant_precise(created),
    }
    events = carried.get("events")
    return {"memory": memory, "events": list(events) if isinstance(events, list) else []}


def record_of(memory: Memory, events: Sequence[Mapping[str, Json]]) -> MemoryRecord:
    return MemoryRecord(memory, tuple(dict(e) for e in events))


__all__ = [
    "ENGRAM_MEMBER",
    "EXTRACTOR",
    "PLATFORM",
    "changed_at",
    "engram_member",
    "engram_metadata",
    "incoming_memory",
    "kind_of",
    "native_object",
    "pam_part",
    "record_of",
    "refreshed_object",
    "tags_of",
    "type_of_kind",
]
