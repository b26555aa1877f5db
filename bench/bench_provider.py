"""provider: signed GET /v1/context vs GET /healthz of the same server, SQLite and PostgreSQL.

For each backend (a fresh SQLite file; a throwaway schema in the PostgreSQL server named by
``ENGRAM_BENCH_POSTGRES_URL``, else ``ENGRAM_TEST_POSTGRES_URL``, else
``postgresql://postgres@127.0.0.1:5432/postgres``) it starts ``engram serve --workers 2`` with
the rate limits lifted (``ENGRAM_RATE_LIMIT_PER_MINUTE``/``_BURST``), seeds the demo subject
(8 beliefs) and a subject with 2,000 beliefs, and loads with wrk (``apt-get install -y wrk``;
else an httpx/asyncio generator), 64 connections, 2 threads:

- ``GET /healthz`` (the baseline: a constant JSON body, same middleware, same bearer header);
- ``GET /v1/context`` for the demo subject, without compression (curl's default) and with
  ``Accept-Encoding: gzip`` (httpx's and browsers');
- ``GET /v1/context`` for the 2,000-belief subject, gzip;
- the ceiling: the SQLite server's ``/healthz`` answer and its 2,000-belief gzip answer, captured
  byte for byte and replayed by a bare ASGI app (``bench/_bare_asgi.py``: no routing, auth,
  middleware or database) on the same uvicorn, workers and load; its ratio is what any Python
  ASGI server reaches for those bytes here, and engram's 2,000-belief ratio is printed against it.

Both servers run at once and the rounds are interleaved (every contender of both backends in
each round), so background load on a shared machine hits all alike. Each row prints requests/s,
p50 and p99, the ratio to the same server's ``/healthz``, the workers' CPU per request (from
/proc; the CPU ratio is what the requests/s ratio would be if the load generator did not share
the cores), and the number of answers that were not 200: a figure counts only when that is 0.
Targets (issue 21): PostgreSQL export >= 0.8 x /healthz with p99 < 20 ms, demo subject and
2,000 beliefs (gzip); SQLite >= 0.9 x /healthz.

    python -m bench provider [--rounds N]        # or: python bench/bench_provider.py
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import re
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, urlsplit, urlunsplit

import httpx
import psycopg

from bench._harness import wait_until_up
from engram.context import Permission, add_belief, create_subject, ensure_schema, issue_token
from engram.context.internals import seed_demo
from engram.core.clock import SystemClock
from engram.core.jsonio import dumps_text
from engram.store import open_store

CONNECTIONS = 64
WORKERS = 2
BIG_SUBJECT_BELIEFS = 2000
SECONDS = 5
CATEGORIES = ("professional", "preference", "goal", "personal", "health", "financial", "general")
DEFAULT_POSTGRES = "postgresql://postgres@127.0.0.1:5432/postgres"
TARGETS = {"sqlite": (0.9, math.inf), "postgresql": (0.8, 20.0)}


@dataclass
class Load:
    rps: float
    p50_ms: float
    p99_ms: float
    requests: int
    non_200: int
    server_cpu_us: float = math.nan  # worker CPU time per request (user + system)


@dataclass(frozen=True)
class Contender:
    label: str
    path: str
    encoding: str
    token: str  # "demo" or "big": whose token the request carries


CONTENDERS = (
    Contender("GET /healthz (baseline)", "/healthz", "identity", "demo"),
    Contender("GET /v1/context demo", "/v1/context", "identity", "demo"),
    Contender("GET /v1/context demo, gzip", "/v1/context", "gzip", "demo"),
    Contender("GET /v1/context 2,000 beliefs, gzip", "/v1/context", "gzip", "big"),
)
BARE_CONTENDERS = (
    Contender("bare ASGI, /healthz bytes (baseline)", "/small", "identity", "demo"),
    Contender("bare ASGI, 2,000 beliefs gzip bytes", "/big", "gzip", "big"),
)
REPO = Path(__file__).resolve().parent.parent


@dataclass
class Backend:
    name: str
    url: str
    tokens: dict[str, str] = field(default_factory=dict)
    server: subprocess.Popen[str] | None = None
    port: int = 0
    sizes: dict[str, int] = field(default_factory=dict)
    loads: dict[str, list[Load]] = field(default_factory=dict)


def _seed(url: str) -> dict[str, str]:
    store = open_store(url)
    clock = SystemClock()
    try:
        ensure_schema(store)
        demo = seed_demo(store, clock)
        big = create_subject(store, clock, "Bench Subject", "Europe/Berlin")
        for i in range(BIG_SUBJECT_BELIEFS):
            add_belief(
                store,
                clock,
                big.id,
                CATEGORIES[i % len(CATEGORIES)],
                f"Belief number {i}: prefers option {i % 17} in situation {i % 23}.",
                0.5 + (i % 50) / 100,
            )
        return {
            "demo": issue_token(store, clock, demo.subject.id, [Permission.READ]),
            "big": issue_token(store, clock, big.id, [Permission.READ]),
        }
    finally:
        store.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve(url: str, port: int) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "ENGRAM_RATE_LIMIT_PER_MINUTE": "100000000",
        "ENGRAM_RATE_LIMIT_BURST": "100000000",
        "ENGRAM_MAX_CONCURRENT": "256",
    }
    env.pop("ENGRAM_OTE", None)  # the provider alone: no /mcp
    command = [sys.executable, "-c", "from engram.cli import main; main()", "serve"]
    args = ["--db", url, "--port", str(port), "--workers", str(WORKERS)]
    process = subprocess.Popen(
        [*command, *args, "--log-level", "warning"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tempfile.gettempdir(),  # no .engram/ote.toml upwards: /mcp is not served
    )
    wait_until_up(f"http://127.0.0.1:{port}/healthz", process, 60, f"engram serve on {url}")
    return process


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
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    requests = int(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]
    non_2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    failed = int(non_2xx.group(1)) if non_2xx else 0
    if errors:
        failed += sum(int(n) for n in errors.groups())
    return Load(rps, _percentile(out, 50), _percentile(out, 99), requests, failed)


def _percentile(wrk_output: str, pct: int) -> float:
    found = re.search(rf"\s{pct}%\s+([\d.]+)(us|ms|s)", wrk_output)
    assert found is not None, wrk_output
    return float(found.group(1)) * _UNIT[found.group(2)]


async def _generate(url: str, token: str, seconds: int, encoding: str) -> Load:
    latencies: list[float] = []
    failed = 0
    stop = time.perf_counter() + seconds
    limits = httpx.Limits(max_connections=CONNECTIONS)
    headers = {"Authorization": f"Bearer {token}", "Accept-Encoding": encoding}
    async with httpx.AsyncClient(limits=limits, headers=headers) as c:

        async def one() -> None:
            nonlocal failed
            while time.perf_counter() < stop:
                t = time.perf_counter()
                response = await c.get(url)
                failed += response.status_code != 200
                latencies.append((time.perf_counter() - t) * 1000)

        await asyncio.gather(*(one() for _ in range(CONNECTIONS)))
    latencies.sort()
    return Load(
        len(latencies) / seconds,
        latencies[len(latencies) // 2],
        latencies[int(len(latencies) * 0.99) - 1],
        len(latencies),
        failed,
    )


def _load(url: str, token: str, seconds: int, encoding: str = "identity") -> Load:
    if shutil.which("wrk"):
        return _wrk(url, token, seconds, encoding)
    return asyncio.run(_generate(url, token, seconds, encoding))


def _server_cpu(pid: int) -> float:
    """CPU seconds (user + system) used so far by the uvicorn workers, the children of ``pid``;
    NaN where /proc is missing."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        total = 0
        for child in children:
            fields = Path(f"/proc/{child}/stat").read_text().rpartition(")")[2].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime (stat fields 14, 15)
        return total / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return math.nan


