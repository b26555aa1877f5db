"""Building the recall benchmark's stores: the synthetic corpus, engram's store and index, and
every baseline's files (a plain table, FTS5, bm25s), streamed so that 10M memories never sit in
memory at once. ``bench/bench_recall.py`` measures them.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console

from bench._seats import seat_manifest
from engram.core.canonical import parse_strict
from engram.core.clock import FixedClock
from engram.core.jsonio import dumps_text
from engram.memory import RecordInput, open_engine, parse_manifest, record_many, remote_stages
from engram.store import open_store

SEAT = seat_manifest(
    "seat:bench-implementer",
    domain="bench",
    kinds=["fact"],
    mounts=[("M2", "repo:00000000000bench", 60), ("M4", "seat:bench-implementer", 40)],
)
BATCH = 10_000


def read_queries(folder: Path) -> list[str]:
    """``queries.json`` of a cache folder, which :func:`_build` wrote: an array of strings."""
    value = parse_strict((folder / "queries.json").read_bytes())
    if not isinstance(value, list) or not all(isinstance(q, str) for q in value):
        raise SystemExit(f"{folder / 'queries.json'} is not an array of strings: rebuild the cache")
    return [str(q) for q in value]


def corpus(n: int, seed: int = 7) -> list[str]:
    return [text for chunk in corpus_chunks(n, seed) for text in chunk]


def corpus_chunks(n: int, seed: int = 7, chunk: int = BATCH) -> Iterator[list[str]]:
    """The corpus of ``n`` memories, ``chunk`` at a time: the same texts as one draw (numpy's
    ``choice`` with ``p`` takes one uniform double per pick, so drawing in pieces continues the
    same stream), without holding 10M strings at once."""
    rng = np.random.default_rng(seed)
    syllables = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "pa", "qu", "di", "fe"]
    vocab = sorted(
        {"".join(rng.choice(syllables, size=int(rng.integers(2, 5)))) for _ in range(40_000)}
    )[:30_000]
    weights = 1.0 / np.arange(1, len(vocab) + 1) ** 1.05
    weights /= weights.sum()
    lengths = rng.integers(8, 31, size=n)
    for start in range(0, n, chunk):
        part = lengths[start : start + chunk]
        picks = rng.choice(len(vocab), size=int(part.sum()), p=weights)
        out, at = [], 0
        for length in part:
            out.append(" ".join(vocab[i] for i in picks[at : at + length]) + ".")
            at += length
        yield out


def queries(texts: list[str], count: int, seed: int = 11) -> list[str]:
    return queries_from(len(texts), texts.__getitem__, count, seed)


def queries_from(n: int, text_at: Callable[[int], str], count: int, seed: int = 11) -> list[str]:
    """``count`` queries of 3-6 words of random memories; ``text_at(i)`` is the i-th memory's text
    (a list lookup, or a row of the plain table when the corpus is not in memory)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        words = text_at(int(rng.integers(n))).rstrip(".").split()
        k = int(rng.integers(3, 7))
        out.append(" ".join(rng.choice(words, size=min(k, len(words)), replace=False)))
    return out


HASH_ONLY = "local-hash-128"


def _seat(folder: Path, provider: str) -> Path:
    path = folder / "ote.toml"
    path.write_text(SEAT.replace("{provider}", provider))
    return path


def seat_embedder(folder: Path) -> Any:
    """The dense stage the folder's seat names, built as the CLI builds it (None: none)."""
    spec = parse_manifest((folder / "ote.toml").read_text(), "bench-seat")
    return remote_stages(spec, None)[0]


BM25S_BUILD = """
import sqlite3, sys, resource
import bm25s
from bm25s.tokenization import Tokenizer
cap = int(sys.argv[3])
resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
con = sqlite3.connect(sys.argv[1])
tokenizer = Tokenizer(stopwords="en")
ids = tokenizer.tokenize(
    (row[0] for row in con.execute("SELECT text FROM m ORDER BY rowid")),
    update_vocab=True, show_progress=False, length=int(sys.argv[4]),
)
retriever = bm25s.BM25()
retriever.index((ids, tokenizer.get_vocab_dict()), show_progress=False)
del ids
retriever.save(sys.argv[2], show_progress=False)
"""
# The bm25s build runs in a child capped at this much address space: at 10M its token lists and
# score arrays can outgrow a shared machine, and then FTS5 stands in as the lexical baseline.
BM25S_CAP_BYTES = int(os.environ.get("ENGRAM_BENCH_BM25S_CAP_GB", "14")) * 2**30


