"""OpenTelemetry tracing of the provider and ``/mcp`` (``engram-memory-stack[otel]``; off by
default).

On when ``ProviderConfig.otel`` (``ENGRAM_OTEL=1``, ``engram serve --otel``, or an OTLP endpoint
in the standard ``OTEL_EXPORTER_OTLP_*`` variables); only then is this module imported. Spans
go through the ASGI instrumentation (``opentelemetry-instrumentation-asgi``: W3C trace context
in, one server span per request) to an OTLP/HTTP exporter configured entirely by the SDK's own
``OTEL_*`` variables (endpoint, headers, service name, sampler); the batch processor exports off
the request path.

No span may carry a token or belief text (``docs/spec/provider-metrics.md``). Those travel in
headers and bodies, which spans never record, and could leak only through what the
instrumentation copies from the request line. So:

- the span is named ``METHOD`` until routing, then ``METHOD /route/{template}``; ``http.route``,
  ``http.target`` and ``url.path`` hold the template, never the raw path (an id, or whatever a
  client put there);
- ``http.url`` / ``url.full`` lose path and query, ``url.query`` is emptied;
- headers an operator asks the instrumentation to capture
  (``OTEL_INSTRUMENTATION_HTTP_CAPTURE_HEADERS_*``) are recorded redacted when they are
  credentials (``Authorization``, cookies, ``Idempotency-Key``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.instrumentation.asgi import OpenTelemetryMiddleware
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from starlette.types import ASGIApp, Message, Receive, Scope, Send

UNROUTED = "(unmatched)"
SERVICE_NAME = "engram-provider"
# Header values never recorded, even when an operator asks for headers to be captured.
SECRET_HEADERS = [
    "authorization",
    "proxy-authorization",
    "cookie",
    "set-cookie",
    "idempotency-key",
    "x-api-key",
]
_NO_PATH = ("http.url", "url.full")
_TEMPLATED = ("http.target", "url.path")


def tracer_provider_from_env(environ: Mapping[str, str] = os.environ) -> TracerProvider:
    """A provider exporting over OTLP/HTTP as the ``OTEL_*`` variables say (the exporter and
    ``Resource.create`` read them); ``service.name`` defaults to ``engram-provider``."""
    attributes = {} if environ.get("OTEL_SERVICE_NAME") else {"service.name": SERVICE_NAME}
    provider = TracerProvider(resource=Resource.create(attributes))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return provider


def _method_only(scope: Scope) -> tuple[str, dict[str, Any]]:
    # The instrumentation's default names the span "METHOD /raw/path": not before routing.
    return str(scope.get("method", "HTTP")), {}


def _origin(scope: Scope) -> str:
    scheme = scope.get("scheme", "http")
    server = scope.get("server")
    host = f"{server[0]}:{server[1]}" if server else "localhost"
    return f"{scheme}://{host}"


def _scrub_request_line(span: Any, scope: Scope) -> None:
    """server_request_hook: overwrite what the instrumentation took from the request line."""
    if not span.is_recording():
        return
    attributes = getattr(span, "attributes", None) or {}
    for key in _NO_PATH:
        if key in attributes:
            span.set_attribute(key, _origin(scope))
    for key in _TEMPLATED:
        if key in attributes:
            span.set_attribute(key, UNROUTED)
    if "url.query" in attributes:
        span.set_attribute("url.query", "")


class _RouteTemplate:
    """Inside the instrumentation: once routing is done (the answer starts), name the server
    span after the matched route template and record it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        span = trace.get_current_span()

        async def named(message: Message) -> None:
            if message["type"] == "http.response.start" and span.is_recording():
                path = getattr(scope.get("route"), "path", None)
                template = path if isinstance(path, str) and path else UNROUTED
                span.update_name(f"{scope['method']} {template}")
                span.set_attribute("http.route", template)
                attributes = getattr(span, "attributes", None) or {}
                for key in _TEMPLATED:
                    if key in attributes:
                        span.set_attribute(key, template)
            await send(message)

        await self.app(scope, receive, named)


class TracingMiddleware:
    """The ASGI instrumentation around ``app``, with the scrubbing above
    (a Starlette ``Middleware``: outermost, so every answer, refusals included, is a span)."""

    def __init__(self, app: ASGIApp, tracer_provider: Any = None) -> None:
        self.app = OpenTelemetryMiddleware(
            _RouteTemplate(app),
            default_span_details=_method_only,
            server_request_hook=_scrub_request_line,
            tracer_provider=tracer_provider,
            http_capture_headers_sanitize_fields=SECRET_HEADERS,
            exclude_spans=["receive", "send"],
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)


__all__ = ["SECRET_HEADERS", "SERVICE_NAME", "TracingMiddleware", "tracer_provider_from_env"]
