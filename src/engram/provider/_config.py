"""Provider settings: one frozen dataclass, built explicitly or from the environment.

Only this module (and the CLI) reads the environment. Every variable is documented in
``docs/spec/context-provider.md``; bad values are refused with a clear InvalidRequest.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta

from engram.errors import InvalidRequest
from engram.provider._auth import Network, parse_trusted_proxies

MAX_EXPORT_TTL = timedelta(hours=24)
_ORIGIN = re.compile(
    r"^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?$|^https?://\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?$"
)


@dataclass(frozen=True)
class ProviderConfig:
    """How one provider behaves. Defaults suit a single host; see the field comments."""

    issuer_name: str = "engram"
    # Absolute base URL clients use; discovery and ``issuer.url`` are built from it.
    public_url: str = "http://127.0.0.1:8420"
    # Lifetime of a signed export; the spec caps it at 24 h.
    export_ttl: timedelta = timedelta(hours=12)
    # A cached signed export is re-signed once less than this much of its life remains.
    export_refresh_margin: timedelta = timedelta(hours=1)
    # Lifetime of a signing key before the provider rotates to a new one.
    key_lifetime: timedelta = timedelta(days=90)
    # How long clients may cache the key list and discovery (Cache-Control max-age); a new key
    # is published this long before it signs anything (issue 12).
    keys_max_age: timedelta = timedelta(seconds=300)
    # Requests served at once per worker; beyond it: 503 + Retry-After (no queue).
    max_concurrent: int = 64
    # Token buckets, one per token id (authenticated) and one per client address (public
    # routes and failed authentications): refill rate and burst.
    rate_limit_per_minute: int = 1200
    rate_limit_burst: int = 200
    # Callers remembered per table (addresses, token ids); a full table of callers still
    # spending refuses newcomers rather than forgetting one (engram.provider._limits).
    rate_limit_keys: int = 10_000
    # Proxies whose X-Forwarded-For names the client (addresses or CIDR networks); none by
    # default, when the header is ignored because any caller can write it.
    trusted_proxies: tuple[Network, ...] = ()
    # Maximum characters of system_prompt_injection.
    injection_budget: int = 4000
    # Largest accepted request body.
    max_body_bytes: int = 65536
    # Idempotency-Key records are kept this long (retries within it get the first answer).
    idempotency_retention: timedelta = timedelta(hours=24)
    # Maximum number of signed exports held in each worker's cache.
    export_cache_entries: int = 10_000
    # A change committed anywhere (revocation, correction, belief, key rotation) is seen by
    # every worker within this bound; a worker that cannot confirm it reads the database.
    change_bound: timedelta = timedelta(seconds=1)
    # Origins a browser runtime may call the context routes from (CORS); "*" for any. None by
    # default: no CORS headers at all (docs/spec/context-provider.md, "CORS").
    cors_origins: tuple[str, ...] = ()
    # GET /metrics (Prometheus text, the ``metrics`` permission); off by default, when the
    # route does not exist (404) and the hot path records nothing (docs/deployment.md).
    metrics: bool = False
    # OpenTelemetry tracing of every request (engram-memory-stack[otel]) to the collector the
    # standard OTEL_* variables name; off by default (docs/deployment.md "Tracing").
    otel: bool = False

    def __post_init__(self) -> None:
        if not self.issuer_name.strip():
            raise InvalidRequest("issuer name must not be empty")
        if not self.public_url.startswith(("http://", "https://")):
            raise InvalidRequest("public URL must start with http:// or https://")
        if self.export_ttl <= timedelta(0) or self.export_ttl > MAX_EXPORT_TTL:
            raise InvalidRequest("export TTL must be positive and at most 24 hours (Engram v0.1)")
        if not timedelta(0) <= self.export_refresh_margin < self.export_ttl:
            raise InvalidRequest("export refresh margin must be shorter than the export TTL")
        if self.key_lifetime <= self.export_ttl:
            raise InvalidRequest("signing key lifetime must exceed the export TTL")
        if not timedelta(milliseconds=100) <= self.change_bound <= timedelta(minutes=5):
            raise InvalidRequest("the change bound must be 0.1 to 300 seconds")
        if not timedelta(0) <= self.keys_max_age <= timedelta(days=1):
            raise InvalidRequest("the key list's cache lifetime must be 0 to 86400 seconds")
        for name in (
            "max_concurrent",
            "rate_limit_per_minute",
            "rate_limit_burst",
            "rate_limit_keys",
        ):
            if getattr(self, name) < 1:
                raise InvalidRequest(f"{name} must be at least 1")
        if self.injection_budget < 600 or self.max_body_bytes < 1024:
            raise InvalidRequest("injection budget >= 600 and max body >= 1024 bytes")
        for origin in self.cors_origins:
            if origin != "*" and not _ORIGIN.match(origin):
                raise InvalidRequest(
                    f"CORS origin {origin!r} is not scheme://host[:port] (no path, no slash) or *"
                )

    @property
    def base_url(self) -> str:
        return self.public_url.rstrip("/")

    @property
    def key_publish_lead(self) -> timedelta:
        """How long a rotated-in key is published before it signs: the key list's cache
        lifetime, so a verifier's cached list always holds every kid it meets."""
        return self.keys_max_age

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> ProviderConfig:
        """Settings from ``ENGRAM_*`` variables; unset ones keep their defaults."""

        def seconds(name: str, default: timedelta) -> timedelta:
            raw = environ.get(name)
            return default if raw is None else timedelta(seconds=_int(name, raw))

        def integer(name: str, default: int) -> int:
            raw = environ.get(name)
            return default if raw is None else _int(name, raw)

        d = cls()
        return cls(
            issuer_name=environ.get("ENGRAM_ISSUER_NAME", d.issuer_name),
            public_url=environ.get("ENGRAM_PUBLIC_URL", d.public_url),
            export_ttl=seconds("ENGRAM_EXPORT_TTL_SECONDS", d.export_ttl),
            export_refresh_margin=seconds(
                "ENGRAM_EXPORT_REFRESH_MARGIN_SECONDS", d.export_refresh_margin
            ),
            key_lifetime=seconds("ENGRAM_KEY_LIFETIME_SECONDS", d.key_lifetime),
            keys_max_age=seconds("ENGRAM_KEYS_MAX_AGE_SECONDS", d.keys_max_age),
            max_concurrent=integer("ENGRAM_MAX_CONCURRENT", d.max_concurrent),
            rate_limit_per_minute=integer("ENGRAM_RATE_LIMIT_PER_MINUTE", d.rate_limit_per_minute),
            rate_limit_burst=integer("ENGRAM_RATE_LIMIT_BURST", d.rate_limit_burst),
            rate_limit_keys=integer("ENGRAM_RATE_LIMIT_KEYS", d.rate_limit_keys),
            injection_budget=integer("ENGRAM_INJECTION_BUDGET", d.injection_budget),
            max_body_bytes=integer("ENGRAM_MAX_BODY_BYTES", d.max_body_bytes),
            idempotency_retention=seconds(
                "ENGRAM_IDEMPOTENCY_RETENTION_SECONDS", d.idempotency_retention
            ),
            export_cache_entries=integer("ENGRAM_EXPORT_CACHE_ENTRIES", d.export_cache_entries),
            change_bound=_milliseconds(environ.get("ENGRAM_CHANGE_BOUND_MS"), d.change_bound),
            trusted_proxies=_proxies(environ.get("ENGRAM_TRUSTED_PROXIES", "")),
            cors_origins=tuple(environ.get("ENGRAM_CORS_ORIGINS", "").replace(",", " ").split()),
            metrics=_flag("ENGRAM_METRICS", environ.get("ENGRAM_METRICS")),
            otel=otel_wanted(environ),
        )


