"""The memory REST API through the real app (Starlette's TestClient), on every backend.

docs/spec/memory-rest.md. What the isolation holds against a client that imports nothing of
engram is in tests/ownership/test_memory_rest_http.py; here: each route's answer, the caller
rule, the body contract, idempotency and what an erase leaves in the idempotency records.
"""

from __future__ import annotations

import json
import logging
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from provider_harness import Provider, make_provider

from engram.context import create_subject, issue_token
from engram.provider import ProviderConfig
from engram.store import Store

MOVED = "Maya lives in Harrowgate and takes the 7:40 tram to the studio"
MOVED_AGAIN = "Maya moved to Leeds in March and now cycles to the studio"
ALLERGY = "Maya is allergic to hazelnuts, the bakery order must say so"


def _subject(p: Provider, name: str, *permissions: str) -> tuple[str, str]:
    subject = create_subject(p.store, p.clock, name, "UTC")
    return subject.id, issue_token(p.store, p.clock, subject.id, list(permissions or ["memory"]))


def _record(p: Provider, token: str, text: str, **extra: Any) -> Any:
    answer = p.client.post(
        "/v1/memories", json={"text": text, "kind": "decision", **extra}, headers=p.headers(token)
    )
    assert answer.status_code == 201, answer.text
    return answer.json()


def _error(answer: Any, status: int, code: str) -> str:
    assert answer.status_code == status, answer.text
    error = answer.json()["error"]
    assert (error["code"], error["status"]) == (code, status), answer.text
    message: str = error["message"]
    return message


@pytest.mark.req("engram.memory.rest.routes")
def test_a_memory_is_recorded_listed_searched_forgotten_restored_and_erased(
    memory_rest: Provider,
) -> None:
    p = memory_rest
    _, token = _subject(p, "Maya")
    h = p.headers(token)
    first = _record(p, token, MOVED, thread="chat-1", provenance={"speaker": "user"})
    mid = first["memory"]["id"]
    assert first["created"] is True
    assert first["memory"]["ring_id"].startswith("subject:")
    again = p.client.post("/v1/memories", json={"text": MOVED, "kind": "decision"}, headers=h)
    assert (again.status_code, again.json()["created"]) == (200, False)
    _record(p, token, ALLERGY)

    listed = p.client.get("/v1/memories", headers=h)
    assert listed.status_code == 200
    assert listed.headers["cache-control"] == "no-store"
    assert [m["text"] for m in listed.json()["memories"]] == [ALLERGY, MOVED]
    page = p.client.get("/v1/memories?limit=1", headers=h).json()
    assert len(page["memories"]) == 1
    rest = p.client.get(f"/v1/memories?limit=1&cursor={page['next_cursor']}", headers=h).json()
    assert [m["text"] for m in rest["memories"]] == [MOVED]
    assert rest["next_cursor"] is None

    assert p.client.get(f"/v1/memories/{mid}", headers=h).json()["text"] == MOVED
    hits = p.client.get("/v1/memories/search", params={"q": "tram studio"}, headers=h).json()
    assert hits["hits"][0]["memory"]["id"] == mid

    forgot = p.client.post(f"/v1/memories/{mid}/forget", json={"reason": "asked"}, headers=h)
    assert (forgot.status_code, forgot.json()["state"], forgot.json()["changed"]) == (
        200,
        "forgotten",
        True,
    )
    hits = p.client.get("/v1/memories/search", params={"q": "tram studio"}, headers=h).json()
    assert mid not in [hit["memory"]["id"] for hit in hits["hits"]]
    states = {
        m["id"]: m["state"] for m in p.client.get("/v1/memories", headers=h).json()["memories"]
    }
    assert states[mid] == "forgotten"
    current = p.client.get("/v1/memories?state=current", headers=h).json()["memories"]
    assert mid not in [m["id"] for m in current]
    # forget without a body (the reason is optional)
    assert p.client.post(f"/v1/memories/{mid}/forget", headers=h).json()["changed"] is False

    restored = p.client.post(f"/v1/memories/{mid}/restore", headers=h).json()
    assert (restored["state"], restored["changed"]) == ("active", True)

    erased = p.client.delete(f"/v1/memories/{mid}", headers=h)
    assert (erased.status_code, erased.json()["state"], erased.json()["changed"]) == (
        200,
        "erased",
        True,
    )
    assert p.client.delete(f"/v1/memories/{mid}", headers=h).json()["changed"] is False
    assert _error(p.client.get(f"/v1/memories/{mid}", headers=h), 404, "not_found") == (
        f"no memory {mid!r}"
    )
    story = p.client.get(f"/v1/memories/{mid}/history", headers=h).json()
    assert story["state"] == "erased"
    # The recorded entry went with the row; the lifecycle events stay, without words.
    assert [e["event"] for e in story["history"]] == ["forgotten", "restored", "erased"]
    assert "asked" not in str(story)  # an erase blanks the reasons
    assert MOVED not in p.client.get("/v1/memories", headers=h).text


