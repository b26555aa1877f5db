"""The .acx container: SQLite header identity, the verbatim DDL, and the limits on untrusted files.

Spec: lboel/acx@85f1358 SPEC.md §12 item 1 (one SQLite >= 3.37 file, ``application_id =
1094932529`` at header offset 68, packed ``user_version`` at offset 60) and item 2 (the verbatim
§3.2 DDL with the stock ``sqlar`` table); docs/spec/acx.md §1-§2.

The header is checked from its raw bytes *before* SQLite sees the file, so a file that is not a
cartridge is refused with a message that names what is wrong instead of whatever SQLite happens
to say about it, and a truncated file is caught by comparing the page count the header records
with the file's real length.
"""

from __future__ import annotations

import os
import re
import stat
import struct
from dataclasses import dataclass
from pathlib import Path

from engram.cartridge._record_tables import RECORD_TABLES
from engram.errors import CartridgeFormatError

APPLICATION_ID = 1094932529
"""``0x41435831``, ASCII ``ACX1``: what ``PRAGMA application_id`` holds (header offset 68)."""

SPEC_MAJOR = 1
SPEC_MINOR = 0
VEC0_FLAG = 1
FLAGS = 0
USER_VERSION = (SPEC_MAJOR << 24) | (SPEC_MINOR << 16) | (VEC0_FLAG << 8) | FLAGS
"""``16777472``: ``[MAJOR=1][MINOR=0][vec0=1][flags=0]``, one byte each, big-endian (offset 60)."""

MIN_SQLITE_VERSION = (3, 37, 0)
MIN_SQLITE_VERSION_NUMBER = 3_037_000
"""SPEC §3.1: SQLite >= 3.37; a file last written by an older library is refused."""
FLAG_SAVE_PRESENT = 0x01
"""``user_version`` flags bit0: the SAVE zone is present (§3.1)."""

SQLITE_MAGIC = b"SQLite format 3\x00"
HEADER_BYTES = 100

SPEC_DDL: dict[str, str] = {
    "cartridge": """CREATE TABLE cartridge (
  key   TEXT PRIMARY KEY NOT NULL,
  value TEXT NOT NULL
) WITHOUT ROWID""",
    "sqlar": """CREATE TABLE sqlar (
  name TEXT PRIMARY KEY,
  mode INT, mtime INT,
  sz INT,
  data BLOB
)""",
    "memory": """CREATE TABLE memory (
  id                   TEXT PRIMARY KEY NOT NULL,
  zone                 TEXT NOT NULL CHECK (zone IN ('rom','save')),
  artifact_fingerprint TEXT NOT NULL,
  codebase_fingerprint TEXT,
  payload              TEXT NOT NULL,
  oid                  TEXT NOT NULL,
  created_at           TEXT NOT NULL
) WITHOUT ROWID""",
    "memory_zone_fp": "CREATE INDEX memory_zone_fp ON memory(zone, artifact_fingerprint)",
    "vectors": """CREATE TABLE vectors (
  memory_id            TEXT PRIMARY KEY,
  zone                 TEXT NOT NULL,
  embedding            BLOB NOT NULL,
  artifact_fingerprint TEXT
)""",
    "objects": """CREATE TABLE objects (
  oid        TEXT PRIMARY KEY NOT NULL,
  kind       TEXT NOT NULL CHECK (kind IN ('sqlar','memory','cartridge','skill','attestation')),
  source_ref TEXT NOT NULL,
  canon      TEXT NOT NULL,
  zone       TEXT NOT NULL CHECK (zone IN ('rom','save')),
  sz         INTEGER NOT NULL
) WITHOUT ROWID""",
    "signatures": """CREATE TABLE signatures (
  sig_id         TEXT PRIMARY KEY NOT NULL,
  target         TEXT NOT NULL DEFAULT 'rom-manifest',
  manifest_hash  TEXT NOT NULL,
  envelope       TEXT NOT NULL,
  keyid          TEXT NOT NULL,
  public_key_pem TEXT,
  alg            TEXT NOT NULL DEFAULT 'ed25519',
  created_at     TEXT NOT NULL
) WITHOUT ROWID""",
    "attestations": """CREATE TABLE attestations (
  att_id      TEXT PRIMARY KEY NOT NULL,
  type        TEXT NOT NULL,
  subject_oid TEXT,
  media_type  TEXT NOT NULL,
  document    TEXT NOT NULL,
  status_url  TEXT,
  created_at  TEXT NOT NULL
) WITHOUT ROWID""",
    "acx_skill": """CREATE TABLE acx_skill (
  name           TEXT PRIMARY KEY,
  description    TEXT NOT NULL,
  license        TEXT, compatibility TEXT, skill_version TEXT,
  sqlar_path     TEXT NOT NULL,
  body_tokens    INTEGER,
  content_sha256 TEXT NOT NULL,
  resources      TEXT NOT NULL,
  ext            TEXT,
  schema_version TEXT NOT NULL
)""",
    **{t.table: t.ddl for t in RECORD_TABLES},
}
"""What engram writes: SPEC §3.2 verbatim (comments dropped), §5.3's ``acx_skill`` and the
record tables (``_record_tables``: §6.1's ``capabilities``), with two departures recorded in
docs/spec/acx.md §2: ``signatures`` carries the reference's nullable ``public_key_pem`` column
and ``vectors`` is the plain derived table."""

