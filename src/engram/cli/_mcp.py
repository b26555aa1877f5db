"""``engram mcp``: the engram MCP server over stdio (the provider app with ``/mcp`` that ``engram
serve`` runs is built in ``_serve_app``).

engram.ote.v1 & MCP contract (Part V, Plate 03, §3.2); ``docs/spec/mcp.md``. The seat manifest is
found as every command finds it (``_seat.resolve_seat``: ``--ote FILE``, else ``$ENGRAM_OTE``,
else the nearest ``.engram/ote.toml`` upwards, else the default seat ``engram serve`` serves); the
database from ``--database`` (see ``engram db``); remote retrieval endpoints from the manifest or
``$THALAMUS_URL``; the context resources from ``--provider-url`` / ``$ENGRAM_PROVIDER_URL`` and
``$ENGRAM_TOKEN`` (a token only ever comes from the environment, never from argv, where other users
of the machine could read it). stdout carries only MCP messages; errors go to stderr.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from engram.cli._app import cli
from engram.cli._common import database_option
from engram.cli._seat import ote_option, resolve_seat, seat_engine, subject_option
from engram.cli._settings import Settings, settings
from engram.errors import InvalidRequest

# The stdio server imports the MCP server and the memory engine when it starts serving, and the
# engine's numpy only when a tool first needs it; the provider, starlette and the Streamable
# HTTP transport load only for `engram serve` (issue 33: `engram mcp` start-up, COMMAND --help).
if TYPE_CHECKING:
    from engram.mcp import ProviderContext
    from engram.memory import Distiller


def provider_context(url: str | None, given: Settings) -> ProviderContext | None:
    """The context source for stdio: a provider URL and ``$ENGRAM_TOKEN``, or none at all."""
    url = url or given.provider_url
    token = given.token
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
    url = endpoint or settings().thalamus_url
    if not url:
        raise InvalidRequest("--llm-model needs --llm-endpoint or THALAMUS_URL (no default)")
    from engram.memory import ChatDistiller

    return ChatDistiller(url, model)


@cli.command("mcp")
@ote_option
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

    seat = resolve_seat(ote)
    context = provider_context(provider_url, settings())
    distiller = _distiller(llm_model, llm_endpoint)
    with seat_engine(ote, database, seat, subject, deferred=True) as engine:
        server = create_server(engine, seat, context=context, distiller=distiller, subject=subject)
        anyio.run(server.run_stdio_async)


__all__ = ["mcp_command", "provider_context"]
