"""The store interface: one small SQL seam that every backend implements.

Domain packages (``engram.context``, ``engram.memory``, ...) own their tables: each ships its
schema as a :class:`Component` (a name plus ordered :class:`Migration` steps) and its queries in
a private ``_repo`` module, written once in the portable SQL subset below and run unchanged on
every backend. The store owns connections, transactions, dialect differences and migrations.

Portable SQL subset (checked by the contract suite on every backend):

- ``?`` positional placeholders (the PostgreSQL backend rewrites them to ``%s``); a ``?`` or
  ``%`` inside a quoted literal, a quoted identifier or a comment is text and is left alone,
  but passing values as parameters is always preferred.
- ``INSERT ... ON CONFLICT (...) DO NOTHING | DO UPDATE SET col = excluded.col``, ``RETURNING``.
- Types in DDL come from :class:`Dialect` (``dialect.blob``, ``dialect.bigint``, ...) because
  SQLite and PostgreSQL spell them differently; migrations receive the dialect.
- Instants are stored as TEXT in ``format_instant_precise`` form so that ordering by the
  column orders by time on every backend (an aware ``datetime`` parameter is converted to that
  form); JSON is stored as TEXT.
- Booleans are stored as INTEGER 0/1 (a ``bool`` parameter is converted).
- One transaction per thread at a time: opening a transaction inside another on the same
  thread raises StoreError (pass the ``Tx`` down instead).
  ``engram.store.internals.advisory_lock(tx, name)`` serialises read-modify-write steps that no
  unique constraint can guard.

Backends: ``memory`` (SQLite in memory, one connection, for tests and demos), ``sqlite``
(the embedded default, WAL), ``postgresql`` (psycopg 3 with a pool).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:
    from engram.store._changes import Change, Subscription

Row = dict[str, Any]
Params = Sequence[Any]
BackendName = Literal["memory", "sqlite", "postgresql"]


@dataclass(frozen=True)
class Dialect:
    """Spellings that differ between SQLite and PostgreSQL."""

    name: BackendName
    blob: str  # BLOB | BYTEA
    bigint: str  # INTEGER | BIGINT
    real: str  # REAL | DOUBLE PRECISION
    # INTEGER PRIMARY KEY AUTOINCREMENT | BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY
    serial_pk: str

    @property
    def is_sqlite(self) -> bool:
        return self.name in ("memory", "sqlite")


SQLITE_DIALECT = Dialect(
    name="sqlite",
    blob="BLOB",
    bigint="INTEGER",
    real="REAL",
    serial_pk="INTEGER PRIMARY KEY AUTOINCREMENT",
)
MEMORY_DIALECT = Dialect(
    name="memory",
    blob="BLOB",
    bigint="INTEGER",
    real="REAL",
    serial_pk="INTEGER PRIMARY KEY AUTOINCREMENT",
)
POSTGRES_DIALECT = Dialect(
    name="postgresql",
    blob="BYTEA",
    bigint="BIGINT",
    real="DOUBLE PRECISION",
    serial_pk="BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
)


class Tx(Protocol):
    """One open transaction. Rows come back as plain dicts keyed by column name."""

    @property
    def dialect(self) -> Dialect: ...

    def execute(self, sql: str, params: Params = ()) -> list[Row]:
        """Run one statement; return its rows (empty for statements without a result)."""
        ...

    def execute_many(self, sql: str, rows: Sequence[Params]) -> None:
        """Run one statement once per parameter row, in this transaction."""
        ...

    def one(self, sql: str, params: Params = ()) -> Row | None:
        """The first row, or None."""
        ...

    def scalar(self, sql: str, params: Params = ()) -> Any:
        """The first column of the first row, or None."""
        ...

    def record_change(self, topic: str, key: str) -> None:
        """Record in this transaction that ``topic``/``key`` changed (the change feed:
        docs/spec/storage.md "Change feed"): other processes learn of it within their bound,
        this store object's subscribers right after the commit. Needs the ``changes``
        component."""
        ...

    def after_commit(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` once this transaction has committed (never if it rolls back)."""
        ...


@dataclass(frozen=True)
class Migration:
    """One forward-only schema step. ``statements`` gets the dialect and returns DDL/DML."""

    version: int
    name: str
    statements: Callable[[Dialect], Sequence[str]]


@dataclass(frozen=True)
class Component:
    """A named, independently versioned set of tables (``keys``, ``context``, ``memory``...)."""

    name: str
    migrations: Sequence[Migration]


