"""``EngramSession``: an OpenAI Agents SDK session (``agents.memory.Session``) on engram's store.

The SDK's session protocol (openai-agents, agents.memory.session): ``session_id``,
``session_settings``, and ``get_items(limit)`` (the latest ``limit`` items, oldest first; None =
``session_settings.limit``, else all), ``add_items``, ``pop_item`` (remove and return the
newest), ``clear_session``. Items are the SDK's input items (JSON objects), kept in order per
session id in one table of engram's store (SQLite or PostgreSQL), so sessions survive restarts
and are shared by every process on the database. docs/integrations.md.
"""

from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING, cast

from agents.memory import SessionSettings
from agents.memory.session_settings import resolve_session_limit

from engram.core.canonical import check_i_json, parse_strict
from engram.core.clock import Clock, SystemClock, format_instant_precise
from engram.core.jsonio import dumps_text
from engram.errors import InvalidRequest
from engram.integrations._schema import AGENTS_COMPONENT, SUBJECT_MARK
from engram.memory import check_subject
from engram.store import (
    Store,
    Tx,
    advisory_lock,
    database_url_from_env,
    open_store,
)

if TYPE_CHECKING:
    from agents.items import TResponseInputItem


class EngramSession:
    """Conversation history for one session id, in engram's store; with ``subject``, that
    subject's session of that id (an app serving many users opens one per user)."""

    def __init__(
        self,
        session_id: str,
        store: Store,
        *,
        session_settings: SessionSettings | None = None,
        clock: Clock | None = None,
        owns_store: bool = False,
        subject: str | None = None,
    ) -> None:
        if not isinstance(session_id, str) or not session_id:
            raise InvalidRequest("session_id: expected a non-empty string")
        if session_id.startswith(SUBJECT_MARK):
            raise InvalidRequest("session_id: must not start with U+001F (reserved)")
        self.session_id = session_id
        self.subject = subject
        # Whose session: one subject's session ids never meet another's, nor the unscoped
        # ones (a stored key with a subject starts with a character no unscoped key needs).
        self._key = (
            session_id
            if subject is None
            else f"{SUBJECT_MARK}{check_subject(subject)}{SUBJECT_MARK}{session_id}"
        )
        self.session_settings = session_settings
        self._store = store
        self._clock = clock or SystemClock()
        self._owns_store = owns_store
        store.migrate(AGENTS_COMPONENT)

    @classmethod
    def open(
        cls,
        session_id: str,
        url: str | None = None,
        *,
        session_settings: SessionSettings | None = None,
        clock: Clock | None = None,
        subject: str | None = None,
    ) -> EngramSession:
        """A session on the database at ``url`` (default: engram's, from the environment)."""
        store = open_store(url or database_url_from_env(os.environ))
        try:
            return cls(
                session_id,
                store,
                subject=subject,
                session_settings=session_settings,
                clock=clock,
                owns_store=True,
            )
        except BaseException:
            store.close()
            raise

    def close(self) -> None:
        if self._owns_store:
            self._store.close()

    def _lock(self, tx: Tx) -> None:
        advisory_lock(tx, f"agents-session:{self._key}")

    def _read(self, limit: int | None) -> list[TResponseInputItem]:
        where = "FROM agents_session_items WHERE session_id = ?"
        with self._store.read() as tx:
            if limit is None or limit < 0:  # a negative limit is no limit, as in SQLiteSession
                rows = tx.execute(f"SELECT item {where} ORDER BY n", (self._key,))
            else:
                rows = tx.execute(
                    f"SELECT item {where} ORDER BY n DESC LIMIT ?", (self._key, limit)
                )
                rows.reverse()
        return [cast("TResponseInputItem", parse_strict(r["item"])) for r in rows]

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The latest ``limit`` items in the order they were added (all when None)."""
        resolved = resolve_session_limit(limit, self.session_settings)
        return await asyncio.to_thread(self._read, resolved)

    def _add(self, items: list[TResponseInputItem]) -> None:
        rows = []
        moment = format_instant_precise(self._clock.now())
        for i, item in enumerate(items):
            check_i_json(item, f"items[{i}]")  # an SDK TypedDict: checked as JSON here
            rows.append((self._key, dumps_text(item), moment))
        with self._store.transaction() as tx:
            self._lock(tx)
            tx.execute_many(
                "INSERT INTO agents_session_items (session_id, item, created_at) VALUES (?, ?, ?)",
                rows,
            )

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append ``items`` in order, all or none."""
        if items:
            await asyncio.to_thread(self._add, list(items))

    def _pop(self) -> TResponseInputItem | None:
        with self._store.transaction() as tx:
            self._lock(tx)
            row = tx.one(
                "SELECT n, item FROM agents_session_items WHERE session_id = ? "
                "ORDER BY n DESC LIMIT 1",
                (self._key,),
            )
            if row is None:
                return None
            tx.execute("DELETE FROM agents_session_items WHERE n = ?", (row["n"],))
        return cast("TResponseInputItem", parse_strict(row["item"]))

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove and return the newest item (None when the session is empty)."""
        return await asyncio.to_thread(self._pop)

    def _clear(self) -> None:
        with self._store.transaction() as tx:
            self._lock(tx)
            tx.execute("DELETE FROM agents_session_items WHERE session_id = ?", (self._key,))

    async def clear_session(self) -> None:
        """Forget every item of this session."""
        await asyncio.to_thread(self._clear)


__all__ = ["AGENTS_COMPONENT", "EngramSession"]
