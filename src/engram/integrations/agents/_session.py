"""``EngramSession``: an OpenAI Agents SDK session (``agents.memory.Session``) on engram's store.

The SDK's session protocol (openai-agents, agents.memory.session): ``session_id``,
``session_settings``, and ``get_items(limit)`` (the latest ``limit`` items, oldest first; None =
``session_settings.limit``, else all), ``add_items``, ``pop_item`` (remove and return the
newest), ``clear_session``. Items are the SDK's input items (JSON objects), kept in order per
session id in one table of engram's store (SQLite or PostgreSQL), so sessions survive restarts
and are shared by every process on the database. With ``memory`` (a memory engine), the user
and assistant messages ``add_items`` receives are also recorded as memories, one per turn, with
their role and time, in the thread ``agents:<session id>`` (engram.memory.record_conversation).
As the SDK's ``SQLiteSession``: ``session_settings`` defaults to ``SessionSettings()`` and a dict
is normalised (an unknown key is a ``TypeError``), an item that is not JSON is a ``TypeError``,
and every call on a closed session is a ``RuntimeError``. docs/integrations.md.
"""

from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING, cast

from agents.memory import SessionSettings
from agents.memory.session_settings import coerce_session_settings, resolve_session_limit

from engram.core.canonical import check_i_json, parse_strict
from engram.core.clock import Clock, SystemClock, format_instant_precise
from engram.core.jsonio import dumps_text
from engram.errors import InputError, InvalidRequest
from engram.integrations._schema import AGENTS_COMPONENT, SUBJECT_MARK
from engram.memory import MemoryEngine, record_conversation, subject_view
from engram.memory.internals import check_subject
from engram.store import Store, Tx, database_url_from_env, open_store
from engram.store.internals import advisory_lock

if TYPE_CHECKING:
    from agents.items import TResponseInputItem


THREAD_PREFIX = "agents:"  # a session's turns are recorded in the thread "agents:<session id>"
_TIME_KEYS = ("timestamp", "created_at", "create_time")  # the times record_conversation reads


class EngramSession:
    """Conversation history for one session id, in engram's store; with ``subject``, that
    subject's session of that id (an app serving many users opens one per user); with
    ``memory``, its turns are also recorded as memories (for ``subject``: in their own ring)."""

    def __init__(
        self,
        session_id: str,
        store: Store,
        *,
        session_settings: SessionSettings | dict[str, object] | None = None,
        clock: Clock | None = None,
        owns_store: bool = False,
        subject: str | None = None,
        memory: MemoryEngine | None = None,
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
        # Typed as the SDK's protocol declares it (an assignable attribute that may be None).
        self.session_settings: SessionSettings | None = (
            SessionSettings()
            if session_settings is None
            else coerce_session_settings(session_settings)
        )
        self._store = store
        self._clock = clock or SystemClock()
        self._owns_store = owns_store
        self._closed = False
        self.memory = subject_view(memory, subject) if memory is not None else None
        store.migrate(AGENTS_COMPONENT)

    @classmethod
    def open(
        cls,
        session_id: str,
        url: str | None = None,
        *,
        session_settings: SessionSettings | dict[str, object] | None = None,
        clock: Clock | None = None,
        subject: str | None = None,
        memory: MemoryEngine | None = None,
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
                memory=memory,
            )
        except BaseException:
            store.close()
            raise

    def close(self) -> None:
        self._closed = True
        if self._owns_store:
            self._store.close()

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("EngramSession is closed")

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
        self._check_open()
        resolved = resolve_session_limit(limit, self.session_settings)
        return await asyncio.to_thread(self._read, resolved)

    def _add(self, items: list[TResponseInputItem]) -> None:
        rows = []
        moment = format_instant_precise(self._clock.now())
        for i, item in enumerate(items):
            try:
                check_i_json(item, f"items[{i}]")  # an SDK TypedDict: checked as JSON here
            except InputError as e:  # the SDK's sessions raise json.dumps's TypeError
                raise TypeError(e.message) from e
            rows.append((self._key, dumps_text(item), moment))
        if self.memory is not None:
            # Recorded first: a failure leaves the history unchanged, and adding the items
            # again records nothing twice (content ids and near-duplicates, docs/integrations.md).
            turns = [_dated(item, moment) for item in items]
            record_conversation(self.memory, turns, thread=THREAD_PREFIX + self.session_id)
        with self._store.transaction() as tx:
            self._lock(tx)
            tx.execute_many(
                "INSERT INTO agents_session_items (session_id, item, created_at) VALUES (?, ?, ?)",
                rows,
            )

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append ``items`` in order, all or none (and record their turns, with ``memory``)."""
        self._check_open()  # before the empty-list return, as the SDK's SQLiteSession does
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
        self._check_open()
        return await asyncio.to_thread(self._pop)

    def _clear(self) -> None:
        with self._store.transaction() as tx:
            self._lock(tx)
            tx.execute("DELETE FROM agents_session_items WHERE session_id = ?", (self._key,))

    async def clear_session(self) -> None:
        """Forget every item of this session (its recorded memories stay: forget or erase them
        with engram's memory lifecycle)."""
        self._check_open()
        await asyncio.to_thread(self._clear)


def _dated(item: object, moment: str) -> object:
    """A message item as recorded: with the time it was added, unless it carries its own."""
    if isinstance(item, dict) and "role" in item and not any(k in item for k in _TIME_KEYS):
        return {**item, "timestamp": moment}
    return item


__all__ = ["AGENTS_COMPONENT", "THREAD_PREFIX", "EngramSession"]
