"""engram_recall and engram_status round trips at 10,000 memories, beside tools/list in the same
session, over stdio and over Streamable HTTP (issue 33: each ≤ 1.3× tools/list).

``python -m bench mcp`` (or ``python -m bench.bench_mcp [--memories N] [--calls N]``).

The bench records N synthetic memories into a fresh SQLite database, then starts the real engram
MCP server as subprocesses and drives them with the official MCP client:

- over stdio, ``engram.mcp.create_server`` over that seat and store plus one ``bench_noop`` tool
  that returns ``{}`` (the floor of a tool call); beside it a second such server with every
  tool on a worker thread, as the SDK runs synchronous tools (the baseline before issue 33);
- over Streamable HTTP, the provider app with ``/mcp`` as ``engram serve`` builds it, behind its
  bearer-token auth; calls act for the token's subject, whose view holds as many memories as
  the seat's.

Each round makes one call of each kind, so background load hits them alike; every figure is
printed beside ``tools/list`` measured in the same session, with the server's CPU per call, and
the same recall run in this process for the same query.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, get_default_environment, stdio_client
from rich.console import Console
from rich.table import Table

import engram
from engram.context import issue_token
from engram.context.internals import seed_demo
from engram.core.clock import SystemClock
from engram.mcp import SeatSource, create_server, load_seat
from engram.memory import (
    MemoryEngine,
    RecordInput,
    default_manifest_text,
    open_engine,
    recall,
    record_many,
    remote_stages,
    subject_view,
)
from engram.store import Store, open_store

WORDS = [
    "cache",
    "tenant",
    "shard",
    "index",
    "build",
    "deploy",
    "token",
    "schema",
    "migration",
    "queue",
    "worker",
    "retry",
    "timeout",
    "lock",
    "lease",
    "replica",
    "leader",
    "vote",
    "commit",
    "rollback",
    "snapshot",
    "backup",
    "restore",
    "key",
    "rotate",
    "expire",
    "signature",
    "verify",
    "digest",
    "export",
    "import",
    "cartridge",
    "skill",
    "ring",
    "seat",
    "graduate",
    "evidence",
    "oracle",
    "rubric",
    "sealed",
    "human",
    "lint",
    "typecheck",
    "pipeline",
    "stream",
    "batch",
    "window",
    "watermark",
    "offset",
    "partition",
]
KINDS = ("fact", "decision", "incident", "known_process", "procedure")


def _memories(n: int, rng: random.Random) -> list[RecordInput]:
    items = []
    for i in range(n):
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 24)))
        items.append(
            RecordInput(
                text=f"K{i % 100:02d} note {i}: {words}.",
                kind=KINDS[i % len(KINDS)],
                ring=("M2", "M3", "M4")[i % 3],
                thread=f"t{i // 20}",
            )
        )
    return items


def _queries(n: int, rng: random.Random) -> list[str]:
    return [" ".join(rng.sample(WORDS, 3)) for _ in range(n)]


def _seat_engine(store: Store, source: SeatSource, clock: SystemClock) -> MemoryEngine:
    """The engine with the retrieval stages the seat's manifest asks for, as ``engram mcp`` and
    ``engram serve`` open it (the default manifest's bundled MiniLM dense stage)."""
    spec = load_seat(source)
    embedder, reranker = remote_stages(spec, None)
    return open_engine(store, spec, clock, embedder=embedder, reranker=reranker)


def serve(database: str, manifest: str, pid_file: str, *, threaded: bool = False) -> None:
    """The server subprocess: the engram MCP server plus a no-op tool, over stdio; it writes
    its process id to ``pid_file`` (the bench reads its CPU time). ``threaded``: the baseline,
    every tool on a worker thread as the SDK runs synchronous tools (before issue 33)."""
    Path(pid_file).write_text(str(os.getpid()), encoding="utf-8")
    if threaded:
        from engram.mcp.internals import EngramTools

        EngramTools.local = lambda self: False  # type: ignore[method-assign]  # noqa: ARG005
    store = open_store(database)
    source = SeatSource("--ote", Path(manifest))
    engine = _seat_engine(store, source, SystemClock())
    server = create_server(engine, source)

    def bench_noop() -> dict[str, Any]:
        """Does nothing: the transport floor."""
        return {}

    server.add_tool(bench_noop, name="bench_noop")
    anyio.run(server.run_stdio_async)


def serve_http(database: str, manifest: str) -> None:
    """The server subprocess for Streamable HTTP: the provider app with ``/mcp`` as ``engram
    serve`` builds it (auth guard, rate limit raised for the bench), on a loopback port it
    prints as its first line."""
    import socket

    import uvicorn

    from engram.cli.internals import provider_app_with_mcp
    from engram.provider import ProviderConfig

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    config = ProviderConfig(
        public_url=url, rate_limit_per_minute=1_000_000, rate_limit_burst=1_000_000
    )
    store = open_store(database)
    app = provider_app_with_mcp(config, store, SystemClock(), SeatSource("--ote", Path(manifest)))
    print(url, flush=True)
    server = uvicorn.Server(
        uvicorn.Config(app, log_level="warning", lifespan="on", access_log=False)
    )
    server.run(sockets=[listener])


Call = tuple[str, str, dict[str, Any], int]  # (label, tool or "tools/list", arguments, server)


Samples = dict[str, list[tuple[float, float]]]  # label -> (wall seconds, server CPU seconds)


_THREAD_CPU: dict[tuple[int, str], int] = {}  # (pid, thread id) -> nanoseconds last read


def server_cpu(pid: int) -> float:
    """CPU seconds the process ``pid`` has run, every thread, to the nanosecond (Linux
    schedstat; the 10 ms ticks of /proc/PID/stat are too coarse for one call). A worker
    thread that has ended keeps the time it was last seen with."""
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):  # a worker thread may end between list and read
            ran = int((task / "schedstat").read_text().split()[0])
            _THREAD_CPU[pid, task.name] = ran
    return sum(ns for (owner, _), ns in _THREAD_CPU.items() if owner == pid) / 1e9


