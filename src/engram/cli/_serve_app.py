"""The provider app with ``/mcp`` (and the memory REST API) that ``engram serve`` runs.

A shared CLI helper (no command of its own): ``engram serve`` (``_serve``, ``_serve_run``) and
embedders (``engram.cli.provider_app_with_mcp``) build the app here; the uvicorn factory each
worker imports is :func:`app_with_mcp_from_env`; which seat it serves is ``_serve_seat``'s.
docs/spec/mcp.md "Serving over HTTP".
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from engram.cli._serve_seat import serve_seat
from engram.core.clock import Clock, SystemClock
from engram.mcp import load_seat

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from engram.mcp import SeatSource
    from engram.provider import ProviderConfig
    from engram.store import Store


def provider_app_with_mcp(
    config: ProviderConfig,
    store: Store,
    clock: Clock,
    seat: SeatSource | None,
    *,
    tracer_provider: Any = None,  # an OpenTelemetry TracerProvider (optional dependency)
) -> Starlette:
    """The provider app, with the MCP endpoint at ``/mcp`` when there is a seat to serve.

    The context resources ask this very app (in process, with the caller's own token), so the
    context an MCP client reads is the one a runtime would fetch, verified the same way.
    ``tracer_provider`` goes to :func:`engram.provider.create_app` (tests capture spans).
    """
    import httpx

    from engram.cli._seat import index_folder_for
    from engram.mcp import ProviderContext, create_server, http_endpoint
    from engram.memory import open_engine, remote_stages
    from engram.provider import create_app

    if seat is None:
        return create_app(config, store, clock, tracer_provider=tracer_provider)
    spec = load_seat(seat)
    embedder, reranker = remote_stages(spec, os.environ.get("THALAMUS_URL") or None)
    engine = open_engine(
        store,
        spec,
        clock,
        embedder=embedder,
        reranker=reranker,
        index_folder=index_folder_for(store),
    )
    apps: list[Starlette] = []
    context = ProviderContext(
        config.base_url, transport=lambda: httpx.ASGITransport(app=apps[0]), clock=clock
    )
    server = create_server(engine, seat, context=context, for_subjects=True)
    endpoint = http_endpoint(server, public_netlocs=[urlsplit(config.base_url).netloc])
    app = create_app(
        config,
        store,
        clock,
        protected=[endpoint.protected],
        lifespan=endpoint.lifespan,
        tracer_provider=tracer_provider,
        memory=engine,  # the memory REST API at /v1/memories, over the engine /mcp serves
    )
    apps.append(app)
    return app


def app_with_mcp_from_env() -> Starlette:
    """What each ``engram serve`` worker runs: provider + ``/mcp``, configured from the
    environment the serve command prepared (the seat it chose included: ``_serve_seat``)."""
    from engram.provider import ProviderConfig
    from engram.store import database_url_from_env, open_store

    config = ProviderConfig.from_env(os.environ)
    store = open_store(database_url_from_env(os.environ))
    return provider_app_with_mcp(config, store, SystemClock(), serve_seat(os.environ, Path.cwd()))


__all__ = ["app_with_mcp_from_env", "provider_app_with_mcp"]