def build(folder: Path, n: int, provider: str, console: Console) -> dict[str, Any]:
    """Build (or reuse) the engram store, its index and every baseline's files for ``n``.

    Streams the corpus ``BATCH`` memories at a time (10M texts would be gigabytes as one list):
    the plain table first (its rowids are the corpus order, so the queries and the baselines
    read texts back from it), then engram, FTS5, and bm25s in a capped child process.
    """
    marker = folder / "built.json"
    if marker.is_file():
        value = parse_strict(marker.read_bytes())
        if not isinstance(value, dict):
            raise SystemExit(f"{marker} is not a JSON object: remove it to rebuild")
        built: dict[str, Any] = value
        console.print(f"[dim]{n:,}: reusing the stores in {folder}[/dim]")
        return built
    if (folder / "engram.db").exists():
        raise SystemExit(f"{folder} holds an unfinished build: remove the folder to rebuild")
    folder.mkdir(parents=True, exist_ok=True)
    began = time.perf_counter()
    plain = sqlite3.connect(folder / "plain.db")
    plain.execute("CREATE TABLE m (id TEXT PRIMARY KEY, kind TEXT, text TEXT)")
    plain_s, at = 0.0, 0
    for texts in corpus_chunks(n):
        rows = [(f"mem:{at + i:064x}", "fact", x) for i, x in enumerate(texts)]
        t = time.perf_counter()
        plain.executemany("INSERT INTO m VALUES (?, ?, ?)", rows)
        plain_s += time.perf_counter() - t
        at += len(texts)
    t = time.perf_counter()
    plain.commit()
    plain_s += time.perf_counter() - t

    def chunks() -> Iterator[list[str]]:
        for start in range(0, n, BATCH):
            yield [
                str(row[0])
                for row in plain.execute(
                    "SELECT text FROM m WHERE rowid > ? AND rowid <= ? ORDER BY rowid",
                    (start, start + BATCH),
                )
            ]

    spec = parse_manifest(_seat(folder, provider).read_text(), "bench-seat")
    embedder = seat_embedder(folder)  # the dense stage built as the CLI builds it
    store = open_store(f"sqlite://{folder / 'engram.db'}")
    engine = open_engine(store, spec, FixedClock(), embedder=embedder)
    rates: list[float] = []
    record_s, record_cpu_s, at = 0.0, 0.0, 0
    for texts in chunks():
        items = [
            RecordInput(x, "fact", "M2" if (at + i) % 2 else "M4") for i, x in enumerate(texts)
        ]
        t, cpu = time.perf_counter(), time.process_time()
        record_many(engine, items, refresh=False)
        took = time.perf_counter() - t
        record_cpu_s += time.process_time() - cpu
        record_s += took
        rates.append(len(items) / took)
        at += len(items)
        if at % (n // 10 or n) < BATCH:
            console.print(
                f"[dim]{n:,}: recorded {at:,} ({time.perf_counter() - began:,.0f} s)[/dim]"
            )
    t = time.perf_counter()
    engine.index.sync(store)
    index_s = time.perf_counter() - t
    store.close()
    console.print(f"[dim]{n:,}: index synced ({time.perf_counter() - began:,.0f} s)[/dim]")
    fts = sqlite3.connect(folder / "fts5.db")
    fts.execute("CREATE VIRTUAL TABLE m USING fts5(text)")
    fts_s = 0.0
    for texts in chunks():
        t = time.perf_counter()
        fts.executemany("INSERT INTO m (text) VALUES (?)", [(x,) for x in texts])
        fts_s += time.perf_counter() - t
    t = time.perf_counter()
    fts.commit()
    fts_s += time.perf_counter() - t
    fts.close()
    qs = queries_from(
        n,
        lambda i: str(plain.execute("SELECT text FROM m WHERE rowid = ?", (i + 1,)).fetchone()[0]),
        2000,
    )
    (folder / "queries.json").write_text(dumps_text(qs))
    plain.close()
    console.print(f"[dim]{n:,}: FTS5 built ({time.perf_counter() - began:,.0f} s)[/dim]")
    t = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            BM25S_BUILD,
            str(folder / "plain.db"),
            str(folder / "bm25s"),
            str(BM25S_CAP_BYTES),
            str(n),
        ],
        capture_output=True,
        text=True,
    )
    bm25s_s = time.perf_counter() - t
    if done.returncode != 0:
        console.print(
            f"[yellow]{n:,}: bm25s could not build within {BM25S_CAP_BYTES / 2**30:.0f} GB "
            f"({done.stderr.strip().splitlines()[-1:]}); FTS5 is the baseline[/yellow]"
        )
        shutil.rmtree(folder / "bm25s", ignore_errors=True)
    tail = rates[-max(1, len(rates) // 10) :]
    built = {
        "n": n,
        "record_per_s": n / record_s,
        "record_cpu_per_s": n / record_cpu_s,
        "record_first_batches_per_s": statistics.fmean(rates[: len(tail)]),
        "record_last_batches_per_s": statistics.fmean(tail),
        "index_build_per_s": n / index_s,
        "plain_insert_per_s": n / plain_s,
        "fts5_insert_per_s": n / fts_s,
        "db_bytes": db_bytes(folder / "engram.db"),
        "plain_bytes": db_bytes(folder / "plain.db"),
        "index_bytes": sum(
            p.stat().st_size for p in (folder / "engram.db.index").rglob("*") if p.is_file()
        ),
        "dense": provider != HASH_ONLY,
        "embedding": provider,
        "bm25s": done.returncode == 0,
        "bm25s_build_s": bm25s_s,
        "build_s": time.perf_counter() - began,
    }
    marker.write_text(dumps_text(built))
    return built


def db_bytes(path: Path) -> int:
    con = sqlite3.connect(path)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    return path.stat().st_size
