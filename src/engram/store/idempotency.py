"""Idempotency records: a retried POST gets the first answer, another body is refused.

docs/spec/storage.md "Idempotency records". A record is keyed by ``(scope, key)``: the scope
separates callers (a subject, a token, a route) so one caller's ``Idempotency-Key`` never
collides with another's.

:meth:`IdempotencyStore.run_once` is the protocol the provider uses: the claim, the request's
own writes (``handle`` gets the transaction) and the stored answer commit in **one**
transaction, so a process that dies at any point leaves either nothing (the retry runs) or
everything (the retry gets the stored answer). A refusal (4xx) rolls the handler's writes back
to a savepoint and is stored as the answer; a failure (5xx, anything else) rolls everything
back. Of two concurrent first requests the second waits on the first's claim row and then
replays its answer. The older three-step protocol remains for callers that cannot hold one
transaction across their work::

    stored = records.begin(scope, key, digest_hex(body), now)
    if stored is not None:
        return stored.status, stored.body        # a retry: replay the first answer
    try:
        status, body = handle(request)
    except BaseException:
        records.abandon(scope, key)               # nothing was done; let a retry run
        raise
    records.complete(scope, key, status, body)

``begin`` claims the key with ``INSERT ... ON CONFLICT DO NOTHING`` on the primary key, so of
two concurrent requests exactly one proceeds; the other sees the claim and gets the stored
answer, :class:`~engram.errors.IdempotencyConflict` when its body differs, or
:class:`~engram.errors.ConflictError` while the first is still in flight. Records live for the
retention period (default 24 h) from their creation: after it a key may be reused, and
:meth:`IdempotencyStore.purge` deletes them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from engram.core.canonical import canonicalize
from engram.core.clock import format_instant_precise, parse_instant
from engram.errors import (
    ConflictError,
    EngramError,
    IdempotencyConflict,
    InvalidRequest,
    ResourceNotFound,
)
from engram.store._base import Component, Dialect, Migration, Row, Store, Tx
from engram.store._migrate import is_migrated

DEFAULT_RETENTION = timedelta(hours=24)
MAX_KEY_LENGTH = 255


def _schema_v1(dialect: Dialect) -> list[str]:
    return [
        "CREATE TABLE engram_idempotency ("
        " scope TEXT NOT NULL,"
        " idem_key TEXT NOT NULL,"
        " request_digest TEXT NOT NULL,"
        " created_at TEXT NOT NULL,"
        " status INTEGER,"
        f" body {dialect.blob},"
        " PRIMARY KEY (scope, idem_key))",
        "CREATE INDEX engram_idempotency_created ON engram_idempotency (created_at)",
    ]


COMPONENT = Component("idempotency", [Migration(1, "idempotency records", _schema_v1)])


@dataclass(frozen=True)
class StoredResponse:
    """The first answer given for an idempotency key."""

    status: int
    body: bytes
    created_at: datetime


@dataclass(frozen=True)
class Outcome:
    """What :meth:`IdempotencyStore.run_once` answered: a fresh answer or the stored one."""

    status: int
    body: bytes
    replayed: bool


_SAVEPOINT = "engram_idempotent"


def _check(scope: str, key: str) -> None:
    if not scope:
        raise InvalidRequest("an idempotency scope must not be empty")
    if not key or len(key) > MAX_KEY_LENGTH or not key.isprintable():
        raise InvalidRequest(f"Idempotency-Key must be 1 to {MAX_KEY_LENGTH} printable characters")


class IdempotencyStore:
    """Idempotency records of one engram database (component ``idempotency``)."""

    def __init__(
        self,
        store: Store,
        *,
        retention: timedelta = DEFAULT_RETENTION,
        in_flight_limit: timedelta | None = None,
    ) -> None:
        """``in_flight_limit``: a claim of the three-step protocol still unanswered after this
        long was left by a process that died mid-request; the next request with its key and
        body takes it over instead of being told, until the retention ends, that it is still
        being processed (None: never). :meth:`run_once` leaves no such claim."""
        if retention <= timedelta(0):
            raise InvalidRequest("idempotency retention must be positive")
        self._store = store
        self._retention = retention
        self._in_flight_limit = in_flight_limit
        store.migrate(COMPONENT)

    @property
    def retention(self) -> timedelta:
        return self._retention

    def begin(
        self, scope: str, key: str, request_digest: str, now: datetime
    ) -> StoredResponse | None:
        """Claim ``key`` for this request (None: go ahead) or return the first answer.

        Raises IdempotencyConflict when the key was used with another request digest, and
        ConflictError while the first request with this key is still being handled.
        """
        with self._store.transaction() as tx:
            return self.claim(tx, scope, key, request_digest, now)

    def claim(
        self, tx: Tx, scope: str, key: str, request_digest: str, now: datetime
    ) -> StoredResponse | None:
        """:meth:`begin` inside the caller's transaction ``tx``."""
        _check(scope, key)
        if not request_digest:
            raise InvalidRequest("a request digest must not be empty")
        expired_before = format_instant_precise(now - self._retention)
        # An expired record no longer binds the key: the caller may reuse it.
        tx.execute(
            "DELETE FROM engram_idempotency WHERE scope = ? AND idem_key = ? AND created_at < ?",
            (scope, key, expired_before),
        )
        # On PostgreSQL this waits while another transaction holds an uncommitted claim of the
        # same key, then finds its committed row (READ COMMITTED reads afresh per statement).
        claimed = tx.execute(
            "INSERT INTO engram_idempotency (scope, idem_key, request_digest, created_at)"
            " VALUES (?, ?, ?, ?) ON CONFLICT (scope, idem_key) DO NOTHING RETURNING scope",
            (scope, key, request_digest, format_instant_precise(now)),
        )
        if claimed:
            return None
        row = tx.one(
            "SELECT request_digest, created_at, status, body FROM engram_idempotency"
            " WHERE scope = ? AND idem_key = ?",
            (scope, key),
        )
        if row is None:  # pragma: no cover - the conflicting row cannot vanish inside the lock
            raise ConflictError("idempotency record changed concurrently; retry the request")
        if row["request_digest"] != request_digest:
            raise IdempotencyConflict(
                "this Idempotency-Key was already used with a different request body"
            )
        if row["status"] is None:
            if self._abandoned(tx, scope, key, str(row["created_at"]), now):
                return None
            raise ConflictError(
                "a request with this Idempotency-Key is still being processed; retry later"
            )
        return StoredResponse(
            status=int(row["status"]),
            body=bytes(row["body"] or b""),
            created_at=parse_instant(str(row["created_at"])),
        )

    def _abandoned(self, tx: Tx, scope: str, key: str, claimed_at: str, now: datetime) -> bool:
        """Take over an unanswered claim older than the in-flight limit (its request died);
        of two takers only the one whose update finds the old claim proceeds."""
        limit = self._in_flight_limit
        if limit is None or parse_instant(claimed_at) > now - limit:
            return False
        taken = tx.execute(
            "UPDATE engram_idempotency SET created_at = ?"
            " WHERE scope = ? AND idem_key = ? AND status IS NULL AND created_at = ?"
            " RETURNING scope",
            (format_instant_precise(now), scope, key, claimed_at),
        )
        return bool(taken)

    def run_once(
        self,
        scope: str,
        key: str,
        request_digest: str,
        now: datetime,
        handle: Callable[[Tx], tuple[int, bytes]],
    ) -> Outcome:
        """Run ``handle`` at most once per key, its writes, the claim and the answer in one
        transaction (module docstring). A refusal ``handle`` raises (an EngramError below 500)
        is stored, committed and raised again; a retry gets its stored bytes."""
        refused: EngramError | None = None
        with self._store.transaction() as tx:
            stored = self.claim(tx, scope, key, request_digest, now)
            if stored is not None:
                return Outcome(stored.status, stored.body, replayed=True)
            tx.execute(f"SAVEPOINT {_SAVEPOINT}")
            try:
                status, body = handle(tx)
            except EngramError as e:
                if e.http_status >= 500:
                    raise  # the whole transaction rolls back, the claim with it: a retry runs
                # A refused request changes nothing: undo what it did, keep the refusal.
                tx.execute(f"ROLLBACK TO SAVEPOINT {_SAVEPOINT}")
                self.answer(tx, scope, key, e.http_status, canonicalize(e.to_wire()))
                refused = e
            else:
                tx.execute(f"RELEASE SAVEPOINT {_SAVEPOINT}")
                self.answer(tx, scope, key, status, body)
                return Outcome(status, body, replayed=False)
        if refused is None:  # pragma: no cover - every path above returned or raised
            raise ConflictError("idempotent request ended without an answer")
        raise refused

    def answer(self, tx: Tx, scope: str, key: str, status: int, body: bytes) -> None:
        """Store the answer of a key claimed in ``tx``."""
        tx.execute(
            "UPDATE engram_idempotency SET status = ?, body = ?"
            " WHERE scope = ? AND idem_key = ? AND status IS NULL",
            (status, bytes(body), scope, key),
        )

    def complete(self, scope: str, key: str, status: int, body: bytes) -> None:
        """Store the answer for a key claimed by :meth:`begin`."""
        _check(scope, key)
        exists = None
        with self._store.transaction() as tx:
            updated = tx.execute(
                "UPDATE engram_idempotency SET status = ?, body = ?"
                " WHERE scope = ? AND idem_key = ? AND status IS NULL RETURNING scope",
                (status, bytes(body), scope, key),
            )
            if not updated:
                exists = tx.scalar(
                    "SELECT 1 FROM engram_idempotency WHERE scope = ? AND idem_key = ?",
                    (scope, key),
                )
        if not updated:
            if exists:
                raise ConflictError("this idempotency key already has a stored response")
            raise ResourceNotFound("no idempotency claim for this key (call begin first)")

    def abandon(self, scope: str, key: str) -> None:
        """Drop an unanswered claim (the request failed before doing anything)."""
        _check(scope, key)
        with self._store.transaction() as tx:
            tx.execute(
                "DELETE FROM engram_idempotency"
                " WHERE scope = ? AND idem_key = ? AND status IS NULL",
                (scope, key),
            )

    def purge(self, older_than: datetime) -> int:
        """Delete records created before ``older_than``; return how many were deleted."""
        with self._store.transaction() as tx:
            gone = tx.execute(
                "DELETE FROM engram_idempotency WHERE created_at < ? RETURNING idem_key",
                (format_instant_precise(older_than),),
            )
        return len(gone)

    def purge_expired(self, now: datetime) -> int:
        """Delete records past the retention period at ``now``."""
        return self.purge(now - self._retention)


