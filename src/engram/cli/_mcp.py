"""``engram mcp``: the engram MCP server over stdio; and the provider app with ``/mcp`` for serve.

engram.ote.v1 & MCP contract (Part V, Plate 03, §3.2); ``docs/spec/mcp.md``. The seat manifest comes
from ``--ote FILE``, else ``$ENGRAM_OTE``, else the nearest ``.engram/ote.toml`` upwards; the
database from ``--database`` (see ``engram db``); remote retrieval endpoints from the manifest or
``$THALAMUS_URL``; the context resources from ``--provider-url`` / ``$ENGRAM_PROVIDER_URL`` and
``$ENGRAM_TOKEN`` (a token only ever comes from the environment, never from argv, where other users
of the machine could read it). stdout carries only MCP messages; errors go to stderr.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import click

from engram.cli._app import cli
from engram.cli._db import database_option
from engram.cli._seat import seat_engine, subject_option
from engram.core.clock import Clock, SystemClock
from engram.errors import InvalidRequest, ManifestError
from engram.mcp import load_seat, locate_seat

# The stdio server imports the MCP server and the memory engine when it starts serving, and the
# engine's numpy only when a tool first needs it; the provider, starlette and the Streamable
# HTTP transport load only for `engram serve` (issue 33: `engram mcp` start-up, COMMAND --help).
if TYPE_CHECKING:
    from starlette.applications import Starlette

    from engram.mcp import ProviderContext, SeatSource
    from engram.memory import Distiller
    from engram.provider import ProviderConfig
    from engram.store import Store


def provider_context(url: str | None, environ: Mapping[str, str]) -> ProviderContext | None:
    """The context source for stdio: a provider URL and ``$ENGRAM_TOKEN``, or none at all."""
    url = url or environ.get("ENGRAM_PROVIDER_URL") or None
    token = environ.get("ENGRAM_TOKEN") or None
    if url is None:
        return None
    if token is None:
        raise InvalidRequest(
            "the context provider needs a bearer token: set ENGRAM_TOKEN (a token with the "
            "read permission, from `engram token create --permissions read`)"
        )
    from engram.mcp import ProviderContext

    return ProviderContext(url, token)


def _distiller(model: str | None, endpoint: str | None) -> Distiller | None:
    if model is None:
        return None
    url = endpoint or os.environ.get("THALAMUS_URL")
    if not url:
        raise InvalidRequest("--llm-model needs --llm-endpoint or THALAMUS_URL (no default)")
    from engram.memory import ChatDistiller

    return ChatDistiller(url, model)


@cli.command("mcp")
@click.option(
    "--ote",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Seat manifest (default: $ENGRAM_OTE, else the nearest .engram/ote.toml upwards).",
)
@database_option
@click.option(
    "--provider-url",
    default=None,
    help="Engram provider for the engram://context resources (default: $ENGRAM_PROVIDER_URL; "
    "the token comes from $ENGRAM_TOKEN).",
)
@click.option("--llm-model", default=None, help="Distill with an OpenAI-compatible chat model.")
@click.option("--llm-endpoint", default=None, help="Its base URL (default: $THALAMUS_URL).")
@subject_option
def mcp_command(
    ote: Path | None,
    database: str | None,
    provider_url: str | None,
    llm_model: str | None,
    llm_endpoint: str | None,
    subject: str | None,
) -> None:
    """Serve the engram MCP tools and context resources over stdio."""
    import anyio

    from engram.mcp import create_server

    seat = locate_seat(ote, os.environ, Path.cwd())
    context = provider_context(provider_url, os.environ)
    distiller = _distiller(llm_model, llm_endpoint)
    with seat_engine(ote, database, seat, subject, deferred=True) as engine:
        server = create_server(engine, seat, context=context, distiller=distiller, subject=subject)
        anyio.run(server.run_stdio_async)


def provider_app_with_mcp(
    config: ProviderConfig,
    store: Store,
    clock: Clock,
    seat: SeatSource | None,
    *,
    tracer_provider: Any = None,  # an OpenTelemetry TracerProvider (optional dependency)
) -> Starlette:
    """The provider app, with the MCP endpoint at ``/mcp`` and the memory REST API at
    ``/v1/memories`` when there is a seat to serve.

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


# `engram serve --ote FILE` hands FILE to its workers as ENGRAM_OTE; this says the user gave
# the option, so the banner and engram_status name `--ote`, not a variable they never set.
OTE_FROM_OPTION = "ENGRAM_SERVE_OTE_OPTION"


def serve_seat(environ: Mapping[str, str], cwd: Path) -> SeatSource | None:
    """The seat ``engram serve`` mounts at /mcp, or None when none is configured or found."""
    try:
        seat = locate_seat(None, environ, cwd)
    except ManifestError:
        if environ.get("ENGRAM_OTE"):
            raise
        return None
    if seat.origin == "ENGRAM_OTE" and environ.get(OTE_FROM_OPTION) == seat.path.as_posix():
        from engram.mcp import SeatSource

        return SeatSource("--ote", seat.path)
    return seat


def app_with_mcp_from_env() -> Starlette:
    """What each ``engram serve`` worker runs: provider + ``/mcp``, configured from the
    environment the serve command prepared."""
    from engram.provider import ProviderConfig
    from engram.store import database_url_from_env, open_store

    config = ProviderConfig.from_env(os.environ)
    store = open_store(database_url_from_env(os.environ))
    return provider_app_with_mcp(config, store, SystemClock(), serve_seat(os.environ, Path.cwd()))


def mcp_banner(base_url: str, seat: SeatSource | None) -> str:
    """One line for ``engram serve`` saying whether and for which seat /mcp is served."""
    from engram.mcp import MCP_PATH

    if seat is None:
        return (
            f"mcp: not served (no seat manifest: pass --ote, set ENGRAM_OTE or run "
            f"`engram init`; {MCP_PATH} and /v1/memories answer 404)"
        )
    return (
        f"mcp: {base_url}{MCP_PATH} (Streamable HTTP, seat manifest {seat.path} from "
        f"{seat.origin}; needs a token with the memory permission)\n"
        f"memories: {base_url}/v1/memories (REST, same token; docs/memory-rest.md)"
    )


__all__ = [
    "OTE_FROM_OPTION",
    "app_with_mcp_from_env",
    "mcp_banner",
    "mcp_command",
    "provider_app_with_mcp",
    "provider_context",
    "serve_seat",
]
