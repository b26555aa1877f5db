"""Tampered, forged and re-keyed exports from the real provider (Engram v0.1, runtime Tier 3).

A flipped byte anywhere in a real signed export is refused; an export signed under a kid the
provider does not publish is refused after exactly one refetch of the key list; a key rotation
costs exactly one refetch and is then accepted.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import httpx
import pytest
from runtime_harness import BlockingASGITransport, RealProvider

from engram.context import add_belief
from engram.core.canonical import canonicalize, parse_strict
from engram.core.keys import PrivateKey
from engram.core.signing import sign_document
from engram.errors import EngramError, UnknownKeyId, VerificationError
from engram.runtime import PublishedKey, verify_export
from engram.store.keys import KeyStore


def _parsed(data: bytes | str) -> dict[str, Any]:
    # Strictly parsed and checked to be an object; the test then walks it freely.
    value = parse_strict(data)
    assert isinstance(value, dict)
    return value


KEYS_PATH = "/.well-known/engram-keys"


@pytest.fixture
def provider() -> Iterator[RealProvider]:
    with RealProvider.start() as running:
        yield running


def real_export(provider: RealProvider) -> tuple[bytes, dict[str, PublishedKey]]:
    """The provider's signed export bytes and the key list, fetched by the SDK's user."""
    with provider.sync_client() as engram:
        keys = dict(engram.keys())
    response = _get(provider, "/v1/context")
    assert response.status_code == 200
    return response.content, keys


def _get(provider: RealProvider, path: str) -> httpx.Response:
    transport = BlockingASGITransport(provider.app)
    try:
        with httpx.Client(transport=transport, base_url="http://provider.test") as http:
            return http.get(path, headers={"Authorization": f"Bearer {provider.demo.token}"})
    finally:
        transport.close()


@pytest.mark.req("engram.context.r3.reject-bad-signature", "engram.context.r3.verify-every-export")
def test_a_flipped_byte_anywhere_in_a_real_export_is_refused(provider: RealProvider) -> None:
    body, keys = real_export(provider)
    now = provider.runtime_clock.now()
    assert verify_export(body, keys, now=now).display_name == "Ada Example"
    accepted, refusals = [], Counter[str]()
    for index in range(len(body)):
        flipped = bytearray(body)
        flipped[index] ^= 0x01
        try:
            verify_export(bytes(flipped), keys, now=now)
        except EngramError as e:  # anything else would escape and fail the test
            refusals[e.code] += 1
            continue
        accepted.append(index)
    assert accepted == [], f"bytes whose flip still verified: {accepted[:10]}"
    assert sum(refusals.values()) == len(body)
    assert refusals["signature_invalid"] > len(body) // 2


@pytest.mark.req("engram.context.r3.reject-bad-signature", "engram.runtime.never-hold-unverified")
def test_a_tampered_export_in_flight_is_refused_by_the_client(provider: RealProvider) -> None:
    targets = [b'"kid":"', b'"expires_at":"', b'"signature":"', b"penicillin"]

    for target in targets:

        def flip(path: str, body: bytes, target: bytes = target) -> bytes:
            if path != "/v1/context":
                return body
            at = body.index(target) + len(target) + 1
            return body[:at] + bytes([body[at] ^ 0x01]) + body[at + 1 :]

        provider.wire.tamper = flip
        with provider.sync_client() as engram, pytest.raises(VerificationError):
            engram.context()
        assert engram.current is None


@pytest.mark.req("engram.context.r3.select-kid", "engram.runtime.unknown-kid-refetch")
def test_an_unknown_kid_is_refused_after_exactly_one_refetch_of_the_keys(
    provider: RealProvider,
) -> None:
    stranger = PrivateKey.generate()

    def forge(path: str, body: bytes) -> bytes:
        if path != "/v1/context":
            return body
        document = _parsed(body)
        document["kid"] = stranger.public_key().key_id
        return canonicalize(sign_document(document, stranger))

    with provider.sync_client() as engram:
        engram.context()
        assert provider.wire.requests[KEYS_PATH] == 1
        provider.wire.tamper = forge
        with pytest.raises(UnknownKeyId, match="does not publish"):
            engram.fetch()
        assert provider.wire.requests[KEYS_PATH] == 2
        with pytest.raises(UnknownKeyId):
            engram.fetch()
        assert provider.wire.requests[KEYS_PATH] == 3


@pytest.mark.req("engram.context.r3.fetch-keys", "engram.runtime.unknown-kid-refetch")
async def test_a_rotated_key_costs_one_refetch_and_is_then_cached(provider: RealProvider) -> None:
    async with provider.async_client() as engram:
        first = await engram.context()
        KeyStore(provider.store).rotate(provider.clock.now())
        provider.advance(timedelta(minutes=6))  # past the publish lead: the new key signs now
        # A change of state makes the provider sign afresh (it caches signed exports).
        add_belief(provider.store, provider.clock, provider.demo.subject.id, "goal", "Run 10 km.")
        second = await engram.fetch()
        third = await engram.fetch()
    assert second.kid != first.kid
    assert third.kid == second.kid
    assert provider.wire.requests[KEYS_PATH] == 2


@pytest.mark.req("engram.runtime.distinct-errors")
def test_every_refusal_is_one_loggable_line(provider: RealProvider) -> None:
    body, keys = real_export(provider)
    broken = body.replace(b'"scope":"full"', b'"scope":"fulL"')
    with pytest.raises(EngramError) as caught:
        verify_export(broken, keys, now=provider.runtime_clock.now())
    assert "\n" not in caught.value.message
    assert caught.value.code == "signature_invalid"
