"""SQLite's read connections (docs/spec/storage.md "Backends"): pooled apart from write ones and
opened read-only once, they must still refuse writes, see every commit, and close with the store.
"""

from __future__ import annotations

import threading

import pytest

from engram.errors import StoreError
from engram.store import Component, Migration, Store

LOG = Component("log", [Migration(1, "log", lambda _d: ["CREATE TABLE log (n INTEGER)"])])


@pytest.fixture(params=["sqlite_store", "memory_store"])
def store(request: pytest.FixtureRequest) -> Store:
    store: Store = request.getfixturevalue(request.param)
    store.migrate(LOG)
    return store


def total(store: Store) -> int:
    with store.read() as tx:
        return int(tx.scalar("SELECT COALESCE(SUM(n), 0) FROM log"))


@pytest.mark.req("engram.store.read-only")
def test_every_read_refuses_writes_and_sees_the_commit_before_it(store: Store) -> None:
    for n in range(1, 6):
        with store.transaction() as tx:
            tx.execute("INSERT INTO log (n) VALUES (?)", (n,))
        assert total(store) == sum(range(1, n + 1))
        with pytest.raises(StoreError, match=r"readonly|read-only|query"), store.read() as tx:
            tx.execute("DELETE FROM log")
    assert total(store) == 15


@pytest.mark.req("engram.store.read-only")
def test_reads_on_many_threads_see_writes_from_another(store: Store) -> None:
    seen: list[int] = []
    errors: list[BaseException] = []

    def reader() -> None:
        try:
            for _ in range(20):
                seen.append(total(store))
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=reader) for _ in range(4)]
    for t in threads:
        t.start()
    for n in range(10):
        with store.transaction() as tx:
            tx.execute("INSERT INTO log (n) VALUES (?)", (1,))
        assert total(store) == n + 1  # the writer's own thread reads its commit at once
    for t in threads:
        t.join()
    assert errors == []
    assert all(0 <= s <= 10 for s in seen)
    assert total(store) == 10


@pytest.mark.req("engram.store.read-only")
def test_a_closed_store_refuses_reads_and_writes(store: Store) -> None:
    assert total(store) == 0
    store.close()
    with pytest.raises(StoreError, match="closed"), store.read():
        pass
    with pytest.raises(StoreError, match="closed"), store.transaction():
        pass
