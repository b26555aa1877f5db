"""engram.store's names for other engram packages, benchmarks and tests: not public API.

The change feed, the flush marker, advisory locks, the pool's reporting hook, the write-transaction
helper, the migration listing and the home folder, for the domain packages, the adapters and the
CLI.

They import them from here rather than from the private modules, so those modules can be rearranged
with one place to keep working. Nothing here is a stable API: names may change or go in any
release. Applications use ``engram.store`` (its ``__all__``).
"""

from typing import TYPE_CHECKING

from engram.core.lazy import lazy_attributes as _lazy_attributes

if TYPE_CHECKING:
    from engram.store._base import PoolReporting, writing
    from engram.store._changes import COMPONENT as CHANGES_COMPONENT
    from engram.store._changes import FLUSH, Change, ChangeFeed, Subscription
    from engram.store._migrate import applied_migrations, is_migrated
    from engram.store._open import engram_home
    from engram.store._sql import advisory_lock, redact_url, to_pyformat

# Bound on first use (engram.core.lazy), as the package's own names are: importing this module
# loads none of the modules it names.
_LAZY = {
    "PoolReporting": "engram.store._base",
    "writing": "engram.store._base",
    "CHANGES_COMPONENT": "engram.store._changes:COMPONENT",
    "Change": "engram.store._changes",
    "ChangeFeed": "engram.store._changes",
    "FLUSH": "engram.store._changes",
    "Subscription": "engram.store._changes",
    "applied_migrations": "engram.store._migrate",
    "is_migrated": "engram.store._migrate",
    "engram_home": "engram.store._open",
    "advisory_lock": "engram.store._sql",
    "redact_url": "engram.store._sql",
    "to_pyformat": "engram.store._sql",
}

__all__ = [
    "CHANGES_COMPONENT",
    "FLUSH",
    "Change",
    "ChangeFeed",
    "PoolReporting",
    "Subscription",
    "advisory_lock",
    "applied_migrations",
    "engram_home",
    "is_migrated",
    "redact_url",
    "to_pyformat",
    "writing",
]

if not TYPE_CHECKING:  # type checkers read the imports above, so a misspelt name stays an error
    __getattr__ = _lazy_attributes(__name__, _LAZY, globals())
