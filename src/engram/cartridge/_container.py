"""Opening, reading and writing one .acx file (the SQLite container, not what it means).

Spec: acx-cartridge-conformance §12 items 1-2; docs/spec/acx.md §1-§3.

Reading an untrusted file: the header bytes are checked first (:func:`check_header`), then the
file is opened through a read-only URI (``mode=ro``) with ``trusted_schema`` off and
``query_only`` on, the schema must be exactly the verbatim DDL (no views, triggers or extra
tables), ``PRAGMA quick_check`` must pass, and every sqlar row's metadata is validated (portable
path, mode, row size) before any content is read. Every SQLite failure becomes a
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
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from types import TracebackType
from urllib.parse import quote

from engram.cartridge._format import (
    ACX_DDL,
    APPLICATION_ID,
    DEFAULT_LIMITS,
    MIN_SQLITE_VERSION,
    USER_VERSION,
    Limits,
    check_header,
)
from engram.cartridge._paths import check_unique_casefold, parents
from engram.cartridge._sqlar import DIR_MODE, Entry, check_entry, decode, encode
from engram.errors import CartridgeFormatError

_INTERNAL_TABLES = frozenset({"sqlite_stat1", "sqlite_stat4", "sqlite_sequence"})


def _require_library() -> None:
    if sqlite3.sqlite_version_info < MIN_SQLITE_VERSION:
        raise CartridgeFormatError(
            f"SQLite {sqlite3.sqlite_version} is too old for cartridges (3.37 or newer needed)"
        )


class Cartridge:
    """An open cartridge file: validated sqlar rows plus the acx_* tables, read-only."""

    def __init__(self, path: Path, conn: sqlite3.Connection, limits: Limits) -> None:
        self.path = path
        self.limits = limits
        self._conn = conn
        self._entries: dict[str, Entry] | None = None

    @classmethod
    def open(cls, path: str | os.PathLike[str], limits: Limits = DEFAULT_LIMITS) -> Cartridge:
        """Open ``path`` read-only after checking its header and schema."""
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
                (verdict,) = conn.execute("PRAGMA quick_check").fetchone()
                if verdict != "ok":
                    raise CartridgeFormatError(f"corrupt cartridge {target}: {verdict}")
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
        except (sqlite3.Error, UnicodeDecodeError) as e:
            # Hostile bytes can make a TEXT column invalid UTF-8; that is a malformed file too.
            raise CartridgeFormatError(f"malformed cartridge {self.path.name}: {e}") from e

    def _check_schema(self) -> None:
        rows = self._conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_schema").fetchall()
        tables: dict[str, str] = {}
        for kind, name, table, sql in rows:
            if kind == "table" and name in _INTERNAL_TABLES:
                continue
            if (
                kind == "index"
                and sql is None
                and str(name).startswith(f"sqlite_autoindex_{table}_")
            ):
                continue
            if kind != "table" or name not in ACX_DDL:
                raise CartridgeFormatError(
                    f"malformed cartridge: unexpected schema object {kind} {name!r}"
                )
            tables[name] = sql
        for name, ddl in ACX_DDL.items():
            if name not in tables:
                raise CartridgeFormatError(f"malformed cartridge: table {name} is missing")
            if tables[name] != ddl:
                raise CartridgeFormatError(
                    f"malformed cartridge: table {name} does not have the verbatim acx DDL"
                )

    def entries(self) -> dict[str, Entry]:
        """Every sqlar row's validated metadata, by name (sorted)."""
        if self._entries is None:
            limit = self.limits.max_rows
            with self._sql_errors():
                rows = self._conn.execute(
                    "SELECT name, typeof(name), mode, mtime, sz, typeof(data), length(data) "
                    "FROM sqlar ORDER BY name LIMIT ?",
                    (limit + 1,),
                ).fetchall()
            if len(rows) > limit:
                raise CartridgeFormatError(f"cartridge has more than {limit} sqlar rows")
            entries = {entry.name: entry for entry in (check_entry(r, self.limits) for r in rows)}
            check_unique_casefold(entries)
            for entry in entries.values():
                for parent in parents(entry.name):
                    above = entries.get(parent)
                    if above is not None and not above.is_dir:
                        raise CartridgeFormatError(
                            f"sqlar row {entry.name!r} lies under the file {parent!r}"
                        )
            self._entries = entries
        return self._entries

    def read(self, name: str) -> bytes:
        """The content of the file row ``name`` (validated, inflated, size-checked)."""
        entry = self.entries().get(name)
        if entry is None or entry.is_dir:
            raise CartridgeFormatError(f"cartridge has no file {name!r}")
        with self._sql_errors():
            row = self._conn.execute("SELECT data FROM sqlar WHERE name = ?", (name,)).fetchone()
        if row is None or not isinstance(row[0], bytes):
            raise CartridgeFormatError(f"cartridge file {name!r} changed while it was read")
        return decode(entry, row[0])

    def query(self, sql: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
        """Rows of a read-only query over the acx_* tables (SQLite errors become format errors)."""
        with self._sql_errors():
            return list(self._conn.execute(sql, params).fetchall())

    def meta(self) -> dict[str, str]:
        """The ``acx_meta`` key/value mirror."""
        return {str(k): str(v) for k, v in self.query("SELECT key, value FROM acx_meta")}


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
        self.put_dirs(name, mtime)
        self._begin().execute(
            "INSERT OR REPLACE INTO sqlar(name, mode, mtime, sz, data) VALUES (?, ?, ?, ?, ?)",
            (name, mode, mtime, len(content), encode(content)),
        )

    def put_dirs(self, name: str, mtime: int) -> None:
        """Directory rows for every parent of ``name``, as ``sqlite3 -Ac DIR`` writes them."""
        for parent in parents(name):
            self.put_dir(parent, mtime, with_parents=False)

    def put_dir(self, name: str, mtime: int, *, with_parents: bool = True) -> None:
        if with_parents:
            self.put_dirs(name, mtime)
        self._begin().execute(
            "INSERT OR IGNORE INTO sqlar(name, mode, mtime, sz, data) VALUES (?, ?, ?, 0, NULL)",
            (name, DIR_MODE, mtime),
        )

    def delete_zone(self, zone: str) -> None:
        self._begin().execute(
            "DELETE FROM sqlar WHERE name = ? OR substr(name, 1, ?) = ?",
            (zone, len(zone) + 1, zone + "/"),
        )

    def replace_rows(self, table: str, rows: Iterable[Sequence[object]]) -> None:
        """Replace every row of one acx_* table (the derived indexes, meta and signature)."""
        if table not in ACX_DDL or table == "sqlar":
            raise CartridgeFormatError(f"{table} is not a derived cartridge table")
        conn = self._begin()
        conn.execute(f"DELETE FROM {table}")  # noqa: S608  (table is one of the fixed names)
        batch = [tuple(r) for r in rows]
        if batch:
            marks = ", ".join("?" * len(batch[0]))
            conn.executemany(f"INSERT INTO {table} VALUES ({marks})", batch)  # noqa: S608


def _init_schema(conn: sqlite3.Connection) -> None:
    conn.execute("BEGIN IMMEDIATE")
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute(f"PRAGMA user_version = {USER_VERSION}")
    for ddl in ACX_DDL.values():
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


__all__ = ["Cartridge", "Writer", "create", "rewrite"]
