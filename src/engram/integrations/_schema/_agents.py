"""The Agents SDK session's table (engram.integrations.agents; docs/integrations.md): one row per
conversation item, in order per session id."""

from __future__ import annotations

from collections.abc import Sequence

from engram.store import Component, Dialect, Migration


def _v1(d: Dialect) -> Sequence[str]:
    return [
        f"""CREATE TABLE agents_session_items (
            n {d.serial_pk},
            session_id TEXT NOT NULL,
            item TEXT NOT NULL,
            created_at TEXT NOT NULL
        )""",
        "CREATE INDEX agents_session_items_session ON agents_session_items (session_id, n)",
    ]


AGENTS_COMPONENT = Component(
    name="openai-agents-sessions", migrations=[Migration(1, "Agents SDK session items", _v1)]
)


# Starts the stored key of a subject's session: "\x1f<subject>\x1f<session id>"; an unscoped
# session id may not start with it (docs/integrations.md "Whose memory").
SUBJECT_MARK = "\x1f"


__all__ = ["AGENTS_COMPONENT", "SUBJECT_MARK"]