_SEAL_BY_SQL = 20  # up to this many names: the database searches the bytes, one pass
_SEAL_PAGE = 1_000  # answers read at a time when engram searches them itself


def seal_answers_naming(
    tx: Tx,
    names: Sequence[str],
    answer: Callable[[str], tuple[int, bytes]],
    *,
    token: re.Pattern[bytes],
) -> int:
    """Replace every stored answer whose bytes contain one of ``names`` with ``answer(name)``.

    An erase calls it (``engram.transfer.erase_memories``) with the erased memories' ids: a
    stored answer that holds a memory's words also names its id, and a retry with its key must
    neither replay the words nor record them again, so the key keeps an answer that says the
    memory was erased. ``names`` are ASCII and each is matched by ``token``, the pattern of such
    names. A few names are searched for by the database (SQLite's ``instr``, PostgreSQL's
    ``position``); many (a subject's deletion erases thousands at once) in one pass over the
    answers, a page at a time, by the names ``token`` finds in each, so the cost is one read of
    the table whatever the number of names. Returns how many answers changed."""
    if not names or not is_migrated(tx, COMPONENT):
        return 0
    wanted = {n.encode("ascii") for n in names}
    if len(wanted) <= _SEAL_BY_SQL:
        contains = "instr(body, ?) > 0" if tx.dialect.is_sqlite else "position(? in body) > 0"
        rows = tx.execute(
            "SELECT scope, idem_key, body FROM engram_idempotency"  # noqa: S608 - placeholders
            f" WHERE status IS NOT NULL AND ({' OR '.join(contains for _ in wanted)})",
            sorted(wanted),
        )
        return _seal(tx, rows, wanted, token, answer)
    changed, after = 0, ("", "")
    while True:
        rows = tx.execute(
            "SELECT scope, idem_key, body FROM engram_idempotency"
            # A row value walks the primary key on both backends (an OR of the two made
            # PostgreSQL sort the table for every page).
            " WHERE (scope, idem_key) > (?, ?) AND status IS NOT NULL"
            " ORDER BY scope, idem_key LIMIT ?",
            (after[0], after[1], _SEAL_PAGE),
        )
        changed += _seal(tx, rows, wanted, token, answer)
        if len(rows) < _SEAL_PAGE:
            return changed
        after = (str(rows[-1]["scope"]), str(rows[-1]["idem_key"]))


def _seal(
    tx: Tx,
    rows: Sequence[Row],
    wanted: set[bytes],
    token: re.Pattern[bytes],
    answer: Callable[[str], tuple[int, bytes]],
) -> int:
    changed = 0
    for row in rows:
        named = sorted(wanted.intersection(token.findall(bytes(row["body"] or b""))))
        if not named:
            continue
        status, sealed = answer(named[0].decode("ascii"))
        tx.execute(
            "UPDATE engram_idempotency SET status = ?, body = ? WHERE scope = ? AND idem_key = ?",
            (status, sealed, row["scope"], row["idem_key"]),
        )
        changed += 1
    return changed


__all__ = [
    "COMPONENT",
    "DEFAULT_RETENTION",
    "MAX_KEY_LENGTH",
    "IdempotencyStore",
    "Outcome",
    "StoredResponse",
    "seal_answers_naming",
]
