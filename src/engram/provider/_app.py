"""``create_app``: the Engram v0.1 provider as a Starlette ASGI application.

Routes are thin (parse, one domain call, render); errors of the engram tree become the spec's
error shape with their own status; unknown routes (404 ``not_found``), wrong methods (405
``method_not_allowed``) and unexpected failures (500 ``server_error``, details only in the log)
use the same shape. ``docs/spec/context-provider.md`` documents every route and decision.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route, request_response
from starlette.types import ASGIApp

from engram.context import ContextCache, Permission, ensure_schema
from engram.core.canonical import canonicalize
from engram.core.clock import Clock, SystemClock
from engram.errors import EngramError
from engram.provider import _routes_read as routes_read
from engram.provider import _routes_write as write
from engram.provider._auth import AuthGuard
from engram.provider._config import ProviderConfig
from engram.provider._limits import ConcurrencyGate, RateLimiter
from engram.provider._middleware import ProviderMiddleware
from engram.provider._openapi import openapi_document
from engram.provider._services import Services
from engram.provider._signer import ExportSigner
from engram.provider._wire import JSON, error_body, error_response
from engram.provider.review import review_routes
from engram.store import Store
from engram.store.idempotency import IdempotencyStore

LOG = logging.getLogger("engram.provider")

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
    assert isinstance(exc, HTTPException)
    code = _HTTP_CODES.get(exc.status_code, "invalid_request")
    request.state.error_code = code
    message = {
        404: "no such resource",
        405: f"method {request.method} not allowed here",
    }.get(exc.status_code, "request refused")
    headers = dict(exc.headers or {})
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
) -> Starlette:
    """The provider app over ``store`` (migrated here: it is a composition root); ``clock``
    defaults to the wall clock.

    ``routes``, ``protected`` and ``lifespan`` let the CLI add other adapters beside the
    provider's own routes: ``protected`` ones (``engram serve`` adds the MCP endpoint at
    ``/mcp``, needing ``memory``) sit behind the same AuthGuard as the provider's, ``routes``
    authenticate themselves; all share the middleware (request id, limits, access log) and the
    error handlers.
    """
    clock = clock or SystemClock()
    ensure_schema(store)
    services = Services(
        store=store,
        clock=clock,
        config=config,
        signer=ExportSigner(store, clock, config),
        idempotency=IdempotencyStore(store, retention=config.idempotency_retention),
        token_limiter=_limiter(config, clock),
        cache=ContextCache(store, bound=config.change_bound.total_seconds()),
    )
    # The document is fixed for the app's life: encode it once, not per request.
    spec = canonicalize(openapi_document(config))

    async def openapi(_: Request) -> Response:
        return Response(spec, media_type=JSON)

    def guarded(
        method: str, path: str, endpoint: Callable[[Request], Any], permission: Permission
    ) -> Route:
        return Route(path, _guarded(endpoint, permission), methods=[method])

    read, correct, confirm, admin = (
        Permission.READ,
        Permission.CORRECT,
        Permission.CONFIRM,
        Permission.ADMIN,
    )
    own_routes = [
        # Routes are matched in order: the export, the provider's hottest route, comes first.
        Route("/v1/context", AuthGuard(routes_read.get_context, read), methods=["GET"]),
        Route("/healthz", routes_read.healthz, methods=["GET"]),
        Route("/openapi.json", openapi, methods=["GET"]),
        Route("/.well-known/engram", routes_read.well_known, methods=["GET"]),
        Route("/.well-known/engram-keys", routes_read.well_known_keys, methods=["GET"]),
        guarded("GET", "/v1/context/diff", routes_read.get_diff, read),
        guarded("POST", "/v1/context/correct", write.post_correct, correct),
        guarded("GET", "/v1/corrections", write.list_corrections_route, confirm),
        guarded("GET", "/v1/corrections/{cid}", write.get_correction_route, confirm),
        guarded("POST", "/v1/corrections/{cid}/confirm", write.confirm_route, confirm),
        guarded("POST", "/v1/corrections/{cid}/reject", write.reject_route, confirm),
        guarded("GET", "/v1/beliefs", write.list_beliefs_route, read),
        guarded("POST", "/v1/beliefs", write.post_belief, admin),
        guarded("DELETE", "/v1/beliefs/{bid}", write.delete_belief_route, admin),
        guarded("GET", "/v1/beliefs/{bid}/history", write.belief_history_route, read),
        *review_routes(services),
    ]
    extra = [Route(path, AuthGuard(app, permission)) for path, app, permission in protected]
    app = Starlette(
        routes=[*own_routes, *extra, *routes],
        lifespan=lifespan,
        middleware=[
            Middleware(
                ProviderMiddleware,
                gate=ConcurrencyGate(config.max_concurrent),
                limiter=_limiter(config, clock),
                trusted_proxies=config.trusted_proxies,
            )
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
