"""One authentication surface for every route, ``/mcp`` included; the ``memory`` permission;
rate limits that a stranger can neither dodge nor reset (docs/spec/context-provider.md
"Authentication and errors", "Rate limiting").

The MCP endpoint here is the real one ``engram serve`` mounts (``provider_app_with_mcp``) over a
seat written with the built-in manifest; requests go through httpx's ASGI transport with a
loopback client address, so ``X-Forwarded-For`` can be trusted or not.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette

from engram.cli.internals import provider_app_with_mcp
from engram.context import Permission, ensure_schema, issue_token
from engram.context.internals import DemoSubject, seed_demo
from engram.core.canonical import parse_strict
from engram.core.clock import FixedClock
from engram.errors import RateLimited
from engram.memory import default_manifest_text
from engram.memory.internals import SeatSource
from engram.provider import ProviderConfig, create_app
from engram.provider.internals import RateLimiter, parse_trusted_proxies
from engram.store import Store


def _parsed(data: bytes | str) -> dict[str, Any]:
    # Strictly parsed and checked to be an object; the test then walks it freely.
    value = parse_strict(data)
    assert isinstance(value, dict)
    return value


BASE = "http://127.0.0.1:8420"
MCP_BODY = b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}'
MCP_HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


def _seat(directory: Path) -> SeatSource:
    manifest = directory / ".engram" / "ote.toml"
    manifest.parent.mkdir(parents=True)
    manifest.write_text(default_manifest_text(), encoding="utf-8")
    return SeatSource("--ote", manifest)


class Host:
    def __init__(self, app: Starlette, store: Store, clock: FixedClock, demo: DemoSubject):
        self.app, self.store, self.clock, self.demo = app, store, clock, demo

    def token(self, *permissions: Permission, ttl: timedelta = timedelta(days=1)) -> str:
        return issue_token(self.store, self.clock, self.demo.subject.id, permissions, ttl)


@pytest.fixture
def host(memory_store: Store, tmp_path: Path) -> Host:
    clock = FixedClock()
    ensure_schema(memory_store)
    demo = seed_demo(memory_store, clock)
    config = ProviderConfig(public_url=BASE)
    app = provider_app_with_mcp(config, memory_store, clock, _seat(tmp_path))
    return Host(app, memory_store, clock, demo)


@asynccontextmanager
async def _client(host: Host) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the app with its lifespan running (the MCP session manager needs it)."""
    transport = httpx.ASGITransport(app=host.app, client=("127.0.0.1", 40000))
    async with (
        host.app.router.lifespan_context(host.app),
        httpx.AsyncClient(transport=transport, base_url=BASE) as client,
    ):
        yield client


async def _both(host: Host, headers: dict[str, str]) -> tuple[httpx.Response, httpx.Response]:
    async with _client(host) as client:
        context = await client.get("/v1/context", headers=headers)
        mcp = await client.post("/mcp", content=MCP_BODY, headers={**MCP_HEADERS, **headers})
    return context, mcp


def _challenge(response: httpx.Response) -> str | None:
    value: str | None = response.headers.get("www-authenticate")
    return value


@pytest.mark.req("engram.provider.one-auth-surface", "engram.mcp.http-auth")
@pytest.mark.parametrize(
    ("case", "status", "challenge"),
    [
        ("no token", 401, 'Bearer realm="engram"'),
        ("another scheme", 401, 'Bearer realm="engram"'),
        ("unknown token", 401, 'Bearer realm="engram", error="invalid_token"'),
        ("empty bearer", 401, 'Bearer realm="engram", error="invalid_token"'),
        ("expired token", 401, 'Bearer realm="engram", error="invalid_token"'),
    ],
)
async def test_context_and_mcp_refuse_a_bad_token_with_the_same_answer(
    host: Host, case: str, status: int, challenge: str
) -> None:
    expiring = host.token(Permission.ADMIN, ttl=timedelta(minutes=1))
    host.clock.advance(timedelta(minutes=2))
    headers = {
        "no token": {},
        "another scheme": {"Authorization": "Basic YWRhOnNlY3JldA=="},
        "unknown token": {"Authorization": "Bearer eng_" + "x" * 43},
        "empty bearer": {"Authorization": "Bearer   "},
        "expired token": {"Authorization": f"Bearer {expiring}"},
    }[case]

    context, mcp = await _both(host, headers)

    assert context.status_code == mcp.status_code == status
    assert context.content == mcp.content
    assert _challenge(context) == _challenge(mcp) == challenge
    assert context.headers["cache-control"] == mcp.headers["cache-control"] == "no-store"
    expected_code = "token_expired" if case == "expired token" else "unauthorized"
    assert _parsed(context.content)["error"]["code"] == expected_code


