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

import struct
from dataclasses import dataclass
from pathlib import Path

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
"""STRICT tables need SQLite 3.37; a file last written by an older library is refused."""

SQLITE_MAGIC = b"SQLite format 3\x00"
HEADER_BYTES = 100

SQLAR_DDL = """CREATE TABLE sqlar(
  name TEXT PRIMARY KEY,  -- name of the file
  mode INT,               -- access permissions
  mtime INT,              -- last modification time
  sz INT,                 -- original file size
  data BLOB               -- compressed content
)"""
"""Byte for byte the table ``sqlite3 -A`` creates (tests/vectors/sqlar/schema.txt)."""

ACX_DDL: dict[str, str] = {
    "sqlar": SQLAR_DDL,
    "acx_meta": """CREATE TABLE acx_meta(
  key TEXT PRIMARY KEY NOT NULL,
  value TEXT NOT NULL
) STRICT""",
    "acx_object": """CREATE TABLE acx_object(
  path TEXT PRIMARY KEY NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('file', 'dir')),
  mode INTEGER NOT NULL,
  size INTEGER NOT NULL,
  oid TEXT
) STRICT""",
    "acx_skill": """CREATE TABLE acx_skill(
  name TEXT PRIMARY KEY NOT NULL,
  path TEXT NOT NULL,
  description TEXT NOT NULL,
  license TEXT,
  compatibility TEXT,
  metadata TEXT NOT NULL,
  allowed_tools TEXT NOT NULL,
  ext TEXT NOT NULL,
  content_sha256 TEXT NOT NULL,
  schema_version TEXT NOT NULL
) STRICT""",
    "acx_signature": """CREATE TABLE acx_signature(
  id INTEGER PRIMARY KEY CHECK (id = 1),
  envelope TEXT NOT NULL
) STRICT""",
    "acx_vectors": """CREATE TABLE acx_vectors(
  memory_id TEXT PRIMARY KEY NOT NULL,
  engine TEXT NOT NULL,
  dim INTEGER NOT NULL,
  vector BLOB NOT NULL
) STRICT""",
}
"""The §3.2 DDL (docs/spec/acx.md §2), checked verbatim against ``sqlite_schema`` on open."""


@dataclass(frozen=True)
class Limits:
    """Bounds applied to every untrusted cartridge before its rows are read into memory."""

    max_file_bytes: int = 2 * 1024**3
    max_rows: int = 100_000
    max_row_bytes: int = 64 * 1024**2
    """Largest ``sz`` (and stored ``length(data)``) of one sqlar row."""
    max_path_chars: int = 512
    max_path_depth: int = 16
    max_skill_md_bytes: int = 1024**2
    max_records: int = 1_000_000
    max_record_bytes: int = 64 * 1024
    max_envelope_bytes: int = 16 * 1024**2


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


def check_header(path: Path, limits: Limits = DEFAULT_LIMITS) -> Header:
    """Refuse ``path`` unless its header bytes say it is a complete v1 cartridge.

    Checked: the SQLite magic; ``application_id`` (offset 68) and ``user_version`` (offset 60);
    a power-of-two page size; rollback-journal mode (a WAL file cannot be opened read-only
    without side files); the last writer's library is SQLite >= 3.37; and the file length equals
    the page count the header records (a truncated or padded file is refused).
    """
    try:
        size = path.stat().st_size
        with path.open("rb") as handle:
            head = handle.read(HEADER_BYTES)
    except FileNotFoundError as e:
        raise CartridgeFormatError(f"no such cartridge: {path}") from e
    except IsADirectoryError as e:
        raise CartridgeFormatError(f"not a cartridge: {path} is a directory") from e
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
    if header.user_version != USER_VERSION:
        raise CartridgeFormatError(
            f"unsupported cartridge version: user_version is {header.user_version}, "
            f"expected {USER_VERSION}"
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
    "ACX_DDL",
    "APPLICATION_ID",
    "DEFAULT_LIMITS",
    "MIN_SQLITE_VERSION",
    "SQLAR_DDL",
    "USER_VERSION",
    "Header",
    "Limits",
    "check_header",
    "parse_header",
]
