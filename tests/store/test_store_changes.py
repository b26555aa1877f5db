"""The change feed on every backend (docs/spec/storage.md "Change feed"): a change committed
through one store object reaches the subscribers of another (standing in for another process)
within the bound, whether or not a notification arrives; an uncommitted one never does; a
subscriber is told when memory can no longer be trusted."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from engram.errors import StoreError
from engram.store import Store, open_store
from engram.store.internals import CHANGES_COMPONENT, FLUSH, Change, ChangeFeed, Subscription

BOUND = 1.0


class Inbox:
    """What a subscriber received, with a way to wait for it."""

    def __init__(self) -> None:
        self.changes: list[Change] = []
        self._arrived = threading.Condition()

    def __call__(self, change: Change) -> None:
        with self._arrived:
            self.changes.append(change)
            self._arrived.notify_all()

    def wait_for(self, predicate: Callable[[list[Change]], bool], timeout: float) -> float:
        """Seconds until ``predicate`` held (pytest.fail after ``timeout``)."""
        started = time.monotonic()
        with self._arrived:
            while not predicate(self.changes):
                left = timeout - (time.monotonic() - started)
                if left <= 0:
                    pytest.fail(f"not delivered within {timeout} s: {self.changes}")
                self._arrived.wait(left)
        return time.monotonic() - started


def _record(store: Store, topic: str, key: str) -> None:
    with store.transaction() as tx:
        tx.record_change(topic, key)


def _has(topic: str, key: str) -> Callable[[list[Change]], bool]:
    return lambda changes: any(
        (c.topic, c.key) == (topic, key) or c.topic == FLUSH for c in changes
    )


@pytest.fixture
def pair(any_database_url: str) -> Iterator[tuple[Store, Store]]:
    """Two store objects on one database: a writer and a reader in "another process"."""
    writer, reader = open_store(any_database_url), open_store(any_database_url)
    writer.migrate(CHANGES_COMPONENT)
    reader.migrate(CHANGES_COMPONENT)
    try:
        yield writer, reader
    finally:
        writer.close()
        reader.close()


@pytest.mark.req("engram.store.change-feed-local")
def test_a_committed_change_reaches_the_same_store_at_once_and_a_rolled_back_one_never(
    any_store: Store,
) -> None:
    any_store.migrate(CHANGES_COMPONENT)
    inbox = Inbox()
    any_store.subscribe(inbox, BOUND)

    def abandoned() -> None:
        with any_store.transaction() as tx:
            tx.record_change("subject", "rolled-back")
            raise RuntimeError("abort")

    with pytest.raises(RuntimeError):
        abandoned()
    with any_store.transaction() as tx:
        tx.record_change("subject", "s-1")
        assert inbox.changes == []  # not before the commit
    # Delivered by the time the block ends; the feed may bring it again (harmless).
    assert {(c.topic, c.key) for c in inbox.changes} == {("subject", "s-1")}


@pytest.mark.req("engram.store.change-feed-bound")
def test_another_store_object_learns_of_a_change_within_the_bound(
    pair: tuple[Store, Store],
) -> None:
    writer, reader = pair
    inbox = Inbox()
    subscription = reader.subscribe(inbox, BOUND)
    assert subscription.fresh()
    _record(writer, "token", "hash-1")
    inbox.wait_for(_has("token", "hash-1"), BOUND)
    assert subscription.fresh()


@pytest.mark.req("engram.store.change-feed-bound")
@pytest.mark.postgres
def test_on_postgresql_a_notification_arrives_long_before_the_next_poll(
    postgres_url: str,
) -> None:
    writer, reader = open_store(postgres_url), open_store(postgres_url)
    try:
        writer.migrate(CHANGES_COMPONENT)
        inbox = Inbox()
        reader.subscribe(inbox, 40.0)  # polls every 10 s: only NOTIFY can be this quick
        time.sleep(0.3)  # the listener connects
        _record(writer, "subject", "s-notified")
        took = inbox.wait_for(_has("subject", "s-notified"), 5.0)
        assert took < 5.0
    finally:
        writer.close()
        reader.close()


@pytest.mark.req("engram.store.change-feed-lost-notification")
@pytest.mark.postgres
def test_without_any_notification_the_poll_still_delivers_within_the_bound(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer, reader = open_store(postgres_url), open_store(postgres_url)

    def no_listener() -> object:
        raise StoreError("postgresql: cannot listen: notifications lost for this test")

    monkeypatch.setattr(reader, "_notifications", no_listener)
    try:
        writer.migrate(CHANGES_COMPONENT)
        inbox = Inbox()
        reader.subscribe(inbox, BOUND)
        _record(writer, "token", "hash-unheard")
        inbox.wait_for(_has("token", "hash-unheard"), BOUND)
    finally:
        writer.close()
        reader.close()


@pytest.mark.req("engram.store.change-feed-lost-notification")
def test_a_change_pruned_before_it_was_read_is_a_flush(pair: tuple[Store, Store]) -> None:
    writer, reader = pair
    inbox = Inbox()
    reader.subscribe(inbox, BOUND)
    with writer.transaction() as tx:
        # Five changes the log no longer holds (pruned while the reader was away), no NOTIFY.
        tx.execute("UPDATE engram_change_counter SET seq = seq + 5 WHERE id = 1")
    _record(writer, "subject", "later")
    inbox.wait_for(lambda changes: any(c.topic == FLUSH for c in changes), BOUND)


@pytest.mark.req("engram.store.change-feed-bound")
def test_memory_is_not_trusted_once_the_feed_cannot_confirm_the_bound(
    pair: tuple[Store, Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, reader = pair
    subscription = reader.subscribe(Inbox(), 0.4)
    assert subscription.fresh()
    feed = reader._feed  # type: ignore[attr-defined]

    def unreachable() -> object:
        raise StoreError("the database went away")

    monkeypatch.setattr(feed, "_read", unreachable)
    time.sleep(0.5)
    assert not subscription.fresh()  # a subscriber now reads the database for every request
    monkeypatch.undo()
    deadline = time.monotonic() + 2
    while not subscription.fresh() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert subscription.fresh()


@pytest.mark.req("engram.store.change-feed-order")
def test_concurrent_writers_get_sequence_numbers_in_commit_order(
    pair: tuple[Store, Store],
) -> None:
    writer, reader = pair
    inbox = Inbox()
    reader.subscribe(inbox, BOUND)

    def write(i: int) -> None:
        _record(writer, "subject", f"w-{i}")

    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(write, range(20)))
    inbox.wait_for(lambda changes: len({c.key for c in changes}) >= 20, 5.0)
    seqs = [c.seq for c in inbox.changes if c.topic != FLUSH]
    assert seqs == sorted(seqs)
    assert len(set(seqs)) == 20
    assert not any(c.topic == FLUSH for c in inbox.changes)  # no gap was ever seen


def test_a_topic_that_could_be_confused_with_a_flush_is_refused(any_store: Store) -> None:
    any_store.migrate(CHANGES_COMPONENT)
    with pytest.raises(StoreError, match="not a change topic"), any_store.transaction() as tx:
        tx.record_change(FLUSH, "")


class _StaleReadTx:
    """A read transaction whose counter is read before a notification moves the feed on."""

    def __init__(self, feed_box: list[object], counter: int) -> None:
        self._feed_box = feed_box
        self._counter = counter

    def scalar(self, sql: str, params: tuple[object, ...] = ()) -> int:
        feed = self._feed_box[0]
        assert isinstance(feed, ChangeFeed)
        # The listener delivers the next change while this poll is between its statements.
        feed.notified(Change(self._counter + 1, "subject", "notified-meanwhile"))
        return self._counter

    def execute(self, sql: str, params: tuple[object, ...] = ()) -> list[dict[str, object]]:
        return []


@pytest.mark.req("engram.store.change-feed-order")
def test_a_poll_that_read_the_counter_before_a_notification_is_not_a_flush() -> None:
    """Seen once in CI on PostgreSQL: the poll read counter N, the listener then delivered
    N+1, and the poll took "counter behind position" for a replaced database and flushed."""
    counter = {"value": 7}
    box: list[object] = []

    @contextlib.contextmanager
    def read() -> Iterator[_StaleReadTx]:
        yield _StaleReadTx(box, counter["value"])

    feed = ChangeFeed(read, remote=True)  # type: ignore[arg-type]  # a stand-in Tx
    box.append(feed)
    inbox = Inbox()
    feed._subscriptions.append(Subscription(feed, inbox, BOUND))  # no poller thread
    feed._last_seq = 7
    assert feed.poll()
    assert [c.topic for c in inbox.changes] == ["subject"]  # delivered, and nothing flushed
    assert feed._last_seq == 8
    counter["value"] = 3  # now the database really is behind where the feed was
    feed._last_seq = 8
    box[0] = feed
    assert feed.poll()
    assert inbox.changes[-1].topic == FLUSH
