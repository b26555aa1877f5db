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
Settings reach the workers through the environment (``ProviderConfig.from_env``). With a seat
manifest (``--ote``, ``ENGRAM_OTE`` or ``.engram/ote.toml``) the engram MCP tools are served at
``/mcp`` too (``engram.cli._mcp``; docs/spec/mcp.md). Ctrl-C stops it with exit code 130.
"""

from __future__ import annotations

import copy
import dataclasses
import errno
import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click
import uvicorn
import uvicorn.config
from uvicorn.supervisors import Multiprocess

from engram.cli._app import cli
from engram.cli._common import CLOCK, cli_store, database_option, database_url
from engram.cli._demo import demo_text, open_demo
from engram.cli._mcp import mcp_banner, serve_seat
from engram.core.jsonio import dumps_text
from engram.mcp import load_seat
from engram.provider import ProviderConfig, create_app, openapi_document

APP = "engram.cli._mcp:app_with_mcp_from_env"
BACKLOG = 2048  # uvicorn's default


def log_config(level: str) -> dict[str, Any]:  # uvicorn's dictConfig, typed dict[str, Any]
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


class _Supervisor(Multiprocess):
    """uvicorn's process supervisor, remembering whether Ctrl-C stopped it, and telling
    prometheus-client of every worker that exits (``mark_process_dead``, as its multiprocess
    documentation asks of a server's master process) when metrics are on."""

    interrupted = False

    def handle_int(self) -> None:
        self.interrupted = True
        super().handle_int()

    def _pids(self) -> set[int]:
        return {p.pid for p in self.processes if p.pid is not None}

    def _bury(self, before: set[int]) -> None:
        dead = before - self._pids()
        if dead and os.environ.get(METRICS_DIR_ENV):
            from engram.provider import mark_process_dead

            for pid in dead:
                mark_process_dead(pid)

    def keep_subprocess_alive(self) -> None:
        before = self._pids()
        super().keep_subprocess_alive()
        self._bury(before)

    def restart_all(self) -> None:
        before = self._pids()
        super().restart_all()
        self._bury(before)

    def join_all(self) -> None:
        before = self._pids()
        super().join_all()
        self.processes = []
        self._bury(before)


METRICS_DIR_ENV = "PROMETHEUS_MULTIPROC_DIR"


@contextmanager
def metrics_environment(enabled: bool, workers: int) -> Iterator[None]:
    """With metrics on and several workers, the directory prometheus-client aggregates them
    through: ``$PROMETHEUS_MULTIPROC_DIR`` if the operator set one (kept; they empty it between
    runs), else a fresh private one, removed on exit. One worker needs none."""
    if not enabled or workers == 1 or os.environ.get(METRICS_DIR_ENV):
        yield
        return
    directory = tempfile.mkdtemp(prefix="engram-metrics-")
    os.environ[METRICS_DIR_ENV] = directory
    try:
        yield
    finally:
        os.environ.pop(METRICS_DIR_ENV, None)
        shutil.rmtree(directory, ignore_errors=True)


def run(sock: socket.socket, workers: int, log_level: str) -> None:
    """Serve the provider app on ``sock`` until a signal stops it; Ctrl-C raises
    KeyboardInterrupt, which the CLI reports as exit code 130."""
    config = uvicorn.Config(
        APP,
        factory=True,
        workers=workers,
        log_config=log_config(log_level),
        log_level=log_level,
        access_log=False,
    )
    if workers > 1:
        supervisor = _Supervisor(config, sockets=[sock])
        supervisor.run()
        if supervisor.interrupted:
            raise KeyboardInterrupt
        return
    server = uvicorn.Server(config)
    # On SIGINT uvicorn shuts down gracefully, then raises the signal again: KeyboardInterrupt.
    server.run(sockets=[sock])
    if not server.started:
        raise click.ClickException("the provider did not start (see the log above)")


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
    help="Seat manifest for the MCP tools at /mcp (default: $ENGRAM_OTE, else the nearest "
    ".engram/ote.toml upwards; without one /mcp is not served).",
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
    metrics: bool,
    otel: bool,
) -> None:
    """Serve the Engram context provider (Tier 3) over HTTP."""
    if print_openapi:
        click.echo(dumps_text(openapi_document(), indent=2))
        return
    sock = listen(host, port)
    try:
        url = database_url(database)
        os.environ["ENGRAM_DATABASE_URL"] = url
        if public_url:
            os.environ["ENGRAM_PUBLIC_URL"] = public_url
        else:
            os.environ.setdefault("ENGRAM_PUBLIC_URL", f"http://{host}:{port}")
        if ote is not None:
            os.environ["ENGRAM_OTE"] = str(ote.resolve())
        if otel:
            os.environ["ENGRAM_OTEL"] = "1"
        if metrics:
            os.environ["ENGRAM_METRICS"] = "1"
        config = ProviderConfig.from_env(os.environ)
        seat = serve_seat(os.environ, Path.cwd())
        if seat is not None:
            load_seat(seat)  # refuse a bad manifest here, not in every worker
        with cli_store(database, creates=True) as store:
            # Migrates once, before any worker starts; metrics and tracing are the workers'.
            create_app(dataclasses.replace(config, metrics=False, otel=False), store, CLOCK)
            banner = [demo_text(*open_demo(store), config.base_url)] if demo else []
            shown = store.url
        click.echo(
            "\n".join(
                [
                    *banner,
                    f"serving {config.base_url} (database {shown}, "
                    f"{workers} worker(s); Ctrl-C stops it)",
                    mcp_banner(config.base_url, seat),
                ]
            )
        )
        with metrics_environment(config.metrics, workers):
            run(sock, workers, log_level)
    finally:
        sock.close()


__all__ = ["listen", "log_config", "metrics_environment", "run", "serve_command"]
