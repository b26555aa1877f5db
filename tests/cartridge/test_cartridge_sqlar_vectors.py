"""engram's sqlar codec against an archive the stock ``sqlite3 -A`` wrote (tests/vectors/sqlar,
see its SOURCE.txt): every row decodes to the original file, and engram's zlib writer makes the
same choice the stock CLI made for each (zlib only when that is smaller)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from engram.cartridge.internals import SqlarEntry, decode_sqlar, encode_sqlar

VECTORS = Path(__file__).resolve().parents[1] / "vectors" / "sqlar"


def _listing() -> dict[str, tuple[int, int, int, int | None, str]]:
    """listing.txt: name -> (mode, mtime, sz, stored length, encoding)."""
    table: dict[str, tuple[int, int, int, int | None, str]] = {}
    for line in (VECTORS / "listing.txt").read_text(encoding="utf-8").splitlines()[1:]:
        name, mode, mtime, sz, stored, enc, _first2 = (c.strip() for c in line.split("|"))
        table[name] = (int(mode, 8), int(mtime), int(sz), int(stored) if stored else None, enc)
    return table


@pytest.mark.req("engram.cartridge.sqlar-stock")
def test_reads_and_writes_rows_as_the_stock_cli_does() -> None:
    listing = _listing()
    uri = f"file:{VECTORS / 'stock-cli.sqlar'}?mode=ro&immutable=1"
    with sqlite3.connect(uri, uri=True) as db:
        rows = db.execute("SELECT name, mode, mtime, sz, data FROM sqlar ORDER BY name").fetchall()
        schema = db.execute("SELECT sql FROM sqlite_schema WHERE name = 'sqlar'").fetchone()[0]
    assert schema == (VECTORS / "schema.txt").read_text(encoding="utf-8").strip().removesuffix(";")
    assert {r[0] for r in rows} == set(listing)
    for name, mode, mtime, sz, data in rows:
        want_mode, want_mtime, want_sz, want_len, enc = listing[name]
        assert (mode, mtime, sz) == (want_mode, want_mtime, want_sz)
        if enc == "NULL":
            assert data is None
            assert mode == 0o40755
            continue
        original = (VECTORS / "src" / name).read_bytes()
        assert decode_sqlar(SqlarEntry(name, mode, mtime, sz, len(data)), data) == original
        assert encode_sqlar(original, compress=True) == data  # the stock CLI's choice
        assert (
            encode_sqlar(original) == original
        )  # what engram writes: stored (docs/spec/acx.md §2)
        assert len(data) == want_len
        assert (data[:2] == b"\x78\x9c") == (enc == "zlib")
