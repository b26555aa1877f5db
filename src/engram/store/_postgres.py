"""The PostgreSQL backend: ``postgresql://user@host:port/db`` (docs/spec/storage.md "Backends").

psycopg 3 with a ``psycopg_pool.ConnectionPool``; rows come back as dicts. Connections run in
autocommit mode and we write ``BEGIN`` / ``COMMIT`` ourselves so both backends share one
transaction shape: ``transaction()`` is READ COMMITTED read-write, ``read()`` is REPEATABLE READ
READ ONLY (one consistent snapshot, and a write inside it fails). ``?`` placeholders are rewritten
to ``%s`` by :func:`engram.store._sql.to_pyformat`. Migrations serialise on
``pg_advisory_xact_lock`` keyed by the schema, so workers sharing one database can all call
``migrate()`` at start-up. Driver errors become :class:`StoreError` with the password scrubbed.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any
from urllib.parse import unquote, urlsplit

import psycopg
from psycopg.rows import DictRow, dict_row
from psycopg_pool import ConnectionPool, PoolTimeout

from engram.errors import StoreError
from engram.store import _changes, _migrate
from engram.store._base import (
    POSTGRES_DIALECT,
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
from engram.store._sql import (
    advisory_lock,
    normalise_params,
    normalise_rows,
    redact_url,
    run_committed,
    scrub,
    to_pyformat,
)

CONNECT_TIMEOUT_SECONDS = 10
POOL_MAX_SIZE = 10
MIGRATION_LOCK = "engram-migrate"


_TABLE_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


def _one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


class PostgresTx(Recording):
    """A transaction on one pooled connection."""

    def __init__(
        self, conn: psycopg.Connection[DictRow], secrets: tuple[str, ...], feed: ChangeFeed
    ) -> None:
        self._conn = conn
        self._secrets = secrets
        self._feed = feed
        self.committed: list[Callable[[], None]] = []

    @property
    def dialect(self) -> Dialect:
        return POSTGRES_DIALECT

    def _error(self, e: psycopg.Error) -> StoreError:
        return StoreError(scrub(f"postgresql: {_one_line(str(e))}", self._secrets))

    def execute(self, sql: str, params: Params = ()) -> list[Row]:
        try:
            cursor = self._conn.execute(to_pyformat(sql), normalise_params(params))
            if cursor.description is None:
                return []
            return [dict(row) for row in cursor.fetchall()]
        except psycopg.Error as e:
            raise self._error(e) from e

    def execute_many(self, sql: str, rows: Sequence[Params]) -> None:
        try:
            with self._conn.cursor() as cursor:
                cursor.executemany(to_pyformat(sql), normalise_rows(rows))
        except psycopg.Error as e:
            raise self._error(e) from e

    def one(self, sql: str, params: Params = ()) -> Row | None:
        rows = self.execute(sql, params)
        return rows[0] if rows else None

    def scalar(self, sql: str, params: Params = ()) -> Any:
        row = self.one(sql, params)
        return next(iter(row.values())) if row else None


class PostgresStore:
    """``postgresql://...``: a pooled PostgreSQL database shared by several workers."""

    def __init__(self, url: str, *, max_size: int = POOL_MAX_SIZE) -> None:
        self._url = url
        password = urlsplit(url).password
        self._secrets: tuple[str, ...] = (password, unquote(password)) if password else ()
        self._local = threading.local()
        self._schema = _migrate.SchemaMemo()
        self._feed = ChangeFeed(self.read, remote=True, listen=self._notifications)
        self._feed.on_schema_change = self.forget_schema
        try:
            # One direct connection first: an unreachable server fails now with the driver's
            # own reason, instead of as a pool timeout on first use.
            psycopg.connect(url, connect_timeout=CONNECT_TIMEOUT_SECONDS).close()
            self._pool: ConnectionPool[psycopg.Connection[DictRow]] = ConnectionPool(
                url,
                min_size=1,
                max_size=max_size,
                kwargs={
                    "autocommit": True,
                    "row_factory": dict_row,
                    "connect_timeout": CONNECT_TIMEOUT_SECONDS,
                    # Prepared plans survive ALTER TABLE badly ("cached plan must not change
                    # result type") and migrations run in live processes: do not prepare.
                    "prepare_threshold": None,
                },
                open=True,
                name="engram",
            )
        except (psycopg.Error, ValueError) as e:
            raise StoreError(
                scrub(
                    f"postgresql: cannot connect to {self.url}: {_one_line(str(e))}", self._secrets
                )
            ) from e

    @property
    def dialect(self) -> Dialect:
        return POSTGRES_DIALECT

    @property
    def url(self) -> str:
        return redact_url(self._url)

    @contextmanager
    def _begin(self, begin_sql: str) -> Iterator[PostgresTx]:
        if getattr(self._local, "active", False):
            raise StoreError(
                "nested transaction: a transaction is already open on this thread; "
                "pass its Tx down instead of opening another"
            )
        self._local.active = True
        try:
            with self._pool.connection() as conn:
                try:
                    conn.execute(begin_sql)
                except psycopg.Error as e:
                    raise StoreError(
                        scrub(f"postgresql: cannot begin: {_one_line(str(e))}", self._secrets)
                    ) from e
                tx = PostgresTx(conn, self._secrets, self._feed)
                try:
                    yield tx
                except BaseException:
                    if not conn.closed:
                        conn.execute("ROLLBACK")
                    raise
                try:
                    conn.execute("COMMIT")
                except psycopg.Error as e:
                    raise StoreError(
                        scrub(f"postgresql: commit failed: {_one_line(str(e))}", self._secrets)
                    ) from e
            committed = tx.committed
        except psycopg.Error as e:
            raise StoreError(scrub(f"postgresql: {_one_line(str(e))}", self._secrets)) from e
        except PoolTimeout as e:
            raise StoreError(f"postgresql: no connection available: {_one_line(str(e))}") from e
        finally:
            self._local.active = False
        run_committed(committed)

    def reclaim(self, tables: Sequence[str]) -> bool:
        """``VACUUM`` the tables (outside a transaction, as PostgreSQL requires): dead row
        versions are removed and their space freed for reuse. PostgreSQL's own write-ahead log,
        archives and backups keep what their retention says (docs/spec/memory-ownership.md)."""
        names = [t for t in tables if _TABLE_NAME.match(t)]
        if not names:
            return True
        try:
            with self._pool.connection() as conn:
                conn.execute(f"VACUUM {', '.join(names)}")  # autocommit: no transaction open
        except psycopg.Error as e:
            raise StoreError(
                scrub(f"postgresql: vacuum failed: {_one_line(str(e))}", self._secrets)
            ) from e
        return True

    def transaction(self) -> AbstractContextManager[PostgresTx]:
        return self._begin("BEGIN")

    def read(self) -> AbstractContextManager[PostgresTx]:
        return self._begin("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")

    @contextmanager
    def _locked(self) -> Iterator[PostgresTx]:
        with self.transaction() as tx:
            advisory_lock(tx, MIGRATION_LOCK)
            yield tx

    def migrate(self, *components: Component) -> list[tuple[str, int, str]]:
        return _migrate.migrate(self._locked, POSTGRES_DIALECT, components, self._schema)

    def require(self, *components: Component, tx: Tx | None = None) -> None:
        _migrate.require(self._schema, self.read, self.url, components, tx)

    def forget_schema(self) -> None:
        self._schema.forget()

    def schema_versions(self) -> dict[str, int]:
        with self.read() as tx:
            return _migrate.versions_in(tx)

    def subscribe(
        self, subscriber: Callable[[Change], None], bound: float = DEFAULT_BOUND_SECONDS
    ) -> Subscription:
        return self._feed.subscribe(subscriber, bound)

    def _notifications(self) -> _Listener:
        return _Listener(self._url, self._secrets)

    def pool_stats(self) -> PoolStats:
        """psycopg_pool's own counters (``ConnectionPool.get_stats``)."""
        stats = self._pool.get_stats()
        size, available = stats.get("pool_size", 0), stats.get("pool_available", 0)
        return PoolStats(
            in_use=max(0, size - available),
            idle=available,
            waiting=stats.get("requests_waiting", 0),
            max_size=stats.get("pool_max", 0),
        )

    def close(self) -> None:
        self._feed.close()
        self._pool.close()


