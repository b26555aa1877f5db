"""``GET /metrics``: the provider's Prometheus metrics (``docs/spec/provider-metrics.md``).

Off unless ``ProviderConfig.metrics`` (``ENGRAM_METRICS=1``, ``engram serve --metrics``); only
then is this module (and ``prometheus-client``) imported. The route sits behind the provider's
one AuthGuard and needs the ``metrics`` permission (``admin`` implies it).

Labels never carry what a caller sent: the route is the matched template (``/v1/corrections/
{cid}``, never the id), ``(unmatched)`` for requests no route took (unknown paths, and those
refused before routing: the address rate limit, the concurrency gate), the method one of the
known ones or ``OTHER``. So the series are bounded and hold no subject id, token or query.

Several worker processes (``engram serve --workers N``) aggregate the way ``prometheus-client``
documents for multiprocess servers: ``PROMETHEUS_MULTIPROC_DIR`` names a directory every worker
writes its values to (set before ``prometheus_client`` is first imported), whichever worker
answers a scrape reads all of them with a ``MultiProcessCollector``, and the supervisor calls
``mark_process_dead`` for each worker that exits. Gauges (pool use, requests in flight) are
sampled: at each scrape by the answering worker, and every ``SAMPLE_SECONDS`` by a thread in
each worker when several share the directory; they add up over live workers (``livesum``).

The hot path pays for one histogram observation per request (its ``_count`` is the request
count), whose child is looked up once per (method, route, status) and kept.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client import multiprocess as prometheus_multiprocess
from starlette.concurrency import run_in_threadpool
from starlette.types import Receive, Scope, Send

from engram.store import Store
from engram.store.internals import PoolReporting

if TYPE_CHECKING:
    from engram.provider._limits import ConcurrencyGate

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
UNMATCHED = "(unmatched)"
SAMPLE_SECONDS = 1.0
# Seconds. The export's cache hit is well under a millisecond; a cold PostgreSQL export tens.
LATENCY_BUCKETS = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
)
SIGN_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def multiprocess_dir(environ: Mapping[str, str]) -> str | None:
    """The shared directory of a multiprocess server, or None for one process."""
    return environ.get(MULTIPROC_ENV) or None


def route_label(scope: Scope) -> str:
    """The route template the router matched for ``scope``, never the raw path."""
    route = scope.get("route")
    path = getattr(route, "path", None)
    return path if isinstance(path, str) and path else UNMATCHED


class ProviderMetrics:
    """One worker's metrics. In a multiprocess server every worker has its own instance, all
    writing to the shared directory."""

    def __init__(self, store: Store, environ: Mapping[str, str] = os.environ) -> None:
        self._store = store
        self._gate: ConcurrencyGate | None = None
        self.directory = multiprocess_dir(environ)
        # The metrics register here; one process renders this registry, several the directory.
        self.registry = CollectorRegistry()
        r = self.registry
        # Its _count series is the request count: no separate counter, which would cost the
        # hot path a third write per request (docs/spec/provider-metrics.md).
        self.latency = Histogram(
            "engram_http_request_duration_seconds",
            "Requests answered and the time from arrival to answer, by method, route template "
            "and status.",
            ("method", "route", "status"),
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.cache_hits = Counter(
            "engram_export_cache_hits",
            "GET /v1/context answered from the worker's signed-export cache.",
            registry=r,
        )
        self.cache_misses = Counter(
            "engram_export_cache_misses",
            "GET /v1/context that had to build and sign the export.",
            registry=r,
        )
        self.sign_seconds = Histogram(
            "engram_sign_duration_seconds",
            "Time to build and sign a document (kind: export or diff).",
            ("kind",),
            buckets=SIGN_BUCKETS,
            registry=r,
        )
        self.rate_limited = Counter(
            "engram_rate_limited",
            "Requests refused with 429 rate_limited, by bucket (address or token).",
            ("limit",),
            registry=r,
        )
        self.db_connections = Gauge(
            "engram_db_connections",
            "Database connections held by the workers (state: in_use or idle).",
            ("state",),
            multiprocess_mode="livesum",
            registry=r,
        )
        self.db_waiting = Gauge(
            "engram_db_pool_waiting",
            "Requests waiting for a pooled PostgreSQL connection.",
            multiprocess_mode="livesum",
            registry=r,
        )
        self.db_max = Gauge(
            "engram_db_pool_max",
            "The most connections the workers' pools may open.",
            multiprocess_mode="livesum",
            registry=r,
        )
        self.in_flight = Gauge(
            "engram_http_requests_in_flight",
            "Requests being served now.",
            multiprocess_mode="livesum",
            registry=r,
        )
        self._children: dict[tuple[str, str, int], Histogram] = {}
        self._sampler: threading.Thread | None = None
        self._stop = threading.Event()

    # -- the hot path -------------------------------------------------------------------------

    def observe(self, scope: Scope, status: int, seconds: float) -> None:
        """One answered request (the middleware calls it once the answer is sent)."""
        self.request(scope["method"], route_label(scope), status, seconds)

    def request(self, method: str, route: str, status: int, seconds: float) -> None:
        key = (method, route, status)
        child = self._children.get(key)
        if child is None:
            shown = method if method in _METHODS else "OTHER"
            child = self.latency.labels(shown, route, str(status))
            self._children[key] = child
        child.observe(seconds)

    def export_cache(self, hit: bool) -> None:
        (self.cache_hits if hit else self.cache_misses).inc()

    def signed(self, kind: str, seconds: float) -> None:
        self.sign_seconds.labels(kind).observe(seconds)

    def refused(self, limit: str) -> None:
        self.rate_limited.labels(limit).inc()

    # -- gauges -------------------------------------------------------------------------------

    def watch(self, gate: ConcurrencyGate) -> None:
        """Report ``gate``'s requests in flight; in a multiprocess server, start sampling."""
        self._gate = gate
        if self.directory is not None and self._sampler is None:
            self._sampler = threading.Thread(
                target=self._sample_forever, name="engram-metrics", daemon=True
            )
            self._sampler.start()

    def sample(self) -> None:
        """Set the gauges from the pool and the gate as they are now."""
        if isinstance(self._store, PoolReporting):
            stats = self._store.pool_stats()
            self.db_connections.labels("in_use").set(stats.in_use)
            self.db_connections.labels("idle").set(stats.idle)
            self.db_waiting.set(stats.waiting)
            self.db_max.set(stats.max_size)
        if self._gate is not None:
            self.in_flight.set(self._gate.in_flight)

    def _sample_forever(self) -> None:
        while not self._stop.wait(SAMPLE_SECONDS):
            self.sample()

    def close(self) -> None:
        self._stop.set()

    # -- the scrape ---------------------------------------------------------------------------

    def render(self) -> bytes:
        """The text exposition of this worker, or of every worker sharing the directory."""
        self.sample()
        if self.directory is None:
            return generate_latest(self.registry)
        registry = CollectorRegistry()
        # prometheus-client ships these two untyped.
        prometheus_multiprocess.MultiProcessCollector(registry, path=self.directory)  # type: ignore[no-untyped-call]
        return generate_latest(registry)


