"""IdempotencyStore on every backend: replay, conflict, in-flight, expiry, purge, races."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pytest

from engram.core.canonical import digest_hex
from engram.errors import ConflictError, IdempotencyConflict, InvalidRequest, ResourceNotFound
from engram.store import Component, Migration, Store, Tx
from engram.store.idempotency import IdempotencyStore, StoredResponse

T0 = datetime(2026, 1, 1, 10, 0, 0, tzinfo=UTC)
BODY_A = digest_hex({"belief": "likes tea"})
BODY_B = digest_hex({"belief": "likes coffee"})


@pytest.fixture
def records(any_store: Store) -> IdempotencyStore:
    return IdempotencyStore(any_store, retention=timedelta(hours=24))


@pytest.mark.req("engram.store.idempotency-replay")
def test_a_retry_with_the_same_body_gets_the_first_answer(records: IdempotencyStore) -> None:
    assert records.begin("subject:ada", "key-1", BODY_A, T0) is None
    answer = '{"id":"c-1","status":"pending_user_confirmation"} ✓'.encode()
    records.complete("subject:ada", "key-1", 201, answer)
    replay = records.begin("subject:ada", "key-1", BODY_A, T0 + timedelta(minutes=5))
    assert replay == StoredResponse(status=201, body=answer, created_at=T0)


@pytest.mark.req("engram.store.idempotency-conflict")
def test_the_same_key_with_another_body_is_refused(records: IdempotencyStore) -> None:
    assert records.begin("subject:ada", "key-1", BODY_A, T0) is None
    records.complete("subject:ada", "key-1", 201, b"{}")
    with pytest.raises(IdempotencyConflict) as caught:
        records.begin("subject:ada", "key-1", BODY_B, T0)
    assert caught.value.to_wire()["error"]["code"] == "idempotency_conflict"


@pytest.mark.req("engram.store.idempotency-replay")
def test_scopes_keep_callers_apart(records: IdempotencyStore) -> None:
    assert records.begin("subject:ada", "key-1", BODY_A, T0) is None
    assert records.begin("subject:bob", "key-1", BODY_B, T0) is None


@pytest.mark.req("engram.store.idempotency-replay")
def test_a_request_still_in_flight_is_a_conflict_and_abandon_frees_the_key(
    records: IdempotencyStore,
) -> None:
    assert records.begin("s", "key-1", BODY_A, T0) is None
    with pytest.raises(ConflictError, match="still being processed"):
        records.begin("s", "key-1", BODY_A, T0)
    records.abandon("s", "key-1")
    assert records.begin("s", "key-1", BODY_A, T0) is None


@pytest.mark.req("engram.store.idempotency-replay")
def test_complete_needs_a_claim_and_happens_once(records: IdempotencyStore) -> None:
    with pytest.raises(ResourceNotFound):
        records.complete("s", "never-begun", 200, b"")
    records.begin("s", "k", BODY_A, T0)
    records.complete("s", "k", 200, b"first")
    with pytest.raises(ConflictError):
        records.complete("s", "k", 200, b"second")
    assert records.begin("s", "k", BODY_A, T0) == StoredResponse(200, b"first", T0)


@pytest.mark.req("engram.store.idempotency-retention")
def test_after_the_retention_period_a_key_may_be_reused(records: IdempotencyStore) -> None:
    records.begin("s", "k", BODY_A, T0)
    records.complete("s", "k", 200, b"old")
    later = T0 + timedelta(hours=24, microseconds=1)
    assert records.begin("s", "k", BODY_B, later) is None


@pytest.mark.req("engram.store.idempotency-retention")
def test_purge_deletes_only_old_records(records: IdempotencyStore) -> None:
    for i in range(3):
        records.begin("s", f"old-{i}", BODY_A, T0)
    records.begin("s", "new", BODY_A, T0 + timedelta(hours=30))
    assert records.purge_expired(T0 + timedelta(hours=30)) == 3
    assert records.purge(T0) == 0
    with pytest.raises(ConflictError):  # "new" is still claimed
        records.begin("s", "new", BODY_A, T0 + timedelta(hours=30))


@pytest.mark.req("engram.store.idempotency-replay")
@pytest.mark.parametrize("key", ["", "x" * 256, "line\nbreak"])
def test_malformed_keys_are_bad_input(records: IdempotencyStore, key: str) -> None:
    with pytest.raises(InvalidRequest):
        records.begin("s", key, BODY_A, T0)


@pytest.mark.req("engram.store.idempotency-concurrent")
def test_of_concurrent_first_requests_exactly_one_proceeds(records: IdempotencyStore) -> None:
    barrier = threading.Barrier(4)

    def attempt(_: int) -> str:
        barrier.wait()
        try:
            return "proceed" if records.begin("s", "race", BODY_A, T0) is None else "replay"
        except ConflictError:
            return "in-flight"

    with ThreadPoolExecutor(max_workers=4) as pool:
        outcomes = sorted(pool.map(attempt, range(4)))
    assert outcomes == ["in-flight", "in-flight", "in-flight", "proceed"]


def _notes(store: Store) -> None:
    store.migrate(
        Component("notes", [Migration(1, "notes", lambda _d: ["CREATE TABLE notes (text TEXT)"])])
    )


def _count_notes(store: Store) -> int:
    with store.read() as tx:
        return int(tx.scalar("SELECT COUNT(*) FROM notes"))


@pytest.mark.req("engram.provider.idempotency-one-transaction")
def test_run_once_commits_the_claim_the_work_and_the_answer_together(
    any_store: Store, records: IdempotencyStore
) -> None:
    _notes(any_store)

    def write(tx: Tx) -> tuple[int, bytes]:
        tx.execute("INSERT INTO notes (text) VALUES ('one')")
        return 202, b'{"ok":true}'

    first = records.run_once("s", "k", BODY_A, T0, write)
    again = records.run_once("s", "k", BODY_A, T0, write)
    assert (first.status, first.body, first.replayed) == (202, b'{"ok":true}', False)
    assert (again.status, again.body, again.replayed) == (202, b'{"ok":true}', True)
    assert _count_notes(any_store) == 1


@pytest.mark.req("engram.provider.idempotency-one-transaction")
def test_run_once_keeps_a_refusal_but_not_its_writes_and_forgets_a_failure(
    any_store: Store, records: IdempotencyStore
) -> None:
    _notes(any_store)

    def refuse(tx: Tx) -> tuple[int, bytes]:
        tx.execute("INSERT INTO notes (text) VALUES ('half done')")
        raise ConflictError("correction already decided")

    def crash(tx: Tx) -> tuple[int, bytes]:
        tx.execute("INSERT INTO notes (text) VALUES ('half done')")
        raise RuntimeError("the disk caught fire")

    with pytest.raises(ConflictError):
        records.run_once("s", "refused", BODY_A, T0, refuse)
    replay = records.run_once("s", "refused", BODY_A, T0, refuse)
    assert (replay.status, replay.replayed) == (409, True)
    assert b'"code":"conflict"' in replay.body
    with pytest.raises(RuntimeError):
        records.run_once("s", "crashed", BODY_A, T0, crash)
    assert _count_notes(any_store) == 0  # neither half-done write survived

    def succeed(_: Tx) -> tuple[int, bytes]:
        return 200, b"{}"

    assert records.run_once("s", "crashed", BODY_A, T0, succeed).replayed is False


@pytest.mark.req("engram.store.idempotency-concurrent")
def test_of_concurrent_first_run_once_calls_the_work_runs_once_and_all_get_its_answer(
    any_store: Store, records: IdempotencyStore
) -> None:
    _notes(any_store)
    barrier = threading.Barrier(4)

    def write(tx: Tx) -> tuple[int, bytes]:
        tx.execute("INSERT INTO notes (text) VALUES ('once')")
        time.sleep(0.05)  # hold the claim while the others arrive
        return 202, b'{"n":1}'

    def attempt(_: int) -> tuple[int, bytes]:
        barrier.wait()
        outcome = records.run_once("s", "race", BODY_A, T0, write)
        return outcome.status, outcome.body

    with ThreadPoolExecutor(max_workers=4) as pool:
        answers = list(pool.map(attempt, range(4)))
    assert answers == [(202, b'{"n":1}')] * 4
    assert _count_notes(any_store) == 1
