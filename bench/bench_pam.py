"""PAM export and import of N memories (``engram memory export|import --format pam``), each a
fresh process, beside a process doing a plain SQLite insert of the same rows.

Run: ``python -m bench pam [--rounds N] [--n 10000,100000] [--cache DIR]``.

A PAM file read a memory at a time (what ``engram memory import`` does) holds at most 256 MiB
and 1,000,000 memories, the values cap applying to each memory (docs/spec/limits.md §2): about
220,000 engram memories. N memories are moved as documents of at most :data:`PER_DOCUMENT`
(10k and 100k: one), N / documents recorded in each document's store (built once, cached under
``--cache``), each exported by its own process, and the files imported one after the other
into one fresh store. (Until issue 33's caps the whole file held at most 1,000,000 values, so
100k moved as four documents of 25,000.) A figure is the sum of the processes'
CPU time (user + system, from GNU time: the machine is shared, wall time waits for a core) and
the largest peak RSS of any of them; wall time is printed beside. Per round, interleaved so that
background load hits all alike: the baseline (``python`` reading the rows from a JSON file and
``executemany`` into a fresh SQLite file, one commit), the exports, the imports. Targets
(issue 33): export and import <= 5x the plain insert; RSS bounded by a streaming read (not
proportional to the file).
"""

from __future__ import annotations

import argparse
import compileall
import math
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

import engram
from bench.bench_cartridge_cli import PLAIN_INSERT, _fresh, _texts, _timed
from bench.bench_cartridge_cli import SEAT as CARTRIDGE_SEAT
from engram.core.clock import FixedClock
from engram.core.jsonio import dumps_text
from engram.memory import RecordInput, open_engine, parse_manifest, record_many
from engram.store import open_store

PER_DOCUMENT = 200_000  # ~234 MB as engram writes them: under the 256 MiB of one file
BATCH = 10_000
# The cartridge bench's seat under its own id: one manifest for both transfer benches.
SEAT = CARTRIDGE_SEAT.replace("seat:bench-cartridge", "seat:bench-pam")


def _build(folder: Path, n: int, console: Console) -> int:
    """The seat, one store per document with its share of the ``n`` memories, the baseline's
    rows; returns the number of documents."""
    parts = math.ceil(n / PER_DOCUMENT)
    if (folder / "built").is_file():
        console.print(f"[dim]{n:,}: reusing {folder}[/dim]")
        return parts
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "ote.toml").write_text(SEAT)
    items = _texts(n)
    share = math.ceil(n / parts)
    for part in range(parts):
        store = open_store(f"sqlite://{folder / f'part{part}.db'}")
        engine = open_engine(store, parse_manifest(SEAT, "bench-seat"), FixedClock())
        mine = items[part * share : (part + 1) * share]
        for at in range(0, len(mine), BATCH):
            chunk = [RecordInput(t, k, "M4") for t, k, _ in mine[at : at + BATCH]]
            record_many(engine, chunk, refresh=False)
        engine.index.sync(store)
        store.close()
    rows = [[f"mem-{i:08d}", k, t, ",".join(e)] for i, (t, k, e) in enumerate(items)]
    (folder / "rows.json").write_text(dumps_text(rows))
    (folder / "built").write_text("ok")
    return parts


def _run(folder: Path, parts: int, rounds: int) -> dict[str, dict[str, list[float]]]:
    engram_cli = str(Path(sys.executable).parent / "engram")
    ote = str(folder / "ote.toml")
    work = folder / "work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    names = ("plain SQLite insert (baseline)", "engram memory export", "engram memory import")
    out: dict[str, dict[str, list[float]]] = {
        name: {"cpu": [], "wall": [], "rss": []} for name in names
    }

    def note(name: str, runs: list[tuple[float, float, int]]) -> None:
        out[name]["cpu"].append(sum(r[0] for r in runs))
        out[name]["wall"].append(sum(r[1] for r in runs))
        out[name]["rss"].append(max(r[2] for r in runs) / 1024)

    for _ in range(rounds):
        plain = [sys.executable, "-c", PLAIN_INSERT, str(folder / "rows.json")]
        note(names[0], [_timed([*plain, str(_fresh(work / "plain.db"))])])
        files = [work / f"part{p}.json" for p in range(parts)]
        note(
            names[1],
            [
                _timed(
                    [
                        *(engram_cli, "memory", "export", "--format", "pam", str(_fresh(f))),
                        *("--database", f"sqlite://{folder / f'part{p}.db'}", "--ote", ote),
                    ]
                )
                for p, f in enumerate(files)
            ],
        )
        into = f"sqlite://{_fresh(work / 'into.db')}"
        note(
            names[2],
            [
                _timed(
                    [
                        *(engram_cli, "memory", "import", "--format", "pam", str(f)),
                        *("--database", into, "--ote", ote),
                    ]
                )
                for f in files
            ],
        )
    out["file bytes"] = {"cpu": [float(sum(f.stat().st_size for f in files))]}
    return out


def main(*, rounds: int = 3, argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench pam")
    parser.add_argument("--n", default="10000,100000", help="comma-separated memory counts")
    parser.add_argument("--cache", type=Path, default=None, help="keep the built stores here")
    args = parser.parse_args(argv or [])
    console = Console(width=None if Console().is_terminal else 120)
    # Bytecode as an installed wheel has it (PYTHONDONTWRITEBYTECODE would recompile each run).
    compileall.compile_dir(Path(engram.__file__).parent, quiet=1)
    cache = args.cache or Path(tempfile.mkdtemp(prefix="bench-pam-"))
    table = Table(
        title=f"PAM export and import, fresh processes, median of {rounds} rounds (load "
        f"{os.getloadavg()[0]:.1f} at start)",
        title_justify="left",
    )
    columns = ("memories", "documents", "process", "CPU", "x baseline CPU", "wall", "peak RSS")
    for column in columns:
        table.add_column(column, justify="left" if column == "process" else "right")
    for n in (int(x) for x in args.n.split(",")):
        folder = cache / f"n{n}"
        parts = _build(folder, n, console)
        figures = _run(folder, parts, rounds)
        size = figures.pop("file bytes")["cpu"][0]
        base = statistics.median(next(iter(figures.values()))["cpu"])
        for name, f in figures.items():
            cpu = statistics.median(f["cpu"])
            table.add_row(
                f"{n:,}",
                "-" if name.startswith("plain") else f"{parts} ({size / 1e6:,.0f} MB)",
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
