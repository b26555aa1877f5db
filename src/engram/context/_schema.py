"""The ``context`` store component: tables of the Engram context domain.

Instants are TEXT in ``format_instant_precise`` form so ``ORDER BY`` and ``>`` compare by time on
every backend (see ``engram.store._base``). ``context_subjects.state_version`` grows on every
change that can alter an export; the provider keys its signed-export cache on it.
"""

from __future__ import annotations

from collections.abc import Sequence

from engram.store import Component, Dialect, Migration, Store
from engram.store.internals import CHANGES_COMPONENT


def _v1(d: Dialect) -> Sequence[str]:
    return [
        f"""CREATE TABLE context_subjects (
            id TEXT PRIMARY KEY,
            display_name TEXT NOT NULL,
            timezone TEXT NOT NULL,
            created_at TEXT NOT NULL,
            last_updated TEXT NOT NULL,
            state_version {d.bigint} NOT NULL,
            erased_at TEXT
        )""",
        f"""CREATE TABLE context_beliefs (
            id TEXT PRIMARY KEY,
            subject_id TEXT NOT NULL,
            category TEXT NOT NULL,
            statement TEXT NOT NULL,
            confidence {d.real} NOT NULL,
            source TEXT NOT NULL,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            version INTEGER NOT NULL,
            deleted_at TEXT
        )""",
        "CREATE INDEX context_beliefs_by_subject ON context_beliefs (subject_id, updated_at)",
        """CREATE TABLE context_corrections (
            id TEXT PRIMARY KEY,
            subject_id TEXT NOT NULL,
            belief_id TEXT NOT NULL,
            new_value TEXT NOT NULL,
            runtime_id TEXT NOT NULL,
            reason TEXT NOT NULL,
            proposed_at TEXT NOT NULL,
            received_at TEXT NOT NULL,
            status TEXT NOT NULL,
            resolved_at TEXT,
            applied_belief_id TEXT
        )""",
        "CREATE INDEX context_corrections_by_subject"
        " ON context_corrections (subject_id, received_at)",
        f"""CREATE TABLE context_evolution (
            seq {d.serial_pk},
            subject_id TEXT NOT NULL,
            belief_id TEXT NOT NULL,
            version INTEGER NOT NULL,
            kind TEXT NOT NULL,
            previous TEXT,
            value TEXT,
            at TEXT NOT NULL,
            correction_id TEXT,
            runtime_id TEXT
        )""",
        "CREATE INDEX context_evolution_by_belief ON context_evolution (subject_id, belief_id)",
        """CREATE TABLE context_tokens (
            token_hash TEXT PRIMARY KEY,
            token_id TEXT NOT NULL UNIQUE,
            subject_id TEXT NOT NULL,
            permissions TEXT NOT NULL,
            created_at TEXT NOT NULL,
            expires_at TEXT NOT NULL,
            revoked_at TEXT,
            label TEXT NOT NULL
        )""",
    ]


CONTEXT_COMPONENT = Component(
    name="context",
    migrations=[Migration(1, "subjects, beliefs, corrections, evolution, tokens", _v1)],
)


def ensure_schema(store: Store) -> None:
    """Create or upgrade the context tables: for composition roots (start-up, the CLI, tests).

    Domain calls never migrate; they :func:`~engram.context.require_schema` and refuse a schema
    that is behind. Defined here, beside the tables, so that every CLI command's store opening
    imports only this module, not the context domain (issue 16, cold CLI start).
    """
    store.migrate(CHANGES_COMPONENT, CONTEXT_COMPONENT)


__all__ = ["CONTEXT_COMPONENT", "ensure_schema"]
