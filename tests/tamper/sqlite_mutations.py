"""Mutations of a SQLite cartridge file for the tamper suite (issue 15): single bytes, structural
SQL edits, and the index/table disagreement of a name rewritten in the raw page bytes."""

from __future__ import annotations

import random
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

SQL_EDITS = (
    "UPDATE sqlar SET name = '/etc/evil' WHERE rowid = (SELECT min(rowid) FROM sqlar)",
    "UPDATE sqlar SET name = 'rom/../x' WHERE rowid = (SELECT min(rowid) FROM sqlar)",
    "INSERT INTO sqlar VALUES ('rom/skills/evil/SKILL.md', 420, 0, 5, x'6576696c21')",
    "UPDATE objects SET oid = 'sha256:' || substr(oid, 8, 63) || '0' WHERE rowid IS NULL OR 1",
    "DELETE FROM objects WHERE source_ref LIKE 'memory:%'",
    "UPDATE cartridge SET value = 'com.evil' WHERE key = 'acx.publisher_id'",
    "UPDATE signatures SET public_key_pem = NULL",
    "UPDATE signatures SET manifest_hash = 'sha256:' || hex(randomblob(32))",
    "UPDATE memory SET zone = 'save'",
    "UPDATE capabilities SET content_hash = 'x'",
    "CREATE TABLE extra(x)",
    "CREATE VIEW v AS SELECT 1",
    "CREATE TRIGGER t AFTER INSERT ON sqlar BEGIN SELECT 1; END",
    "DROP INDEX memory_zone_fp",
    "INSERT INTO objects VALUES ('sha256:00', 'sqlar', 'rom/none', 'raw', 'rom', 1)",
    "UPDATE sqlar SET mode = 41471",
    "UPDATE sqlar SET sz = sz + 1",
    "UPDATE acx_skill SET description = 'other'",
    "UPDATE cartridge SET value = 'x' WHERE key = 'acx.rom_manifest_hash'",
    "UPDATE cartridge SET value = '2' WHERE key = 'acx.vec0_format'",
    "DELETE FROM vectors",
    "INSERT INTO attestations VALUES ('a', 'vc-2.0', NULL, 'application/vc', '{}', NULL, 'now')",
)
"""Structural edits; the last four touch only what is unsigned by design (must stay accepted)."""


def byte_flips(source: Path, work: Path, count: int, seed: int) -> Iterator[Path]:
    data = source.read_bytes()
    rng = random.Random(seed)
    for _ in range(count):
        offset = rng.randrange(100, len(data))
        mutated = bytearray(data)
        mutated[offset] ^= 1 << rng.randrange(8)
        work.write_bytes(bytes(mutated))
        yield work


def sql_edits(source: Path, work: Path) -> Iterator[Path]:
    for sql in SQL_EDITS:
        shutil.copyfile(source, work)
        conn = sqlite3.connect(work)
        try:
            conn.execute(sql)
            conn.commit()
        except sqlite3.Error:
            conn.close()
            continue
        conn.close()
        yield work


def rewrite_table_name(source: Path, work: Path, old: str, new: str) -> Path:
    """Rewrite one sqlar name in the table's raw page bytes only (same length): the primary-key
    index keeps the old name, so index and table disagree (issue 15 point 1)."""
    assert len(old) == len(new)
    data = bytearray(source.read_bytes())
    needle = old.encode()
    positions = []
    start = 0
    while (at := data.find(needle, start)) >= 0:
        positions.append(at)
        start = at + 1
    conn = sqlite3.connect(source)
    (page_size,) = conn.execute("PRAGMA page_size").fetchone()
    table_pages = {p for (p,) in conn.execute("SELECT pageno FROM dbstat WHERE name = 'sqlar'")}
    conn.close()
    for at in positions:
        if (at // page_size) + 1 in table_pages:
            data[at : at + len(needle)] = new.encode()
    work.write_bytes(bytes(data))
    return work
