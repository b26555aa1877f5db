"""``GET /metrics`` in one process: off by default, the ``metrics`` permission, counters that
move (docs/spec/provider-metrics.md). The scrape is read with prometheus-client's own parser
(``text_string_to_metric_families``), not with ours."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from prometheus_client.parser import text_string_to_metric_families
from provider_harness import Provider, make_provider

from engram.context import Permission, issue_token
from engram.errors import InvalidRequest
from engram.provider import ProviderConfig
from engram.store import Store

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def _config(**changes: object) -> ProviderConfig:
    return ProviderConfig(public_url="https://provider.test", metrics=True, **changes)  # type: ignore[arg-type]


@pytest.fixture
def metered(any_store: Store) -> Iterator[Provider]:
    p = make_provider(any_store, _config())
    with p.client:
        yield p


def _token(p: Provider, *permissions: Permission) -> str:
    return issue_token(p.store, p.clock, p.demo.subject.id, permissions, timedelta(days=1))


def _scrape(p: Provider, token: str) -> tuple[str, Samples]:
    response = p.client.get("/metrics", headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    samples: Samples = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return response.text, samples


def _value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


@pytest.mark.req("engram.provider.metrics-off-by-default")
def test_without_metrics_the_route_does_not_exist(provider: Provider) -> None:
    token = _token(provider, Permission.METRICS)
    response = provider.client.get("/metrics", headers={"Authorization": f"Bearer {token}"})
    unknown = provider.client.get("/no-such-route", headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 404
    assert response.json() == unknown.json()
    assert response.json()["error"]["code"] == "not_found"
    assert provider.app.state.services.metrics is None  # nothing is recorded either


@pytest.mark.req("engram.provider.metrics-permission")
def test_metrics_needs_the_metrics_permission_with_the_same_refusals(metered: Provider) -> None:
    client = metered.client
    read_only = _token(metered, Permission.READ)
    metrics_only = _token(metered, Permission.METRICS)
    # No token: 401 with the bare challenge, exactly as /v1/context answers it.
    none, none_context = client.get("/metrics"), client.get("/v1/context")
    assert none.status_code == none_context.status_code == 401
    assert none.json() == none_context.json()
    assert none.headers["www-authenticate"] == none_context.headers["www-authenticate"]
    # An unknown token: 401 invalid_token.
    bad = {"Authorization": "Bearer eng_" + "x" * 43}
    unknown, unknown_context = (
        client.get("/metrics", headers=bad),
        client.get("/v1/context", headers=bad),
    )
    assert unknown.status_code == unknown_context.status_code == 401
    assert unknown.headers["www-authenticate"] == unknown_context.headers["www-authenticate"]
    # A valid token without the permission: 403 insufficient_scope, both ways round.
    wrong = client.get("/metrics", headers={"Authorization": f"Bearer {read_only}"})
    wrong_context = client.get("/v1/context", headers={"Authorization": f"Bearer {metrics_only}"})
    assert wrong.status_code == wrong_context.status_code == 403
    assert wrong.json()["error"]["code"] == wrong_context.json()["error"]["code"] == "forbidden"
    assert "'metrics' permission" in wrong.json()["error"]["message"]
    assert wrong.headers["www-authenticate"] == wrong_context.headers["www-authenticate"]
    assert 'error="insufficient_scope"' in wrong.headers["www-authenticate"]
    # The right one, and admin (which implies every permission).
    for token in (metrics_only, metered.demo.token):
        assert (
            client.get("/metrics", headers={"Authorization": f"Bearer {token}"}).status_code == 200
        )


@pytest.mark.req("engram.provider.metrics-requests", "engram.provider.metrics-export-cache")
def test_request_and_cache_counters_move_and_labels_hold_no_caller_data(metered: Provider) -> None:
    client, token = metered.client, _token(metered, Permission.METRICS)
    _, before = _scrape(metered, token)
    auth = metered.headers()
    for _ in range(3):
        assert client.get("/v1/context", headers=auth).status_code == 200
    secret_cid = "corr_" + "s3cr3t" * 4
    assert client.get(f"/v1/corrections/{secret_cid}", headers=auth).status_code == 404
    assert client.get(f"/nope/{metered.demo.token}?q=private", headers=auth).status_code == 404
    text, after = _scrape(metered, token)

    def moved(name: str, **labels: str) -> float:
        return _value(after, name, **labels) - _value(before, name, **labels)

    ok = {"method": "GET", "route": "/v1/context", "status": "200"}
    assert moved("engram_http_request_duration_seconds_count", **ok) == 3
    assert moved("engram_http_request_duration_seconds_bucket", le="+Inf", **ok) == 3
    assert moved("engram_http_request_duration_seconds_sum", **ok) > 0
    templated = {"method": "GET", "route": "/v1/corrections/{cid}", "status": "404"}
    assert moved("engram_http_request_duration_seconds_count", **templated) == 1
    unmatched = {"method": "GET", "route": "(unmatched)", "status": "404"}
    assert moved("engram_http_request_duration_seconds_count", **unmatched) == 1
    # The first export of this state was signed (a miss), the next two came from the cache.
    assert moved("engram_export_cache_misses_total") == 1
    assert moved("engram_export_cache_hits_total") == 2
    assert moved("engram_sign_duration_seconds_count", kind="export") == 1
    # The scrape before this one is counted too, under its own template.
    scrape = {"method": "GET", "route": "/metrics", "status": "200"}
    assert moved("engram_http_request_duration_seconds_count", **scrape) == 1
    for secret in (metered.demo.token, token, secret_cid, metered.demo.subject.id, "private"):
        assert secret not in text


@pytest.mark.req("engram.provider.metrics-sign-time")
def test_diff_signing_time_is_observed(metered: Provider) -> None:
    token = _token(metered, Permission.METRICS)
    _, before = _scrape(metered, token)
    response = metered.client.get(
        "/v1/context/diff", params={"since": "2020-01-01T00:00:00Z"}, headers=metered.headers()
    )
    assert response.status_code == 200, response.text
    _, after = _scrape(metered, token)
    name = "engram_sign_duration_seconds_count"
    assert _value(after, name, kind="diff") - _value(before, name, kind="diff") == 1


@pytest.mark.req("engram.provider.metrics-rate-limits")
def test_rate_limit_refusals_are_counted_per_bucket(memory_store: Store) -> None:
    p = make_provider(memory_store, _config(rate_limit_burst=2, rate_limit_per_minute=60))
    with p.client:
        scraper = _token(p, Permission.METRICS)
        reader = _token(p, Permission.READ)
        # The public route is limited per client address.
        assert [p.client.get("/healthz").status_code for _ in range(3)] == [200, 200, 429]
        p.clock.advance(timedelta(minutes=2))  # every bucket full again
        # An authenticated route per token id.
        statuses = [
            p.client.get("/v1/context", headers=p.headers(reader)).status_code for _ in range(4)
        ]
        assert statuses == [200, 200, 429, 429]
        p.clock.advance(timedelta(minutes=2))
        _, samples = _scrape(p, scraper)
    assert _value(samples, "engram_rate_limited_total", limit="address") == 1
    assert _value(samples, "engram_rate_limited_total", limit="token") == 2
    # Refused before routing: no route template to name.
    refused = {"method": "GET", "route": "(unmatched)", "status": "429"}
    count = "engram_http_request_duration_seconds_count"
    assert _value(samples, count, **refused) == 1
    limited = {"method": "GET", "route": "/v1/context", "status": "429"}
    assert _value(samples, count, **limited) == 2


@pytest.mark.req("engram.provider.metrics-db-pool")
def test_database_pool_use_is_reported(metered: Provider) -> None:
    token = _token(metered, Permission.METRICS)
    assert metered.client.get("/v1/context", headers=metered.headers()).status_code == 200
    _, samples = _scrape(metered, token)
    in_use = _value(samples, "engram_db_connections", state="in_use")
    idle = _value(samples, "engram_db_connections", state="idle")
    stats = metered.store.pool_stats()  # type: ignore[attr-defined]
    assert (in_use, idle) == (stats.in_use, stats.idle)
    assert in_use + idle >= 1  # at least the connection that just served the export
    if metered.store.dialect.name == "postgresql":
        assert _value(samples, "engram_db_pool_max") >= 1
    # The scrape itself is in flight while the gauges are sampled.
    assert _value(samples, "engram_http_requests_in_flight") == 1


@pytest.mark.req("engram.provider.metrics-off-by-default")
def test_the_environment_switches_metrics_on_and_refuses_nonsense() -> None:
    assert ProviderConfig.from_env({}).metrics is False
    assert ProviderConfig.from_env({"ENGRAM_METRICS": "1"}).metrics is True
    assert ProviderConfig.from_env({"ENGRAM_METRICS": "off"}).metrics is False
    with pytest.raises(InvalidRequest, match="ENGRAM_METRICS"):
        ProviderConfig.from_env({"ENGRAM_METRICS": "maybe"})
