"""Opening, reading and writing one .acx file (the SQLite container, not what it means).

Spec: lboel/acx@85f1358 SPEC.md §3.1-§3.2 and §12 items 1-2; docs/spec/acx.md §1-§3.

Reading an untrusted file: the header bytes are checked first (:func:`check_header`, which also
refuses a FIFO or any other non-regular file), then the file is opened through a read-only URI
(``mode=ro``) with ``trusted_schema`` off and ``query_only`` on; every schema object must be one
of the accepted spellings of the §3.2 DDL (no views, triggers or extra tables); and the full
``PRAGMA integrity_check`` must pass, so every index agrees with its table (issue 15: a name
rewritten in a table's raw page bytes but not in its index is refused here). Rows that decide
anything are then read from the tables themselves (``NOT INDEXED``, by ``rowid``), the bytes
stock ``sqlite3 -Ax`` reads. Every byte inflated or read from a row is charged against
``Limits.max_total_inflated_bytes`` before it is inflated. Every SQLite failure becomes a
:class:`CartridgeFormatError` naming the file.

Writing never edits a file in place: :func:`rewrite` and :func:`create` work on a temporary
file beside the target and rename it over the target only after the change committed, so a
failure leaves the original bytes untouched (no partial writes).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from urllib.parse import quote

from engram.cartridge._errors import LegacyLayout
from engram.cartridge._format import (
    ACCEPTED_DDL,
    APPLICATION_ID,
    DEFAULT_LIMITS,
    MIN_SQLITE_VERSION,
    SPEC_DDL,
    USER_VERSION,
    VEC0_SHADOW,
    Limits,
    check_header,
    normalize_sql,
)
from engram.cartridge._paths import check_unique_casefold, parents
from engram.cartridge._record_tables import RECORD_TABLES
from engram.cartridge._sqlar import Entry, check_entry, decode, encode
from engram.errors import CartridgeFormatError

_INTERNAL_TABLES = frozenset({"sqlite_stat1", "sqlite_stat4", "sqlite_sequence"})
OPTIONAL_TABLES = frozenset({"acx_skill", *(t.table for t in RECORD_TABLES)})
LEGACY_TABLES = frozenset({"acx_meta", "acx_object", "acx_signature", "acx_vectors"})


def _require_library() -> None:
    if sqlite3.sqlite_version_info < MIN_SQLITE_VERSION:
        raise CartridgeFormatError(
            f"SQLite {sqlite3.sqlite_version} is too old for cartridges (3.37 or newer needed)"
        )


class Cartridge:
    """An open cartridge file, read-only: validated sqlar rows and the §3.2 tables."""

    def __init__(self, path: Path, conn: sqlite3.Connection, limits: Limits) -> None:
        self.path = path
        self.limits = limits
        self._conn = conn
        self._entries: dict[str, Entry] | None = None
        self.tables: frozenset[str] = frozenset()
        self.vec0 = False
        """Whether ``vectors`` is SPEC's ``vec0`` virtual table (never read without sqlite-vec)."""
        self.inflated = 0
        """Bytes read or inflated so far, charged against ``limits.max_total_inflated_bytes``."""

    @classmethod
    def open(cls, path: str | os.PathLike[str], limits: Limits = DEFAULT_LIMITS) -> Cartridge:
        """Open ``path`` read-only after checking its header, schema and integrity."""
        _require_library()
        target = Path(path)
        check_header(target, limits)
        uri = f"file:{quote(str(target.resolve()))}?mode=ro"
        try:
            conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as e:
            raise CartridgeFormatError(f"cannot open cartridge {target}: {e}") from e
        cartridge = cls(target, conn, limits)
        try:
            with cartridge._sql_errors():
                conn.execute("PRAGMA trusted_schema = OFF")
                conn.execute("PRAGMA query_only = ON")
                cartridge._check_schema()
                problems = [str(r[0]) for r in conn.execute("PRAGMA integrity_check(20)")]
                if problems != ["ok"]:
                    raise CartridgeFormatError(
                        f"corrupt cartridge {target.name}: integrity_check: {'; '.join(problems)}"
                    )
                cartridge.entries()
        except BaseException:
            conn.close()
            raise
        return cartridge

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Cartridge:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @contextlib.contextmanager
    def _sql_errors(self) -> Iterator[None]:
        try:
            yield
        except (sqlite3.Error, UnicodeDecodeError, OverflowError) as e:
            # Hostile bytes can make a TEXT column invalid UTF-8; that is a malformed file too.
            raise CartridgeFormatError(f"malformed cartridge {self.path.name}: {e}") from e

    def _check_schema(self) -> None:
        rows = self._conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_schema").fetchall()
        names = {str(r[1]) for r in rows}
        if names & LEGACY_TABLES and "cartridge" not in names:
            raise LegacyLayout(
                f"{self.path.name} is in engram's earlier cartridge layout (acx_meta, acx_object); "
                f"re-pack it with `engram cartridge upgrade {self.path.name} NEW.acx "
                "--sign-key KEY`"
            )
        vec0 = any(
            r[0] == "table" and r[1] == "vectors" and "USING VEC0" in normalize_sql(str(r[3]))
            for r in rows
        )
        found: set[str] = set()
        for kind, name, table, sql in rows:
            if kind == "table" and name in _INTERNAL_TABLES:
                continue
            if (
                kind == "index"
                and sql is None
                and str(name).startswith(f"sqlite_autoindex_{table}_")
            ):
                continue
            if vec0 and name == "vectors":
                found.add(name)
                continue
            if vec0 and kind == "table" and VEC0_SHADOW.fullmatch(str(name)):
                continue
            accepted = ACCEPTED_DDL.get(str(name))
            expected_kind = "index" if name == "memory_zone_fp" else "table"
            if accepted is None or kind != expected_kind:
                raise CartridgeFormatError(
                    f"malformed cartridge: unexpected schema object {kind} {name!r}"
                )
            if normalize_sql(str(sql)) not in accepted:
                raise CartridgeFormatError(
                    f"malformed cartridge: {kind} {name} does not have the SPEC §3.2 DDL"
                )
            found.add(str(name))
        missing = sorted(set(SPEC_DDL) - OPTIONAL_TABLES - found)
        if missing:
            raise CartridgeFormatError(f"malformed cartridge: missing {', '.join(missing)}")
        self.tables = frozenset(found)
        self.vec0 = vec0

    def entries(self) -> dict[str, Entry]:
        """Every sqlar row's validated metadata, by name (sorted), read from the table itself."""
        if self._entries is None:
            limit = self.limits.max_rows
            with self._sql_errors():
                rows = self._conn.execute(
                    "SELECT rowid, name, typeof(name), mode, mtime, sz, typeof(data), "
                    "length(data) FROM sqlar NOT INDEXED ORDER BY rowid LIMIT ?",
                    (limit + 1,),
                ).fetchall()
            if len(rows) > limit:
                raise CartridgeFormatError(f"cartridge has more than {limit} sqlar rows")
            entries: dict[str, Entry] = {}
            for row in rows:
                entry = check_entry(row, self.limits)
                if entry.name in entries:
                    raise CartridgeFormatError(f"sqlar name {entry.name!r} appears twice")
                entries[entry.name] = entry
            check_unique_casefold(entries)
            for entry in entries.values():
                for parent in parents(entry.name):
                    above = entries.get(parent)
                    if above is not None and not above.is_dir:
                        raise CartridgeFormatError(
                            f"sqlar row {entry.name!r} lies under the file {parent!r}"
                        )
            self._entries = dict(sorted(entries.items()))
        return self._entries

    def charge(self, size: int, what: str) -> None:
        """Count ``size`` bytes against the total budget *before* reading or inflating them."""
        self.inflated += size
        budget = self.limits.max_total_inflated_bytes
        if self.inflated > budget:
            raise CartridgeFormatError(
                f"cartridge {self.path.name}: reading {what} would take more than the "
                f"{budget}-byte budget for one cartridge (Limits.max_total_inflated_bytes)"
            )

    def read(self, name: str) -> bytes:
        """The content of the file row ``name`` (validated, budgeted, inflated, size-checked)."""
        entry = self.entries().get(name)
        if entry is None or entry.is_dir:
            raise CartridgeFormatError(f"cartridge has no file {name!r}")
        self.charge(entry.size, name)
        with self._sql_errors():
            row = self._conn.execute(
                "SELECT data, name FROM sqlar WHERE rowid = ?", (entry.rowid,)
            ).fetchone()
        if row is None or row[1] != name or not isinstance(row[0], bytes):
            raise CartridgeFormatError(f"cartridge file {name!r} changed while it was read")
        return decode(entry, row[0])

    def query(self, sql: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
        """Rows of a read-only query (SQLite errors become format errors)."""
        with self._sql_errors():
            return list(self._conn.execute(sql, params).fetchall())

    def rows(self, sql: str, params: tuple[object, ...] = ()) -> Iterator[tuple[object, ...]]:
        """:meth:`query`'s rows one at a time, so a table of 100,000 memory rows is never held
        whole (issue 33); SQLite errors met while stepping become format errors too."""
        with self._sql_errors():
            yield from self._conn.execute(sql, params)

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[None]:
        """Every read in the block sees the same bytes: one read transaction, so a file
        verified in one pass and acted on in the next cannot change in between (a writer
        waits for it, or, in WAL mode, writes past the snapshot)."""
        with self._sql_errors():
            self._conn.execute("BEGIN")
        try:
            yield
        except BaseException:
            # The block's own error is the one to report, whatever ending the snapshot says.
            with contextlib.suppress(sqlite3.Error):
                self._conn.execute("ROLLBACK")
            raise
        with self._sql_errors():
            self._conn.execute("COMMIT")

    def has(self, table: str) -> bool:
        return table in self.tables

    def meta(self) -> dict[str, str]:
        """The ``cartridge`` key/value rows, every key and value checked to be text."""
        rows = self.query(
            "SELECT key, value, typeof(key), typeof(value), length(CAST(value AS BLOB)) "
            "FROM cartridge NOT INDEXED LIMIT ?",
            (self.limits.max_meta_keys + 1,),
        )
        if len(rows) > self.limits.max_meta_keys:
            raise CartridgeFormatError(f"cartridge has more than {self.limits.max_meta_keys} keys")
        out: dict[str, str] = {}
        for key, value, key_type, value_type, size in rows:
            if key_type != "text" or value_type != "text" or not isinstance(size, int):
                raise CartridgeFormatError(f"cartridge meta {key!r} is not text")
            self.charge(size, f"cartridge:{key}")
            out[str(key)] = str(value)
        return out


class Writer:
    """A read-write connection to the temporary copy that :func:`create`/:func:`rewrite` stage.

    ``path`` is that temporary file: open it read-only with :meth:`Cartridge.open` *before* the
    first write to derive what to write from its live bytes. Writes share one transaction,
    begun at the first write and committed when the block ends.
    """

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self.conn = conn
        self.path = path

    def _begin(self) -> sqlite3.Connection:
        if not self.conn.in_transaction:
            self.conn.execute("BEGIN IMMEDIATE")
        return self.conn

    def put_file(self, name: str, content: bytes, *, mode: int, mtime: int) -> None:
        self._begin().execute(
            "INSERT OR REPLACE INTO sqlar(name, mode, mtime, sz, data) VALUES (?, ?, ?, ?, ?)",
            (name, mode, mtime, len(content), encode(content)),
        )

    def update_file(self, name: str, content: bytes, *, mode: int, mtime: int) -> None:
        """Give the file row ``name`` new bytes in place (it keeps its ``rowid``)."""
        self._begin().execute(
            "UPDATE sqlar SET mode = ?, mtime = ?, sz = ?, data = ? WHERE name = ?",
            (mode, mtime, len(content), encode(content), name),
        )

    def commit(self) -> None:
        """Commit what was written so far, so a read-only :class:`Cartridge` can see it."""
        if self.conn.in_transaction:
            self.conn.execute("COMMIT")

    def execute(self, sql: str, params: tuple[object, ...] = ()) -> None:
        self._begin().execute(sql, params)

    def executemany(self, sql: str, rows: list[tuple[object, ...]]) -> None:
        if rows:
            self._begin().executemany(sql, rows)

    def delete_zone(self, zone: str) -> None:
        self._begin().execute(
            "DELETE FROM sqlar WHERE name = ? OR substr(name, 1, ?) = ?",
            (zone, len(zone) + 1, zone + "/"),
        )


def _init_schema(conn: sqlite3.Connection) -> None:
    conn.execute("BEGIN IMMEDIATE")
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute(f"PRAGMA user_version = {USER_VERSION}")
    for ddl in SPEC_DDL.values():
        conn.execute(ddl)


@contextlib.contextmanager
def create(target: str | os.PathLike[str]) -> Iterator[Writer]:
    """Write a new cartridge at ``target``; it appears only if the block finishes."""
    _require_library()
    with _staged(Path(target), copy_from=None) as (conn, temp):
        _init_schema(conn)
        yield Writer(conn, temp)


@contextlib.contextmanager
def rewrite(
    source: str | os.PathLike[str], target: str | os.PathLike[str] | None = None
) -> Iterator[Writer]:
    """Change a copy of ``source`` and rename it over ``target`` (default: ``source``)."""
    _require_library()
    origin = Path(source)
    check_header(origin)
    destination = Path(target) if target is not None else origin
    with _staged(destination, copy_from=origin) as (conn, temp):
        yield Writer(conn, temp)


@contextlib.contextmanager
def _staged(target: Path, copy_from: Path | None) -> Iterator[tuple[sqlite3.Connection, Path]]:
    directory = target.resolve().parent
    if not directory.is_dir():
        raise CartridgeFormatError(f"cannot write a cartridge into {directory}: no such directory")
    fd, temp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    os.close(fd)
    temp = Path(temp_name)
    try:
        if copy_from is not None:
            shutil.copyfile(copy_from, temp)
        else:
            temp.unlink()
        conn = sqlite3.connect(temp, isolation_level=None)
        try:
            conn.execute("PRAGMA trusted_schema = OFF")
            yield conn, temp
            if conn.in_transaction:
                conn.execute("COMMIT")
            conn.execute("VACUUM")
        except sqlite3.Error as e:
            raise CartridgeFormatError(f"cannot write cartridge {target.name}: {e}") from e
        finally:
            conn.close()
        with temp.open("rb+") as handle:
            os.fsync(handle.fileno())
        temp.chmod(0o644)
        temp.replace(target)
    finally:
        temp.unlink(missing_ok=True)


__all__ = ["LEGACY_TABLES", "Cartridge", "Writer", "create", "rewrite"]
