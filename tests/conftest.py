"""Shared fixtures: a fresh, empty store per test on every backend.

``any_store`` is parametrised over ``memory``, ``sqlite`` and ``postgresql``; ``memory_store``,
``sqlite_store`` and ``postgres_store`` pick one backend; ``postgres_url`` and ``any_database_url``
give a URL (for code that opens its own store, in this process or a subprocess).
``engram_shell`` runs the real ``engram`` command in a subprocess, as a user would from a shell;
``closed_port`` is a loopback port nobody listens on; ``openai_peer`` starts small
OpenAI-compatible servers (chat completions, embeddings, rerank) that record what they are sent.

PostgreSQL: the server named by ``ENGRAM_TEST_POSTGRES_URL`` (default
``postgresql://postgres@127.0.0.1:5432/postgres``). One throwaway database ``engram_test_<hex>``
is created per pytest session (per xdist worker) and dropped at the end (ones left by killed
runs are swept after an hour); each test gets a fresh
schema in it, selected through the connection's ``search_path`` and dropped afterwards. If the
server is unreachable the tests are skipped with the reason, except under ``CI=true`` where they
fail: CI must run them.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import psycopg
import pytest

from engram.store import Store, open_store
from engram.store.internals import redact_url

DEFAULT_POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/postgres"

TESTS = Path(__file__).resolve().parent
# The README's `python -m pytest` runs on every core (pyproject's addopts: `-n auto --dist
# loadgroup`). Each test file is one xdist group, so a file's tests run in order on one worker
# and its module fixtures (a built wheel, a docker-registry, an issued level) are made once; a
# folder here is one group as a whole, because its session fixtures are costly (the strict
# mkdocs build, the interop peers). Files share nothing else: every test writes under tmp_path,
# listens on a free port and gets its own PostgreSQL database per worker.
ONE_WORKER_FOLDERS = frozenset({"docs", "interop"})


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: two workers per core. About a third of the suite's wall time is spent waiting
    on subprocesses, sockets and the database, so one worker per core leaves the cores idle:
    measured on 2 cores, the whole suite took 510 s in one process, 299 s with one worker per
    core and 269 s with two."""
    return 2 * (os.cpu_count() or 1)


@pytest.fixture(autouse=True)
def _own_engram_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No test reaches the ``~/.engram`` of whoever runs the suite: a command that finds no
    manifest uses the default seat there (docs/spec/memory-rest.md "The default seat") and a
    database there, so each test has an ``ENGRAM_HOME`` of its own (subprocesses inherit it)
    unless it names one."""
    monkeypatch.setenv("ENGRAM_HOME", str(tmp_path_factory.mktemp("engram-home")))


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the marks (--dist loadgroup)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:
            continue
        try:
            parts = item.path.resolve().relative_to(TESTS).parts
        except ValueError:  # a test outside tests/ (pytest given another path)
            continue
        group = parts[0] if len(parts) > 1 and parts[0] in ONE_WORKER_FOLDERS else "/".join(parts)
        item.add_marker(pytest.mark.xdist_group(group))


def _admin_url() -> str:
    return os.environ.get("ENGRAM_TEST_POSTGRES_URL") or DEFAULT_POSTGRES_URL


def _with_database(url: str, database: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + database, parts.query, parts.fragment))


def _with_search_path(url: str, schema: str) -> str:
    parts = urlsplit(url)
    option = "options=" + quote(f"-csearch_path={schema}", safe="")
    query = f"{parts.query}&{option}" if parts.query else option
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment))


@dataclass
class _PostgresSession:
    """The session's throwaway database, or why there is none."""

    url: str | None
    reason: str
    admin: psycopg.Connection[tuple[object, ...]] | None = None


