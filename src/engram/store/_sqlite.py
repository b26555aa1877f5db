"""The SQLite backends: ``sqlite:///path`` (the embedded default) and ``memory://``.

docs/spec/storage.md "Backends". The file backend keeps one connection per concurrently active
thread (an idle-connection pool: a thread takes one for the length of a transaction, so two
threads never share one) with WAL, ``foreign_keys=ON``, a busy timeout and
``synchronous=NORMAL``. ``isolation_level=None`` hands transaction control to us: writes start
with ``BEGIN IMMEDIATE`` (the write lock is taken up front, so two writers queue on the busy
timeout instead of failing on lock upgrade), reads with a deferred ``BEGIN`` under
``PRAGMA query_only`` so an accidental write in ``read()`` fails as it does on PostgreSQL.

The database file holds private signing keys, so it is created with mode 0600 and an existing
file readable by group or others is refused. ``memory://`` is one in-memory connection shared
by every thread behind a lock: for tests and demos.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from engram.errors import StoreError
from engram.store import _migrate
from engram.store._base import (
    MEMORY_DIALECT,
    SQLITE_DIALECT,
    Component,
    Dialect,
    Params,
    Row,
)
from engram.store._sql import normalise_params

BUSY_TIMEOUT_MS = 10_000


class SqliteTx:
    """A transaction on one SQLite connection."""

    def __init__(self, conn: sqlite3.Connection, dialect: Dialect) -> None:
        self._conn = conn
        self._dialect = dialect

    @property
    def dialect(self) -> Dialect:
        return self._dialect

    def execute(self, sql: str, params: Params = ()) -> list[Row]:
        try:
            cursor = self._conn.execute(sql, normalise_params(params))
            if cursor.description is None:
                return []
            columns = [d[0] for d in cursor.description]
            return [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]
        except sqlite3.Error as e:
            raise StoreError(f"sqlite: {e}") from e

    def execute_many(self, sql: str, rows: Sequence[Params]) -> None:
        try:
            self._conn.executemany(sql, [normalise_params(r) for r in rows])
        except sqlite3.Error as e:
            raise StoreError(f"sqlite: {e}") from e

    def one(self, sql: str, params: Params = ()) -> Row | None:
        rows = self.execute(sql, params)
        return rows[0] if rows else None

    def scalar(self, sql: str, params: Params = ()) -> Any:
        row = self.one(sql, params)
        return next(iter(row.values())) if row else None


def _configure(conn: sqlite3.Connection, *, wal: bool) -> None:
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    if wal:
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()
        if mode is None or str(mode[0]).lower() != "wal":
            raise StoreError(f"sqlite: could not switch the database to WAL (got {mode!r})")
        conn.execute("PRAGMA synchronous = NORMAL")


@contextmanager
def _run(conn: sqlite3.Connection, dialect: Dialect, *, write: bool) -> Iterator[SqliteTx]:
    """BEGIN, yield, COMMIT on success or ROLLBACK on any exception."""
    try:
        if write:
            conn.execute("BEGIN IMMEDIATE")
        else:
            conn.execute("PRAGMA query_only = ON")
            conn.execute("BEGIN")
    except sqlite3.Error as e:
        if not write:
            conn.execute("PRAGMA query_only = OFF")
        raise StoreError(f"sqlite: could not begin a transaction: {e}") from e
    try:
        yield SqliteTx(conn, dialect)
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    else:
        try:
            conn.execute("COMMIT")
        except sqlite3.Error as e:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise StoreError(f"sqlite: commit failed: {e}") from e
    finally:
        if not write:
            conn.execute("PRAGMA query_only = OFF")


class _NestGuard:
    """Refuses a transaction opened inside another on the same thread (it would deadlock)."""

    def __init__(self) -> None:
        self._local = threading.local()

    @contextmanager
    def enter(self) -> Iterator[None]:
        if getattr(self._local, "active", False):
            raise StoreError(
                "nested transaction: a transaction is already open on this thread; "
                "pass its Tx down instead of opening another"
            )
        self._local.active = True
        try:
            yield
        finally:
            self._local.active = False


class _SqliteBase:
    _dialect: Dialect
    _guard: _NestGuard

    @property
    def dialect(self) -> Dialect:
        return self._dialect

    def _begin(self, *, write: bool) -> AbstractContextManager[SqliteTx]:
        raise NotImplementedError

    def transaction(self) -> AbstractContextManager[SqliteTx]:
        return self._begin(write=True)

    def read(self) -> AbstractContextManager[SqliteTx]:
        return self._begin(write=False)

    def migrate(self, *components: Component) -> list[tuple[str, int, str]]:
        # BEGIN IMMEDIATE is the migration lock: one writer at a time across processes.
        return _migrate.migrate(self.transaction, self._dialect, components)

    def schema_versions(self) -> dict[str, int]:
        with self.read() as tx:
            if not tx.scalar(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                (_migrate.SCHEMA_TABLE,),
            ):
                return {}
            return _migrate.read_versions(tx)


class MemoryStore(_SqliteBase):
    """``memory://``: one in-memory SQLite connection shared by all threads behind a lock."""

    def __init__(self) -> None:
        self._dialect = MEMORY_DIALECT
        self._guard = _NestGuard()
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = sqlite3.connect(
            ":memory:", isolation_level=None, check_same_thread=False
        )
        _configure(self._conn, wal=False)

    @property
    def url(self) -> str:
        return "memory://"

    @contextmanager
    def _begin(self, *, write: bool) -> Iterator[SqliteTx]:
        with self._guard.enter(), self._lock:
            if self._conn is None:
                raise StoreError("the store is closed")
            with _run(self._conn, self._dialect, write=write) as tx:
                yield tx

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def _prepare_file(path: Path) -> None:
    """Create the database file 0600 (it holds private keys); refuse a readable existing one."""
    if not path.parent.exists():
        path.parent.mkdir(parents=True, mode=0o700)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        mode = stat.S_IMODE(path.stat().st_mode)
        if mode & 0o077:
            raise StoreError(
                f"database file {path} is accessible by group or others (mode {mode:04o}); it "
                f"holds private signing keys: run `chmod 600 {path}`"
            ) from None
    else:
        # The umask may have narrowed the mode further, never widened it; make it exact.
        os.fchmod(fd, 0o600)
        os.close(fd)


