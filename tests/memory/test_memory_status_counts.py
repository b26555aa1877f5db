"""``status`` answers from counts kept in the database (docs/spec/memory-epistemology.md
"Status"): it never takes the write lock, and the counts always equal what a full scan of the
rows says, whatever wrote them (record, outcome, complete, import, the ring move)."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from memory_kit import manifest_text

from engram.core.clock import FixedClock
from engram.memory import (
    MemoryEngine,
    RecordInput,
    complete,
    export_memories,
    import_memories,
    open_engine,
    outcome,
    parse_manifest,
    record,
    record_many,
    status,
)
from engram.store import Store, open_store


def _scan(store: Store, ring_ids: list[str]) -> dict[str, object]:
    """What status reports, computed the slow way from every row."""
    marks = ", ".join("?" for _ in ring_ids)
    with store.read() as tx:
        per = tx.execute(
            f"SELECT ring_id, status, COUNT(*) AS c FROM memory_items WHERE ring_id IN ({marks}) "  # noqa: S608
            "GROUP BY ring_id, status",
            ring_ids,
        )
        oracles = tx.execute(
            "SELECT o.oracle, COUNT(*) AS c FROM memory_outcomes o JOIN memory_items m "  # noqa: S608
            f"ON m.id = o.memory_id WHERE m.ring_id IN ({marks}) GROUP BY o.oracle",
            ring_ids,
        )
    return {
        "rings": {(r["ring_id"], r["status"]): int(r["c"]) for r in per},
        "oracles": {r["oracle"]: int(r["c"]) for r in oracles},
    }


def _reported(engine: MemoryEngine) -> dict[str, object]:
    report = status(engine)
    rings: dict[tuple[str, str], int] = {}
    for r in report.rings:
        for key, name in (
            ("candidates", "candidate"),
            ("graduated", "graduated"),
            ("held_imports", "held_import"),
        ):
            count, ring_id = r[key], r["ring_id"]
            assert isinstance(count, int)
            assert isinstance(ring_id, str)
            if count:
                rings[(ring_id, name)] = count
    return {"rings": rings, "oracles": dict(report.oracle_split)}


@pytest.mark.req("engram.memory.status-from-counts")
def test_status_counts_equal_a_full_scan_after_every_kind_of_write(
    any_store: Store, make_engine: Callable[..., MemoryEngine], tmp_path: Path
) -> None:
    engine = make_engine()
    ring_ids = list(engine.spec.ring_ids)
    results = record_many(
        engine,
        [
            RecordInput(f"fact number {i} about the cache", "fact", "M2" if i % 2 else "M4")
            for i in range(40)
        ],
    )
    record(engine, "fact number 3 about the cache", "fact", "M4")  # already there: no new count
    for i, r in enumerate(results[:10]):
        outcome(engine, r.memory.id, "tests_pass", f"d{i}")
        outcome(engine, r.memory.id, "rubric_accept", f"r{i}")
    outcome(engine, results[0].memory.id, "tests_pass", "d0")  # a duplicate decision: one event
    complete(engine)
    assert _reported(engine) == _scan(any_store, ring_ids)
    # Import the M2 ring into a second store: its counts follow too.
    other_store = open_store("memory://")
    other = open_engine(other_store, engine.spec, FixedClock())
    imported = import_memories(other_store, export_memories(any_store, ring_ids[2]))
    assert imported.imported == 20
    assert _reported(other) == _scan(other_store, ring_ids)
    other_store.close()


@pytest.mark.req("engram.memory.status-from-counts")
def test_status_never_waits_for_the_write_lock(tmp_path: Path) -> None:
    db = tmp_path / "engram.db"
    store = open_store(f"sqlite://{db}")
    spec = parse_manifest(manifest_text(), str(tmp_path / "ote.toml"), tmp_path)
    engine = open_engine(store, spec, FixedClock())
    record_many(engine, [RecordInput(f"memory {i}", "fact", "M2") for i in range(100)])
    store.close()
    # Another process's long import holds the write lock (stock sqlite3, BEGIN IMMEDIATE).
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("INSERT INTO memory_generation (id, appended, rebuilt) VALUES (2, 0, 0)")
    try:
        done: list[float] = []

        def run() -> None:
            started = time.perf_counter()
            s = open_store(f"sqlite://{db}")
            try:
                report = status(open_engine(s, spec, FixedClock()))
                assert sum(int(str(r["memories"])) for r in report.rings) == 100
                done.append(time.perf_counter() - started)
            finally:
                s.close()

        worker = threading.Thread(target=run)
        worker.start()
        worker.join(timeout=30)
        assert done, "status did not finish while another connection held the write lock"
        assert done[0] < 5  # the busy timeout is 10 s: status never came near it
    finally:
        holder.execute("ROLLBACK")
        holder.close()
