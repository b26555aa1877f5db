"""Integer literals of more than 4,300 digits at every JSON entry point (issue 15, point 2).

Python refuses ``int()`` of more than 4,300 digits with a bare ``ValueError``; the strict parser
(``engram.core.canonical.parse_strict``) used to let it escape. Now it refuses such a literal by
its length, as ``integer_out_of_range``, before ``int()`` is called, and each entry point answers
in its own terms: the provider ``400 invalid_request`` in the spec's error shape; the runtime a
verification-class error (``malformed_export``) before any signature work; every CLI command
one line on stderr and a non-zero exit, never a traceback; the MCP server a JSON-RPC error.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from starlette.testclient import TestClient

from engram.context.internals import seed_demo
from engram.core.canonical import parse_strict
from engram.core.clock import FixedClock, SystemClock
from engram.errors import CanonicalJsonError, MalformedExport
from engram.provider import ProviderConfig, create_app
from engram.runtime import EngramClient, RuntimeConfig, verify_export
from engram.runtime.internals import parse_key_list
from engram.store import open_store


def _parsed(data: bytes | str) -> dict[str, Any]:
    # Strictly parsed and checked to be an object; the test then walks it freely.
    value = parse_strict(data)
    assert isinstance(value, dict)
    return value


HUGE = "9" * 5000
ENGRAM = [sys.executable, "-c", "from engram.cli import main; main()"]


@pytest.mark.req("engram.core.ijson-huge-integer")
def test_the_parser_refuses_it_by_length_in_its_own_error() -> None:
    for text in (f"[{HUGE}]", f'{{"a": -{HUGE}}}', "[" + "1" * 4301 + "]"):
        with pytest.raises(CanonicalJsonError) as refused:
            parse_strict(text)
        assert refused.value.reason == "integer_out_of_range"
        assert len(refused.value.message) < 200


@pytest.mark.req("engram.provider.big-integers-refused")
@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/context/correct", f'{{"belief_id":"b","new_value":"v","runtime_id":{HUGE}}}'),
        ("/v1/beliefs", f'{{"category":"general","statement":"s","confidence":{HUGE}}}'),
    ],
)
def test_the_provider_answers_400_in_the_error_shape(path: str, body: str) -> None:
    clock = FixedClock(datetime(2026, 3, 1, 9, 0, tzinfo=UTC))
    store = open_store("memory://")
    demo = seed_demo(store, clock)
    with TestClient(
        create_app(ProviderConfig(), store, clock), raise_server_exceptions=False
    ) as http:
        got = http.post(
            path,
            content=body,
            headers={"Authorization": f"Bearer {demo.token}", "Content-Type": "application/json"},
        )
    assert got.status_code == 400
    error = got.json()["error"]
    assert (error["code"], error["status"]) == ("invalid_request", 400)
    assert "integer_out_of_range" in error["message"]


@contextlib.contextmanager
def _served(routes: dict[str, bytes]) -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = routes.get(self.path.split("?")[0])
            self.send_response(200 if body is not None else 404)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body or b"{}")

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.do_GET()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def hostile_provider() -> Iterator[str]:
    with _served(
        {
            "/.well-known/engram": b'{"engram_version":"0.1"}',
            "/.well-known/engram-keys": b'{"keys":[]}',
            "/v1/context": f'{{"engram_version":"0.1","kid":"k","n":{HUGE}}}'.encode(),
        }
    ) as url:
        yield url


@pytest.mark.req("engram.runtime.big-integers-refused")
def test_the_runtime_refuses_it_as_a_verification_error(hostile_provider: str) -> None:
    with pytest.raises(MalformedExport, match="integer_out_of_range"):
        verify_export(f'{{"a":{HUGE}}}'.encode(), {}, now=datetime.now(UTC))
    with pytest.raises(MalformedExport, match="integer_out_of_range"):
        parse_key_list(f'{{"keys":[{{"kid":"k","n":{HUGE}}}]}}'.encode())
    config = RuntimeConfig(hostile_provider, "token")
    with (
        EngramClient(config) as engram,
        pytest.raises(MalformedExport, match="integer_out_of_range"),
    ):
        engram.fetch()


def _one_line_refusal(run: subprocess.CompletedProcess[str]) -> None:
    assert run.returncode != 0
    assert "Traceback" not in run.stderr + run.stdout
    assert run.stderr.startswith("error: "), run.stderr
    assert run.stderr.count("\n") == 1, run.stderr
    assert HUGE[:100] not in run.stderr


def _engram(
    *args: str, cwd: Path, home: Path, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ENGRAM_", "OPENAI_"))}
    env["ENGRAM_HOME"] = str(home)
    return subprocess.run(
        [*ENGRAM, *args], capture_output=True, text=True, cwd=cwd, env=env, input=stdin,
        timeout=120, check=False,
    )  # fmt: skip


@pytest.fixture
def seat(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True, timeout=60)
    run = _engram("init", cwd=repo, home=tmp_path)
    assert run.returncode == 0, run.stderr
    return repo


@pytest.mark.req("engram.cli.big-integers-refused")
def test_every_cli_command_that_reads_json_refuses_it_in_one_line(
    tmp_path: Path, seat: Path, hostile_provider: str
) -> None:
    big = tmp_path / "big.json"
    big.write_text(f'{{"n": {HUGE}}}\n')
    lines = tmp_path / "big.jsonl"
    lines.write_text(f'{{"text": "t", "kind": "fact", "provenance": {{"n": {HUGE}}}}}\n')
    runs = {
        "canonicalize": ("canonicalize", str(big)),
        "canonicalize stdin": ("canonicalize",),
        "record --provenance": (
            "record", "a fact", "--kind", "fact", "--provenance", big.read_text(),
        ),
        "record --from": ("record", "--from", str(lines)),
        "cartridge build --memories": (
            "cartridge", "build", "-o", str(tmp_path / "c.acx"), "--memories", str(lines),
        ),
        "cartridge verify --trust": ("cartridge", "verify", str(big), "--trust", str(big)),
        "context fetch": ("context", "fetch", "--provider", hostile_provider, "--token", "t"),
    }  # fmt: skip
    for label, args in runs.items():
        stdin = big.read_text() if label == "canonicalize stdin" else None
        run = _engram(*args, cwd=seat, home=tmp_path, stdin=stdin)
        try:
            _one_line_refusal(run)
        except AssertionError as e:
            raise AssertionError(f"{label}: {run.returncode} {run.stderr[:400]!r}") from e
    # verify reports its outcome on stdout (exit 1), as for any bundle it cannot certify.
    verify = _engram(
        "conformance", "verify", str(big), "--discovery", str(big), cwd=seat, home=tmp_path
    )
    assert verify.returncode == 1
    assert verify.stdout.startswith("malformed: the bundle is not I-JSON: integer_out_of_range")
    assert verify.stdout.count("\n") == 1
    assert "Traceback" not in verify.stdout + verify.stderr
    assert HUGE[:100] not in verify.stdout


@pytest.fixture
def demo_provider(tmp_path: Path) -> Iterator[tuple[str, str]]:
    store = open_store(f"sqlite:///{tmp_path / 'provider.db'}")
    clock = SystemClock()
    demo = seed_demo(store, clock)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    app = create_app(ProviderConfig(public_url=url), store, clock)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    yield url, demo.token
    server.should_exit = True
    thread.join(timeout=10)
    sock.close()
    store.close()


@pytest.mark.req("engram.cli.big-integers-refused")
def test_chat_refuses_an_llm_answer_with_one_in_one_line(
    tmp_path: Path, demo_provider: tuple[str, str]
) -> None:
    url, token = demo_provider
    answer = f'{{"choices": [], "usage": {HUGE}}}'.encode()
    with _served({"/v1/chat/completions": answer}) as base:
        run = _engram(
            "chat", "--provider", url, "--token", token, "--llm-base-url", base + "/v1",
            cwd=tmp_path, home=tmp_path, stdin="hello\n",
        )  # fmt: skip
    assert "Traceback" not in run.stderr + run.stdout
    assert HUGE[:100] not in run.stderr + run.stdout
    # The turn is lost with one line naming the LLM (engram.cli.chat-retry keeps the session
    # going); at the end of input the session reports the unanswered turn and exits 1.
    assert any(line.startswith("error: the LLM at ") for line in run.stderr.splitlines())
    assert run.returncode == 1


@pytest.mark.req("engram.mcp.big-integers-refused")
def test_the_mcp_server_survives_a_message_with_one(tmp_path: Path, seat: Path) -> None:
    hello = (
        '{"jsonrpc":"2.0","id":%d,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
        '"capabilities":{},"clientInfo":{"name":"p","version":"0"}%s}}\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ENGRAM_", "OPENAI_"))}
    env["ENGRAM_HOME"] = str(tmp_path)
    process = subprocess.Popen(
        [*ENGRAM, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, cwd=seat, env=env,
    )  # fmt: skip
    assert process.stdin is not None
    assert process.stdout is not None
    process.stdin.write(hello % (1, f',"n":{HUGE}') + hello % (2, ""))
    process.stdin.flush()
    answer = _parsed(process.stdout.readline())  # the server keeps serving
    process.stdin.close()
    process.wait(timeout=60)
    assert process.stderr is not None
    err = process.stderr.read()
    process.stdout.close()
    process.stderr.close()
    assert answer["id"] == 2
    assert "result" in answer
    assert "Traceback" not in err
    assert HUGE[:100] not in err
