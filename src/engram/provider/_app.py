"""``create_app``: the Engram v0.1 provider as a Starlette ASGI application.

Routes are thin (parse, one domain call, render); errors of the engram tree become the spec's
error shape with their own status; unknown routes (404 ``not_found``), wrong methods (405
``method_not_allowed``) and unexpected failures (500 ``server_error``, details only in the log)
use the same shape. ``docs/spec/context-provider.md`` documents every route and decision.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route, request_response
from starlette.types import ASGIApp, Receive, Scope, Send

from engram.context import Permission, ensure_schema
from engram.context.internals import ContextCache
from engram.core.canonical import canonicalize
from engram.core.clock import Clock, SystemClock
from engram.errors import EngramError
from engram.provider import _routes_read as routes_read
from engram.provider import _routes_write as write
from engram.provider._auth import AuthGuard
from engram.provider._config import ProviderConfig
from engram.provider._cors import CorsMiddleware
from engram.provider._limits import ConcurrencyGate, RateLimiter
from engram.provider._middleware import ProviderMiddleware
from engram.provider._openapi import openapi_document
from engram.provider._services import Services
from engram.provider._signer import ExportSigner
from engram.provider._wire import JSON, error_body, error_response
from engram.provider.review.internals import review_routes
from engram.store import Store
from engram.store.idempotency import IdempotencyStore

if TYPE_CHECKING:  # the memory engine (numpy, tantivy) loads only when one is served
    from engram.memory import MemoryEngine

LOG = logging.getLogger("engram.provider")

IN_FLIGHT_LIMIT = timedelta(minutes=10)  # far above a request (a remote call: 120 s at most)
_HTTP_CODES = {404: "not_found", 405: "method_not_allowed", 400: "invalid_request"}


async def _engram_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, EngramError)
    request.state.error_code = exc.code
    if exc.http_status >= 500:
        LOG.error(
            "request %s failed: %s: %s",
            getattr(request.state, "request_id", "-"),
            type(exc).__name__,
            exc.message,
        )
        # Store and key failures say nothing useful (or safe) to the caller.
        return Response(
            error_body("server_error", "internal error", 500), status_code=500, media_type=JSON
        )
    return error_response(exc)


async def _http_error(request: Request, exc: Exception) -> Response:
    if not isinstance(exc, HTTPException):  # pragma: no cover - registered for HTTPException
        raise exc
    preflight = "access-control-request-method" in request.headers
    if exc.status_code == 405 and request.method == "OPTIONS" and not preflight:
        # RFC 9110 section 9.3.7: OPTIONS asks what the resource allows; answer, do not refuse.
        # A CORS preflight is the CORS layer's to grant: one that gets here is not granted.
        allowed = (exc.headers or {}).get("Allow", "")
        methods = sorted({m.strip() for m in allowed.split(",") if m.strip()} | {"OPTIONS"})
        return Response(status_code=204, headers={"Allow": ", ".join(methods)})
    code = _HTTP_CODES.get(exc.status_code, "invalid_request")
    request.state.error_code = code
    message = {
        404: "no such resource",
        405: f"method {request.method} not allowed here",
    }.get(exc.status_code, "request refused")
    headers = dict(exc.headers or {})
    if "Allow" in headers:  # Starlette joins a set: say it in a stable order
        headers["Allow"] = ", ".join(sorted(m.strip() for m in headers["Allow"].split(",")))
    return Response(
        error_body(code, message, exc.status_code),
        status_code=exc.status_code,
        media_type=JSON,
        headers=headers,
    )


async def _unexpected(request: Request, exc: Exception) -> Response:
    request.state.error_code = "server_error"
    LOG.exception(
        "request %s failed unexpectedly", getattr(request.state, "request_id", "-"), exc_info=exc
    )
    return Response(
        error_body("server_error", "internal error", 500), status_code=500, media_type=JSON
    )


Protected = tuple[str, ASGIApp, Permission]
"""An extra route behind the provider's auth: (path, ASGI app, the permission it needs)."""


