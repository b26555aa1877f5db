"""The stock ``sqlar`` row format, read and written exactly as ``sqlite3 -A`` does.

Spec: lboel/acx@85f1358 SPEC.md §12 item 2 ("stock ``sqlar`` schema") and the rules observed in
tests/vectors/sqlar/SOURCE.txt (written by the stock CLI, sqlite3 3.40.1); docs/spec/acx.md §2.

- ``data`` is zlib (RFC 1950, ``78 9c``, level 6 as ``compress()`` uses) only when that is
  strictly smaller than the content; otherwise the bytes are stored raw and ``length(data) == sz``.
  engram writes every row stored (``encode(..., compress=True)`` gives the stock choice): the ACX
  reference reads only raw Deflate and stock sqlite3 only zlib, and both read stored rows.
- An empty file is ``sz = 0`` with a zero-length blob, never NULL.
- A directory is mode ``040755``, ``sz = 0``, ``data`` NULL.
- ``mode`` is the full ``st_mode``; ``mtime`` is unix seconds.

Cartridges accept only regular files with mode 0100644 or 0100755 and directories with 040755:
a symlink row (which stock sqlar stores with its target as data) could point outside an
extraction directory, and other modes do not survive every file system.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

from engram.cartridge._format import DEFAULT_LIMITS, Limits
from engram.cartridge._paths import check_path
from engram.errors import CartridgeFormatError

FILE_MODE = 0o100644
EXEC_MODE = 0o100755
DIR_MODE = 0o040755
FILE_MODES = frozenset({FILE_MODE, EXEC_MODE, 0o644, 0o755})
"""Regular files as ``sqlite3 -A`` stores them (full ``st_mode``) and as the ACX reference
writes them (permission bits only, ``420`` = ``0644``)."""


@dataclass(frozen=True)
class Entry:
    """One sqlar row's metadata (its content is read on demand, by ``rowid``)."""

    name: str
    mode: int
    mtime: int
    size: int
    stored: int | None
    """``length(data)``, or None where ``data`` is NULL (a directory)."""
    rowid: int = 0

    @property
    def is_dir(self) -> bool:
        return self.mode == DIR_MODE


def encode(content: bytes, *, compress: bool = False) -> bytes:
    """The ``data`` blob for ``content``: the bytes themselves (``sz == length(data)``).

    Stored rows are the one sqlar form every reader inflates alike: stock ``sqlite3 -A``
    reads only zlib (RFC 1950) and the ACX reference only raw Deflate (RFC 1951), so
    engram writes neither by default (docs/spec/acx.md §2). ``compress=True`` gives the blob
    stock ``sqlite3 -Ac`` writes (zlib level 6, only when strictly smaller).
    """
    if not compress:
        return content
    packed = zlib.compress(content, 6)
    return packed if len(packed) < len(content) else content


def _inflate(data: bytes, size: int, wbits: int) -> bytes | None:
    """``data`` inflated under ``wbits`` if it is exactly one stream of ``size`` bytes."""
    inflater = zlib.decompressobj(wbits)
    try:
        content = inflater.decompress(data, size + 1)
    except zlib.error:
        return None
    if len(content) != size or not inflater.eof or inflater.unconsumed_tail:
        return None
    if inflater.unused_data:
        return None
    return content


def decode(entry: Entry, data: bytes) -> bytes:
    """The original bytes of ``entry`` from its stored ``data`` (size-checked, bomb-safe).

    ``sz == length(data)`` means stored; otherwise the blob is zlib (RFC 1950, what stock
    ``sqlite3 -A`` writes and the only form it reads) or raw Deflate (RFC 1951, what the ACX
    reference writes). Inflation stops one byte past ``sz``, so a blob cannot inflate past
    its declared size. A blob that is valid under both forms and means different bytes is
    refused: two readers would see two files.
    """
    if len(data) == entry.size:
        return data
    as_zlib = _inflate(data, entry.size, zlib.MAX_WBITS)
    as_raw = _inflate(data, entry.size, -zlib.MAX_WBITS)
    if as_zlib is not None and as_raw is not None and as_zlib != as_raw:
        raise CartridgeFormatError(
            f"sqlar row {entry.name!r}: data inflates to different bytes as zlib and as raw "
            "Deflate; refusing an ambiguous file"
        )
    content = as_zlib if as_zlib is not None else as_raw
    if content is None:
        raise CartridgeFormatError(
            f"sqlar row {entry.name!r}: data does not inflate to its recorded size {entry.size}"
        )
    return content


def _integer(value: object, label: str, path: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise CartridgeFormatError(f"sqlar row {path!r}: {label} is not an integer")
    return value


def check_entry(row: tuple[object, ...], limits: Limits = DEFAULT_LIMITS) -> Entry:
    """Validate one raw ``(rowid, name, typeof(name), mode, mtime, sz, typeof(data),
    length(data))``."""
    raw_rowid, name, name_type, raw_mode, raw_mtime, raw_size, data_type, stored = row
    if name_type != "text":
        raise CartridgeFormatError(f"sqlar row name {name!r} is not text")
    path = check_path(name, limits)
    mode = _integer(raw_mode, "mode", path)
    mtime = _integer(raw_mtime, "mtime", path)
    size = _integer(raw_size, "sz", path)
    rowid = _integer(raw_rowid, "rowid", path)
    if mtime < 0:
        raise CartridgeFormatError(f"sqlar row {path!r}: negative mtime")
    if mode == DIR_MODE:
        if data_type != "null" or size != 0:
            raise CartridgeFormatError(f"sqlar directory row {path!r} must have sz 0 and NULL data")
        return Entry(path, mode, mtime, 0, None, rowid)
    if mode not in FILE_MODES:
        raise CartridgeFormatError(
            f"sqlar row {path!r}: mode {mode:o} is not a portable file (0644/0755) "
            "or directory (040755)"
        )
    if data_type != "blob" or not isinstance(stored, int):
        raise CartridgeFormatError(f"sqlar file row {path!r}: data is {data_type}, not a blob")
    if size < 0 or size > limits.max_object_bytes or stored > limits.max_object_bytes:
        raise CartridgeFormatError(
            f"sqlar row {path!r}: {max(size, stored)} bytes is over the "
            f"{limits.max_object_bytes}-byte object limit"
        )
    if stored > size or (size > 0 and stored == 0):
        raise CartridgeFormatError(
            f"sqlar row {path!r}: stored length {stored} does not fit its size {size}"
        )
    return Entry(
        path, FILE_MODE if mode in (FILE_MODE, 0o644) else EXEC_MODE, mtime, size, stored, rowid
    )


__all__ = [
    "DIR_MODE",
    "EXEC_MODE",
    "FILE_MODE",
    "FILE_MODES",
    "Entry",
    "check_entry",
    "decode",
    "encode",
]
