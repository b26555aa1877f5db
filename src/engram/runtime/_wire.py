"""The HTTP exchanges of the context protocol, as data: requests the SDK makes, and how a
provider's answer becomes a value or an error from the engram tree.

Kept apart from any HTTP client so the protocol logic (``_engine``) runs unchanged under the
sync and the async client, and so errors read the same whichever drives them. Error bodies follow
Engram v0.1 "Error Code Reference": ``{"error": {"code", "message", "status"}}``.
"""

from __future__ import annotations

import re
from collections.abc import Generator
from dataclasses import dataclass
from typing import TypeAlias, TypeVar

import httpx

from engram.core.canonical import parse_strict
from engram.errors import (
    BeliefNotFound,
    CanonicalJsonError,
    CapacityError,
    EngramError,
    Forbidden,
    IdempotencyConflict,
    InvalidRequest,
    InvalidScope,
    RateLimited,
    RemoteError,
    ResourceNotFound,
    TokenExpired,
    Unauthorized,
    UnsupportedVersion,
    UserNotFound,
)

T = TypeVar("T")
_SECONDS = re.compile(r"[0-9]{1,9}")

#: Well-known paths (Engram v0.1); discovery may name others (docs/spec/runtime.md).
DISCOVERY_PATH = "/.well-known/engram"
KEYS_PATH = "/.well-known/engram-keys"
CONTEXT_PATH = "/v1/context"
DIFF_PATH = "/v1/context/diff"
CORRECT_PATH = "/v1/context/correct"


@dataclass(frozen=True, slots=True)
class Call:
    """One HTTP request the protocol logic wants made. ``path`` is relative to the provider
    URL, or absolute when discovery named an endpoint on another origin."""

    method: str
    path: str
    params: tuple[tuple[str, str], ...] = ()
    body: bytes | None = None
    headers: tuple[tuple[str, str], ...] = ()
    authenticated: bool = True
    wait_before: float = 0.0
    """Seconds the driver waits before sending it: a retry after a short ``Retry-After``."""

    def describe(self) -> str:
        return f"{self.method} {self.path}"


Op: TypeAlias = Generator[Call, httpx.Response, T]
"""A protocol operation: yields calls, is sent each response (or thrown a RemoteError when the
provider cannot be reached), and returns its result."""

_BY_CODE: dict[str, type[EngramError]] = {
    "unauthorized": Unauthorized,
    "token_expired": TokenExpired,
    "forbidden": Forbidden,
    "user_not_found": UserNotFound,
    "belief_not_found": BeliefNotFound,
    "invalid_scope": InvalidScope,
    "invalid_request": InvalidRequest,
    "unsupported_version": UnsupportedVersion,
    "idempotency_conflict": IdempotencyConflict,
    "not_found": ResourceNotFound,
}

_BY_STATUS: dict[int, type[EngramError]] = {
    400: InvalidRequest,
    401: Unauthorized,
    403: Forbidden,
    404: ResourceNotFound,
}


def expect_ok(call: Call, response: httpx.Response) -> bytes:
    """The body of a 2xx answer; any other answer raised as the engram error it names."""
    if 200 <= response.status_code < 300:
        return response.content
    raise error_from(call, response)


def error_from(call: Call, response: httpx.Response) -> EngramError:
    """Map a non-2xx answer to the engram error class its ``error.code`` names.

    Unknown codes fall back on the status; 5xx and anything unrecognisable are
    :class:`RemoteError`, which is what "the provider is unavailable" means to the scheduler.
    """
    status = response.status_code
    code, message = _error_fields(response.content)
    where = f"{call.describe()} answered HTTP {status}"
    text = f"{where} {code}: {message}" if code else f"{where}: {message}"
    if status == 429 or code == "rate_limited":
        return RateLimited(text, _retry_after(response))
    if status == 503:
        return CapacityError(text, _retry_after(response))
    if status >= 500:
        return RemoteError(text)
    cls = _BY_CODE.get(code) or _BY_STATUS.get(status) or RemoteError
    return cls(text)


def _error_fields(body: bytes) -> tuple[str, str]:
    try:
        value = parse_strict(body)
    except CanonicalJsonError:
        return "", "the body is not the spec's JSON error shape"
    error = value.get("error") if isinstance(value, dict) else None
    if not isinstance(error, dict):
        return "", "the body is not the spec's JSON error shape"
    code, message = error.get("code"), error.get("message")
    return (
        code if isinstance(code, str) else "",
        # One line, bounded: a hostile provider must not flood a runtime's logs.
        " ".join(message.split())[:300] if isinstance(message, str) else "",
    )


#: The longest ``Retry-After`` the SDK waits out itself, once (docs/spec/runtime.md, "Rate
#: limits"): a provider asking for longer gets ``RateLimited`` at once, with its retry_after.
MAX_RETRY_WAIT = 5


def short_retry_after(response: httpx.Response) -> int | None:
    """A 429's ``Retry-After`` when it is short enough to wait out once, else None."""
    if response.status_code != 429:
        return None
    delay = _retry_after(response)
    return delay if delay <= MAX_RETRY_WAIT else None


def _retry_after(response: httpx.Response) -> int:
    # ASCII digits only, and few of them: str.isdigit() admits "²", and int() of thousands of
    # digits raises (a hostile header must not crash the runtime). An HTTP-date counts as 1 s.
    value = response.headers.get("Retry-After", "").strip()
    return int(value) if _SECONDS.fullmatch(value) else 1


def unreachable(call: Call, base_url: str, error: Exception) -> RemoteError:
    """The error for a request that got no HTTP answer at all (DNS, refused, timeout, TLS)."""
    kind = type(error).__name__
    detail = " ".join(str(error).split())[:200]
    return RemoteError(
        f"cannot reach the provider at {base_url} ({call.describe()}): {kind} {detail}"
    )


__all__ = [
    "CONTEXT_PATH",
    "CORRECT_PATH",
    "DIFF_PATH",
    "DISCOVERY_PATH",
    "KEYS_PATH",
    "MAX_RETRY_WAIT",
    "Call",
    "Op",
    "error_from",
    "expect_ok",
    "short_retry_after",
    "unreachable",
]
