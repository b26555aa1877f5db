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

import math
import shutil
import sys
from pathlib import Path

from rich.console import Console

from bench._processes import (
    Figures,
    add_figures,
    arguments,
    figures_table,
    fresh,
    prepare,
    print_table,
    timed,
)
from bench.bench_cartridge_cli import PLAIN_INSERT, _texts
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


def _run(folder: Path, parts: int, rounds: int) -> Figures:
    engram_cli = str(Path(sys.executable).parent / "engram")
    ote = str(folder / "ote.toml")
    work = folder / "work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    names = ("plain SQLite insert (baseline)", "engram memory export", "engram memory import")
    out: Figures = {name: {"cpu": [], "wall": [], "rss": []} for name in names}

    def note(name: str, runs: list[tuple[float, float, int]]) -> None:
        out[name]["cpu"].append(sum(r[0] for r in runs))
        out[name]["wall"].append(sum(r[1] for r in runs))
        out[name]["rss"].append(max(r[2] for r in runs) / 1024)

    for _ in range(rounds):
        plain = [sys.executable, "-c", PLAIN_INSERT, str(folder / "rows.json")]
        note(names[0], [timed([*plain, str(fresh(work / "plain.db"))])])
        files = [work / f"part{p}.json" for p in range(parts)]
        note(
            names[1],
            [
                timed(
                    [
                        *(engram_cli, "memory", "export", "--format", "pam", str(fresh(f))),
                        *("--database", f"sqlite://{folder / f'part{p}.db'}", "--ote", ote),
                    ]
                )
                for p, f in enumerate(files)
            ],
        )
        into = f"sqlite://{fresh(work / 'into.db')}"
        note(
            names[2],
            [
                timed(
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
    args = arguments("python -m bench pam", argv)
    console, cache = prepare(args.cache, "bench-pam-")
    table = figures_table("PAM export and import", rounds, ("memories", "documents"))
    for n in (int(x) for x in args.n.split(",")):
        folder = cache / f"n{n}"
        parts = _build(folder, n, console)
        figures = _run(folder, parts, rounds)
        size = figures.pop("file bytes")["cpu"][0]
        documents = f"{parts} ({size / 1e6:,.0f} MB)"
        add_figures(table, figures, (f"{n:,}", documents), baseline_leading=(f"{n:,}", "-"))
    print_table(console, table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
