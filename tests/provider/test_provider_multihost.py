"""Several hosts on one database (issue 21; docs/spec/context-provider.md "Several hosts").

Two real ``engram serve`` processes on different ports share one database (a PostgreSQL schema,
or one SQLite file), standing in for two hosts; changes are made through one host's HTTP API or
with the ``engram`` command against the database (how an operator revokes a token or rotates a
key). Each change must show on the other host within the documented bound (1 s): every request
that starts a bound after the change commits sees it.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from engram.context import ensure_schema, list_tokens
from engram.context.internals import DemoSubject, seed_demo
from engram.core.canonical import parse_strict
from engram.core.clock import SystemClock
from engram.store import open_store


def _parsed_list(data: bytes | str) -> list[Any]:
    # Strictly parsed and checked to be an array; the test then walks it freely.
    value = parse_strict(data)
    assert isinstance(value, list)
    return value


BOUND = 1.0
KEYS_MAX_AGE = 4  # seconds: the key list's cache lifetime, so the publish lead, for these hosts
ENGRAM = [sys.executable, "-c", "from engram.cli import main; main()"]


@dataclass
class Host:
    base: str
    process: subprocess.Popen[str]

    def get(self, path: str, token: str, **headers: str) -> httpx.Response:
        return httpx.get(
            self.base + path, headers={"Authorization": f"Bearer {token}", **headers}, timeout=10
        )

    def post(self, path: str, token: str, body: object = None, **headers: str) -> httpx.Response:
        return httpx.post(
            self.base + path,
            json=body,
            headers={"Authorization": f"Bearer {token}", **headers},
            timeout=10,
        )


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _environment(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ENGRAM_", "THALAMUS_"))}
    env.update(
        ENGRAM_HOME=str(home),
        ENGRAM_KEYS_MAX_AGE_SECONDS=str(KEYS_MAX_AGE),
        ENGRAM_RATE_LIMIT_PER_MINUTE="1000000",
        ENGRAM_RATE_LIMIT_BURST="1000000",
    )
    return env


def _serve(url: str, home: Path) -> Host:
    port = _port()
    process = subprocess.Popen(
        [*ENGRAM, "serve", "--db", url, "--port", str(port), "--log-level", "warning"],
        env=_environment(home),
        cwd=home,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(
                f"engram serve exited: {process.stderr.read() if process.stderr else ''}"
            )
        try:
            if httpx.get(base + "/healthz", timeout=1).status_code == 200:
                return Host(base, process)
        except httpx.HTTPError:
            time.sleep(0.1)
    process.kill()
    raise AssertionError("engram serve did not start")


@dataclass
class Cluster:
    url: str
    home: Path
    demo: DemoSubject
    a: Host
    b: Host

    def engram(self, *args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [*ENGRAM, *args, "--db", self.url],
            env=_environment(self.home),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return done


@pytest.fixture
def cluster(any_database_url: str, tmp_path: Path) -> Iterator[Cluster]:
    store = open_store(any_database_url)
    try:
        ensure_schema(store)
        demo = seed_demo(store, SystemClock())
    finally:
        store.close()
    a, b = _serve(any_database_url, tmp_path), _serve(any_database_url, tmp_path)
    try:
        yield Cluster(any_database_url, tmp_path, demo, a, b)
    finally:
        for host in (a, b):
            host.process.terminate()
            try:
                host.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                host.process.kill()
                host.process.wait(timeout=20)
            if host.process.stderr is not None:
                host.process.stderr.close()  # the pipe, else a ResourceWarning when collected


def _statements(export: httpx.Response) -> set[str]:
    assert export.status_code == 200, export.text
    return {b["statement"] for b in export.json()["beliefs"]}


@pytest.mark.req("engram.provider.multihost-consistent", "engram.provider.revocation-bound")
def test_a_correction_confirmed_on_one_host_is_in_the_next_export_of_the_other(
    cluster: Cluster,
) -> None:
    token = cluster.demo.token
    belief = cluster.demo.beliefs[3]
    assert belief.statement in _statements(cluster.b.get("/v1/context", token))  # B caches it
    proposed = cluster.a.post(
        "/v1/context/correct",
        token,
        {"belief_id": belief.id, "new_value": "Lives in Leeds.", "runtime_id": "rt-a"},
    )
    assert proposed.status_code == 202, proposed.text
    confirmed = cluster.a.post(f"/v1/corrections/{proposed.json()['id']}/confirm", token)
    assert confirmed.status_code == 200, confirmed.text
    committed = time.monotonic()

    seen = None
    while seen is None:
        if "Lives in Leeds." in _statements(cluster.b.get("/v1/context", token)):
            seen = time.monotonic() - committed
        elif time.monotonic() - committed > BOUND:
            pytest.fail("host B still served the old belief a bound after the commit")
    assert seen <= BOUND


@pytest.mark.req("engram.provider.multihost-consistent", "engram.provider.revocation-bound")
def test_a_revoked_token_is_refused_by_both_hosts_within_the_bound(cluster: Cluster) -> None:
    token = cluster.demo.token
    for host in (cluster.a, cluster.b):
        assert host.get("/v1/context", token).status_code == 200  # cached on both
    store = open_store(cluster.url)
    try:
        (demo,) = [t for t in list_tokens(store, cluster.demo.subject.id) if t.label == "demo"]
    finally:
        store.close()
    cluster.engram(
        "token", "revoke", "--subject", cluster.demo.subject.id, "--token-id", demo.token_id
    )
    time.sleep(BOUND)
    for host in (cluster.a, cluster.b):
        refused = host.get("/v1/context", token)
        assert refused.status_code == 401, host.base
        assert refused.json()["error"]["code"] == "unauthorized"


def _kids(host: Host) -> dict[str, str]:
    keys = httpx.get(host.base + "/.well-known/engram-keys", timeout=10).json()["keys"]
    return {k["kid"]: k["status"] for k in keys}


def _signed_kid(cluster: Cluster, host: Host, note: str) -> str:
    """The kid of a freshly signed export from ``host`` (a new belief forces a signature)."""
    added = host.post("/v1/beliefs", cluster.demo.token, {"category": "goal", "statement": note})
    assert added.status_code == 201, added.text
    export = host.get("/v1/context", cluster.demo.token)
    assert export.status_code == 200
    assert note in _statements(export)  # its own write is visible at once
    return str(export.json()["kid"])


@pytest.mark.req(
    "engram.provider.key-published-before-signing", "engram.provider.multihost-consistent"
)
def test_a_key_rotated_on_one_host_is_published_by_both_before_either_signs_with_it(
    cluster: Cluster,
) -> None:
    old = _signed_kid(cluster, cluster.a, "before the rotation")
    rotated = _parsed_list(cluster.engram("keys", "rotate", "--json").stdout)
    started = time.monotonic()
    assert isinstance(rotated, list)
    new = str(rotated[0]["kid"])
    for host in (cluster.a, cluster.b):
        assert _kids(host).get(new) == "next", host.base  # published at once, not signing
        assert _signed_kid(cluster, host, f"during the lead, {host.base}") == old
    assert time.monotonic() - started < KEYS_MAX_AGE  # all of the above inside the lead
    time.sleep(max(0.0, KEYS_MAX_AGE - (time.monotonic() - started)) + 0.2)
    for host in (cluster.a, cluster.b):
        assert _signed_kid(cluster, host, f"after the lead, {host.base}") == new
        assert _kids(host)[new] == "active"


@pytest.mark.req("engram.provider.idempotency-retries", "engram.provider.multihost-consistent")
def test_five_retries_of_one_key_on_alternating_hosts_make_one_correction(
    cluster: Cluster,
) -> None:
    belief = cluster.demo.beliefs[1]
    body = {"belief_id": belief.id, "new_value": "Prefers Go.", "runtime_id": "rt-retry"}
    answers = [
        (cluster.a if i % 2 == 0 else cluster.b).post(
            "/v1/context/correct", cluster.demo.token, body, **{"Idempotency-Key": "multi-1"}
        )
        for i in range(6)
    ]
    assert [a.status_code for a in answers] == [202] * 6
    assert len({a.content for a in answers}) == 1
    assert [a.headers.get("idempotent-replayed") for a in answers] == [None] + ["true"] * 5
    listed = cluster.a.get("/v1/corrections", cluster.demo.token).json()["corrections"]
    assert [c["runtime_id"] for c in listed] == ["rt-retry"]
