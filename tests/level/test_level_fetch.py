"""engram.level.fetch_location: the level verifier's fetcher (http(s) and file, a size cap, no
redirects, every failure one engram error). The HTTP peer is ``http.server`` on loopback."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from engram.errors import EngramError, InvalidRequest, RemoteError
from engram.fetch import FetchError
from engram.level import fetch_location
from engram.level.internals import MAX_FETCH_BYTES, pinned_fetch

LIST = b'{"type": ["VerifiableCredential", "BitstringStatusListCredential"]}'


class _Host(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path == "/moved":
            self.send_response(302)
            self.send_header("Location", "/list")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = LIST if self.path == "/list" else b"x" * 4096
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def host() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Host)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.mark.req("engram.level.fetch")
def test_a_url_a_file_url_and_a_path_are_read(host: str, tmp_path: Path) -> None:
    saved = tmp_path / "list.json"
    saved.write_bytes(LIST)
    assert fetch_location(f"{host}/list") == LIST
    assert fetch_location(f"file://{saved}") == LIST
    assert fetch_location(str(saved)) == LIST
    assert MAX_FETCH_BYTES == 1 << 24


@pytest.mark.req("engram.level.fetch")
def test_a_redirect_is_refused_not_followed(host: str) -> None:
    with pytest.raises(FetchError, match=r"redirect .* not followed"):
        fetch_location(f"{host}/moved")


@pytest.mark.req("engram.level.fetch")
def test_what_passes_the_cap_is_refused(host: str, tmp_path: Path) -> None:
    with pytest.raises(FetchError, match="larger than 1000 bytes"):
        fetch_location(f"{host}/big", limit=1000)
    big = tmp_path / "big.json"
    big.write_bytes(b" " * 2000)
    with pytest.raises(InvalidRequest, match="the limit is 1000"):
        fetch_location(str(big), limit=1000)


@pytest.mark.req("engram.level.fetch")
def test_other_schemes_fifos_and_unreachable_hosts_are_one_engram_error(tmp_path: Path) -> None:
    with pytest.raises(RemoteError, match="only http"):
        fetch_location("ftp://example.org/list")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(InvalidRequest, match="not a regular file"):
        fetch_location(str(fifo))
    with pytest.raises(EngramError):
        fetch_location("http://127.0.0.1:9/list")


@pytest.mark.req("engram.level.fetch")
def test_a_pinned_location_answers_for_every_url(tmp_path: Path) -> None:
    saved = tmp_path / "list.json"
    saved.write_bytes(LIST)
    assert pinned_fetch(str(saved))("https://issuer.example/other") == LIST
    assert pinned_fetch(None) is fetch_location
