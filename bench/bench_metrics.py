"""metrics: the export path with GET /metrics on vs off (issue 20: keep the hot path cheap).

Two ``engram serve --workers 2`` on one fresh SQLite file, the same in all but ``--metrics``
(which also makes them aggregate through ``PROMETHEUS_MULTIPROC_DIR``: the costlier,
multiprocess mode), rate limits lifted. wrk loads ``GET /v1/context`` for the demo subject
(gzip, a cached export: the route where a fixed per-request cost shows most) on each in turn,
rounds interleaved, 64 connections. It prints the median requests/s of each, their ratio
(metrics on / off) per round and overall, and the workers' CPU per request; a figure counts
only when every answer was 200.

    python -m bench metrics [--rounds N]
"""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench._harness import wait_until_up
from bench.bench_provider import WORKERS, Load, _free_port, _load, _seed, _server_cpu

SECONDS = 5


def _serve(url: str, port: int, metrics: bool, home: Path) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "ENGRAM_RATE_LIMIT_PER_MINUTE": "100000000",
        "ENGRAM_RATE_LIMIT_BURST": "100000000",
        "ENGRAM_MAX_CONCURRENT": "256",
    }
    for name in ("ENGRAM_OTE", "ENGRAM_METRICS", "PROMETHEUS_MULTIPROC_DIR", "ENGRAM_OTEL"):
        env.pop(name, None)
    command = [sys.executable, "-c", "from engram.cli import main; main()", "serve"]
    args = ["--db", url, "--port", str(port), "--workers", str(WORKERS), "--log-level", "warning"]
    process = subprocess.Popen(
        [*command, *args, *(["--metrics"] if metrics else [])],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=home,
    )
    wait_until_up(f"http://127.0.0.1:{port}/healthz", process, 120, "engram serve")
    return process


def _measure(process: subprocess.Popen[str], url: str, token: str, seconds: int) -> Load:
    before = _server_cpu(process.pid)
    load = _load(url, token, seconds, "gzip")
    load.server_cpu_us = (_server_cpu(process.pid) - before) / max(load.requests, 1) * 1e6
    return load


def main(*, rounds: int = 5, seconds: int = SECONDS) -> dict[str, float]:
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite://{Path(tmp) / 'bench.db'}"
        token = _seed(url)["demo"]
        servers: dict[str, tuple[subprocess.Popen[str], int]] = {}
        runs: dict[str, list[Load]] = {"off": [], "on": []}
        try:
            for name in ("off", "on"):
                port = _free_port()
                servers[name] = (_serve(url, port, name == "on", Path(tmp)), port)
                _load(f"http://127.0.0.1:{port}/v1/context", token, 2, "gzip")  # warm caches
            for index in range(rounds):
                # Alternate which goes first, so neither always runs on a warmer machine.
                order = ("off", "on") if index % 2 == 0 else ("on", "off")
                for name in order:
                    process, port = servers[name]
                    target = f"http://127.0.0.1:{port}/v1/context"
                    runs[name].append(_measure(process, target, token, seconds))
        finally:
            for process, _ in servers.values():
                process.send_signal(signal.SIGINT)
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    process.kill()
    off = statistics.median(x.rps for x in runs["off"])
    on = statistics.median(x.rps for x in runs["on"])
    cpu_off = statistics.median(x.server_cpu_us for x in runs["off"])
    cpu_on = statistics.median(x.server_cpu_us for x in runs["on"])
    failed = sum(x.non_200 for x in runs["off"] + runs["on"])
    print(
        f"GET /v1/context (demo, gzip, cached), {WORKERS} workers, SQLite, "
        f"{rounds} x {seconds} s rounds interleaved (medians)"
    )
    print(f"1-minute load average: {load_before:.2f} before, {os.getloadavg()[0]:.2f} after")
    print(f"metrics off: {off:.0f} req/s, {cpu_off:.0f} us CPU/request")
    print(f"metrics on:  {on:.0f} req/s, {cpu_on:.0f} us CPU/request")
    ratios = [b.rps / a.rps for a, b in zip(runs["off"], runs["on"], strict=True)]
    print(f"ratio on/off per round: {', '.join(f'{r:.3f}' for r in ratios)}")
    print(f"ratio on/off (medians): {on / off:.3f}; CPU per request on/off: {cpu_on / cpu_off:.3f}")
    print(f"answers that were not 200: {failed}" + (" (figures do not count)" if failed else ""))
    return {"off_rps": off, "on_rps": on, "ratio": on / off, "cpu_ratio": cpu_on / cpu_off}


if __name__ == "__main__":
    main()
