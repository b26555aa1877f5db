"""The streamed import (issue 33) imports what checking and merging a list of every record did.

``import_cartridge`` no longer holds the records: it finds §7.3's fingerprint groups with one
query over the memory table's columns, folds only their members, and streams the rest in id
order. These tests hold it to the whole-list algorithm it replaced, spelled out here with the
public pieces (``load_rom``, ``record_problems``, ``TransferRecord``, ``merge_records``), on
records made to collide: groups of two and three spelt differently (the survivor takes the
longer text and the union of the tags as spelt), members out of id order, field-learned records
of this codebase (grouped apart from the transferable ones) and of another (quarantined).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from cartridge_kit import NOW, PUBLISHER, SALT, Seat, write_package

from engram.cartridge import Cartridge, ExportOptions, load_rom, merge_records, package_contents
from engram.cartridge import write as write_cartridge
from engram.cartridge.internals import canonical_repo_identity, codebase_fingerprint
from engram.cli.internals import seat_engine
from engram.core.keys import PrivateKey
from engram.transfer import TransferRecord, import_cartridge
from engram.trust import TrustState

RING_ID = "seat:engram-implementer"


def _records() -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    for group in range(6):
        # Same §7.3 fingerprint (text trimmed and lowercased, tags lowercased and sorted).
        spellings = [f"Retry policy {group}", f" retry POLICY {group} ", f"RETRY policy {group}"]
        for member, title in enumerate(spellings[: 2 + group % 2]):
            records.append(
                {
                    "id": f"mem-{(group * 7 + member * 31) % 97:03d}-{group}",
                    "title": title,
                    "summary": f"Back off {group} times." + (" " if member else ""),
                    "sourceType": "procedure",
                    "tags": ["Retry", "backoff"] if member else ["retry", "BACKOFF"],
                    "timestamp": "2026-02-01T10:00:00.000Z",
                    **({"repoId": "acme/widgets"} if group >= 4 else {}),
                }
            )
    for i in range(5):
        records.append(
            {
                "id": f"solo-{9 - i}",
                "title": f"Solo {i}",
                "summary": f"A memory of its own, number {i}.",
                "sourceType": "fact",
                "timestamp": "2026-02-02T10:00:00.000Z",
                **({"repoId": "acme/gadgets"} if i == 3 else {}),
            }
        )
    return records


def _expected(path: Path, codebase: str | None) -> tuple[list[tuple[str, str]], int, int]:
    """What the whole-list import did: (record id, text) in import order, merged, quarantined."""
    with Cartridge.open(path) as cartridge:
        rom = load_rom(cartridge)
    incoming: list[TransferRecord] = []
    quarantined = 0
    for row in sorted(rom.memories.values(), key=lambda r: r.id):
        record = TransferRecord.from_wire(row.record())
        if not record.portable and record.codebase_fingerprint != codebase:
            quarantined += 1
            continue
        incoming.append(record)
    merged = merge_records([], [r.to_wire() for r in incoming])
    survivors = [TransferRecord.from_wire(r) for r in merged.records]
    return (
        [(r.id, r.text) for r in survivors],
        len(merged.by_id) + len(merged.by_fingerprint),
        quarantined,
    )


@pytest.mark.req("engram.cartridge.bounded-streaming", "engram.cartridge.store-round-trip")
@pytest.mark.parametrize("this_codebase", [True, False])
def test_the_streamed_import_merges_and_orders_as_the_whole_list_did(
    tmp_path: Path, this_codebase: bool
) -> None:
    options = ExportOptions(PUBLISHER, NOW, include_field_learned=True, installation_salt=SALT)
    contents, _ = package_contents(write_package(tmp_path / "pkg", records=_records()), options)
    path = tmp_path / "groups.acx"
    write_cartridge(path, contents, key=PrivateKey.generate(), signed_at=NOW)
    identity = canonical_repo_identity(origin_url="repo://acme/widgets")
    codebase = codebase_fingerprint(SALT, identity) if this_codebase else None
    order, merged, quarantined = _expected(path, codebase)
    assert merged >= 6, (merged, quarantined)  # the groups really collided
    seat = Seat(tmp_path / "seat")
    with seat_engine(seat.ote, seat.url) as engine:
        summary = import_cartridge(
            engine, path, codebase_fingerprint=codebase, accept={TrustState.PORTABLE}
        )
    assert (summary.imported, summary.merged, summary.quarantined) == (
        len(order),
        merged,
        quarantined,
    )
    with sqlite3.connect(seat.db) as conn:
        stored = conn.execute(
            "SELECT json_extract(provenance, '$.acxRecordId'), text FROM memory_items "
            "WHERE ring_id = ? ORDER BY n",
            (RING_ID,),
        ).fetchall()
    assert stored == order


@pytest.mark.req("engram.cartridge.bounded-streaming")
def test_no_writer_changes_the_file_between_the_verifying_and_the_importing_pass(
    tmp_path: Path,
) -> None:
    """The import reads the file twice (verify, then the records) inside one snapshot: a writer
    cannot commit in between, so the records imported are the bytes verified."""
    options = ExportOptions(PUBLISHER, NOW)
    contents, _ = package_contents(write_package(tmp_path / "pkg", records=_records()[:3]), options)
    path = tmp_path / "held.acx"
    write_cartridge(path, contents, key=PrivateKey.generate(), signed_at=NOW)
    with Cartridge.open(path) as cartridge, cartridge.snapshot():
        before = list(cartridge.rows("SELECT id, payload FROM memory ORDER BY id"))
        writer = sqlite3.connect(path, timeout=0, isolation_level=None)  # each statement commits
        try:
            with pytest.raises(sqlite3.OperationalError, match="locked"):
                writer.execute("UPDATE memory SET payload = '{}'")
        finally:
            writer.close()
        assert list(cartridge.rows("SELECT id, payload FROM memory ORDER BY id")) == before
    with sqlite3.connect(path) as writer:  # once the snapshot ends the file is writable again
        writer.execute("UPDATE memory SET created_at = created_at")
