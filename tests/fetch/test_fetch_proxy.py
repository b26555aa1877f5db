"""engram.fetch through an HTTP proxy: the proxy is used, and the deadline holds through it.

The proxy and the origin are written here on loopback (plain sockets and ``http.server``),
importing nothing of engram. A forward proxy for ``http://`` origins reads the request line
(``GET http://host:port/path HTTP/1.1``), opens the origin, and relays both ways byte by byte;
the origin either answers at once or drips its body one byte every half second, which no
per-read timeout ever trips.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import pytest

from engram.fetch import FetchError, FetchSettings, fetch_url

DEADLINE = 2.0
BODY = b"status list bytes"


class _Origin(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        drip = self.path == "/drip"
        self.send_response(200)
        self.send_header("Content-Length", str(1000 if drip else len(BODY)))
        self.end_headers()
        if not drip:
            self.wfile.write(BODY)
            return
        try:
            for _ in range(1000):
                self.wfile.write(b"x")
                self.wfile.flush()
                time.sleep(0.5)
        except OSError:
            return

    def log_message(self, *_: object) -> None:
        pass


class _Proxy:
    """A forward proxy on loopback that records the request lines it relays."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        with client:
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = client.recv(4096)
                if not chunk:
                    return
                head += chunk
            line, _, rest = head.partition(b"\r\n")
            method, target, version = line.decode().split(" ")
            self.seen.append(f"{method} {target}")
            origin = urlsplit(target)
            relayed = f"{method} {origin.path or '/'} {version}\r\n".encode() + rest
            try:
                with socket.create_connection((origin.hostname, origin.port or 80)) as upstream:
                    upstream.sendall(relayed)
                    while data := upstream.recv(1):
                        client.sendall(data)
            except OSError:
                return  # the client gave up (the deadline): nothing left to relay

    def close(self) -> None:
        self._listener.close()


@pytest.fixture
def origin() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Origin)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def proxy() -> Iterator[_Proxy]:
    running = _Proxy()
    yield running
    running.close()


def _settings(proxy: str, no_proxy: str = "") -> FetchSettings:
    env = {"HTTP_PROXY": proxy, "ENGRAM_FETCH_DEADLINE": str(DEADLINE)}
    if no_proxy:
        env["NO_PROXY"] = no_proxy
    return FetchSettings.from_environment(env)


@pytest.mark.req("engram.limits.fetch-proxy")
def test_a_read_goes_through_the_http_proxy_the_environment_names(
    origin: str, proxy: _Proxy
) -> None:
    assert fetch_url(f"{origin}/list", limit=1 << 20, settings=_settings(proxy.url)) == BODY
    assert proxy.seen == [f"GET {origin}/list"]


@pytest.mark.req("engram.limits.fetch-proxy")
def test_no_proxy_sends_a_host_direct(origin: str, proxy: _Proxy) -> None:
    settings = _settings(proxy.url, no_proxy="127.0.0.1")
    assert fetch_url(f"{origin}/list", limit=1 << 20, settings=settings) == BODY
    assert proxy.seen == []


@pytest.mark.req("engram.limits.fetch-proxy")
@pytest.mark.req("engram.limits.fetch-deadline")
def test_a_body_dripped_through_the_proxy_is_cut_off_at_the_deadline(
    origin: str, proxy: _Proxy
) -> None:
    started = time.monotonic()
    with pytest.raises(FetchError, match="within the deadline"):
        fetch_url(f"{origin}/drip", limit=1 << 20, settings=_settings(proxy.url))
    assert time.monotonic() - started < DEADLINE + 2.0
    assert proxy.seen == [f"GET {origin}/drip"]


@pytest.mark.req("engram.limits.fetch-proxy")
def test_a_proxy_engram_cannot_speak_to_is_one_error_line(origin: str) -> None:
    with pytest.raises(FetchError, match="only to http:// and https:// proxies"):
        fetch_url(f"{origin}/list", limit=1 << 20, settings=_settings("socks5://127.0.0.1:9"))