def _unavailable(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{reason} (CI=true: the PostgreSQL tests must run in CI)", pytrace=False)
    pytest.skip(reason)


STALE_AFTER_SECONDS = 3600


def _sweep_stale_databases(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    """Drop throwaway databases left by killed runs (older than an hour and unused).

    A live session keeps its admin connection open, so plain DROP DATABASE (without FORCE)
    fails on it and the database is left alone.
    """
    rows = conn.execute(
        "SELECT datname FROM pg_database WHERE datname LIKE 'engram\\_test\\_%'"
    ).fetchall()
    for (name,) in rows:
        parts = str(name).split("_")
        stamp = parts[-2] if len(parts) >= 5 else ""
        if stamp.isdigit() and time.time() - int(stamp) > STALE_AFTER_SECONDS:
            with contextlib.suppress(psycopg.Error):
                conn.execute(f'DROP DATABASE "{name}"')


@pytest.fixture(scope="session")
def _postgres_session() -> Iterator[_PostgresSession]:
    admin_url = _admin_url()
    shown = redact_url(admin_url)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    database = f"engram_test_{worker}_{int(time.time())}_{secrets.token_hex(4)}"
    try:
        with psycopg.connect(admin_url, autocommit=True, connect_timeout=5) as conn:
            _sweep_stale_databases(conn)
            conn.execute(f'CREATE DATABASE "{database}"')
    except psycopg.Error as e:
        yield _PostgresSession(None, f"PostgreSQL not reachable at {shown}: {e}".strip())
        return
    url = _with_database(admin_url, database)
    admin = psycopg.connect(url, autocommit=True, connect_timeout=5)
    admin.execute("SET lock_timeout = '10s'")
    try:
        yield _PostgresSession(url, "", admin)
    finally:
        admin.close()
        with psycopg.connect(admin_url, autocommit=True, connect_timeout=5) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


@pytest.fixture
def postgres_url(_postgres_session: _PostgresSession) -> Iterator[str]:
    """A URL to a fresh, empty schema in the session's throwaway PostgreSQL database."""
    session = _postgres_session
    if session.url is None or session.admin is None:
        _unavailable(session.reason)
        raise AssertionError("unreachable")  # pytest.skip/fail raise; this keeps mypy honest
    schema = f"t_{secrets.token_hex(6)}"
    session.admin.execute(f'CREATE SCHEMA "{schema}"')
    try:
        yield _with_search_path(session.url, schema)
    finally:
        # A connection leaked by a failing test may hold a lock; the database is dropped
        # WITH (FORCE) at the end of the session anyway.
        with contextlib.suppress(psycopg.Error):
            session.admin.execute(f'DROP SCHEMA "{schema}" CASCADE')


@pytest.fixture
def postgres_store(postgres_url: str) -> Iterator[Store]:
    store = open_store(postgres_url)
    try:
        yield store
    finally:
        store.close()


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[Store]:
    store = open_store(f"sqlite://{tmp_path / 'engram.db'}")
    try:
        yield store
    finally:
        store.close()


@pytest.fixture
def memory_store() -> Iterator[Store]:
    store = open_store("memory://")
    try:
        yield store
    finally:
        store.close()


@pytest.fixture(
    params=["memory", "sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)],
)
def any_store(request: pytest.FixtureRequest) -> Store:
    """A fresh, empty store on each backend in turn."""
    fixture = {"memory": "memory_store", "sqlite": "sqlite_store", "postgresql": "postgres_store"}
    store: Store = request.getfixturevalue(fixture[request.param])
    return store


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def any_database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A URL another process can open too: a fresh SQLite file, or a fresh PostgreSQL schema."""
    if request.param == "sqlite":
        return f"sqlite://{tmp_path / 'engram.db'}"
    url: str = request.getfixturevalue("postgres_url")
    return url


EngramShell = Callable[..., "subprocess.CompletedProcess[str]"]


@pytest.fixture
def engram_shell() -> EngramShell:
    """``engram ARGS...`` as a real subprocess of this interpreter, output captured as text."""

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", "from engram.cli import main; main()", *args],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )

    return run


@pytest.fixture
def closed_port() -> int:
    """A loopback port nobody listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class OpenAIPeer:
    """An OpenAI-compatible server on loopback, written without engram's code.

    It answers ``/v1/chat/completions`` ("re: <last user message>"), ``/v1/embeddings``
    (``dims`` numbers per input) and ``/v1/rerank``, records each request's path and body, and
    answers its first ``fail_first`` requests with HTTP 503.
    """

    fail_first: int = 0
    dims: int = 8
    requests: list[tuple[str, Any]] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        """The API base, ``http://127.0.0.1:PORT/v1``."""
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @property
    def paths(self) -> list[str]:
        return [path for path, _ in self.requests]

    def answer(self, path: str, body: Any) -> tuple[int, Any]:
        self.requests.append((path, body))
        if len(self.requests) <= self.fail_first:
            return 503, {"error": {"message": "overloaded, try later"}}
        if path == "/v1/embeddings":
            vector = [1.0] + [0.5] * (self.dims - 1)
            return 200, {
                "data": [{"index": i, "embedding": vector} for i in range(len(body["input"]))]
            }
        if path == "/v1/rerank":
            scores = [
                {"index": i, "relevance_score": 1 / (i + 1)} for i in range(len(body["documents"]))
            ]
            return 200, {"results": scores}
        last = body["messages"][-1]["content"]
        return 200, {
            "choices": [{"index": 0, "message": {"role": "assistant", "content": f"re: {last}"}}]
        }

    def start(self) -> OpenAIPeer:
        peer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                status, value = peer.answer(self.path, body)
                data = json.dumps(value).encode()  # noqa: TID251 - a peer without engram code
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()


@pytest.fixture
def openai_peer() -> Iterator[Callable[..., OpenAIPeer]]:
    """``openai_peer(fail_first=0, dims=8)``: a started :class:`OpenAIPeer`, closed after."""
    started: list[OpenAIPeer] = []

    def start(fail_first: int = 0, dims: int = 8) -> OpenAIPeer:
        started.append(OpenAIPeer(fail_first, dims).start())
        return started[-1]

    try:
        yield start
    finally:
        for peer in started:
            peer.close()
