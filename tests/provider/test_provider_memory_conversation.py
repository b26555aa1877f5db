"""POST /v1/memories/conversations: a chat in, one memory per turn with speaker and time.

docs/spec/memory-rest.md "Conversations"; the turn rules are docs/spec/memory-conversations.md.
Through the real app on every backend; the isolation against a client that imports nothing of
engram is in tests/ownership/test_memory_rest_http.py.
"""

from __future__ import annotations

from typing import Any

import pytest
from provider_harness import Provider

from engram.context import create_subject, issue_token

CHAT = [
    {
        "role": "system",
        "content": "You are a helpful travel assistant.",
    },
    {
        "role": "user",
        "name": "Maya",
        "content": "I moved from Harrogate to Leeds in March.",
        "timestamp": "2026-03-14T09:30:00Z",
    },
    {
        "role": "assistant",
        "content": [{"type": "text", "text": "Noted: you live in Leeds now."}],
        "created_at": 1773480605,
    },
    {"role": "user", "name": "Maya", "content": "And I still take the 7:40 train to work."},
]


def _token(p: Provider, name: str) -> str:
    subject = create_subject(p.store, p.clock, name, "UTC")
    return issue_token(p.store, p.clock, subject.id, ["memory"])


def _post(p: Provider, token: str, body: Any, **headers: str) -> Any:
    return p.client.post(
        "/v1/memories/conversations", json=body, headers={**p.headers(token), **headers}
    )


@pytest.mark.req("engram.memory.rest.conversation")
def test_a_chat_becomes_turns_with_speaker_and_time_and_a_resend_adds_nothing(
    memory_rest: Provider,
) -> None:
    p = memory_rest
    token = _token(p, "Maya")
    first = _post(p, token, {"messages": CHAT, "thread": "chat-7"})
    assert first.status_code == 201, first.text
    answer = first.json()
    assert answer["thread"] == "chat-7"
    assert answer["ring_id"].startswith("subject:")
    assert (answer["counts"]["recorded"], answer["counts"]["skipped"]) == (3, 1)
    statuses = [m["status"] for m in answer["messages"]]
    assert statuses == ["skipped", "recorded", "recorded", "recorded"]
    user = answer["messages"][1]
    assert (user["speaker"], user["occurred_at"][:19]) == ("Maya", "2026-03-14T09:30:00")
    assert answer["messages"][2]["occurred_at"][:19] == "2026-03-14T09:30:05"  # epoch seconds

    again = _post(p, token, {"messages": CHAT, "thread": "chat-7"})
    assert again.status_code == 200, again.text
    assert again.json()["counts"]["recorded"] == 0
    assert again.json()["counts"]["duplicate"] == 3

    hits = p.client.get(
        "/v1/memories/search", params={"q": "moved from Harrogate"}, headers=p.headers(token)
    ).json()["hits"]
    top = hits[0]["memory"]
    assert "Leeds" in top["text"]
    assert top["thread"] == "chat-7"
    assert top["provenance"]["speaker"] == "Maya"
    assert top["provenance"]["occurred_at"].startswith("2026-03-14")
    listed = p.client.get("/v1/memories", headers=p.headers(token)).json()["memories"]
    assert len(listed) == 3


@pytest.mark.req("engram.memory.rest.conversation")
def test_a_retried_conversation_with_its_key_replays_the_first_answer(
    memory_rest: Provider,
) -> None:
    p = memory_rest
    token = _token(p, "Maya")
    body = {"messages": CHAT[1:2]}
    first = _post(p, token, body, **{"Idempotency-Key": "chat-1"})
    retry = _post(p, token, body, **{"Idempotency-Key": "chat-1"})
    assert first.status_code == retry.status_code == 201
    assert retry.headers.get("idempotent-replayed") == "true"
    assert retry.json() == first.json()
    other = _post(p, token, {"messages": CHAT[3:]}, **{"Idempotency-Key": "chat-1"})
    assert other.status_code == 422, other.text


@pytest.mark.req("engram.memory.rest.conversation", "engram.memory.rest.body-contract")
@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({}, "messages"),
        ({"messages": []}, "messages"),
        ({"messages": "hello"}, "messages"),
        ({"messages": [{"content": "no role"}]}, "role"),
        ({"messages": [{"role": "wizard", "content": "x"}]}, "role"),
        ({"messages": [{"role": "user", "content": 7}]}, "content"),
        ({"messages": CHAT, "extra": 1}, "extra"),
        ({"messages": CHAT, "thread": ""}, "thread"),
        ({"messages": [{"role": "user", "content": "hi"}] * 20_001}, "messages"),
    ],
)
def test_a_bad_conversation_is_one_line_and_writes_nothing(
    memory_rest: Provider, body: Any, says: str
) -> None:
    p = memory_rest
    token = _token(p, "Maya")
    answer = _post(p, token, body)
    assert answer.status_code == 400, answer.text[:300]
    error = answer.json()["error"]
    assert error["code"] == "invalid_request"
    assert says in error["message"]
    assert "\n" not in error["message"]
    assert p.client.get("/v1/memories", headers=p.headers(token)).json()["memories"] == []


@pytest.mark.req("engram.memory.rest.conversation", "engram.memory.rest.body-contract")
def test_a_conversation_body_over_its_cap_is_refused_before_parsing(memory_rest: Provider) -> None:
    p = memory_rest
    token = _token(p, "Maya")
    huge = [{"role": "user", "content": "x" * 1_000_000}] * 9  # 9 MB, over the 8 MiB cap
    answer = _post(p, token, {"messages": huge})
    assert answer.status_code == 400
    assert "larger than" in answer.json()["error"]["message"]


@pytest.mark.req("engram.memory.rest.conversation")
def test_the_documented_conversation_example_is_valid_and_accepted(
    memory_rest: Provider,
) -> None:
    from jsonschema import Draft202012Validator
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT202012

    p = memory_rest
    token = _token(p, "Maya")
    document = p.client.get("/openapi.json").json()
    registry: Registry[Any] = Registry().with_resource(
        "urn:doc", Resource.from_contents(document, default_specification=DRAFT202012)
    )
    operation = document["paths"]["/v1/memories/conversations"]["post"]
    examples = operation["requestBody"]["content"]["application/json"]["examples"]
    assert examples
    ref = {"$ref": "urn:doc#/components/schemas/ConversationRequest"}
    for example in examples.values():
        assert Draft202012Validator(ref, registry=registry).is_valid(example["value"])
        answer = _post(p, token, example["value"])
        assert answer.status_code == 201, answer.text
        recorded = {"$ref": "urn:doc#/components/schemas/ConversationRecorded"}
        assert Draft202012Validator(recorded, registry=registry).is_valid(answer.json())