def _guarded(endpoint: Callable[[Request], Any], permission: Permission) -> AuthGuard:
    """A Request -> Response endpoint (sync or async) behind the AuthGuard."""
    return AuthGuard(request_response(endpoint), permission)


class _ByMethod:
    """One path served by several methods, each its own app (and permission): one Route per
    path, so a 405 and ``OPTIONS`` name every method the path allows (issue 15: ``OPTIONS
    /v1/beliefs`` left POST out when GET and POST were two routes)."""

    def __init__(self, apps: dict[str, ASGIApp]) -> None:
        self.apps = apps

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        method = scope["method"]
        app = self.apps.get("GET" if method == "HEAD" else method)
        if app is None:  # pragma: no cover - Route refuses other methods before calling us
            raise HTTPException(405)
        await app(scope, receive, send)


def _routes_by_path(table: Sequence[tuple[str, str, ASGIApp]]) -> list[Route]:
    """One Route per path of ``(method, path, app)`` rows, in the order paths first appear."""
    grouped: dict[str, dict[str, ASGIApp]] = {}
    for method, path, app in table:
        grouped.setdefault(path, {})[method] = app
    routes: list[Route] = []
    for path, apps in grouped.items():
        only = next(iter(apps.values()))
        # A plain function would be taken for a Request -> Response endpoint and wrapped again.
        direct = len(apps) == 1 and not inspect.isfunction(only)
        endpoint = only if direct else _ByMethod(apps)
        routes.append(Route(path, endpoint, methods=list(apps)))
    return routes


def _limiter(config: ProviderConfig, clock: Clock) -> RateLimiter:
    return RateLimiter(
        clock, config.rate_limit_per_minute, config.rate_limit_burst, config.rate_limit_keys
    )


