"""The ASGI layer around every route: request id, limits, and one structured log line.

Order (outermost first): request id + access log, concurrency gate (503), the client address's
rate limit (429). The address bucket is looked at before the request runs and charged after it
unless the request authenticated a token (``state["grant"]``, set by the AuthGuard, which
charges the token's own bucket instead): public requests and failed authentications are limited
per address, authenticated ones per token id.
The access log line is JSON on the ``engram.provider.access`` logger with ``ts``, ``request_id``,
``method``, ``path``, ``status``, ``error_code``, ``subject_id``, ``latency_ms`` - never a token,
a key or a query string (OpenWOP v2 Conformance, "Production profile": logging).
"""

from __future__ import annotations

import logging
import re
import secrets
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from engram.core.clock import format_instant_precise
from engram.core.jsonio import dumps_text
from engram.errors import CapacityError
from engram.provider._auth import Network, client_address, header
from engram.provider._limits import ConcurrencyGate, RateLimiter
from engram.provider._wire import error_body

if TYPE_CHECKING:  # prometheus-client is imported only when metrics are enabled
    from engram.provider._metrics import ProviderMetrics

ACCESS_LOG = logging.getLogger("engram.provider.access")
_REQUEST_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


class ProviderMiddleware:
    """Wraps the Starlette app; see the module docstring."""

    def __init__(
        self,
        app: ASGIApp,
        gate: ConcurrencyGate,
        limiter: RateLimiter,
        trusted_proxies: Sequence[Network] = (),
        metrics: ProviderMetrics | None = None,
    ) -> None:
        self.app = app
        self.gate = gate
        self.limiter = limiter
        self.trusted_proxies = tuple(trusted_proxies)
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        offered = header(scope, b"x-request-id")
        # token_hex(16) has uuid4().hex's shape (32 lowercase hex digits) at a third of the cost.
        request_id = offered if offered and _REQUEST_ID.match(offered) else secrets.token_hex(16)
        state: dict[str, Any] = scope.setdefault("state", {})
        state["request_id"] = request_id
        status = 500
        id_header = (b"x-request-id", request_id.encode("ascii"))

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                message["headers"] = [*message.get("headers", []), id_header]
            await send(message)

        address = client_address(scope, self.trusted_proxies)
        try:
            self.gate.try_enter()
        except CapacityError as e:
            state["error_code"] = e.code
            await _refuse(e, send_with_id)
        else:
            try:
                self.limiter.peek(address)
            except CapacityError as e:
                state["error_code"] = e.code
                if self.metrics is not None:
                    self.metrics.refused("address")
                await _refuse(e, send_with_id)
            else:
                try:
                    await self.app(scope, receive, send_with_id)
                finally:
                    if "grant" not in state:
                        self.limiter.spend(address)
            finally:
                self.gate.leave()
        finally:
            _log(scope, state, status, started)
            if self.metrics is not None:
                self.metrics.observe(scope, status, time.perf_counter() - started)


async def _refuse(error: CapacityError, send: Send) -> None:
    body = error_body(error.code, error.message, error.http_status)
    await send(
        {
            "type": "http.response.start",
            "status": error.http_status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"retry-after", str(error.retry_after_seconds).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _log(scope: Scope, state: dict[str, Any], status: int, started: float) -> None:
    if not ACCESS_LOG.isEnabledFor(logging.INFO):
        return
    line = {
        "ts": format_instant_precise(datetime.now(UTC)),
        "event": "http_request",
        "request_id": state.get("request_id"),
        "method": scope.get("method"),
        "path": scope.get("path"),
        "status": status,
        "error_code": state.get("error_code"),
        "subject_id": state.get("subject_id"),
        "latency_ms": round((time.perf_counter() - started) * 1000.0, 3),
    }
    ACCESS_LOG.info(dumps_text(line))


__all__ = ["ACCESS_LOG", "ProviderMiddleware"]
