"""The memory REST API's isolation, driven over HTTP only (the peer imports nothing of engram).

Two subjects' apps share one ``engram serve`` (SQLite, two workers; PostgreSQL, two hosts with
their own index folders on one database). On every route of ``/v1/memories``, subject B's
token must never read, list, search, forget, restore, supersede, see the history of or erase
subject A's memories; each refusal is worded exactly as for an id that never existed. A then
forgets, restores and erases over the same API, and a byte search of the database file, its WAL
and the index folder finds none of the erased words, the stored ``Idempotency-Key`` answers
included.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from ownership_peer import (
    RestClient,
    bytes_searched,
    engram_env,
    files_containing,
    postgres_hosts,
    serve,
    subject,
    token,
    write_seat,
)

A_MEMORIES = [
    "Ines keeps her spare key under the blue Tollemache planter",
    "Ines takes levothyraxin every morning before the 6:50 ferry",
    "Ines' locker code at the Quarrybank pool is 4-1-9-9",
]
A_PHRASES = ["Tollemache", "levothyraxin", "Quarrybank"]
B_MEMORIES = ["Tomas prefers the window seat on the night train"]
QUERIES = ["spare key planter", "morning ferry medication", "locker code pool", *A_MEMORIES]
NEVER = "mem:" + "0" * 64
# A chat A sends (turns with speaker and time); B then sends the very same chat.
A_CHAT = {
    "messages": [
        {
            "role": "user",
            "name": "Ines",
            "content": "I park at the Wendlebury depot on Tuesdays.",
            "timestamp": "2026-03-14T09:30:00Z",
        },
        {"role": "assistant", "content": "Noted.", "timestamp": "2026-03-14T09:30:04Z"},
    ],
    "thread": "chat-ines-1",
}


def _leaks(text: str) -> list[str]:
    return [p for p in A_PHRASES if p in text]


def _record(client: RestClient, texts: list[str]) -> list[str]:
    ids = []
    for n, text in enumerate(texts):
        answer = client.ok(
            "POST",
            "/v1/memories",
            json={"text": text, "kind": "decision"},
            extra={"Idempotency-Key": f"record-{n}"},  # its answer holds the words
        )
        ids.append(answer["memory"]["id"])
    return ids


def _not_found_as_never(
    b: RestClient, method: str, path: str, memory_id: str, **kw: object
) -> None:
    seen = b.error(method, path.format(memory_id), **kw)
    never = b.error(method, path.format(NEVER), **kw)
    assert seen[:2] == (404, "not_found"), seen
    assert seen[2].replace(memory_id, "ID") == never[2].replace(NEVER, "ID"), (seen, never)
    assert _leaks(seen[2]) == []


def _probe(a: RestClient, b: RestClient, a_ids: list[str], a_subject: str) -> int:
    """Every probe B's token can make about A's memories on every route; returns the count."""
    probes = 0
    listed = b.ok("GET", "/v1/memories", params={"limit": 200})
    assert {m["id"] for m in listed["memories"]} & set(a_ids) == set()
    assert _leaks(str(listed)) == []
    assert b.ok("GET", "/v1/memories", params={"state": "current"})["memories"]
    probes += 2
    for query in QUERIES:
        for k in (1, 10, 100):
            found = b.ok("GET", "/v1/memories/search", params={"q": query, "k": k})
            assert {h["memory"]["id"] for h in found["hits"]} & set(a_ids) == set()
            assert _leaks(str(found["hits"])) == [], query
            probes += 1
    for memory_id in a_ids:
        for method, path, kw in (
            ("GET", "/v1/memories/{}", {}),
            ("GET", "/v1/memories/{}/history", {}),
            ("POST", "/v1/memories/{}/forget", {"json": {"reason": "b"}}),
            ("POST", "/v1/memories/{}/restore", {}),
            ("DELETE", "/v1/memories/{}", {}),
        ):
            _not_found_as_never(b, method, path, memory_id, **kw)
            probes += 1
        superseding = b.error(
            "POST",
            "/v1/memories",
            json={"text": "B overwrites it", "kind": "decision", "supersedes": memory_id},
        )
        assert superseding == (404, "not_found", f"no memory {memory_id!r}")
        probes += 1
    # B naming A's subject is refused; nothing of A changed through any of it.
    named = RestClient(b.base, b.token, {"Engram-Subject": a_subject})
    for method, path in (("GET", "/v1/memories"), ("GET", f"/v1/memories/{a_ids[0]}")):
        assert named.error(method, path)[:2] == (403, "forbidden")
        probes += 1
    mine = a.ok("GET", "/v1/memories")["memories"]
    assert sorted(m["id"] for m in mine if m["state"] == "current") == sorted(a_ids)
    return probes + _probe_conversation(a, b)


def _probe_conversation(a: RestClient, b: RestClient) -> int:
    """A's chat is A's alone: B sending the same chat learns nothing of it (no duplicate of A's
    turns), and neither lists or finds the other's turns."""
    first = a.ok("POST", "/v1/memories/conversations", json=A_CHAT)
    assert first["counts"]["recorded"] == 2, first
    turn = first["messages"][0]
    assert (turn["speaker"], turn["occurred_at"][:19]) == ("Ines", "2026-03-14T09:30:00")
    a_turns = {m["memory_id"] for m in first["messages"]}
    again = a.ok("POST", "/v1/memories/conversations", json=A_CHAT)
    assert (again["counts"]["recorded"], again["counts"]["duplicate"]) == (0, 2), again
    theirs = b.ok("POST", "/v1/memories/conversations", json=A_CHAT)
    assert theirs["counts"]["recorded"] == 2, theirs  # B's own copies, never "a duplicate"
    assert {m["memory_id"] for m in theirs["messages"]} & a_turns == set()
    b_ids = {m["id"] for m in b.ok("GET", "/v1/memories", params={"limit": 200})["memories"]}
    assert b_ids & a_turns == set()
    found = b.ok("GET", "/v1/memories/search", params={"q": "Wendlebury depot Tuesdays"})
    assert {h["memory"]["id"] for h in found["hits"]} & a_turns == set()
    mine = a.ok("GET", "/v1/memories/search", params={"q": "Wendlebury depot Tuesdays"})
    assert mine["hits"][0]["memory"]["id"] in a_turns
    return 5


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


