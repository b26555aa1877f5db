"""Recall and time: queries that name a time favour memories of that time, "now" serves the
superseding memory and "before" finds the one it replaced (engram.memory._recall.time_intent,
time_prior; docs/spec/memory-retrieval.md "Time and updates").

The texts are diary-like notes written for these tests (not LoCoMo). The engine's clock is the
recall instant: FixedClock's 2026-01-01 10:00 UTC, a Thursday.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from engram.core.canonical import Json
from engram.core.clock import FixedClock
from engram.memory import (
    MemoryEngine,
    RecordInput,
    Tuning,
    recall,
    record_many,
    supersede,
    withdraw,
)
from engram.memory.internals import DEFAULT_TUNING, time_intent

LATEST, EARLIEST = "latest", "earliest"
MAX_QUERY = 4_000  # characters of a query read (docs/spec/memory-retrieval.md)

NOW = datetime(2026, 1, 1, 10, 0, tzinfo=UTC)


def _at(day: str) -> dict[str, Json]:
    return {"occurred_at": f"{day}T12:00:00Z"}


def _texts(engine: MemoryEngine, query: str, k: int = 10) -> list[str]:
    return [h.memory.text for h in recall(engine, query, k=k).hits]


def _record(engine: MemoryEngine, notes: list[tuple[str, str]]) -> None:
    record_many(engine, [RecordInput(t, "episode", "M4", _at(day)) for t, day in notes])


@pytest.mark.req("engram.memory.recall-time-intent")
@pytest.mark.parametrize(
    ("query", "start", "end"),
    [
        ("what did I do yesterday", "2025-12-31", "2026-01-01"),
        ("lunch last week", "2025-12-22", "2025-12-29"),
        ("notes from this week", "2025-12-29", None),
        ("the trip in March 2024", "2024-03-01", "2024-04-01"),
        ("what happened in March", "2025-03-01", "2025-04-01"),  # the latest March
        ("standup on 2024-03-05", "2024-03-05", "2024-03-06"),
        ("dinner on 5 March 2024", "2024-03-05", "2024-03-06"),
        ("dinner on March 5th, 2024", "2024-03-05", "2024-03-06"),
        ("what was said 3 days ago", "2025-12-29", "2025-12-30"),
        ("books read in the past 2 months", "2025-11-01", None),
        ("anything in 2024", "2024-01-01", "2025-01-01"),
        ("before 5 March 2024", None, "2024-03-05"),
        ("Was habe ich gestern gekauft", "2025-12-31", "2026-01-01"),
        ("qu'est-ce que j'ai fait la semaine dernière", "2025-12-22", "2025-12-29"),
    ],
)
def test_a_named_time_is_read_as_a_window_at_the_recall_instant(
    query: str, start: str | None, end: str | None
) -> None:
    intent = time_intent(query, NOW)
    assert intent is not None
    assert intent.start == (None if start is None else datetime.fromisoformat(start + "T00:00Z"))
    if end is None:
        assert intent.end is None or intent.end == NOW
    else:
        assert intent.end == datetime.fromisoformat(end + "T00:00Z")


@pytest.mark.req("engram.memory.recall-time-intent")
def test_orderings_previous_and_events_are_read_and_plain_queries_have_no_intent() -> None:
    assert time_intent("what is my latest phone number", NOW).order == LATEST  # type: ignore[union-attr]
    assert time_intent("where do I live now", NOW).order == LATEST  # type: ignore[union-attr]
    assert time_intent("my first car", NOW).order == EARLIEST  # type: ignore[union-attr]
    before = time_intent("where did I live before?", NOW)
    assert before is not None
    assert before.previous
    event = time_intent("where did we live before the move", NOW)
    assert event is not None
    assert (event.event, event.event_side, event.previous) == ("move", "before", False)
    for plain in ("how old is my dog", "I may go to the march", "where do I live", "Kaffee"):
        assert time_intent(plain, NOW) is None, plain


@pytest.mark.req("engram.memory.recall-time-intent")
def test_a_window_favours_the_memories_that_happened_then(engine: MemoryEngine) -> None:
    _record(
        engine,
        [
            ("Lunch with Dana: noodles", "2025-12-23"),  # last week
            ("Lunch with Dana at the taco place, Dana loved the lunch", "2025-11-10"),
            ("Lunch with Dana at the pizza shop, a long lunch with Dana", "2025-12-31"),
        ],
    )
    assert not _texts(engine, "lunch with Dana")[0].endswith("noodles")  # relevance alone
    assert _texts(engine, "lunch with Dana last week")[0].endswith("noodles")
    assert _texts(engine, "lunch with Dana yesterday")[0].startswith("Lunch with Dana at the pizza")
    assert "taco" in _texts(engine, "lunch with Dana in November 2025")[0]
    hits = recall(engine, "lunch with Dana last week").hits
    assert all("time" in h.components for h in hits)
    assert all("time" not in h.components for h in recall(engine, "lunch with Dana").hits)


@pytest.mark.req("engram.memory.recall-time-intent")
def test_without_occurred_at_the_recording_time_counts(
    engine: MemoryEngine, clock: FixedClock
) -> None:
    start = clock.current
    clock.current = start - timedelta(days=5)
    record_many(engine, [RecordInput("Bought bread and cheese at the market", "episode", "M4")])
    clock.current = start - timedelta(days=1)
    record_many(engine, [RecordInput("Bought milk at the market", "episode", "M4")])
    clock.current = start
    assert (
        _texts(engine, "what did I buy at the market yesterday")[0] == "Bought milk at the market"
    )
    assert _texts(engine, "what did I buy at the market 5 days ago")[0].startswith("Bought bread")


@pytest.mark.req("engram.memory.recall-time-intent")
def test_latest_and_first_order_equally_relevant_memories(engine: MemoryEngine) -> None:
    _record(
        engine,
        [
            ("Dana's phone number is 555-0101", "2023-04-01"),
            ("Dana's phone number is 555-0142", "2024-04-01"),
            ("Dana's phone number is 555-0199", "2025-04-01"),
        ],
    )
    assert _texts(engine, "Dana's latest phone number")[0].endswith("0199")
    assert _texts(engine, "Dana's most recent phone number")[0].endswith("0199")
    assert _texts(engine, "Dana's first phone number")[0].endswith("0101")


@pytest.mark.req("engram.memory.recall-time-updates")
def test_now_serves_the_superseding_memory_and_before_finds_the_old_one(
    engine: MemoryEngine,
) -> None:
    [old] = record_many(engine, [RecordInput("I live in Paris, in a flat", "fact", "M4")])
    supersede(
        engine, old.memory.id, RecordInput("I live in Leeds, in a house", "fact", "M4"), actor="me"
    )
    now = _texts(engine, "where do I live now")
    assert now[0] == "I live in Leeds, in a house"
    assert "I live in Paris, in a flat" not in now
    for question in ("where did I live before", "where did I live previously", "my old home"):
        assert _texts(engine, question)[0] == "I live in Paris, in a flat", question
    # Forgotten memories stay out even when the question looks back.
    [gone] = record_many(engine, [RecordInput("I live in Rome, briefly", "fact", "M4")])
    withdraw(engine, [gone.memory.id], "forgotten")
    assert "I live in Rome, briefly" not in _texts(engine, "where did I live before")


@pytest.mark.req("engram.memory.recall-time-intent")
def test_before_an_event_favours_what_happened_before_it(engine: MemoryEngine) -> None:
    _record(
        engine,
        [
            ("The flat had a tiny balcony over the canal", "2024-05-01"),
            ("We finally did the move to the new town", "2025-06-01"),
            ("The house has a balcony, a sunny balcony, and a garden", "2025-09-01"),
        ],
    )

    def flat_before_house(question: str, tuning: Tuning = DEFAULT_TUNING) -> bool:
        texts = [h.memory.text for h in recall(engine, question, tuning=tuning).hits]
        flat = next(i for i, t in enumerate(texts) if t.startswith("The flat"))
        return flat < next(i for i, t in enumerate(texts) if t.startswith("The house"))

    # Both balconies match the words equally; the one before (after) the move wins.
    question = "what was the balcony like before the move"
    assert not flat_before_house(question, Tuning(w_time_window=0.0))  # words alone
    assert flat_before_house(question)
    assert not flat_before_house("what was the balcony like after the move")


@pytest.mark.req("engram.memory.recall-time-intent")
def test_only_a_bounded_prefix_of_a_huge_query_is_read() -> None:
    assert time_intent("before the move last week " * 50_000, NOW) is not None
    # A time word past the first MAX_QUERY characters is never read: the work is bounded.
    assert time_intent("x" * MAX_QUERY + " yesterday", NOW) is None
    assert time_intent("x" * (MAX_QUERY - 20) + " yesterday", NOW) is not None


@pytest.mark.req("engram.memory.recall-time-intent")
def test_relative_times_are_read_against_as_of_when_given(
    engine: MemoryEngine, clock: FixedClock
) -> None:
    start = clock.current
    clock.current = datetime(2025, 6, 1, tzinfo=UTC)  # both recorded before either as_of
    _record(
        engine,
        [
            ("Swim practice at the lake, cold water", "2025-06-10"),
            ("Swim practice at the pool, warm water", "2025-06-14"),
        ],
    )
    clock.current = start

    def first(as_of: datetime) -> str:
        return recall(engine, "swim practice yesterday", as_of=as_of).hits[0].memory.text

    assert "pool" in first(datetime(2025, 6, 15, 9, tzinfo=UTC))
    assert "lake" in first(datetime(2025, 6, 11, 9, tzinfo=UTC))
