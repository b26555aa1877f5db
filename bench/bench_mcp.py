"""engram_recall round trip over stdio at 10,000 memories, beside a no-op tool on the same server.

``python -m bench mcp`` (or ``python -m bench.bench_mcp [--memories N] [--calls N]``).

The bench records N synthetic memories into a fresh SQLite database, then starts the real engram
MCP server (``engram.mcp.create_server`` over that seat and store, plus one ``bench_noop`` tool
that returns ``{}``) as a subprocess speaking stdio, and drives it with the official MCP client.
Calls alternate no-op / recall so background load hits both alike. The no-op is the transport
floor (JSON-RPC framing, pipes, the SDK's dispatch and thread hop); recall minus floor is what
the engine and the result's size cost. The engine's own in-process recall time is printed beside
them for the same queries.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from rich.console import Console
from rich.table import Table

from bench._harness import Case, Contender, report
from engram.core.clock import SystemClock
from engram.mcp import SeatSource, create_server, load_seat
from engram.memory import RecordInput, default_manifest_text, open_engine, recall, record_many
from engram.store import open_store

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


def serve(database: str, manifest: str) -> None:
    """The server subprocess: the engram MCP server plus a no-op tool, over stdio."""
    store = open_store(database)
    source = SeatSource("--ote", Path(manifest))
    engine = open_engine(store, load_seat(source), SystemClock())
    server = create_server(engine, source)

    def bench_noop() -> dict[str, Any]:
        """Does nothing: the transport floor."""
        return {}

    server.add_tool(bench_noop, name="bench_noop")
    anyio.run(server.run_stdio_async)


async def _drive(params: StdioServerParameters, queries: list[str]) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {"noop": [], "recall": []}
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        for query in queries[:20]:  # warm-up: index load, imports, caches
            await session.call_tool("bench_noop", {})
            await session.call_tool("engram_recall", {"query": query})
        for query in queries:
            start = time.perf_counter()
            await session.call_tool("bench_noop", {})
            samples["noop"].append(time.perf_counter() - start)
            start = time.perf_counter()
            result = await session.call_tool("engram_recall", {"query": query, "k": 10})
            samples["recall"].append(time.perf_counter() - start)
            assert not result.is_error, result.content
    return samples


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def run(memories: int, calls: int) -> None:
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        manifest = Path(tmp) / "ote.toml"
        manifest.write_text(default_manifest_text(), encoding="utf-8")
        database = f"sqlite:///{Path(tmp) / 'bench.db'}"
        store = open_store(database)
        engine = open_engine(store, load_seat(SeatSource("--ote", manifest)), SystemClock())
        started = time.perf_counter()
        record_many(engine, _memories(memories, rng))
        print(f"recorded {memories:,} memories in {time.perf_counter() - started:.1f} s")
        queries = _queries(calls, rng)
        recall(engine, queries[0])
        direct = []
        for query in queries:
            start = time.perf_counter()
            recall(engine, query, 10)
            direct.append(time.perf_counter() - start)
        store.close()
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "bench.bench_mcp", "--serve", database, str(manifest)],
            cwd=str(Path(__file__).resolve().parents[1]),
        )
        samples = anyio.run(_drive, params, queries)
    case = Case(
        f"{memories:,} memories, k=10",
        [
            Contender("bench_noop over stdio (floor)", lambda: None),
            Contender("engram_recall over stdio", lambda: None),
            Contender("recall() in process", lambda: None),
        ],
        note=f"{calls} calls each, interleaved",
    )
    case.samples = {
        "bench_noop over stdio (floor)": samples["noop"],
        "engram_recall over stdio": samples["recall"],
        "recall() in process": direct,
    }
    report("engram MCP: round trip over stdio (best / median)", [case])
    table = Table(title="percentiles", title_justify="left")
    for column in ("contender", "p50", "p99", "p50 × floor"):
        table.add_column(column, justify="left" if column == "contender" else "right")
    floor = statistics.median(samples["noop"])
    for name, values in case.samples.items():
        p50, p99 = _percentile(values, 0.50), _percentile(values, 0.99)
        table.add_row(name, f"{p50 * 1e3:.2f} ms", f"{p99 * 1e3:.2f} ms", f"{p50 / floor:.2f}")
    Console().print(table)


def main(*, rounds: int = 7) -> None:
    """``python -m bench mcp``: 10,000 memories, 40 calls per round."""
    run(10_000, max(40 * rounds, 100))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--serve", nargs=2, metavar=("DATABASE", "MANIFEST"))
    args = parser.parse_args()
    if args.serve:
        serve(*args.serve)
    else:
        run(args.memories, args.calls)
