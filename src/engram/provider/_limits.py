"""Backpressure and rate limiting (OpenWOP v2 Conformance, "Production profile": backpressure).

:class:`ConcurrencyGate` bounds the requests a worker serves at once; beyond the bound a request
is refused at once with ``503 service_unavailable`` and ``Retry-After`` instead of waiting in an
unbounded queue. :class:`RateLimiter` is a token bucket per key answering ``429 rate_limited``
with ``Retry-After`` (Engram v0.1 error table). The provider keeps two: one per client address
for requests that are not authenticated (public routes and every failed authentication, checked
before the token is even looked at), one per token id for authenticated requests (charged after
authentication, so a made-up token can neither spend nor dodge anyone's budget). Both are per
worker process and in memory: they protect the worker, not a global quota
(``docs/spec/context-provider.md`` "Rate limiting").

A bucket is forgotten only once it has refilled to full, which loses nothing (a new bucket
starts full); a table full of callers that are still spending refuses newcomers instead of
forgetting anyone, so no number of fresh keys can reset a bucket that is exhausted.
"""

from __future__ import annotations

import contextlib
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
    """A token bucket per key: ``burst`` requests at once, refilled at ``per_minute``; at most
    ``max_keys`` keys remembered (module docstring: eviction never resets a spent bucket)."""

    def __init__(self, clock: Clock, per_minute: int, burst: int, max_keys: int = 10_000) -> None:
        self._clock = clock
        self._rate = per_minute / 60.0
        self._burst = float(burst)
        self._max_keys = max_keys
        self._buckets: OrderedDict[str, _Bucket] = OrderedDict()

    def __len__(self) -> int:
        return len(self._buckets)

    def _refilled(self, bucket: _Bucket, now: datetime) -> None:
        elapsed = max(0.0, (now - bucket.at).total_seconds())
        bucket.tokens = min(self._burst, bucket.tokens + elapsed * self._rate)
        bucket.at = now

    def _full_by(self, bucket: _Bucket, now: datetime) -> bool:
        elapsed = max(0.0, (now - bucket.at).total_seconds())
        return bucket.tokens + elapsed * self._rate >= self._burst

    def _make_room(self, now: datetime) -> bool:
        """Forget least recently used buckets that have refilled to full; True if one fits."""
        while len(self._buckets) >= self._max_keys:
            oldest_key, oldest = next(iter(self._buckets.items()))
            if not self._full_by(oldest, now):
                return False
            del self._buckets[oldest_key]
        return True

    def _bucket(self, key: str, now: datetime) -> _Bucket | None:
        bucket = self._buckets.get(key)
        if bucket is not None:
            self._buckets.move_to_end(key)
            self._refilled(bucket, now)
        return bucket

    def _refuse(self, tokens: float) -> RateLimited:
        wait = math.ceil((1.0 - tokens) / self._rate)
        return RateLimited("too many requests; slow down", max(1, wait))

    def check(self, key: str) -> None:
        """Spend one token for ``key`` or raise RateLimited with the wait in whole seconds."""
        now = self._clock.now()
        bucket = self._bucket(key, now)
        if bucket is None:
            if not self._make_room(now):
                # Every remembered caller is still spending: refuse the newcomer rather than
                # forget someone whose bucket is not yet full.
                raise self._refuse(0.0)
            bucket = _Bucket(self._burst, now)
            self._buckets[key] = bucket
        if bucket.tokens < 1.0:
            raise self._refuse(bucket.tokens)
        bucket.tokens -= 1.0

    def peek(self, key: str) -> None:
        """RateLimited if ``key`` could not spend a token now; spends nothing."""
        now = self._clock.now()
        bucket = self._bucket(key, now)
        if bucket is None:
            if len(self._buckets) >= self._max_keys and not self._make_room(now):
                raise self._refuse(0.0)
            return
        if bucket.tokens < 1.0:
            raise self._refuse(bucket.tokens)

    def spend(self, key: str) -> None:
        """Spend one token for ``key`` after the fact (never below zero, never raising)."""
        with contextlib.suppress(RateLimited):
            self.check(key)


__all__ = ["ConcurrencyGate", "RateLimiter"]
