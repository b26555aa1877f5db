"""The SQLite backends: ``sqlite:///path`` (the embedded default) and ``memory://``.

docs/spec/storage.md "Backends". The file backend keeps one connection per concurrently active
thread (an idle-connection pool: a thread takes one for the length of a transaction, so two
threads never share one) with WAL, ``foreign_keys=ON``, a busy timeout and
``synchronous=NORMAL``. ``isolation_level=None`` hands transaction control to us: writes start
with ``BEGIN IMMEDIATE`` (the write lock is taken up front, so two writers queue on the busy
timeout instead of failing on lock upgrade), reads with a deferred ``BEGIN`` on a connection
opened with ``PRAGMA query_only = ON`` (read connections are pooled apart from write ones) so an
accidental write in ``read()`` fails as it does on PostgreSQL.

The database file holds private signing keys, so it is created with mode 0600 and an existing
file readable by group or others is refused. ``memory://`` is one in-memory connection shared
by every thread behind a lock: for tests and demos.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
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
    PoolStats,
    Row,
    Tx,
)
from engram.store._changes import (
    DEFAULT_BOUND_SECONDS,
    Change,
    ChangeFeed,
    Recording,
    Subscription,
)
from engram.store._sql import PLAIN_TYPES, normalise_params, normalise_rows, run_committed

BUSY_TIMEOUT_MS = 10_000
RECLAIM_SECONDS = 5.0


class SqliteTx(Recording):
    """A transaction on one SQLite connection."""

    def __init__(self, conn: sqlite3.Connection, dialect: Dialect, feed: ChangeFeed) -> None:
        self._conn = conn
        self._dialect = dialect
        self._feed = feed
        self.committed: list[Callable[[], None]] = []

    @property
    def dialect(self) -> Dialect:
        return self._dialect

    def _run(self, sql: str, params: Params) -> tuple[list[str], list[tuple[Any, ...]]]:
        """Column names and every row (all fetched, so a DML ``RETURNING`` runs to the end)."""
        try:
            cursor = self._conn.execute(sql, _params(params))
            description = cursor.description
            if description is None:
                return [], []
            return [d[0] for d in description], cursor.fetchall()
        except sqlite3.Error as e:
            raise StoreError(f"sqlite: {e}") from e

    def execute(self, sql: str, params: Params = ()) -> list[Row]:
        columns, rows = self._run(sql, params)
        return [dict(zip(columns, row)) for row in rows]  # noqa: B905 - one width per cursor

    def execute_many(self, sql: str, rows: Sequence[Params]) -> None:
        try:
            self._conn.executemany(sql, normalise_rows(rows))
        except sqlite3.Error as e:
            raise StoreError(f"sqlite: {e}") from e

    def one(self, sql: str, params: Params = ()) -> Row | None:
        columns, rows = self._run(sql, params)
        return dict(zip(columns, rows[0])) if rows else None  # noqa: B905

    def scalar(self, sql: str, params: Params = ()) -> Any:
        _, rows = self._run(sql, params)
        return rows[0][0] if rows else None


def _configure(conn: sqlite3.Connection, *, wal: bool) -> None:
    conn.execute("PRAGMA foreign_keys = ON")
    # Deleted content is overwritten with zeros, not left in free pages: an erased memory or
    # subject must not be readable from the file (docs/spec/memory-ownership.md "Erase").
    conn.execute("PRAGMA secure_delete = ON")
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    if wal:
        mode = _switch_to_wal(conn)
        if mode is None or str(mode[0]).lower() != "wal":
            raise StoreError(f"sqlite: could not switch the database to WAL (got {mode!r})")
        conn.execute("PRAGMA synchronous = NORMAL")


def _switch_to_wal(conn: sqlite3.Connection) -> Any:
    """``PRAGMA journal_mode = WAL``, retried while another process holds the lock.

    The first switch of a new file to WAL needs an exclusive lock, and SQLite can answer
    SQLITE_BUSY at once there without calling the busy handler (several processes opening one
    new database together, as ``engram serve --workers`` does). So the busy timeout is applied
    here by hand: retry with a short sleep until it has passed, then let the error through.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    pause = 0.005
    while True:
        try:
            return conn.execute("PRAGMA journal_mode = WAL").fetchone()
        except sqlite3.OperationalError as e:
            message = str(e).lower()
            if ("locked" not in message and "busy" not in message) or time.monotonic() > deadline:
                raise
            time.sleep(pause)
            pause = min(pause * 2, 0.1)


def _params(params: Params) -> Params:
    """``normalise_params`` unless every value already binds as is (the usual case: ids and
    text), which skips building a new tuple on every point read."""
    for value in params:
        if type(value) not in PLAIN_TYPES:
            return normalise_params(params)
    return params


