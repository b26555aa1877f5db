"""The candidate engines for the memory index, measured on the same corpus (issue 16).

Run after ``python -m bench recall --n N --cache DIR`` has built a size:
``python -m bench engines --cache DIR --n 100000``. Warm query time (median and p99 of 300
queries, k = 10 and 100) for: tantivy over engram's own terms (what engram's index uses),
SQLite FTS5 ``MATCH ... ORDER BY rank``, bm25s memory-mapped; and for vectors, an exact scan
of the local-hash-128 rows (einsum) beside usearch's HNSW (build time and query time). The
choice and these figures are in docs/spec/memory-retrieval.md "Choosing the engine".
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import bm25s
import numpy as np
import tantivy

from bench.bench_recall import read_queries
from engram.memory.internals import TEXT_SCHEMA, local_vector, matvec, terms


def _times(run: Callable[[str], object], qs: list[str]) -> tuple[float, float]:
    run(qs[0])
    ts = []
    for q in qs:
        t = time.perf_counter()
        run(q)
        ts.append(time.perf_counter() - t)
    return statistics.median(ts) * 1e3, float(np.percentile(ts, 99)) * 1e3


def main(*, rounds: int = 7, argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m bench engines")
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--no-hnsw", action="store_true", help="skip usearch (minutes at 1M)")
    args = parser.parse_args(argv or [])
    folder = args.cache / f"n-{args.n}"
    qs = read_queries(folder)[: max(100, rounds * 40)]
    gen = (folder / "engram.db.index" / "CURRENT").read_text()
    index = tantivy.Index(TEXT_SCHEMA, path=str(folder / "engram.db.index" / gen / "text"))
    searcher = index.searcher()
    fts = sqlite3.connect(folder / "fts5.db")
    bm = bm25s.BM25.load(str(folder / "bm25s"), mmap=True)
    out: dict[str, Any] = {}

    def tantivy_k(k: int) -> Callable[[str], object]:
        def run(q: str) -> object:
            query = tantivy.Query.boolean_query(
                [
                    (tantivy.Occur.Should, tantivy.Query.term_query(TEXT_SCHEMA, "terms", t))
                    for t in terms(q)
                ]
            )
            return searcher.search(query, k, count=False).hits

        return run

    def fts_k(k: int) -> Callable[[str], object]:
        def run(q: str) -> object:
            match = " OR ".join(f'"{w}"' for w in q.split())
            return fts.execute(
                "SELECT rowid FROM m WHERE m MATCH ? ORDER BY rank LIMIT ?", (match, k)
            ).fetchall()

        return run

    def bm_k(k: int) -> Callable[[str], object]:
        def run(q: str) -> object:
            return bm.retrieve(
                bm25s.tokenize([q], stopwords="en", show_progress=False), k=k, show_progress=False
            )

        return run

    for k in (10, 100):
        out[f"tantivy k={k}"] = _times(tantivy_k(k), qs)
        out[f"FTS5 k={k}"] = _times(fts_k(k), qs[: max(20, len(qs) // 10)])
        out[f"bm25s mmap k={k}"] = _times(bm_k(k), qs)
    local = np.fromfile(folder / "engram.db.index" / gen / "local.bin", dtype="<f4").reshape(
        -1, 128
    )
    out["exact local-128 scan"] = _times(
        lambda q: np.argpartition(-matvec(local, local_vector(q)), 10)[:10], qs
    )
    try:
        if args.no_hnsw:
            raise ImportError("skipped")
        from usearch.index import Index

        hnsw = Index(ndim=128, metric="ip", dtype="f32")
        t = time.perf_counter()
        hnsw.add(np.arange(local.shape[0]), local)
        out["usearch HNSW build (s)"] = (time.perf_counter() - t, 0.0)
        out["usearch HNSW k=10"] = _times(lambda q: hnsw.search(local_vector(q), 10), qs)
    except ImportError:
        out["usearch"] = "not installed or skipped"
    print(f"{args.n:,} memories, {len(qs)} queries (median ms, p99 ms):")
    for name, value in out.items():
        print(
            f"  {name:28} {value[0]:9.2f} {value[1]:9.2f}"
            if isinstance(value, tuple)
            else f"  {name}: {value}"
        )
    return out


if __name__ == "__main__":
    main()
