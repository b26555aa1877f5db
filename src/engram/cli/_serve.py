"""``engram serve``: run the Engram v0.1 provider with uvicorn.

Order matters (docs/spec/cli.md "engram serve"): the options are validated (a port is 1-65535),
then the listening socket is bound, and only then is anything created or printed, so a port in
use is one line (``error: port 8420 is in use``, exit 1) and leaves no database, demo token or
banner behind. The socket is handed to uvicorn (one worker) or to its process supervisor (N
workers), which share it; a client that connects as soon as the banner appears waits in the
listen backlog until a worker accepts.

The database comes from ``--database`` (alias ``--db``), else ``ENGRAM_DATABASE_URL``, else
``$ENGRAM_HOME/engram.db`` (SQLite), created if absent and migrated once here, so workers start
on a ready schema. ``--demo`` reuses the demo subject and its token (``engram.cli._demo``) and
prints the file that holds the token, never the token: the access log goes to stdout too.
Settings reach the workers through the environment (``ProviderConfig.from_env``). A seat's
memories are served too: the engram MCP tools at ``/mcp``, the memory REST API at
``/v1/memories`` and the ``/memories`` page, for the manifest ``--ote``, ``ENGRAM_OTE`` or
``.engram/ote.toml`` names, else the default seat under ``$ENGRAM_HOME`` (``_serve_seat``;
docs/spec/memory-rest.md "The default seat"); ``--no-seat`` serves none. Ctrl-C stops it with
exit code 130.
"""

from __future__ import annotations

import errno
import importlib.util
import socket
from pathlib import Path

import click

from engram import DISTRIBUTION
from engram.cli._app import cli
from engram.cli._common import database_option
from engram.cli._seat import SEAT_LOOKUP
from engram.errors import MissingDependency

BACKLOG = 2048  # uvicorn's default


def listen(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` and listening, or one line saying why not."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(BACKLOG)
    except OSError as e:
        sock.close()
        if e.errno == errno.EADDRINUSE:
            raise click.ClickException(f"port {port} is in use") from e
        if e.errno == errno.EACCES:
            raise click.ClickException(
                f"port {port} needs privileges on this host: choose one above 1023"
            ) from e
        reason = e.strerror or str(e)
        raise click.ClickException(f"cannot listen on {host}:{port}: {reason}") from e
    sock.set_inheritable(True)  # the workers of --workers N are spawned with it
    return sock


@cli.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8420, show_default=True, type=click.IntRange(1, 65535))
@database_option
@click.option("--workers", default=1, show_default=True, type=click.IntRange(1, 64))
@click.option(
    "--demo",
    is_flag=True,
    help="Create the demo subject if absent; print the file that holds its token.",
)
@click.option(
    "--public-url", default=None, help="Base URL clients use (default: http://HOST:PORT)."
)
@click.option("--log-level", default="info", show_default=True)
@click.option("--print-openapi", is_flag=True, help="Print the OpenAPI document and exit.")
@click.option(
    "--ote",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Seat manifest for the MCP tools at /mcp and the memory API at /v1/memories "
    f"(default: {SEAT_LOOKUP}).",
)
@click.option(
    "--no-seat",
    is_flag=True,
    default=False,
    help="Serve no seat: the context provider alone, without /mcp, /v1/memories or /memories "
    "(also ENGRAM_NO_SEAT=1).",
)
@click.option(
    "--metrics",
    is_flag=True,
    default=False,
    help="Serve Prometheus metrics at GET /metrics to tokens with the metrics permission "
    "(also ENGRAM_METRICS=1).",
)
@click.option(
    "--otel",
    is_flag=True,
    default=False,
    help="Trace requests with OpenTelemetry to the OTLP/HTTP collector the OTEL_* variables "
    "name (needs engram-memory-stack[otel]; also ENGRAM_OTEL=1).",
)
def serve_command(
    host: str,
    port: int,
    database: str | None,
    workers: int,
    demo: bool,
    public_url: str | None,
    log_level: str,
    print_openapi: bool,
    ote: Path | None,
    no_seat: bool,
    metrics: bool,
    otel: bool,
) -> None:
    """Serve the Engram context provider (Tier 3) over HTTP.

    With a seat's memories: the MCP tools at /mcp, the memory REST API at /v1/memories and
    the /memories page (which seat: --ote; none: --no-seat).
    """
    if print_openapi:
        from engram.core.jsonio import dumps_text
        from engram.provider import openapi_document

        click.echo(dumps_text(openapi_document(), indent=2))
        return
    if no_seat and ote is not None:
        raise click.UsageError("--ote and --no-seat exclude each other")
    # An install without the server extra is told so before any port is taken; find_spec looks
    # the package up without importing it.
    if importlib.util.find_spec("uvicorn") is None:
        raise MissingDependency(
            f"`engram serve` needs the server extra (pip install '{DISTRIBUTION}[server]'): "
            "no uvicorn"
        )
    # Bound before the server's imports (about 3 s, far more on a loaded machine): a port in use
    # is answered at once, the way a user retrying `engram serve --demo` expects.
    sock = listen(host, port)
    try:
        try:
            from engram.cli import _serve_run
        except ModuleNotFoundError as e:
            if (e.name or "").partition(".")[0] == "engram":
                raise
            raise MissingDependency(
                f"`engram serve` needs the server extra (pip install '{DISTRIBUTION}[server]'): "
                f"no {e.name}"
            ) from e
        _serve_run.serve(
            sock,
            host=host,
            port=port,
            database=database,
            workers=workers,
            demo=demo,
            public_url=public_url,
            log_level=log_level,
            ote=ote,
            no_seat=no_seat,
            metrics=metrics,
            otel=otel,
        )
    finally:
        sock.close()


__all__ = ["listen", "serve_command"]
