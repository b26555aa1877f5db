"""Every code of the spec's error table where it applies, always in the error shape, and no
internals on the wire (Engram v0.1 "Error Code Reference")."""

from __future__ import annotations

from datetime import timedelta

import pytest
from provider_harness import Provider

from engram.context import erase_subject, issue_token

SHAPE_KEYS = {"code", "message", "status"}


def _assert_error(response_status: int, body: dict[str, object], code: str, status: int) -> None:
    assert response_status == status
    assert set(body) == {"error"}
    error = body["error"]
    assert isinstance(error, dict)
    assert set(error) == SHAPE_KEYS
    assert error["code"] == code
    assert error["status"] == status


@pytest.mark.req("engram.context.error-shape", "engram.provider.token-permissions")
def test_an_expired_token_is_401_token_expired(provider: Provider) -> None:
    token = issue_token(
        provider.store, provider.clock, provider.demo.subject.id, ["read"], timedelta(minutes=5)
    )
    provider.clock.advance(timedelta(minutes=5))

    response = provider.client.get("/v1/context", headers=provider.headers(token))

    _assert_error(response.status_code, response.json(), "token_expired", 401)


@pytest.mark.req("engram.context.error-shape", "engram.provider.token-permissions")
@pytest.mark.parametrize(
    ("permissions", "method", "path"),
    [
        (["correct"], "GET", "/v1/context"),
        (["read"], "POST", "/v1/context/correct"),
        (["read", "correct"], "GET", "/v1/corrections"),
        (["read", "correct", "confirm"], "DELETE", "/v1/beliefs/x"),
    ],
)
def test_a_token_without_the_permission_is_403_forbidden(
    provider: Provider, permissions: list[str], method: str, path: str
) -> None:
    token = issue_token(provider.store, provider.clock, provider.demo.subject.id, permissions)

    response = provider.client.request(
        method,
        path,
        headers=provider.headers(token),
        json={"belief_id": "b", "new_value": "v", "runtime_id": "r"},
    )

    _assert_error(response.status_code, response.json(), "forbidden", 403)


@pytest.mark.req("engram.context.error-shape")
def test_a_token_whose_subject_was_erased_is_404_user_not_found(provider: Provider) -> None:
    erase_subject(provider.store, provider.clock, provider.demo.subject.id)

    export = provider.client.get("/v1/context", headers=provider.headers())
    correct = provider.client.post(
        "/v1/context/correct",
        headers=provider.headers(),
        json={"belief_id": "b", "new_value": "v", "runtime_id": "r"},
    )

    _assert_error(export.status_code, export.json(), "user_not_found", 404)
    _assert_error(correct.status_code, correct.json(), "user_not_found", 404)


@pytest.mark.req("engram.context.error-shape")
def test_an_unsupported_engram_version_is_400_unsupported_version(provider: Provider) -> None:
    by_header = provider.client.get(
        "/v1/context", headers=provider.headers(**{"Engram-Version": "0.2"})
    )
    by_body = provider.client.post(
        "/v1/context/correct",
        headers=provider.headers(),
        json={"belief_id": "b", "new_value": "v", "runtime_id": "r", "engram_version": "9"},
    )
    same = provider.client.get("/v1/context", headers=provider.headers(**{"Engram-Version": "0.1"}))

    _assert_error(by_header.status_code, by_header.json(), "unsupported_version", 400)
    _assert_error(by_body.status_code, by_body.json(), "unsupported_version", 400)
    assert same.status_code == 200


@pytest.mark.req("engram.context.error-shape")
@pytest.mark.parametrize(
    "content",
    [b"", b"not json", b"[1, 2]", b'{"a": 1, "a": 2}', b'{"belief_id": 5}', b"\xff\xfe"],
)
def test_a_malformed_body_is_400_invalid_request(provider: Provider, content: bytes) -> None:
    response = provider.client.post(
        "/v1/context/correct",
        headers=provider.headers(**{"Content-Type": "application/json"}),
        content=content,
    )

    _assert_error(response.status_code, response.json(), "invalid_request", 400)


@pytest.mark.req("engram.context.error-shape")
def test_unknown_routes_and_wrong_methods_answer_in_the_error_shape(provider: Provider) -> None:
    missing = provider.client.get("/v2/nothing")
    wrong = provider.client.put("/v1/context", headers=provider.headers())
    no_correction = provider.client.get("/v1/corrections/nope", headers=provider.headers())

    _assert_error(missing.status_code, missing.json(), "not_found", 404)
    _assert_error(wrong.status_code, wrong.json(), "method_not_allowed", 405)
    assert "GET" in wrong.headers["allow"]
    _assert_error(no_correction.status_code, no_correction.json(), "not_found", 404)


@pytest.mark.req("engram.context.error-shape", "engram.provider.no-internal-leak")
def test_a_store_failure_is_500_server_error_without_internals(memory_provider: Provider) -> None:
    provider = memory_provider
    with provider.store.transaction() as tx:
        tx.execute("DROP TABLE context_beliefs")
    provider.client.post(
        "/v1/context/correct",
        headers=provider.headers(),
        json={"belief_id": "b", "new_value": "v", "runtime_id": "r"},
    )

    response = provider.client.get("/v1/context", headers=provider.headers())

    _assert_error(response.status_code, response.json(), "server_error", 500)
    assert response.json()["error"]["message"] == "internal error"
    assert "context_beliefs" not in response.text
