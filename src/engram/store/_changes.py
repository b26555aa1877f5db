"""The change feed: how every process learns, within a bound, what the database changed.

docs/spec/storage.md "Change feed". Processes that hold state in memory (the provider's token
grants and subject state versions, its active signing key) must drop it when another process
changes the database: a token revoked with ``engram token revoke`` on one host must be refused
by every worker of every host. A write that matters calls ``tx.record_change(topic, key)``:

- the single row of ``engram_change_counter`` is incremented (its row lock orders the
  writers, so sequence numbers are handed out in commit order) and the change is appended to
  ``engram_changes`` (the last :data:`RETAINED` changes are kept);
- on PostgreSQL the same transaction sends ``NOTIFY`` on a channel derived from the schema, so
  listeners hear of the change when it commits, typically within milliseconds;
- after the commit, subscribers of the same store object are told at once, in the committing
  thread (a worker sees its own writes immediately).

A :class:`ChangeFeed` (one per store object, started by the first subscriber) delivers the
changes of other processes: a poller reads the counter every ``bound / 4`` seconds and, when it
moved, the changes since the last one seen (a gap, because the log was pruned or the poller was
away too long, is delivered as :data:`FLUSH`: forget everything); on PostgreSQL a listener
thread delivers notifications as they arrive and asks the poller at once when one is missing.
A lost notification is therefore repaired by the next poll. :meth:`Subscription.fresh` is true
only while the last successful poll started less than ``bound`` seconds ago: a subscriber must
not answer from memory otherwise (it reads the database), so no change committed more than
``bound`` ago can be missed, whatever happened to the notifications or the poller.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from engram.core.clock import format_instant_precise
from engram.errors import StoreError
from engram.store._base import Component, Dialect, Migration, Tx

LOG = logging.getLogger("engram.store.changes")

RETAINED = 10_000
"""Changes kept in ``engram_changes``; a poller further behind than this flushes instead."""

FLUSH = "*"
"""The topic of a change that stands for "anything may have changed": forget everything."""

SCHEMA_TOPIC = "schema"
"""Recorded by a migration step: every store object forgets what it knew of the schema."""

DEFAULT_BOUND_SECONDS = 1.0
_BATCH = 1000


def _schema_v1(dialect: Dialect) -> list[str]:
    return [
        "CREATE TABLE engram_change_counter ("
        " id INTEGER PRIMARY KEY,"
        f" seq {dialect.bigint} NOT NULL)",
        "INSERT INTO engram_change_counter (id, seq) VALUES (1, 0)",
        "CREATE TABLE engram_changes ("
        f" seq {dialect.bigint} PRIMARY KEY,"
        " topic TEXT NOT NULL,"
        " change_key TEXT NOT NULL,"
        " at TEXT NOT NULL)",
    ]


COMPONENT = Component("changes", [Migration(1, "change feed", _schema_v1)])


@dataclass(frozen=True)
class Change:
    """One committed change: its sequence number, a topic (``token``, ``subject``, ``keys``,
    ``schema``, or :data:`FLUSH`) and a key within it (a token hash, a subject id, or "")."""

    seq: int
    topic: str
    key: str


Subscriber = Callable[[Change], None]

# The channel is per schema: several engram databases (tests, tenants) may share one server.
CHANNEL_SQL = "SELECT 'engram_' || md5(current_schema())"


def record(tx: Tx, topic: str, key: str) -> Change:
    """Append a change to the log inside ``tx`` (and NOTIFY on PostgreSQL); return it.

    The counter row is locked until ``tx`` ends, so concurrent writers get increasing numbers
    in the order they commit, which is what lets a poller read "everything after N".
    """
    if not topic or topic == FLUSH or " " in topic:
        raise StoreError(f"not a change topic: {topic!r}")
    seq = int(
        tx.scalar("UPDATE engram_change_counter SET seq = seq + 1 WHERE id = 1 RETURNING seq")
    )
    stamp = format_instant_precise(datetime.now(UTC))  # bookkeeping of the store itself
    tx.execute(
        "INSERT INTO engram_changes (seq, topic, change_key, at) VALUES (?, ?, ?, ?)",
        (seq, topic, key, stamp),
    )
    if seq > RETAINED:
        tx.execute("DELETE FROM engram_changes WHERE seq <= ?", (seq - RETAINED,))
    if not tx.dialect.is_sqlite:
        # Delivered by PostgreSQL when (and only if) the transaction commits.
        tx.execute(f"SELECT pg_notify(({CHANNEL_SQL}), ?)", (f"{seq} {topic} {key}",))
    return Change(seq, topic, key)


class Recording:
    """The change-feed half of a backend's transaction object: ``record_change`` and
    ``after_commit`` (the backend runs :attr:`committed` once it has committed)."""

    _feed: ChangeFeed
    committed: list[Callable[[], None]]

    def record_change(self, topic: str, key: str) -> None:
        change = record(self, topic, key)  # type: ignore[arg-type]  # self is the backend's Tx
        feed = self._feed
        self.committed.append(lambda: feed.publish_local(change))

    def after_commit(self, callback: Callable[[], None]) -> None:
        self.committed.append(callback)


def parse_payload(payload: str) -> Change | None:
    """A NOTIFY payload ``"<seq> <topic> <key>"``, or None when it is not one of ours."""
    seq, _, rest = payload.partition(" ")
    topic, _, key = rest.partition(" ")
    if not seq.isdigit() or not topic:
        return None
    return Change(int(seq), topic, key)


class Notifications(Protocol):
    """A dedicated connection that LISTENs (PostgreSQL only)."""

    def wait(self, timeout: float) -> Iterator[str]:
        """Payloads received within ``timeout`` seconds (possibly none)."""
        ...

    def close(self) -> None: ...


class Subscription:
    """One subscriber's handle: :meth:`fresh` says whether memory may still be trusted."""

    def __init__(self, feed: ChangeFeed, subscriber: Subscriber, bound: float) -> None:
        self._feed = feed
        self.subscriber = subscriber
        self.bound = bound

    def fresh(self) -> bool:
        """True while every change committed more than ``bound`` seconds ago was delivered."""
        return self._feed.fresh(self.bound)

    def refresh(self) -> bool:
        """Poll now (blocking; one poll at a time, others wait for it) and say whether memory
        may be trusted again: for a subscriber that found itself stale, so that a starved
        poller costs one poll instead of one query per waiting request."""
        return self._feed.refresh(self.bound)

    def close(self) -> None:
        self._feed.unsubscribe(self)


