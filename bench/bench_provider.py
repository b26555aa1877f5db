"""provider: signed GET /v1/context (200 beliefs) vs a trivial JSON endpoint, same server.

Starts ``engram serve --workers 2`` on a fresh SQLite database holding one subject with 200
beliefs, then loads ``GET /healthz`` (the baseline: a constant JSON body, same middleware, same
bearer header) and ``GET /v1/context`` (signed, served from the per-worker signed-export cache)
with the same generator - wrk (``apt-get install -y wrk``) when installed, else an httpx/asyncio
generator - 64 connections, rounds interleaved so background load hits both alike. Prints
requests/s and p99 latency of each and the ratio. Target (issue 3): the export reaches at least
50 % of the baseline's requests/s with p99 under 20 ms.

    python -m bench provider [--rounds N]        # or: python bench/bench_provider.py
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from engram.context import Permission, add_belief, create_subject, issue_token
from engram.core.clock import SystemClock
from engram.store import open_store

CONNECTIONS = 64
WORKERS = 2
BELIEFS = 200
CATEGORIES = ("professional", "preference", "goal", "personal", "health", "financial", "general")


@dataclass
class Load:
    rps: float
    p99_ms: float


def _seed(db: Path) -> str:
    store = open_store(f"sqlite://{db}")
    clock = SystemClock()
    try:
        subject = create_subject(store, clock, "Bench Subject", "Europe/Berlin")
        for i in range(BELIEFS):
            add_belief(
                store,
                clock,
                subject.id,
                CATEGORIES[i % len(CATEGORIES)],
                f"Belief number {i}: prefers option {i % 17} in situation {i % 23}.",
                0.5 + (i % 50) / 100,
            )
        return issue_token(store, clock, subject.id, [Permission.READ])
    finally:
        store.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve(db: Path, port: int) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "ENGRAM_RATE_LIMIT_PER_MINUTE": "100000000",
        "ENGRAM_RATE_LIMIT_BURST": "100000000",
        "ENGRAM_MAX_CONCURRENT": "256",
    }
    command = [sys.executable, "-c", "from engram.cli import main; main()", "serve"]
    args = ["--db", str(db), "--port", str(port), "--workers", str(WORKERS)]
    process = subprocess.Popen(
        [*command, *args, "--log-level", "warning"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return process
        except httpx.HTTPError:
            time.sleep(0.2)
    process.kill()
    raise SystemExit("engram serve did not start")


_UNIT = {"us": 0.001, "ms": 1.0, "s": 1000.0}


def _wrk(url: str, token: str, seconds: int) -> Load:
    out = subprocess.run(
        [
            "wrk",
            "-t2",
            f"-c{CONNECTIONS}",
            f"-d{seconds}s",
            "--latency",
            "-H",
            f"Authorization: Bearer {token}",
            url,
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    if "Non-2xx" in out:
        raise SystemExit(f"wrk saw errors:\n{out}")
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    p99 = re.search(r"\s99%\s+([\d.]+)(us|ms|s)", out)
    assert p99 is not None, out
    return Load(rps, float(p99.group(1)) * _UNIT[p99.group(2)])


async def _generate(url: str, token: str, seconds: int) -> Load:
    latencies: list[float] = []
    stop = time.perf_counter() + seconds
    limits = httpx.Limits(max_connections=CONNECTIONS)
    async with httpx.AsyncClient(limits=limits, headers={"Authorization": f"Bearer {token}"}) as c:

        async def one() -> None:
            while time.perf_counter() < stop:
                t = time.perf_counter()
                response = await c.get(url)
                response.raise_for_status()
                latencies.append((time.perf_counter() - t) * 1000)

        await asyncio.gather(*(one() for _ in range(CONNECTIONS)))
    latencies.sort()
    return Load(len(latencies) / seconds, latencies[int(len(latencies) * 0.99) - 1])


def _load(url: str, token: str, seconds: int) -> Load:
    if shutil.which("wrk"):
        return _wrk(url, token, seconds)
    return asyncio.run(_generate(url, token, seconds))


def main(*, rounds: int = 3, seconds: int = 8) -> dict[str, float]:
    generator = "wrk" if shutil.which("wrk") else "httpx/asyncio"
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.db"
        token = _seed(db)
        port = _free_port()
        server = _serve(db, port)
        base = f"http://127.0.0.1:{port}"
        try:
            export = httpx.get(f"{base}/v1/context", headers={"Authorization": f"Bearer {token}"})
            export.raise_for_status()
            size = len(export.content)
            _load(f"{base}/v1/context", token, 2)  # warm both workers' caches
            trivial: list[Load] = []
            signed: list[Load] = []
            for _ in range(rounds):
                trivial.append(_load(f"{base}/healthz", token, seconds))
                signed.append(_load(f"{base}/v1/context", token, seconds))
        finally:
            server.send_signal(signal.SIGINT)
            server.wait(timeout=30)
    t_rps = statistics.median(x.rps for x in trivial)
    s_rps = statistics.median(x.rps for x in signed)
    t_p99 = statistics.median(x.p99_ms for x in trivial)
    s_p99 = statistics.median(x.p99_ms for x in signed)
    ratio = s_rps / t_rps
    print(
        f"engram provider, {WORKERS} uvicorn workers, {CONNECTIONS} connections, {generator}, "
        f"{rounds} x {seconds} s rounds (medians); export {BELIEFS} beliefs, {size} bytes"
    )
    print(f"{'endpoint':<34}{'requests/s':>12}{'p99 ms':>10}")
    print(f"{'GET /healthz (baseline)':<34}{t_rps:>12.0f}{t_p99:>10.2f}")
    print(f"{'GET /v1/context (signed, cached)':<34}{s_rps:>12.0f}{s_p99:>10.2f}")
    verdict = "meets" if ratio >= 0.5 and s_p99 < 20 else "misses"
    print(f"ratio export/baseline: {ratio:.2f} ({verdict} the target: >= 0.50, p99 < 20 ms)")
    return {"baseline_rps": t_rps, "export_rps": s_rps, "export_p99_ms": s_p99, "ratio": ratio}


if __name__ == "__main__":
    main()
