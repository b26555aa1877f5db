"""seal_answers_naming on every backend: the database's search for a few names, engram's own
paged pass for many (a subject's deletion), and nothing else touched."""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime, timedelta

import pytest

from engram.store import Store
from engram.store.idempotency import IdempotencyStore, seal_answers_naming

T0 = datetime(2026, 1, 1, 10, 0, 0, tzinfo=UTC)
TOKEN = re.compile(rb"mem:[0-9a-f]{64}")


def _id(n: int) -> str:
    return "mem:" + hashlib.sha256(str(n).encode()).hexdigest()


def _answers(store: Store) -> dict[str, tuple[int, bytes]]:
    with store.read() as tx:
        rows = tx.execute(
            "SELECT idem_key, status, body FROM engram_idempotency WHERE status IS NOT NULL"
        )
    return {str(r["idem_key"]): (int(r["status"]), bytes(r["body"])) for r in rows}


@pytest.mark.req("engram.memory.rest.erase-seals-idempotency")
@pytest.mark.parametrize("erased", [3, 1_500], ids=["few names", "many names"])
def test_every_answer_naming_an_erased_id_is_sealed_and_no_other(
    any_store: Store, erased: int
) -> None:
    records = IdempotencyStore(any_store, retention=timedelta(hours=24))
    total = 3_500  # more than three pages of the paged pass
    rows = [
        (
            f"POST /v1/memories s{n % 7}",
            f"k{n:05d}",
            "digest",
            "2026-01-01T10:00:00.000000Z",
            201,
            f'{{"memory":{{"id":"{_id(n)}","text":"words of memory {n}"}}}}'.encode(),
        )
        for n in range(total)
    ]
    with any_store.transaction() as tx:
        tx.execute_many(
            "INSERT INTO engram_idempotency"
            " (scope, idem_key, request_digest, created_at, status, body)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            rows,
        )
    # One unanswered claim (a request in flight) is never touched.
    assert records.begin("POST /v1/memories s0", "in-flight", "digest", T0) is None
    gone = [_id(n) for n in range(0, 2 * erased, 2)]

    with any_store.transaction() as tx:
        changed = seal_answers_naming(tx, gone, lambda name: (404, name.encode()), token=TOKEN)

    after = _answers(any_store)
    assert changed == erased
    for n in range(total):
        status, body = after[f"k{n:05d}"]
        if n % 2 == 0 and n < 2 * erased:
            assert (status, body) == (404, _id(n).encode()), n
        else:
            assert status == 201
            assert f"words of memory {n}".encode() in body
    with any_store.read() as tx:
        assert (
            tx.scalar("SELECT status FROM engram_idempotency WHERE idem_key = 'in-flight'") is None
        )
