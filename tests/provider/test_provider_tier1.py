"""Tier 1 (Reader) provider requirements and the error shape, over every store backend."""

from __future__ import annotations

from datetime import timedelta

import pytest
from provider_harness import Provider

from engram.core.clock import parse_instant
from engram.errors import InvalidRequest
from engram.provider import ProviderConfig

# Every member of the spec's "Minimal valid export" fixture.
FIXTURE_MEMBERS = {
    "engram_version",
    "issued_at",
    "expires_at",
    "kid",
    "issuer",
    "subject",
    "scope",
    "signature",
    "identity",
    "beliefs",
    "corrections",
    "evolution",
    "system_prompt_injection",
}


@pytest.mark.req(
    "engram.context.p1.export-200",
    "engram.context.p1.version-present",
    "engram.context.p1.identity-fields",
    "engram.context.p1.expires-at-present",
)
def test_export_answers_200_with_every_member_of_the_minimal_fixture(provider: Provider) -> None:
    response = provider.client.get("/v1/context", headers=provider.headers())

    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    export = response.json()
    assert set(export) >= FIXTURE_MEMBERS
    assert export["engram_version"] == "0.1"
    assert export["expires_at"] is not None
    assert export["identity"]["display_name"] == "Ada Example"
    assert export["identity"]["timezone"] == "Europe/London"
    assert set(export["issuer"]) == {"name", "url"}
    assert export["subject"] == {"id": provider.demo.subject.id, "display_name": "Ada Example"}
    assert export["scope"] == "full"
    assert len(export["beliefs"]) == len(provider.demo.beliefs)


@pytest.mark.req("engram.context.p1.expires-within-24h", "engram.provider.export-ttl")
def test_expires_at_is_the_configured_ttl_and_never_beyond_24_hours(provider: Provider) -> None:
    export = provider.client.get("/v1/context", headers=provider.headers()).json()

    issued, expires = parse_instant(export["issued_at"]), parse_instant(export["expires_at"])
    assert expires - issued == timedelta(hours=12)
    assert expires > provider.clock.now()
    assert ProviderConfig(export_ttl=timedelta(hours=24)).export_ttl == timedelta(hours=24)
    with pytest.raises(InvalidRequest, match="24 hours"):
        ProviderConfig(export_ttl=timedelta(hours=24, seconds=1))
    with pytest.raises(InvalidRequest, match="24 hours"):
        ProviderConfig.from_env({"ENGRAM_EXPORT_TTL_SECONDS": "90000"})


@pytest.mark.req("engram.context.p1.discovery", "engram.provider.discovery-signing-keys")
def test_discovery_names_version_issuer_endpoints_scopes_keys_and_tier(provider: Provider) -> None:
    response = provider.client.get("/.well-known/engram")

    assert response.status_code == 200
    doc = response.json()
    assert doc["engram_version"] == "0.1"
    assert doc["issuer"] == {"name": "engram", "url": "https://provider.test"}
    assert doc["tier"] == 3
    assert doc["endpoints"]["context"] == "https://provider.test/v1/context"
    assert doc["endpoints"]["diff"] == "https://provider.test/v1/context/diff"
    assert doc["endpoints"]["correct"] == "https://provider.test/v1/context/correct"
    assert doc["keys_url"] == "https://provider.test/.well-known/engram-keys"
    assert doc["scopes_supported"] == ["full", "identity", "professional"]
    keys = provider.client.get("/.well-known/engram-keys").json()["keys"]
    assert doc["signingKeys"] == [
        {"kid": k["kid"], "alg": "Ed25519", "public_key": k["public_key"]} for k in keys
    ]


@pytest.mark.req("engram.context.p1.unauthenticated-401", "engram.context.error-shape")
@pytest.mark.parametrize(
    "authorization",
    [None, "", "Basic dXNlcjpwYXNz", "Bearer", "Bearer eng_not-a-real-token", "Bearer nonsense"],
)
def test_requests_without_a_valid_token_are_401_unauthorized(
    provider: Provider, authorization: str | None
) -> None:
    headers = {} if authorization is None else {"Authorization": authorization}

    response = provider.client.get("/v1/context", headers=headers)

    assert response.status_code == 401
    assert response.json() == {
        "error": {"code": "unauthorized", "message": "token missing or invalid", "status": 401}
    }
    assert response.headers["www-authenticate"].startswith("Bearer")
