"""A hostile OCI registry and a hostile token realm for the tests, importing nothing from engram.

One misbehaviour per instance (``behaviour``), on loopback; everything else it answers as a
plain registry would, from the ``manifest`` and ``blob`` bytes it is given (the test builds a
valid cartridge manifest with engram, so a pull gets as far as the misbehaviour). The
behaviours are those of issue 31: endless bodies on an error, a redirect, a 401 challenge and a
token answer; a 1 GiB ``zstd`` bomb; a body that says ``gzip`` and is not; ``gzip, gzip``; a
redirect loop; one byte every two seconds (headers or body); a blob streamed slowly enough to
kill the client in the middle; 20,000 (or 2,000) referrers in one page, or 100 a page.
"""

from __future__ import annotations

import json
import threading
import time
import zlib
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

INDEX = "application/vnd.oci.image.index.v1+json"
MANIFEST = "application/vnd.oci.image.manifest.v1+json"
FILLER = b" " * (1 << 16)


def gzip_bytes(data: bytes) -> bytes:
    packer = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    return packer.compress(data) + packer.flush()


def gzip_bomb(inflated: int) -> bytes:
    """``inflated`` bytes of spaces as one gzip member, built block by block."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    parts = [packer.compress(FILLER) for _ in range(inflated // len(FILLER))]
    return b"".join(parts) + packer.flush()


@dataclass
class Hostility:
    behaviour: str
    manifest: bytes = b"{}"
    blob: bytes = b""
    zstd_bomb: bytes = b""
    gzip_bomb: bytes = b""
    requests: list[str] = field(default_factory=list)


def _dumps(value: Any) -> bytes:
    return json.dumps(value).encode()  # noqa: TID251 - a test peer's wire bodies


def _referrers_page(count: int, start: int = 0) -> bytes:
    manifests = [
        {
            "mediaType": MANIFEST,
            "digest": "sha256:" + f"{i:064x}",
            "size": 500,
            "artifactType": "application/vnd.acx.level.v1+json",
        }
        for i in range(start, start + count)
    ]
    return _dumps({"schemaVersion": 2, "mediaType": INDEX, "manifests": manifests})


class Handler(BaseHTTPRequestHandler):
    hostility: Hostility
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    # -- answers -------------------------------------------------------------------------

    def _reply(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _endless(self, status: int, headers: dict[str, str] | None = None) -> None:
        """A body that never ends: close-delimited, written until the client hangs up."""
        self.close_connection = True
        self.send_response(status)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Connection", "close")
        self.end_headers()
        try:
            while True:
                self.wfile.write(FILLER)
        except OSError:
            return

    def _drip(self, payload: bytes, *, every: float = 2.0, size: int = 1) -> None:
        """``payload`` (status line, headers and all) ``size`` bytes every ``every`` seconds."""
        self.close_connection = True
        try:
            for i in range(0, len(payload), size):
                self.wfile.write(payload[i : i + size])
                self.wfile.flush()
                time.sleep(every)
        except OSError:
            return

    def _challenge(self) -> None:
        host = self.headers.get("Host", "")
        realm = f'Bearer realm="http://{host}/token",service="hostile",scope="repository:x:pull"'
        self._reply(401, b"{}", {"WWW-Authenticate": realm})

    # -- routes --------------------------------------------------------------------------

    def do_HEAD(self) -> None:
        self.do_GET()

    def do_GET(self) -> None:
        h = self.hostility
        h.requests.append(f"{self.command} {self.path}")
        path = self.path.split("?")[0]
        kind = h.behaviour
        if path == "/token":
            return self._token(kind)
        if path.startswith("/elsewhere"):
            return self._reply(500, _dumps({"errors": [{"code": "UNKNOWN", "message": "x"}]}))
        if "/manifests/" in path:
            return self._manifest(kind)
        if "/blobs/" in path:
            return self._blob(kind)
        if "/referrers/" in path:
            return self._referrers(kind)
        return self._reply(404, b"{}")

    def _token(self, kind: str) -> None:
        if kind == "token-endless":
            return self._endless(200, {"Content-Type": "application/json"})
        if kind == "token-drip":
            body = b'{"token": "abc"}'
            head = f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\n\r\n".encode()
            return self._drip(head + body)
        return self._reply(200, b'{"token": "abc"}')

    def _manifest(self, kind: str) -> None:
        h = self.hostility
        headers = {"Content-Type": MANIFEST}
        if kind == "error-endless":
            return self._endless(500, {"Content-Type": "application/json"})
        if kind == "redirect-endless":
            return self._endless(307, {"Location": "/elsewhere"})
        if kind == "challenge-endless":
            return self._endless(401, {"WWW-Authenticate": 'Basic realm="hostile"'})
        if kind in ("token-endless", "token-drip") and "Authorization" not in self.headers:
            return self._challenge()
        if kind == "redirect-loop":
            return self._reply(307, b"", {"Location": self.path})
        if kind == "zstd-bomb":
            return self._reply(200, h.zstd_bomb, {**headers, "Content-Encoding": "zstd"})
        if kind == "gzip-bomb":
            return self._reply(200, h.gzip_bomb, {**headers, "Content-Encoding": "gzip"})
        if kind == "gzip-not-gzip":
            return self._reply(200, h.manifest, {**headers, "Content-Encoding": "gzip"})
        if kind == "drip-headers":
            head = f"HTTP/1.1 200 OK\r\nContent-Length: {len(h.manifest)}\r\n\r\n".encode()
            return self._drip(head + h.manifest)
        return self._reply(200, h.manifest, headers)

    def _blob(self, kind: str) -> None:
        h = self.hostility
        if kind == "stacked-gzip":
            body = gzip_bytes(gzip_bytes(h.blob))
            return self._reply(200, body, {"Content-Encoding": "gzip, gzip"})
        if kind == "drip-body":
            head = f"HTTP/1.1 200 OK\r\nContent-Length: {len(h.blob)}\r\n\r\n".encode()
            self.wfile.write(head)
            return self._drip(h.blob)
        if kind == "slow-blob":  # steady, small: the client is killed while it stages
            head = f"HTTP/1.1 200 OK\r\nContent-Length: {len(h.blob)}\r\n\r\n".encode()
            self.wfile.write(head)
            return self._drip(h.blob, every=0.1, size=1024)
        return self._reply(200, h.blob)

    def _referrers(self, kind: str) -> None:
        if kind.startswith("referrers-one-page-"):
            count = int(kind.rsplit("-", 1)[1])
            return self._reply(200, _referrers_page(count), {"Content-Type": INDEX})
        if kind == "referrers-pages":
            page = int(self.path.split("page=")[1]) if "page=" in self.path else 0
            per_page = 100
            link = f'<{self.path.split("?")[0]}?page={page + 1}>; rel="next"'
            body = _referrers_page(per_page, page * per_page)
            return self._reply(200, body, {"Content-Type": INDEX, "Link": link})
        if kind == "referrers-endless":
            return self._endless(200, {"Content-Type": INDEX})
        return self._reply(404, b"{}")


class HostileRegistry:
    """``with HostileRegistry(Hostility(...)) as registry:`` … ``registry.host``."""

    def __init__(self, hostility: Hostility) -> None:
        self.hostility = hostility
        handler = type("BoundHandler", (Handler,), {"hostility": hostility})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self.host = f"127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> HostileRegistry:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()


__all__ = ["HostileRegistry", "Hostility", "gzip_bomb", "gzip_bytes"]
