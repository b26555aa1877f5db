"""Forward-only, per-component schema migrations (docs/spec/storage.md "Migrations").

Every component (``keys``, ``idempotency``, ``context`` ...) has one row in ``engram_schema``
holding its applied version, and every applied step is recorded in ``engram_schema_history``.
Each migration runs in its own transaction together with its version bump, under a lock that
serialises concurrent ``migrate()`` calls from several processes (SQLite: ``BEGIN IMMEDIATE``
takes the database write lock; PostgreSQL: ``pg_advisory_xact_lock`` on a key derived from the
schema). Inside the lock the version is read again, so a step another process has just applied
is skipped rather than applied twice. A database whose version is newer than the code knows is
refused: running old code against a newer schema could corrupt it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime
from threading import Lock

from engram.core.clock import format_instant_precise
from engram.errors import StoreError
from engram.store._base import Component, Dialect, Store, Tx
from engram.store._changes import SCHEMA_TOPIC

SCHEMA_TABLE = "engram_schema"
HISTORY_TABLE = "engram_schema_history"

LockedTransaction = Callable[[], AbstractContextManager[Tx]]


@dataclass(frozen=True)
class AppliedMigration:
    """One row of the migration history."""

    component: str
    version: int
    name: str
    applied_at: str


def bootstrap_statements(dialect: Dialect) -> list[str]:
    """DDL for the two bookkeeping tables (idempotent)."""
    return [
        f"CREATE TABLE IF NOT EXISTS {SCHEMA_TABLE} ("
        " component TEXT PRIMARY KEY,"
        " version INTEGER NOT NULL,"
        " updated_at TEXT NOT NULL)",
        f"CREATE TABLE IF NOT EXISTS {HISTORY_TABLE} ("
        f" id {dialect.serial_pk},"
        " component TEXT NOT NULL,"
        " version INTEGER NOT NULL,"
        " name TEXT NOT NULL,"
        " applied_at TEXT NOT NULL,"
        " UNIQUE (component, version))",
    ]


def check_components(components: Sequence[Component]) -> None:
    """Refuse malformed components before touching the database (a programming error)."""
    seen: set[str] = set()
    for component in components:
        if not component.name or component.name != component.name.strip():
            raise StoreError(f"component name {component.name!r} is empty or padded")
        if component.name in seen:
            raise StoreError(f"component {component.name!r} given twice to migrate()")
        seen.add(component.name)
        versions = [m.version for m in component.migrations]
        if versions != list(range(1, len(versions) + 1)):
            raise StoreError(
                f"component {component.name!r}: migration versions must be 1, 2, 3 ... in order "
                f"with no gaps, got {versions}"
            )


def _now() -> str:
    # Migration history is bookkeeping written by the store itself, not domain data; the
    # wall clock is the honest source for "when was this step applied".
    return format_instant_precise(datetime.now(UTC))


def _version(tx: Tx, component: str) -> int:
    value = tx.scalar("SELECT version FROM engram_schema WHERE component = ?", (component,))
    return int(value) if value is not None else 0


def is_migrated(tx: Tx, component: Component) -> bool:
    """Whether ``component``'s tables exist (at any version): a reader of an optional table
    asks this instead of failing on a store that never needed it."""
    return _version(tx, component.name) > 0


def _refuse_newer(component: Component, current: int) -> None:
    known = len(component.migrations)
    if current > known:
        raise StoreError(
            f"the database has schema version {current} for component {component.name!r}, but "
            f"this engram knows only up to version {known}: upgrade engram before using it"
        )


class SchemaMemo:
    """The components one store object knows to be current: name -> the version checked.

    Filled by :func:`migrate` and :func:`require`, so a second ``migrate()`` or ``require()`` of
    a current component costs a dict lookup instead of a transaction (the write lock on SQLite,
    an advisory lock shared by every PostgreSQL worker). One version per name: migrating a
    component further replaces what was known of it. :meth:`forget` empties it, so the next
    check reads the database again (after another process migrated, for instance).
    """

    __slots__ = ("_current", "_lock")

    def __init__(self) -> None:
        self._current: dict[str, int] = {}
        self._lock = Lock()

    def missing(self, components: Sequence[Component]) -> list[Component]:
        current = self._current
        return [c for c in components if current.get(c.name) != len(c.migrations)]

    def remember(self, components: Sequence[Component]) -> None:
        with self._lock:
            known = dict(self._current)
            known.update((c.name, len(c.migrations)) for c in components)
            self._current = known  # replaced whole: readers never see a dict being changed

    def forget(self) -> None:
        with self._lock:
            self._current = {}


def require(
    memo: SchemaMemo,
    read: Callable[[], AbstractContextManager[Tx]],
    url: str,
    components: Sequence[Component],
    tx: Tx | None = None,
) -> None:
    """Refuse to run on a schema that is behind (or ahead of) ``components``.

    One read of the applied versions the first time per store object, nothing afterwards;
    through ``tx`` when the caller holds one (a second transaction on the thread is refused).
    """
    missing = memo.missing(components)
    if not missing:
        return
    if tx is not None:
        applied = versions_in(tx)
    else:
        with read() as own:
            applied = versions_in(own)
    for component in missing:
        current = applied.get(component.name, 0)
        _refuse_newer(component, current)
        known = len(component.migrations)
        if current < known:
            raise StoreError(
                f"the database {url} has schema version {current} of component "
                f"{component.name!r}, this engram needs version {known}: run "
                f"`engram db migrate --database {url}`"
            )
    memo.remember(missing)


def migrate(
    locked: LockedTransaction,
    dialect: Dialect,
    components: Sequence[Component],
    memo: SchemaMemo | None = None,
) -> list[tuple[str, int, str]]:
    """Apply pending migrations; return the (component, version, name) steps applied.

    With a ``memo``, components it already holds as current are skipped without a transaction,
    and every component is remembered once migrated.
    """
    check_components(components)
    if memo is not None and components:
        components = memo.missing(components)
        if not components:
            return []
    applied = _migrate(locked, dialect, components)
    if memo is not None:
        memo.remember(components)
    return applied


def _migrate(
    locked: LockedTransaction, dialect: Dialect, components: Sequence[Component]
) -> list[tuple[str, int, str]]:
    applied: list[tuple[str, int, str]] = []
    with locked() as tx:
        for statement in bootstrap_statements(dialect):
            tx.execute(statement)
        pending = False
        for component in components:
            current = _version(tx, component.name)
            _refuse_newer(component, current)
            pending = pending or current < len(component.migrations)
    if not pending:
        return applied
    for component in components:
        for migration in component.migrations:
            with locked() as tx:
                current = _version(tx, component.name)
                _refuse_newer(component, current)
                if current >= migration.version:
                    continue  # applied already, perhaps by a concurrent process just now
                for statement in migration.statements(dialect):
                    tx.execute(statement)
                stamp = _now()
                tx.execute(
                    "INSERT INTO engram_schema (component, version, updated_at) VALUES (?, ?, ?)"
                    " ON CONFLICT (component) DO UPDATE SET version = excluded.version,"
                    " updated_at = excluded.updated_at",
                    (component.name, migration.version, stamp),
                )
                tx.execute(
                    "INSERT INTO engram_schema_history (component, version, name, applied_at)"
                    " VALUES (?, ?, ?, ?)",
                    (component.name, migration.version, migration.name, stamp),
                )
                if _table_exists(tx, "engram_change_counter"):
                    # Other processes forget what they knew of the schema and check it again.
                    tx.record_change(SCHEMA_TOPIC, component.name)
            applied.append((component.name, migration.version, migration.name))
    return applied


def _table_exists(tx: Tx, name: str) -> bool:
    if tx.dialect.is_sqlite:
        return bool(
            tx.scalar("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,))
        )
    return tx.scalar("SELECT to_regclass(?)", (name,)) is not None


def versions_in(tx: Tx) -> dict[str, int]:
    """Every component's applied version; empty when the bookkeeping tables do not exist."""
    return read_versions(tx) if _table_exists(tx, SCHEMA_TABLE) else {}


def read_versions(tx: Tx) -> dict[str, int]:
    """Every component's applied version (the tables are known to exist)."""
    rows = tx.execute("SELECT component, version FROM engram_schema ORDER BY component")
    return {str(row["component"]): int(row["version"]) for row in rows}


def applied_migrations(store: Store) -> list[AppliedMigration]:
    """The migration history of ``store``, oldest first (empty for a fresh database)."""
    if not store.schema_versions():
        return []
    with store.read() as tx:
        return read_history(tx)


def read_history(tx: Tx) -> list[AppliedMigration]:
    rows = tx.execute(
        "SELECT component, version, name, applied_at FROM engram_schema_history ORDER BY id"
    )
    return [
        AppliedMigration(
            component=str(r["component"]),
            version=int(r["version"]),
            name=str(r["name"]),
            applied_at=str(r["applied_at"]),
        )
        for r in rows
    ]


__all__ = [
    "HISTORY_TABLE",
    "SCHEMA_TABLE",
    "AppliedMigration",
    "LockedTransaction",
    "SchemaMemo",
    "applied_migrations",
    "bootstrap_statements",
    "check_components",
    "migrate",
    "read_history",
    "read_versions",
    "require",
    "versions_in",
]
