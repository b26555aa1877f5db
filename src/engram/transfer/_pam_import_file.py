"""``import_pam_file``: a PAM document imported from its file (or a stream) without ever holding
the whole document, with the same checks, refusals and result as ``import_pam``.

1. The input is copied to a private temporary file (stdin can be read once; a file the user
   can still change must not change between the check and the import), refusing what the
   whole-document reader refused before parsing: the size cap, invalid UTF-8, a byte-order mark.
2. A strict pass (``_pam_read.Reader`` into ``_pam_check.FirstPass``) checks every memory as it
   is read and keeps only ids, shape counts, references and the running checksums; the root's
   other members (owner, relations, conversations, integrity, signature) are kept. The verdict
   then raises the first problem in the whole-document order, the signature is verified (§18:
   Ed25519 over the RFC 8785 bytes of ``{checksum, export_id, export_date, owner_id}``, a few
   hundred bytes: the checksum is what covers the memories, and it was computed as they
   streamed by), and conflicting PAM ids are looked for: nothing is written before all of it.
3. A second pass reads the memories again and imports them :data:`BATCH` at a time.

Memory: proportional to the largest memory, the batch, and the per-memory ids, not the file.
Spec: docs/spec/pam.md "Import" (streaming).
"""

from __future__ import annotations

import io
import tempfile
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import IO, BinaryIO

from engram.core.bulk import gc_paused
from engram.core.canonical import Json, JsonObject
from engram.core.keys import PublicKey
from engram.memory import Memory, MemoryEngine, get_memories, import_memories
from engram.transfer import _pam_tables as tables
from engram.transfer import _wire as wire
from engram.transfer._pam_check import FirstPass, Sums, spilled_sums
from engram.transfer._pam_import import (
    Document,
    PamImport,
    Plan,
    adopt_owner,
    check_base,
    check_signature,
    conflict,
    finish,
    import_pam,
    known_ids,
    plan_memories,
    without_erased,
    writable,
)
from engram.transfer._pam_read import DEFAULT_LIMITS, PamLimits, Reader, spool

BATCH = 2_000
"""Memories planned and written at a time (one transaction each for memories and PAM rows)."""
_LOOKUP = 500  # ids per store query


class _Memories:
    """A pass's handler that hands on the memories only."""

    def __init__(self) -> None:
        self.items: list[tuple[int, JsonObject]] = []

    def member(self, name: str, value: Json) -> None:
        pass

    def memories_begin(self) -> None:
        pass

    def memory(self, index: int, value: Json) -> None:
        self.items.append((index, wire.obj(value, f"memories[{index}]")))


def _memories(spooled: IO[bytes]) -> Iterator[tuple[int, JsonObject]]:
    """The memories of the spooled (already checked) text, in order, a chunk at a time."""
    spooled.seek(0)
    text = io.TextIOWrapper(spooled, encoding="utf-8", newline="")
    handler = _Memories()
    reader = Reader(text, strict=False)
    try:
        for _ in reader.steps(handler):
            yield from handler.items
            handler.items.clear()
        yield from handler.items
    finally:
        text.detach()


class PamFile:
    """A PAM document spooled to a private file and read once strictly (:func:`open_pam_file`):
    every fault of its text has been raised; what it holds is judged by the import."""

    def __init__(self, spooled: IO[bytes], first: FirstPass, is_object: bool) -> None:
        self.spooled = spooled
        self.first = first
        self.is_object = is_object

    def __enter__(self) -> PamFile:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self.spooled.close()


def open_pam_file(
    source: str | Path | BinaryIO,
    *,
    name: str | None = None,
    limits: PamLimits = DEFAULT_LIMITS,
) -> PamFile:
    """Copy ``source`` (a path, or a binary stream such as stdin) to a private temporary file and
    read it once, strictly: the size cap, UTF-8 and every I-JSON fault are refused here, as the
    whole-document reader refused them while parsing. ``name`` names the input in the size
    refusal (default: the path); ``limits`` bound the document (docs/spec/limits.md §2). Close
    the result (it is a context manager)."""
    spooled = tempfile.TemporaryFile()  # noqa: SIM115 - owned by the PamFile, closed by it
    try:
        if isinstance(source, str | Path):
            with Path(source).open("rb") as f:
                spool(f, spooled, name or str(source), limits.max_bytes)
        else:
            spool(source, spooled, name or "the document", limits.max_bytes)
        first = FirstPass(limits=limits)
        spooled.seek(0)
        text = io.TextIOWrapper(spooled, encoding="utf-8", newline="")
        try:
            with gc_paused():  # one dict per memory read (engram.core.bulk)
                is_object = Reader(text).read(first)
        finally:
            text.detach()
    except BaseException:
        spooled.close()
        raise
    return PamFile(spooled, first, is_object)


