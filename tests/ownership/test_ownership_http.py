"""Whose memory, driven over HTTP only (the peer imports nothing of engram).

Two subjects' agents share one ``engram serve``: on SQLite with two workers, and on PostgreSQL
with two hosts (two ``engram serve`` processes, each with its own index folder, on one
database). Every probe that subject B's agent can make about subject A's memories (recall by
A's own words, status counts, outcome / complete / forget / erase on A's ids, a PAM export)
must show nothing of A; A's agent forgets, restores and erases; after an erase a byte search of
the database file, its WAL and the index folder finds none of the erased words.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from ownership_peer import (
    Agent,
    bytes_searched,
    cli,
    engram_env,
    files_containing,
    postgres_hosts,
    serve,
    subject,
    token,
    write_seat,
)

# Each of A's memories has a phrase found nowhere else: a leak is a substring of an answer.
A_MEMORIES = [
    "Alice's bank PIN hint is the heron from Lake Wyvernmere",
    "Alice is allergic to quillfish and carries an adrenaline pen",
    "Alice's passport number ends in 7731-KESTREL",
    "Alice moved her savings to Brightwater Mutual last spring",
]
A_PHRASES = ["Wyvernmere", "quillfish", "KESTREL", "Brightwater"]
B_MEMORIES = [
    "Bob's bank PIN hint is his first bicycle",
    "Bob prefers aisle seats on long flights",
]
QUERIES = [
    "bank PIN hint",
    "allergic",
    "passport number",
    "savings moved",
    "heron lake",
    "adrenaline pen",
    *A_MEMORIES,
]


def _leaks(text: str) -> list[str]:
    return [p for p in A_PHRASES if p in text]


def _probe_isolation(a: Agent, b: Agent, a_ids: list[str]) -> int:
    """Every probe B's agent can make about A's memories; returns how many were made."""
    probes = 0
    for query in QUERIES:
        for k in (1, 10, 100):
            _, found, text = b.call("engram_recall", {"query": query, "k": k})
            assert not {h["memory"]["id"] for h in found["hits"]} & set(a_ids)
            assert _leaks(text.replace(query, "")) == [], (query, text)  # the query is echoed
            probes += 1
    for ring in (["M4"], ["M0", "M1", "M2", "M3", "M4"]):
        _, _, text = b.call("engram_recall", {"query": "Alice", "rings": ring})
        assert _leaks(text) == []
        probes += 1
    status = b.ok("engram_status", {})
    assert sum(r["memories"] for r in status["rings"]) == len(B_MEMORIES)
    assert "subject:" + a.token not in str(status)
    probes += 1
    for memory_id in a_ids:
        for tool, arguments in (
            (
                "engram_outcome",
                {"memory_id": memory_id, "signal": "tests_pass", "decision_id": "x"},
            ),
            ("engram_complete", {"memory_id": memory_id}),
            ("engram_forget", {"memory_id": memory_id}),
            ("engram_forget", {"memory_id": memory_id, "erase": True}),
        ):
            message = b.refused(tool, arguments)
            # Worded exactly as for an id that never existed; never "forbidden".
            assert re.search(r"not_found: no memory 'mem:[0-9a-f]{64}'", message), message
            assert "forbidden" not in message
            assert _leaks(message) == []
            probes += 1
    never = "mem:" + "0" * 64
    assert b.refused("engram_complete", {"memory_id": never}).replace(never, "ID") == b.refused(
        "engram_complete", {"memory_id": a_ids[0]}
    ).replace(a_ids[0], "ID")
    probes += 1
    return probes


def _record_both(a: Agent, b: Agent) -> list[str]:
    a_ids = [
        a.ok("engram_record", {"text": t, "kind": "decision"})["memory"]["id"] for t in A_MEMORIES
    ]
    for t in B_MEMORIES:
        b.ok("engram_record", {"text": t, "kind": "decision"})
    return a_ids


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


@pytest.mark.req(
    "engram.memory.owner.isolation",
    "engram.memory.owner.not-found",
    "engram.memory.owner.http-caller",
    "engram.memory.owner.workers-hosts",
    "engram.memory.forget",
    "engram.memory.restore",
    "engram.memory.erase",
    "engram.mcp.forget",
)
def test_two_subjects_on_two_workers_never_see_each_others_memories(home: Path) -> None:
    env = engram_env(home)
    ote = write_seat(home, env)
    alice, bob = subject(env, "Alice"), subject(env, "Bob")
    a_token, b_token = token(env, alice, "memory"), token(env, bob, "memory")
    with serve(env, ote, workers=2) as base:
        a, b = Agent(base, a_token), Agent(base, b_token)
        a_ids = _record_both(a, b)
        probes = _probe_isolation(a, b, a_ids)
        # A's own agent finds what it recorded, through whichever worker answers.
        for text in A_MEMORIES:
            hits = a.ok("engram_recall", {"query": text, "k": 3})["hits"]
            assert hits[0]["memory"]["text"] == text
        # A PAM export for B (a user taking their memories elsewhere) holds nothing of A.
        exported = cli(env, "memory", "export", "-", "--subject", bob).stdout
        assert _leaks(exported) == []
        assert "bicycle" in exported
        probes += 1

        # Forget, restore (CLI), erase (MCP), over the running server.
        forgot = a.ok("engram_forget", {"memory_id": a_ids[0], "reason": "asked"})
        assert (forgot["state"], forgot["changed"]) == ("forgotten", True)
        assert a.ok("engram_forget", {"memory_id": a_ids[0]})["changed"] is False
        assert (
            a.ok("engram_recall", {"query": A_MEMORIES[0], "k": 10})["hits"][0]["memory"]["id"]
            != a_ids[0]
        )
        assert "restored" in cli(env, "restore", a_ids[0], "--subject", alice).stdout
        assert (
            a.ok("engram_recall", {"query": A_MEMORIES[0]})["hits"][0]["memory"]["id"] == a_ids[0]
        )

        erased = a.ok("engram_forget", {"memory_id": a_ids[0], "erase": True})
        assert (erased["state"], erased["changed"]) == ("erased", True)
        again = a.ok("engram_forget", {"memory_id": a_ids[0], "erase": True})
        assert (again["state"], again["changed"]) == ("erased", False)
        for worker_probe in range(6):  # both workers answer from an index without it
            hits = a.ok("engram_recall", {"query": "heron Wyvernmere bank PIN", "k": 10})["hits"]
            assert all(h["memory"]["id"] != a_ids[0] for h in hits), worker_probe
    assert files_containing(home, b"Wyvernmere") == [], bytes_searched(home)
    assert files_containing(home, b"Alice's bank PIN hint") == []
    history = cli(env, "memory", "history", a_ids[0], "--subject", alice).stdout
    assert "erased" in history
    assert "Wyvernmere" not in history
    print(f"isolation probes: {probes}; bytes searched: {bytes_searched(home)}", file=sys.stderr)


@pytest.mark.req("engram.memory.owner.http-caller")
def test_an_admin_token_acts_for_a_named_subject_and_nobody_else_can(home: Path) -> None:
    env = engram_env(home)
    ote = write_seat(home, env)
    alice, bob = subject(env, "Alice"), subject(env, "Bob")
    admin = token(env, alice, "admin")
    b_token = token(env, bob, "memory")
    with serve(env, ote) as base:
        b = Agent(base, b_token)
        b.ok("engram_record", {"text": B_MEMORIES[0], "kind": "decision"})
        as_bob = Agent(base, admin, {"Engram-Subject": bob})
        assert (
            as_bob.ok("engram_recall", {"query": "bicycle"})["hits"][0]["memory"]["text"]
            == (B_MEMORIES[0])
        )
        assert Agent(base, admin).ok("engram_recall", {"query": "bicycle"})["hits"] == []
        sneaky = Agent(base, b_token, {"Engram-Subject": alice})
        assert "forbidden: only an admin token may act for another subject" in sneaky.refused(
            "engram_recall", {"query": "anything"}
        )


@pytest.mark.postgres
@pytest.mark.req("engram.memory.owner.workers-hosts", "engram.memory.erase")
def test_two_hosts_on_one_postgresql_database_keep_subjects_apart(
    tmp_path: Path, postgres_url: str
) -> None:
    hosts, envs, ote = postgres_hosts(tmp_path, postgres_url)
    alice, bob = subject(envs[0], "Alice"), subject(envs[0], "Bob")
    a_token, b_token = token(envs[0], alice, "memory"), token(envs[0], bob, "memory")
    with serve(envs[0], ote) as one, serve(envs[1], ote) as two:
        a1, b1 = Agent(one, a_token), Agent(one, b_token)
        a2, b2 = Agent(two, a_token), Agent(two, b_token)
        a_ids = _record_both(a1, b1)  # recorded through host 1
        for text in A_MEMORIES:  # recalled through host 2, for A only
            assert a2.ok("engram_recall", {"query": text})["hits"][0]["memory"]["text"] == text
        probes = _probe_isolation(a2, b2, a_ids)
        assert a1.ok("engram_forget", {"memory_id": a_ids[1], "erase": True})["changed"] is True
        hits = a2.ok("engram_recall", {"query": "quillfish adrenaline allergic", "k": 10})["hits"]
        assert all(h["memory"]["id"] != a_ids[1] for h in hits)
    for h in hosts:  # each host's own index folder was rebuilt without it
        assert files_containing(h, b"quillfish") == [], h
    print(f"isolation probes over two hosts: {probes}", file=sys.stderr)
