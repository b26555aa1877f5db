"""The cartridge commands a user waits on: ``engram cartridge export --ring``, ``verify`` and
``import`` of N memories, each a fresh process, beside a process doing a plain SQLite insert of
the same rows.

Run: ``python -m bench cartridge-cli [--rounds N] [--n 10000,100000] [--cache DIR]``.

Each size gets a seat whose M4 ring holds N memories (recorded once, cached under ``--cache``).
Per round, interleaved so background load hits all alike: the baseline (``python`` reading the
memories' rows from a JSON file and ``executemany`` into a fresh SQLite file, one commit), then
``engram cartridge export --ring M4`` (signed), ``engram cartridge verify`` of that file and
``engram cartridge import`` of it into a fresh database. Every process runs under GNU time, so
the figures are its CPU time (user + system: the machine is shared, wall time waits for a core)
and its peak RSS; wall time is printed beside them. Targets (issue 33): export and import <= 5x
the plain insert, verify <= 2x, peak RSS <= 200 MB at 100k.
"""

from __future__ import annotations

import argparse
import compileall
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.table import Table

import engram
from bench._seats import seat_manifest
from engram.core.clock import FixedClock
from engram.core.jsonio import dumps_text
from engram.memory import RecordInput, open_engine, parse_manifest, record_many
from engram.store import open_store

SEAT = seat_manifest(
    "seat:bench-cartridge",
    domain="bench",
    kinds=["fact", "decision", "procedure", "invariant"],
    mounts=[("M4", "seat:bench-cartridge", 100)],
    provider="local-hash-128",
)
KINDS = ("fact", "decision", "procedure", "invariant")
BATCH = 10_000

PLAIN_INSERT = """
import json, sqlite3, sys
rows = json.loads(open(sys.argv[1], encoding="utf-8").read())
conn = sqlite3.connect(sys.argv[2])
conn.execute("CREATE TABLE memory(id TEXT PRIMARY KEY, kind TEXT, text TEXT, entities TEXT)")
conn.executemany("INSERT INTO memory VALUES (?, ?, ?, ?)", rows)
conn.commit()
conn.close()
"""


def _texts(n: int) -> list[tuple[str, str, list[str]]]:
    return [
        (
            f"Memory {i}: service S{i % 97} retries {i % 7} times before paging on-call "
            f"(runbook {i % 1009}, owner team T{i % 31}).",
            KINDS[i % len(KINDS)],
            [f"S{i % 97}", f"T{i % 31}"],
        )
        for i in range(n)
    ]


def _build(folder: Path, n: int, console: Console) -> None:
    """The seat, its store with ``n`` memories in M4, the signing key and the baseline's rows."""
    if (folder / "built").is_file():
        console.print(f"[dim]{n:,}: reusing {folder}[/dim]")
        return
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "ote.toml").write_text(SEAT)
    store = open_store(f"sqlite://{folder / 'engram.db'}")
    engine = open_engine(store, parse_manifest(SEAT, "bench-seat"), FixedClock())
    items = _texts(n)
    for at in range(0, n, BATCH):
        chunk = [RecordInput(t, k, "M4") for t, k, _ in items[at : at + BATCH]]
        record_many(engine, chunk, refresh=False)
    engine.index.sync(store)
    store.close()
    rows = [[f"mem-{i:08d}", k, t, ",".join(e)] for i, (t, k, e) in enumerate(items)]
    (folder / "rows.json").write_text(dumps_text(rows))
    engram_cli = str(Path(sys.executable).parent / "engram")
    subprocess.run([engram_cli, "cartridge", "keygen", "-o", str(folder / "key")], check=True)
    (folder / "built").write_text("ok")


