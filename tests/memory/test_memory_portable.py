"""Memories between stores (cartridges), held imported graduations, and the ring migration."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from memory_kit import ANCHOR, manifest_text, ssh_sign

from engram.core.canonical import canonicalize, parse_strict
from engram.core.clock import FixedClock
from engram.errors import DigestMismatch, InvalidRequest
from engram.memory import (
    MemoryEngine,
    MemoryRecord,
    complete,
    export_memories,
    forget,
    get_memory,
    import_memories,
    memory_id,
    migrate_rings,
    open_engine,
    outcome,
    parse_manifest,
    recall,
    record,
)
from engram.memory.internals import ATTESTATION_NAMESPACE, attestation_message, ring_memory_pages
from engram.store import Store, open_store


def _parsed(data: bytes | str) -> dict[str, Any]:
    # Strictly parsed and checked to be an object; the test then walks it freely.
    value = parse_strict(data)
    assert isinstance(value, dict)
    return value


def _graduated_elsewhere(tmp_path: Path, key: Path) -> list[dict[str, object]]:
    """A memory graduated in another store, exported as JSON (what a cartridge carries)."""
    other = open_store("memory://")
    spec = parse_manifest(manifest_text(ANCHOR), str(tmp_path / "o.toml"), tmp_path)
    engine = open_engine(other, spec, FixedClock())
    m = record(engine, "shared invariant from the other replica", "invariant", "M3").memory
    for i in range(22):
        message = attestation_message(m.id, f"s{i}", "sealed_test_pass", 1.0)
        outcome(
            engine,
            m.id,
            "sealed_test_pass",
            f"s{i}",
            channel="cli",
            attestation=ssh_sign(key, message, ATTESTATION_NAMESPACE, tmp_path),
        )
    assert complete(engine).verdicts[0].status_after == "graduated"
    records = [_parsed(canonicalize(r.to_wire())) for r in export_memories(other, "team:shared")]
    other.close()
    return records


@pytest.mark.req("engram.memory.portable-roundtrip", "engram.memory.graduation-import-held")
def test_an_imported_graduation_is_held_until_this_store_verifies_its_evidence(
    make_engine: Callable[..., MemoryEngine],
    any_store: Store,
    attestor: tuple[Path, str],
    tmp_path: Path,
) -> None:
    key, _ = attestor
    records = _graduated_elsewhere(tmp_path, key)
    assert records[0]["memory"]["status"] == "graduated"  # type: ignore[index]
    result = import_memories(any_store, records)
    assert result.to_wire() == {
        "imported": 1,
        "already_present": 0,
        "events_added": 22,
        "held": 1,
        "erased_here": 0,
    }
    assert import_memories(any_store, records).already_present == 1  # idempotent
    mid = records[0]["memory"]["id"]  # type: ignore[index]

    unanchored = make_engine()
    held = complete(unanchored, str(mid))
    assert held.verdicts[0].status_after == "held_import"
    engine = make_engine(ANCHOR)  # this store trusts alice too: the evidence verifies here
    memory = get_memory(engine, str(mid))
    assert memory is not None
    assert (memory.alpha, memory.beta, memory.origin) == (23.0, 1.0, "import")
    assert complete(engine, str(mid)).verdicts[0].status_after == "graduated"
    assert [h.memory.id for h in recall(engine, "shared invariant replica").hits] == [mid]


@pytest.mark.req("engram.memory.graduation-import-held")
def test_an_import_signed_by_a_key_this_store_does_not_trust_stays_held(
    make_engine: Callable[..., MemoryEngine],
    any_store: Store,
    attestor: tuple[Path, str],
    tmp_path: Path,
) -> None:
    key, _ = attestor
    records = _graduated_elsewhere(tmp_path, key)
    import_memories(any_store, records)
    (tmp_path / "attestors").write_text("# nobody\n")
    engine = make_engine(ANCHOR)
    mid = str(records[0]["memory"]["id"])  # type: ignore[index]
    verdict = complete(engine, mid).verdicts[0]
    assert verdict.status_after == "held_import"
    assert verdict.strong_samples == 0


@pytest.mark.req("engram.memory.portable-roundtrip")
def test_a_tampered_record_is_refused_whole(any_store: Store, engine: MemoryEngine) -> None:
    m = record(engine, "original text", "fact", "M2").memory
    exported = [r.to_wire() for r in export_memories(any_store, m.ring_id)]
    memory = exported[0]["memory"]
    assert isinstance(memory, dict)
    memory["text"] = "changed text"
    with pytest.raises(DigestMismatch):
        import_memories(any_store, exported)
    capped = [r.to_wire() for r in export_memories(any_store, m.ring_id)]
    capped[0]["events"] = [
        {
            "decision_id": "x",
            "seat_id": "seat:a",
            "signal": "rubric_accept",
            "created_at": "2026-01-01T00:00:00Z",
            "delta_alpha": 3.0,
            "delta_beta": 0.0,
        }
    ]
    with pytest.raises(InvalidRequest, match="breaks the cap"):
        import_memories(any_store, capped)


@pytest.mark.req("engram.memory.migrate-rings")
def test_migrate_rings_moves_canon_fleet_to_canon_shared_idempotently(
    any_store: Store,
    engine: MemoryEngine,
) -> None:
    old_id = memory_id("canon:fleet", "invariant", "never force-push main")
    dup_id = memory_id("canon:fleet", "invariant", "tests gate merges")
    records: list[dict[str, Any]] = []
    for mid, text in ((old_id, "never force-push main"), (dup_id, "tests gate merges")):
        records.append(
            {
                "memory": {
                    "id": mid,
                    "ring": "M0",
                    "ring_id": "canon:fleet",
                    "kind": "invariant",
                    "text": text,
                    "thread": "",
                    "seat_id": "seat:old",
                    "status": "candidate",
                    "created_at": "2025-01-01T00:00:00Z",
                },
                "events": [
                    {
                        "decision_id": "d1",
                        "seat_id": "seat:old",
                        "signal": "tests_pass",
                        "delta_alpha": 1.0,
                        "delta_beta": 0.0,
                        "created_at": "2025-01-01T00:00:00Z",
                    }
                ],
            }
        )
    # "tests gate merges" already exists under canon:shared: the old copy merges into it.
    shared_dup = memory_id("canon:shared", "invariant", "tests gate merges")
    records.append(
        {
            "memory": {**records[1]["memory"], "id": shared_dup, "ring_id": "canon:shared"},
            "events": [],
        }
    )
    import_memories(any_store, records)
    assert recall(engine, "force-push").hits == ()  # canon:fleet is not mounted
    first = migrate_rings(any_store)
    assert first.to_wire() == {"moved": 1, "merged": 1}
    assert migrate_rings(any_store).to_wire() == {"moved": 0, "merged": 0}
    hit = recall(engine, "force-push main").hits[0].memory
    assert hit.id == memory_id("canon:shared", "invariant", "never force-push main")
    assert (hit.ring_id, hit.alpha) == ("canon:shared", 2.0)
    merged = get_memory(engine, shared_dup)
    assert merged is not None
    assert merged.alpha == 2.0  # the old copy's event moved with it
    with any_store.read() as tx:
        assert tx.scalar("SELECT COUNT(*) FROM memory_items WHERE ring_id = 'canon:fleet'") == 0
        assert tx.scalar("SELECT COUNT(*) FROM memory_items") == 2


@pytest.mark.req("engram.cartridge.bounded-streaming", "engram.memory.portable-roundtrip")
def test_ring_pages_are_the_served_memories_in_export_order_and_imports_span_chunks(
    any_store: Store, engine: MemoryEngine
) -> None:
    """``ring_memory_pages`` (what a cartridge export reads) gives the ring's memories in
    ``export_memories``' order, page by page, less the forgotten; ``import_memories`` takes them
    as an iterator across several of its chunks and counts as it did for a list."""
    memories = [record(engine, f"paged memory {i}", "fact", "M2").memory for i in range(7)]
    ids, ring_id = [m.id for m in memories], memories[0].ring_id
    record(engine, "another ring's memory", "fact", "M3")
    forget(engine, [ids[3]], actor="test")
    pages = list(ring_memory_pages(any_store, ring_id, page=2))
    assert [len(p) for p in pages] == [2, 1, 2, 1]  # the second page held the forgotten one
    exported = [r.memory for r in export_memories(any_store, ring_id)]
    assert [m for page in pages for m in page] == [m for m in exported if m.id != ids[3]]
    # 4,500 memories: the import takes them through several of its chunks of 2,000.
    first = exported[0]
    texts = [f"chunked memory {i}" for i in range(4_500)]
    many = [
        MemoryRecord(replace(first, id=memory_id(ring_id, first.kind, t), text=t), ())
        for t in texts
    ]
    other = open_store("memory://")
    try:
        result = import_memories(other, iter(many[:3_000]))
        again = import_memories(other, (r.to_wire() for r in many))
        assert (result.imported, result.already_present) == (3_000, 0)
        assert (again.imported, again.already_present) == (1_500, 3_000)
    finally:
        other.close()