class ChangeFeed:
    """Delivers the changes of one database to the subscribers of one store object."""

    def __init__(
        self,
        read: Callable[[], AbstractContextManager[Tx]],
        *,
        remote: bool,
        listen: Callable[[], Notifications] | None = None,
    ) -> None:
        self._read = read
        self._remote = remote  # False for memory://: no other process can write
        self._listen = listen
        self._subscriptions: list[Subscription] = []
        self._lock = threading.RLock()  # orders deliveries and last_seq
        self._last_seq: int | None = None
        self._validated_at = -float("inf")
        self._poll_now = threading.Event()
        self._refreshing = threading.Lock()
        self._stopped = threading.Event()
        self._threads: list[threading.Thread] = []
        self.on_schema_change: Callable[[], None] | None = None

    # -- subscribers -------------------------------------------------------------------------

    def subscribe(
        self, subscriber: Subscriber, bound: float = DEFAULT_BOUND_SECONDS
    ) -> Subscription:
        """Deliver every change to ``subscriber`` from now on; ``bound`` is how stale the
        subscriber may be (the poll interval is a quarter of the smallest bound)."""
        if bound <= 0:
            raise StoreError("a change feed bound must be positive")
        subscription = Subscription(self, subscriber, bound)
        with self._lock:
            self._subscriptions.append(subscription)
        if self._remote:
            # Know the current position before the subscriber caches anything, so nothing
            # committed between its first read and our first poll can be skipped.
            self.poll()
            self._start()
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        with self._lock, contextlib.suppress(ValueError):
            self._subscriptions.remove(subscription)

    @property
    def interval(self) -> float:
        with self._lock:
            bounds = [s.bound for s in self._subscriptions] or [DEFAULT_BOUND_SECONDS]
        return min(bounds) / 4

    def fresh(self, bound: float) -> bool:
        if not self._remote:
            return True
        return time.monotonic() - self._validated_at < bound

    def _deliver(self, change: Change) -> None:
        if change.topic in (SCHEMA_TOPIC, FLUSH) and self.on_schema_change is not None:
            self.on_schema_change()
        for subscription in list(self._subscriptions):
            try:
                subscription.subscriber(change)
            except Exception:  # a subscriber's bug must not stop the others or the feed
                LOG.exception("change subscriber failed on %s", change)

    def publish_local(self, change: Change) -> None:
        """A change this store object committed: tell its subscribers now (the poll will
        bring it again, harmlessly, and only the poll moves the position)."""
        with self._lock:
            self._deliver(change)

    # -- polling and listening ---------------------------------------------------------------

    def poll(self) -> bool:
        """Read the changes after the last one seen and deliver them; True on success."""
        started = time.monotonic()
        # The position is read before the counter: a notification delivered between the two
        # reads would otherwise put the position ahead of the counter this poll saw.
        with self._lock:
            last = self._last_seq
        try:
            with self._read() as tx:
                counter = int(tx.scalar("SELECT seq FROM engram_change_counter WHERE id = 1"))
                rows = []
                if last is not None and counter > last:
                    rows = tx.execute(
                        "SELECT seq, topic, change_key FROM engram_changes WHERE seq > ?"
                        " ORDER BY seq LIMIT ?",
                        (last, _BATCH),
                    )
        except StoreError as e:
            if self._stopped.is_set():
                # The store was closed while this poll ran (a shutdown, or `engram serve`
                # closing its set-up store as the workers start): nothing to warn about.
                LOG.debug("change feed poll after close: %s", e)
                return False
            LOG.warning("change feed poll failed (memory is trusted for at most the bound): %s", e)
            return False
        with self._lock:
            if last is None:
                if self._last_seq is None:
                    self._last_seq = counter  # the first poll: the position to follow from
                # else a concurrent first poll already set it; this one read no rows.
            elif counter < last:
                # The database was replaced (restored, recreated): trust nothing held before.
                # Compared with the position this poll started from, never with the current
                # one: notifications may have moved that past the counter we read meanwhile.
                self._deliver(Change(counter, FLUSH, ""))
                self._last_seq = counter
            elif self._last_seq is not None and counter > self._last_seq:
                # Rows were read after ``last``; notifications may have delivered some since.
                contiguous = bool(rows) and int(rows[0]["seq"]) == last + 1
                complete = contiguous and int(rows[-1]["seq"]) >= counter
                if contiguous:
                    for row in rows:
                        seq = int(row["seq"])
                        if seq > self._last_seq:
                            self._deliver(Change(seq, str(row["topic"]), str(row["change_key"])))
                            self._last_seq = seq
                if not complete:
                    self._deliver(Change(counter, FLUSH, ""))
                    self._last_seq = counter
            self._validated_at = max(self._validated_at, started)
        return True

    def refresh(self, bound: float) -> bool:
        """:meth:`Subscription.refresh`: a single-flight poll, then :meth:`fresh`."""
        if not self._remote:
            return True
        with self._refreshing:
            # Whoever polled while we waited made memory trustworthy again for all of us.
            if not self.fresh(bound):
                self.poll()
        return self.fresh(bound)

    def notified(self, change: Change) -> None:
        """A NOTIFY arrived: deliver it if it is the next one, ask for a poll if one is missing."""
        with self._lock:
            last = self._last_seq
            if last is None or change.seq <= last:
                return
            if change.seq == last + 1:
                self._deliver(change)
                self._last_seq = change.seq
                return
        self._poll_now.set()  # a notification was lost: the poller fills the gap now

    def _start(self) -> None:
        with self._lock:
            if self._threads or self._stopped.is_set():
                return
            ref = weakref.ref(self)
            self._threads.append(
                threading.Thread(target=_poll_loop, args=(ref,), name="engram-changes-poll")
            )
            if self._listen is not None:
                self._threads.append(
                    threading.Thread(
                        target=_listen_loop, args=(ref, self._listen), name="engram-changes-listen"
                    )
                )
            for thread in self._threads:
                thread.daemon = True
                thread.start()

    def close(self) -> None:
        self._stopped.set()
        self._poll_now.set()

    @property
    def stopped(self) -> bool:
        return self._stopped.is_set()


