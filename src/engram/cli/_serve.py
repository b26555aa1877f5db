"""``engram serve``: run the Engram v0.1 provider with uvicorn.

The database comes from ``--db``, else ``ENGRAM_DATABASE_URL``, else ``$ENGRAM_HOME/engram.db``
(SQLite). ``--demo`` creates the demo subject if absent and prints the URL, a fresh token and a
curl line before serving. Settings are passed to the workers through the environment (see
``ProviderConfig.from_env``), so ``--workers N`` starts N identical processes. With a seat
manifest (``--ote``, ``ENGRAM_OTE`` or ``.engram/ote.toml``) the engram MCP tools are served at
``/mcp`` too (``engram.cli._mcp``; docs/spec/mcp.md).
"""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import click
import uvicorn
import uvicorn.config

from engram.cli._app import cli
from engram.cli._demo import demo_text
from engram.cli._mcp import mcp_banner, serve_seat
from engram.cli._subject import CLOCK, database_url
from engram.context import ensure_demo
from engram.core.jsonio import dumps_text
from engram.mcp import load_seat
from engram.provider import ProviderConfig, create_app, openapi_document
from engram.store import open_store


def log_config(level: str) -> dict[str, Any]:
    """uvicorn's logging config plus the provider's JSON access log on stdout."""
    config: dict[str, Any] = copy.deepcopy(uvicorn.config.LOGGING_CONFIG)
    config["formatters"]["engram"] = {"format": "%(message)s"}
    config["handlers"]["engram"] = {
        "class": "logging.StreamHandler",
        "formatter": "engram",
        "stream": "ext://sys.stdout",
    }
    config["loggers"]["engram"] = {
        "handlers": ["engram"],
        "level": level.upper(),
        "propagate": False,
    }
    return config


@cli.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8420, show_default=True, type=int)
@click.option("--db", default=None, metavar="URL|PATH", help="Database URL or SQLite path.")
@click.option("--workers", default=1, show_default=True, type=click.IntRange(1, 64))
@click.option("--demo", is_flag=True, help="Create the demo subject if absent; print a token.")
@click.option(
    "--public-url", default=None, help="Base URL clients use (default: http://HOST:PORT)."
)
@click.option("--log-level", default="info", show_default=True)
@click.option("--print-openapi", is_flag=True, help="Print the OpenAPI document and exit.")
@click.option(
    "--ote",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Seat manifest for the MCP tools at /mcp (default: $ENGRAM_OTE, else the nearest "
    ".engram/ote.toml upwards; without one /mcp is not served).",
)
def serve_command(
    host: str,
    port: int,
    db: str | None,
    workers: int,
    demo: bool,
    public_url: str | None,
    log_level: str,
    print_openapi: bool,
    ote: Path | None,
) -> None:
    """Serve the Engram context provider (Tier 3) over HTTP."""
    if print_openapi:
        click.echo(dumps_text(openapi_document(), indent=2))
        return
    url = database_url(db)
    os.environ["ENGRAM_DATABASE_URL"] = url
    if public_url:
        os.environ["ENGRAM_PUBLIC_URL"] = public_url
    else:
        os.environ.setdefault("ENGRAM_PUBLIC_URL", f"http://{host}:{port}")
    if ote is not None:
        os.environ["ENGRAM_OTE"] = str(ote.resolve())
    config = ProviderConfig.from_env(os.environ)
    seat = serve_seat(os.environ, Path.cwd())
    if seat is not None:
        load_seat(seat)  # refuse a bad manifest here, not in every worker
    store = open_store(url)
    try:
        # Migrate once here, so workers start on a ready schema.
        create_app(config, store, CLOCK)
        if demo:
            click.echo(demo_text(ensure_demo(store, CLOCK), config.base_url), nl=True)
    finally:
        store.close()
    click.echo(f"serving {config.base_url} (database {store.url}, {workers} worker(s))")
    click.echo(mcp_banner(config.base_url, seat))
    uvicorn.run(
        "engram.cli._mcp:app_with_mcp_from_env",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_config=log_config(log_level),
        log_level=log_level,
        access_log=False,
    )
