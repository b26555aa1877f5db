"""record_conversation: OpenAI chat messages become one memory per turn, with speaker, time and
thread; re-sending adds nothing; near-duplicates are stored once; bounds refuse before writing.

The conversations here are made up for these tests (a house move, a bike repair), not LoCoMo.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from engram.errors import EngramError, InvalidRequest
from engram.memory import (
    MemoryEngine,
    get_memory,
    recall,
    record_conversation,
)

CHAT: list[dict[str, Any]] = [
    {"role": "system", "content": "You are a helpful assistant."},
    {
        "role": "user",
        "name": "Ada",
        "content": "I moved to Leeds in March, near the canal.",
        "timestamp": "2026-03-14T09:30:00Z",
    },
    {
        "role": "assistant",
        "content": [{"type": "text", "text": "Congratulations on the move to Leeds!"}],
        "timestamp": "2026-03-14T09:30:05+00:00",
    },
    {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function"}]},
    {"role": "tool", "tool_call_id": "c1", "content": '{"weather": "rain"}'},
    {
        "role": "user",
        "name": "Ada",
        "content": [
            {"type": "text", "text": "My bike's rear derailleur keeps slipping."},
            {"type": "image_url", "image_url": {"url": "https://example.invalid/bike.png"}},
        ],
        "created_at": 1773480900,  # 2026-03-14T09:35:00Z, epoch seconds
    },
]


def _memories(engine: MemoryEngine) -> int:
    """How many memories the seat's rings hold, whatever their state."""
    with engine.store.read() as tx:
        return int(tx.scalar("SELECT COUNT(*) FROM memory_items") or 0)


@pytest.mark.req("engram.memory.conversation.turns")
def test_each_turn_becomes_a_memory_with_its_speaker_time_and_thread(
    engine: MemoryEngine,
) -> None:
    result = record_conversation(engine, CHAT, thread="ada-2026-03")
    assert result.counts() == {
        "messages": 6,
        "recorded": 3,
        "duplicate": 0,
        "near_duplicate": 0,
        "skipped": 3,
        "facts": 0,
    }
    reasons = {m.index: m.reason for m in result.messages if m.status == "skipped"}
    assert reasons == {0: "role system", 3: "no text", 4: "role tool"}
    recorded = [m for m in result.messages if m.status == "recorded"]
    memories = [get_memory(engine, str(m.memory_id)) for m in recorded]
    assert all(m is not None for m in memories)
    ada, reply, bike = (m for m in memories if m is not None)
    assert ada.text == "[14 Mar 2026, 09:30 UTC] Ada: I moved to Leeds in March, near the canal."
    assert ada.thread == reply.thread == bike.thread == "ada-2026-03"
    assert ada.kind == "episode"
    assert ada.provenance["speaker"] == "Ada"
    assert ada.provenance["role"] == "user"
    assert ada.provenance["occurred_at"] == "2026-03-14T09:30:00.000000Z"
    assert reply.provenance["speaker"] == "assistant"
    assert reply.provenance["occurred_at"] == "2026-03-14T09:30:05.000000Z"
    assert bike.provenance["occurred_at"] == "2026-03-14T09:35:00.000000Z"
    assert bike.text.endswith("Ada: My bike's rear derailleur keeps slipping.")  # image left out
    assert ada.author == "Ada"
    hits = recall(engine, "where did Ada move to?", 3).hits
    assert hits
    assert hits[0].memory.id == ada.id


@pytest.mark.req("engram.memory.conversation.dedupe")
def test_resending_the_same_conversation_adds_nothing(engine: MemoryEngine) -> None:
    first = record_conversation(engine, CHAT)
    before = _memories(engine)
    again = record_conversation(engine, CHAT)
    assert again.thread == first.thread
    assert again.thread.startswith("chat:")
    assert again.counts()["recorded"] == 0
    assert again.counts()["duplicate"] == 3
    assert _memories(engine) == before == 3
    # The same conversation with two more turns lands in the same thread; only those are new.
    longer = [
        *CHAT,
        {"role": "assistant", "content": "Try adjusting the B-limit screw."},
        {"role": "user", "name": "Ada", "content": "That fixed it, thanks."},
    ]
    grown = record_conversation(engine, longer)
    assert grown.thread == first.thread
    assert grown.counts()["recorded"] == 2
    assert grown.counts()["duplicate"] == 3
    assert _memories(engine) == 5