class MetricsEndpoint:
    """``GET /metrics`` as an ASGI app (behind ``AuthGuard(..., Permission.METRICS)``)."""

    def __init__(self, metrics: ProviderMetrics) -> None:
        self.metrics = metrics

    async def __call__(self, scope: Scope, _receive: Receive, send: Send) -> None:
        # Reading every worker's file is blocking I/O: not on the event loop.
        body = await run_in_threadpool(self.metrics.render)
        headers = [
            (b"content-type", CONTENT_TYPE_LATEST.encode("ascii")),
            (b"content-length", str(len(body)).encode("ascii")),
            (b"cache-control", b"no-store"),
        ]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        head = scope["method"] == "HEAD"
        await send({"type": "http.response.body", "body": b"" if head else body})


def mark_process_dead(pid: int, environ: Mapping[str, str] = os.environ) -> None:
    """Drop a dead worker's live gauges from the shared directory (the supervisor calls it)."""
    directory = multiprocess_dir(environ)
    if directory is not None:
        prometheus_multiprocess.mark_process_dead(pid, directory)  # type: ignore[no-untyped-call]


__all__ = [
    "LATENCY_BUCKETS",
    "MULTIPROC_ENV",
    "UNMATCHED",
    "MetricsEndpoint",
    "ProviderMetrics",
    "mark_process_dead",
    "multiprocess_dir",
    "route_label",
]
