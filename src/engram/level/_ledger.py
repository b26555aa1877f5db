"""The verifier's ledger: every attempt, failed ones too, and the cooldown per ROM digest.

SPEC §10.3 (lboel/acx@85f1358): "a per-cartridge-digest cooldown plus logging of *failed*
attempts defeats resubmission-until-lucky". The reference leaves both host-side; engram keeps
them in one SQLite file the verifier owns (docs/spec/acx-levels.md §5):

- ``attempts``: one row per run, issued or not, with the rating and the reason; never deleted;
- a new attempt for a ROM digest on a benchmark is refused until ``cooldown`` has passed since
  the last attempt on it, *whatever its outcome*;
- ``status_entries``: which index of which status list each issued credential holds; indexes are
  drawn at random among the free ones (Bitstring Status List §5.4 advises it for privacy).
"""

from __future__ import annotations

import secrets
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from engram.core.clock import format_instant_precise, parse_instant
from engram.errors import ConflictError, StoreError
from engram.level._errors import LevelRefused

_SCHEMA = """
CREATE TABLE IF NOT EXISTS attempts (
  id INTEGER PRIMARY KEY,
  rom_digest TEXT NOT NULL,
  benchmark TEXT NOT NULL,
  at TEXT NOT NULL,
  issued INTEGER NOT NULL,
  mu REAL, sigma REAL, games INTEGER, level INTEGER,
  reason TEXT NOT NULL,
  credential_id TEXT
);
CREATE INDEX IF NOT EXISTS attempts_by_rom ON attempts (rom_digest, benchmark, at);
CREATE TABLE IF NOT EXISTS status_entries (
  list_url TEXT NOT NULL,
  idx INTEGER NOT NULL,
  credential_id TEXT NOT NULL,
  PRIMARY KEY (list_url, idx)
);
"""


@dataclass(frozen=True)
class AttemptRow:
    rom_digest: str
    benchmark: str
    at: datetime
    issued: bool
    mu: float | None
    sigma: float | None
    games: int | None
    level: int | None
    reason: str
    credential_id: str | None


class Ledger:
    """The ledger at ``path`` (created on first use)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        with self._connect() as db:
            db.executescript(_SCHEMA)

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        try:
            with closing(sqlite3.connect(self.path, timeout=10)) as db, db:
                yield db
        except sqlite3.Error as e:
            raise StoreError(f"verifier ledger {self.path}: {e}") from e

    def attempts(self, rom_digest: str | None = None) -> list[AttemptRow]:
        query = (
            "SELECT rom_digest, benchmark, at, issued, mu, sigma, games, level, reason,"
            " credential_id FROM attempts"
        )
        args: tuple[str, ...] = ()
        if rom_digest is not None:
            query += " WHERE rom_digest = ?"
            args = (rom_digest,)
        with self._connect() as db:
            rows = db.execute(query + " ORDER BY id", args).fetchall()
        return [
            AttemptRow(
                r[0], r[1], parse_instant(r[2]), bool(r[3]), r[4], r[5], r[6], r[7], r[8], r[9]
            )
            for r in rows
        ]

    def check_cooldown(
        self, rom_digest: str, benchmark: str, now: datetime, cooldown: timedelta
    ) -> None:
        """Refuse when the last attempt on this ROM and benchmark is younger than ``cooldown``."""
        with self._connect() as db:
            row = db.execute(
                "SELECT at, issued FROM attempts WHERE rom_digest = ? AND benchmark = ?"
                " ORDER BY at DESC LIMIT 1",
                (rom_digest, benchmark),
            ).fetchone()
        if row is None:
            return
        last = parse_instant(row[0])
        if now - last < cooldown:
            ready = last + cooldown
            outcome = "issued" if row[1] else "failed"
            raise LevelRefused(
                f"cooldown: {rom_digest} was last attempted on {benchmark} at {row[0]} ({outcome});"
                f" the next attempt is allowed from {format_instant_precise(ready)}"
            )

    def record(
        self,
        *,
        rom_digest: str,
        benchmark: str,
        at: datetime,
        issued: bool,
        reason: str,
        mu: float | None = None,
        sigma: float | None = None,
        games: int | None = None,
        level: int | None = None,
        credential_id: str | None = None,
    ) -> None:
        with self._connect() as db:
            db.execute(
                "INSERT INTO attempts (rom_digest, benchmark, at, issued, mu, sigma, games, level,"
                " reason, credential_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    rom_digest,
                    benchmark,
                    format_instant_precise(at),
                    int(issued),
                    mu,
                    sigma,
                    games,
                    level,
                    reason,
                    credential_id,
                ),
            )

    def allocate_status_index(self, list_url: str, length: int, credential_id: str) -> int:
        """A random free index of ``list_url`` (``length`` entries), now the credential's."""
        with self._connect() as db:
            used = db.execute(
                "SELECT COUNT(*) FROM status_entries WHERE list_url = ?", (list_url,)
            ).fetchone()[0]
            if used >= length:
                raise ConflictError(f"status list {list_url} is full ({length} entries)")
            for _ in range(64):
                index = secrets.randbelow(length)
                try:
                    db.execute(
                        "INSERT INTO status_entries (list_url, idx, credential_id)"
                        " VALUES (?, ?, ?)",
                        (list_url, index, credential_id),
                    )
                except sqlite3.IntegrityError:
                    continue
                return index
        raise ConflictError(f"status list {list_url} is nearly full: no free index found")

    def status_index_of(self, credential_id: str) -> tuple[str, int] | None:
        with self._connect() as db:
            row = db.execute(
                "SELECT list_url, idx FROM status_entries WHERE credential_id = ?", (credential_id,)
            ).fetchone()
        return None if row is None else (row[0], row[1])


__all__ = ["AttemptRow", "Ledger"]
