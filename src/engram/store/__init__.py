"""engram.store: one SQL seam over SQLite (embedded default), in-memory SQLite and PostgreSQL.

See :mod:`engram.store._base` for the interface and the portable SQL subset, and
docs/spec/storage.md for backends, URLs, migrations and file modes. Key persistence and
idempotency records live in the public submodules :mod:`engram.store.keys` and
:mod:`engram.store.idempotency`.
"""

from engram.store._base import (
    MEMORY_DIALECT,
    POSTGRES_DIALECT,
    SQLITE_DIALECT,
    BackendName,
    Component,
    Dialect,
    Migration,
    Params,
    PoolReporting,
    PoolStats,
    Row,
    Store,
    Tx,
    writing,
)
from engram.store._changes import COMPONENT as CHANGES_COMPONENT
from engram.store._changes import (
    DEFAULT_BOUND_SECONDS,
    FLUSH,
    Change,
    ChangeFeed,
    Subscription,
)
from engram.store._migrate import AppliedMigration, applied_migrations, is_migrated
from engram.store._open import database_url_from_env, engram_home, open_store
from engram.store._sql import advisory_lock, redact_url, to_pyformat

__all__ = [
    "CHANGES_COMPONENT",
    "DEFAULT_BOUND_SECONDS",
    "FLUSH",
    "MEMORY_DIALECT",
    "POSTGRES_DIALECT",
    "SQLITE_DIALECT",
    "AppliedMigration",
    "BackendName",
    "Change",
    "ChangeFeed",
    "Component",
    "Dialect",
    "Migration",
    "Params",
    "PoolReporting",
    "PoolStats",
    "Row",
    "Store",
    "Subscription",
    "Tx",
    "advisory_lock",
    "applied_migrations",
    "database_url_from_env",
    "engram_home",
    "is_migrated",
    "open_store",
    "redact_url",
    "to_pyformat",
    "writing",
]
