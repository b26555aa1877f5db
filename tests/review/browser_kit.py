"""What the Chromium tests of ``/review`` and ``/memories`` share: finding node, Debian chromium
and npm ``playwright-core`` (``tests/browser/``), and a real uvicorn server on a loopback port.

Without chromium, node or playwright-core a browser test is skipped with the reason; with
``CI=true`` it fails instead, because CI must run it (``.ci/run`` installs all three).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import uvicorn
from starlette.applications import Starlette

HERE = Path(__file__).resolve().parent
NODE_MODULES = HERE.parent / "browser" / "node_modules"


def _unavailable(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{reason} (CI=true: the browser test must run in CI)", pytrace=False)
    pytest.skip(reason)


def node_env() -> dict[str, str]:
    paths = [str(NODE_MODULES), *filter(None, os.environ.get("NODE_PATH", "").split(os.pathsep))]
    return {**os.environ, "NODE_PATH": os.pathsep.join(paths)}


def browser_tools() -> tuple[str, str]:
    """(node, chromium), or skip/fail naming what is missing."""
    chromium = os.environ.get("ENGRAM_CHROMIUM") or shutil.which("chromium")
    if not chromium or not Path(chromium).exists():
        _unavailable("chromium is not installed (Debian: apt-get install chromium)")
    node = shutil.which("node")
    if node is None:
        _unavailable("node is not installed (Debian: apt-get install nodejs)")
    assert chromium is not None
    assert node is not None
    probe = subprocess.run(
        [node, "-e", "require.resolve('playwright-core')"],
        env=node_env(),
        capture_output=True,
        check=False,
    )
    if probe.returncode != 0:
        _unavailable("npm playwright-core is not installed (run: scripts/node-tools)")
    return node, chromium


class _Server(uvicorn.Server):
    """uvicorn that says when it is listening, so the test waits on an event, not a sleep."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.listening = threading.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        self.listening.set()


def loopback_socket() -> tuple[socket.socket, str]:
    """A socket bound to a free loopback port, and the base URL that reaches it."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    return sock, f"http://127.0.0.1:{sock.getsockname()[1]}"


@contextmanager
def serving(app: Starlette, sock: socket.socket) -> Iterator[None]:
    """``app`` under uvicorn on ``sock`` until the block ends."""
    server = _Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        assert server.listening.wait(30), "uvicorn did not start"
        yield
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()


__all__ = ["HERE", "browser_tools", "loopback_socket", "node_env", "serving"]