def _timed(argv: list[str]) -> tuple[float, float, int]:
    """CPU seconds (user + system), wall seconds and peak RSS (KiB) of one fresh process.

    GNU time is the parent so the peak is the child's own (Linux keeps the high-water mark of a
    forking parent across exec)."""
    done = subprocess.run(
        ["/usr/bin/time", "-f", "%U %S %e %M", *argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    last = done.stderr.decode().strip().splitlines()[-1]
    if done.returncode != 0:
        raise SystemExit(f"{argv[:4]} failed: {done.stderr.decode()[-2000:]}")
    user, system, wall, peak = last.split()
    return float(user) + float(system), float(wall), int(peak)


def _run(folder: Path, rounds: int) -> dict[str, dict[str, list[float]]]:
    engram_cli = str(Path(sys.executable).parent / "engram")
    db = f"sqlite://{folder / 'engram.db'}"
    ote = str(folder / "ote.toml")
    work = folder / "work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    acx = work / "out.acx"
    jobs: dict[str, Callable[[], list[str]]] = {
        "plain SQLite insert (baseline)": lambda: [
            sys.executable,
            "-c",
            PLAIN_INSERT,
            str(folder / "rows.json"),
            str(_fresh(work / "plain.db")),
        ],
        "engram cartridge export --ring": lambda: [
            engram_cli,
            *("cartridge", "export", "-o", str(_fresh(acx)), "--publisher", "io.github.bench"),
            *("--ring", "M4", "--sign-key", str(folder / "key"), "--database", db, "--ote", ote),
        ],
        "engram cartridge verify": lambda: [engram_cli, "cartridge", "verify", str(acx)],
        "engram cartridge import": lambda: [
            engram_cli,
            *("cartridge", "import", str(acx), "--accept", "portable"),
            *("--database", f"sqlite://{_fresh(work / 'into.db')}", "--ote", ote),
        ],
    }
    out: dict[str, dict[str, list[float]]] = {
        name: {"cpu": [], "wall": [], "rss": []} for name in jobs
    }
    for _ in range(rounds):
        for name, argv in jobs.items():
            cpu, wall, peak = _timed(argv())
            out[name]["cpu"].append(cpu)
            out[name]["wall"].append(wall)
            out[name]["rss"].append(peak / 1024)
    return out


def _fresh(path: Path) -> Path:
    for p in path.parent.glob(path.name + "*"):
        shutil.rmtree(p) if p.is_dir() else p.unlink()
    return path


def main(*, rounds: int = 5, argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench cartridge-cli")
    parser.add_argument("--n", default="10000,100000", help="comma-separated memory counts")
    parser.add_argument("--cache", type=Path, default=None, help="keep the built stores here")
    args = parser.parse_args(argv or [])
    console = Console(width=None if Console().is_terminal else 120)
    # Bytecode as an installed wheel has it (PYTHONDONTWRITEBYTECODE would recompile each run).
    compileall.compile_dir(Path(engram.__file__).parent, quiet=1)
    cache = args.cache or Path(tempfile.mkdtemp(prefix="bench-cartridge-cli-"))
    table = Table(
        title=f"cartridge commands, fresh processes, median of {rounds} rounds (load "
        f"{os.getloadavg()[0]:.1f} at start)",
        title_justify="left",
    )
    for column in ("memories", "process", "CPU", "x baseline CPU", "wall", "peak RSS"):
        table.add_column(column, justify="left" if column == "process" else "right")
    for n in (int(x) for x in args.n.split(",")):
        folder = cache / f"n{n}"
        _build(folder, n, console)
        figures = _run(folder, rounds)
        base = statistics.median(next(iter(figures.values()))["cpu"])
        for name, f in figures.items():
            cpu = statistics.median(f["cpu"])
            table.add_row(
                f"{n:,}",
                name,
                f"{cpu * 1e3:,.0f} ms",
                f"{cpu / base:.2f}",
                f"{statistics.median(f['wall']) * 1e3:,.0f} ms",
                f"{max(f['rss']):,.0f} MB",
            )
        table.add_section()
    console.print(table)
    console.print(f"[dim]load average at the end: {os.getloadavg()[0]:.1f}[/dim]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