_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"", "0", "false", "no", "off"})


def _flag(name: str, raw: str | None) -> bool:
    if raw is None:
        return False
    value = raw.strip().lower()
    if value in _TRUE | _FALSE:
        return value in _TRUE
    raise InvalidRequest(f"{name} must be 1 or 0 (true/false, yes/no, on/off), got {raw!r}")


# The OpenTelemetry SDK's own variables that name a trace collector.
OTEL_ENDPOINTS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")


def otel_wanted(environ: Mapping[str, str]) -> bool:
    """Tracing on: ``ENGRAM_OTEL=1``, or an OTLP endpoint configured the standard way; off
    whatever else says when ``OTEL_SDK_DISABLED=true`` or ``OTEL_TRACES_EXPORTER=none``."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    if environ.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "none":
        return False
    if _flag("ENGRAM_OTEL", environ.get("ENGRAM_OTEL")):
        return True
    return any(environ.get(name, "").strip() for name in OTEL_ENDPOINTS)


def _milliseconds(raw: str | None, default: timedelta) -> timedelta:
    return default if raw is None else timedelta(milliseconds=_int("ENGRAM_CHANGE_BOUND_MS", raw))


def _proxies(raw: str) -> tuple[Network, ...]:
    try:
        return parse_trusted_proxies(raw)
    except ValueError as e:
        raise InvalidRequest(
            f"ENGRAM_TRUSTED_PROXIES must list addresses or CIDR networks, got {raw!r}"
        ) from e


def _int(name: str, raw: str) -> int:
    try:
        return int(raw.strip())
    except ValueError as e:
        raise InvalidRequest(f"{name} must be an integer, got {raw!r}") from e


__all__ = ["MAX_EXPORT_TTL", "ProviderConfig"]