class Store(Protocol):
    """A database handle shared by the domain packages."""

    @property
    def dialect(self) -> Dialect: ...

    @property
    def url(self) -> str:
        """The database URL with any password removed."""
        ...

    def transaction(self) -> AbstractContextManager[Tx]:
        """A read-write transaction: committed when the block exits, rolled back on exception."""
        ...

    def read(self) -> AbstractContextManager[Tx]:
        """A read-only transaction with a consistent snapshot."""
        ...

    def migrate(self, *components: Component) -> list[tuple[str, int, str]]:
        """Apply pending migrations of the components; return (component, version, name) applied.

        Idempotent and safe to call concurrently from several processes (a lock serialises it).
        For composition roots only (start-up, ``engram db migrate``, the CLI's store openers);
        a component this store object already migrated or checked costs no transaction.
        """
        ...

    def require(self, *components: Component, tx: Tx | None = None) -> None:
        """Refuse (StoreError naming ``engram db migrate``) unless every component's schema is
        exactly the version the code knows. Reads the versions once per store object (through
        ``tx`` when the caller already holds a transaction)."""
        ...

    def subscribe(self, subscriber: Callable[[Change], None], bound: float = 1.0) -> Subscription:
        """Deliver every committed change (:class:`engram.store.internals.Change`) to
        ``subscriber``: this store object's own at once, other processes' within ``bound``
        seconds. Returns an :class:`engram.store.internals.Subscription` whose ``fresh()`` says
        whether memory may be trusted now."""
        ...

    def forget_schema(self) -> None:
        """Drop what :meth:`migrate` and :meth:`require` remember, so the next check reads the
        database again (another process may have migrated it)."""
        ...

    def schema_versions(self) -> dict[str, int]:
        """The applied version of every component."""
        ...

    def reclaim(self, tables: Sequence[str]) -> bool:
        """Make rows deleted from ``tables`` unrecoverable from the database's files, for
        erasure (docs/spec/memory-ownership.md "Erase"): SQLite zeroes freed content as it
        deletes (``secure_delete``) and here truncates its write-ahead log; PostgreSQL
        vacuums the tables. False when another connection kept the log from being emptied
        (its old pages are then overwritten by the next checkpoint)."""
        ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class PoolStats:
    """How a store's connections are used now (``GET /metrics``): open ones taken by a
    transaction, open ones idle, callers waiting for one, and the most it may open (0: no
    bound, as for SQLite, which opens one per concurrently active thread)."""

    in_use: int
    idle: int
    waiting: int
    max_size: int


@runtime_checkable
class PoolReporting(Protocol):
    """A store that can say how its connections are used (every backend of this package)."""

    def pool_stats(self) -> PoolStats: ...


def writing(store: Store, tx: Tx | None = None) -> AbstractContextManager[Tx]:
    """``tx`` itself when the caller holds a transaction (it commits), else a new one of
    ``store``: how a domain write joins its caller's transaction (an idempotent POST commits
    its claim, the write and the stored answer together)."""
    return nullcontext(tx) if tx is not None else store.transaction()


# Values per ``IN (...)`` query: well under SQLite's (32,766) and PostgreSQL's (65,535)
# parameter limits, and short enough that a long list never builds one huge statement.
IN_CHUNK = 500


def in_chunks(values: Sequence[Any]) -> Iterator[tuple[str, list[Any]]]:
    """``values`` ``IN_CHUNK`` at a time, each chunk with its ``?, ?, ...`` placeholders."""
    for start in range(0, len(values), IN_CHUNK):
        chunk = list(values[start : start + IN_CHUNK])
        yield ", ".join("?" for _ in chunk), chunk


def rows_where_in(
    tx: Tx, select: str, column: str, values: Sequence[Any], order_by: str = ""
) -> Iterator[Row]:
    """The rows of ``{select} WHERE {column} IN (values)``, asked a chunk at a time
    (:func:`in_chunks`); ``order_by`` orders each chunk's rows, not the whole answer."""
    tail = f" ORDER BY {order_by}" if order_by else ""
    for marks, chunk in in_chunks(values):
        yield from tx.execute(f"{select} WHERE {column} IN ({marks}){tail}", chunk)


__all__ = [
    "MEMORY_DIALECT",
    "POSTGRES_DIALECT",
    "SQLITE_DIALECT",
    "BackendName",
    "Component",
    "Dialect",
    "Migration",
    "Params",
    "PoolReporting",
    "PoolStats",
    "Row",
    "Store",
    "Tx",
    "in_chunks",
    "rows_where_in",
    "writing",
]
