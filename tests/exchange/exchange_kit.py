"""A built Exchange to test: a registry with our artifacts and the reference's, its index, its
site, and a loopback HTTP server for it (the site needs no server of its own; browsers do not
``fetch`` ``file:`` URLs)."""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "registry"))

from registry_kit import NOW, Registry, make_registry

from engram.registry import build_site


def built_site(tmp: Path) -> tuple[Registry, Path]:
    registry = make_registry(tmp)
    registry.index()
    site = tmp / "site"
    build_site(registry.root, site, now=NOW)
    return registry, site


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def serve(folder: Path) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