def import_pam_file(
    engine: MemoryEngine,
    source: str | Path | BinaryIO | PamFile,
    *,
    ring: str = "M4",
    trusted_keys: Collection[PublicKey] = (),
    any_base: bool = False,
    limits: PamLimits = DEFAULT_LIMITS,
) -> PamImport:
    """Check the PAM document at ``source`` whole, then merge it into ``ring``:
    ``import_pam``'s checks, refusals and result, read a memory at a time (never the whole
    document), except that the caps are ``limits`` (each memory's values on its own, the
    memories counted up to ``limits.max_memories``), not those of a parsed document.
    ``source``: a path, a binary stream, or an :func:`open_pam_file` result (opened with its
    own ``limits``)."""
    if not isinstance(source, PamFile):
        with open_pam_file(source, limits=limits) as opened:
            return import_pam_file(
                engine, opened, ring=ring, trusted_keys=trusted_keys, any_base=any_base
            )
    first = source.first
    if not source.is_object or not first.streamed:
        # No memories array to stream: what is held is the whole document (the root's small
        # members, or, for a root that is no object, a stand-in that is none either).
        document: Json = first.members if source.is_object else []
        return import_pam(engine, document, ring=ring, trusted_keys=trusted_keys, any_base=any_base)
    with gc_paused():  # one dict per memory, a batch at a time (engram.core.bulk)
        return _import(engine, first, source.spooled, ring, trusted_keys, any_base)


def _import(
    engine: MemoryEngine,
    first: FirstPass,
    spooled: IO[bytes],
    ring: str,
    trusted_keys: Collection[PublicKey],
    any_base: bool,
) -> PamImport:
    ring_name, ring_id = writable(engine, ring)

    def resum() -> Sums:
        return spilled_sums(_memories(spooled))

    whole = first.verdict(lambda ids: known_ids(engine, ids), resum)
    doc = Document.of(whole)
    signature, signer = check_signature(whole, trusted_keys)
    check_base(engine, doc, any_base)
    owner_id = wire.text(wire.obj(whole["owner"], "owner").get("id"), "owner.id")
    natives = _before_writing(engine, first.ids, owner_id)
    owner_id, store_owner, now = adopt_owner(engine, doc)
    total = Plan([], [], set())
    total.memories = first.count
    batch: list[JsonObject] = []
    start = 0
    for i, memory in _memories(spooled):
        if not batch:
            start = i
        batch.append(memory)
        if len(batch) >= BATCH:
            _write(engine, batch, start, doc, (ring_name, ring_id, owner_id, now), natives, total)
            batch = []
    if batch:
        _write(engine, batch, start, doc, (ring_name, ring_id, owner_id, now), natives, total)
    return finish(engine, doc, total, (ring_id, owner_id, store_owner, now), signature, signer)


def _before_writing(engine: MemoryEngine, ids: list[str], owner_id: str) -> dict[str, Memory]:
    """Refuse a PAM id another owner or an unmounted ring holds (the first in document order,
    as the whole-document import does), and find the memories engram itself exported under
    their own ids, before the first write: a batch must not find what an earlier one wrote."""
    natives: dict[str, Memory] = {}
    for at in range(0, len(ids), _LOOKUP):
        chunk = ids[at : at + _LOOKUP]
        with engine.store.read() as tx:
            rows = tables.rows_by_id(tx, chunk)
        own: list[str] = []
        for pam_id in chunk:
            row = rows.get(pam_id)
            if row is not None:
                conflict(engine, row, pam_id, owner_id)
            # engram's own ids are content addresses ("mem:" + SHA-256, memory_id): no other
            # id can name a memory, so only those are looked up (a query per chunk, not per id).
            elif pam_id.startswith("mem:"):
                own.append(pam_id)
        natives.update(get_memories(engine, own))
    return natives


def _write(
    engine: MemoryEngine,
    batch: list[JsonObject],
    start: int,
    doc: Document,
    where: tuple[str, str, str, str],
    natives: dict[str, Memory],
    total: Plan,
) -> None:
    plan = without_erased(
        engine, plan_memories(engine, batch, start, doc.export_id, where, natives.get)
    )
    if plan.records:
        import_memories(engine.store, plan.records)
    with engine.store.transaction() as tx:
        tables.upsert_rows(tx, plan.rows)
    total.touched |= plan.touched
    total.inserted += plan.inserted
    total.updated += plan.updated
    total.unchanged += plan.unchanged
    total.erased += plan.erased


__all__ = ["BATCH", "PamFile", "import_pam_file", "open_pam_file"]
