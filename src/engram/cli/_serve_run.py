"""What ``engram serve`` runs once its socket is bound (``engram.cli._serve``): settings for
the workers, the one migration, the banner, then uvicorn (one worker) or its supervisor.

Its own module so that ``_serve`` binds the port before any of this is imported (uvicorn, the
provider, the MCP server): a port in use is one line at once, not after seconds of imports.
"""

from __future__ import annotations

import copy
import dataclasses
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

from engram.cli._common import CLOCK, cli_store, database_url
from engram.cli._demo_subject import demo_text, memory_curl_lines, open_demo
from engram.cli._serve_seat import (
    OTE_FROM_OPTION,
    pin_for_workers,
    require_model,
    seat_banner,
    serve_seat,
)
from engram.cli._settings import NO_SEAT, settings
from engram.mcp import load_seat
from engram.provider import ProviderConfig, create_app

APP = "engram.cli._serve_app:app_with_mcp_from_env"


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


def serve(
    sock: socket.socket,
    *,
    host: str,
    port: int,
    database: str | None,
    workers: int,
    demo: bool,
    public_url: str | None,
    log_level: str,
    ote: Path | None,
    no_seat: bool,
    metrics: bool,
    otel: bool,
) -> None:
    """Prepare the workers' settings and the database on the bound ``sock``, print the banner,
    serve until stopped (the caller closes ``sock``)."""
    url = database_url(database)
    os.environ["ENGRAM_DATABASE_URL"] = url
    if public_url:
        os.environ["ENGRAM_PUBLIC_URL"] = public_url
    else:
        os.environ.setdefault("ENGRAM_PUBLIC_URL", f"http://{host}:{port}")
    if ote is not None:
        os.environ["ENGRAM_OTE"] = os.environ[OTE_FROM_OPTION] = ote.resolve().as_posix()
    if no_seat or settings().no_seat:
        os.environ[NO_SEAT] = "1"
    if otel:
        os.environ["ENGRAM_OTEL"] = "1"
    if metrics:
        os.environ["ENGRAM_METRICS"] = "1"
    config = ProviderConfig.from_env(os.environ)
    # Chosen (the default seat written if need be) once, here, then pinned for the workers.
    seat = serve_seat(os.environ, Path.cwd())
    spec = None
    if seat is not None:
        spec = load_seat(seat)  # refuse a bad manifest here, not in every worker
        require_model(seat, spec)
    pin_for_workers(os.environ, seat)
    with cli_store(database, creates=True) as store:
        # Migrates once, before any worker starts; metrics and tracing are the workers'.
        create_app(dataclasses.replace(config, metrics=False, otel=False), store, CLOCK)
        banner = []
        if demo:
            subject, path = open_demo(store)
            banner.append(demo_text(subject, path, config.base_url))
            if spec is not None:  # with a seat, the memory API too
                kinds = spec.ontology.allowed_kinds
                token = f"$(cat {path})"
                banner += [f"  {line}" for line in memory_curl_lines(config.base_url, token, kinds)]
        shown = store.url
    click.echo(
        "\n".join(
            [
                *banner,
                f"serving {config.base_url} (database {shown}, "
                f"{workers} worker(s); Ctrl-C stops it)",
                *seat_banner(config.base_url, seat, spec),
            ]
        )
    )
    with metrics_environment(config.metrics, workers):
        run(sock, workers, log_level)


__all__ = ["APP", "log_config", "metrics_environment", "run", "serve"]
