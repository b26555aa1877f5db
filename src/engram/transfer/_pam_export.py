"""``export_pam``: a seat's memories as one Portable AI Memory (PAM) 1.0 memory-store document.

Spec: Portable AI Memory (PAM) Specification v1.0 §3 (root), §4-§11 (memory objects), §14
(conversations index, consistent with ``provenance.conversation_ref``), §15 (integrity), §16
(incremental exports: ``since`` and ``base_export_id``), §18 (the optional Ed25519 signature),
§21.1 (memories marked ``exportable: false`` are never exported). The mapping is in
``_pam_map``; decisions in docs/spec/pam.md.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import IO, Any

from engram.core.bulk import gc_paused
from engram.core.canonical import Json, JsonObject, canonicalize
from engram.core.clock import format_instant_precise
from engram.core.jsonio import dumps_text
from engram.core.keys import PrivateKey
from engram.errors import Forbidden, InvalidRequest, NotFound
from engram.memory import MemoryEngine, MemoryRecord, export_memories
from engram.memory.internals import withdrawn_among
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
    utc,
)
from engram.transfer._pam_map import (
    EXTRACTOR,
    PLATFORM,
    changed_at,
    native_object,
    refreshed_object,
)
from engram.transfer._pam_read import DEFAULT_LIMITS, PamLimits
from engram.transfer._pam_signature import signature_block


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


Cited = tuple[str, str, Json]
"""An exported memory that names a conversation: its id, the conversation, its created_at."""


def cited(memory: JsonObject) -> Cited | None:
    ref = wire.opt_text(
        wire.block(memory, "provenance").get("conversation_ref"), "conversation_ref"
    )
    if ref is None:
        return None
    return (
        wire.text(memory["id"], "memory id"),
        ref,
        wire.block(memory, "temporal").get("created_at"),
    )


def _conversations(
    citing: Sequence[Cited], kept: dict[str, JsonObject], *, full: bool
) -> list[JsonObject]:
    """§14.1: each conversation a memory refers to, its ``derived_memories`` exactly the
    exported memories that refer to it (in the order the source listed them, then the rest)."""
    refs: dict[str, list[Cited]] = {}
    for c in citing:
        refs.setdefault(c[1], []).append(c)
    out: list[JsonObject] = []
    for conv_id in sorted(set(refs) | (set(kept) if full else set())):
        derived_ids: list[Json] = [c[0] for c in refs.get(conv_id, [])]
        entry = dict(kept.get(conv_id) or {})
        if not entry:
            first = min(refs[conv_id], key=lambda c: utc(parse_instant(c[2], "created_at")))
            entry = {
                "id": conv_id,
                "platform": PLATFORM,
                "temporal": {"created_at": first[2]},
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


@dataclass
class _Selection:
    """What an export takes from the store before it writes a memory."""

    ring_ids: tuple[str, ...]
    owner: JsonObject
    cutoff: datetime | None
    incremental: bool
    # A memory engram recorded is held as its record and mapped as it is written (its PAM
    # object is twice the record's size: 400 MB at 100,000 when all were built up front).
    objects: dict[str, tuple[JsonObject | MemoryRecord, datetime]]
    relations: list[tuple[JsonObject, str]]
    conversations: dict[str, JsonObject]
    withheld: int = 0


def _select(
    engine: MemoryEngine,
    rings: Sequence[str] | None,
    owner_id: str | None,
    since: datetime | None,
    base_export_id: str | None,
) -> _Selection:
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

    objects: dict[str, tuple[JsonObject | MemoryRecord, datetime]] = {}
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
            objects[memory_id] = (record, changed_at(record))
    return _Selection(ring_ids, owner, cutoff, incremental, objects, relations, conversations)


def _withheld(held: JsonObject | MemoryRecord) -> bool:
    """Marked ``exportable: false`` (§21.1); a memory engram recorded never is."""
    return isinstance(held, dict) and wire.block(held, "access").get("exportable") is False


def _goes_out(selection: _Selection, held: JsonObject | MemoryRecord, moment: datetime) -> bool:
    if _withheld(held):
        return False
    return selection.cutoff is None or moment > utc(selection.cutoff)


def _memories(selection: _Selection) -> Iterator[JsonObject]:
    """The exported memories in id order, each mapped and put in the normal form as it is
    reached (the objects are dropped as they go)."""
    objects = selection.objects
    for pam_id in sorted(objects):
        held, moment = objects.pop(pam_id)
        if _withheld(held):
            selection.withheld += 1
        elif not _goes_out(selection, held, moment):
            continue
        elif isinstance(held, dict):
            yield normal_memory(held, f"memory {pam_id}")
        else:
            # native_object writes the normal form itself (no nulls, its defaults written out,
            # instants by format_instant): normal_memory would copy it unchanged, at a fifth of
            # an export's CPU (tests/pam: every exported memory is its own normal form).
            yield native_object(held)


_PARTS = (
    "export it in parts: --ring for one ring at a time, --since for what changed after an instant"
)


def _admit_count(selection: _Selection, limits: PamLimits) -> None:
    """Refuse, before a byte is written, an export of more memories than a document read a
    memory at a time may hold: the importer would refuse the file."""
    count = sum(_goes_out(selection, o, m) for o, m in selection.objects.values())
    if count > limits.max_memories:
        raise InvalidRequest(
            f"{count} memories to export: one PAM document holds at most {limits.max_memories}; "
            + _PARTS
        )


def _admit_bytes(size: int, limits: PamLimits) -> None:
    if size > limits.max_bytes:
        raise InvalidRequest(
            f"the document would be {size} bytes: one PAM document is at most {limits.max_bytes}; "
            + _PARTS
        )


def _document(
    engine: MemoryEngine,
    selection: _Selection,
    memories: list[Json],
    summary: tuple[set[str], list[Cited], str],
    base_export_id: str | None,
    sign_key: PrivateKey | None,
    admit: Callable[[JsonObject], None] | None = None,
) -> PamExport:
    """The document around its memories (``memories``: all of them, or a stand-in when they
    are written apart); ``summary``: the exported ids, the memories citing a conversation, the
    checksum. Signs it, hands it to ``admit`` (which may refuse it), and logs the export."""
    exported, citing, digest = summary
    now = engine.clock.now()
    export_id = str(uuid.uuid4())
    export_type = "incremental" if selection.incremental else "full"
    export_date = format_instant(now)
    kept_relations: list[Json] = [
        r for r, _ in selection.relations if r["from"] in exported and r["to"] in exported
    ]
    conversations = _conversations(citing, selection.conversations, full=not selection.incremental)
    document: JsonObject = {
        "schema": SCHEMA_NAME,
        "schema_version": SCHEMA_VERSION,
        "spec_uri": SPEC_URI,
        "export_id": export_id,
        "exported_by": EXTRACTOR,
        "export_date": export_date,
        "owner": selection.owner,
        "memories": memories,
        "relations": kept_relations,
        "conversations_index": [*conversations],
        "integrity": {
            "canonicalization": "RFC8785",
            "checksum": digest,
            "total_memories": len(exported),
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
    cutoff = selection.cutoff
    since_text = None if cutoff is None else format_instant(cutoff)
    if since_text is not None:
        document["since"] = since_text
    signer = None
    if sign_key is not None:
        block = signature_block(document, sign_key, now)
        document["signature"] = block
        signer = wire.text(block["public_key"], "signature.public_key")
    if admit is not None:
        admit(document)  # before the export is logged: a refused one never happened
    with engine.store.transaction() as tx:
        tables.log_export(
            tx,
            export_id=export_id,
            direction="export",
            export_type=export_type,
            export_date=export_date,
            since=since_text,
            base_export_id=base_export_id,
            owner_id=wire.text(selection.owner.get("id"), "owner.id"),
            checksum=digest,
            signer=signer,
            now=format_instant_precise(now),
        )
    return PamExport(
        document,
        export_id,
        export_type,
        len(exported),
        selection.withheld,
        selection.ring_ids,
        signer,
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
    selection = _select(engine, rings, owner_id, since, base_export_id)
    memories = list(_memories(selection))
    exported = {wire.text(m["id"], "memory id") for m in memories}
    citing = [c for c in map(cited, memories) if c is not None]
    summary = (exported, citing, checksum(memories))
    return _document(engine, selection, [*memories], summary, base_export_id, sign_key)


def export_pam_file(
    engine: MemoryEngine,
    out: IO[str],
    *,
    rings: Sequence[str] | None = None,
    owner_id: str | None = None,
    since: datetime | None = None,
    base_export_id: str | None = None,
    sign_key: PrivateKey | None = None,
    limits: PamLimits = DEFAULT_LIMITS,
) -> PamExport:
    """:func:`export_pam` written to ``out`` as it goes: each memory is put in the normal form,
    hashed into the checksum and written as it is reached, never gathered into a list. The text
    is exactly ``dumps_text(document, indent=2)`` and a newline (what ``engram memory export``
    always wrote). The members sort before ``memories`` (the checksum among them), so the
    memories go to a private temporary file first and are copied after them. The result's
    ``document`` holds every member but the memories (an empty list).

    A document ``import_pam_file`` would refuse under ``limits`` (more memories, more bytes) is
    refused instead, with nothing written to ``out`` and no export logged: the count before the
    first memory is encoded, the bytes once the memories are (docs/spec/limits.md §2)."""
    with gc_paused():  # one dict per memory, up to the document's cap (engram.core.bulk)
        selection = _select(engine, rings, owner_id, since, base_export_id)
        _admit_count(selection, limits)
        exported: set[str] = set()
        citing: list[Cited] = []
        digest = hashlib.sha256(b"[")
        with tempfile.TemporaryFile("w+", encoding="utf-8", newline="") as spill:
            batch: list[Json] = []
            for memory in _memories(selection):
                exported.add(wire.text(memory["id"], "memory id"))
                found = cited(memory)
                if found is not None:
                    citing.append(found)
                batch.append(memory)
                if len(batch) == _WRITE_BATCH:
                    _spill(batch, spill, digest, first=len(exported) == len(batch))
                    batch = []
            if batch:
                _spill(batch, spill, digest, first=len(exported) == len(batch))
            digest.update(b"]")
            spill.flush()
            spilled = os.fstat(spill.fileno()).st_size
            mark = f"memories:{uuid.uuid4()}"  # a stand-in no other member can hold
            parts: list[str] = []

            def admit(document: JsonObject) -> None:
                text = dumps_text({**document, "memories": mark}, indent=2) + "\n"
                head, tail = text.split(f'"{mark}"')
                framing = len("[\n\n  ]") if exported else len("[]")
                _admit_bytes(len(head.encode()) + spilled + framing + len(tail.encode()), limits)
                parts.extend((head, tail))

            summary = (exported, citing, "sha256:" + digest.hexdigest())
            result = _document(engine, selection, [], summary, base_export_id, sign_key, admit)
            head, tail = parts
            out.write(head)
            if exported:
                out.write("[\n")
                spill.seek(0)
                shutil.copyfileobj(spill, out)
                out.write("\n  ]")
            else:
                out.write("[]")
            out.write(tail)
    return result


_WRITE_BATCH = 1_000  # memories encoded at a time: one encoder call each, not one per memory


def _spill(batch: list[Json], spill: IO[str], digest: Any, *, first: bool) -> None:
    """A run of memories, in id order, into the checksum and into the text at the depth the
    document holds them (two levels: dumps_text indents the run's items one level, and no
    string holds a raw newline, so every line moves two spaces right)."""
    canonical = canonicalize(batch)  # b"[m1,m2,...]": the checksum is over "[" m1 "," m2 ... "]"
    if not first:
        digest.update(b",")
        spill.write(",\n")
    digest.update(canonical[1:-1])
    text = dumps_text(batch, indent=2)  # "[\n  {...},\n  {...}\n]"
    spill.write("  " + text[2:-2].replace("\n", "\n  "))


__all__ = ["PamExport", "export_pam", "export_pam_file"]
