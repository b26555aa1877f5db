"""Production profile (OpenWOP v2 Conformance): durable state, Idempotency-Key, backpressure,
rate limits, one structured log line per request, no secrets in logs, the signed-export cache."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from provider_harness import Provider, make_provider

from engram.context import list_corrections
from engram.core.canonical import parse_strict
from engram.provider import ProviderConfig
from engram.store import Store, open_store


def _parsed(data: bytes | str) -> dict[str, Any]:
    # Strictly parsed and checked to be an object; the test then walks it freely.
    value = parse_strict(data)
    assert isinstance(value, dict)
    return value


def _correction(provider: Provider) -> dict[str, str]:
    belief = next(b for b in provider.demo.beliefs if b.category == "preference")
    return {"belief_id": belief.id, "new_value": "Prefers Go.", "runtime_id": "rt-7"}


@pytest.mark.req("engram.provider.idempotency-retries")
def test_five_retries_of_one_idempotency_key_make_one_correction_and_one_answer(
    provider: Provider,
) -> None:
    headers = provider.headers(**{"Idempotency-Key": "retry-1"})
    answers = [
        provider.client.post("/v1/context/correct", headers=headers, json=_correction(provider))
        for _ in range(6)
    ]

    assert {a.status_code for a in answers} == {202}
    assert len({a.content for a in answers}) == 1
    assert [a.headers.get("idempotent-replayed") for a in answers[1:]] == ["true"] * 5
    assert len(list_corrections(provider.store, provider.demo.subject.id)) == 1


@pytest.mark.req("engram.provider.idempotency-conflict", "engram.context.error-shape")
def test_the_same_idempotency_key_with_another_body_is_refused(provider: Provider) -> None:
    headers = provider.headers(**{"Idempotency-Key": "retry-2"})
    first = provider.client.post("/v1/context/correct", headers=headers, json=_correction(provider))
    other = provider.client.post(
        "/v1/context/correct", headers=headers, json={**_correction(provider), "new_value": "C"}
    )

    assert first.status_code == 202
    assert other.status_code == 422
    assert other.json()["error"]["code"] == "idempotency_conflict"
    assert len(list_corrections(provider.store, provider.demo.subject.id)) == 1


@pytest.mark.req("engram.provider.state-persisted")
def test_state_survives_a_restart_of_the_provider(tmp_path: Path) -> None:
    url = f"sqlite://{tmp_path / 'engram.db'}"
    first = make_provider(open_store(url))
    with first.client:
        proposed = first.client.post(
            "/v1/context/correct", headers=first.headers(), json=_correction(first)
        ).json()
        kid = first.client.get("/v1/context", headers=first.headers()).json()["kid"]
    first.store.close()

    reopened: Store = open_store(url)
    second = make_provider(reopened)
    with second.client:
        export = second.client.get("/v1/context", headers=second.headers(first.demo.token))
        listed = second.client.get("/v1/corrections", headers=second.headers(first.demo.token))
    reopened.close()

    assert export.status_code == 200
    assert export.json()["kid"] == kid
    assert [c["id"] for c in listed.json()["corrections"]] == [proposed["id"]]


@pytest.mark.req("engram.provider.backpressure-503", "engram.context.error-shape")
async def test_at_capacity_a_request_is_refused_with_503_and_retry_after(
    memory_store: Store,
) -> None:
    provider = make_provider(memory_store, ProviderConfig(max_concurrent=1))
    release = asyncio.Event()
    started = asyncio.Event()

    async def slow_body() -> AsyncIterator[bytes]:
        started.set()
        await release.wait()
        yield b'{"belief_id": "test", "new_value": "v", "runtime_id": "rt"}'

    transport = httpx.ASGITransport(app=provider.app)
    async with httpx.AsyncClient(transport=transport, base_url="https://provider.test") as client:
        holder = asyncio.create_task(
            client.post("/v1/context/correct", headers=provider.headers(), content=slow_body())
        )
        await started.wait()
        refused = await client.get("/v1/context", headers=provider.headers())
        release.set()
        held = await holder
        after = await client.get("/v1/context", headers=provider.headers())

    assert refused.status_code == 503
    assert refused.headers["retry-after"] == "1"
    assert refused.json()["error"]["code"] == "service_unavailable"
    assert held.status_code == 202
    assert after.status_code == 200


@pytest.mark.req("engram.provider.rate-limit-429", "engram.context.error-shape")
def test_over_the_rate_a_caller_gets_429_rate_limited_with_retry_after(
    memory_store: Store,
) -> None:
    provider = make_provider(
        memory_store, ProviderConfig(rate_limit_per_minute=60, rate_limit_burst=3)
    )
    with provider.client:
        served = [provider.client.get("/v1/context", headers=provider.headers()) for _ in range(3)]
        limited = provider.client.get("/v1/context", headers=provider.headers())
        other_caller = provider.client.get("/.well-known/engram")
        provider.clock.advance(timedelta(seconds=1))
        refilled = provider.client.get("/v1/context", headers=provider.headers())

    assert [r.status_code for r in served] == [200, 200, 200]
    assert limited.status_code == 429
    assert limited.json() == {
        "error": {"code": "rate_limited", "message": "too many requests; slow down", "status": 429}
    }
    assert limited.headers["retry-after"] == "1"
    assert other_caller.status_code == 200
    assert refilled.status_code == 200


@pytest.mark.req("engram.provider.request-log", "engram.provider.log-no-secrets")
def test_each_request_logs_one_json_line_without_the_token(
    provider: Provider, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="engram.provider.access")

    provider.client.get("/v1/context", headers=provider.headers(**{"X-Request-Id": "req-42"}))
    provider.client.get("/v1/context?scope=nope", headers=provider.headers())
    provider.client.get("/v1/context", headers={"Authorization": "Bearer eng_wrong"})

    lines = [r.getMessage() for r in caplog.records if r.name == "engram.provider.access"]
    assert len(lines) == 3
    entries = [_parsed(line) for line in lines]
    assert entries[0]["request_id"] == "req-42"
    assert entries[0]["status"] == 200
    assert entries[0]["subject_id"] == provider.demo.subject.id
    assert entries[0]["error_code"] is None
    assert isinstance(entries[0]["latency_ms"], float)
    assert (entries[1]["status"], entries[1]["error_code"]) == (400, "invalid_scope")
    assert (entries[2]["status"], entries[2]["error_code"]) == (401, "unauthorized")
    assert len({e["request_id"] for e in entries}) == 3
    everything = caplog.text
    assert provider.demo.token not in everything
    assert provider.demo.token[4:20] not in everything
    assert "eng_wrong" not in everything


@pytest.mark.req("engram.provider.export-cache")
def test_the_signed_export_is_reused_until_state_changes_or_expiry_nears(
    provider: Provider,
) -> None:
    first = provider.client.get("/v1/context", headers=provider.headers()).content
    provider.clock.advance(timedelta(hours=10, minutes=59))
    cached = provider.client.get("/v1/context", headers=provider.headers()).content
    provider.clock.advance(timedelta(minutes=2))  # less than the 1 h refresh margin left
    refreshed = provider.client.get("/v1/context", headers=provider.headers()).content
    provider.client.post(
        "/v1/beliefs", headers=provider.headers(), json={"category": "goal", "statement": "Swim."}
    )
    changed = provider.client.get("/v1/context", headers=provider.headers()).json()

    assert cached == first
    assert refreshed != first
    assert _parsed(refreshed)["issued_at"] == "2026-01-01T21:01:00Z"
    assert "Swim." in changed["system_prompt_injection"]
