"""The OpenAPI document: checked in, served, complete, and true (schemathesis finds nothing)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from provider_harness import Provider, make_provider
from schemathesis import GenerationMode, checks
from schemathesis.core.result import Ok
from starlette.routing import Route

from engram.core.canonical import parse_strict
from engram.provider import ProviderConfig, openapi_document
from engram.store import Store

REPO = Path(__file__).resolve().parents[2]
CHECKS = [
    checks.not_a_server_error,
    checks.status_code_conformance,
    checks.content_type_conformance,
    checks.response_schema_conformance,
]


@pytest.mark.req("engram.provider.openapi-current")
def test_the_checked_in_openapi_json_is_what_the_app_serves(
    memory_provider: Provider, tmp_path: Path
) -> None:
    checked_in = parse_strict((REPO / "openapi.json").read_bytes())
    # engram serve with a seat: the memory REST API is served and described.
    default = make_provider(memory_provider.store, ProviderConfig(), memory_folder=tmp_path)

    served = default.client.get("/openapi.json")

    assert served.status_code == 200
    assert checked_in == openapi_document(), "regenerate: engram serve --print-openapi"
    # What it serves names its seat's allowed kinds where the checked-in document says "any".
    kinds = ["invariant", "architecture", "decision", "known_process", "procedure", "incident"]
    document: Any = served.json()
    expected: Any = checked_in
    for body in ("MemoryRequest", "ConversationRequest"):
        kind = document["components"]["schemas"][body]["properties"].pop("kind")
        assert kind["enum"][: len(kinds)] == kinds
        expected["components"]["schemas"][body]["properties"].pop("kind")
    assert document == expected


@pytest.mark.req("engram.provider.openapi-current", "engram.memory.rest.openapi")
def test_every_route_is_described_with_its_methods(memory_store: Store, tmp_path: Path) -> None:
    paths = openapi_document()["paths"]
    assert isinstance(paths, dict)
    api = ("/v1/", "/.well-known/", "/healthz")
    served = make_provider(memory_store, memory_folder=tmp_path)
    assert [r for r in served.app.routes if getattr(r, "path", "").startswith("/v1/memories")]
    # Other adapters mounted beside the API (the review page, /mcp) describe themselves.
    for route in served.app.routes:
        if not isinstance(route, Route) or not route.path.startswith(api):
            continue
        assert route.path in paths, route.path
        methods = set(route.methods or ()) - {"HEAD"}
        described = paths[route.path]
        assert isinstance(described, dict), route.path
        assert {m.lower() for m in methods} <= set(described), route.path


@pytest.mark.req("engram.provider.openapi-conformance", "engram.memory.rest.openapi")
@pytest.mark.slow
def test_generated_requests_find_no_server_error_and_no_schema_breach(
    memory_store: Store, tmp_path: Path
) -> None:
    config = ProviderConfig(rate_limit_per_minute=1_000_000, rate_limit_burst=1_000_000)
    provider = make_provider(memory_store, config, memory_folder=tmp_path)
    schema = schemathesis.openapi.from_asgi("/openapi.json", provider.app)
    operations = []
    for result in schema.get_all_operations():
        assert isinstance(result, Ok), result
        operations.append(result.ok())
    assert len(operations) == 14 + 9  # the context provider's and the memory REST API's
    modes = (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
    cases = st.one_of(
        *(op.as_strategy(generation_mode=mode) for op in operations for mode in modes)
    )

    @settings(
        max_examples=250,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(case=cases)
    def exercise(case: Any) -> None:
        case.call_and_validate(headers=provider.headers(), checks=CHECKS)

    exercise()
