"""The ``review`` store component: sign-in sessions and one-time links of the review page.

Neither table holds a usable secret: a session cookie and a one-time link code are 256-bit random
values, and only their SHA-256 is stored (``docs/spec/review-page.md``, "Sessions" and "One-time
links"). Instants are TEXT in ``format_instant_precise`` form, like every engram table, so ``<``
compares by time on SQLite and PostgreSQL alike.
"""

from __future__ import annotations

from collections.abc import Sequence

from engram.store import Component, Dialect, Migration


def _v1(_: Dialect) -> Sequence[str]:
    return [
        """CREATE TABLE review_sessions (
            session_hash TEXT PRIMARY KEY,
            subject_id TEXT NOT NULL,
            token_id TEXT,
            method TEXT NOT NULL,
            created_at TEXT NOT NULL,
            last_seen_at TEXT NOT NULL,
            expires_at TEXT NOT NULL
        )""",
        "CREATE INDEX review_sessions_by_expiry ON review_sessions (expires_at)",
        """CREATE TABLE review_links (
            link_hash TEXT PRIMARY KEY,
            subject_id TEXT NOT NULL,
            created_at TEXT NOT NULL,
            expires_at TEXT NOT NULL,
            used_at TEXT
        )""",
        "CREATE INDEX review_links_by_expiry ON review_links (expires_at)",
    ]


REVIEW_COMPONENT = Component(
    name="review",
    migrations=[Migration(1, "review sessions and one-time links", _v1)],
)

__all__ = ["REVIEW_COMPONENT"]