@pytest.mark.req("engram.memory.conversation.near-duplicates")
def test_near_duplicates_of_one_speaker_in_one_thread_are_stored_once(
    engine: MemoryEngine,
) -> None:
    said = {"role": "user", "name": "Ada", "content": "The boiler service is booked for Friday."}
    first = record_conversation(engine, [said], thread="house")
    assert first.counts()["recorded"] == 1
    variants = [
        {**said, "content": "the boiler service is booked for friday!!"},
        {**said, "content": "  The boiler   service is booked for Friday ."},
        {**said, "content": "The boiler service is booked for Friday.", "timestamp": 1773500000},
        {**said, "name": "ADA", "content": "The Boiler Service is booked for Friday"},
    ]
    again = record_conversation(engine, variants, thread="house")
    assert [m.status for m in again.messages] == ["near_duplicate"] * 4
    assert {m.memory_id for m in again.messages} == {first.messages[0].memory_id}
    # Not near-duplicates: another speaker, another thread, other words.
    distinct = record_conversation(
        engine,
        [
            {**said, "name": "Ben"},
            {**said, "content": "The boiler service is booked for Monday."},
        ],
        thread="house",
    )
    assert [m.status for m in distinct.messages] == ["recorded", "recorded"]
    elsewhere = record_conversation(engine, [said], thread="office")
    assert elsewhere.counts()["duplicate"] == 1  # same text, same ring: the same content id
    # Within one request the second of two near-duplicates is not stored either.
    pair = record_conversation(
        engine,
        [
            {"role": "user", "content": "Plant the tulip bulbs in October."},
            {"role": "user", "content": "plant the tulip bulbs in october"},
        ],
        thread="garden",
    )
    assert [m.status for m in pair.messages] == ["recorded", "near_duplicate"]
    assert pair.messages[1].memory_id == pair.messages[0].memory_id


@pytest.mark.req("engram.memory.conversation.times")
@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("timestamp", "2026-03-14T10:30:00+01:00", "2026-03-14T09:30:00.000000Z"),
        ("timestamp", "2026-03-14T09:30:00", "2026-03-14T09:30:00.000000Z"),  # naive: UTC
        ("created_at", 1773480600, "2026-03-14T09:30:00.000000Z"),
        ("created_at", 1773480600.25, "2026-03-14T09:30:00.250000Z"),
        ("create_time", 1773480600000, "2026-03-14T09:30:00.000000Z"),  # milliseconds
    ],
)
def test_message_times_are_read_from_iso_8601_or_epoch_numbers(
    engine: MemoryEngine, field: str, value: object, expected: str
) -> None:
    result = record_conversation(engine, [{"role": "user", "content": "hello", field: value}])
    memory = get_memory(engine, str(result.messages[0].memory_id))
    assert memory is not None
    assert memory.provenance["occurred_at"] == expected
    assert memory.provenance["time_source"] == "message"


@pytest.mark.req("engram.memory.conversation.times")
def test_a_turn_without_a_time_is_dated_when_it_was_recorded(engine: MemoryEngine) -> None:
    result = record_conversation(engine, [{"role": "user", "content": "no clock here"}])
    memory = get_memory(engine, str(result.messages[0].memory_id))
    assert memory is not None
    assert memory.text == "user: no clock here"
    assert memory.provenance["occurred_at"] == memory.created_at
    assert memory.provenance["time_source"] == "recorded"


