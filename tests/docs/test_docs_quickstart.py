"""The quick start works as written (docs/spec/docs-site.md "Pages whose commands are checked").

Every ``sh`` block of docs/quickstart.md runs, in order, in one bash with ``set -euo pipefail``,
with a fresh ``HOME`` (so ``~/.engram`` is new), against the real ``engram`` on PATH and a real
provider started with the page's own command, ``engram serve --demo``, on a free port instead of
8420 (the only change made to the page's text). A block preceded by
``<!-- quickstart: not run (reason) -->`` is skipped. The set-up command's ``pip install`` part is
not run: the test runs inside that install.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from docs_kit import REPO

PAGE = REPO / "docs" / "quickstart.md"
BLOCK = re.compile(r"(?P<before>[^\n]*)\n```sh\n(?P<body>.*?)\n```", re.S)
NOT_RUN = "<!-- quickstart: not run"
SERVE = 'pip install -e ".[server]" && engram serve --demo'


def blocks() -> list[str]:
    text = PAGE.read_text(encoding="utf-8")
    return [m["body"] for m in BLOCK.finditer(text) if not m["before"].startswith(NOT_RUN)]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture
def environment(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    bin_dir = str(Path(sys.executable).parent)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAM_")}
    env.update(
        HOME=str(home),
        PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
        GIT_AUTHOR_NAME="Quick Start",
        GIT_AUTHOR_EMAIL="quickstart@example.org",
        GIT_COMMITTER_NAME="Quick Start",
        GIT_COMMITTER_EMAIL="quickstart@example.org",
        GIT_CONFIG_GLOBAL=os.devnull,
    )
    return env


@pytest.fixture
def provider(environment: dict[str, str], tmp_path: Path) -> Iterator[int]:
    """`engram serve --demo`, as the page's first block starts it, on a free port."""
    (first,) = [line for block in blocks() for line in block.splitlines() if "engram serve" in line]
    assert first == SERVE, "the quick start no longer starts the provider with the README's line"
    port = free_port()
    command = [*first.split("&& ", 1)[1].split(), "--port", str(port)]
    log = (tmp_path / "serve.log").open("w")
    process = subprocess.Popen(
        command, env=environment, cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert process.poll() is None, (tmp_path / "serve.log").read_text()
            assert time.monotonic() < deadline, "engram serve --demo did not come up in 60 s"
            time.sleep(0.2)
        yield port
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
        log.close()


@pytest.mark.slow
@pytest.mark.req("engram.docs.quickstart-runs")
def test_every_block_of_the_quick_start_runs(
    provider: int, environment: dict[str, str], tmp_path: Path
) -> None:
    script = ["set -euo pipefail"]
    for body in blocks():
        lines = [line for line in body.splitlines() if line != SERVE]
        script += [line.replace("127.0.0.1:8420", f"127.0.0.1:{provider}") for line in lines]
    work = tmp_path / "work"
    work.mkdir()
    result = subprocess.run(
        ["bash", "-c", "\n".join(script)],
        env=environment,
        cwd=work,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, (
        f"stdout:\n{result.stdout[-3000:]}\nstderr:\n{result.stderr[-3000:]}"
    )
    # What the page says the reader will see.
    assert '"pending_user_confirmation"' in result.stdout
    assert "Prefers short answers with one example." in result.stdout
    assert "graduation: blocked (no attested evidence)" in result.stdout
    assert (work / "demo-repo" / ".engram" / "ote.toml").is_file()


@pytest.mark.req("engram.docs.quickstart-runs")
def test_the_blocks_not_run_say_why() -> None:
    text = PAGE.read_text(encoding="utf-8")
    for line in text.splitlines():
        if line.startswith(NOT_RUN):
            assert re.fullmatch(r"<!-- quickstart: not run \(.+\) -->", line), line
    assert len(blocks()) >= 6