def _measured(backend: Backend, contender: Contender, seconds: int) -> Load:
    assert backend.server is not None
    url = f"http://127.0.0.1:{backend.port}{contender.path}"
    token = backend.tokens[contender.token]
    before = _server_cpu(backend.server.pid)
    load = _load(url, token, seconds, contender.encoding)
    load.server_cpu_us = (_server_cpu(backend.server.pid) - before) / max(load.requests, 1) * 1e6
    return load


def _raw_answer(url: str, headers: dict[str, str]) -> tuple[int, list[list[str]], bytes]:
    """Status, headers and body as they were on the wire (httpx would hand back the decoded
    body)."""
    with httpx.stream("GET", url, headers=headers) as response:
        response.raise_for_status()
        body = b"".join(response.iter_raw())
        return response.status_code, [[k, v] for k, v in response.headers.multi_items()], body


def _raw_size(url: str, headers: dict[str, str]) -> int:
    return len(_raw_answer(url, headers)[2])


def _with_search_path(url: str, schema: str) -> str:
    parts = urlsplit(url)
    option = "options=" + quote(f"-csearch_path={schema}", safe="")
    query = f"{parts.query}&{option}" if parts.query else option
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment))


@contextlib.contextmanager
def _postgres_schema() -> Iterator[str | None]:
    """A throwaway schema on the benchmark's PostgreSQL server (None when unreachable)."""
    admin = (
        os.environ.get("ENGRAM_BENCH_POSTGRES_URL")
        or os.environ.get("ENGRAM_TEST_POSTGRES_URL")
        or DEFAULT_POSTGRES
    )
    schema = f"bench_{secrets.token_hex(4)}"
    try:
        with psycopg.connect(admin, autocommit=True, connect_timeout=5) as conn:
            conn.execute(f'CREATE SCHEMA "{schema}"')
    except psycopg.Error as e:
        print(f"postgresql: skipped, not reachable ({str(e).strip().splitlines()[0]})")
        yield None
        return
    try:
        yield _with_search_path(admin, schema)
    finally:
        with psycopg.connect(admin, autocommit=True, connect_timeout=5) as conn:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


