"""provider: signed GET /v1/context (200 beliefs) vs a trivial JSON endpoint, same server.

Starts ``engram serve --workers 2`` on a fresh SQLite database holding one subject with 200
beliefs, then loads ``GET /healthz`` (the baseline: a constant JSON body, same middleware, same
bearer header) and ``GET /v1/context`` (signed, served from the per-worker signed-export cache),
once without compression (wrk's and curl's default) and once with ``Accept-Encoding: gzip``
(httpx's and browsers' default), with the same generator - wrk (``apt-get install -y wrk``) when
installed, else an httpx/asyncio generator - 64 connections, rounds interleaved so background
load hits all alike. Prints requests/s, p50 and p99 latency of each, the ratio to the baseline
and the machine's load average (the generator shares the cores). Target (issue 3): the export
reaches at least 50 % of the baseline's requests/s with p99 under 20 ms.

    python -m bench provider [--rounds N]        # or: python bench/bench_provider.py
"""

from __future__ import annotations

import asyncio
import math
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
    p50_ms: float
    p99_ms: float
    requests: int
    server_cpu_us: float = math.nan  # worker CPU time per request (user + system)


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


def _wrk(url: str, token: str, seconds: int, encoding: str) -> Load:
    out = subprocess.run(
        [
            "wrk",
            "-t2",
            f"-c{CONNECTIONS}",
            f"-d{seconds}s",
            "--latency",
            "-H",
            f"Authorization: Bearer {token}",
            "-H",
            f"Accept-Encoding: {encoding}",
            url,
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    if "Non-2xx" in out:
        raise SystemExit(f"wrk saw errors:\n{out}")
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    requests = int(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]
    return Load(rps, _percentile(out, 50), _percentile(out, 99), requests)


def _percentile(wrk_output: str, pct: int) -> float:
    found = re.search(rf"\s{pct}%\s+([\d.]+)(us|ms|s)", wrk_output)
    assert found is not None, wrk_output
    return float(found.group(1)) * _UNIT[found.group(2)]


async def _generate(url: str, token: str, seconds: int, encoding: str) -> Load:
    latencies: list[float] = []
    stop = time.perf_counter() + seconds
    limits = httpx.Limits(max_connections=CONNECTIONS)
    headers = {"Authorization": f"Bearer {token}", "Accept-Encoding": encoding}
    async with httpx.AsyncClient(limits=limits, headers=headers) as c:

        async def one() -> None:
            while time.perf_counter() < stop:
                t = time.perf_counter()
                response = await c.get(url)
                response.raise_for_status()
                latencies.append((time.perf_counter() - t) * 1000)

        await asyncio.gather(*(one() for _ in range(CONNECTIONS)))
    latencies.sort()
    return Load(
        len(latencies) / seconds,
        latencies[len(latencies) // 2],
        latencies[int(len(latencies) * 0.99) - 1],
        len(latencies),
    )


def _load(url: str, token: str, seconds: int, encoding: str = "identity") -> Load:
    if shutil.which("wrk"):
        return _wrk(url, token, seconds, encoding)
    return asyncio.run(_generate(url, token, seconds, encoding))


def _server_cpu(pid: int) -> float:
    """CPU seconds (user + system) used so far by the uvicorn workers, the children of ``pid``;
    NaN where /proc is missing. Unlike requests/s, this does not depend on how much CPU the
    load generator, which shares the cores, leaves the server."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        total = 0
        for child in children:
            fields = Path(f"/proc/{child}/stat").read_text().rpartition(")")[2].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime (stat fields 14, 15)
        return total / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return math.nan


def _measured(server: subprocess.Popen[str], url: str, token: str, seconds: int, enc: str) -> Load:
    before = _server_cpu(server.pid)
    load = _load(url, token, seconds, enc)
    load.server_cpu_us = (_server_cpu(server.pid) - before) / max(load.requests, 1) * 1e6
    return load


# (label, path, Accept-Encoding). The baseline's body is 15 bytes and never compressed, so its
# header changes nothing; the export is loaded as a client without compression (wrk's and
# curl's default) and as one that accepts gzip (httpx's and browsers' default).
CONTENDERS = (
    ("GET /healthz (baseline)", "/healthz", "identity"),
    ("GET /v1/context (signed, cached)", "/v1/context", "identity"),
    ("  same, Accept-Encoding: gzip", "/v1/context", "gzip"),
)


def main(*, rounds: int = 3, seconds: int = 8) -> dict[str, float]:
    generator = "wrk" if shutil.which("wrk") else "httpx/asyncio"
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.db"
        token = _seed(db)
        port = _free_port()
        server = _serve(db, port)
        base = f"http://127.0.0.1:{port}"
        try:
            auth = {"Authorization": f"Bearer {token}"}
            sizes = {
                encoding: _raw_size(f"{base}/v1/context", {**auth, "Accept-Encoding": encoding})
                for encoding in ("identity", "gzip")
            }
            _load(f"{base}/v1/context", token, 2)  # warm both workers' caches
            loads: dict[str, list[Load]] = {label: [] for label, _, _ in CONTENDERS}
            for _ in range(rounds):
                for label, path, encoding in CONTENDERS:
                    url = f"{base}{path}"
                    loads[label].append(_measured(server, url, token, seconds, encoding))
        finally:
            server.send_signal(signal.SIGINT)
            server.wait(timeout=30)
    print(
        f"engram provider, {WORKERS} uvicorn workers, {CONNECTIONS} connections, {generator}, "
        f"{rounds} x {seconds} s rounds (medians); export {BELIEFS} beliefs, "
        f"{sizes['identity']} bytes ({sizes['gzip']} gzipped)"
    )
    # The load generator shares the cores with the server (and with anything else running):
    # the load average says how busy the machine was, the baseline's p99 what that did to tails.
    print(f"1-minute load average: {load_before:.2f} before, {os.getloadavg()[0]:.2f} after")
    print(
        f"{'endpoint':<34}{'requests/s':>12}{'p50 ms':>9}{'p99 ms':>9}{'ratio':>7}"
        f"{'server CPU us/req':>19}{'CPU ratio':>10}"
    )
    medians: dict[str, tuple[float, float, float, float]] = {}
    for label, runs in loads.items():
        medians[label] = (
            statistics.median(x.rps for x in runs),
            statistics.median(x.p50_ms for x in runs),
            statistics.median(x.p99_ms for x in runs),
            statistics.median(x.server_cpu_us for x in runs),
        )
    baseline_rps, _, _, baseline_cpu = medians[CONTENDERS[0][0]]
    for label, (rps, p50, p99, cpu) in medians.items():
        print(
            f"{label:<34}{rps:>12.0f}{p50:>9.2f}{p99:>9.2f}{rps / baseline_rps:>7.2f}"
            f"{cpu:>19.0f}{baseline_cpu / cpu:>10.2f}"
        )
    # CPU ratio: the baseline's worker CPU per request over this one's, i.e. the requests/s
    # ratio the server would reach if the load generator did not share its two cores.
    baseline_runs = loads[CONTENDERS[0][0]]
    for label, runs in loads.items():
        rounds_text = ", ".join(f"{x.rps:.0f}/s p99 {x.p99_ms:.1f} ms" for x in runs)
        print(f"  rounds, {label.strip()}: {rounds_text}")
        if runs is not baseline_runs:
            # Each round's ratio compares loads seconds apart, under much the same background.
            ratios = [x.rps / b.rps for x, b in zip(runs, baseline_runs, strict=True)]
            print(f"    ratio per round: {', '.join(f'{r:.2f}' for r in ratios)}")
    figures: dict[str, float] = {}
    keys = ("baseline", "export", "export_gzip")
    for (label, _, encoding), key in zip(CONTENDERS, keys, strict=True):
        rps, p50, p99, cpu = medians[label]
        figures |= {
            f"{key}_rps": rps,
            f"{key}_p50_ms": p50,
            f"{key}_p99_ms": p99,
            f"{key}_server_cpu_us": cpu,
        }
        if key != "baseline":
            ratio = rps / baseline_rps
            figures[f"{key}_ratio"] = ratio
            verdict = "meets" if ratio >= 0.5 and p99 < 20 else "misses"
            print(
                f"export ({encoding}) / baseline: {ratio:.2f}, p99 {p99:.1f} ms "
                f"({verdict} the target: >= 0.50, p99 < 20 ms)"
            )
    return figures


def _raw_size(url: str, headers: dict[str, str]) -> int:
    """The size on the wire (httpx would hand back the decoded body)."""
    with httpx.stream("GET", url, headers=headers) as response:
        response.raise_for_status()
        return sum(len(chunk) for chunk in response.iter_raw())


if __name__ == "__main__":
    main()
