"""The same server at ``/mcp`` of the provider app (what ``engram serve`` runs), over Streamable
HTTP in process, driven by the official MCP client; and the context resource's verification.

docs/spec/mcp.md "Streamable HTTP", "Context resources".
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp.shared.exceptions import MCPError
from mcp_kit import HTTP_BASE, error_text, http_session, structured, write_seat
from starlette.applications import Starlette

from engram.cli.internals import provider_app_with_mcp
from engram.context import issue_token
from engram.context.internals import DemoSubject, seed_demo
from engram.core.canonical import parse_strict
from engram.core.clock import SystemClock
from engram.core.keys import PublicKey
from engram.core.signing import verify_document
from engram.errors import SignatureInvalid
from engram.mcp import ProviderContext, SeatSource
from engram.provider import ProviderConfig
from engram.store import Store, open_store


def _parsed(data: bytes | str) -> dict[str, Any]:
    # Strictly parsed and checked to be an object; the test then walks it freely.
    value = parse_strict(data)
    assert isinstance(value, dict)
    return value


CLOCK = SystemClock()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = open_store(f"sqlite:///{tmp_path / 'engram.db'}")
    yield opened
    opened.close()


@pytest.fixture
def seat(tmp_path: Path) -> SeatSource:
    return SeatSource("--ote", write_seat(tmp_path / "repo"))


@pytest.fixture
def demo(store: Store) -> DemoSubject:
    return seed_demo(store, CLOCK)


@pytest.fixture
def app(store: Store, seat: SeatSource, demo: DemoSubject) -> Starlette:
    return provider_app_with_mcp(ProviderConfig(public_url=HTTP_BASE), store, CLOCK, seat)


async def _post(app: Starlette, headers: dict[str, str]) -> httpx2.Response:
    body = b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}'
    async with (
        app.router.lifespan_context(app),
        httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=HTTP_BASE) as client,
    ):
        return await client.post(
            "/mcp",
            content=body,
            headers={
                "content-type": "application/json",
                "accept": "application/json, text/event-stream",
                **headers,
            },
        )


@pytest.mark.req("engram.mcp.http-auth")
async def test_mcp_endpoint_without_a_token_is_401_in_the_spec_error_shape(
    app: Starlette,
) -> None:
    response = await _post(app, {})

    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert parse_strict(response.content) == {
        "error": {"code": "unauthorized", "message": "token missing or invalid", "status": 401}
    }


@pytest.mark.req("engram.mcp.http-auth")
async def test_mcp_endpoint_refuses_a_token_without_memory(
    app: Starlette, store: Store, demo: DemoSubject
) -> None:
    reader = issue_token(store, CLOCK, demo.subject.id, ["read", "correct"])

    response = await _post(app, {"Authorization": f"Bearer {reader}"})

    assert response.status_code == 403
    assert "'memory' permission" in response.text


@pytest.mark.req("engram.mcp.http")
async def test_serve_without_a_seat_has_no_mcp_endpoint(store: Store, demo: DemoSubject) -> None:
    bare = provider_app_with_mcp(ProviderConfig(public_url=HTTP_BASE), store, CLOCK, None)

    response = await _post(bare, {"Authorization": f"Bearer {demo.token}"})

    assert response.status_code == 404


@pytest.mark.req(
    "engram.mcp.http",
    "engram.mcp.tools.six",
    "engram.mcp.record",
    "engram.mcp.recall",
    "engram.mcp.outcome-capped",
    "engram.mcp.outcome-attested-refused",
    "engram.mcp.status",
)
async def test_tools_over_streamable_http(app: Starlette, demo: DemoSubject) -> None:
    text = "Known process: restart the indexer after K07 rotates the shard map."
    async with http_session(app, demo.token) as session:
        names = {t.name for t in (await session.list_tools()).tools}
        recorded = structured(
            await session.call_tool("engram_record", {"text": text, "kind": "known_process"})
        )
        again = structured(
            await session.call_tool("engram_record", {"text": text, "kind": "known_process"})
        )
        memory_id = recorded["memory"]["id"]
        recalled = structured(
            await session.call_tool("engram_recall", {"query": "indexer shard map", "k": 3})
        )
        judged = {
            decision: structured(
                await session.call_tool(
                    "engram_outcome",
                    {"memory_id": memory_id, "signal": "rubric_reject", "decision_id": decision},
                )
            )
            for decision in ("review-1", "review-1")
        }
        gate = structured(
            await session.call_tool(
                "engram_outcome",
                {
                    "memory_id": memory_id,
                    "signal": "tests_pass",
                    "decision_id": "ci-9",
                    "weight": 3,
                },
            )
        )
        human = await session.call_tool(
            "engram_outcome",
            {"memory_id": memory_id, "signal": "human_accept", "decision_id": "pr-5"},
        )
        status = structured(await session.call_tool("engram_status", {}))

    assert len(names) == 8
    # Over HTTP every call acts for the token's subject: their own ring (memory-ownership.md).
    assert recorded["memory"]["ring_id"] == f"subject:{demo.subject.id}"
    assert recorded["memory"]["entities"] == ["K07"]
    assert again == {**recorded, "created": False}
    assert recalled["hits"][0]["memory"]["id"] == memory_id
    assert judged["review-1"]["duplicate"] is True
    assert judged["review-1"]["delta_beta"] == pytest.approx(0.30)
    assert gate["delta_alpha"] == 3
    assert "recorded only by `engram outcome --attestation" in error_text(human)
    assert status["oracle_split"] == {"rubric": 1, "structural": 1}
    assert status["graduation"] == "blocked (no attested evidence)"
    assert status["vector_coverage"]["local-hash-128"] == 1
    assert status["seat"]["origin"] == "--ote"


@pytest.mark.req("engram.mcp.distill", "engram.mcp.complete")
async def test_distill_records_a_known_process_and_complete_stays_blocked(
    app: Starlette, demo: DemoSubject
) -> None:
    episodes = [
        "The build failed with 'lockfile out of date'. Root cause: pip cache. Fix: run "
        "pip cache purge, then rebuild.",
        "Again 'lockfile out of date' on CI. We ran pip cache purge and the rebuild passed.",
    ]
    async with http_session(app, demo.token) as session:
        distilled = structured(await session.call_tool("engram_distill", {"episodes": episodes}))
        memory_id = distilled["memory"]["id"]
        for run in range(12):
            await session.call_tool(
                "engram_outcome",
                {"memory_id": memory_id, "signal": "model_accept", "decision_id": f"m{run}"},
            )
        completed = structured(await session.call_tool("engram_complete", {"memory_id": memory_id}))

    assert distilled["memory"]["kind"] == "known_process"
    assert "pip cache purge" in distilled["memory"]["text"]
    assert completed["graduation"] == "blocked (no attested evidence)"
    assert completed["verdicts"][0]["status_after"] == "candidate"


@pytest.mark.req("engram.mcp.context-resource", "engram.mcp.http")
async def test_context_resource_is_the_callers_verified_export(
    app: Starlette, demo: DemoSubject
) -> None:
    async with http_session(app, demo.token) as session:
        full = _parsed((await session.read_resource("engram://context")).contents[0].text)  # type: ignore[union-attr]
        work = _parsed(
            (await session.read_resource("engram://context/professional")).contents[0].text  # type: ignore[union-attr]
        )
        with pytest.raises(MCPError, match="invalid_scope"):
            await session.read_resource("engram://context/everything")
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=HTTP_BASE) as c:
        keys = (await c.get("/.well-known/engram-keys")).json()["keys"]

    assert isinstance(full, dict)
    assert isinstance(work, dict)
    published = {k["kid"]: PublicKey.from_b64url(k["public_key"]) for k in keys}
    verify_document(full["export"], published[full["kid"]])  # raises if it does not verify
    assert full["subject_id"] == demo.subject.id
    assert full["system_prompt"] == full["export"]["system_prompt_injection"]
    categories = {b["category"] for b in work["export"]["beliefs"]}
    assert not categories & {"health", "financial"}


class _FlipOneByte(httpx.AsyncBaseTransport):
    """Passes requests to the provider and alters one character of every export it returns."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        body = await response.aread()
        if request.url.path == "/v1/context":
            body = body.replace(b"Europe", b"Furope", 1)
        # aread() decoded the body: its old length and Content-Encoding no longer describe it.
        dropped = ("content-length", "content-encoding")
        headers = [(k, v) for k, v in response.headers.items() if k.lower() not in dropped]
        return httpx.Response(response.status_code, headers=headers, content=body)


@pytest.mark.req("engram.mcp.context-resource")
async def test_a_tampered_export_is_refused_not_served(app: Starlette, demo: DemoSubject) -> None:
    source = ProviderContext(
        HTTP_BASE, demo.token, transport=lambda: _FlipOneByte(httpx.ASGITransport(app=app))
    )

    async with app.router.lifespan_context(app):
        with pytest.raises(SignatureInvalid):
            await source.fetch(None)
