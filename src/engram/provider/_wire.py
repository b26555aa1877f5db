"""Wire helpers shared by the routes: JSON responses, the error shape, request bodies.

Error responses always carry the spec's shape ``{"error": {"code", "message", "status"}}``
(Engram v0.1, "Error Code Reference"); internals (SQL, paths, tracebacks) never reach the wire.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

from starlette.requests import Request
from starlette.responses import Response

from engram.context.internals import ENGRAM_VERSION
from engram.core.canonical import Json, JsonObject, canonicalize, parse_object
from engram.errors import AuthError, CapacityError, EngramError, InvalidRequest, UnsupportedVersion
from engram.provider._auth import challenge

JSON = "application/json"
VERSION_HEADER = "engram-version"


def json_response(
    value: Json, status: int = 200, headers: Mapping[str, str] | None = None
) -> Response:
    """A JSON response whose body is the RFC 8785 form (compact, deterministic)."""
    return Response(canonicalize(value), status_code=status, media_type=JSON, headers=headers)


def error_body(code: str, message: str, status: int) -> bytes:
    return canonicalize({"error": {"code": code, "message": message, "status": status}})


def error_response(error: EngramError) -> Response:
    headers: dict[str, str] = {}
    if isinstance(error, CapacityError):
        headers["Retry-After"] = str(error.retry_after_seconds)
    if isinstance(error, AuthError):
        # One challenge for every route, /mcp included (engram.provider._auth).
        headers["WWW-Authenticate"] = challenge(error)
        headers["Cache-Control"] = "no-store"
    return Response(
        error_body(error.code, error.message, error.http_status),
        status_code=error.http_status,
        media_type=JSON,
        headers=headers,
    )


def accepts_gzip(accept_encoding: str | None) -> bool:
    """Whether an ``Accept-Encoding`` value allows gzip (RFC 9110 section 12.5.3): ``gzip`` (or
    ``x-gzip``) with a q-value above 0, else ``*`` with one; absent means identity only."""
    if not accept_encoding:
        return False
    if len(accept_encoding) > 200:  # not worth a cache slot; parse it once here
        return _accepts_gzip(accept_encoding)
    return _accepts_gzip_cached(accept_encoding)


def _accepts_gzip(value: str) -> bool:
    star = False
    for item in value.split(","):
        name, _, params = item.partition(";")
        q = 1.0
        for param in params.split(";"):
            key, _, number = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    q = float(number.strip())
                except ValueError:
                    q = 0.0
        coding = name.strip().lower()
        if coding in ("gzip", "x-gzip"):
            return q > 0
        if coding == "*":
            star = q > 0
    return star


# Clients send the same few values on every request.
_accepts_gzip_cached = functools.lru_cache(maxsize=128)(_accepts_gzip)


def check_version_header(request: Request) -> None:
    """An ``Engram-Version`` request header, when sent, must name a version we serve."""
    check_version_value(request.headers.get(VERSION_HEADER))


def check_version_value(asked: str | None) -> None:
    """:func:`check_version_header` from the header's value (``None`` when absent)."""
    if asked is not None and asked.strip() != ENGRAM_VERSION:
        raise UnsupportedVersion(f"engram_version {asked.strip()!r} not supported; use 0.1")


async def json_object(
    request: Request, max_bytes: int, *, empty_is_object: bool = False
) -> JsonObject:
    """The request body as a JSON object (strict I-JSON), or InvalidRequest; with
    ``empty_is_object`` no body at all reads as ``{}`` (a body whose members are optional)."""
    content_type = request.headers.get("content-type", "")
    if content_type.split(";")[0].strip().lower() not in ("application/json", ""):
        raise InvalidRequest("request body must be application/json")
    body = bytearray()
    async for chunk in request.stream():
        body.extend(chunk)
        if len(body) > max_bytes:
            raise InvalidRequest(f"request body larger than {max_bytes} bytes")
    if empty_is_object and not body:
        return {}
    return parse_object(bytes(body), what="request body", error=InvalidRequest)


__all__ = [
    "JSON",
    "accepts_gzip",
    "check_version_header",
    "check_version_value",
    "error_body",
    "error_response",
    "json_object",
    "json_response",
]