def _start(backend: Backend) -> None:
    backend.tokens = _seed(backend.url)
    backend.port = _free_port()
    backend.server = _serve(backend.url, backend.port)
    base = f"http://127.0.0.1:{backend.port}"
    for name, token in backend.tokens.items():
        auth = {"Authorization": f"Bearer {token}"}
        for encoding in ("identity", "gzip"):
            backend.sizes[f"{name}/{encoding}"] = _raw_size(
                f"{base}/v1/context", {**auth, "Accept-Encoding": encoding}
            )
        _load(f"{base}/v1/context", token, 2, "gzip")  # warm both workers' caches
    backend.loads = {c.label: [] for c in CONTENDERS}


def _capture(backend: Backend, folder: Path) -> None:
    """engram's /healthz answer and its 2,000-belief gzip export, as the bare app replays them
    (uvicorn adds its own ``date`` and ``server`` headers)."""
    base = f"http://127.0.0.1:{backend.port}"
    answers = {
        "small": ("/healthz", backend.tokens["demo"], "identity"),
        "big": ("/v1/context", backend.tokens["big"], "gzip"),
    }
    for name, (path, token, encoding) in answers.items():
        headers = {"Authorization": f"Bearer {token}", "Accept-Encoding": encoding}
        status, got, body = _raw_answer(base + path, headers)
        kept = [[k, v] for k, v in got if k.lower() not in ("date", "server")]
        (folder / f"{name}.body").write_bytes(body)
        meta = {"status": status, "headers": kept}
        (folder / f"{name}.json").write_text(dumps_text(meta))


