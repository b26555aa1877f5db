"""What every route needs: the store, the clock, settings, the signer, idempotency, auth.

Routes never authenticate themselves: :class:`~engram.provider._auth.AuthGuard` calls
:meth:`Services.authorize` and leaves the grant in ``request.state.grant`` (see
:func:`grant_of`).

One :class:`Services` instance lives on ``app.state.services``. Its methods are synchronous
(they hit the store) and are run in Starlette's thread pool, never on the event loop.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from engram.context import Permission
from engram.context.internals import (
    ContextCache,
    TokenGrant,
    authenticate_cached,
    authenticate_token_with_state,
    require_permission,
)
from engram.core.canonical import Json, canonicalize, digest_hex
from engram.core.clock import Clock
from engram.errors import EngramError, RateLimited
from engram.provider._config import ProviderConfig
from engram.provider._limits import RateLimiter
from engram.provider._signer import ExportSigner
from engram.provider._wire import JSON
from engram.store import Store, Tx
from engram.store.idempotency import IdempotencyStore

if TYPE_CHECKING:  # prometheus-client is imported only when metrics are enabled
    from engram.provider._metrics import ProviderMetrics

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
    # Authenticated requests are limited per token id, after authentication.
    token_limiter: RateLimiter
    # Token grants and subject state versions in memory, invalidated by the change feed.
    cache: ContextCache
    # GET /metrics and what it counts; None (nothing recorded) unless config.metrics.
    metrics: ProviderMetrics | None = None
    # Whether the memory REST API is mounted (create_app was given a memory engine).
    memories: bool = False

    def authorize_now(
        self, raw: str, permission: Permission, state: dict[str, Any]
    ) -> tuple[TokenGrant, int | None]:
        """Authenticate ``raw`` (the cache, else the store) and apply the one token rule
        (:func:`engram.context.internals.require_permission`), then charge the token's rate bucket;
        the subject goes into the ASGI ``state`` for the access log, also when refused."""
        grant, version = authenticate_token_with_state(self.store, self.clock, raw, self.cache)
        return self._admit(grant, version, permission, state)

    def _admit(
        self, grant: TokenGrant, version: int | None, permission: Permission, state: dict[str, Any]
    ) -> tuple[TokenGrant, int | None]:
        state["subject_id"] = grant.subject_id
        require_permission(grant, permission)
        try:
            self.token_limiter.check(grant.token_id)
        except RateLimited:
            if self.metrics is not None:
                self.metrics.refused("token")
            raise
        return grant, version

    async def authorize(
        self, raw: str, permission: Permission, state: dict[str, Any]
    ) -> tuple[TokenGrant, int | None]:
        """:meth:`authorize_now`: from memory on the event loop when the cache can answer (no
        I/O), else in the thread pool on PostgreSQL (a network round trip)."""
        cached = authenticate_cached(self.cache, self.clock, raw)
        if cached is not None:
            return self._admit(cached[0], cached[1], permission, state)
        return await self.read(self.authorize_now, raw, permission, state)

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
        body: Json,
        handle: Callable[[Tx | None], tuple[int, Json]],
    ) -> Response:
        """Run ``handle`` once per ``Idempotency-Key`` (OpenWOP v2 Conformance, "Production
        profile"): a retry with the same key and body gets the first answer byte for byte; the
        same key with another body is ``422 idempotency_conflict``. ``handle`` gets the
        transaction that also holds the key's claim and its stored answer, so the three commit
        together (one write transaction per POST). Without the header the request simply runs
        in a transaction of its own (``handle(None)``)."""
        key = request.headers.get("idempotency-key")
        if key is None:
            status, value = handle(None)
            return Response(canonicalize(value), status_code=status, media_type=JSON)
        scope = f"{request.method} {request.url.path} {grant.subject_id}"

        def encoded(tx: Tx) -> tuple[int, bytes]:
            status, value = handle(tx)
            return status, canonicalize(value)

        outcome = self.idempotency.run_once(scope, key, digest_hex(body), self.clock.now(), encoded)
        headers = {REPLAY_HEADER: "true"} if outcome.replayed else None
        return Response(outcome.body, status_code=outcome.status, media_type=JSON, headers=headers)

    def idempotent_apart(
        self,
        request: Request,
        subject_id: str,
        body: Json,
        handle: Callable[[], tuple[int, Json]],
    ) -> Response:
        """:meth:`idempotent` for a ``handle`` that opens its own transactions (the memory
        engine's writes, which embed, supersede in two steps and rebuild an index after an
        erase): the store's three-step protocol (claim, act, answer). A retry with the same key
        and body gets the first answer, another body is ``422 idempotency_conflict``; a refusal
        is stored as the answer; a failure (5xx) drops the claim so a retry runs. The key is
        scoped to the subject acted for, so an admin acting for a subject and the subject's own
        token share it, and an erase can seal what it answered
        (``engram.store.idempotency.seal_answers_naming``). A process killed between the claim
        and the answer leaves the key answering ``409 conflict`` until the store's in-flight
        limit, when the next request with the key takes the claim over."""
        key = request.headers.get("idempotency-key")
        if key is None:
            status, value = handle()
            return Response(canonicalize(value), status_code=status, media_type=JSON)
        scope = f"{request.method} {request.url.path} {subject_id}"
        records = self.idempotency
        stored = records.begin(scope, key, digest_hex(body), self.clock.now())
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
                records.abandon(scope, key)
            else:
                records.complete(scope, key, e.http_status, canonicalize(e.to_wire()))
            raise
        except BaseException:
            records.abandon(scope, key)
            raise
        encoded = canonicalize(value)
        records.complete(scope, key, status, encoded)
        return Response(encoded, status_code=status, media_type=JSON)


def grant_of(request: Request) -> TokenGrant:
    """The grant :class:`~engram.provider._auth.AuthGuard` authenticated for this request."""
    grant: TokenGrant = request.state.grant
    return grant


__all__ = ["REPLAY_HEADER", "Services", "grant_of"]
