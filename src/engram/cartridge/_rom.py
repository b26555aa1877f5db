"""The ROM integrity manifest, recomputed from live bytes on every read.

Spec: lboel/acx@85f1358 SPEC.md §3.3 (sign a manifest, never the file), §4.1, §6.1 and §12
item 3; docs/spec/acx.md §4.

:func:`load_rom` is the one way code reads a cartridge's signed meaning. It takes every
``objects`` row with ``zone='rom'``, recomputes each one's content address from its live source
(never trusting the stored ``oid``):

=================  ==========================  ============================================
``source_ref``     live source                 hashed bytes
=================  ==========================  ============================================
``memory:<id>``    ``memory.payload``          the UTF-8 payload (``canon='jcs-rfc8785'``)
``capability:<id>``  ``capabilities.json``     the UTF-8 record (``canon='jcs-rfc8785'``; every
                                               record table of ``_record_tables`` alike)
``cartridge:<key>``  ``cartridge.value``       RFC 8785 of ``{"key", "value"}``
a sqlar name       ``sqlar.data``              the *uncompressed* bytes (``canon='raw'``)
=================  ==========================  ============================================

sorts them by ``(kind, source_ref)`` in code-point order, emits ``[{sourceRef, oid, canon, sz}]``
and hashes its RFC 8785 bytes: ``manifest_hash = "sha256:" + hex``. Anything the live bytes and
the stored rows disagree on is collected in :attr:`Rom.problems`; the verifier turns a non-empty
list into ``tampered``. engram is stricter than the reference in what counts: ROM content that no
``objects`` row covers (a ``rom/`` file, a ROM memory, a capability), an object whose ``sz`` is
not its live size, and denormalised columns that disagree with the signed payload.

The memory table is read a row at a time and each payload hashed once. :func:`check_rom` is
:func:`load_rom` for callers that act on no memory row (``verify``, the writer's read-back): the
same checks, problems and manifest, but no row is kept, so a cartridge of 100,000 memories is
verified in bounded memory (issue 33); the manifest is hashed a chunk of entries at a time.
The writer's read-back passes what it wrote (:class:`WrittenColumns`): the rows' columns are
then proved to be the ones written instead of compared with each payload parsed again.
"""

from __future__ import annotations

import hashlib
import os
import sys
from dataclasses import dataclass, field
from functools import cached_property
from operator import attrgetter

from engram.cartridge._container import Cartridge
from engram.cartridge._paths import ROM, SAVE
from engram.cartridge._record_tables import CAPABILITIES, RECORD_TABLES, RecordTable
from engram.cartridge._skills import derive_skills, index_problems
from engram.cartridge._sqlar import Entry
from engram.core.bulk import gc_paused
from engram.core.canonical import JsonObject, canonicalize, canonicalize_rows, parse_strict
from engram.errors import CanonicalJsonError, CartridgeFormatError

KINDS = ("sqlar", "memory", "cartridge", "skill", "attestation")
CANON_RAW = "raw"
CANON_JCS = "jcs-rfc8785"
UNSIGNED_META = frozenset(
    {"acx.rom_manifest_hash", "acx.save_codebase_fingerprint", "acx.vec0_format"}
)
"""Meta keys engram never signs: the hash itself, the SAVE fingerprint and the local vec0 format."""