@pytest.mark.req("engram.provider.one-auth-surface", "engram.mcp.http-auth")
async def test_an_under_privileged_token_gets_the_same_refusal_from_the_same_rule(
    host: Host,
) -> None:
    weak = host.token(Permission.CORRECT)

    context, mcp = await _both(host, {"Authorization": f"Bearer {weak}"})

    assert context.status_code == mcp.status_code == 403
    insufficient = 'Bearer realm="engram", error="insufficient_scope"'
    assert _challenge(context) == _challenge(mcp) == insufficient
    # One rule, one message; each names the permission its route needs.
    for response, needed in ((context, "read"), (mcp, "memory")):
        assert parse_strict(response.content) == {
            "error": {
                "code": "forbidden",
                "message": f"this token lacks the {needed!r} permission",
                "status": 403,
            }
        }


@pytest.mark.req("engram.provider.memory-permission")
async def test_a_memory_token_uses_the_mcp_tools_and_nothing_over_beliefs(host: Host) -> None:
    memory = host.token(Permission.MEMORY)
    auth = {"Authorization": f"Bearer {memory}"}
    belief = host.demo.beliefs[0].id
    async with _client(host) as client:
        tools = await client.post("/mcp", content=MCP_BODY, headers={**MCP_HEADERS, **auth})
        refused = [
            await client.get("/v1/context", headers=auth),
            await client.get("/v1/context/diff?since=2020-01-01T00:00:00Z", headers=auth),
            await client.get("/v1/beliefs", headers=auth),
            await client.get(f"/v1/beliefs/{belief}/history", headers=auth),
            await client.post(
                "/v1/context/correct",
                headers=auth,
                json={"belief_id": belief, "new_value": "x", "runtime_id": "agent"},
            ),
            await client.get("/v1/corrections", headers=auth),
            await client.post("/v1/corrections/c/confirm", headers=auth),
            await client.post(
                "/v1/beliefs", headers=auth, json={"category": "goal", "statement": "x"}
            ),
            await client.delete(f"/v1/beliefs/{belief}", headers=auth),
        ]

    assert tools.status_code == 200
    assert "engram_recall" in tools.text
    assert [r.status_code for r in refused] == [403] * len(refused)
    assert {_parsed(r.content)["error"]["code"] for r in refused} == {"forbidden"}


def _limited_app(store: Store, clock: FixedClock, **settings: Any) -> Starlette:
    config = ProviderConfig(
        public_url=BASE, rate_limit_per_minute=60, rate_limit_burst=3, **settings
    )
    return create_app(config, store, clock)


async def _get(
    app: Starlette, path: str, headers: dict[str, str], peer: str = "127.0.0.1"
) -> httpx.Response:
    transport = httpx.ASGITransport(app=app, client=(peer, 40000))
    async with httpx.AsyncClient(transport=transport, base_url=BASE) as client:
        return await client.get(path, headers=headers)