def create_app(
    config: ProviderConfig,
    store: Store,
    clock: Clock | None = None,
    *,
    routes: Sequence[BaseRoute] = (),
    protected: Sequence[Protected] = (),
    lifespan: Callable[[Starlette], AbstractAsyncContextManager[None]] | None = None,
    tracer_provider: Any = None,
    memory: MemoryEngine | None = None,
) -> Starlette:
    """The provider app over ``store`` (migrated here: it is a composition root); ``clock``
    defaults to the wall clock.

    ``routes``, ``protected`` and ``lifespan`` let the CLI add other adapters beside the
    provider's own routes: ``protected`` ones (``engram serve`` adds the MCP endpoint at
    ``/mcp``, needing ``memory``) sit behind the same AuthGuard as the provider's, ``routes``
    authenticate themselves; all share the middleware (request id, limits, access log) and the
    error handlers. ``tracer_provider`` (an OpenTelemetry ``TracerProvider``) replaces the one
    built from the ``OTEL_*`` variables when ``config.otel`` is on. ``memory`` (the seat's
    engine, ``engram serve`` passes the one ``/mcp`` serves) mounts the memory REST API at
    ``/v1/memories`` (docs/spec/memory-rest.md), adds it to ``/openapi.json``, and adds the
    ``/memories`` page beside ``/review``.
    """
    clock = clock or SystemClock()
    ensure_schema(store)
    services = Services(
        store=store,
        clock=clock,
        config=config,
        signer=ExportSigner(store, clock, config),
        # The memory routes answer keys in three steps (Services.idempotent_apart): a claim left
        # by a killed worker is taken over after IN_FLIGHT_LIMIT instead of the whole retention.
        idempotency=IdempotencyStore(
            store, retention=config.idempotency_retention, in_flight_limit=IN_FLIGHT_LIMIT
        ),
        token_limiter=_limiter(config, clock),
        cache=ContextCache(store, bound=config.change_bound.total_seconds()),
        memories=memory is not None,
    )
    gate = ConcurrencyGate(config.max_concurrent)
    metrics_routes: list[tuple[str, str, ASGIApp]] = []
    if config.metrics:
        # Imported only here: without metrics prometheus-client is never loaded.
        from engram.provider._metrics import MetricsEndpoint, ProviderMetrics

        services.metrics = ProviderMetrics(store)
        services.signer.on_signed = services.metrics.signed
        services.metrics.watch(gate)
        endpoint = AuthGuard(MetricsEndpoint(services.metrics), Permission.METRICS)
        metrics_routes.append(("GET", "/metrics", endpoint))
    # The document is fixed for the app's life: encode it once, not per request.
    kinds = None if memory is None else memory.spec.ontology.allowed_kinds
    spec = canonicalize(openapi_document(config, memory=memory is not None, memory_kinds=kinds))

    async def openapi(_: Request) -> Response:
        return Response(spec, media_type=JSON)

    read, correct, confirm, admin = (
        Permission.READ,
        Permission.CORRECT,
        Permission.CONFIRM,
        Permission.ADMIN,
    )
    table: list[tuple[str, str, ASGIApp]] = [
        # Routes are matched in order: the export, the provider's hottest route, comes first.
        ("GET", "/v1/context", AuthGuard(routes_read.get_context, read)),
        ("GET", "/healthz", request_response(routes_read.healthz)),
        ("GET", "/openapi.json", request_response(openapi)),
        ("GET", "/.well-known/engram", request_response(routes_read.well_known)),
        ("GET", "/.well-known/engram-keys", request_response(routes_read.well_known_keys)),
        ("GET", "/v1/context/diff", _guarded(routes_read.get_diff, read)),
        ("POST", "/v1/context/correct", _guarded(write.post_correct, correct)),
        ("GET", "/v1/corrections", _guarded(write.list_corrections_route, confirm)),
        ("GET", "/v1/corrections/{cid}", _guarded(write.get_correction_route, confirm)),
        ("POST", "/v1/corrections/{cid}/confirm", _guarded(write.confirm_route, confirm)),
        ("POST", "/v1/corrections/{cid}/reject", _guarded(write.reject_route, confirm)),
        ("GET", "/v1/beliefs", _guarded(write.list_beliefs_route, read)),
        ("POST", "/v1/beliefs", _guarded(write.post_belief, admin)),
        ("DELETE", "/v1/beliefs/{bid}", _guarded(write.delete_belief_route, admin)),
        ("GET", "/v1/beliefs/{bid}/history", _guarded(write.belief_history_route, read)),
        *metrics_routes,
    ]
    if memory is not None:
        from engram.provider._routes_memory import MemoryRoutes

        table += MemoryRoutes(memory).table()
    tracing: list[Middleware] = []
    if config.otel:
        # Imported only here: without tracing OpenTelemetry is never loaded.
        from engram.provider._tracing import TracingMiddleware, tracer_provider_from_env

        tracer = tracer_provider if tracer_provider is not None else tracer_provider_from_env()
        tracing.append(Middleware(TracingMiddleware, tracer_provider=tracer))
    own_routes = [*_routes_by_path(table), *review_routes(services, memory=memory)]
    extra = [Route(path, AuthGuard(app, permission)) for path, app, permission in protected]
    app = Starlette(
        routes=[*own_routes, *extra, *routes],
        lifespan=lifespan,
        middleware=[
            # Tracing outermost: every answer, refusals included, is one span.
            *tracing,
            # Then CORS, so every answer to an allowed origin (429 and 503 too) is readable.
            *(
                [Middleware(CorsMiddleware, origins=config.cors_origins)]
                if config.cors_origins
                else []
            ),
            Middleware(
                ProviderMiddleware,
                gate=gate,
                limiter=_limiter(config, clock),
                trusted_proxies=config.trusted_proxies,
                metrics=services.metrics,
            ),
        ],
        exception_handlers={
            EngramError: _engram_error,
            HTTPException: _http_error,
            Exception: _unexpected,
        },
    )
    app.state.services = services
    return app


__all__ = ["Protected", "create_app"]
