"""``import_memories`` merges a whole batch at once (one existence query per 500 ids, one insert
for the rows and one for the vectors): duplicates inside the batch, memories already present and
repeated events still count and merge exactly as a record-by-record merge would."""

from __future__ import annotations

from typing import Any

import pytest

from engram.core.canonical import canonicalize, parse_strict
from engram.core.clock import FixedClock
from engram.memory import (
    OteSpec,
    export_memories,
    get_memory,
    import_memories,
    open_engine,
    outcome,
    recall,
    record,
)
from engram.memory.internals import indexed_local_vector, local_vector
from engram.store import Store, open_store


def _parsed(data: bytes | str) -> dict[str, Any]:
    # Strictly parsed and checked to be an object; the test then walks it freely.
    value = parse_strict(data)
    assert isinstance(value, dict)
    return value


def _exported(spec: OteSpec, count: int) -> list[dict[str, Any]]:
    """``count`` memories recorded in another store, two with outcomes, exported as JSON."""
    other = open_store("memory://")
    engine = open_engine(other, spec, FixedClock())
    ids = [
        record(
            engine, f"runbook step {i}: drain node {i % 13} before the upgrade", "fact"
        ).memory.id
        for i in range(count)
    ]
    outcome(engine, ids[0], "tests_pass", "run-1")
    outcome(engine, ids[1], "tests_fail", "run-2")
    ring = engine.spec.mount_for("M4").ring_id  # type: ignore[union-attr]
    records = [_parsed(canonicalize(r.to_wire())) for r in export_memories(other, ring)]
    other.close()
    return records


@pytest.mark.req("engram.memory.portable-roundtrip")
def test_a_batch_with_duplicates_and_present_memories_merges_once(
    any_store: Store, spec: OteSpec
) -> None:
    records = _exported(spec, 1200)  # more than one 500-id existence query
    first = import_memories(any_store, records[:700])
    assert first.to_wire() == {
        "imported": 700,
        "already_present": 0,
        "events_added": 2,
        "held": 0,
        "erased_here": 0,
    }

    # records 0-699 are present, 700-1199 new, and 700 and 0 appear twice in this batch
    batch = [*records, records[700], records[0]]
    second = import_memories(any_store, batch)
    assert second.to_wire() == {
        "imported": 500,
        "already_present": 702,
        "events_added": 0,
        "held": 0,
        "erased_here": 0,
    }

    engine = open_engine(any_store, spec, FixedClock())
    m0 = get_memory(engine, records[0]["memory"]["id"])
    m1 = get_memory(engine, records[1]["memory"]["id"])
    assert m0 is not None
    assert m1 is not None
    assert (m0.alpha, m0.beta, m1.alpha, m1.beta) == (2.0, 1.0, 1.0, 2.0)
    with any_store.read() as tx:
        assert tx.scalar("SELECT COUNT(*) FROM memory_items") == 1200
        rows = tx.execute("SELECT id, text FROM memory_items ORDER BY n")
    assert [r["text"] for r in rows] == [r["memory"]["text"] for r in records]
    for r in rows[::97]:  # re-indexed here, bit for bit what a single recording computes
        stored = indexed_local_vector(engine, r["id"])
        assert stored is not None
        assert stored.tobytes() == local_vector(r["text"]).tobytes()
    hits = recall(engine, "drain node 7 before the upgrade", k=3).hits
    assert all("drain node 7 " in h.memory.text for h in hits)