_VARIANTS: dict[str, tuple[str, ...]] = {
    "signatures": (
        """CREATE TABLE signatures (
  sig_id        TEXT PRIMARY KEY NOT NULL,
  target        TEXT NOT NULL DEFAULT 'rom-manifest',
  manifest_hash TEXT NOT NULL,
  envelope      TEXT NOT NULL,
  keyid         TEXT NOT NULL,
  alg           TEXT NOT NULL DEFAULT 'ed25519',
  created_at    TEXT NOT NULL
) WITHOUT ROWID""",
    ),
    "acx_skill": (
        """CREATE TABLE acx_skill (
  sqlar_path     TEXT PRIMARY KEY,
  name           TEXT NOT NULL,
  description    TEXT NOT NULL,
  license        TEXT, compatibility TEXT, skill_version TEXT,
  body_tokens    INTEGER,
  content_sha256 TEXT NOT NULL,
  resources      TEXT NOT NULL,
  ext            TEXT,
  schema_version TEXT NOT NULL
)""",
    ),
    "sqlar": (
        """CREATE TABLE sqlar(
  name TEXT PRIMARY KEY,
  mode INT,
  mtime INT,
  sz INT,
  data BLOB
)""",
    ),
}
"""Other spellings read as the same table: SPEC's ``signatures`` without ``public_key_pem``, the
reference's ``acx_skill`` keyed by ``sqlar_path``, and the ``sqlar`` table as ``sqlite3 -Ac``
creates it. A ``vectors`` table created ``USING vec0(...)`` (SPEC's template) is accepted too,
with its shadow tables, and never read (§3.5: vectors are derived and rebuilt)."""

VEC0_SHADOW = re.compile(r"vectors_(?:chunks|rowids|info|auxiliary|vector_chunks\d+|metadata\w*)")


def normalize_sql(sql: str) -> str:
    """``sql`` without comments, with whitespace collapsed and none around punctuation."""
    text = re.sub(r"--[^\n]*", " ", sql)
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"\s+", " ", text).strip()
    text = re.sub(r"\s*([(),])\s*", r"\1", text)
    text = re.sub(r"\bIF NOT EXISTS\b ?", "", text, flags=re.I)
    return text.rstrip(";").upper()


ACCEPTED_DDL: dict[str, frozenset[str]] = {
    name: frozenset(normalize_sql(d) for d in (ddl, *_VARIANTS.get(name, ())))
    for name, ddl in SPEC_DDL.items()
}
"""Normalised DDL accepted for each schema object on read."""


@dataclass(frozen=True)
class Limits:
    """Bounds applied to every untrusted cartridge before its rows are read into memory."""

    max_file_bytes: int = 2 * 1024**3
    max_rows: int = 100_000
    max_path_chars: int = 512
    max_path_depth: int = 16
    max_skill_md_bytes: int = 1024**2
    max_records: int = 1_000_000
    max_record_bytes: int = 64 * 1024
    max_envelope_bytes: int = 16 * 1024**2
    max_object_bytes: int = 64 * 1024**2
    """Largest inflated size of any one object (sqlar file, meta value, memory payload)."""
    max_total_inflated_bytes: int = 256 * 1024**2
    """Budget for all bytes one verification inflates or reads from ROM (issue 15 point 3)."""
    max_meta_keys: int = 4096


DEFAULT_LIMITS = Limits()


@dataclass(frozen=True)
class Header:
    """The fields of the 100-byte SQLite header that the container rules look at."""

    page_size: int
    write_version: int
    read_version: int
    change_counter: int
    page_count: int
    version_valid_for: int
    user_version: int
    application_id: int
    sqlite_version_number: int


