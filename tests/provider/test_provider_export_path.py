"""GET /v1/context served from the per-worker cache of signed bytes (docs/spec/context-provider.md,
"Production profile"): a cached export never outlives a revoked or expired token, an erased
subject or a change to the subject's state, and the route answers like every other route."""

from __future__ import annotations

import gzip
from datetime import timedelta
from typing import Any

import pytest
from provider_harness import Provider, make_provider

from engram.context import Permission, erase_subject, issue_token, list_tokens, revoke_token
from engram.core.canonical import parse_strict
from engram.core.keys import PublicKey
from engram.core.signing import verify_document
from engram.provider import ProviderConfig
from engram.store import Store


def _export(provider: Provider, token: str | None = None, query: str = "") -> bytes:
    response = provider.client.get(f"/v1/context{query}", headers=provider.headers(token))
    assert response.status_code == 200, response.text
    return response.content


def _doc(body: bytes) -> dict[str, Any]:
    value = parse_strict(body)
    assert isinstance(value, dict)
    return value


def _reader(provider: Provider, ttl: timedelta = timedelta(days=1)) -> str:
    return issue_token(
        provider.store, provider.clock, provider.demo.subject.id, [Permission.READ], ttl
    )


@pytest.mark.req("engram.provider.export-cache", "engram.provider.token-permissions")
def test_a_revoked_token_is_refused_on_the_next_request_after_a_cached_export(
    provider: Provider,
) -> None:
    token = _reader(provider)
    assert _export(provider, token) == _export(provider, token)  # the second one is a cache hit
    subject = provider.demo.subject.id
    (reader,) = [
        t for t in list_tokens(provider.store, subject) if t.permissions == {Permission.READ}
    ]
    revoke_token(provider.store, provider.clock, subject, reader.token_id)

    refused = provider.client.get("/v1/context", headers=provider.headers(token))

    assert refused.status_code == 401
    assert refused.json()["error"]["code"] == "unauthorized"
    assert refused.headers["www-authenticate"].startswith("Bearer")
    assert _export(provider)  # the subject's other token still reads


@pytest.mark.req("engram.provider.export-cache", "engram.provider.token-permissions")
def test_an_expired_token_is_refused_although_the_export_is_still_cached(
    provider: Provider,
) -> None:
    token = _reader(provider, ttl=timedelta(hours=1))
    first = _export(provider, token)
    provider.clock.advance(timedelta(minutes=59))
    assert _export(provider, token) == first
    provider.clock.advance(timedelta(minutes=1))

    refused = provider.client.get("/v1/context", headers=provider.headers(token))

    assert refused.status_code == 401
    assert refused.json()["error"]["code"] == "token_expired"
    assert _export(provider) == first  # still fresh for a valid token


@pytest.mark.req("engram.provider.export-cache")
def test_an_erased_subject_is_not_found_on_the_next_request(provider: Provider) -> None:
    _export(provider)
    erase_subject(provider.store, provider.clock, provider.demo.subject.id)

    gone = provider.client.get("/v1/context", headers=provider.headers())

    assert gone.status_code == 404
    assert gone.json()["error"]["code"] == "user_not_found"


@pytest.mark.req("engram.provider.export-cache", "engram.provider.admin-delete")
def test_a_deleted_belief_leaves_the_next_export(provider: Provider) -> None:
    belief = provider.demo.beliefs[0]
    before = _doc(_export(provider))
    assert belief.id in {b["id"] for b in before["beliefs"]}

    deleted = provider.client.delete(f"/v1/beliefs/{belief.id}", headers=provider.headers())
    after = _doc(_export(provider))

    assert deleted.status_code == 200
    assert belief.id not in {b["id"] for b in after["beliefs"]}


