"""Backpressure and rate limiting (OpenWOP v2 Conformance, "Production profile": backpressure).

:class:`ConcurrencyGate` bounds the requests a worker serves at once; beyond the bound a request
is refused at once with ``503 service_unavailable`` and ``Retry-After`` instead of waiting in an
unbounded queue. :class:`RateLimiter` is a token bucket per caller (the bearer token's hash, or
the client address without one) answering ``429 rate_limited`` with ``Retry-After`` (Engram v0.1
error table). Both are per worker process and in memory: they protect the worker, not a global
quota (``docs/spec/context-provider.md``).
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime

from engram.core.clock import Clock
from engram.errors import CapacityError, RateLimited


class ConcurrencyGate:
    """At most ``limit`` holders at once; ``try_enter`` never waits."""

    def __init__(self, limit: int, retry_after_seconds: int = 1) -> None:
        self.limit = limit
        self.retry_after_seconds = retry_after_seconds
        self.in_flight = 0

    def try_enter(self) -> None:
        """Take a slot or raise CapacityError (503) at once."""
        if self.in_flight >= self.limit:
            raise CapacityError(
                "the provider is at capacity; retry shortly", self.retry_after_seconds
            )
        self.in_flight += 1

    def leave(self) -> None:
        self.in_flight -= 1


@dataclass
class _Bucket:
    tokens: float
    at: datetime


class RateLimiter:
    """A token bucket per key: ``burst`` requests at once, refilled at ``per_minute``."""

    def __init__(self, clock: Clock, per_minute: int, burst: int, max_keys: int = 10_000) -> None:
        self._clock = clock
        self._rate = per_minute / 60.0
        self._burst = float(burst)
        self._max_keys = max_keys
        self._buckets: OrderedDict[str, _Bucket] = OrderedDict()

    def check(self, key: str) -> None:
        """Spend one token for ``key`` or raise RateLimited with the wait in whole seconds."""
        now = self._clock.now()
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = _Bucket(self._burst, now)
            self._buckets[key] = bucket
            if len(self._buckets) > self._max_keys:
                # Forget the least recently seen caller; it restarts with a full bucket.
                self._buckets.popitem(last=False)
        else:
            self._buckets.move_to_end(key)
            elapsed = max(0.0, (now - bucket.at).total_seconds())
            bucket.tokens = min(self._burst, bucket.tokens + elapsed * self._rate)
            bucket.at = now
        if bucket.tokens < 1.0:
            wait = math.ceil((1.0 - bucket.tokens) / self._rate)
            raise RateLimited("too many requests; slow down", max(1, wait))
        bucket.tokens -= 1.0


__all__ = ["ConcurrencyGate", "RateLimiter"]