class _NestGuard:
    """Refuses a transaction opened inside another on the same thread (it would deadlock)."""

    def __init__(self) -> None:
        self._local = threading.local()

    def take(self) -> None:
        if getattr(self._local, "active", False):
            raise StoreError(
                "nested transaction: a transaction is already open on this thread; "
                "pass its Tx down instead of opening another"
            )
        self._local.active = True

    def drop(self) -> None:
        self._local.active = False


class _Transaction:
    """``with store.transaction()`` / ``with store.read()``: BEGIN on enter; COMMIT when the
    block succeeds, ROLLBACK when it raises; the connection goes back to its owner either way.

    A plain class rather than nested generator context managers: ``read()`` is on the
    provider's per-request path, and each generator layer costs more than the query itself.
    ``toggle_query_only`` is for a connection shared by reads and writes (``memory://``): the
    read runs under ``PRAGMA query_only``, switched off again afterwards. A dedicated read
    connection has it on from the start and skips the two statements.
    """

    __slots__ = ("_conn", "_owner", "_toggle", "_tx", "_write")

    def __init__(self, owner: _SqliteBase, *, write: bool) -> None:
        self._owner = owner
        self._write = write
        self._toggle = owner._shared_connection and not write
        self._conn: sqlite3.Connection | None = None
        self._tx: SqliteTx | None = None

    def __enter__(self) -> SqliteTx:
        owner = self._owner
        owner._guard.take()
        try:
            conn = owner._checkout(write=self._write)
        except BaseException:
            owner._guard.drop()
            raise
        try:
            if self._write:
                conn.execute("BEGIN IMMEDIATE")
            else:
                if self._toggle:
                    conn.execute("PRAGMA query_only = ON")
                conn.execute("BEGIN")
        except sqlite3.Error as e:
            self._finish(conn)
            raise StoreError(f"sqlite: could not begin a transaction: {e}") from e
        self._conn = conn
        self._tx = SqliteTx(conn, owner._dialect, owner._feed)
        return self._tx

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        conn, tx = self._conn, self._tx
        if conn is None or tx is None:  # pragma: no cover - __exit__ without __enter__
            raise StoreError("sqlite: transaction ended twice")
        self._conn = self._tx = None
        try:
            if exc_type is not None:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                return
            try:
                conn.execute("COMMIT")
            except sqlite3.Error as e:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise StoreError(f"sqlite: commit failed: {e}") from e
        finally:
            self._finish(conn)
        run_committed(tx.committed)

    def _finish(self, conn: sqlite3.Connection) -> None:
        try:
            if self._toggle:
                conn.execute("PRAGMA query_only = OFF")
        finally:
            self._owner._checkin(conn, write=self._write)
            self._owner._guard.drop()


class _SqliteBase:
    _dialect: Dialect
    _guard: _NestGuard
    _schema: _migrate.SchemaMemo
    _feed: ChangeFeed
    # True when reads and writes share one connection (query_only is switched per read).
    _shared_connection = False

    @property
    def dialect(self) -> Dialect:
        return self._dialect

    @property
    def url(self) -> str:
        raise NotImplementedError

    def _checkout(self, *, write: bool) -> sqlite3.Connection:
        """A connection for this thread's transaction (StoreError when closed)."""
        raise NotImplementedError

    def _checkin(self, conn: sqlite3.Connection, *, write: bool) -> None:
        """Take back the connection :meth:`_checkout` gave."""
        raise NotImplementedError

    def transaction(self) -> AbstractContextManager[SqliteTx]:
        return _Transaction(self, write=True)

    def read(self) -> AbstractContextManager[SqliteTx]:
        return _Transaction(self, write=False)

    def migrate(self, *components: Component) -> list[tuple[str, int, str]]:
        # BEGIN IMMEDIATE is the migration lock: one writer at a time across processes.
        return _migrate.migrate(self.transaction, self._dialect, components, self._schema)

    def require(self, *components: Component, tx: Tx | None = None) -> None:
        _migrate.require(self._schema, self.read, self.url, components, tx)

    def forget_schema(self) -> None:
        self._schema.forget()

    def subscribe(
        self, subscriber: Callable[[Change], None], bound: float = DEFAULT_BOUND_SECONDS
    ) -> Subscription:
        return self._feed.subscribe(subscriber, bound)

    def _new_feed(self, *, remote: bool) -> ChangeFeed:
        feed = ChangeFeed(self.read, remote=remote)
        feed.on_schema_change = self.forget_schema
        return feed

    def reclaim(self, tables: Sequence[str]) -> bool:  # noqa: ARG002 - every table alike
        """Checkpoint the write-ahead log into the file and truncate it to zero bytes: the
        frames that still held deleted rows' old pages are gone. ``secure_delete`` (set on
        every connection) already zeroed them in the pages written since. A reader holding an
        old snapshot keeps the checkpoint from finishing: retried for a short while."""
        deadline = time.monotonic() + RECLAIM_SECONDS
        while True:
            conn = self._checkout(write=True)
            try:
                busy, _log, _done = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            except sqlite3.Error as e:
                raise StoreError(f"sqlite: checkpoint failed: {e}") from e
            finally:
                self._checkin(conn, write=True)
            if not busy:
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)

    def schema_versions(self) -> dict[str, int]:
        with self.read() as tx:
            return _migrate.versions_in(tx)


