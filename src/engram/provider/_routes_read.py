"""Read routes: discovery, keys, the signed export and the signed diff (Engram v0.1 Tiers 1-3).

- ``GET /.well-known/engram``: discovery (``docs/spec/context-provider.md`` "Discovery").
- ``GET /.well-known/engram-keys``: every published Ed25519 key.
- ``GET /v1/context[?scope=]``: the signed export (``read`` permission).
- ``GET /v1/context/diff?since=[&scope=]``: the signed diff (``read`` permission).
- ``GET /healthz``: a trivial JSON answer (liveness; the benchmark's baseline).
"""

from __future__ import annotations

import re

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import QueryParams
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Send
from starlette.types import Scope as AsgiScope

from engram.context import CATEGORIES, SENSITIVE_CATEGORIES, Permission
from engram.context.internals import ENGRAM_VERSION, SCOPES, TokenGrant, resolve_scope
from engram.core.canonical import JsonObject
from engram.core.clock import parse_instant
from engram.errors import InvalidRequest, UserNotFound
from engram.provider._services import Services, grant_of
from engram.provider._wire import (
    JSON,
    accepts_gzip,
    check_version_header,
    check_version_value,
    json_response,
)

CLAIMED_TIER = 3
_PRIVATE = {"Cache-Control": "no-store"}


def _services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


def discovery_document(services: Services) -> JsonObject:
    """The discovery document; ``signingKeys`` lists the published keys for bundle checks."""
    base = services.config.base_url
    keys = services.signer.published_keys()
    return {
        "engram_version": ENGRAM_VERSION,
        "supported_versions": [ENGRAM_VERSION],
        "issuer": {"name": services.config.issuer_name, "url": base},
        "tier": CLAIMED_TIER,
        "tier_name": "full",
        "endpoints": {
            "context": f"{base}/v1/context",
            "diff": f"{base}/v1/context/diff",
            "correct": f"{base}/v1/context/correct",
            "corrections": f"{base}/v1/corrections",
            "beliefs": f"{base}/v1/beliefs",
            "keys": f"{base}/.well-known/engram-keys",
            "openapi": f"{base}/openapi.json",
            # The memory REST API, when this provider serves one (docs/spec/memory-rest.md).
            **({"memories": f"{base}/v1/memories"} if services.memories else {}),
        },
        "keys_url": f"{base}/.well-known/engram-keys",
        "scopes_supported": [*sorted(SCOPES)],
        "default_scope": "full",
        "categories": list(CATEGORIES),
        "sensitive_categories": [*sorted(SENSITIVE_CATEGORIES)],
        "permissions_supported": [p.value for p in Permission],
        "export_ttl_seconds": int(services.config.export_ttl.total_seconds()),
        "signature": {"alg": "Ed25519", "canonicalization": "RFC8785", "encoding": "base64url"},
        "signingKeys": [
            {"kid": k["kid"], "alg": k["alg"], "public_key": k["public_key"]} for k in keys
        ],
    }


def _public(services: Services) -> dict[str, str]:
    # The key list's cache lifetime is also how long a new key is published before it signs.
    max_age = int(services.config.keys_max_age.total_seconds())
    return {"Cache-Control": f"public, max-age={max_age}"}


def well_known(request: Request) -> Response:
    services = _services(request)
    return json_response(discovery_document(services), headers=_public(services))


def well_known_keys(request: Request) -> Response:
    services = _services(request)
    return json_response({"keys": [*services.signer.published_keys()]}, headers=_public(services))


class _ContextExport:
    """``GET /v1/context`` as a plain ASGI app: the provider's hottest route.

    It does what a Starlette endpoint would (behind the AuthGuard, which authenticated the token
    and read the subject's state version: the version header, then the scope, then the
    per-worker cache of signed response bytes) but reads the headers it needs straight from the
    ASGI scope and
    sends the cached bytes without building ``Request``/``Response`` objects, which cost more
    than the rest of a cache hit. Errors are raised as usual and mapped by the app's handlers.
    A client that accepts gzip gets the bytes compressed once when the export was signed; the
    signature is over the decoded bytes, which are the same either way.
    """

    async def __call__(self, scope: AsgiScope, _receive: Receive, send: Send) -> None:
        asked_version: str | None = None
        accept_encoding: str | None = None
        for name, value in scope["headers"]:  # the first of a repeated header wins, as in Starlette
            if name == b"engram-version":
                if asked_version is None:
                    asked_version = value.decode("latin-1")
            elif name == b"accept-encoding" and accept_encoding is None:
                accept_encoding = value.decode("latin-1")
        check_version_value(asked_version)
        services: Services = scope["app"].state.services
        state = scope["state"]
        grant: TokenGrant = state["grant"]  # AuthGuard(Permission.READ) authenticated it
        version: int | None = state["state_version"]
        if version is None:
            raise UserNotFound(f"no Engram record for subject {grant.subject_id!r}")
        query = scope["query_string"]
        export_scope = resolve_scope(QueryParams(query).get("scope") if query else None)
        signed = services.signer.cached(grant.subject_id, export_scope, version)
        if services.metrics is not None:
            services.metrics.export_cache(signed is not None)
        if signed is None:
            signed = await run_in_threadpool(
                services.signer.export, grant.subject_id, export_scope, version
            )
        if accepts_gzip(accept_encoding):
            body = signed.gzipped
            headers = [(b"content-encoding", b"gzip")]
        else:
            body = signed.body
            headers = []
        headers += [
            (b"cache-control", b"no-store"),
            (b"content-length", str(len(body)).encode("ascii")),
            (b"content-type", b"application/json"),
            (b"vary", b"Accept-Encoding"),
        ]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})


get_context = _ContextExport()


def get_diff(request: Request) -> Response:
    check_version_header(request)
    services = _services(request)
    grant = grant_of(request)
    scope = resolve_scope(request.query_params.get("scope"))
    since_text = request.query_params.get("since")
    if since_text is None:
        raise InvalidRequest("the since query parameter is required (an RFC 3339 date-time)")
    since = parse_instant(_plus_restored(since_text))
    body = services.signer.diff(grant.subject_id, scope, since)
    return Response(body, media_type=JSON, headers=_PRIVATE)


_SPACED_OFFSET = re.compile(
    r"^(\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?) (\d{2}:\d{2})$"
)


def _plus_restored(since: str) -> str:
    """``since`` with an unencoded ``+HH:MM`` offset, which a query string turns into a space,
    read as the instant meant (``...T10:00:00 02:00`` -> ``...T10:00:00+02:00``): no other
    reading of a space there exists, and ``-HH:MM`` offsets survive unencoded."""
    match = _SPACED_OFFSET.match(since)
    return f"{match.group(1)}+{match.group(2)}" if match else since


async def healthz(_: Request) -> Response:
    return json_response({"status": "ok"})


__all__ = [
    "CLAIMED_TIER",
    "discovery_document",
    "get_context",
    "get_diff",
    "healthz",
    "well_known",
    "well_known_keys",
]