@pytest.mark.req("engram.memory.rest.supersede")
def test_a_changed_fact_supersedes_the_old_one_and_as_of_answers_from_then(
    memory_rest: Provider,
) -> None:
    p = memory_rest
    _, token = _subject(p, "Maya")
    h = p.headers(token)
    old = _record(p, token, MOVED)["memory"]["id"]
    recorded_at = p.clock.now()
    p.clock.advance(timedelta(days=2))
    new = _record(p, token, MOVED_AGAIN, supersedes=old)
    assert (new["supersedes"], new["changed"]) == (old, True)

    query: dict[str, str | int] = {"q": "where does Maya live studio", "k": 5}
    now_ids = [
        hit["memory"]["id"]
        for hit in p.client.get("/v1/memories/search", params=query, headers=h).json()["hits"]
    ]
    assert now_ids[0] == new["memory"]["id"]
    assert old not in now_ids
    then = {**query, "as_of": (recorded_at + timedelta(days=1)).isoformat()}
    then_ids = [
        hit["memory"]["id"]
        for hit in p.client.get("/v1/memories/search", params=then, headers=h).json()["hits"]
    ]
    assert then_ids == [old]
    before = {**query, "as_of": "2020-01-01T00:00:00Z"}
    assert p.client.get("/v1/memories/search", params=before, headers=h).json()["hits"] == []
    story = p.client.get(f"/v1/memories/{old}/history", headers=h).json()
    assert story["state"] == "superseded"
    assert any(e["event"] == "superseded" for e in story["history"])
    # A cycle is refused: the old memory cannot supersede the one that replaced it.
    cycle = p.client.post(
        "/v1/memories",
        json={"text": MOVED, "kind": "decision", "supersedes": new["memory"]["id"]},
        headers=h,
    )
    _error(cycle, 409, "conflict")


@pytest.mark.req("engram.memory.rest.idempotency")
def test_a_retried_record_replays_and_another_body_with_the_key_is_refused(
    memory_rest: Provider,
) -> None:
    p = memory_rest
    _, token = _subject(p, "Maya")
    h = p.headers(token, **{"Idempotency-Key": "k-1"})
    body = {"text": ALLERGY, "kind": "decision"}
    first = p.client.post("/v1/memories", json=body, headers=h)
    replay = p.client.post("/v1/memories", json=body, headers=h)
    assert first.status_code == replay.status_code == 201
    assert replay.content == first.content
    assert replay.headers["idempotent-replayed"] == "true"
    other = p.client.post("/v1/memories", json={**body, "thread": "t"}, headers=h)
    _error(other, 422, "idempotency_conflict")
    refused = p.headers(token, **{"Idempotency-Key": "k-2"})
    bad = {"text": ALLERGY, "kind": "no-such-kind"}
    message = _error(
        p.client.post("/v1/memories", json=bad, headers=refused), 400, "invalid_request"
    )
    again = p.client.post("/v1/memories", json=bad, headers=refused)
    assert _error(again, 400, "invalid_request") == message
    assert again.headers["idempotent-replayed"] == "true"


