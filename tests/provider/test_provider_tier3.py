"""Tier 3 (Full): published Ed25519 keys, kid, signatures over RFC 8785 bytes, scopes."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from provider_harness import Provider

from engram.core.canonical import parse_strict
from engram.core.encoding import b64url_decode
from engram.core.keys import PublicKey
from engram.core.signing import verify_document
from engram.errors import SignatureInvalid


def _parsed(data: bytes | str) -> dict[str, Any]:
    # Strictly parsed and checked to be an object; the test then walks it freely.
    value = parse_strict(data)
    assert isinstance(value, dict)
    return value


def _keys(provider: Provider) -> dict[str, PublicKey]:
    keys = provider.client.get("/.well-known/engram-keys").json()["keys"]
    return {k["kid"]: PublicKey.from_b64url(k["public_key"]) for k in keys}


@pytest.mark.req("engram.context.p3.keys-endpoint", "engram.context.p3.key-fields")
def test_the_keys_endpoint_lists_ed25519_keys_with_every_field(provider: Provider) -> None:
    response = provider.client.get("/.well-known/engram-keys")

    assert response.status_code == 200
    keys = response.json()["keys"]
    assert keys
    for key in keys:
        assert {"kid", "alg", "public_key", "created_at", "expires_at"} <= set(key)
        assert key["alg"] == "Ed25519"
        assert len(b64url_decode(key["public_key"])) == 32


@pytest.mark.req(
    "engram.context.p3.kid-published",
    "engram.context.p3.signature-verifies",
)
@pytest.mark.parametrize("path", ["/v1/context", "/v1/context?scope=professional"])
def test_every_export_is_signed_by_a_published_key_over_its_rfc8785_bytes(
    provider: Provider, path: str
) -> None:
    export = _parsed(provider.client.get(path, headers=provider.headers()).content)

    keys = _keys(provider)
    assert export["kid"] in keys
    verify_document(export, keys[export["kid"]])
    tampered = {**export, "scope": "identity"}
    with pytest.raises(SignatureInvalid):
        verify_document(tampered, keys[export["kid"]])


@pytest.mark.req("engram.context.p3.signature-verifies", "engram.context.p2.diff-tombstones")
def test_diffs_are_signed_like_the_export(provider: Provider) -> None:
    diff = _parsed(
        provider.client.get(
            "/v1/context/diff", params={"since": "2020-01-01T00:00:00Z"}, headers=provider.headers()
        ).content
    )

    verify_document(diff, _keys(provider)[diff["kid"]])
    assert len(diff["changes"]) == len(provider.demo.beliefs)


@pytest.mark.req("engram.context.p3.kid-published")
def test_a_rotated_key_stays_published_while_exports_it_signed_are_valid(
    provider: Provider,
) -> None:
    first = provider.client.get("/v1/context", headers=provider.headers()).json()
    signer = provider.app.state.services.signer
    signer.keys.rotate(provider.clock.now())
    provider.clock.advance(timedelta(minutes=6))  # past the publish lead (300 s): it signs now

    provider.client.post(
        "/v1/beliefs", headers=provider.headers(), json={"category": "goal", "statement": "Run."}
    )
    second = provider.client.get("/v1/context", headers=provider.headers()).json()

    assert second["kid"] != first["kid"]
    assert {first["kid"], second["kid"]} <= set(_keys(provider))


@pytest.mark.req("engram.context.p3.scope-professional", "engram.provider.scope-registry")
def test_the_professional_scope_excludes_health_and_financial_beliefs(provider: Provider) -> None:
    full = provider.client.get("/v1/context", headers=provider.headers()).json()
    professional = provider.client.get(
        "/v1/context", params={"scope": "professional"}, headers=provider.headers()
    ).json()
    identity = provider.client.get(
        "/v1/context", params={"scope": "identity"}, headers=provider.headers()
    ).json()

    assert {"health", "financial"} <= {b["category"] for b in full["beliefs"]}
    assert professional["scope"] == "professional"
    categories = {b["category"] for b in professional["beliefs"]}
    assert categories.isdisjoint({"health", "financial"})
    assert len(professional["beliefs"]) == len(full["beliefs"]) - 2
    assert "penicillin" not in professional["system_prompt_injection"]
    assert "penicillin" in full["system_prompt_injection"]
    sensitive = {b["id"] for b in full["beliefs"] if b["category"] in ("health", "financial")}
    assert not sensitive & {e["belief_id"] for e in professional["evolution"]}
    assert identity["beliefs"] == []
    assert identity["system_prompt_injection"] == "User: Ada Example (Europe/London)."


@pytest.mark.req("engram.context.p3.invalid-scope-400", "engram.context.error-shape")
@pytest.mark.parametrize("scope", ["invalid", "", "FULL", "professional;drop", "x" * 100])
def test_an_unknown_or_malformed_scope_is_400_invalid_scope(provider: Provider, scope: str) -> None:
    response = provider.client.get(
        "/v1/context", params={"scope": scope}, headers=provider.headers()
    )

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid_scope"
    assert error["status"] == 400


@pytest.mark.req("engram.provider.key-published-before-signing", "engram.context.p3.kid-published")
def test_a_new_key_is_in_the_key_list_a_cache_lifetime_before_any_export_names_it(
    provider: Provider,
) -> None:
    first = provider.client.get("/v1/context", headers=provider.headers()).json()
    listed = provider.client.get("/.well-known/engram-keys")
    max_age = int(provider.config.keys_max_age.total_seconds())
    assert listed.headers["cache-control"] == f"public, max-age={max_age}"

    new = provider.app.state.services.signer.keys.rotate(
        provider.clock.now(), lead=provider.config.key_publish_lead
    )
    keys = provider.client.get("/.well-known/engram-keys").json()["keys"]
    assert {k["kid"]: k["status"] for k in keys} == {first["kid"]: "active", new.kid: "next"}
    discovery = provider.client.get("/.well-known/engram").json()
    assert new.kid in {k["kid"] for k in discovery["signingKeys"]}

    # Through the whole lead, every export (fresh state included) is signed by the old key.
    for elapsed in (timedelta(seconds=1), timedelta(seconds=max_age - 1)):
        provider.clock.advance(elapsed - (provider.clock.now() - new.created_at))
        provider.client.post(
            "/v1/beliefs", headers=provider.headers(), json={"category": "goal", "statement": "x"}
        )
        assert (
            provider.client.get("/v1/context", headers=provider.headers()).json()["kid"]
            == (first["kid"])
        )
    provider.clock.advance(timedelta(seconds=1))  # the lead has passed
    provider.client.post(
        "/v1/beliefs", headers=provider.headers(), json={"category": "goal", "statement": "y"}
    )
    after = provider.client.get("/v1/context", headers=provider.headers()).json()
    assert after["kid"] == new.kid
    assert {first["kid"], new.kid} <= set(_keys(provider))
