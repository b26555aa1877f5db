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

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from engram.context import ensure_schema
from engram.core.canonical import canonicalize
from engram.core.clock import Clock, SystemClock
from engram.errors import EngramError
from engram.provider import _routes_read as read
from engram.provider import _routes_write as write
from engram.provider._config import ProviderConfig
from engram.provider._cors import CorsMiddleware
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


def create_app(
    config: ProviderConfig,
    store: Store,
    clock: Clock | None = None,
    *,
    routes: Sequence[BaseRoute] = (),
    lifespan: Callable[[Starlette], AbstractAsyncContextManager[None]] | None = None,
) -> Starlette:
    """The provider app over ``store`` (migrated here); ``clock`` defaults to the wall clock.

    ``routes`` and ``lifespan`` let the CLI add other adapters beside the provider's own routes
    (``engram serve`` adds the MCP endpoint at ``/mcp``); they sit inside the same middleware
    (request id, limits, access log) and error handlers, and do their own authentication.
    """
    clock = clock or SystemClock()
    ensure_schema(store)
    services = Services(
        store=store,
        clock=clock,
        config=config,
        signer=ExportSigner(store, clock, config),
        idempotency=IdempotencyStore(store, retention=config.idempotency_retention),
    )
    # The document is fixed for the app's life: encode it once, not per request.
    spec = canonicalize(openapi_document(config))

    async def openapi(_: Request) -> Response:
        return Response(spec, media_type=JSON)

    own_routes = [
        # Routes are matched in order: the export, the provider's hottest route, comes first.
        Route("/v1/context", read.get_context, methods=["GET"]),
        Route("/healthz", read.healthz, methods=["GET"]),
        Route("/openapi.json", openapi, methods=["GET"]),
        Route("/.well-known/engram", read.well_known, methods=["GET"]),
        Route("/.well-known/engram-keys", read.well_known_keys, methods=["GET"]),
        Route("/v1/context/diff", read.get_diff, methods=["GET"]),
        Route("/v1/context/correct", write.post_correct, methods=["POST"]),
        Route("/v1/corrections", write.list_corrections_route, methods=["GET"]),
        Route("/v1/corrections/{cid}", write.get_correction_route, methods=["GET"]),
        Route("/v1/corrections/{cid}/confirm", write.confirm_route, methods=["POST"]),
        Route("/v1/corrections/{cid}/reject", write.reject_route, methods=["POST"]),
        Route("/v1/beliefs", write.list_beliefs_route, methods=["GET"]),
        Route("/v1/beliefs", write.post_belief, methods=["POST"]),
        Route("/v1/beliefs/{bid}", write.delete_belief_route, methods=["DELETE"]),
        Route("/v1/beliefs/{bid}/history", write.belief_history_route, methods=["GET"]),
        *review_routes(services),
    ]
    app = Starlette(
        routes=[*own_routes, *routes],
        lifespan=lifespan,
        middleware=[
            # Outermost, so every answer to an allowed origin (429 and 503 too) is readable.
            *(
                [Middleware(CorsMiddleware, origins=config.cors_origins)]
                if config.cors_origins
                else []
            ),
            Middleware(
                ProviderMiddleware,
                gate=ConcurrencyGate(config.max_concurrent),
                limiter=RateLimiter(clock, config.rate_limit_per_minute, config.rate_limit_burst),
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


__all__ = ["create_app"]