def sha256_id(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def meta_oid(key: str, value: str) -> str:
    return sha256_id(canonicalize({"key": key, "value": value}))


@dataclass(frozen=True, slots=True)
class RomObject:
    kind: str
    source_ref: str
    canon: str
    sz: int
    oid: str
    """The content address recomputed from live bytes (or the stored one if the source is gone)."""

    def entry(self) -> JsonObject:
        return {"sourceRef": self.source_ref, "oid": self.oid, "canon": self.canon, "sz": self.sz}


@dataclass(frozen=True, slots=True)
class MemoryRow:
    id: str
    zone: str
    artifact_fingerprint: str
    codebase_fingerprint: str | None
    payload: str
    oid: str
    created_at: str

    def record(self) -> JsonObject:
        """The payload parsed strictly (a payload that is not a JSON object is refused)."""
        return payload_record(self.id, self.payload)


def payload_record(rid: str, payload: str) -> JsonObject:
    """Memory ``rid``'s payload parsed strictly (one that is not a JSON object is refused)."""
    try:
        value = parse_strict(payload)
    except CanonicalJsonError as e:
        raise CartridgeFormatError(f"memory {rid!r}: payload {e.message}") from e
    if not isinstance(value, dict):
        raise CartridgeFormatError(f"memory {rid!r}: payload is not a JSON object")
    return value


@dataclass
class Rom:
    """A cartridge's ROM as derived from its live bytes."""

    meta: dict[str, str]
    files: dict[str, bytes]
    memories: dict[str, MemoryRow]
    """Every memory row, both zones (none when read by :func:`check_rom`: ``memories_kept``)."""
    records: dict[str, dict[str, str]]
    """Each record table's rows (``_record_tables``): prefix -> id -> the record's JSON text."""
    objects: list[RomObject]
    manifest_hash: str
    problems: list[str] = field(default_factory=list)
    modes: dict[str, int] = field(default_factory=dict)
    """Each ROM file's sqlar mode (``0o100644`` or ``0o100755``); outside the manifest (§3.3)."""
    vector_ids: frozenset[str] = frozenset()
    """The ``memory_id`` of every derived ``vectors`` row (their blobs are never read, §3.5)."""
    memories_kept: bool = True
    """False when :func:`check_rom` read it: every memory row was checked exactly as
    :func:`load_rom` checks it, but neither the rows nor ``vector_ids`` were kept."""

    @property
    def manifest(self) -> list[JsonObject]:
        """The manifest entries, in manifest order (built on demand: 100,000 dicts otherwise)."""
        return [o.entry() for o in self.objects]

    @property
    def signed_meta(self) -> dict[str, str]:
        keys = self._signed_keys
        return {k: v for k, v in self.meta.items() if k in keys}

    @cached_property
    def _signed_keys(self) -> frozenset[str]:
        # Once per Rom: publisher_id, cartridge_id and the verifier each ask, and a cartridge
        # of 100,000 memories has 100,000 objects to look through.
        return frozenset(
            o.source_ref[len("cartridge:") :] for o in self.objects if _prefix(o) == "cartridge"
        )

    @property
    def rom_memories(self) -> list[MemoryRow]:
        return [m for m in self.memories.values() if m.zone == ROM]

    @property
    def publisher_id(self) -> str:
        return self.signed_meta.get("acx.publisher_id", "")

    @property
    def cartridge_id(self) -> str:
        return self.signed_meta.get("acx.cartridge_id", "")

    @property
    def capabilities(self) -> dict[str, str]:
        return self.records[CAPABILITIES.prefix]

    def record(self, table: RecordTable, rid: str) -> JsonObject:
        """Record ``rid`` of ``table`` parsed strictly (one that is not an object is refused)."""
        try:
            value = parse_strict(self.records[table.prefix][rid])
        except CanonicalJsonError as e:
            raise CartridgeFormatError(f"{table.prefix} {rid!r}: {e.message}") from e
        if not isinstance(value, dict):
            raise CartridgeFormatError(f"{table.prefix} {rid!r} is not a JSON object")
        return value

    def capability(self, cid: str) -> JsonObject:
        """Capability record ``cid`` parsed strictly (a record that is not an object is refused)."""
        return self.record(CAPABILITIES, cid)

    def json_file(self, name: str) -> JsonObject | None:
        """A ROM JSON document parsed strictly, or None when the file is absent."""
        data = self.files.get(name)
        if data is None:
            return None
        try:
            value = parse_strict(data)
        except CanonicalJsonError as e:
            raise CartridgeFormatError(f"{name}: {e.message}") from e
        if not isinstance(value, dict):
            raise CartridgeFormatError(f"{name} is not a JSON object")
        return value


_PREFIXES = ("memory", *(t.prefix for t in RECORD_TABLES), "cartridge")


def _prefix(obj: RomObject) -> str:
    for prefix in _PREFIXES:
        if obj.source_ref.startswith(prefix + ":"):
            return prefix
    return "sqlar"


_EXPECTED = {
    "memory": (("memory",), CANON_JCS),
    **{t.prefix: (t.kinds, CANON_JCS) for t in RECORD_TABLES},
    "cartridge": (("cartridge",), CANON_JCS),
    "sqlar": (("sqlar", "skill"), CANON_RAW),
}
"""Per source kind: the ``kind`` values and the ``canon`` an object row may carry. Capabilities
are ``kind='cartridge'`` in the reference (``capability`` is not in the §3.2 CHECK list)."""

_Live = tuple[str, bytes, int]
"""What the objects pass needs of one memory row: its zone, the SHA-256 of its payload, its size."""


class WrittenColumns:
    """The memory rows a writer put in a file, folded into one keyed digest as it writes them:
    each row's ``(id, zone, artifact fingerprint, codebase fingerprint, oid)`` hashed with a
    random key (BLAKE2b) and XORed in, so the digest is that of the set of rows, in any order.

    Why: the writer's read-back (:func:`check_rom`) parsed every payload it had just written to
    compare the row's columns with it (issue 33: a tenth of an export). A writer derives each
    row's columns and its payload (RFC 8785 of the record) from the same record, so they agree
    when the file holds what was written; the read-back proves that instead: each stored oid is
    the hash of its stored payload (as for every reader), and the stored rows fold to this digest
    (every column and every oid as written, no row added or lost)."""

    __slots__ = ("_key", "value")

    def __init__(self) -> None:
        self._key = os.urandom(32)
        self.value = 0

    def digest(self, *columns: object) -> int:
        # repr of a tuple of str and None is injective (it quotes and escapes every string).
        plain = tuple(str.__str__(c) if isinstance(c, str) else c for c in columns)
        data = repr(plain).encode("utf-8")
        return int.from_bytes(hashlib.blake2b(data, key=self._key).digest(), "big")

    def add(self, *columns: object) -> None:
        self.value ^= self.digest(*columns)


_COUNT = {
    "memory": "SELECT count(*) FROM (SELECT 1 FROM memory NOT INDEXED LIMIT ?)",
    "objects": "SELECT count(*) FROM (SELECT 1 FROM objects NOT INDEXED LIMIT ?)",
}


def _count(cartridge: Cartridge, table: str, limit: int) -> int:
    # Counted first (bounded by the LIMIT), so an over-long table is refused before any of its
    # rows is looked at, as when the rows were fetched whole.
    rows = cartridge.query(_COUNT[table], (limit,))
    return int(str(rows[0][0]))


def _memory_rows(
    cartridge: Cartridge,
    keep: bool,
    column_problems: list[str],
    written: WrittenColumns | None = None,
) -> tuple[dict[str, _Live], dict[str, MemoryRow]]:
    """Stream the memory rows once: each is type-checked, hashed once and its denormalised
    columns checked against its payload (or, for the writer's read-back, folded into the digest
    of what it wrote: ``written``); only ``(zone, digest, size)`` stays unless ``keep``."""
    limits = cartridge.limits
    if _count(cartridge, "memory", limits.max_records + 1) > limits.max_records:
        raise CartridgeFormatError(f"cartridge has more than {limits.max_records} memory rows")
    for rid, size in cartridge.rows(
        "SELECT id, length(CAST(payload AS BLOB)) FROM memory NOT INDEXED"
    ):
        if not isinstance(size, int) or size > limits.max_record_bytes:
            raise CartridgeFormatError(
                f"memory {rid!r}: payload over the {limits.max_record_bytes}-byte record limit"
            )
        cartridge.charge(size, f"memory:{rid}")
    live: dict[str, _Live] = {}
    rows: dict[str, MemoryRow] = {}
    folded = 0
    for row in cartridge.rows(
        "SELECT id, zone, artifact_fingerprint, codebase_fingerprint, payload, oid, created_at, "
        "typeof(id), typeof(payload), typeof(codebase_fingerprint) FROM memory NOT INDEXED"
    ):
        rid, zone, afp, cbf, payload, oid, created, t_id, t_payload, t_cbf = row
        if t_id != "text" or t_payload != "text" or t_cbf not in ("text", "null"):
            raise CartridgeFormatError(f"memory {rid!r}: id, payload and fingerprint are text")
        if not (
            isinstance(zone, str)
            and isinstance(afp, str)
            and isinstance(oid, str)
            and isinstance(created, str)
        ):
            raise CartridgeFormatError(f"memory {rid!r}: a column is not text")
        # typeof() said text, so these are str (a NULL fingerprint is None).
        rid, payload, zone = str(rid), str(payload), sys.intern(zone)
        cbf = None if cbf is None else str(cbf)
        data = payload.encode("utf-8")
        digest = hashlib.sha256(data).digest()
        live[rid] = (zone, digest, len(data))
        if oid != "sha256:" + digest.hex():
            column_problems.append(f"memory:{rid}: oid column is not the hash of its payload")
        if written is not None:
            folded ^= written.digest(rid, zone, afp, cbf, oid)
        else:
            try:
                record = payload_record(rid, payload)
            except CartridgeFormatError as e:
                column_problems.append(e.message)
            else:
                _memory_columns(rid, zone, afp, cbf, record, column_problems)
        if keep:  # a row object only for a caller that keeps it (a frozen dataclass is slow)
            rows[rid] = MemoryRow(rid, zone, afp, cbf, payload, oid, created)
    if written is not None and folded != written.value:
        column_problems.append("memory: the rows read back are not the rows written")
    return live, rows


def _record_rows(cartridge: Cartridge, table: RecordTable, problems: list[str]) -> dict[str, str]:
    if not cartridge.has(table.table):
        return {}
    noun = table.prefix
    rows = cartridge.query(table.select_sql, (cartridge.limits.max_rows + 1,))
    if len(rows) > cartridge.limits.max_rows:
        raise CartridgeFormatError(f"cartridge has too many {noun} rows")
    out: dict[str, str] = {}
    for rid, text, content_hash, t_id, t_json, size in rows:
        if t_id != "text" or t_json != "text" or not isinstance(size, int):
            raise CartridgeFormatError(f"{noun} {rid!r}: id and json must be text")
        if size > cartridge.limits.max_record_bytes:
            raise CartridgeFormatError(f"{noun} {rid!r} is over the record limit")
        cartridge.charge(size, table.ref(str(rid)))
        out[str(rid)] = str(text)
        if content_hash != sha256_id(str(text).encode("utf-8")):
            problems.append(f"{table.ref(str(rid))}: content_hash is not the hash of its json")
    return out


def load_rom(cartridge: Cartridge) -> Rom:
    """Read every ROM source, recompute the manifest from live bytes, collect disagreements."""
    with gc_paused():  # a row object per memory: up to 100,000 of them (engram.core.bulk)
        return _load_rom(cartridge, keep=True)


def check_rom(cartridge: Cartridge, *, written: WrittenColumns | None = None) -> Rom:
    """:func:`load_rom` for a caller that acts on no memory row (``verify``, the writer's
    read-back): the same checks, the same manifest and problems, but each memory row is
    dropped once checked, so 100,000 of them are never held at once (issue 33). The writer
    passes ``written``: its rows' columns are then proved to be the ones it wrote (each oid the
    hash of its payload as always), instead of parsing every payload it has just canonicalised."""
    with gc_paused():
        return _load_rom(cartridge, keep=False, written=written)


def _load_rom(cartridge: Cartridge, *, keep: bool, written: WrittenColumns | None = None) -> Rom:
    problems: list[str] = []
    meta = cartridge.meta()
    entries = cartridge.entries()
    files = {
        name: cartridge.read(name)
        for name, entry in entries.items()
        if name.startswith(ROM + "/") and not entry.is_dir
    }
    column_problems: list[str] = []
    live, memories = _memory_rows(cartridge, keep, column_problems, written)
    records = {t.prefix: _record_rows(cartridge, t, problems) for t in RECORD_TABLES}
    limit = cartridge.limits.max_rows * 2
    if _count(cartridge, "objects", limit + 1) > limit:
        raise CartridgeFormatError("cartridge has too many objects rows")
    objects: list[RomObject] = []
    seen: set[str] = set()
    for oid, kind, ref, canon, zone, sz, t_sz, t_ref in cartridge.rows(
        "SELECT oid, kind, source_ref, canon, zone, sz, typeof(sz), typeof(source_ref) "
        "FROM objects NOT INDEXED"
    ):
        if (
            not (isinstance(oid, str) and isinstance(ref, str) and isinstance(sz, int))
            or t_sz != "integer"
            or t_ref != "text"
        ):
            raise CartridgeFormatError(
                f"objects row {ref!r}: sz must be an integer, text elsewhere"
            )
        if zone != ROM:
            continue
        if ref in seen:
            problems.append(f"{ref}: listed twice among the ROM objects")
        seen.add(ref)
        found, size, source_zone = _live(ref, meta, files, live, records, entries)
        # The stored oid's own string when it is the live one (one string, not two, per row).
        obj = RomObject(
            sys.intern(str(kind)),
            ref,
            sys.intern(str(canon)),
            sz,
            oid if found == oid else (found or oid),
        )
        prefix = _prefix(obj)
        kinds, want_canon = _EXPECTED[prefix]
        if obj.kind not in kinds or obj.canon != want_canon:
            problems.append(f"{ref}: kind {kind!r} / canon {canon!r} do not fit its source")
        if found is None:
            problems.append(f"{ref}: missing source")
        elif found != oid:
            problems.append(f"{ref}: oid mismatch (the live content was changed after signing)")
        elif size != sz:
            problems.append(f"{ref}: sz {sz} is not the live size {size}")
        if source_zone == SAVE:
            problems.append(f"{ref}: a ROM object whose source lies in the SAVE zone")
        objects.append(obj)
    objects.sort(key=lambda o: (o.kind, o.source_ref))
    _coverage(seen, files, live, records, problems)
    problems += column_problems
    _skill_index(cartridge, files, problems)
    return Rom(
        meta=meta,
        files=files,
        memories=memories,
        records=records,
        objects=objects,
        manifest_hash=manifest_hash(objects),
        problems=problems,
        modes={name: entries[name].mode for name in files},
        vector_ids=_vector_ids(cartridge) if keep else frozenset(),
        memories_kept=keep,
    )


_CHUNK = 4096


def manifest_hash(objects: list[RomObject]) -> str:
    """``sha256:`` of the RFC 8785 bytes of the manifest (``[entry, ...]``), fed to the hash a
    chunk of entries at a time: RFC 8785 writes an array as ``[`` + its members' bytes joined
    by ``,`` + ``]``, so the digest is that of the whole array, which is never built."""
    digest = hashlib.sha256(b"[")
    try:
        for at in range(0, len(objects), _CHUNK):
            chunk = canonicalize_rows(_ENTRY, list(map(_ENTRY_OF, objects[at : at + _CHUNK])))
            digest.update(b"," + chunk[1:-1] if at else chunk[1:-1])
    except CanonicalJsonError:
        # Refused as the whole manifest refuses it, with the path into the whole array.
        canonicalize([o.entry() for o in objects])
        raise
    digest.update(b"]")
    return "sha256:" + digest.hexdigest()


_ENTRY = ("sourceRef", "oid", "canon", "sz")
"""The members of a manifest entry (:meth:`RomObject.entry`), in the order of its values."""
_ENTRY_OF = attrgetter("source_ref", "oid", "canon", "sz")
"""One object's manifest entry values in :data:`_ENTRY`'s order (a tuple made in C)."""


def _live(
    ref: str,
    meta: dict[str, str],
    files: dict[str, bytes],
    memories: dict[str, _Live],
    records: dict[str, dict[str, str]],
    entries: dict[str, Entry],
) -> tuple[str | None, int, str]:
    """``(live oid, live size, zone of the source)`` for one ``source_ref``."""
    if ref.startswith("memory:"):
        row = memories.get(ref[len("memory:") :])
        if row is None:
            return None, 0, ROM
        zone, digest, size = row
        return "sha256:" + digest.hex(), size, zone
    prefix, _, rid = ref.partition(":")
    table_rows = records.get(prefix)
    if table_rows is not None:
        text = table_rows.get(rid)
        if text is None:
            return None, 0, ROM
        data = text.encode("utf-8")
        return sha256_id(data), len(data), ROM
    if ref.startswith("cartridge:"):
        key = ref[len("cartridge:") :]
        value = meta.get(key)
        if value is None:
            return None, 0, ROM
        zone = SAVE if key == "acx.save_codebase_fingerprint" else ROM
        return meta_oid(key, value), len(value.encode("utf-8")), zone
    if ref.startswith(SAVE + "/") and ref in entries:
        return None, 0, SAVE
    content = files.get(ref)
    if content is None:
        return None, 0, ROM
    return sha256_id(content), len(content), ROM


def _coverage(
    seen: set[str],
    files: dict[str, bytes],
    memories: dict[str, _Live],
    records: dict[str, dict[str, str]],
    problems: list[str],
) -> None:
    for name in files:
        if name not in seen:
            problems.append(f"{name}: a ROM file that no objects row covers (unsigned)")
    for rid, (zone, _digest, _size) in memories.items():
        if zone == ROM and f"memory:{rid}" not in seen:
            problems.append(f"memory:{rid}: a ROM memory that no objects row covers (unsigned)")
    for table in RECORD_TABLES:
        for rid in records[table.prefix]:
            if table.ref(rid) not in seen:
                problems.append(
                    f"{table.ref(rid)}: a {table.prefix} that no objects row covers (unsigned)"
                )


def _vector_ids(cartridge: Cartridge) -> frozenset[str]:
    if cartridge.vec0:
        return frozenset()
    limit = cartridge.limits.max_records
    found = cartridge.query("SELECT memory_id FROM vectors NOT INDEXED LIMIT ?", (limit + 1,))
    if len(found) > limit:
        raise CartridgeFormatError(f"cartridge has more than {limit} vectors rows")
    return frozenset(str(row[0]) for row in found)


def _skill_index(cartridge: Cartridge, files: dict[str, bytes], problems: list[str]) -> None:
    """§5.3: the stored ``acx_skill`` cache must say what the ROM skills say.

    A skill that does not derive at all (bad frontmatter) is the publisher's malformed content,
    not a tampered index: ``spec``, ``inspect`` and ``load`` refuse it when they read it.
    """
    try:
        skills = derive_skills(files, cartridge.limits.max_skill_md_bytes)
    except CartridgeFormatError:
        return
    problems.extend(index_problems(cartridge, skills))


def _memory_columns(
    rid: str, zone: str, afp: str, cbf: str | None, record: JsonObject, problems: list[str]
) -> None:
    """The row's denormalised columns must say what its (signed) payload says."""
    if record.get("id") != rid or record.get("zone") != zone:
        problems.append(f"memory:{rid}: id/zone columns differ from the payload")
    if record.get("artifactFingerprint") != afp:
        problems.append(f"memory:{rid}: artifact_fingerprint column differs from the payload")
    if record.get("codebaseFingerprint") != cbf:
        problems.append(f"memory:{rid}: codebase_fingerprint column differs from the payload")


__all__ = [
    "CANON_JCS",
    "CANON_RAW",
    "KINDS",
    "UNSIGNED_META",
    "MemoryRow",
    "Rom",
    "RomObject",
    "WrittenColumns",
    "check_rom",
    "load_rom",
    "manifest_hash",
    "meta_oid",
    "sha256_id",
]