@pytest.mark.req("engram.memory.rest.erase-seals-idempotency")
def test_an_erase_leaves_no_stored_answer_that_replays_the_words(memory_rest: Provider) -> None:
    p = memory_rest
    _, token = _subject(p, "Maya")
    h = p.headers(token, **{"Idempotency-Key": "retry-me"})
    body = {"text": ALLERGY, "kind": "decision"}
    mid = p.client.post("/v1/memories", json=body, headers=h).json()["memory"]["id"]
    kept = p.client.post(
        "/v1/memories",
        json={"text": MOVED, "kind": "decision"},
        headers=p.headers(token, **{"Idempotency-Key": "keep"}),
    )
    assert ALLERGY.encode() in _stored_answers(p.store)

    assert p.client.delete(f"/v1/memories/{mid}", headers=p.headers(token)).status_code == 200

    assert ALLERGY.encode() not in _stored_answers(p.store)
    retry = p.client.post("/v1/memories", json=body, headers=h)
    assert _error(retry, 404, "not_found") == f"memory {mid!r} was erased"
    assert retry.headers["idempotent-replayed"] == "true"
    assert ALLERGY not in retry.text
    # The retry recorded nothing: the words stay erased.
    listed = p.client.get("/v1/memories", headers=p.headers(token)).json()["memories"]
    assert [m["text"] for m in listed] == [MOVED]
    # Another memory's stored answer is untouched.
    same = p.client.post(
        "/v1/memories",
        json={"text": MOVED, "kind": "decision"},
        headers=p.headers(token, **{"Idempotency-Key": "keep"}),
    )
    assert same.content == kept.content


def _stored_answers(store: Store) -> bytes:
    with store.read() as tx:
        rows = tx.execute("SELECT body FROM engram_idempotency")
    return b"".join(bytes(r["body"] or b"") for r in rows)


@pytest.mark.req("engram.memory.rest.caller")
def test_only_an_admin_token_acts_for_a_named_subject(memory_rest: Provider) -> None:
    p = memory_rest
    maya, maya_token = _subject(p, "Maya")
    _, admin = _subject(p, "Operator", "admin")
    _, other = _subject(p, "Noor")
    _record(p, maya_token, ALLERGY)

    as_maya = p.headers(admin, **{"Engram-Subject": maya})
    listed = p.client.get("/v1/memories", headers=as_maya).json()["memories"]
    assert [m["text"] for m in listed] == [ALLERGY]
    recorded = p.client.post(
        "/v1/memories", json={"text": MOVED, "kind": "decision"}, headers=as_maya
    ).json()
    assert recorded["memory"]["ring_id"] == f"subject:{maya}"
    story = p.client.get(f"/v1/memories/{recorded['memory']['id']}/history", headers=as_maya)
    assert p.client.get("/v1/memories", headers=p.headers(admin)).json()["memories"] == []
    assert story.status_code == 200

    sneaky = p.client.get("/v1/memories", headers=p.headers(other, **{"Engram-Subject": maya}))
    assert _error(sneaky, 403, "forbidden") == (
        "only an admin token may act for another subject (engram-subject)"
    )
    assert "insufficient_scope" in sneaky.headers["www-authenticate"]
    unknown = p.client.get(
        "/v1/memories", headers=p.headers(admin, **{"Engram-Subject": "no-such-subject"})
    )
    _error(unknown, 404, "user_not_found")
    bad = p.client.get("/v1/memories", headers=p.headers(admin, **{"Engram-Subject": "a/b"}))
    _error(bad, 400, "invalid_request")
    _, reader = _subject(p, "Reader", "read")
    _error(p.client.get("/v1/memories", headers=p.headers(reader)), 403, "forbidden")
    _error(p.client.get("/v1/memories"), 401, "unauthorized")


BAD_BODIES = [
    ("unknown member", {"text": "x", "kind": "decision", "ring": "M0"}, "unknown member 'ring'"),
    ("blank text", {"text": " \t ", "kind": "decision"}, "text: must not be blank"),
    ("NUL in text", {"text": "a\u0000b", "kind": "decision"}, "text: must not be blank"),
    ("no kind", {"text": "x"}, "'kind' is a required property"),
    ("text not a string", {"text": 7, "kind": "decision"}, "text: expected string"),
    ("kind not allowed", {"text": "x", "kind": "gossip"}, "not in this seat's allowed_kinds"),
    ("text too long", {"text": "x" * 100_001, "kind": "decision"}, "at most 100000 characters"),
    (
        "provenance too big",
        {"text": "x", "kind": "decision", "provenance": {"p": "y" * 20_000}},
        "provenance: at most 16384 bytes",
    ),
    ("supersedes blank", {"text": "x", "kind": "decision", "supersedes": " "}, "supersedes"),
    ("deep provenance", {"text": "x", "kind": "decision", "provenance": {}}, None),
]


