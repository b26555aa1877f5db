"""Cartridge snapshot: the exact bytes a ring export writes and the rows its import stores.

Exports the M4 ring of a ``bench cartridge-cli`` seat (``--seat DIR``: a ``n10000`` or
``n100000`` folder of its ``--cache``) with the seat's key, a fixed clock and a pinned cartridge
id (``uuid4`` is the only other source of difference; Ed25519 signatures are deterministic), so
two trees that write the same cartridge print the same SHA-256 of the whole file; then imports
it into a fresh database and prints a digest of the ``memory_items`` rows in ``n`` order (every
column but the import's own timestamps) and the import's counts.

Run it on each tree and compare the output: ``PYTHONPATH=TREE/src python -m
bench.cartridge_snapshot --seat CACHE/n10000``. It calls ``engram.transfer.export_cartridge``
and ``import_cartridge`` (the library functions the CLI commands are adapters of).
"""

from __future__ import annotations

import argparse
import hashlib
import sqlite3
import sys
import tempfile
import uuid
from datetime import UTC, datetime
from pathlib import Path

from engram.cartridge import ExportOptions
from engram.cli.internals import seat_engine
from engram.core.keys import load_private_key
from engram.transfer import export_cartridge, import_cartridge
from engram.trust import TrustState

NOW = datetime(2026, 12, 1, 12, 0, 0, tzinfo=UTC)
ROWS = (
    "SELECT n, id, ring, ring_id, kind, text, entities, provenance, thread, seat_id, tokens, "
    "status, origin FROM memory_items ORDER BY n"
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.cartridge_snapshot")
    parser.add_argument("--seat", type=Path, required=True, help="a cartridge-cli seat folder")
    args = parser.parse_args(argv)
    seat: Path = args.seat
    ote, database = seat / "ote.toml", f"sqlite://{seat / 'engram.db'}"
    uuid.uuid4 = lambda: uuid.UUID(int=0x1234)  # the cartridge id's only random part
    with tempfile.TemporaryDirectory(prefix="cartridge-snapshot-") as tmp:
        out, into = Path(tmp) / "out.acx", Path(tmp) / "into.db"
        options = ExportOptions("io.github.bench", NOW, default_skill=False)
        with seat_engine(ote, database) as engine:
            done = export_cartridge(
                out, options, engine=engine, ring="M4", key=load_private_key(seat / "key")
            )
        print(f"rom hash:      {done.built.manifest_hash}")
        print(f"file sha256:   {hashlib.sha256(out.read_bytes()).hexdigest()}")
        with seat_engine(ote, f"sqlite://{into}") as engine:
            summary = import_cartridge(engine, out, accept={TrustState.PORTABLE}, now=NOW)
        wire = summary.to_wire()
        print(f"imported:      {wire['imported']} (merged {wire['merged']}, known "
              f"{wire['alreadyKnown']}, quarantined {wire['quarantined']})")  # fmt: skip
        digest = hashlib.sha256()
        with sqlite3.connect(into) as conn:
            for row in conn.execute(ROWS):
                digest.update(repr(row).encode("utf-8"))
        print(f"rows sha256:   {digest.hexdigest()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
