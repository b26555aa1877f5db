"""Producing cartridges: write the tables, index ROM from live bytes, scrub, sign; strip SAVE.

Spec: lboel/acx@85f1358 SPEC.md §3.2-§3.5, §4.1-§4.2, §5.3, §7.5-§7.7 and §12 items 1-3, 7-9;
docs/spec/acx.md §12. :func:`write` stages a new file: meta, sqlar rows (zlib as stock
``sqlite3 -A`` writes them), memory rows with their derived vectors, capability rows and their
``objects`` rows; then it re-opens the staged file read-only, recomputes the manifest from what
is really there (``check_rom``), refuses if anything disagrees, runs the fail-closed scrub gate
over every ROM byte and every record, derives ``acx_skill``, records ``acx.rom_manifest_hash``
and signs. The memory records are gone through once, a batch at a time: each batch is written,
screened by the scrub gate (whose findings are reported with the rest's, in one order) and
dropped, so 100,000 of them are never held twice over (issue 33). A refused build leaves no
file behind. :func:`strip` runs §3.4's deletes on a copy and proves the hash.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from engram.cartridge._container import Cartridge, Writer, create, rewrite
from engram.cartridge._embed import embed_packed_many, memory_text
from engram.cartridge._errors import CartridgeTampered
from engram.cartridge._format import FLAG_SAVE_PRESENT, USER_VERSION
from engram.cartridge._paths import ROM, SAVE, check_path, zone_of
from engram.cartridge._record_tables import CAPABILITIES, RECORD_TABLES
from engram.cartridge._rom import (
    CANON_JCS,
    UNSIGNED_META,
    WrittenColumns,
    check_rom,
    load_rom,
    meta_oid,
    sha256_id,
)
from engram.cartridge._scrub import Finding, require_none, scan
from engram.cartridge._signing import checksum_hash, sign, statement
from engram.cartridge._skills import derive_skills
from engram.core.bulk import gc_paused
from engram.core.canonical import JsonObject, canonicalize
from engram.core.clock import format_instant
from engram.core.keys import PrivateKey
from engram.errors import CartridgeFormatError

File = tuple[bytes, int, int]
"""(content, mode, mtime) of one sqlar row."""


@dataclass
class Contents:
    """Everything a new cartridge holds, before it is written."""

    meta: dict[str, str]
    files: dict[str, File] = field(default_factory=dict)
    memories: Iterable[JsonObject] = field(default_factory=list)
    """Memory records in their cartridge form (``zone`` decides ROM or SAVE); :func:`write`
    goes through them once, in order, and keeps none of them (an iterator is drawn as the
    rows are written, so a store's 100,000 memories are never all held, issue 33)."""
    table_records: dict[str, list[JsonObject]] = field(default_factory=dict)
    """The records of each record table (``_record_tables``), by its prefix."""
    literals: Sequence[str] = ()
    """Raw repository identifiers the scrub gate must not find anywhere (§7.5)."""
    counted: dict[str, Callable[[int], File]] = field(default_factory=dict)
    """Files whose bytes say how many memory records there are (the package spec's
    memory-baseline count): each is written in its place among the files and, once the
    records have been gone through, given the bytes its function makes of their number."""

    @property
    def capabilities(self) -> list[JsonObject]:
        return self.table_records.setdefault(CAPABILITIES.prefix, [])


@dataclass(frozen=True)
class Built:
    manifest_hash: str
    keyid: str | None
    cartridge_id: str
    skills: int
    memories: int


def new_cartridge_id(publisher_id: str, artifact_id: str) -> str:
    """``<publisher>/<artifact>@<uuid4>`` (§3.2: reverse-DNS + uuid)."""
    return f"{publisher_id}/{artifact_id}@{uuid.uuid4()}"


def write(
    out: str | os.PathLike[str],
    contents: Contents,
    *,
    key: PrivateKey | None,
    signed_at: datetime,
) -> Built:
    with gc_paused():
        return _write(Path(out), contents, key=key, signed_at=signed_at)


def _write(
    target: Path, contents: Contents, *, key: PrivateKey | None, signed_at: datetime
) -> Built:
    for name in contents.files:
        check_path(name)
    # The acx_skill cache is derived from the bytes about to be written and written with them,
    # so the staged file is checked (check_rom) exactly as every later reader checks it.
    skills = derive_skills({n: f[0] for n, f in contents.files.items() if zone_of(n) == ROM})
    with create(target) as writer:
        streamed = _fill(writer, contents)
        writer.executemany(
            "INSERT INTO acx_skill(name, description, license, compatibility, skill_version, "
            "sqlar_path, body_tokens, content_sha256, resources, ext, schema_version) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [tuple(s.row().values()) for s in skills],
        )
        writer.commit()
        with Cartridge.open(writer.path) as staged:
            rom = check_rom(staged, written=streamed.written)
        if rom.problems:
            raise CartridgeTampered("refusing to sign: " + "; ".join(rom.problems[:5]))
        # The memory payloads were screened as they were written (streamed.findings); the rest
        # of the ROM is screened here, and the findings are reported in the one order scan()
        # gives them over everything at once (by path).
        scanned = dict(rom.files)
        for table in RECORD_TABLES:  # the record tables' rows as written (RFC 8785 text)
            for rid, text in rom.records[table.prefix].items():
                scanned[table.ref(rid)] = text.encode("utf-8")
        for k, v in contents.meta.items():
            scanned[f"cartridge:{k}"] = v.encode("utf-8")
        findings = streamed.findings + scan(scanned, contents.literals)
        require_none(sorted(findings, key=lambda f: f.path))
        digest = rom.manifest_hash
        writer.execute(
            "INSERT INTO cartridge(key, value) VALUES ('acx.rom_manifest_hash', ?)", (digest,)
        )
        keyid = _sign(writer, rom.meta, rom.objects, digest, key, signed_at) if key else None
        if streamed.save or any(zone_of(n) == SAVE for n in contents.files):
            writer.conn.execute(f"PRAGMA user_version = {USER_VERSION | FLAG_SAVE_PRESENT}")
    return Built(
        digest,
        keyid,
        contents.meta.get("acx.cartridge_id", ""),
        len(skills),
        streamed.count,
    )


@dataclass
class _Streamed:
    """What writing the memory records left behind (the records themselves are not kept)."""

    count: int = 0
    save: bool = False
    """Whether any record is in the SAVE zone."""
    findings: list[Finding] = field(default_factory=list)
    """The scrub gate's findings in the memory payloads."""
    written: WrittenColumns = field(default_factory=WrittenColumns)
    """The memory rows' columns as written, for the read-back (``check_rom``)."""


def _fill(writer: Writer, contents: Contents) -> _Streamed:
    """Write every source and its objects row; the memory records are consumed one at a time."""
    for key, value in sorted(contents.meta.items()):
        writer.execute("INSERT INTO cartridge(key, value) VALUES (?, ?)", (key, value))
        zone = SAVE if key == "acx.save_codebase_fingerprint" else ROM
        if key not in UNSIGNED_META:
            _object(
                writer,
                meta_oid(key, value),
                "cartridge",
                f"cartridge:{key}",
                "jcs-rfc8785",
                zone,
                len(value.encode("utf-8")),
            )
    for name, (content, mode, mtime) in sorted(contents.files.items()):
        writer.put_file(name, content, mode=mode, mtime=mtime)
        if name not in contents.counted:  # its bytes (and oid) are known after the records
            _object(writer, sha256_id(content), "sqlar", name, "raw", zone_of(name), len(content))
    streamed = _write_memories(writer, contents.memories, contents.literals)
    for name, make in sorted(contents.counted.items()):
        content, mode, mtime = contents.files[name] = make(streamed.count)
        # In place (the row keeps its rowid, so the file is the one a known count writes).
        writer.update_file(name, content, mode=mode, mtime=mtime)
        _object(writer, sha256_id(content), "sqlar", name, "raw", zone_of(name), len(content))
    for table in RECORD_TABLES:
        for record in contents.table_records.get(table.prefix, ()):
            text = canonicalize(record)
            oid = sha256_id(text)
            rid = str(record["id"])
            writer.execute(table.insert_sql, (record["id"], text.decode("utf-8"), oid))
            _object(writer, oid, "cartridge", table.ref(rid), CANON_JCS, ROM, len(text))
    return streamed


def _write_memories(
    writer: Writer, records: Iterable[JsonObject], literals: Sequence[str]
) -> _Streamed:
    """Memory, object and vector rows, drawn from ``records`` one at a time: the payloads are
    written and screened by the scrub gate a batch at a time (_BATCH records or _BATCH_BYTES of
    payload, whichever comes first) and dropped, so neither 100,000 records nor 10,000 long
    ones are held (issue 33). An id met twice, and an oid that another object already has, are
    refused."""
    streamed = _Streamed()
    ids: set[str] = set()
    # A payload holds its record's id and ids are unique, so two payloads never share bytes:
    # only the objects written before (meta, files) can have a memory's oid.
    listed = {row[0] for row in writer.conn.execute("SELECT oid FROM objects")}
    batch = _Batch()
    # A record's text waits in ``texts`` until its payload batch is written, then is embedded
    # (embed_packed_many: the same bytes, in numpy) into ``vector_rows``, which wait for the
    # next _BATCH: so no more text is held than one payload batch's.
    texts: list[tuple[object, object, str, object]] = []
    vector_rows: list[tuple[object, ...]] = []
    for record in records:
        rid = str(record.get("id"))
        if rid in ids:
            raise CartridgeFormatError("two memory records share an id")
        ids.add(rid)
        payload = canonicalize(record)
        oid = sha256_id(payload)
        ref, zone = f"memory:{record['id']}", str(record["zone"])
        if oid in listed:
            _object(writer, oid, "memory", ref, "jcs-rfc8785", zone, len(payload))
        batch.add(record, payload, oid, ref, zone)
        streamed.written.add(
            record["id"],
            record["zone"],
            record["artifactFingerprint"],
            record["codebaseFingerprint"],
            oid,
        )
        texts.append(
            (record["id"], record["zone"], memory_text(record), record["artifactFingerprint"])
        )
        streamed.save = streamed.save or zone == SAVE
        streamed.count += 1
        if batch.size >= _BATCH_BYTES:
            _insert_batch(writer, batch, literals, streamed)
            batch = _Batch()
            vector_rows += _embedded(texts)
            texts = []
        if len(vector_rows) + len(texts) == _BATCH:
            _insert_batch(writer, batch, literals, streamed)
            batch = _Batch()
            _insert_vectors(writer, vector_rows + _embedded(texts))
            texts, vector_rows = [], []
    _insert_batch(writer, batch, literals, streamed)
    _insert_vectors(writer, vector_rows + _embedded(texts))
    return streamed


def _embedded(texts: list[tuple[object, object, str, object]]) -> list[tuple[object, ...]]:
    """``(memory id, zone, text, artifact fingerprint)`` rows as vector rows: the text replaced
    by its derived vector."""
    vectors = embed_packed_many([text for _id, _zone, text, _afp in texts])
    return [
        (mid, zone, vector, afp) for (mid, zone, _, afp), vector in zip(texts, vectors, strict=True)
    ]


_BATCH = 10_000
"""Memory records written at a time. Each table's rows go in sorted by its key: ids and oids
are hashes, so in record order every insert lands on a random page of a b-tree far larger than
SQLite's page cache; sorted, neighbours share pages (a third less CPU for 100,000 memories; the
rows and the file's content are the same). ``vectors`` has rowids, so its rows go in exactly
_BATCH at a time: the file's bytes are those of every earlier writer."""

_BATCH_BYTES = 4 * 1024 * 1024
"""Payload bytes after which the memory and object rows are written and the payloads screened
before _BATCH records are reached (both tables are keyed, so where a batch ends changes no
byte of the file)."""


@dataclass
class _Batch:
    """Memory and object rows waiting to be written, and their payloads to screen."""

    memory_rows: list[tuple[object, ...]] = field(default_factory=list)
    object_rows: list[tuple[object, ...]] = field(default_factory=list)
    screened: dict[str, bytes] = field(default_factory=dict)
    size: int = 0

    def add(self, record: JsonObject, payload: bytes, oid: str, ref: str, zone: str) -> None:
        self.memory_rows.append(
            (
                record["id"],
                record["zone"],
                record["artifactFingerprint"],
                record["codebaseFingerprint"],
                payload.decode("utf-8"),
                oid,
                record["timestamp"],
            )
        )
        self.object_rows.append((oid, "memory", ref, "jcs-rfc8785", zone, len(payload)))
        self.screened[ref] = payload
        self.size += len(payload)


def _insert_batch(
    writer: Writer, batch: _Batch, literals: Sequence[str], streamed: _Streamed
) -> None:
    if not batch.memory_rows:
        return
    streamed.findings += scan(batch.screened, literals)
    writer.executemany(
        "INSERT INTO memory(id, zone, artifact_fingerprint, codebase_fingerprint, payload, "
        "oid, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        sorted(batch.memory_rows, key=_first),
    )
    writer.executemany(
        "INSERT INTO objects(oid, kind, source_ref, canon, zone, sz) VALUES (?, ?, ?, ?, ?, ?)",
        sorted(batch.object_rows, key=_first),
    )


def _insert_vectors(writer: Writer, rows: list[tuple[object, ...]]) -> None:
    writer.executemany(
        "INSERT INTO vectors(memory_id, zone, embedding, artifact_fingerprint) VALUES (?, ?, ?, ?)",
        sorted(rows, key=_first),
    )


def _object(
    writer: Writer, oid: str, kind: str, ref: str, canon: str, zone: str, size: int
) -> None:
    # objects is keyed by oid (§3.2): two sources with identical bytes would share a row and
    # one of them would go unsigned, so identical content is refused rather than dropped.
    try:
        writer.execute(
            "INSERT INTO objects(oid, kind, source_ref, canon, zone, sz) VALUES (?, ?, ?, ?, ?, ?)",
            (oid, kind, ref, canon, zone, size),
        )
    except Exception as e:  # sqlite3.IntegrityError: the oid is already listed
        raise CartridgeFormatError(
            f"{ref} has the same bytes as another object ({oid}); objects is keyed by oid, so "
            "identical content cannot be listed twice (change one of them)"
        ) from e


def _sign(
    writer: Writer,
    meta: Mapping[str, str],
    objects: Sequence[Any],
    digest: str,
    key: PrivateKey,
    signed_at: datetime,
) -> str:
    doc = statement(
        manifest_hash=digest,
        cartridge_id=meta.get("acx.cartridge_id", ""),
        publisher_id=meta.get("acx.publisher_id", ""),
        embedding_engine=_engine(meta),
        signed_at=signed_at,
        spec_version=meta.get("acx.spec_version", "0.1"),
        checksum=checksum_hash((o.oid, o.source_ref) for o in objects),
        file_count=len(objects),
    )
    envelope = sign(doc, key)
    public = key.public_key()
    writer.execute(
        "INSERT INTO signatures(sig_id, target, manifest_hash, envelope, keyid, public_key_pem, "
        "alg, created_at) VALUES (?, 'rom-manifest', ?, ?, ?, ?, 'ed25519', ?)",
        (
            "sig-rom-" + digest.removeprefix("sha256:")[:12],
            digest,
            canonicalize(envelope).decode("utf-8"),
            public.key_id,
            public.to_pem().decode("ascii"),
            format_instant(signed_at),
        ),
    )
    return public.key_id


def _engine(meta: Mapping[str, str]) -> JsonObject:
    from engram.cartridge._package import engine_of

    return engine_of(dict(meta))


@dataclass(frozen=True)
class Stripped:
    before: str
    after: str

    @property
    def equal(self) -> bool:
        return self.before == self.after


def strip(source: str | os.PathLike[str], out: str | os.PathLike[str]) -> Stripped:
    """§3.4 strip-to-ROM on a copy of ``source``: the recomputed hash must equal the original."""
    with Cartridge.open(source) as original:
        before = load_rom(original).manifest_hash
    with rewrite(source, out) as writer:
        writer.execute("DELETE FROM memory WHERE zone = 'save'")
        writer.execute("DELETE FROM sqlar WHERE name GLOB 'save/*'")
        writer.execute("DELETE FROM vectors WHERE zone = 'save'")
        writer.execute("DELETE FROM objects WHERE zone = 'save'")
        writer.execute("DELETE FROM cartridge WHERE key = 'acx.save_codebase_fingerprint'")
        (version,) = writer.conn.execute("PRAGMA user_version").fetchone()
        writer.conn.execute(f"PRAGMA user_version = {int(version) & ~FLAG_SAVE_PRESENT}")
        writer.commit()
        with Cartridge.open(writer.path) as staged:
            after = load_rom(staged).manifest_hash
    return Stripped(before, after)


def write_save(path: str | os.PathLike[str], files: Mapping[str, bytes], *, mtime: int) -> None:
    """Write (or replace) SAVE files; a path outside ``save/`` is refused before any write.

    The file must open as a cartridge first (header, schema, integrity, every sqlar path), so
    SAVE is never written into a file a reader would refuse.
    """
    for name in files:
        if zone_of(check_path(name)) != SAVE:
            raise CartridgeFormatError(f"{name!r} is not a SAVE path: ROM is never written here")
    with Cartridge.open(path):
        pass
    with rewrite(path) as writer:
        for name, content in sorted(files.items()):
            writer.put_file(name, content, mode=0o100644, mtime=mtime)
        (version,) = writer.conn.execute("PRAGMA user_version").fetchone()
        writer.conn.execute(f"PRAGMA user_version = {int(version) | FLAG_SAVE_PRESENT}")


__all__ = [
    "Built",
    "Contents",
    "File",
    "Stripped",
    "new_cartridge_id",
    "strip",
    "write",
    "write_save",
]


def _first(row: tuple[object, ...]) -> str:
    """The key a row is inserted in order of (its first column: id, oid or memory_id)."""
    return str(row[0])