@pytest.mark.req("engram.memory.rest.body-contract")
@pytest.mark.parametrize(("case", "body", "words"), BAD_BODIES, ids=[c for c, _, _ in BAD_BODIES])
def test_a_bad_body_is_one_invalid_request_line(
    memory_rest: Provider, case: str, body: dict[str, Any], words: str | None
) -> None:
    p = memory_rest
    _, token = _subject(p, "Maya")
    if case == "deep provenance":
        deep: dict[str, Any] = {}
        for _ in range(200):
            deep = {"d": deep}
        body["provenance"] = deep
        words = "nests deeper than 64 levels"
    answer = p.client.post("/v1/memories", json=body, headers=p.headers(token))
    message = _error(answer, 400, "invalid_request")
    assert words is not None
    assert words in message, message
    assert len(message) < 300  # never the long value echoed back
    assert p.client.get("/v1/memories", headers=p.headers(token)).json()["memories"] == []


@pytest.mark.req("engram.memory.rest.body-contract")
def test_bounded_sizes_and_query_parameters_are_refused_in_one_line(
    memory_rest: Provider,
) -> None:
    p = memory_rest
    _, token = _subject(p, "Maya")
    h = p.headers(token)
    huge = b'{"kind": "decision", "text": "' + b"x" * (600 * 1024) + b'"}'
    message = _error(
        p.client.post(
            "/v1/memories", content=huge, headers={**h, "Content-Type": "application/json"}
        ),
        400,
        "invalid_request",
    )
    assert message == "request body larger than 524288 bytes"
    version = {"text": "x", "kind": "decision", "engram_version": "0.2"}
    _error(p.client.post("/v1/memories", json=version, headers=h), 400, "unsupported_version")
    for query, words in (
        ("/v1/memories?limit=0", "limit"),
        ("/v1/memories?limit=abc", "limit"),
        ("/v1/memories?cursor=x", "cursor"),
        ("/v1/memories?state=gone", "state"),
        ("/v1/memories/search", "q query parameter is required"),
        ("/v1/memories/search?q=%20", "q:"),
        ("/v1/memories/search?q=a&k=101", "k:"),
        ("/v1/memories/search?q=a&as_of=yesterday", "as_of"),
        ("/v1/memories/search?q=" + "a" * 4001, "q:"),
        ("/v1/memories/search?q=a%0A", "q:"),  # a trailing line break is a control too
        ("/v1/memories?limit=5%0A", "limit"),
    ):
        assert words in _error(p.client.get(query, headers=h), 400, "invalid_request"), query
    _error(p.client.get("/v1/memories/%20", headers=h), 400, "invalid_request")
    forget = p.client.post("/v1/memories/mem:x/forget", json={"reason": "r" * 501}, headers=h)
    assert "reason: at most 500" in _error(forget, 400, "invalid_request")


@pytest.mark.req("engram.memory.rest.mounted")
def test_without_a_memory_engine_the_routes_are_absent_and_undocumented(
    memory_store: Store,
) -> None:
    p = make_provider(memory_store)
    with p.client:
        _error(p.client.get("/v1/memories", headers=p.headers()), 404, "not_found")
        paths = p.client.get("/openapi.json").json()["paths"]
    assert not [path for path in paths if path.startswith("/v1/memories")]
    assert "/v1/beliefs" in paths
    assert "memories" not in p.client.get("/.well-known/engram").json()["endpoints"]


@pytest.mark.req("engram.memory.rest.mounted")
def test_discovery_names_the_memory_endpoint_when_it_is_served(memory_rest: Provider) -> None:
    endpoints = memory_rest.client.get("/.well-known/engram").json()["endpoints"]
    assert endpoints["memories"] == "https://provider.test/v1/memories"


