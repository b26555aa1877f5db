"""Erase and forget one memory in a store of N memories (default 100,000), beside a plain DELETE.

Run: ``python -m bench erase [--n 100000] [--rounds N]``. Each round erases (or forgets) a
different memory of one subject in a SQLite store that holds ``n`` memories of that subject and
its retrieval index, built once before the timing. The baseline is the least any erase costs:
``DELETE`` of one row by its key from a plain SQLite table of the same ``n`` texts, and a
commit. engram's erase does more, by design (docs/spec/memory-ownership.md "Erase"): a tombstone,
the counts, the history, ``secure_delete``'s zeroed pages, a WAL checkpoint that truncates the
log, and the index rebuilt without the memory (the old generation folder deleted); "index
rebuild" times that last step alone, which is most of it. Forget is a row in a table and a
history line.
"""

from __future__ import annotations

import argparse
import itertools
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench._harness import Case, Contender, report
from engram.core.clock import SystemClock
from engram.memory import (
    MemoryEngine,
    RecordInput,
    default_manifest_text,
    forget,
    open_engine,
    parse_manifest,
    record_many,
    subject_view,
)
from engram.memory.internals import rebuild_index
from engram.store import open_store
from engram.transfer import erase_memories

SUBJECT = "bench-subject"


def _texts(n: int) -> list[str]:
    return [
        f"Memory {i}: the user said service {i % 97} retries {i % 7} times before paging "
        f"on-call, and prefers {('tea', 'coffee', 'water')[i % 3]} in meeting {i}."
        for i in range(n)
    ]


def _plain(path: Path, texts: list[str]) -> Callable[[], object]:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE memory (id INTEGER PRIMARY KEY, text TEXT NOT NULL)")
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO memory VALUES (?, ?)", enumerate(texts))
    conn.execute("COMMIT")
    ids = itertools.count()

    def delete_one() -> None:
        conn.execute("DELETE FROM memory WHERE id = ?", (next(ids),))

    return delete_one


def _engine(folder: Path, texts: list[str]) -> tuple[MemoryEngine, list[str]]:
    store = open_store(f"sqlite:///{folder / 'engram.db'}")
    spec = parse_manifest(default_manifest_text(), "<bench>")
    engine = subject_view(open_engine(store, spec, SystemClock()), SUBJECT)
    ids: list[str] = []
    for start in range(0, len(texts), 10_000):
        batch = [RecordInput(text=t, kind="fact") for t in texts[start : start + 10_000]]
        ids += [r.memory.id for r in record_many(engine, batch, refresh=False)]
    engine.refresh_index()
    return engine, ids


def _timed(run: Callable[[], object], rounds: int) -> list[float]:
    out = []
    for _ in range(rounds):
        start = time.perf_counter()
        run()
        out.append(time.perf_counter() - start)
    return out


def main(*, rounds: int = 5, argv: list[str] | None = None) -> list[Case]:
    parser = argparse.ArgumentParser(prog="python -m bench erase")
    parser.add_argument("--n", type=int, default=100_000, help="memories in the store")
    n = parser.parse_args(argv or []).n
    work = Path(tempfile.mkdtemp(prefix="bench-erase-"))
    try:
        texts = _texts(n)
        built = time.perf_counter()
        engine, ids = _engine(work, texts)
        print(f"built a store of {n:,} memories in {time.perf_counter() - built:.1f} s")
        delete_one = _plain(work / "plain.db", texts)
        victims = iter(ids)
        forgotten = iter(reversed(ids))

        def erase_one() -> None:
            erase_memories(engine, [next(victims)], actor="bench")

        def forget_one() -> None:
            forget(engine, [next(forgotten)], actor="bench")

        def rebuild() -> None:
            rebuild_index(engine)

        case = Case(
            f"one memory of {n:,}",
            [
                Contender("plain SQLite DELETE + commit", delete_one),
                Contender("engram forget", forget_one),
                Contender("engram erase (whole)", erase_one),
                Contender("index rebuild alone", rebuild),
            ],
            note="erase = delete + tombstone + secure_delete + WAL truncate + index rebuild",
        )
        case.samples = {c.name: _timed(c.run, rounds) for c in case.contenders}
        report(f"erase and forget at {n:,} memories (SQLite)", [case])
        engine.store.close()
        return [case]
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