def _poll_loop(ref: weakref.ReferenceType[ChangeFeed]) -> None:
    """Poll until the feed is closed or garbage (the thread holds no strong reference)."""
    while True:
        feed = ref()
        if feed is None or feed.stopped:
            return
        feed.poll()
        interval, wake = feed.interval, feed._poll_now
        del feed
        wake.wait(interval)
        wake.clear()


def _listen_loop(
    ref: weakref.ReferenceType[ChangeFeed], listen: Callable[[], Notifications]
) -> None:
    """Deliver NOTIFY payloads; reconnect after a failure (the poller covers the gap)."""
    connection: Notifications | None = None
    try:
        while True:
            feed = ref()
            if feed is None or feed.stopped:
                return
            interval = feed.interval
            del feed
            try:
                if connection is None:
                    connection = listen()
                    # Whatever was sent while no one listened is repaired by a poll now.
                    live = ref()
                    if live is not None:
                        live._poll_now.set()
                    del live
                for payload in connection.wait(interval):
                    change = parse_payload(payload)
                    live = ref()
                    if live is None:
                        return
                    if change is not None:
                        live.notified(change)
                    del live
            except StoreError as e:
                LOG.warning("change feed listener lost its connection, reconnecting: %s", e)
                if connection is not None:
                    with contextlib.suppress(StoreError):
                        connection.close()
                connection = None
                time.sleep(min(1.0, interval))
    finally:
        if connection is not None:
            with contextlib.suppress(StoreError):
                connection.close()


__all__ = [
    "CHANNEL_SQL",
    "COMPONENT",
    "DEFAULT_BOUND_SECONDS",
    "FLUSH",
    "RETAINED",
    "SCHEMA_TOPIC",
    "Change",
    "ChangeFeed",
    "Notifications",
    "Recording",
    "Subscriber",
    "Subscription",
    "parse_payload",
    "record",
]
