"""The runtime SDK against engram's real provider, in-process (Engram v0.1, runtime Tiers 1-3).

Each test is a short session a runtime author would recognise: start, inject, survive an outage,
refuse what does not verify, sync, correct. The provider is the real ASGI app over an in-memory
store; its clock and the runtime's are separate FixedClocks the tests move.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from runtime_harness import RealProvider

from engram.context import (
    add_belief,
    confirm_correction,
    delete_belief,
    list_pending_corrections,
)
from engram.core.canonical import parse_strict
from engram.errors import (
    ExportExpired,
    InvalidScope,
    RemoteError,
    SignatureInvalid,
    Unauthorized,
)
from engram.runtime import AsyncEngramClient, EngramClient, system_prompt_with_context, with_context
from engram.runtime.internals import CONTEXT_HEADING


def _parsed(data: bytes | str) -> dict[str, Any]:
    # Strictly parsed and checked to be an object; the test then walks it freely.
    value = parse_strict(data)
    assert isinstance(value, dict)
    return value


@pytest.fixture
def provider() -> Iterator[RealProvider]:
    with RealProvider.start() as running:
        yield running


@pytest.mark.req(
    "engram.context.r1.fetch-at-start",
    "engram.context.r3.fetch-keys",
    "engram.context.r3.select-kid",
    "engram.context.r3.verify-every-export",
    "engram.runtime.discovery",
)
async def test_a_session_starts_with_discovery_keys_and_one_verified_export(
    provider: RealProvider,
) -> None:
    async with provider.async_client() as engram:
        view = await engram.context()
        keys = await engram.keys()
    assert provider.wire.requests == {
        "/.well-known/engram": 1,
        "/.well-known/engram-keys": 1,
        "/v1/context": 1,
    }
    assert view.kid in keys
    assert view.display_name == "Ada Example"
    assert len(view.beliefs) == len(provider.demo.beliefs)


@pytest.mark.req("engram.context.r1.fetch-at-start", "engram.context.r1.inject")
def test_the_sync_client_injects_the_exports_own_prompt(provider: RealProvider) -> None:
    with provider.sync_client() as engram:
        view = engram.fetch()
        messages = engram.messages([{"role": "user", "content": "What should I cook?"}])
        prompt = engram.system_prompt()
    assert prompt == view.export["system_prompt_injection"]
    assert prompt.startswith("User: Ada Example (Europe/London).")
    assert messages == [
        {"role": "system", "content": prompt},
        {"role": "user", "content": "What should I cook?"},
    ]
    # A runtime's own instructions stay first; the context follows them in the same message.
    own = with_context([{"role": "system", "content": "Be brief."}], view)
    assert own[0]["content"].startswith("Be brief.\n\n")
    assert own[0]["content"].endswith(prompt)
    plain = system_prompt_with_context("Be brief.", view)
    assert plain == f"Be brief.\n\n{CONTEXT_HEADING}\n{prompt}"


@pytest.mark.req("engram.context.r1.reject-expired", "engram.runtime.never-hold-unverified")
async def test_an_export_already_expired_on_arrival_is_refused_and_never_held(
    provider: RealProvider,
) -> None:
    # The runtime's clock is 13 h ahead of the provider's: the 12 h export arrives expired.
    provider.runtime_clock.advance(timedelta(hours=13))
    async with provider.async_client() as engram:
        with pytest.raises(ExportExpired, match="expired at"):
            await engram.context()
        assert engram.current is None
        with pytest.raises(ExportExpired):
            await engram.system_prompt()


@pytest.mark.req("engram.context.r1.reject-expired", "engram.runtime.offline-fallback")
def test_offline_the_last_verified_export_is_used_until_exactly_its_expiry(
    provider: RealProvider,
) -> None:
    with provider.sync_client() as engram:
        view = engram.context()
        provider.wire.down = True
        # Inside the refresh margin the refresh fails; the held view is still good.
        provider.runtime_clock.current = view.expires_at - timedelta(minutes=1)
        assert engram.context() is view
        assert isinstance(engram.last_refresh_error, RemoteError)
        provider.runtime_clock.current = view.expires_at - timedelta(microseconds=1)
        assert engram.system_prompt() == view.system_prompt()
        provider.runtime_clock.current = view.expires_at
        with pytest.raises(ExportExpired, match="could not be fetched"):
            engram.context()
        assert engram.current is None
        # Back online: the next call fetches a fresh export.
        provider.wire.down = False
        provider.clock.current = view.expires_at
        assert engram.context().expires_at > view.expires_at


@pytest.mark.req("engram.context.r1.fetch-at-start", "engram.runtime.refresh-before-expiry")
async def test_the_view_is_refreshed_once_inside_the_refresh_margin(
    provider: RealProvider,
) -> None:
    async with provider.async_client(refresh_margin=timedelta(minutes=10)) as engram:
        first = await engram.context()
        provider.advance(first.expires_at - provider.runtime_clock.now() - timedelta(minutes=11))
        assert await engram.context() is first
        assert provider.wire.requests["/v1/context/diff"] == 0
        provider.advance(timedelta(minutes=2))
        refreshed = await engram.context()
    assert provider.wire.requests["/v1/context/diff"] == 1
    assert refreshed.expires_at > first.expires_at


@pytest.mark.req("engram.context.r2.incremental-sync")
async def test_a_diff_with_a_tombstone_removes_the_belief_locally(provider: RealProvider) -> None:
    health = provider.belief_id("health")
    async with provider.async_client() as engram:
        before = await engram.context()
        assert "penicillin" in before.system_prompt()
        provider.advance(timedelta(seconds=5))
        delete_belief(provider.store, provider.clock, provider.demo.subject.id, health)
        added = add_belief(
            provider.store, provider.clock, provider.demo.subject.id, "preference", "Likes tea."
        )
        after = await engram.sync()
    assert provider.wire.requests["/v1/context"] == 1
    assert provider.wire.requests["/v1/context/diff"] == 1
    assert after.belief(health) is None
    assert after.belief(added.id) is not None
    assert "penicillin" not in after.system_prompt()
    assert "- [preference] Likes tea." in after.system_prompt()
    assert before.belief(health) is not None  # views are immutable


@pytest.mark.req("engram.context.r2.incremental-sync", "engram.runtime.diff-fallback")
async def test_a_provider_without_diffs_gets_a_full_refetch(provider: RealProvider) -> None:
    # A Reader-tier provider has no /v1/context/diff; its 404 sends the SDK back to /v1/context.
    app = provider.app

    async def reader_tier(scope: dict[str, object], receive: object, send: object) -> None:
        if scope.get("path") == "/v1/context/diff":
            scope = {**scope, "path": "/v1/no-such-route"}
        await app(scope, receive, send)

    provider.app = reader_tier
    async with provider.async_client() as engram:
        await engram.context()
        provider.advance(timedelta(seconds=5))
        delete_belief(
            provider.store, provider.clock, provider.demo.subject.id, provider.belief_id("goal")
        )
        after = await engram.sync()
    assert provider.wire.requests["/v1/context"] == 2
    assert after.belief(provider.belief_id("goal")) is None


@pytest.mark.req(
    "engram.context.r2.propose-correction",
    "engram.context.r2.correction-not-authoritative",
    "engram.runtime.correction-idempotency",
)
def test_a_correction_is_proposed_and_only_applied_once_the_subject_confirms(
    provider: RealProvider,
) -> None:
    job = provider.belief_id("professional")
    with provider.sync_client(runtime_id="kitchen-bot") as engram:
        before = engram.context()
        proposed = engram.propose_correction(job, "Works as a data scientist.", "user said so")
        post = provider.wire.sent[-1]
        assert post.url.path == "/v1/context/correct"
        assert _parsed(post.content)["runtime_id"] == "kitchen-bot"
        assert post.headers["Idempotency-Key"] == proposed.idempotency_key
        assert proposed.status == "pending_user_confirmation"
        assert engram.pending_corrections == (proposed,)
        # Not authoritative: the local view and a fresh sync both keep the old statement.
        assert engram.context().belief(job) == before.belief(job)
        provider.advance(timedelta(seconds=5))
        synced = engram.sync()
        assert synced.belief(job) is not None
        assert synced.belief(job).statement == before.belief(job).statement  # type: ignore[union-attr]
        assert engram.pending_corrections == (proposed,)
        # The subject confirms through the provider's domain; the next sync shows it.
        provider.advance(timedelta(seconds=5))
        confirm_correction(provider.store, provider.clock, provider.demo.subject.id, proposed.id)
        provider.advance(timedelta(seconds=5))
        confirmed = engram.sync()
    assert confirmed.belief(job).statement == "Works as a data scientist."  # type: ignore[union-attr]
    assert "Works as a data scientist." in confirmed.system_prompt()
    assert not engram.pending_corrections


@pytest.mark.req("engram.context.r2.propose-correction", "engram.runtime.correction-idempotency")
async def test_a_lost_answer_is_retried_with_the_same_key_and_recorded_once(
    provider: RealProvider,
) -> None:
    provider.wire.lose_next_response.add("/v1/context/correct")
    async with provider.async_client() as engram:
        proposed = await engram.propose_correction(provider.belief_id("goal"), "No talk planned.")
    posts = [r for r in provider.wire.sent if r.url.path == "/v1/context/correct"]
    assert len(posts) == 2
    assert {r.headers["Idempotency-Key"] for r in posts} == {proposed.idempotency_key}
    pending = list_pending_corrections(provider.store, provider.demo.subject.id)
    assert [c.id for c in pending] == [proposed.id]


@pytest.mark.req("engram.context.r3.scoped-requests")
async def test_a_scoped_runtime_asks_for_its_scope_on_every_request(
    provider: RealProvider,
) -> None:
    async with provider.async_client(scope="professional") as engram:
        view = await engram.context()
        provider.advance(timedelta(seconds=5))
        await engram.sync()
    categories = {b.category for b in view.beliefs}
    assert view.scope == "professional"
    assert not categories & {"health", "financial"}
    reads = [r for r in provider.wire.sent if r.url.path.startswith("/v1/context")]
    assert [r.url.params.get("scope") for r in reads] == ["professional", "professional"]


@pytest.mark.req("engram.runtime.distinct-errors")
async def test_an_unknown_scope_and_a_bad_token_are_the_providers_own_errors(
    provider: RealProvider,
) -> None:
    async with provider.async_client(scope="everything") as engram:
        with pytest.raises(InvalidScope, match="invalid_scope"):
            await engram.context()
    async with provider.async_client(token="eng_not-a-token") as engram:
        with pytest.raises(Unauthorized, match="HTTP 401 unauthorized"):
            await engram.context()
        assert engram.current is None


@pytest.mark.req(
    "engram.context.r3.verify-every-export",
    "engram.context.r3.reject-bad-signature",
    "engram.runtime.never-hold-unverified",
)
async def test_every_later_export_is_verified_too(provider: RealProvider) -> None:
    async with provider.async_client() as engram:
        good = await engram.fetch()

        def forge(path: str, body: bytes) -> bytes:
            return body.replace(b"Ada Example", b"Eve Example") if path == "/v1/context" else body

        provider.wire.tamper = forge
        with pytest.raises(SignatureInvalid, match="signature is invalid"):
            await engram.fetch()
        # The refusal leaves the verified view in place; nothing forged is held.
        assert engram.current is good


@pytest.mark.req("engram.runtime.verify-diffs", "engram.runtime.never-hold-unverified")
async def test_a_tampered_diff_is_never_applied_the_verified_export_is_used_instead(
    provider: RealProvider,
) -> None:
    async with provider.async_client() as engram:
        await engram.context()
        provider.advance(timedelta(seconds=5))
        health = provider.belief_id("health")
        delete_belief(provider.store, provider.clock, provider.demo.subject.id, health)

        def resurrect(path: str, body: bytes) -> bytes:
            # Turn the tombstone into a no-op by renaming its member.
            return body.replace(b'"tombstones"', b'"tombstonez"') if "diff" in path else body

        provider.wire.tamper = resurrect
        synced = await engram.sync()
    assert engram.last_diff_fallback is not None
    assert "signature" in engram.last_diff_fallback
    # The full export, verified, is what the view now holds: the deletion is there.
    assert synced.belief(health) is None
    assert provider.wire.requests["/v1/context"] == 2


@pytest.mark.req("engram.runtime.token-origin")
async def test_the_token_never_leaves_the_configured_provider() -> None:
    # This provider advertises endpoints on another origin; the SDK keeps to its own.
    with RealProvider.start(public_url="https://elsewhere.example") as provider:
        async with provider.async_client() as engram:
            await engram.context()
            await engram.propose_correction(provider.belief_id("goal"), "No talk.")
            await engram.sync()
        discovery = _parsed(provider.wire.bodies["/.well-known/engram"])
    assert discovery["endpoints"]["context"].startswith("https://elsewhere.example")
    assert {r.url.host for r in provider.wire.sent} == {"provider.test"}
    assert all(
        r.headers.get("Authorization") is None
        for r in provider.wire.sent
        if r.url.path.startswith("/.well-known/")
    )


@pytest.mark.req("engram.runtime.same-api-sync-async")
def test_both_clients_offer_the_same_methods() -> None:
    def public(cls: type) -> set[str]:
        return {n for n in dir(cls) if not n.startswith("_")}

    assert public(EngramClient) == public(AsyncEngramClient)
