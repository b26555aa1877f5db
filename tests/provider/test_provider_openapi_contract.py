"""The OpenAPI document says what the server enforces on requests (issue 15, docs/spec/
context-provider.md "OpenAPI"): for every case below, the document's request schema and the
server agree on whether it is acceptable. The cases are the request-contract mismatches found
with schemathesis's positive-data and negative-data checks, one or more per constraint; the
request-body examples are valid and accepted; OPTIONS names every method of a path."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator
from provider_harness import Provider
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from engram.provider import openapi_document

DOC: dict[str, Any] = openapi_document()  # walked freely by the tests below
ROOT = "urn:engram:openapi"
REGISTRY: Registry[Any] = Registry().with_resource(
    ROOT, Resource.from_contents(DOC, default_specification=DRAFT202012)
)


def _valid(schema: dict[str, Any], value: object) -> bool:
    validator = Draft202012Validator(schema, registry=REGISTRY)
    return validator.is_valid(value)


def _body_schema(name: str) -> dict[str, Any]:
    return {"$ref": f"{ROOT}#/components/schemas/{name}"}


def _parameter(path: str, method: str, name: str) -> dict[str, Any]:
    for parameter in DOC["paths"][path][method]["parameters"]:
        if parameter["name"] == name:
            schema: dict[str, Any] = parameter["schema"]
            return schema
    raise AssertionError(f"{method} {path} documents no {name}")


def _correction(provider: Provider, **changes: object) -> dict[str, object]:
    body: dict[str, object] = {
        "belief_id": provider.demo.beliefs[2].id,
        "new_value": "Is preparing a talk on batch pipelines.",
        "runtime_id": "rt-contract",
    }
    body.update(changes)
    return {k: v for k, v in body.items() if v is not _DROP}


_DROP = object()

CORRECTION_CASES = [
    ("minimal", {}),
    ("blank new_value", {"new_value": "   "}),
    ("line break in new_value", {"new_value": "two\nlines"}),
    ("control character in runtime_id", {"runtime_id": "rt\x01"}),
    ("tab is fine", {"new_value": "a\tb"}),
    ("U+0085 alone is blank", {"new_value": "\x85"}),
    ("surrounding spaces are fine", {"belief_id": "  new-belief  "}),
    ("runtime_id missing", {"runtime_id": _DROP}),
    ("runtime_id not a string", {"runtime_id": 7}),
    ("null timestamp", {"timestamp": None}),
    ("null reason", {"reason": None}),
    ("reason too long", {"reason": "x" * 2001}),
    ("an unknown member is ignored", {"client": {"name": "demo", "build": [1, 2]}}),
    ("an unknown member beyond 2^53", {"client": 2**53}),
    ("wrong engram_version", {"engram_version": "0.2"}),
    ("new_value too long", {"new_value": "x" * 2001}),
]


@pytest.mark.req("engram.provider.openapi-request-contract")
@pytest.mark.parametrize(
    ("case", "changes"), CORRECTION_CASES, ids=[c for c, _ in CORRECTION_CASES]
)
def test_the_correction_schema_accepts_exactly_what_the_server_accepts(
    memory_provider: Provider, case: str, changes: dict[str, object]
) -> None:
    body = _correction(memory_provider, **changes)
    documented = _valid(_body_schema("CorrectionRequest"), body)
    answer = memory_provider.client.post(
        "/v1/context/correct", headers=memory_provider.headers(), json=body
    )
    assert answer.status_code in (202, 400), answer.text
    assert documented == (answer.status_code == 202), (case, answer.text)


BELIEF_CASES = [
    ("minimal", {"category": "goal", "statement": "Run a marathon."}),
    ("all members", {"category": "goal", "statement": "Run.", "confidence": 1, "source": "me"}),
    ("unknown member", {"category": "goal", "statement": "Run.", "mood": "keen"}),
    ("unknown category", {"category": "hobby", "statement": "Run."}),
    ("confidence above 1", {"category": "goal", "statement": "Run.", "confidence": 1.5}),
    ("confidence as text", {"category": "goal", "statement": "Run.", "confidence": "0.5"}),
    ("null confidence", {"category": "goal", "statement": "Run.", "confidence": None}),
    ("empty source", {"category": "goal", "statement": "Run.", "source": ""}),
    ("null source", {"category": "goal", "statement": "Run.", "source": None}),
    ("blank source", {"category": "goal", "statement": "Run.", "source": "  "}),
    ("source too long", {"category": "goal", "statement": "Run.", "source": "s" * 101}),
    ("statement with a line break", {"category": "goal", "statement": "Run.\nFast."}),
    ("engram_version 0.1", {"category": "goal", "statement": "Run.", "engram_version": "0.1"}),
]


@pytest.mark.req("engram.provider.openapi-request-contract")
@pytest.mark.parametrize(("case", "body"), BELIEF_CASES, ids=[c for c, _ in BELIEF_CASES])
def test_the_belief_schema_accepts_exactly_what_the_server_accepts(
    memory_provider: Provider, case: str, body: dict[str, object]
) -> None:
    documented = _valid(_body_schema("BeliefRequest"), body)
    answer = memory_provider.client.post(
        "/v1/beliefs", headers=memory_provider.headers(), json=body
    )
    assert answer.status_code in (201, 400), answer.text
    assert documented == (answer.status_code == 201), (case, answer.text)


QUERY_CASES = [
    ("/v1/context", "get", "scope", "professional"),
    ("/v1/context", "get", "scope", "corrected"),
    ("/v1/context", "get", "scope", "FULL"),
    ("/v1/context/diff?since=2020-01-01T00:00:00Z", "get", "scope", "identity"),
    ("/v1/context/diff?since=2020-01-01T00:00:00Z", "get", "scope", "tombstones"),
    ("/v1/corrections", "get", "status", "confirmed"),
    ("/v1/corrections", "get", "status", "pending"),
]


@pytest.mark.req("engram.provider.openapi-request-contract")
@pytest.mark.parametrize(("url", "method", "name", "value"), QUERY_CASES)
def test_query_registries_are_documented_as_the_closed_sets_the_server_enforces(
    memory_provider: Provider, url: str, method: str, name: str, value: str
) -> None:
    path = url.split("?")[0]
    documented = _valid(_parameter(path, method, name), value)
    joiner = "&" if "?" in url else "?"
    answer = memory_provider.client.get(
        f"{url}{joiner}{name}={value}", headers=memory_provider.headers()
    )
    assert answer.status_code in (200, 400), answer.text
    assert documented == (answer.status_code == 200), answer.text


@pytest.mark.req("engram.provider.openapi-request-contract")
@pytest.mark.parametrize("value", ["0.1", "0.2", "1"])
def test_the_engram_version_header_is_documented_as_enforced(
    memory_provider: Provider, value: str
) -> None:
    documented = _valid(_parameter("/v1/context", "get", "Engram-Version"), value)
    answer = memory_provider.client.get(
        "/v1/context", headers=memory_provider.headers(**{"Engram-Version": value})
    )
    assert documented == (answer.status_code == 200), answer.text


IDEMPOTENCY_KEYS = [
    ("retry-1", True),
    ("x" * 256, False),
    ("a\x7fb", False),
    # Header bytes are ISO-8859-1 (RFC 9110 obs-text); issue 31's mismatch was U+00A0.
    ("caf\u00e9-\u00ff", True),
    ("a\u00a0b", False),
    ("a\u00adb", False),
    ("a\u0085b", False),
]


@pytest.mark.req("engram.provider.openapi-request-contract")
@pytest.mark.parametrize(("key", "ok"), IDEMPOTENCY_KEYS)
def test_the_idempotency_key_is_documented_as_enforced(
    memory_provider: Provider, key: str, ok: bool
) -> None:
    documented = _valid(_parameter("/v1/context/correct", "post", "Idempotency-Key"), key)
    headers: dict[str, Any] = {
        **memory_provider.headers(),
        "Idempotency-Key": key.encode("latin-1"),
    }
    answer = memory_provider.client.post(
        "/v1/context/correct", headers=headers, json=_correction(memory_provider)
    )
    assert documented is ok
    assert (answer.status_code == 202) is ok, answer.text


@pytest.mark.req("engram.provider.openapi-request-examples")
@pytest.mark.parametrize(
    ("path", "schema"),
    [("/v1/context/correct", "CorrectionRequest"), ("/v1/beliefs", "BeliefRequest")],
)
def test_each_request_body_example_is_valid_and_accepted(
    memory_provider: Provider, path: str, schema: str
) -> None:
    content = DOC["paths"][path]["post"]["requestBody"]["content"]["application/json"]
    assert content["examples"], "a POST without a request-body example"
    for name, example in content["examples"].items():
        value = example["value"]
        assert _valid(_body_schema(schema), value), name
        if "belief_id" in value and value["belief_id"] != "test":
            value = {**value, "belief_id": memory_provider.demo.beliefs[3].id}
        answer = memory_provider.client.post(path, headers=memory_provider.headers(), json=value)
        assert answer.status_code in (201, 202), (name, answer.text)


@pytest.mark.req("engram.provider.options-allow")
@pytest.mark.parametrize(
    ("path", "allowed"),
    [
        ("/v1/beliefs", "GET, HEAD, OPTIONS, POST"),
        ("/v1/beliefs/some-id", "DELETE, OPTIONS"),
        ("/v1/context", "GET, HEAD, OPTIONS"),
        ("/v1/context/correct", "OPTIONS, POST"),
    ],
)
def test_options_names_every_method_of_the_path(
    memory_provider: Provider, path: str, allowed: str
) -> None:
    answer = memory_provider.client.options(path)
    assert answer.status_code == 204
    assert answer.headers["allow"] == allowed
    wrong = memory_provider.client.put(path, headers=memory_provider.headers())
    assert wrong.status_code == 405
    assert wrong.headers["allow"] == allowed.replace("OPTIONS, ", "").replace(", OPTIONS", "")
    assert wrong.json()["error"]["code"] == "method_not_allowed"