@pytest.mark.req("engram.memory.rest.openapi")
def test_each_memory_body_example_is_valid_and_accepted(memory_rest: Provider) -> None:
    from jsonschema import Draft202012Validator
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT202012

    p = memory_rest
    _, token = _subject(p, "Maya")
    document = p.client.get("/openapi.json").json()
    registry: Registry[Any] = Registry().with_resource(
        "urn:doc", Resource.from_contents(document, default_specification=DRAFT202012)
    )
    paths = document["paths"]
    record = paths["/v1/memories"]["post"]["requestBody"]["content"]["application/json"]
    forget = paths["/v1/memories/{mid}/forget"]["post"]["requestBody"]["content"]
    examples = [("MemoryRequest", e["value"]) for e in record["examples"].values()] + [
        ("ForgetRequest", e["value"]) for e in forget["application/json"]["examples"].values()
    ]
    assert len(examples) == 3
    examples.sort(key=lambda e: (e[0] == "ForgetRequest", "supersedes" in e[1]))  # record first
    first = ""
    for schema, value in examples:
        ref = {"$ref": f"urn:doc#/components/schemas/{schema}"}
        assert Draft202012Validator(ref, registry=registry).is_valid(value), value
        if schema == "ForgetRequest":
            answer = p.client.post(
                f"/v1/memories/{first}/forget", json=value, headers=p.headers(token)
            )
        else:
            body = {**value, "supersedes": first} if "supersedes" in value else value
            answer = p.client.post("/v1/memories", json=body, headers=p.headers(token))
            first = first or answer.json()["memory"]["id"]
        assert answer.status_code in (200, 201), answer.text


@pytest.mark.req("engram.memory.rest.production")
def test_memory_routes_are_rate_limited_and_logged_like_every_route(
    memory_store: Store, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = ProviderConfig(rate_limit_per_minute=60, rate_limit_burst=3)
    p = make_provider(memory_store, config, memory_folder=tmp_path)
    caplog.set_level(logging.INFO, logger="engram.provider.access")
    with p.client:
        _, token = _subject(p, "Maya")
        h = p.headers(token, **{"X-Request-Id": "mem-1"})
        served = [
            p.client.post("/v1/memories", json={"text": ALLERGY, "kind": "decision"}, headers=h),
            p.client.get("/v1/memories/search", params={"q": "hazelnuts"}, headers=h),
            p.client.get("/v1/memories", headers=h),
        ]
        limited = p.client.get("/v1/memories", headers=h)
    assert [r.status_code for r in served] == [201, 200, 200]
    assert _error(limited, 429, "rate_limited") == "too many requests; slow down"
    assert limited.headers["retry-after"] == "1"
    lines = [r.getMessage() for r in caplog.records if r.name == "engram.provider.access"]
    entries = [json.loads(line) for line in lines if '"/v1/memories' in line]
    assert [(e["method"], e["path"], e["status"]) for e in entries] == [
        ("POST", "/v1/memories", 201),
        ("GET", "/v1/memories/search", 200),
        ("GET", "/v1/memories", 200),
        ("GET", "/v1/memories", 429),
    ]
    assert {e["request_id"] for e in entries} == {"mem-1"}
    assert token not in caplog.text
    assert "hazelnuts" not in caplog.text  # neither the memory nor the query is logged


@pytest.mark.req("engram.memory.rest.idempotency")
def test_a_claim_left_by_a_killed_worker_is_taken_over_after_the_in_flight_limit(
    memory_rest: Provider,
) -> None:
    from engram.core.canonical import digest_hex

    p = memory_rest
    subject, token = _subject(p, "Maya")
    body = {"text": ALLERGY, "kind": "decision"}
    h = p.headers(token, **{"Idempotency-Key": "died"})
    # What a worker killed between the claim and the answer leaves behind.
    records = p.app.state.services.idempotency
    claimed = records.begin(f"POST /v1/memories {subject}", "died", digest_hex(body), p.clock.now())
    assert claimed is None

    _error(p.client.post("/v1/memories", json=body, headers=h), 409, "conflict")
    p.clock.advance(timedelta(minutes=11))
    taken = p.client.post("/v1/memories", json=body, headers=h)
    assert taken.status_code == 201, taken.text
    replay = p.client.post("/v1/memories", json=body, headers=h)
    assert replay.content == taken.content
    assert replay.headers["idempotent-replayed"] == "true"
