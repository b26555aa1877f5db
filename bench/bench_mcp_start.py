"""``engram mcp`` (stdio) from start to its first ``initialize`` answer, beside ``python -c pass``.

Run: ``python -m bench mcp-start [--rounds N] [--memories N]``.

An agent host starts ``engram mcp`` at every session start. Each round starts the real command
on a seat whose store holds N memories (default 10,000), sends one ``initialize`` request on its
stdin, and reads the server's CPU time (user + system, from ``/proc/PID/stat``) the moment the
answer arrives; then ``tools/list`` and the end of input. The baselines, in the same round so
background load hits all alike: a fresh ``python -c pass``, and a fresh process importing the
MCP SDK's server and stdio transport (the floor of any server built on the SDK). Target
(issue 33): first answer <= 0.3 s of CPU.
"""

from __future__ import annotations

import argparse
import compileall
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

import engram
from bench.bench_cartridge_cli import SEAT, _texts
from engram.core.clock import FixedClock
from engram.core.jsonio import dumps_text
from engram.memory import RecordInput, open_engine, parse_manifest, record_many
from engram.store import open_store

TICKS = os.sysconf("SC_CLK_TCK")
SDK_FLOOR = "import mcp.server.mcpserver, mcp.server.stdio"
"""What any server built on the official SDK imports before it can answer (the SDK's floor)."""
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"},
    },
}


def _cpu_of(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def _first_answer(argv: list[str]) -> tuple[float, float]:
    """CPU seconds of the server when its initialize answer arrived, and its whole CPU."""
    with subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    ) as server:
        assert server.stdin is not None
        assert server.stdout is not None
        server.stdin.write((dumps_text(INITIALIZE) + "\n").encode())
        server.stdin.flush()
        answer = server.stdout.readline()
        at_answer = _cpu_of(server.pid)
        if b'"result"' not in answer:
            raise SystemExit(f"no initialize answer: {answer[:300]!r}")
        for message in (
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        ):
            server.stdin.write((dumps_text(message) + "\n").encode())
        server.stdin.flush()
        server.stdout.readline()
        total = _cpu_of(server.pid)
        server.stdin.close()
        server.wait(timeout=30)
    return at_answer, total


def _child_cpu(argv: list[str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(*, rounds: int = 7, argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench mcp-start")
    parser.add_argument("--memories", type=int, default=10_000)
    args = parser.parse_args(argv or [])
    compileall.compile_dir(Path(engram.__file__).parent, quiet=1)
    folder = Path(tempfile.mkdtemp(prefix="bench-mcp-start-"))
    (folder / "ote.toml").write_text(SEAT)
    store = open_store(f"sqlite://{folder / 'engram.db'}")
    engine = open_engine(store, parse_manifest(SEAT, "bench-seat"), FixedClock())
    items = [RecordInput(t, k, "M4") for t, k, _ in _texts(args.memories)]
    for at in range(0, len(items), 10_000):
        record_many(engine, items[at : at + 10_000], refresh=False)
    engine.index.sync(store)
    store.close()
    engram_cli = str(Path(sys.executable).parent / "engram")
    command = [engram_cli, "mcp", "--ote", str(folder / "ote.toml")]
    command += ["--database", f"sqlite://{folder / 'engram.db'}"]
    base, sdk, first, whole = [], [], [], []
    for _ in range(rounds):
        base.append(_child_cpu([sys.executable, "-c", "pass"]))
        sdk.append(_child_cpu([sys.executable, "-c", SDK_FLOOR]))
        at_answer, total = _first_answer(command)
        first.append(at_answer)
        whole.append(total)
    b, s, f, w = (statistics.median(x) for x in (base, sdk, first, whole))
    table = Table(
        title=f"engram mcp (stdio), {args.memories:,} memories, median CPU of {rounds} rounds "
        f"(load {os.getloadavg()[0]:.1f})",
        title_justify="left",
    )
    for column in ("process", "CPU", "x python -c pass", "x SDK import"):
        table.add_column(column, justify="left" if column == "process" else "right")
    table.add_row("python -c pass (baseline)", f"{b * 1e3:.0f} ms", "1.00", "")
    table.add_row(
        "import the MCP SDK's server (floor)", f"{s * 1e3:.0f} ms", f"{s / b:.2f}", "1.00"
    )
    for label, cpu in (("first initialize answer", f), ("after tools/list", w)):
        row = (f"{cpu * 1e3:.0f} ms", f"{cpu / b:.2f}", f"{cpu / s:.2f}")
        table.add_row(f"engram mcp: {label}", *row)
    Console(width=None if Console().is_terminal else 110).print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