@pytest.mark.req("engram.provider.rate-limit-unauthenticated")
async def test_fresh_made_up_tokens_are_limited_per_address_before_any_lookup(
    memory_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = FixedClock()
    app = _limited_app(memory_store, clock)
    looked_up: list[str] = []
    services = app.state.services
    authorize = services.authorize_now

    def counting(raw: str, *args: Any) -> Any:
        looked_up.append(raw)
        return authorize(raw, *args)

    monkeypatch.setattr(services, "authorize_now", counting)
    answers = [
        await _get(app, "/v1/context", {"Authorization": f"Bearer eng_bogus{i:038d}"})
        for i in range(10)
    ]

    # Before: each fresh token had a full bucket of its own, so none was ever limited.
    assert [a.status_code for a in answers] == [401] * 3 + [429] * 7
    assert answers[-1].headers["retry-after"] == "1"
    assert len(looked_up) == 3  # refused at the door, the store never asked
    other = await _get(app, "/v1/context", {"Authorization": "Bearer eng_x"}, peer="10.0.0.9")
    assert other.status_code == 401  # another address has its own budget


@pytest.mark.req("engram.provider.rate-limit-authenticated")
async def test_an_authenticated_token_is_limited_by_its_id_and_a_flood_cannot_reset_it(
    memory_store: Store,
) -> None:
    clock = FixedClock()
    proxies = parse_trusted_proxies("127.0.0.1")
    app = _limited_app(memory_store, clock, rate_limit_keys=20, trusted_proxies=proxies)
    ensure_schema(memory_store)
    demo = seed_demo(memory_store, clock)
    auth = {"Authorization": f"Bearer {demo.token}"}
    served = [await _get(app, "/v1/context", auth) for _ in range(3)]
    assert [r.status_code for r in served] == [200] * 3
    assert (await _get(app, "/v1/context", auth)).status_code == 429

    # Before: ~10,000 requests with fresh tokens evicted the exhausted bucket (LRU), and the
    # token was served again. Now strangers from 200 forwarded addresses fill the address
    # table; the token's bucket lives apart and is never forgotten while it is not full.
    for i in range(200):
        forwarded = {"X-Forwarded-For": f"198.51.100.{i % 250}, 203.0.113.{i // 250}"}
        await _get(app, "/v1/context", {"Authorization": f"Bearer eng_{i:043d}", **forwarded})
    assert (await _get(app, "/v1/context", auth)).status_code == 429
    clock.advance(timedelta(seconds=1))
    assert (await _get(app, "/v1/context", auth)).status_code == 200


@pytest.mark.req("engram.provider.rate-limit-no-reset")
def test_the_limiter_forgets_only_buckets_that_have_refilled() -> None:
    clock = FixedClock()
    limiter = RateLimiter(clock, per_minute=60, burst=2, max_keys=3)
    for _ in range(2):
        limiter.check("victim")
    with pytest.raises(RateLimited):
        limiter.check("victim")
    limiter.check("a")
    limiter.check("b")
    with pytest.raises(RateLimited):  # the table is full of callers still spending
        limiter.check("newcomer")
    with pytest.raises(RateLimited):
        limiter.check("victim")  # not reset by the newcomers
    clock.advance(timedelta(seconds=2))  # every bucket refills to full: forgetting is lossless
    limiter.check("newcomer")
    assert len(limiter) <= 3


@pytest.mark.req("engram.provider.trusted-proxies")
async def test_x_forwarded_for_counts_only_from_a_trusted_proxy(memory_store: Store) -> None:
    clock = FixedClock()
    untrusted = _limited_app(memory_store, clock)
    spoofed = [
        await _get(untrusted, "/healthz", {"X-Forwarded-For": f"192.0.2.{i}"}) for i in range(5)
    ]
    assert [r.status_code for r in spoofed] == [200] * 3 + [429] * 2  # one peer, one budget

    behind_proxy = _limited_app(
        memory_store, clock, trusted_proxies=parse_trusted_proxies("127.0.0.0/8, ::1")
    )
    clients = [
        await _get(behind_proxy, "/healthz", {"X-Forwarded-For": f"192.0.2.{i}, 127.0.0.2"})
        for i in range(5)
    ]
    assert [r.status_code for r in clients] == [200] * 5  # five clients behind the proxy
    same = [
        await _get(behind_proxy, "/healthz", {"X-Forwarded-For": "192.0.2.77"}) for _ in range(4)
    ]
    assert [r.status_code for r in same] == [200] * 3 + [429]