@pytest.mark.req("engram.memory.conversation.refusals")
@pytest.mark.parametrize(
    ("message", "fragment"),
    [
        ({"role": "user", "content": "x", "timestamp": "yesterday"}, "messages[1].timestamp"),
        ({"role": "user", "content": "x", "timestamp": True}, "messages[1].timestamp"),
        ({"role": "user", "content": "x", "created_at": -5}, "between 1970 and 9999"),
        ({"role": "narrator", "content": "x"}, "messages[1].role"),
        ({"content": "x"}, "messages[1].role: expected a string"),
        ({"role": "user", "content": 42}, "messages[1].content"),
        ({"role": "user", "content": "x", "name": 7}, "messages[1].name"),
        ("just text", "messages[1]: expected a message"),
        ({"role": "user", "content": "x" * 100_001}, "messages[1]: text is longer than 100000"),
    ],
)
def test_a_bad_message_refuses_the_conversation_and_writes_nothing(
    engine: MemoryEngine, message: object, fragment: str
) -> None:
    with pytest.raises(InvalidRequest, match=fragment.replace("[", r"\[").replace("]", r"\]")):
        record_conversation(engine, [{"role": "user", "content": "fine"}, message])
    assert _memories(engine) == 0


@pytest.mark.req("engram.memory.conversation.bounds")
def test_a_conversation_of_100000_messages_or_10_mb_is_refused_whole(
    engine: MemoryEngine,
) -> None:
    many = [{"role": "user", "content": f"note {i}"} for i in range(100_000)]
    with pytest.raises(InvalidRequest, match=r"100,000 messages is more than 20,000"):
        record_conversation(engine, many)
    big = [{"role": "user", "content": "a" * 90_000 + f" {i}"} for i in range(117)]  # ~10 MB
    with pytest.raises(InvalidRequest, match=r"more than 8,388,608 bytes of text"):
        record_conversation(engine, big)
    assert _memories(engine) == 0


@pytest.mark.req("engram.memory.conversation.turns")
def test_agents_sdk_items_keep_their_messages_and_skip_tool_activity(
    engine: MemoryEngine,
) -> None:
    items = [
        {"role": "user", "content": "What is the capital of Peru?"},
        {"type": "function_call", "call_id": "c", "name": "lookup", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c", "output": "Lima"},
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "Lima is the capital.", "annotations": []}],
        },
    ]
    result = record_conversation(engine, items, thread="geo")
    assert [m.status for m in result.messages] == ["recorded", "skipped", "skipped", "recorded"]
    reply = get_memory(engine, str(result.messages[3].memory_id))
    assert reply is not None
    assert reply.provenance["message_id"] == "msg_1"
    assert reply.text == "assistant: Lima is the capital."


@pytest.mark.req("engram.memory.conversation.refusals")
@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        ({"thread": 7}, "thread: expected a string"),
        ({"thread": "t" * 201}, "thread: expected a string of at most 200"),
        ({"ring": ["M4"]}, "ring: expected a string"),
        ({"kind": None}, "kind: expected a string"),
        ({"kind": "gossip"}, "kind 'gossip' is not in this seat's allowed_kinds"),
        ({"ring": "M0"}, "read-only"),
    ],
)
def test_bad_options_from_a_caller_are_one_line_and_write_nothing(
    engine: MemoryEngine, options: dict[str, Any], fragment: str
) -> None:
    with pytest.raises(EngramError, match=re.escape(fragment)):
        record_conversation(engine, [{"role": "user", "content": "hi"}], **options)
    assert _memories(engine) == 0


@pytest.mark.req("engram.memory.conversation.turns")
def test_langchain_message_dicts_name_their_role_in_type(engine: MemoryEngine) -> None:
    dumped = [
        {"type": "system", "content": "Be kind."},
        {"type": "human", "content": "My cat is called Miso.", "name": "Ada", "id": "h1"},
        {"type": "ai", "content": "Miso is a lovely name.", "tool_calls": []},
    ]
    result = record_conversation(engine, dumped, thread="cats")
    assert [m.status for m in result.messages] == ["skipped", "recorded", "recorded"]
    ada = get_memory(engine, str(result.messages[1].memory_id))
    assert ada is not None
    assert ada.text == "Ada: My cat is called Miso."
    assert ada.provenance["role"] == "user"
