"""The runtime's configuration: explicit, typed, immutable, passed in.

Engram v0.1 conformance, runtime requirements of Tiers 1-3: the provider to ask, the bearer token
to ask with, the scope to request when the runtime needs less than the full context, and the
timing knobs that decide when a verified export is refreshed and for how long a clock that runs
a little behind the provider's is forgiven (docs/spec/runtime.md, "Time").

Nothing here reads the environment; the CLI does that and builds a :class:`RuntimeConfig`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import timedelta
from urllib.parse import urlsplit

from engram.errors import InvalidRequest

#: The protocol versions this SDK knows how to verify and read.
SUPPORTED_VERSIONS: frozenset[str] = frozenset({"0.1"})

_RUNTIME_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,127}$")
_SHA256_HEX = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True, slots=True)
class RuntimeConfig:
    """How one runtime talks to one Engram provider.

    ``provider_url`` is the provider's base URL (``https://memory.example``); the SDK appends
    ``/.well-known/engram``, ``/v1/context`` and so on. ``scope`` is sent with every export and
    diff request when set; ``None`` asks for the provider's default (the full context).
    ``clock_skew`` forgives an ``issued_at`` that lies that far in the runtime's future; it never
    extends an export past its ``expires_at``. ``refresh_margin`` is how long before
    ``expires_at`` the SDK fetches a fresh export. ``runtime_id`` names this runtime in the
    correction requests it sends (Tier 2).
    """

    provider_url: str
    token: str = field(repr=False)
    runtime_id: str = "engram-runtime"
    scope: str | None = None
    clock_skew: timedelta = timedelta(seconds=60)
    refresh_margin: timedelta = timedelta(minutes=5)
    connect_timeout: float = 5.0
    read_timeout: float = 30.0
    deadline: float = 60.0
    """Seconds one exchange with the provider may take in all (docs/spec/limits.md §1): a
    provider that drips bytes is cut off here, not after one ``read_timeout`` per byte."""
    max_answer_bytes: int = 64 << 20
    """Bytes of one answer (decoded) the runtime reads at most; error answers included."""
    user_agent: str = "engram-runtime"
    subject_id: str | None = None
    pinned_kids: frozenset[str] | None = None
    pinned_key_list_sha256: str | None = None

    def __post_init__(self) -> None:
        try:
            parts = urlsplit(self.provider_url)
            parts.port  # noqa: B018 - a port that is not a number in range raises here, not later
        except ValueError as e:
            raise InvalidRequest(f"provider_url {self.provider_url!r} is not a URL: {e}") from e
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise InvalidRequest(f"provider_url must be an http(s) URL, not {self.provider_url!r}")
        if parts.query or parts.fragment:
            raise InvalidRequest("provider_url must not carry a query or a fragment")
        if not self.token or any(c.isspace() for c in self.token):
            raise InvalidRequest("token must be a non-empty string without whitespace")
        if not _RUNTIME_ID.match(self.runtime_id):
            raise InvalidRequest(f"runtime_id {self.runtime_id!r} is not a short printable name")
        if self.scope is not None and not self.scope.strip():
            raise InvalidRequest("scope must be a scope name or None")
        if self.clock_skew < timedelta(0) or self.refresh_margin < timedelta(0):
            raise InvalidRequest("clock_skew and refresh_margin must not be negative")
        if min(self.connect_timeout, self.read_timeout, self.deadline) <= 0:
            raise InvalidRequest("timeouts and the deadline must be positive")
        if self.max_answer_bytes < 1024:
            raise InvalidRequest("max_answer_bytes must be at least 1024")
        if self.subject_id is not None and not self.subject_id:
            raise InvalidRequest("subject_id must be a subject id or None")
        if self.pinned_kids is not None:
            kids = frozenset(self.pinned_kids)
            if not kids or not all(isinstance(k, str) and k for k in kids):
                raise InvalidRequest("pinned_kids must be a non-empty set of key ids")
            object.__setattr__(self, "pinned_kids", kids)
        pin = self.pinned_key_list_sha256
        if pin is not None and not _SHA256_HEX.match(pin):
            raise InvalidRequest("pinned_key_list_sha256 must be 64 lowercase hex digits")

    @property
    def base_url(self) -> str:
        """``provider_url`` without a trailing slash, so paths join predictably."""
        return self.provider_url.rstrip("/")


__all__ = ["SUPPORTED_VERSIONS", "RuntimeConfig"]
