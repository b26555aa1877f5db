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

import shutil
import subprocess
import sys
from collections.abc import Callable
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


def _run(folder: Path, rounds: int) -> Figures:
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
            str(fresh(work / "plain.db")),
        ],
        "engram cartridge export --ring": lambda: [
            engram_cli,
            *("cartridge", "export", "-o", str(fresh(acx)), "--publisher", "io.github.bench"),
            *("--ring", "M4", "--sign-key", str(folder / "key"), "--database", db, "--ote", ote),
        ],
        "engram cartridge verify": lambda: [engram_cli, "cartridge", "verify", str(acx)],
        "engram cartridge import": lambda: [
            engram_cli,
            *("cartridge", "import", str(acx), "--accept", "portable"),
            *("--database", f"sqlite://{fresh(work / 'into.db')}", "--ote", ote),
        ],
    }
    out: Figures = {name: {"cpu": [], "wall": [], "rss": []} for name in jobs}
    for _ in range(rounds):
        for name, argv in jobs.items():
            cpu, wall, peak = timed(argv())
            out[name]["cpu"].append(cpu)
            out[name]["wall"].append(wall)
            out[name]["rss"].append(peak / 1024)
    return out


def main(*, rounds: int = 5, argv: list[str] | None = None) -> int:
    args = arguments("python -m bench cartridge-cli", argv)
    console, cache = prepare(args.cache, "bench-cartridge-cli-")
    table = figures_table("cartridge commands", rounds, ("memories",))
    for n in (int(x) for x in args.n.split(",")):
        folder = cache / f"n{n}"
        _build(folder, n, console)
        add_figures(table, _run(folder, rounds), (f"{n:,}",))
    print_table(console, table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