def _serve_bare(folder: Path, template: Backend) -> Backend:
    bare = Backend("bare", "", tokens=dict(template.tokens), port=_free_port())
    env = {
        **os.environ,
        "ENGRAM_BENCH_BARE_DIR": str(folder),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    }
    bare.server = subprocess.Popen(
        [
            *(sys.executable, "-m", "uvicorn", "bench._bare_asgi:app", "--host", "127.0.0.1"),
            *("--port", str(bare.port), "--workers", str(WORKERS), "--loop", "uvloop"),
            *("--http", "httptools", "--log-level", "warning", "--no-access-log"),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    wait_until_up(f"http://127.0.0.1:{bare.port}/small", bare.server, 60, "the bare ASGI server")
    bare.sizes = {"big/gzip": len((folder / "big.body").read_bytes())}
    bare.loads = {c.label: [] for c in BARE_CONTENDERS}
    return bare


def _report_bare(bare: Backend, engram_ratios: dict[str, float]) -> None:
    print(
        f"\nceiling: engram's answers replayed by a bare ASGI app on the same uvicorn "
        f"({bare.sizes['big/gzip']} bytes gzipped for 2,000 beliefs)"
    )
    rows = {}
    for label, runs in bare.loads.items():
        rows[label] = (
            statistics.median(x.rps for x in runs),
            statistics.median(x.p99_ms for x in runs),
            statistics.median(x.server_cpu_us for x in runs),
            sum(x.non_200 for x in runs),
        )
    (base_rps, _, base_cpu, _), (big_rps, _, big_cpu, _) = rows.values()
    for label, (rps, p99, cpu, bad) in rows.items():
        print(
            f"  {label:<40}{rps:>9.0f} req/s  p99 {p99:6.2f} ms  {cpu:5.0f} us/req  non-200 {bad}"
        )
    ceiling = big_rps / base_rps
    ratios = [big.rps / small.rps for small, big in zip(*bare.loads.values(), strict=True)]
    print(
        f"  ceiling ratio {ceiling:.2f} (per round {', '.join(f'{r:.2f}' for r in ratios)}), "
        f"CPU ratio {base_cpu / big_cpu:.2f}"
    )
    for name, ratio in engram_ratios.items():
        print(
            f"  {name} 2,000 beliefs gzip: {ratio:.2f} x /healthz, "
            f"{ratio / ceiling:.2f} x the ceiling ratio"
        )


def _stop(backend: Backend) -> None:
    if backend.server is not None:
        backend.server.send_signal(signal.SIGINT)
        try:
            backend.server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            backend.server.kill()


def _report(backend: Backend) -> dict[str, float]:
    sizes = backend.sizes
    print(
        f"\n{backend.name}: export demo {sizes['demo/identity']} bytes "
        f"({sizes['demo/gzip']} gzipped), 2,000 beliefs {sizes['big/identity']} bytes "
        f"({sizes['big/gzip']} gzipped)"
    )
    print(
        f"{'endpoint':<38}{'req/s':>9}{'p50 ms':>8}{'p99 ms':>8}{'ratio':>7}"
        f"{'CPU us/req':>11}{'CPU ratio':>10}{'non-200':>9}"
    )
    medians: dict[str, tuple[float, float, float, float, int]] = {}
    for label, runs in backend.loads.items():
        medians[label] = (
            statistics.median(x.rps for x in runs),
            statistics.median(x.p50_ms for x in runs),
            statistics.median(x.p99_ms for x in runs),
            statistics.median(x.server_cpu_us for x in runs),
            sum(x.non_200 for x in runs),
        )
    baseline_rps, _, _, baseline_cpu, _ = medians[CONTENDERS[0].label]
    for label, (rps, p50, p99, cpu, failed) in medians.items():
        print(
            f"{label:<38}{rps:>9.0f}{p50:>8.2f}{p99:>8.2f}{rps / baseline_rps:>7.2f}"
            f"{cpu:>11.0f}{baseline_cpu / cpu:>10.2f}{failed:>9}"
        )
    baseline_runs = backend.loads[CONTENDERS[0].label]
    for label, runs in backend.loads.items():
        rounds_text = ", ".join(f"{x.rps:.0f}/s p99 {x.p99_ms:.1f} ms" for x in runs)
        print(f"  rounds, {label}: {rounds_text}")
        if runs is not baseline_runs:
            ratios = [x.rps / b.rps for x, b in zip(runs, baseline_runs, strict=True)]
            print(f"    ratio per round: {', '.join(f'{r:.2f}' for r in ratios)}")
    want_ratio, want_p99 = TARGETS[backend.name]
    figures: dict[str, float] = {}
    for index, contender in enumerate(CONTENDERS):
        rps, p50, p99, cpu, failed = medians[contender.label]
        key = f"{backend.name}_{index}"
        figures |= {f"{key}_rps": rps, f"{key}_p99_ms": p99, f"{key}_non_200": failed}
        if index == 0:
            continue
        ratio = rps / baseline_rps
        figures[f"{key}_ratio"] = ratio
        if failed:
            verdict = f"does not count: {failed} answers were not 200"
        elif ratio >= want_ratio and p99 < want_p99:
            verdict = "meets"
        else:
            verdict = "misses"
        bound = f", p99 < {want_p99:.0f} ms" if want_p99 < math.inf else ""
        print(
            f"{backend.name} {contender.label} / baseline: {ratio:.2f}, p99 {p99:.1f} ms "
            f"({verdict} the target: >= {want_ratio:.2f}{bound})"
        )
    return figures


def main(*, rounds: int = 3, seconds: int = SECONDS) -> dict[str, float]:
    generator = "wrk" if shutil.which("wrk") else "httpx/asyncio"
    load_before = os.getloadavg()[0]
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp, _postgres_schema() as postgres_url:
        backends = [Backend("sqlite", f"sqlite://{Path(tmp) / 'bench.db'}")]
        if postgres_url is not None:
            backends.append(Backend("postgresql", postgres_url))
        bare: Backend | None = None
        try:
            for backend in backends:
                _start(backend)
            answers = Path(tmp) / "answers"
            answers.mkdir()
            _capture(backends[0], answers)
            bare = _serve_bare(answers, backends[0])
            for _ in range(rounds):
                for contender in CONTENDERS:
                    for backend in backends:
                        backend.loads[contender.label].append(
                            _measured(backend, contender, seconds)
                        )
                for contender in BARE_CONTENDERS:
                    bare.loads[contender.label].append(_measured(bare, contender, seconds))
        finally:
            for backend in [*backends, *([bare] if bare else [])]:
                _stop(backend)
        print(
            f"engram provider, {WORKERS} uvicorn workers per backend, {CONNECTIONS} connections, "
            f"{generator}, {rounds} x {seconds} s rounds interleaved across both backends "
            "(medians); rate limits lifted"
        )
        # The load generator shares the cores with the servers (and with anything else
        # running): the load average says how busy the machine was.
        print(f"1-minute load average: {load_before:.2f} before, {os.getloadavg()[0]:.2f} after")
        for backend in backends:
            figures |= _report(backend)
        assert bare is not None
        big = f"_{len(CONTENDERS) - 1}_ratio"
        _report_bare(bare, {b.name: figures[b.name + big] for b in backends})
    return figures


if __name__ == "__main__":
    main()