class MemoryStore(_SqliteBase):
    """``memory://``: one in-memory SQLite connection shared by all threads behind a lock."""

    _shared_connection = True

    def __init__(self) -> None:
        self._dialect = MEMORY_DIALECT
        self._guard = _NestGuard()
        self._schema = _migrate.SchemaMemo()
        self._feed = self._new_feed(remote=False)  # no other process can write to it
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = sqlite3.connect(
            ":memory:", isolation_level=None, check_same_thread=False
        )
        _configure(self._conn, wal=False)

    @property
    def url(self) -> str:
        return "memory://"

    # One connection for everything: the lock is held from checkout to checkin.
    def _checkout(self, *, write: bool) -> sqlite3.Connection:  # noqa: ARG002
        self._lock.acquire()
        if self._conn is None:
            self._lock.release()
            raise StoreError("the store is closed")
        return self._conn

    def _checkin(self, conn: sqlite3.Connection, *, write: bool) -> None:  # noqa: ARG002
        self._lock.release()

    def pool_stats(self) -> PoolStats:
        """The one connection: in use while a transaction holds the lock."""
        taken = int(self._lock.locked())
        return PoolStats(in_use=taken, idle=1 - taken, waiting=0, max_size=1)

    def close(self) -> None:
        self._feed.close()
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
    """``sqlite:///path``: the embedded default, WAL, one connection per active thread.

    Reads and writes use separate idle pools: a read connection is opened with
    ``PRAGMA query_only = ON`` once and keeps it, so ``read()`` costs BEGIN, the queries and
    COMMIT, not two extra PRAGMA statements per transaction (the provider's hot path is one
    point read per request).
    """

    def __init__(self, path: Path) -> None:
        self._dialect = SQLITE_DIALECT
        self._guard = _NestGuard()
        self._schema = _migrate.SchemaMemo()
        self._feed = self._new_feed(remote=True)  # other processes share the file
        self._path = path
        self._lock = threading.Lock()
        # Index 0: write connections, index 1: read-only ones (query_only set at open).
        self._idle: tuple[list[sqlite3.Connection], list[sqlite3.Connection]] = ([], [])
        self._opened = 0  # connections open now, idle or taken (for pool_stats)
        self._closed = False
        try:
            _prepare_file(path)
            self._checkin(self._connect(read_only=False), write=True)  # fail now if unusable
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

    def _connect(self, *, read_only: bool) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self._path,
            isolation_level=None,
            check_same_thread=False,  # a pooled connection moves between threads, never shared
            timeout=BUSY_TIMEOUT_MS / 1000,
        )
        try:
            _configure(conn, wal=True)
            if read_only:
                conn.execute("PRAGMA query_only = ON")
        except BaseException:
            conn.close()
            raise
        with self._lock:
            self._opened += 1
        return conn

    def _checkout(self, *, write: bool) -> sqlite3.Connection:
        read_only = not write
        with self._lock:
            if self._closed:
                raise StoreError("the store is closed")
            idle = self._idle[read_only]
            if idle:
                return idle.pop()
        try:
            return self._connect(read_only=read_only)
        except sqlite3.Error as e:
            raise StoreError(f"sqlite: cannot open {self._path}: {e}") from e

    def _checkin(self, conn: sqlite3.Connection, *, write: bool) -> None:
        with self._lock:
            if self._closed:
                self._opened -= 1
                conn.close()
            else:
                self._idle[not write].append(conn)

    def pool_stats(self) -> PoolStats:
        """Connections open (one per thread that has had a transaction) and idle now."""
        with self._lock:
            idle = len(self._idle[0]) + len(self._idle[1])
            return PoolStats(in_use=self._opened - idle, idle=idle, waiting=0, max_size=0)

    def close(self) -> None:
        self._feed.close()
        with self._lock:
            self._closed = True
            idle = [*self._idle[0], *self._idle[1]]
            self._idle = ([], [])
            self._opened -= len(idle)
        for conn in idle:
            conn.close()


__all__ = ["BUSY_TIMEOUT_MS", "MemoryStore", "SqliteStore", "SqliteTx"]
