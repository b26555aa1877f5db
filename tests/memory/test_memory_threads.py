"""One engine shared by threads, as the MCP server and ``engram serve`` share it: recall loads
and reads the in-process index under the engine's own lock, and concurrent outcomes with one
decision_id stay one event. On every backend."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

import pytest

from engram.core.clock import FixedClock
from engram.memory import (
    MemoryEngine,
    OteSpec,
    OutcomeResult,
    RecallResult,
    RecordInput,
    get_memory,
    open_engine,
    outcome,
    recall,
    record,
    record_many,
)
from engram.store import Store

T = TypeVar("T")
THREADS = 6


def together(call: Callable[[], T]) -> list[T]:
    """Run ``call`` on THREADS threads released at the same instant; re-raise any failure."""
    barrier = threading.Barrier(THREADS)
    results: list[T] = []
    failures: list[BaseException] = []

    def run() -> None:
        barrier.wait()
        try:
            results.append(call())
        except BaseException as e:  # handed back to the test thread below
            failures.append(e)

    threads = [threading.Thread(target=run) for _ in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        raise failures[0]
    return results


@pytest.mark.req("engram.memory.engine-thread-safe")
def test_threads_sharing_a_fresh_engine_load_its_index_once_and_agree(
    any_store: Store, spec: OteSpec, engine: MemoryEngine
) -> None:
    record_many(
        engine,
        [
            RecordInput(text=f"note {i} on widget {i % 50} and the gadget", kind="fact")
            for i in range(2000)
        ],
    )
    shared = open_engine(any_store, spec, FixedClock())  # its index is still empty
    results: list[RecallResult] = together(lambda: recall(shared, "widget gadget", k=20))
    assert len(shared.index) == 2000  # loaded once, not once per thread
    slates = {tuple(h.memory.id for h in r.hits) for r in results}
    assert len(slates) == 1
    (slate,) = slates
    assert len(slate) == len(set(slate)) == 20


@pytest.mark.req("engram.memory.engine-thread-safe", "engram.memory.outcome-decision-idempotent")
def test_concurrent_outcomes_with_one_decision_id_are_one_event(engine: MemoryEngine) -> None:
    m = record(engine, "retried from many workers", "fact").memory
    results: list[OutcomeResult] = together(
        lambda: outcome(engine, m.id, "tests_pass", "run-42#verdict")
    )
    assert sorted(r.duplicate for r in results) == [False] + [True] * (THREADS - 1)
    assert {(r.alpha, r.beta) for r in results} == {(2.0, 1.0)}
    assert get_memory(engine, m.id).alpha == 2.0  # type: ignore[union-attr]