@pytest.mark.req("engram.provider.token-permissions")
def test_a_token_without_read_is_forbidden_and_logged_with_its_subject(
    provider: Provider,
) -> None:
    token = issue_token(
        provider.store, provider.clock, provider.demo.subject.id, [Permission.CORRECT]
    )

    refused = provider.client.get("/v1/context", headers=provider.headers(token))

    assert refused.status_code == 403
    assert refused.json()["error"] == {
        "code": "forbidden",
        "message": "this token lacks the 'read' permission",
        "status": 403,
    }


@pytest.mark.req("engram.provider.scope-registry")
def test_the_export_answers_with_its_headers_and_honours_the_scope(provider: Provider) -> None:
    full = provider.client.get(
        "/v1/context",
        headers=provider.headers(**{"X-Request-Id": "export-1", "Accept-Encoding": "identity"}),
    )
    professional = _doc(_export(provider, query="?scope=professional"))
    bad = provider.client.get("/v1/context?scope=Nope", headers=provider.headers())
    unauthenticated = provider.client.get("/v1/context?scope=Nope")

    assert full.headers["content-type"] == "application/json"
    assert full.headers["cache-control"] == "no-store"
    assert full.headers["content-length"] == str(len(full.content))
    assert "content-encoding" not in full.headers
    assert full.headers["x-request-id"] == "export-1"
    assert _doc(full.content)["scope"] == "full"
    assert professional["scope"] == "professional"
    categories = {b["category"] for b in professional["beliefs"]}
    assert not categories & {"health", "financial"}
    assert (bad.status_code, bad.json()["error"]["code"]) == (400, "invalid_scope")
    assert unauthenticated.status_code == 401  # authentication comes before the scope


@pytest.mark.req("engram.provider.export-cache", "engram.context.p3.signature-verifies")
@pytest.mark.parametrize(
    ("accept_encoding", "gzipped"),
    [
        ("gzip", True),
        ("deflate, gzip;q=0.5", True),
        ("br;q=1.0, *;q=0.1", True),
        ("gzip;q=0", False),
        ("gzip;q=0, *", False),
        ("identity", False),
        ("deflate", False),
    ],
)
def test_a_client_that_accepts_gzip_gets_the_same_signed_bytes_compressed(
    provider: Provider, accept_encoding: str, gzipped: bool
) -> None:
    plain = provider.client.get(
        "/v1/context", headers=provider.headers(**{"Accept-Encoding": "identity"})
    )
    url = f"{provider.client.base_url}/v1/context"
    headers = provider.headers(**{"Accept-Encoding": accept_encoding})
    with provider.client.stream("GET", url, headers=headers) as response:
        raw = b"".join(response.iter_raw())

    assert response.status_code == 200
    assert response.headers["vary"] == "Accept-Encoding"
    assert plain.headers["vary"] == "Accept-Encoding"
    assert response.headers["content-length"] == str(len(raw))
    if gzipped:
        assert response.headers["content-encoding"] == "gzip"
        assert len(raw) < len(plain.content)
        assert gzip.decompress(raw) == plain.content  # the signature covers these bytes
    else:
        assert "content-encoding" not in response.headers
        assert raw == plain.content
    export = _doc(plain.content)
    key = PublicKey.from_b64url(_key_for(provider, export["kid"]))
    verify_document(export, key)


def _key_for(provider: Provider, kid: str) -> str:
    keys = provider.client.get("/.well-known/engram-keys").json()["keys"]
    return str(next(k["public_key"] for k in keys if k["kid"] == kid))


@pytest.mark.req("engram.provider.export-cache")
def test_the_cache_drops_the_least_recently_used_export(memory_store: Store) -> None:
    provider = make_provider(
        memory_store, ProviderConfig(public_url="https://provider.test", export_cache_entries=2)
    )
    with provider.client:
        full = _export(provider)
        professional = _export(provider, query="?scope=professional")
        assert _export(provider) == full  # a hit: "full" is now the most recently used
        provider.clock.advance(timedelta(minutes=1))
        _export(provider, query="?scope=identity")  # a third entry evicts "professional"

        assert _export(provider) == full
        assert _export(provider, query="?scope=professional") != professional  # signed anew
