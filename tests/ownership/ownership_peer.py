"""A test peer that drives engram over HTTP only: it imports nothing of engram.

It speaks MCP's JSON-RPC to ``/mcp`` with httpx as any other MCP client could (stateless
Streamable HTTP, JSON answers), runs the ``engram`` command line as a user would, and starts
``engram serve`` as a separate process. What it asserts about isolation it reads from the wire,
so a bug that engram's own client code would hide cannot hide here.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ENGRAM = shutil.which("engram") or "engram"
PROTOCOL = "2025-06-18"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def cli(env: Mapping[str, str], *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [ENGRAM, *args], env=dict(env), capture_output=True, text=True, timeout=120, check=False
    )
    if check and done.returncode != 0:
        raise AssertionError(f"engram {' '.join(args)} -> {done.returncode}: {done.stderr}")
    return done


def engram_env(home: Path, database: str | None = None) -> dict[str, str]:
    """This environment without any ENGRAM_ setting, with ``home`` (and ``database``)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAM_")}
    env["ENGRAM_HOME"] = str(home)
    if database is not None:
        env["ENGRAM_DATABASE_URL"] = database
    return env


def write_seat(folder: Path, env: dict[str, str]) -> Path:
    """The default seat manifest in ``folder``; the commands run beside the server use it too."""
    ote = folder / "ote.toml"
    ote.write_text(cli(env, "default-ote").stdout)
    env["ENGRAM_OTE"] = str(ote)
    return ote


def postgres_hosts(
    tmp_path: Path, postgres_url: str
) -> tuple[list[Path], list[dict[str, str]], Path]:
    """Two hosts' folders and environments (each its own ENGRAM_HOME, so its own index
    folder) on one migrated PostgreSQL database, and the seat they both serve."""
    hosts = [tmp_path / "host1", tmp_path / "host2"]
    for h in hosts:
        h.mkdir()
    envs = [engram_env(h, postgres_url) for h in hosts]
    ote = write_seat(hosts[0], envs[0])
    cli(envs[0], "db", "migrate")
    return hosts, envs, ote


def subject(env: Mapping[str, str], name: str) -> str:
    return cli(env, "subject", "create", "--name", name).stdout.strip()


def token(env: Mapping[str, str], subject_id: str, permissions: str) -> str:
    out = cli(env, "token", "create", "--subject", subject_id, "--permissions", permissions)
    return out.stdout.strip().splitlines()[-1].strip()


@contextmanager
def serve(env: Mapping[str, str], ote: Path, workers: int = 1) -> Iterator[str]:
    """``engram serve`` on a free loopback port; yields its base URL."""
    port = free_port()
    log = ote.with_name(f"serve-{port}.log")
    with log.open("w") as sink:
        process = subprocess.Popen(
            [ENGRAM, "serve", "--port", str(port), "--workers", str(workers), "--ote", str(ote)],
            env=dict(env),
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                raise AssertionError(f"engram serve exited: {log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError("engram serve did not come up in 60 s")
            time.sleep(0.1)
        yield base
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@dataclass
class Agent:
    """One MCP client with one bearer token (and optionally a subject header)."""

    base: str
    token: str
    headers: dict[str, str] = field(default_factory=dict)
    calls: int = 0

    def call(self, tool: str, arguments: Mapping[str, Any]) -> tuple[bool, Any, str]:
        """(is_error, structured result or None, the whole answer as text)."""
        self.calls += 1
        response = httpx.post(
            f"{self.base}/mcp",
            json={
                "jsonrpc": "2.0",
                "id": self.calls,
                "method": "tools/call",
                "params": {"name": tool, "arguments": dict(arguments)},
            },
            headers={
                "Authorization": f"Bearer {self.token}",
                "Accept": "application/json, text/event-stream",
                "mcp-protocol-version": PROTOCOL,
                **self.headers,
            },
            timeout=60,
        )
        text = response.text
        assert response.status_code == 200, text
        result = response.json()["result"]
        return bool(result.get("isError")), result.get("structuredContent"), text

    def ok(self, tool: str, arguments: Mapping[str, Any]) -> Any:
        error, value, text = self.call(tool, arguments)
        assert not error, text
        return value

    def refused(self, tool: str, arguments: Mapping[str, Any]) -> str:
        error, _, text = self.call(tool, arguments)
        assert error, text
        message: str = json.loads(text)["result"]["content"][0]["text"]
        return message


@dataclass
class RestClient:
    """One client of the memory REST API (``/v1/memories``) with one bearer token."""

    base: str
    token: str
    headers: dict[str, str] = field(default_factory=dict)

    def request(
        self, method: str, path: str, *, extra: Mapping[str, str] | None = None, **kwargs: Any
    ) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.token}", **self.headers, **(extra or {})}
        return httpx.request(method, f"{self.base}{path}", headers=headers, timeout=60, **kwargs)

    def ok(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self.request(method, path, **kwargs)
        assert response.status_code in (200, 201), response.text
        return response.json()

    def error(self, method: str, path: str, **kwargs: Any) -> tuple[int, str, str]:
        """(status, error code, message) of a refused request, in the spec's error shape."""
        response = self.request(method, path, **kwargs)
        assert response.status_code >= 400, response.text
        error = response.json()["error"]
        assert set(error) == {"code", "message", "status"}, response.text
        assert error["status"] == response.status_code
        return response.status_code, error["code"], error["message"]


def files_containing(folder: Path, needle: bytes) -> list[str]:
    """Every file under ``folder`` whose bytes contain ``needle`` (the erase check)."""
    hits = []
    for path in sorted(folder.rglob("*")):
        if path.is_file() and needle in path.read_bytes():
            hits.append(str(path.relative_to(folder)))
    return hits


def bytes_searched(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


__all__ = [
    "Agent",
    "RestClient",
    "bytes_searched",
    "cli",
    "files_containing",
    "free_port",
    "serve",
    "subject",
    "token",
]
