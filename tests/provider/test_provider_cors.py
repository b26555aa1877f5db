"""CORS for browser runtimes (issue 12, "Provider"; docs/spec/context-provider.md "CORS"):
allowed origins are configured, none by default; preflight for the routes a runtime uses;
``Authorization`` allowed; refusals and errors keep the spec's error shape. Checked on the wire
with httpx and end to end in headless Chromium, whose CORS implementation is the judge.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
import uvicorn

from engram.context.internals import seed_demo
from engram.core.clock import FixedClock, SystemClock
from engram.errors import InvalidRequest
from engram.provider import ProviderConfig, create_app
from engram.store import open_store

HERE = Path(__file__).resolve().parent
NODE_MODULES = HERE.parent / "browser" / "node_modules"
ALLOWED = "https://app.example"
CLOCK = FixedClock(datetime(2026, 3, 1, 9, 0, tzinfo=UTC))


def _app(origins: tuple[str, ...]) -> tuple[httpx.AsyncClient, str]:
    store = open_store("memory://")
    demo = seed_demo(store, CLOCK)
    app = create_app(ProviderConfig(cors_origins=origins), store, CLOCK)
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://p.test"
    ), demo.token


def _preflight(origin: str, method: str = "GET") -> dict[str, str]:
    return {
        "Origin": origin,
        "Access-Control-Request-Method": method,
        "Access-Control-Request-Headers": "authorization, engram-version",
    }


@pytest.mark.req("engram.provider.cors")
@pytest.mark.parametrize(
    ("path", "method"),
    [
        ("/v1/context", "GET"),
        ("/v1/context/diff", "GET"),
        ("/v1/context/correct", "POST"),
        ("/.well-known/engram", "GET"),
        ("/.well-known/engram-keys", "GET"),
    ],
)
async def test_an_allowed_origin_gets_its_preflight(path: str, method: str) -> None:
    http, _ = _app((ALLOWED,))
    async with http:
        got = await http.options(path, headers=_preflight(ALLOWED, method))
    assert got.status_code == 204
    assert got.headers["access-control-allow-origin"] == ALLOWED
    assert got.headers["access-control-allow-methods"] == method
    allowed = {h.strip().lower() for h in got.headers["access-control-allow-headers"].split(",")}
    assert {"authorization", "content-type", "engram-version", "idempotency-key"} <= allowed
    assert "access-control-allow-credentials" not in got.headers
    assert "Origin" in got.headers["vary"]


@pytest.mark.req("engram.provider.cors")
async def test_another_origin_is_refused_in_the_error_shape() -> None:
    http, token = _app((ALLOWED,))
    async with http:
        refused = await http.options("/v1/context", headers=_preflight("https://evil.example"))
        plain = await http.get(
            "/v1/context",
            headers={"Origin": "https://evil.example", "Authorization": f"Bearer {token}"},
        )
    assert refused.status_code == 403
    assert refused.json() == {
        "error": {
            "code": "forbidden",
            "message": "origin 'https://evil.example' is not allowed to call this provider from "
            "a browser (ENGRAM_CORS_ORIGINS)",
            "status": 403,
        }
    }
    assert "access-control-allow-origin" not in refused.headers
    # Without CORS headers a browser will not let that page read the answer.
    assert "access-control-allow-origin" not in plain.headers


@pytest.mark.req("engram.provider.cors")
async def test_answers_and_errors_to_an_allowed_origin_are_readable() -> None:
    http, token = _app((ALLOWED,))
    async with http:
        ok = await http.get(
            "/v1/context", headers={"Origin": ALLOWED, "Authorization": f"Bearer {token}"}
        )
        denied = await http.get("/v1/context", headers={"Origin": ALLOWED})
    for answer in (ok, denied):
        assert answer.headers["access-control-allow-origin"] == ALLOWED
        exposed = {h.strip() for h in answer.headers["access-control-expose-headers"].split(",")}
        assert {"Retry-After", "WWW-Authenticate", "X-Request-Id"} <= exposed
    assert ok.status_code == 200
    assert denied.status_code == 401
    assert denied.json()["error"]["code"] == "unauthorized"


@pytest.mark.req("engram.provider.cors")
async def test_no_origin_is_allowed_by_default_and_the_review_page_never() -> None:
    http, _ = _app(())
    async with http:
        preflight = await http.options("/v1/context", headers=_preflight(ALLOWED))
        get = await http.get("/.well-known/engram", headers={"Origin": ALLOWED})
    assert preflight.status_code != 204
    assert "access-control-allow-origin" not in preflight.headers
    assert "access-control-allow-origin" not in get.headers
    http, _ = _app(("*",))
    async with http:
        review = await http.get("/review", headers={"Origin": ALLOWED})
        anyone = await http.get("/.well-known/engram", headers={"Origin": "https://x.example"})
    assert "access-control-allow-origin" not in review.headers
    assert anyone.headers["access-control-allow-origin"] == "*"


@pytest.mark.req("engram.provider.cors")
def test_the_configured_origins_are_checked() -> None:
    config = ProviderConfig.from_env(
        {"ENGRAM_CORS_ORIGINS": "https://a.example, http://localhost:3000"}
    )
    assert config.cors_origins == ("https://a.example", "http://localhost:3000")
    for bad in ("https://a.example/", "a.example", "https://a.example/app", "ftp://a.example"):
        with pytest.raises(InvalidRequest, match="CORS origin"):
            ProviderConfig(cors_origins=(bad,))


def _node_env() -> dict[str, str]:
    # scripts/node-tools installs playwright-core in tests/browser; NODE_PATH may name others.
    paths = [str(NODE_MODULES), *filter(None, os.environ.get("NODE_PATH", "").split(os.pathsep))]
    return {**os.environ, "NODE_PATH": os.pathsep.join(paths)}


def _chromium() -> tuple[str, str]:
    def unavailable(reason: str) -> None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{reason} (CI=true: the browser test must run in CI)", pytrace=False)
        pytest.skip(reason)

    chromium = os.environ.get("ENGRAM_CHROMIUM") or shutil.which("chromium")
    node = shutil.which("node")
    if not chromium or not Path(chromium).exists():
        unavailable("chromium is not installed (Debian: apt-get install chromium)")
    if node is None:
        unavailable("node is not installed")
    assert chromium is not None
    assert node is not None
    probe = subprocess.run(
        [node, "-e", "require.resolve('playwright-core')"],
        capture_output=True,
        check=False,
        env=_node_env(),
    )
    if probe.returncode != 0:
        unavailable("npm playwright-core is not installed (run: scripts/node-tools)")
    return node, chromium


class _Page(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"<!doctype html><title>a browser runtime</title>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def pages() -> Iterator[tuple[str, str]]:
    """Two origins serving the runtime's page: the first is allowed, the second is not."""
    servers = [ThreadingHTTPServer(("127.0.0.1", 0), _Page) for _ in range(2)]
    for server in servers:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    yield tuple(f"http://127.0.0.1:{s.server_address[1]}" for s in servers)  # type: ignore[misc]
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture
def served(tmp_path: Path, pages: tuple[str, str]) -> Iterator[tuple[str, str]]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    store = open_store(f"sqlite:///{tmp_path / 'engram.db'}")
    demo = seed_demo(store, SystemClock())
    config = ProviderConfig(public_url=base, cors_origins=(pages[0],))
    app = create_app(config, store, SystemClock())
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    yield base, demo.token
    server.should_exit = True
    thread.join(30)
    sock.close()  # uvicorn does not close a socket it was handed
    store.close()


@pytest.mark.browser
@pytest.mark.req("engram.provider.cors")
@pytest.mark.parametrize("allowed", [True, False])
def test_a_browser_runtime_reads_the_provider_only_from_an_allowed_origin(
    served: tuple[str, str], pages: tuple[str, str], allowed: bool
) -> None:
    node, chromium = _chromium()
    base, token = served
    page = (pages[0] if allowed else pages[1]) + "/runtime.html"
    run = subprocess.run(
        [node, str(HERE / "cors_fetch.cjs"), page, base, token, chromium],
        capture_output=True, text=True, timeout=120, check=False, env=_node_env(),
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    seen = json.loads(run.stdout)
    if not allowed:
        assert all("failed" in v for v in seen.values()), seen
        return
    assert seen["discovery"]["engram_version"] == "0.1"
    assert seen["keys"]["status"] == 200
    assert seen["context"] == {
        "status": 200,
        "code": None,
        "engram_version": "0.1",
        "request_id": True,
    }
    assert seen["unauthenticated"]["status"] == 401
    assert seen["unauthenticated"]["code"] == "unauthorized"
    assert seen["diff"]["status"] == 200
    assert seen["correct"]["status"] == 202