class SqliteStore(_SqliteBase):
    """``sqlite:///path``: the embedded default, WAL, one connection per active thread."""

    def __init__(self, path: Path) -> None:
        self._dialect = SQLITE_DIALECT
        self._guard = _NestGuard()
        self._path = path
        self._lock = threading.Lock()
        self._idle: list[sqlite3.Connection] = []
        self._closed = False
        try:
            _prepare_file(path)
            self._release(self._connect())  # fail now, not on first use, if unusable
        except sqlite3.Error as e:
            raise StoreError(f"sqlite: cannot open {path}: {e}") from e
        except OSError as e:
            raise StoreError(f"sqlite: cannot create {path}: {e.strerror or e}") from e

    @property
    def url(self) -> str:
        return f"sqlite://{self._path}"

    @property
    def path(self) -> Path:
        return self._path

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self._path,
            isolation_level=None,
            check_same_thread=False,  # a pooled connection moves between threads, never shared
            timeout=BUSY_TIMEOUT_MS / 1000,
        )
        try:
            _configure(conn, wal=True)
        except BaseException:
            conn.close()
            raise
        return conn

    def _acquire(self) -> sqlite3.Connection:
        with self._lock:
            if self._closed:
                raise StoreError("the store is closed")
            if self._idle:
                return self._idle.pop()
        try:
            return self._connect()
        except sqlite3.Error as e:
            raise StoreError(f"sqlite: cannot open {self._path}: {e}") from e

    def _release(self, conn: sqlite3.Connection) -> None:
        with self._lock:
            if self._closed:
                conn.close()
            else:
                self._idle.append(conn)

    @contextmanager
    def _begin(self, *, write: bool) -> Iterator[SqliteTx]:
        with self._guard.enter():
            conn = self._acquire()
            try:
                with _run(conn, self._dialect, write=write) as tx:
                    yield tx
            finally:
                self._release(conn)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


__all__ = ["BUSY_TIMEOUT_MS", "MemoryStore", "SqliteStore", "SqliteTx"]
