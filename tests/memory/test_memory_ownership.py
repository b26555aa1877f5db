"""Whose memory, at the engine: subject rings, isolation, forget / restore / erase, history.

On every backend (memory, SQLite, PostgreSQL). The HTTP-only peer in tests/ownership drives the
same through ``engram serve``; here each rule is pinned where it is decided.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from engram.errors import Forbidden, ResourceNotFound
from engram.memory import (
    MemoryEngine,
    complete,
    forget,
    get_memory,
    history,
    outcome,
    recall,
    record,
    restore,
    status,
    subject_view,
)
from engram.store import Store
from engram.transfer import erase_memories, erase_subject_memories, export_pam, import_pam

ALICE, BOB = "11111111-aaaa-4aaa-8aaa-111111111111", "22222222-bbbb-4bbb-8bbb-222222222222"


def _ids(engine: MemoryEngine, query: str, k: int = 10) -> list[str]:
    return [h.memory.id for h in recall(engine, query, k).hits]


def _ring_counts(engine: MemoryEngine) -> dict[str, int]:
    return {str(r["ring_id"]): int(str(r["memories"])) for r in status(engine).rings}


@pytest.mark.req("engram.memory.owner.subject-ring", "engram.memory.owner.shared-read-only")
def test_a_subject_records_into_their_own_ring_and_reads_the_shared_ones(
    engine: MemoryEngine,
) -> None:
    team = record(engine, "Deploys freeze on Fridays after 15:00.", "decision", "M3").memory
    seat_note = record(engine, "The seat's own note about nobody.", "decision").memory
    alice = subject_view(engine, ALICE)

    mine = record(alice, "I deploy only on Mondays.", "decision").memory

    assert (mine.ring, mine.ring_id) == ("M4", f"subject:{ALICE}")
    assert [m.ring_id for m in alice.spec.mounts if m.writable] == [f"subject:{ALICE}"]
    assert _ids(alice, "deploys freeze Fridays")[0] == team.id  # shared knowledge is read
    assert seat_note.id not in _ids(alice, "seat's own note nobody")  # the seat's M4 is not
    with pytest.raises(Forbidden, match="shared knowledge, read-only"):
        record(alice, "Put this in the team ring.", "decision", "M3")
    with pytest.raises(Forbidden, match="read-only"):
        forget(alice, [team.id], actor="test")


@pytest.mark.req(
    "engram.memory.owner.isolation", "engram.memory.owner.not-found", "engram.memory.history"
)
def test_nothing_of_one_subject_reaches_another(engine: MemoryEngine) -> None:
    alice, bob = subject_view(engine, ALICE), subject_view(engine, BOB)
    text = "My bank PIN hint is the heron from Lake Wyvernmere."
    a = record(alice, text, "decision").memory
    b = record(bob, text, "decision")  # the same words: another memory, and nothing revealed

    assert b.created is True
    assert b.memory.id != a.id
    assert _ids(bob, "bank PIN hint heron Wyvernmere") == [b.memory.id]  # Bob's ring: one
    assert _ring_counts(bob)[f"subject:{BOB}"] == 1
    assert f"subject:{ALICE}" not in _ring_counts(bob)
    assert get_memory(bob, a.id) is None
    calls: list[Callable[[], object]] = [
        lambda: outcome(bob, a.id, "tests_pass", "d1"),
        lambda: complete(bob, a.id),
        lambda: forget(bob, [a.id], actor="bob"),
        lambda: erase_memories(bob, [a.id], actor="bob"),
        lambda: history(bob, a.id),
        lambda: restore(bob, [a.id], actor="bob"),
    ]
    for call in calls:
        with pytest.raises(ResourceNotFound) as refused:
            call()
        assert refused.value.message == f"no memory {a.id!r}"  # as for an id never recorded
    # The seat itself (CLI with no subject) does not see into a subject's ring either.
    assert get_memory(engine, a.id) is None
    with pytest.raises(ResourceNotFound):
        outcome(engine, a.id, "tests_pass", "d2")
    assert [e.event for e in history(alice, a.id).entries] == ["recorded"]


@pytest.mark.req("engram.memory.forget", "engram.memory.restore", "engram.memory.history")
def test_forget_and_restore_are_reversible_idempotent_and_recorded(engine: MemoryEngine) -> None:
    alice = subject_view(engine, ALICE)
    memories = [
        record(alice, f"Alice's note {i} about the garden shed roof.", "decision").memory
        for i in range(5)
    ]
    gone = memories[0].id

    first = forget(alice, [gone], actor="token:t1", reason="user said so")
    second = forget(alice, [gone], actor="token:t1")

    assert (first[0].changed, first[0].state, second[0].changed) == (True, "forgotten", False)
    hits = _ids(alice, "garden shed roof note", k=4)
    assert gone not in hits
    assert len(hits) == 4  # a forgotten memory takes no place of k
    assert _ring_counts(alice)[f"subject:{ALICE}"] == 4
    assert status(alice).rings[-1]["forgotten"] == 1
    assert restore(alice, [gone], actor="cli:me")[0].changed is True
    assert restore(alice, [gone], actor="cli:me")[0].changed is False
    assert gone in _ids(alice, "garden shed roof note")
    entries = history(alice, gone).entries
    assert [(e.event, e.actor, e.detail) for e in entries[1:]] == [
        ("forgotten", "token:t1", "user said so"),
        ("restored", "cli:me", ""),
    ]
    assert history(alice, gone).state == "active"


@pytest.mark.req(
    "engram.memory.erase", "engram.memory.erase.repeat", "engram.memory.erase.references"
)
def test_erase_takes_the_words_and_keeps_a_tombstone(engine: MemoryEngine) -> None:
    alice = subject_view(engine, ALICE)
    keep = record(alice, "Alice keeps bees on the allotment.", "decision").memory
    doomed = record(alice, "Alice's passport ends in 7731-KESTREL.", "decision").memory
    outcome(alice, doomed.id, "tests_pass", "run-1", weight=3)
    forget(alice, [doomed.id], actor="t", reason="passport 7731-KESTREL")

    done = erase_memories(alice, [doomed.id], actor="token:t9")
    repeat = erase_memories(alice, [doomed.id], actor="token:t9")

    assert (done[0].changed, done[0].state) == (True, "erased")
    assert (repeat[0].changed, repeat[0].state) == (False, "erased")
    assert forget(alice, [doomed.id], actor="t")[0].state == "erased"
    assert get_memory(alice, doomed.id) is None
    assert _ids(alice, "passport KESTREL allotment bees") == [keep.id]  # all that is left
    report = status(alice)
    assert _ring_counts(alice)[f"subject:{ALICE}"] == 1
    assert report.oracle_split == {}  # its outcome events went with it
    assert complete(alice).verdicts[0].memory_id == keep.id
    erased = history(alice, doomed.id)
    assert erased.state == "erased"
    assert [e.event for e in erased.entries] == ["forgotten", "erased"]
    assert "KESTREL" not in str(erased.to_wire())  # the reason quoted it: gone too
    with engine.store.read() as tx:
        stone = tx.one("SELECT * FROM memory_erased WHERE memory_id = ?", (doomed.id,))
        rows = tx.scalar("SELECT COUNT(*) FROM memory_items WHERE id = ?", (doomed.id,))
    assert stone is not None
    assert len(stone["content_sha256"]) == 64
    assert rows == 0


@pytest.mark.req("engram.memory.erase")
def test_after_an_erase_no_file_of_the_store_holds_the_words(
    sqlite_store: Store, spec: object, tmp_path: Path
) -> None:
    from engram.core.clock import FixedClock
    from engram.memory import OteSpec, open_engine

    assert isinstance(spec, OteSpec)
    engine = open_engine(sqlite_store, spec, FixedClock())
    alice = subject_view(engine, ALICE)
    for i in range(300):  # enough pages and WAL frames that a leftover would show
        record(alice, f"Filler memory {i} about the weather in the valley.", "decision")
    doomed = record(alice, "Alice hid the spare key under the Quernstone gnome.", "decision")
    recall(alice, "spare key gnome")  # the index holds it now
    folder = Path(str(getattr(sqlite_store, "path"))).parent  # noqa: B009 - not on Store

    def holders(needle: bytes) -> list[str]:
        return [p.name for p in folder.rglob("*") if p.is_file() and needle in p.read_bytes()]

    assert holders(b"Quernstone")  # the search can find it before the erase
    erase_memories(alice, [doomed.memory.id], actor="t")
    assert holders(b"Quernstone") == []
    assert holders(b"quernston") == []  # the index's stemmed term too


@pytest.mark.req("engram.memory.erase.import")
def test_a_pam_import_of_an_erased_memory_reports_it_and_brings_nothing_back(
    engine: MemoryEngine,
) -> None:
    alice = subject_view(engine, ALICE)
    doomed = record(alice, "Alice's old address was 4 Quernstone Lane.", "decision").memory
    record(alice, "Alice likes quiet trains.", "decision")
    document = export_pam(alice).document
    erase_memories(alice, [doomed.id], actor="t")

    again = import_pam(alice, document)

    assert again.erased == 1
    assert again.to_wire()["erased_here"] == 1
    assert get_memory(alice, doomed.id) is None
    assert doomed.id not in _ids(alice, "old address Quernstone Lane quiet trains")
    with engine.store.read() as tx:
        assert tx.scalar("SELECT COUNT(*) FROM pam_memories WHERE memory_id = ?", (doomed.id,)) == 0


@pytest.mark.req("engram.memory.erase.concurrent")
def test_concurrent_erases_of_one_memory_have_one_outcome_recorded_once(
    engine: MemoryEngine,
) -> None:
    alice = subject_view(engine, ALICE)
    target = record(alice, "Alice's locker code is 5512.", "decision").memory
    results: list[bool] = []
    barrier = threading.Barrier(4)

    def erase_it() -> None:
        barrier.wait()
        results.append(erase_memories(alice, [target.id], actor="racer")[0].changed)

    threads = [threading.Thread(target=erase_it) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert sorted(results) == [False, False, False, True]
    assert [e.event for e in history(alice, target.id).entries] == ["erased"]


@pytest.mark.req("engram.memory.subject-delete")
def test_erasing_a_subjects_memories_leaves_the_others(engine: MemoryEngine) -> None:
    alice, bob = subject_view(engine, ALICE), subject_view(engine, BOB)
    for i in range(7):
        record(alice, f"Alice memory {i} on the lighthouse.", "decision")
    kept = record(bob, "Bob memory on the lighthouse.", "decision").memory

    assert erase_subject_memories(engine, ALICE, actor="cli:admin") == 7

    assert _ids(alice, "lighthouse memory") == []
    assert _ids(bob, "lighthouse memory") == [kept.id]
    assert _ring_counts(alice)[f"subject:{ALICE}"] == 0
