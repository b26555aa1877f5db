"""Real sockets: ``engram serve --demo`` in a subprocess, and the spec's provider checklist run
with curl and jq exactly as printed (Engram v0.1 "Self-Certification Checklist")."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

from engram.core.clock import parse_instant

# The five checks as the spec prints them; only the host is replaced.
CHECKLIST = [
    (
        "curl -s https://your-provider.com/v1/context \\\n"
        "  -H \"Authorization: Bearer $TOKEN\" | jq '.engram_version'"
    ),
    (
        "curl -s https://your-provider.com/v1/context \\\n"
        "  -H \"Authorization: Bearer $TOKEN\" | jq '.expires_at'"
    ),
    'curl -s -o /dev/null -w "%{http_code}" https://your-provider.com/v1/context',
    "curl -s https://your-provider.com/.well-known/engram | jq '.engram_version'",
    (
        "curl -s -X POST https://your-provider.com/v1/context/correct \\\n"
        '  -H "Authorization: Bearer $TOKEN" \\\n'
        '  -H "Content-Type: application/json" \\\n'
        '  -d \'{"belief_id":"test","new_value":"test","runtime_id":"test",'
        '"timestamp":"2026-01-01T00:00:00Z"}\' \\\n'
        "  | jq '.status'"
    ),
]

# The ``engram`` console script, run by this interpreter.
ENGRAM = [sys.executable, "-c", "from engram.cli import main; main()"]

pytestmark = pytest.mark.skipif(
    shutil.which("curl") is None or shutil.which("jq") is None,
    reason="curl and jq are needed for the checklist (apt-get install -y curl jq)",
)


@dataclass
class Served:
    url: str
    token: str
    banner: list[str]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    port = _free_port()
    env = {**os.environ, "ENGRAM_HOME": str(tmp_path / "home")}
    env.pop("ENGRAM_DATABASE_URL", None)
    env.pop("ENGRAM_PUBLIC_URL", None)
    process = subprocess.Popen(
        [*ENGRAM, "serve", "--demo", "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    banner: list[str] = []
    try:
        # The socket is bound before the banner, so the checks may start once it is printed.
        for line in process.stdout:
            banner.append(line.rstrip("\n"))
            if line.startswith("serving ") or process.poll() is not None:
                break
        # The banner names the 0600 file that keeps the demo token, never the token itself.
        files = [line.split()[2] for line in banner if line.startswith("token:")]
        assert files, "engram serve --demo printed no token file:\n" + "\n".join(banner)
        token = Path(files[0]).read_text(encoding="ascii").strip()
        yield Served(f"http://127.0.0.1:{port}", token, banner)
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        process.stdout.close()


def _run(command: str, served: Served) -> str:
    script = command.replace("https://your-provider.com", served.url)
    result = subprocess.run(
        ["bash", "-c", script],
        env={**os.environ, "TOKEN": served.token},
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    return result.stdout.strip()


@pytest.mark.req("engram.context.checklist", "engram.provider.state-persisted")
@pytest.mark.slow
def test_the_provider_checklist_run_with_curl_gives_the_printed_answers(served: Served) -> None:
    answers = [_run(command, served) for command in CHECKLIST]

    assert answers[0] == '"0.1"'
    expires = parse_instant(answers[1].strip('"'))
    assert expires > datetime.now(UTC)
    assert answers[2] == "401"
    assert answers[3] == '"0.1"'
    assert answers[4] == '"pending_user_confirmation"'


@pytest.mark.req("engram.cli.demo-reused")
@pytest.mark.slow
def test_serve_demo_prints_the_url_the_token_file_and_a_curl_line(served: Served) -> None:
    text = "\n".join(served.banner)

    assert f"provider:  {served.url}" in text
    assert served.token.startswith("eng_")
    assert served.token not in text
    curl = next(line.strip() for line in served.banner if line.strip().startswith("curl "))
    file = next(line.split()[2] for line in served.banner if line.startswith("token:"))
    assert curl == (f'curl -s "{served.url}/v1/context" -H "Authorization: Bearer $(cat {file})"')
    export = subprocess.run(
        ["bash", "-c", curl + " | jq -r .subject.display_name"],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    assert export.stdout.strip() == "Ada Example"
