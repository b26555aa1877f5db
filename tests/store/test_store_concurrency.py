"""Concurrent writers (threads) and concurrent migrate() (processes) on every backend."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from engram.core.canonical import parse_strict
from engram.store import Component, Migration, Store, open_store
from engram.store.internals import applied_migrations


def _parsed_list(data: bytes | str) -> list[Any]:
    # Strictly parsed and checked to be an array; the test then walks it freely.
    value = parse_strict(data)
    assert isinstance(value, list)
    return value


COUNTER = Component(
    "counter",
    [
        Migration(
            1,
            "counter",
            lambda _d: [
                "CREATE TABLE counter (name TEXT PRIMARY KEY, n INTEGER NOT NULL)",
                "CREATE TABLE event (id INTEGER PRIMARY KEY, worker INTEGER NOT NULL)",
                "INSERT INTO counter (name, n) VALUES ('hits', 0)",
            ],
        )
    ],
)

THREADS = 4
ROUNDS = 25


def run_together(workers: int, job: Callable[[int], object]) -> list[object]:
    """Run ``job(i)`` on ``workers`` threads released at the same moment by a barrier."""
    barrier = threading.Barrier(workers)

    def start(i: int) -> object:
        barrier.wait()
        return job(i)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(start, range(workers)))


@pytest.mark.req("engram.store.concurrent-writers")
def test_concurrent_writers_lose_no_update(any_store: Store) -> None:
    any_store.migrate(COUNTER)

    def work(worker: int) -> object:
        for i in range(ROUNDS):
            with any_store.transaction() as tx:
                tx.execute("UPDATE counter SET n = n + 1 WHERE name = ?", ("hits",))
                tx.execute(
                    "INSERT INTO event (id, worker) VALUES (?, ?)", (worker * 1000 + i, worker)
                )
        return worker

    run_together(THREADS, work)
    with any_store.read() as tx:
        assert tx.scalar("SELECT n FROM counter WHERE name = ?", ("hits",)) == THREADS * ROUNDS
        assert tx.scalar("SELECT COUNT(*) FROM event") == THREADS * ROUNDS


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def shared_store(request: pytest.FixtureRequest) -> Store:
    """A backend where a reader and a writer run at once (memory:// runs one at a time)."""
    name = {"sqlite": "sqlite_store", "postgresql": "postgres_store"}[request.param]
    store: Store = request.getfixturevalue(name)
    return store


@pytest.mark.req("engram.store.concurrent-writers", "engram.store.read-only")
def test_a_reader_sees_a_consistent_snapshot_while_a_writer_commits(shared_store: Store) -> None:
    shared_store.migrate(COUNTER)
    with shared_store.read() as tx:
        before = tx.scalar("SELECT n FROM counter")
        writer = threading.Thread(target=lambda: bump(shared_store))
        writer.start()
        writer.join()
        assert tx.scalar("SELECT n FROM counter") == before  # same snapshot inside read()
    with shared_store.read() as tx:
        assert tx.scalar("SELECT n FROM counter") == before + 1


def bump(store: Store) -> None:
    with store.transaction() as tx:
        tx.execute("UPDATE counter SET n = n + 1")


MIGRATE_SCRIPT = """
import sys
from engram.core.jsonio import dumps_text
from engram.store import Component, Migration, open_store

steps = [
    Migration(v, f"step {v}", lambda _d, v=v: [f"CREATE TABLE race_{v} (id INTEGER PRIMARY KEY)"])
    for v in range(1, 7)
]
store = open_store(sys.argv[1])
try:
    applied = store.migrate(Component("race", steps))
finally:
    store.close()
print(dumps_text([[c, v, n] for c, v, n in applied]))
"""


@pytest.mark.req("engram.store.migrations-concurrent")
def test_migrate_from_several_processes_applies_each_step_once(any_database_url: str) -> None:
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", MIGRATE_SCRIPT, any_database_url],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    outputs = [p.communicate(timeout=120) for p in processes]
    for process, (_, err) in zip(processes, outputs, strict=True):
        assert process.returncode == 0, err
    applied = [tuple(step) for out, _ in outputs for step in _parsed_list(out)]
    assert sorted(applied) == [("race", v, f"step {v}") for v in range(1, 7)]
    store = open_store(any_database_url)
    try:
        assert store.schema_versions() == {"race": 6}
        history = applied_migrations(store)
        assert [h.version for h in history] == [1, 2, 3, 4, 5, 6]
    finally:
        store.close()