async def _time_calls(
    servers: list[tuple[ClientSession, int]], calls: list[list[Call]], engine: MemoryEngine
) -> Samples:
    """Run each round's calls in turn (warm-up rounds first), timing each by its label: its
    round trip, and the CPU the server (a session and its process id) spent on it (for
    ``recall() in process``: this process's own recall of the same query on ``engine``)."""
    samples: Samples = {}
    for round_index, round_calls in enumerate(calls):
        for label, name, arguments, target in round_calls:
            session, pid = servers[target]
            if name == IN_PROCESS:
                cpu = time.process_time()
                start = time.perf_counter()
                recall(engine, arguments["query"], arguments["k"])
                wall = time.perf_counter() - start
                if round_index >= WARM_UP:
                    samples.setdefault(label, []).append((wall, time.process_time() - cpu))
                continue
            cpu = server_cpu(pid)
            start = time.perf_counter()
            if name == "tools/list":
                await session.list_tools()
            else:
                result = await session.call_tool(name, arguments)
                assert not result.is_error, result.content
            wall = time.perf_counter() - start
            if round_index >= WARM_UP:
                samples.setdefault(label, []).append((wall, server_cpu(pid) - cpu))
    return samples


WARM_UP = 20  # rounds: index load, imports, caches
IN_PROCESS = "recall() in process"


BEFORE = " (worker thread: before)"


def _rounds(queries: list[str], *, stdio: bool) -> list[list[Call]]:
    """Per query, one of each call, so background load hits them alike; over stdio also the
    baseline server's recall and status (server 1)."""
    out = []
    for query in queries[:WARM_UP] + queries:
        ask = {"query": query, "k": 10}
        round_calls: list[Call] = [("tools/list", "tools/list", {}, 0)]
        if stdio:
            round_calls.append(("bench_noop", "bench_noop", {}, 0))
        round_calls.append(("engram_recall", "engram_recall", ask, 0))
        if stdio:
            round_calls.append(("engram_recall" + BEFORE, "engram_recall", ask, 1))
        round_calls.append((IN_PROCESS, IN_PROCESS, ask, 0))
        round_calls.append(("engram_status", "engram_status", {}, 0))
        if stdio:
            round_calls.append(("engram_status" + BEFORE, "engram_status", {}, 1))
        out.append(round_calls)
    return out


async def _drive_stdio(
    params: list[StdioServerParameters],
    queries: list[str],
    pid_files: list[Path],
    engine: MemoryEngine,
) -> Samples:
    async with (
        stdio_client(params[0]) as (read, write),
        ClientSession(read, write) as session,
        stdio_client(params[1]) as (before_read, before_write),
        ClientSession(before_read, before_write) as before,
    ):
        await session.initialize()
        await before.initialize()
        servers = [
            (session, int(pid_files[0].read_text())),
            (before, int(pid_files[1].read_text())),
        ]
        return await _time_calls(servers, _rounds(queries, stdio=True), engine)


