"""OpenTelemetry tracing of the provider and ``/mcp`` (``engram-memory-stack[otel]``): off by
default, one server span per request named after the route template, and no token, belief text
or subject id in any span, attribute or event, even when the client puts a token in the path and
the query and the operator asks the instrumentation to capture every request header. Spans are
captured with the SDK's own ``InMemorySpanExporter``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from starlette.applications import Starlette

from engram.cli.internals import provider_app_with_mcp
from engram.context import Permission, ensure_schema, issue_token
from engram.context.internals import seed_demo
from engram.core.clock import FixedClock
from engram.memory import default_manifest_text
from engram.memory.internals import SeatSource
from engram.provider import ProviderConfig, create_app
from engram.provider.internals import ProviderMiddleware
from engram.store import Store

BASE = "http://127.0.0.1:8420"
MCP_HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
SECRET_STATEMENT = "Ada keeps her pension pin as 4417 under the blue mug"


def _seat(directory: Path) -> SeatSource:
    manifest = directory / ".engram" / "ote.toml"
    manifest.parent.mkdir(parents=True)
    manifest.write_text(default_manifest_text(), encoding="utf-8")
    return SeatSource("--ote", manifest)


@asynccontextmanager
async def _client(app: Starlette) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 40000))
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url=BASE) as client,
    ):
        yield client


def _texts(span: ReadableSpan) -> list[str]:
    """Everything a span would carry to a collector, as text."""
    texts = [span.name, str(span.status.description or "")]
    texts += [f"{k}={v!r}" for k, v in (span.attributes or {}).items()]
    for event in span.events:
        texts.append(event.name)
        texts += [f"{k}={v!r}" for k, v in (event.attributes or {}).items()]
    return texts


@pytest.mark.req("engram.provider.tracing-no-secrets")
async def test_spans_name_route_templates_and_carry_no_token_or_belief_text(
    memory_store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The operator asks for every request header to be recorded: credentials stay redacted.
    monkeypatch.setenv("OTEL_INSTRUMENTATION_HTTP_CAPTURE_HEADERS_SERVER_REQUEST", ".*")
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    clock = FixedClock()
    ensure_schema(memory_store)
    demo = seed_demo(memory_store, clock)
    config = ProviderConfig(public_url=BASE, otel=True)
    app = provider_app_with_mcp(
        config, memory_store, clock, _seat(tmp_path), tracer_provider=tracer_provider
    )
    token = demo.token
    memory_token = issue_token(
        memory_store, clock, demo.subject.id, [Permission.MEMORY], timedelta(days=1)
    )
    auth = {"Authorization": f"Bearer {token}"}
    async with _client(app) as client:
        export = await client.get("/v1/context", headers=auth)
        assert export.status_code == 200
        statements = [
            b["statement"]
            for b in (await client.get("/v1/beliefs", headers=auth)).json()["beliefs"]
        ]
        added = await client.post(
            "/v1/beliefs",
            json={"category": "financial", "statement": SECRET_STATEMENT},
            headers={**auth, "Idempotency-Key": "k-" + token[-12:]},
        )
        assert added.status_code == 201, added.text
        belief_id = added.json()["id"]
        corrected = await client.post(
            "/v1/context/correct",
            json={
                "belief_id": belief_id,
                "new_value": SECRET_STATEMENT + " (moved)",
                "runtime_id": "rt",
                "timestamp": "2026-01-01T00:00:00Z",
            },
            headers=auth,
        )
        assert corrected.status_code == 202, corrected.text
        history = await client.get(f"/v1/beliefs/{belief_id}/history", headers=auth)
        assert history.status_code == 200
        # A careless client: the token in the path and in the query string.
        stray = await client.get(f"/v1/context/{token}?token={token}&q={SECRET_STATEMENT}")
        assert stray.status_code == 404
        refused = await client.get(f"/v1/context?access_token={token}")
        assert refused.status_code == 401
        mcp = await client.post(
            "/mcp",
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "memory_store", "arguments": {"content": SECRET_STATEMENT}},
            },
            headers={**MCP_HEADERS, "Authorization": f"Bearer {memory_token}"},
        )
        assert mcp.status_code == 200, mcp.text
    spans = exporter.get_finished_spans()
    server = [s for s in spans if s.kind.name == "SERVER"]
    names = [s.name for s in server]
    assert "GET /v1/context" in names
    assert "POST /v1/beliefs" in names
    assert "GET /v1/beliefs/{bid}/history" in names
    assert "POST /mcp" in names
    assert "GET (unmatched)" in names
    routes = {s.attributes.get("http.route") for s in server if s.attributes}
    assert "/v1/context/correct" in routes
    statuses = {s.attributes.get("http.status_code") for s in server if s.attributes}
    assert {200, 201, 202, 401, 404} <= statuses
    # The operator's header capture did run, and recorded the credential redacted.
    captured = [
        v
        for s in server
        for k, v in (s.attributes or {}).items()
        if k == "http.request.header.authorization"
    ]
    assert captured
    assert all(value == ("[REDACTED]",) for value in captured)
    secrets = [
        token,
        token[4:20],
        memory_token,
        SECRET_STATEMENT,
        SECRET_STATEMENT[:24],
        belief_id,
        demo.subject.id,
        *statements,
    ]
    assert len(statements) >= 8
    for span in spans:
        for text in _texts(span):
            for secret in secrets:
                assert secret not in text, (span.name, text)


@pytest.mark.req("engram.provider.tracing-off-by-default")
def test_tracing_is_off_by_default_and_follows_the_standard_variables(
    memory_store: Store,
) -> None:
    assert ProviderConfig.from_env({}).otel is False
    assert ProviderConfig.from_env({"ENGRAM_OTEL": "1"}).otel is True
    endpoint = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}
    assert ProviderConfig.from_env(endpoint).otel is True
    assert ProviderConfig.from_env({**endpoint, "OTEL_SDK_DISABLED": "true"}).otel is False
    assert ProviderConfig.from_env({**endpoint, "OTEL_TRACES_EXPORTER": "none"}).otel is False
    # Off: no tracing layer at all around the provider's own middleware.
    app = create_app(ProviderConfig(), memory_store, FixedClock())
    layers: list[object] = [m.cls for m in app.user_middleware]
    assert layers == [ProviderMiddleware]
