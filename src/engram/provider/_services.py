"""What every route needs: the store, the clock, settings, the signer, idempotency, auth.

One :class:`Services` instance lives on ``app.state.services``. Its methods are synchronous
(they hit the store) and are run in Starlette's thread pool, never on the event loop.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from engram.context import (
    Permission,
    TokenGrant,
    authenticate_token,
    authenticate_token_with_state,
)
from engram.core.canonical import JsonValue, canonicalize, digest_hex
from engram.core.clock import Clock
from engram.errors import EngramError, Forbidden, UserNotFound
from engram.provider._config import ProviderConfig
from engram.provider._signer import ExportSigner
from engram.provider._wire import JSON, bearer_from_header, bearer_token
from engram.store import Store
from engram.store.idempotency import IdempotencyStore

REPLAY_HEADER = "Idempotent-Replayed"
P = ParamSpec("P")
T = TypeVar("T")


@dataclass
class Services:
    store: Store
    clock: Clock
    config: ProviderConfig
    signer: ExportSigner
    idempotency: IdempotencyStore

    def authorize(self, request: Request, permission: Permission) -> TokenGrant:
        """The caller's grant if its token allows ``permission``; records the subject for the
        access log. Unauthorized / TokenExpired / Forbidden otherwise."""
        grant = authenticate_token(self.store, self.clock, bearer_token(request))
        request.state.subject_id = grant.subject_id
        if not grant.allows(permission):
            raise Forbidden(f"this token lacks the {permission.value!r} permission")
        return grant

    def authorize_header_with_state(
        self, authorization: str | None, permission: Permission, state: dict[str, Any]
    ) -> tuple[TokenGrant, int]:
        """:meth:`authorize` and the subject's state version in one store read, from the raw
        ``Authorization`` value; records the subject in the ASGI ``state`` for the access log.
        UserNotFound when the subject was erased."""
        grant, version = authenticate_token_with_state(
            self.store, self.clock, bearer_from_header(authorization)
        )
        state["subject_id"] = grant.subject_id
        if not grant.allows(permission):
            raise Forbidden(f"this token lacks the {permission.value!r} permission")
        if version is None:
            raise UserNotFound(f"no Engram record for subject {grant.subject_id!r}")
        return grant, version

    async def read(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Run a short store read: inline on SQLite (a point read takes microseconds, less than
        a thread hop), in the thread pool on PostgreSQL (a network round trip)."""
        if self.store.dialect.is_sqlite:
            return fn(*args, **kwargs)
        return await run_in_threadpool(fn, *args, **kwargs)

    def idempotent(
        self,
        request: Request,
        grant: TokenGrant,
        body: JsonValue,
        handle: Callable[[], tuple[int, JsonValue]],
    ) -> Response:
        """Run ``handle`` once per ``Idempotency-Key`` (OpenWOP v2 Conformance, "Production
        profile"): a retry with the same key and body gets the first answer byte for byte; the
        same key with another body is ``422 idempotency_conflict``. Without the header the
        request simply runs."""
        key = request.headers.get("idempotency-key")
        if key is None:
            status, value = handle()
            return Response(canonicalize(value), status_code=status, media_type=JSON)
        scope = f"{request.method} {request.url.path} {grant.subject_id}"
        digest = digest_hex(body)
        stored = self.idempotency.begin(scope, key, digest, self.clock.now())
        if stored is not None:
            return Response(
                stored.body,
                status_code=stored.status,
                media_type=JSON,
                headers={REPLAY_HEADER: "true"},
            )
        try:
            status, value = handle()
        except EngramError as e:
            if e.http_status >= 500:
                self.idempotency.abandon(scope, key)
            else:
                # A refused request changed nothing: keep the refusal so a retry gets it too.
                self.idempotency.complete(scope, key, e.http_status, canonicalize(e.to_wire()))
            raise
        except BaseException:
            self.idempotency.abandon(scope, key)
            raise
        payload = canonicalize(value)
        self.idempotency.complete(scope, key, status, payload)
        return Response(payload, status_code=status, media_type=JSON)


__all__ = ["REPLAY_HEADER", "Services"]