class _Listener:
    """A dedicated autocommit connection LISTENing on the schema's change channel."""

    def __init__(self, url: str, secrets: tuple[str, ...]) -> None:
        self._secrets = secrets
        try:
            self._conn = psycopg.connect(
                url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_SECONDS
            )
            row = self._conn.execute(_changes.CHANNEL_SQL).fetchone()
            if row is None:  # pragma: no cover - the query always returns one row
                raise StoreError("postgresql: no change channel")
            self._conn.execute(f'LISTEN "{row[0]}"')  # "engram_" + md5 hex: a safe identifier
        except psycopg.Error as e:
            raise StoreError(
                scrub(f"postgresql: cannot listen: {_one_line(str(e))}", secrets)
            ) from e

    def wait(self, timeout: float) -> Iterator[str]:
        try:
            for notify in self._conn.notifies(timeout=timeout):
                yield notify.payload
        except psycopg.Error as e:
            raise StoreError(
                scrub(f"postgresql: listener: {_one_line(str(e))}", self._secrets)
            ) from e

    def close(self) -> None:
        try:
            self._conn.close()
        except psycopg.Error as e:
            raise StoreError(scrub(f"postgresql: {_one_line(str(e))}", self._secrets)) from e


__all__ = ["PostgresStore", "PostgresTx"]
