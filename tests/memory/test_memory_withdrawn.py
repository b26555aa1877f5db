"""Withdrawn memories are kept and never recalled; a seat view recalls another manifest's rings
on the same index (engram.memory._withdrawn, _view; docs/spec/memory-retrieval.md)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from engram.memory import (
    MemoryEngine,
    export_memories,
    outcome,
    recall,
    record,
    reinstate,
    withdraw,
)
from engram.memory.internals import seat_view


@pytest.mark.req("engram.memory.withdrawn-not-recalled")
def test_a_withdrawn_memory_keeps_its_evidence_and_is_not_recalled(engine: MemoryEngine) -> None:
    wrong = record(engine, "The staging database is called orion", "fact", "M4").memory
    right = record(engine, "The staging database is called vega", "fact", "M4").memory
    outcome(engine, wrong.id, "tests_pass", decision_id="ci-1")
    assert {h.memory.id for h in recall(engine, "staging database").hits} == {wrong.id, right.id}
    assert withdraw(engine, [wrong.id], "retracted by the user") == 1
    assert withdraw(engine, [wrong.id], "again") == 0  # already out
    assert [h.memory.id for h in recall(engine, "staging database orion").hits] == [right.id]
    [kept] = [r for r in export_memories(engine.store, wrong.ring_id) if r.memory.id == wrong.id]
    assert [e["decision_id"] for e in kept.events] == ["ci-1"]  # nothing was deleted
    assert reinstate(engine, [wrong.id, right.id]) == 1  # only the withdrawn one counts
    assert wrong.id in {h.memory.id for h in recall(engine, "staging database orion").hits}


@pytest.mark.req("engram.memory.withdrawn-not-recalled")
def test_a_seat_view_recalls_exactly_its_own_rings(engine: MemoryEngine) -> None:
    mine = record(engine, "Deploys need a green build", "fact", "M4").memory
    team = record(engine, "Deploys go out on Tuesdays", "fact", "M3").memory
    only_team = replace(engine.spec, mounts=tuple(m for m in engine.spec.mounts if m.ring == "M3"))
    view = seat_view(engine, only_team)
    assert view.index is engine.index  # the same index: nothing is loaded again
    assert [h.memory.id for h in recall(view, "deploys").hits] == [team.id]
    assert {h.memory.id for h in recall(engine, "deploys").hits} == {mine.id, team.id}


@pytest.mark.req("engram.store.migrations-at-roots")
def test_withdraw_and_reinstate_never_migrate(
    engine: MemoryEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Opening the engine (the composition root) created the table; the calls only use it.
    assert engine.store.schema_versions().get("memory-withdrawn") == 1
    memory = record(engine, "The lab opens at nine", "fact", "M4").memory

    def refuse(*_: object) -> list[tuple[str, int, str]]:
        raise AssertionError("a domain call migrated")

    monkeypatch.setattr(engine.store, "migrate", refuse)
    assert withdraw(engine, [memory.id], "retracted by the user") == 1
    assert not recall(engine, "lab opens nine").hits
    assert reinstate(engine, [memory.id]) == 1
    assert [h.memory.id for h in recall(engine, "lab opens nine").hits] == [memory.id]
