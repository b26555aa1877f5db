"""Token grants and subject state versions held in memory (docs/spec/context-provider.md
"Token and state cache"): served without a query while fresh, dropped when the database
changes, never trusted past the bound - a revoked token is refused everywhere within it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from engram.context import (
    Permission,
    _repo,
    add_belief,
    create_subject,
    ensure_schema,
    issue_token,
    list_tokens,
    revoke_token,
)
from engram.context.internals import ContextCache, authenticate_token_with_state, hash_token
from engram.core.clock import FixedClock
from engram.errors import StoreError, Unauthorized
from engram.store import Store, open_store

BOUND = 1.0


class CountedReads:
    """Counts ``store.read()`` transactions."""

    def __init__(self, store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        original = store.read

        def read() -> object:
            self.count += 1
            return original()

        monkeypatch.setattr(store, "read", read)


@pytest.fixture
def hosts(any_database_url: str) -> Iterator[tuple[Store, Store]]:
    """Two store objects on one database: "this worker" and "another process"."""
    mine, theirs = open_store(any_database_url), open_store(any_database_url)
    ensure_schema(mine)
    ensure_schema(theirs)
    try:
        yield mine, theirs
    finally:
        mine.close()
        theirs.close()


def _subject_and_token(store: Store, clock: FixedClock) -> tuple[str, str]:
    subject = create_subject(store, clock, "Ada", "UTC")
    return subject.id, issue_token(store, clock, subject.id, [Permission.READ])


@pytest.mark.req("engram.provider.auth-cache")
def test_a_cached_token_and_state_cost_no_query(
    any_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = FixedClock()
    subject, token = _subject_and_token(any_store, clock)
    cache = ContextCache(any_store, bound=BOUND)
    first = authenticate_token_with_state(any_store, clock, token, cache)
    reads = CountedReads(any_store, monkeypatch)
    for _ in range(50):
        assert authenticate_token_with_state(any_store, clock, token, cache) == first
    assert reads.count == 0
    add_belief(any_store, clock, subject, "goal", "Run.")  # this worker's own write
    _, version = authenticate_token_with_state(any_store, clock, token, cache)
    assert first[1] is not None
    assert version == first[1] + 1
    assert reads.count == 1  # the state changed: read once, then cached again


@pytest.mark.req("engram.provider.revocation-bound")
def test_a_token_revoked_by_another_process_is_refused_within_the_bound(
    hosts: tuple[Store, Store],
) -> None:
    mine, theirs = hosts
    clock = FixedClock()
    subject, token = _subject_and_token(theirs, clock)
    cache = ContextCache(mine, bound=BOUND)
    authenticate_token_with_state(mine, clock, token, cache)  # cached now
    (info,) = list_tokens(theirs, subject)
    revoke_token(theirs, clock, subject, info.token_id)
    revoked_at = time.monotonic()
    while True:
        try:
            authenticate_token_with_state(mine, clock, token, cache)
        except Unauthorized:
            break
        assert time.monotonic() - revoked_at < BOUND, "still served past the bound"
        time.sleep(0.01)


@pytest.mark.req("engram.provider.revocation-bound")
def test_a_cache_that_cannot_confirm_the_bound_reads_the_database(
    hosts: tuple[Store, Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    mine, theirs = hosts
    clock = FixedClock()
    subject, token = _subject_and_token(theirs, clock)
    cache = ContextCache(mine, bound=0.4)
    authenticate_token_with_state(mine, clock, token, cache)

    def lost() -> object:  # the feed hears nothing at all: no poll, no notification
        raise StoreError("change feed unreachable")

    monkeypatch.setattr(mine._feed, "_read", lost)  # type: ignore[attr-defined]
    monkeypatch.setattr(mine._feed, "notified", lambda _change: None)  # type: ignore[attr-defined]
    (info,) = list_tokens(theirs, subject)
    revoke_token(theirs, clock, subject, info.token_id)
    time.sleep(0.5)
    with pytest.raises(Unauthorized):  # past the bound, the store itself answers
        authenticate_token_with_state(mine, clock, token, cache)


@pytest.mark.req("engram.provider.auth-cache")
def test_a_state_change_elsewhere_reaches_the_cached_version_within_the_bound(
    hosts: tuple[Store, Store],
) -> None:
    mine, theirs = hosts
    clock = FixedClock()
    subject, token = _subject_and_token(theirs, clock)
    cache = ContextCache(mine, bound=BOUND)
    _, before = authenticate_token_with_state(mine, clock, token, cache)
    add_belief(theirs, clock, subject, "goal", "Run a marathon.")
    time.sleep(BOUND)
    _, after = authenticate_token_with_state(mine, clock, token, cache)
    assert before is not None
    assert after == before + 1


@pytest.mark.req("engram.provider.auth-cache")
def test_a_value_read_while_it_was_being_invalidated_is_not_kept(any_store: Store) -> None:
    clock = FixedClock()
    subject, token = _subject_and_token(any_store, clock)
    cache = ContextCache(any_store, bound=BOUND)
    with any_store.read() as tx:
        row = _repo.token_and_state(tx, hash_token(token))
    assert row is not None
    stale_epoch = cache.epoch
    (info,) = list_tokens(any_store, subject)
    revoke_token(any_store, clock, subject, info.token_id)  # invalidates: the epoch moves
    grant = authenticate_token_with_state(
        any_store, clock, issue_token(any_store, clock, subject, [Permission.READ])
    )[0]
    cache.remember(hash_token(token), row, stale_epoch, grant)
    assert cache.lookup(hash_token(token)) is None  # the pre-revocation row was not kept
    with pytest.raises(Unauthorized):
        authenticate_token_with_state(any_store, clock, token, cache)


@pytest.mark.req("engram.provider.auth-cache")
def test_a_stale_cache_is_revalidated_by_one_poll_not_one_query_per_request(
    hosts: tuple[Store, Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    mine, theirs = hosts
    clock = FixedClock()
    _, token = _subject_and_token(theirs, clock)
    cache = ContextCache(mine, bound=BOUND)
    authenticate_token_with_state(mine, clock, token, cache)
    feed = mine._feed  # type: ignore[attr-defined]
    feed.close()  # the poller stops (as if starved); a poll in flight finishes first
    for thread in feed._threads:
        thread.join(timeout=5)
    polls = CountedCalls(feed, "_read", monkeypatch)
    queries = CountedReads(mine, monkeypatch)
    monkeypatch.setattr(feed, "_validated_at", -float("inf"))  # the last poll is long ago
    with ThreadPoolExecutor(max_workers=8) as pool:
        grants = list(
            pool.map(lambda _: authenticate_token_with_state(mine, clock, token, cache), range(16))
        )
    assert len({g[0].token_id for g in grants}) == 1
    assert queries.count == 0  # nobody asked the store for the token
    assert polls.count == 1  # one poll for all sixteen


class CountedCalls:
    def __init__(self, owner: object, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        original = getattr(owner, name)

        def counted() -> object:
            self.count += 1
            return original()

        monkeypatch.setattr(owner, name, counted)
