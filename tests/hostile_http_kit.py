"""A hostile HTTP host for the fetch discipline's tests: it imports nothing of engram.

Every GET gets one misbehaviour, chosen by name: ``endless`` (a JSON answer that never ends),
``zstd`` (the same, labelled ``Content-Encoding: zstd``), ``gzip-bomb`` (128 MiB of spaces in
a gzip body of about 128 KiB) or ``drip`` (one byte of a valid answer every two seconds).
Shared by the runtime SDK's and the conformance runner's hostile tests (docs/spec/limits.md §1).
"""

from __future__ import annotations

import threading
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SPACES = b" " * (1 << 16)


class Hostile(BaseHTTPRequestHandler):
    behaviour = ""
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.close_connection = True
        try:
            if self.behaviour == "drip":
                for byte in b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}":
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    time.sleep(2)
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            if self.behaviour == "gzip-bomb":
                packer = zlib.compressobj(9, zlib.DEFLATED, 31)
                body = b"".join(packer.compress(SPACES) for _ in range(2048)) + packer.flush()
                self.send_header("Content-Encoding", "gzip")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            if self.behaviour == "zstd":
                self.send_header("Content-Encoding", "zstd")
            self.end_headers()
            while True:  # endless, close-delimited
                self.wfile.write(SPACES)
        except OSError:
            return


@contextmanager
def hostile_host(behaviour: str) -> Iterator[str]:
    """A loopback server misbehaving as ``behaviour``; yields its base URL."""
    handler = type("Bound", (Hostile,), {"behaviour": behaviour})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


__all__ = ["hostile_host"]