def parse_header(data: bytes) -> Header:
    """Decode the SQLite header from the first 100 bytes of a file (refuse a non-SQLite file)."""
    if len(data) < HEADER_BYTES:
        raise CartridgeFormatError(
            f"not a cartridge: {len(data)} bytes is shorter than a SQLite header (truncated?)"
        )
    if data[:16] != SQLITE_MAGIC:
        raise CartridgeFormatError("not a cartridge: the file is not a SQLite 3 database")
    (raw_page_size,) = struct.unpack_from(">H", data, 16)
    page_size = 65536 if raw_page_size == 1 else raw_page_size
    (change_counter, page_count) = struct.unpack_from(">II", data, 24)
    (user_version,) = struct.unpack_from(">I", data, 60)
    (application_id,) = struct.unpack_from(">I", data, 68)
    (version_valid_for, sqlite_version_number) = struct.unpack_from(">II", data, 92)
    return Header(
        page_size=page_size,
        write_version=data[18],
        read_version=data[19],
        change_counter=change_counter,
        page_count=page_count,
        version_valid_for=version_valid_for,
        user_version=user_version,
        application_id=application_id,
        sqlite_version_number=sqlite_version_number,
    )


def read_head(path: Path) -> tuple[bytes, int]:
    """The first 100 bytes and the size of ``path``, refusing anything but a regular file.

    The file is opened non-blocking and checked with ``fstat`` on that descriptor, so a FIFO,
    a device or a socket given as a cartridge is refused at once instead of blocking forever.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError as e:
        raise CartridgeFormatError(f"no such cartridge: {path}") from e
    except IsADirectoryError as e:
        raise CartridgeFormatError(f"not a cartridge: {path} is a directory") from e
    except OSError as e:
        raise CartridgeFormatError(f"cannot open cartridge {path}: {e.strerror}") from e
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise CartridgeFormatError(f"not a cartridge: {path} is a directory")
        if not stat.S_ISREG(info.st_mode):
            raise CartridgeFormatError(
                f"not a cartridge: {path} is not a regular file (a FIFO, device or socket)"
            )
        head = os.read(fd, HEADER_BYTES)
    finally:
        os.close(fd)
    return head, info.st_size


def check_header(path: Path, limits: Limits = DEFAULT_LIMITS) -> Header:
    """Refuse ``path`` unless its header bytes say it is a complete v1 cartridge.

    Checked: the SQLite magic; ``application_id`` (offset 68) and ``user_version`` (offset 60);
    a power-of-two page size; rollback-journal mode (a WAL file cannot be opened read-only
    without side files); the last writer's library is SQLite >= 3.37; and the file length equals
    the page count the header records (a truncated or padded file is refused).
    """
    head, size = read_head(path)
    if size > limits.max_file_bytes:
        raise CartridgeFormatError(
            f"cartridge is {size} bytes, over the {limits.max_file_bytes} limit"
        )
    header = parse_header(head)
    if header.application_id != APPLICATION_ID:
        raise CartridgeFormatError(
            f"not a cartridge: application_id is {header.application_id}, expected {APPLICATION_ID}"
        )
    if header.user_version >> 24 != SPEC_MAJOR:
        raise CartridgeFormatError(
            f"unsupported cartridge version: user_version {header.user_version} has major "
            f"{header.user_version >> 24}, this reader understands major {SPEC_MAJOR}"
        )
    if header.user_version & 0xFE != 0:
        raise CartridgeFormatError(
            f"unsupported cartridge version: user_version {header.user_version} sets flags "
            "this reader does not know (only bit0, SAVE present, is defined)"
        )
    if header.page_size < 512 or header.page_size & (header.page_size - 1):
        raise CartridgeFormatError(f"malformed cartridge: page size {header.page_size}")
    if (header.write_version, header.read_version) != (1, 1):
        raise CartridgeFormatError(
            "malformed cartridge: the file is not in rollback-journal mode (WAL cartridges are "
            "not portable single files)"
        )
    if header.sqlite_version_number < MIN_SQLITE_VERSION_NUMBER:
        raise CartridgeFormatError(
            f"cartridge was last written by SQLite {header.sqlite_version_number}; "
            f"{MIN_SQLITE_VERSION_NUMBER} (3.37) or newer is required"
        )
    if header.version_valid_for == header.change_counter:
        expected = header.page_count * header.page_size
        if size < expected:
            raise CartridgeFormatError(
                f"truncated cartridge: header records {expected} bytes, the file has {size}"
            )
        if size != expected:
            raise CartridgeFormatError(
                f"malformed cartridge: header records {expected} bytes, the file has {size}"
            )
    if size % header.page_size:
        raise CartridgeFormatError(
            f"malformed cartridge: {size} bytes is not a whole number of "
            f"{header.page_size}-byte pages"
        )
    return header


__all__ = [
    "ACCEPTED_DDL",
    "APPLICATION_ID",
    "DEFAULT_LIMITS",
    "FLAG_SAVE_PRESENT",
    "MIN_SQLITE_VERSION",
    "SPEC_DDL",
    "USER_VERSION",
    "VEC0_SHADOW",
    "Header",
    "Limits",
    "check_header",
    "normalize_sql",
    "parse_header",
    "read_head",
]
