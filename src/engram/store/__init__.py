"""engram.store: one SQL seam over SQLite (embedded default), in-memory SQLite and PostgreSQL.

See :mod:`engram.store._base` for the interface and the portable SQL subset, and
docs/spec/storage.md for backends, URLs, migrations and file modes. Key persistence and
idempotency records live in the public submodules :mod:`engram.store.keys` and
:mod:`engram.store.idempotency`.
"""

from engram.store._base import (
    Component,
    Dialect,
    Migration,
    Row,
    Store,
    Tx,
    in_chunks,
    rows_where_in,
)
from engram.store._open import database_url_from_env, open_store

__all__ = [
    "Component",
    "Dialect",
    "Migration",
    "Row",
    "Store",
    "Tx",
    "database_url_from_env",
    "in_chunks",
    "open_store",
    "rows_where_in",
]
