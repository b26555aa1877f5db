"""Author and entity awareness (docs/spec/memory-retrieval.md "Authors and entities"): a query
that names a memory's author (provenance ``author`` / ``speaker``) or one of its entities
(the seat's entity_patterns) lifts the memories that carry it. The corpus is our own: an
engineering team's notes, where several people say much the same things.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest

from engram.memory import MemoryEngine, RecordInput, recall, record_many
from engram.memory.internals import DEFAULT_TUNING

NOTES = [
    ("Priya", "I think the flaky integration tests come from the shared database fixture."),
    ("Marcus", "I think the flaky integration tests come from the clock in the retry loop."),
    ("Priya", "The deploy pipeline should pin the base image digest, not the tag."),
    ("Marcus", "The deploy pipeline should run the smoke tests before the canary."),
    ("Jane Doe", "The deploy pipeline should page the owner when the canary fails."),
    ("Priya", "Our on-call rotation needs a second person on weekends."),
    ("Marcus", "Our on-call rotation should hand over with a written summary."),
    ("Jane Doe", "I think the flaky integration tests come from leaked temp directories."),
]
DECISIONS = [
    "ADR-0042 moved the session store from memcached to the database.",
    "ADR-0017 chose gRPC for the internal billing calls.",
    "ADR-0042 was revisited: the session store keeps its one-hour expiry.",
    "The billing calls keep their retries at three (see the incident review).",
    "The session store is read on every request, so its latency matters.",
]


def _record(engine: MemoryEngine) -> None:
    items = [
        RecordInput(text, "fact", "M2", provenance={"author": who}, thread="standup")
        for who, text in NOTES
    ]
    items += [RecordInput(text, "decision", "M2") for text in DECISIONS]
    record_many(engine, items)


@pytest.mark.req("engram.memory.recall-authors")
def test_a_query_naming_an_author_lifts_that_authors_memories(
    make_engine: Callable[..., MemoryEngine],
) -> None:
    engine = make_engine()
    _record(engine)
    for who in ("Priya", "Marcus", "Jane Doe"):
        hits = recall(engine, f"what does {who} think about the flaky integration tests?", k=1).hits
        assert hits[0].memory.author == who
        assert hits[0].components["entity"] > 0
    # Without the boost the three near-identical notes tie on words; the name decides nothing.
    plain = replace(DEFAULT_TUNING, w_author=0.0, w_entity=0.0)
    tops = {
        recall(
            engine, f"what does {who} think about the flaky integration tests?", k=1, tuning=plain
        )
        .hits[0]
        .memory.author
        for who in ("Priya", "Marcus", "Jane Doe")
    }
    assert len(tops) < 3


@pytest.mark.req("engram.memory.recall-entities")
def test_a_query_naming_an_entity_lifts_the_memories_that_carry_it(
    make_engine: Callable[..., MemoryEngine],
) -> None:
    engine = make_engine()  # the default manifest's entity_patterns include ADR-\d{4}
    _record(engine)
    hits = recall(engine, "why did the session store change in ADR-0042", k=2).hits
    assert {h.memory.text for h in hits} == {DECISIONS[0], DECISIONS[2]}
    assert all("ADR-0042" in h.memory.entities for h in hits)
    assert all(h.components["entity"] > 0 for h in hits)
    # A name nobody carries changes nothing: no boost column at all.
    other = recall(engine, "what did Zoltan say about the billing calls", k=3)
    assert all("entity" not in h.components for h in other.hits)