@pytest.mark.req("engram.memory.rest.isolation", "engram.memory.rest.erase-seals-idempotency")
def test_subject_b_never_reaches_a_memories_on_any_route_two_workers(home: Path) -> None:
    env = engram_env(home)
    ote = write_seat(home, env)
    alice, bob = subject(env, "Ines"), subject(env, "Tomas")
    a_token, b_token = token(env, alice, "memory"), token(env, bob, "memory")
    with serve(env, ote, workers=2) as base:
        a, b = RestClient(base, a_token), RestClient(base, b_token)
        a_ids = _record(a, A_MEMORIES)
        _record(b, B_MEMORIES)
        probes = _probe(a, b, a_ids, alice)

        # A forgets, restores and erases over the same API.
        forgot = a.ok("POST", f"/v1/memories/{a_ids[0]}/forget", json={"reason": "asked"})
        assert (forgot["state"], forgot["changed"]) == ("forgotten", True)
        hits = a.ok("GET", "/v1/memories/search", params={"q": A_MEMORIES[0]})["hits"]
        assert a_ids[0] not in [h["memory"]["id"] for h in hits]
        assert a.ok("POST", f"/v1/memories/{a_ids[0]}/restore")["changed"] is True
        erased = a.ok("DELETE", f"/v1/memories/{a_ids[0]}")
        assert (erased["state"], erased["changed"]) == ("erased", True)
        for _ in range(6):  # both workers answer from an index without it
            hits = a.ok("GET", "/v1/memories/search", params={"q": "spare key blue planter"})
            assert a_ids[0] not in [h["memory"]["id"] for h in hits["hits"]]
        retry = a.request(
            "POST",
            "/v1/memories",
            json={"text": A_MEMORIES[0], "kind": "decision"},
            extra={"Idempotency-Key": "record-0"},
        )
        assert retry.status_code == 404, retry.text
        assert "Tollemache" not in retry.text
    assert files_containing(home, b"Tollemache") == [], bytes_searched(home)
    print(
        f"REST isolation probes: {probes}; bytes searched: {bytes_searched(home)}", file=sys.stderr
    )


@pytest.mark.postgres
@pytest.mark.req("engram.memory.rest.isolation")
def test_subject_b_never_reaches_a_memories_across_two_postgresql_hosts(
    tmp_path: Path, postgres_url: str
) -> None:
    hosts, envs, ote = postgres_hosts(tmp_path, postgres_url)
    alice, bob = subject(envs[0], "Ines"), subject(envs[0], "Tomas")
    a_token, b_token = token(envs[0], alice, "memory"), token(envs[0], bob, "memory")
    with serve(envs[0], ote) as one, serve(envs[1], ote) as two:
        a_ids = _record(RestClient(one, a_token), A_MEMORIES)  # recorded through host 1
        _record(RestClient(one, b_token), B_MEMORIES)
        a2, b2 = RestClient(two, a_token), RestClient(two, b_token)
        for text in A_MEMORIES:  # searched through host 2, for A only
            assert (
                a2.ok("GET", "/v1/memories/search", params={"q": text})["hits"][0]["memory"]["text"]
                == text
            )
        probes = _probe(a2, b2, a_ids, alice)
        assert RestClient(one, a_token).ok("DELETE", f"/v1/memories/{a_ids[1]}")["changed"]
        hits = a2.ok("GET", "/v1/memories/search", params={"q": "levothyraxin ferry", "k": 10})
        assert a_ids[1] not in [h["memory"]["id"] for h in hits["hits"]]
    for h in hosts:  # each host's own index folder was rebuilt without it
        assert files_containing(h, b"levothyraxin") == [], h
    print(f"REST isolation probes over two hosts: {probes}", file=sys.stderr)