async def _drive_http(
    url: str, token: str, queries: list[str], pid: int, engine: MemoryEngine
) -> Samples:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as client,
        streamable_http_client(f"{url}/mcp", http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        return await _time_calls([(session, pid)], _rounds(queries, stdio=False), engine)


def _over_http(
    database: str, manifest: Path, token: str, queries: list[str], engine: MemoryEngine
) -> Samples:
    with subprocess.Popen(
        [sys.executable, "-m", "bench.bench_mcp", "--serve-http", database, str(manifest)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=str(Path(__file__).resolve().parents[1]),
    ) as server:
        try:
            assert server.stdout is not None
            url = server.stdout.readline().strip()
            return anyio.run(_drive_http, url, token, queries, server.pid, engine)
        finally:
            server.terminate()
            server.wait(timeout=30)


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _table(title: str, samples: Samples) -> None:
    """Per call: round-trip p50 and p99, server CPU per call (mean), each beside tools/list;
    then what MCP adds to a recall (round trip minus the same recall in process)."""
    table = Table(title=title, title_justify="left")
    columns = ("call", "p50", "p99", "p50 × tools/list", "server CPU", "CPU × tools/list")
    for column in columns:
        table.add_column(column, justify="left" if column == "call" else "right")
    floor = statistics.median(wall for wall, _ in samples["tools/list"])
    cpu_floor = statistics.fmean(cpu for _, cpu in samples["tools/list"])
    for name, pairs in samples.items():
        walls = [wall for wall, _ in pairs]
        cpu = statistics.fmean(cpu for _, cpu in pairs)
        table.add_row(
            name,
            f"{_percentile(walls, 0.50) * 1e3:.2f} ms",
            f"{_percentile(walls, 0.99) * 1e3:.2f} ms",
            f"{statistics.median(walls) / floor:.2f}",
            f"{cpu * 1e3:.2f} ms",
            f"{cpu / cpu_floor:.2f}",
        )
    console = Console(width=None if Console().is_terminal else 110)
    console.print(table)
    over_tool = statistics.median(w for w, _ in samples["engram_recall"])
    over_local = statistics.median(w for w, _ in samples[IN_PROCESS])
    added = over_tool - over_local
    console.print(
        f"MCP adds to a recall: {added * 1e3:.2f} ms p50 = {added / floor:.2f} × tools/list "
        f"(round trip {over_tool * 1e3:.2f} ms, in process {over_local * 1e3:.2f} ms)"
    )


def run(memories: int, calls: int) -> None:
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        manifest = Path(tmp) / "ote.toml"
        # The model-free seat, as the MCP tests use: what MCP adds to a call is the question
        # here, and the bundled MiniLM model would make recording 10k memories take minutes.
        text = default_manifest_text().replace(
            'embedding_provider = "minilm-l6-v2"', 'embedding_provider = "local-hash-128"'
        )
        manifest.write_text(text, encoding="utf-8")
        database = f"sqlite:///{Path(tmp) / 'bench.db'}"
        store = open_store(database)
        clock = SystemClock()
        engine = _seat_engine(store, SeatSource("--ote", manifest), clock)
        started = time.perf_counter()
        record_many(engine, _memories(memories, rng))
        print(f"recorded {memories:,} memories in {time.perf_counter() - started:.1f} s")
        # Over HTTP the calls act for the token's subject: its own ring (a copy of the M4
        # memories) and the shared M2/M3 rings, as many memories as the seat sees over stdio.
        demo = seed_demo(store, clock)
        token = issue_token(store, clock, demo.subject.id, ["memory"])
        mine = subject_view(engine, demo.subject.id)
        own = [m for m in _memories(memories, random.Random(7)) if m.ring == "M4"]
        record_many(mine, own)  # M4 is the subject's own ring in its view
        queries = _queries(calls, rng)
        pid_files = [Path(tmp) / "server.pid", Path(tmp) / "before.pid"]
        params = [
            StdioServerParameters(
                command=sys.executable,
                args=["-m", "bench.bench_mcp", mode, database, str(manifest), str(pid_file)],
                cwd=str(Path(__file__).resolve().parents[1]),
                env=_server_environment(),
            )
            for mode, pid_file in zip(("--serve", "--serve-threaded"), pid_files, strict=True)
        ]
        stdio = anyio.run(_drive_stdio, params, queries, pid_files, engine)
        http = _over_http(database, manifest, token, queries, mine)
        store.close()
    note = f"{memories:,} memories, k=10, {calls} calls each, interleaved"
    _table(f"engram MCP over stdio: {note}", stdio)
    _table(f"engram MCP over Streamable HTTP (engram serve's /mcp): {note}", http)


def _server_environment() -> dict[str, str]:
    """The stdio servers' environment: the SDK's default one (it passes no PYTHONPATH) plus the
    folder of the engram this process imports, so the servers run the same code as the
    in-process rows and the HTTP server (in a worktree they ran the interpreter's installed
    engram, another checkout's, before)."""
    paths = [str(Path(engram.__file__).resolve().parents[1]), os.environ.get("PYTHONPATH", "")]
    return get_default_environment() | {"PYTHONPATH": os.pathsep.join(p for p in paths if p)}


def main(*, rounds: int = 7) -> None:
    """``python -m bench mcp``: 10,000 memories, 40 calls per round."""
    run(10_000, max(40 * rounds, 100))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--serve", nargs=3, metavar=("DATABASE", "MANIFEST", "PID_FILE"))
    parser.add_argument("--serve-threaded", nargs=3, metavar=("DATABASE", "MANIFEST", "PID_FILE"))
    parser.add_argument("--serve-http", nargs=2, metavar=("DATABASE", "MANIFEST"))
    args = parser.parse_args()
    if args.serve:
        serve(*args.serve)
    elif args.serve_threaded:
        serve(*args.serve_threaded, threaded=True)
    elif args.serve_http:
        serve_http(*args.serve_http)
    else:
        run(args.memories, args.calls)
