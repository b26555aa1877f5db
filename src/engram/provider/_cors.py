"""CORS for browser runtimes: allowed origins may read the context, diff and correct routes.

Engram v0.1 says nothing about browsers, but a runtime in a web page is a runtime: it must be
able to read discovery, the key list and the export, ask for diffs and post corrections with its
bearer token. The Fetch standard's CORS protocol decides what such a page may read; this ASGI
middleware answers it for the routes a runtime uses (docs/spec/context-provider.md, "CORS"):

- allowed origins come from ``ProviderConfig.cors_origins`` (``ENGRAM_CORS_ORIGINS``); none by
  default, and then this middleware is not installed at all;
- a preflight (``OPTIONS`` with ``Access-Control-Request-Method``) from an allowed origin gets
  ``204`` with the route's method and the headers a runtime sends (``Authorization``,
  ``Content-Type``, ``Engram-Version``, ``Idempotency-Key``); from any other origin ``403`` in
  the spec's error shape;
- every answer to an allowed origin, errors included (401, 429, 503), carries
  ``Access-Control-Allow-Origin`` so the page can read the error body; ``Retry-After``,
  ``WWW-Authenticate`` and ``X-Request-Id`` are exposed to it. No credentials mode: bearer
  tokens, not cookies, so ``Access-Control-Allow-Credentials`` is never sent.

Why not Starlette's ``CORSMiddleware``: it answers a refused preflight with plain text (not the
spec's error shape) and applies to every route, including the review page, which must stay
same-origin.
"""

from __future__ import annotations

from collections.abc import Iterable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from engram.provider._wire import error_body

ANY_ORIGIN = "*"
ROUTE_METHODS: dict[str, str] = {
    "/.well-known/engram": "GET",
    "/.well-known/engram-keys": "GET",
    "/v1/context": "GET",
    "/v1/context/diff": "GET",
    "/v1/context/correct": "POST",
}
"""The routes a browser runtime uses, and the method each answers."""
ALLOWED_HEADERS = "Authorization, Content-Type, Engram-Version, Idempotency-Key, X-Request-Id"
EXPOSED_HEADERS = "Retry-After, WWW-Authenticate, X-Request-Id"
MAX_AGE_SECONDS = 600


class CorsMiddleware:
    """See the module docstring. ``origins`` are exact ``scheme://host[:port]`` strings, or
    ``*`` for any origin."""

    def __init__(self, app: ASGIApp, origins: Iterable[str]) -> None:
        self.app = app
        self.origins = frozenset(origins)

    def _allows(self, origin: str) -> bool:
        return ANY_ORIGIN in self.origins or origin in self.origins

    def _allow_origin(self, origin: str) -> bytes:
        # With "*" configured the answer is "*" itself (no credentials are ever involved).
        return (ANY_ORIGIN if ANY_ORIGIN in self.origins else origin).encode("latin-1")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        method = ROUTE_METHODS.get(scope.get("path", "")) if scope["type"] == "http" else None
        origin = _header(scope, b"origin") if method is not None else None
        if method is None or origin is None:
            await self.app(scope, receive, send)
            return
        if scope["method"] == "OPTIONS" and _header(scope, b"access-control-request-method"):
            await self._preflight(origin, method, send)
            return
        if not self._allows(origin):
            await self.app(scope, receive, _with_headers(send, [(b"vary", b"Origin")]))
            return
        extra = [
            (b"access-control-allow-origin", self._allow_origin(origin)),
            (b"access-control-expose-headers", EXPOSED_HEADERS.encode()),
            (b"vary", b"Origin"),
        ]
        await self.app(scope, receive, _with_headers(send, extra))

    async def _preflight(self, origin: str, method: str, send: Send) -> None:
        if not self._allows(origin):
            body = error_body(
                "forbidden",
                f"origin {origin[:200]!r} is not allowed to call this provider from a browser "
                "(ENGRAM_CORS_ORIGINS)",
                403,
            )
            headers = [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"vary", b"Origin"),
            ]
            await send({"type": "http.response.start", "status": 403, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        headers = [
            (b"access-control-allow-origin", self._allow_origin(origin)),
            (b"access-control-allow-methods", method.encode()),
            (b"access-control-allow-headers", ALLOWED_HEADERS.encode()),
            (b"access-control-max-age", str(MAX_AGE_SECONDS).encode()),
            (b"vary", b"Origin, Access-Control-Request-Method, Access-Control-Request-Headers"),
            (b"content-length", b"0"),
        ]
        await send({"type": "http.response.start", "status": 204, "headers": headers})
        await send({"type": "http.response.body", "body": b""})


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key == name:
            return bytes(value).decode("latin-1")
    return None


def _with_headers(send: Send, extra: list[tuple[bytes, bytes]]) -> Send:
    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            message["headers"] = [*message.get("headers", []), *extra]
        await send(message)

    return sending


__all__ = ["ALLOWED_HEADERS", "ANY_ORIGIN", "EXPOSED_HEADERS", "ROUTE_METHODS", "CorsMiddleware"]
