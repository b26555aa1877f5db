"""Memory recall latency (p50/p99) at 10,000 and 100,000 memories beside bm25s; record speed.

Run: ``python -m bench recall [--rounds N]`` (``--rounds`` scales the number of queries).
Targets (issue 6): at 100,000 memories recall p50 < 10 ms and p99 < 30 ms with the local stages
(BM25 + thread context + local-hash-128 + fusion + MMR + budget + reading the hits from the
store; no remote calls), and recording >= 2,000 memories/s in batch.

The corpus is synthetic but shaped like prose: sentences of 8-30 words drawn from a Zipf
distribution over a 30,000-word vocabulary (so common words have long posting lists, as in real
text). Queries are 3-6 words taken from a random memory. The baselines, in the same run on the
same texts: ``bm25s`` (index built once, ``retrieve`` k=10 per query, tokenisation included)
for recall, and a plain SQLite ``executemany`` of the same rows (no features, no vectors) for
recording. Engram runs on the embedded default backend (a SQLite file).
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

import bm25s
import numpy as np
from rich.console import Console
from rich.table import Table

from engram.core.clock import FixedClock
from engram.memory import RecordInput, open_engine, parse_manifest, recall, record_many
from engram.store import open_store

SEAT = """
schema_version = "engram.ote.v1"
[seat]
seat_id = "seat:bench-implementer"
archetype = "archetype:general"
keyspace_budget_tokens = 4000
[ontology]
domain = "bench"
allowed_kinds = ["fact"]
[[topology.mounts]]
ring = "M2"
ring_id = "repo:00000000000bench"
access = "read_write"
budget_share_pct = 60
[[topology.mounts]]
ring = "M4"
ring_id = "seat:bench-implementer"
access = "read_write"
budget_share_pct = 40
[epistemology]
credible_z = 1.96
graduation_lcb_threshold = 0.78
graduation_min_samples = 8.0
nomination_lcb_threshold = 0.85
nomination_min_verifications = 5
"""
SIZES = (10_000, 100_000)


def corpus(n: int, seed: int = 7) -> list[str]:
    rng = np.random.default_rng(seed)
    syllables = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "pa", "qu", "di", "fe"]
    vocab = sorted(
        {"".join(rng.choice(syllables, size=int(rng.integers(2, 5)))) for _ in range(40_000)}
    )[:30_000]
    weights = 1.0 / np.arange(1, len(vocab) + 1) ** 1.05
    weights /= weights.sum()
    lengths = rng.integers(8, 31, size=n)
    picks = rng.choice(len(vocab), size=int(lengths.sum()), p=weights)
    out, at = [], 0
    for length in lengths:
        out.append(" ".join(vocab[i] for i in picks[at : at + length]) + ".")
        at += length
    return out


def queries(texts: list[str], count: int, seed: int = 11) -> list[str]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        words = texts[int(rng.integers(len(texts)))].rstrip(".").split()
        k = int(rng.integers(3, 7))
        out.append(" ".join(rng.choice(words, size=min(k, len(words)), replace=False)))
    return out


def _plain_sqlite(path: Path, texts: list[str]) -> float:
    import sqlite3

    rows = [(f"m{i}", "fact", t) for i, t in enumerate(texts)]
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE m (id TEXT PRIMARY KEY, kind TEXT, text TEXT)")
    start = time.perf_counter()
    conn.executemany("INSERT INTO m VALUES (?, ?, ?)", rows)
    conn.commit()
    elapsed = time.perf_counter() - start
    conn.close()
    return elapsed


def _pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q)) * 1e3


def run_size(n: int, n_queries: int, console: Console) -> dict[str, float]:
    texts = corpus(n)
    qs = queries(texts, n_queries)
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(f"sqlite://{Path(tmp) / 'engram.db'}")
        engine = open_engine(store, parse_manifest(SEAT, "bench-seat"), FixedClock())
        items = [RecordInput(t, "fact", "M2" if i % 2 else "M4") for i, t in enumerate(texts)]
        start = time.perf_counter()
        for at in range(0, n, 10_000):  # batches of 10,000, one transaction each
            record_many(engine, items[at : at + 10_000])
        record_s = time.perf_counter() - start
        plain_s = _plain_sqlite(Path(tmp) / "plain.db", texts)
        start = time.perf_counter()
        engine.index.sync(store)
        load_s = time.perf_counter() - start

        retriever = bm25s.BM25()
        retriever.index(
            bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False
        )
        recall(engine, qs[0])  # warm caches on both sides
        engram_t: list[float] = []
        bm25_t: list[float] = []
        for q in qs:  # interleaved, so background load hits both alike
            start = time.perf_counter()
            recall(engine, q, k=10)
            engram_t.append(time.perf_counter() - start)
            start = time.perf_counter()
            retriever.retrieve(
                bm25s.tokenize([q], stopwords="en", show_progress=False), k=10, show_progress=False
            )
            bm25_t.append(time.perf_counter() - start)
        store.close()
    figures = {
        "memories": n,
        "record_per_s": n / record_s,
        "plain_sqlite_per_s": n / plain_s,
        "index_load_s": load_s,
        "engram_p50_ms": _pct(engram_t, 50),
        "engram_p99_ms": _pct(engram_t, 99),
        "bm25s_p50_ms": _pct(bm25_t, 50),
        "bm25s_p99_ms": _pct(bm25_t, 99),
        "engram_mean_ms": statistics.fmean(engram_t) * 1e3,
    }
    console.print(
        f"[dim]{n:,} memories: recorded in {record_s:.1f} s, index loaded from the "
        f"store in {load_s:.1f} s, {len(qs)} queries[/dim]"
    )
    return figures


def main(*, rounds: int = 7) -> list[dict[str, float]]:
    console = Console(width=None if Console().is_terminal else 110)
    n_queries = max(100, rounds * 60)
    results = [run_size(n, n_queries, console) for n in SIZES]
    table = Table(
        title="memory recall latency (local stages) and record throughput", title_justify="left"
    )
    for column in (
        "memories",
        "engram p50",
        "engram p99",
        "bm25s p50",
        "bm25s p99",
        "p50 × bm25s",
        "record/s",
        "plain sqlite/s",
    ):
        table.add_column(column, justify="right")
    for r in results:
        table.add_row(
            f"{int(r['memories']):,}",
            f"{r['engram_p50_ms']:.2f} ms",
            f"{r['engram_p99_ms']:.2f} ms",
            f"{r['bm25s_p50_ms']:.2f} ms",
            f"{r['bm25s_p99_ms']:.2f} ms",
            f"{r['engram_p50_ms'] / r['bm25s_p50_ms']:.2f}",
            f"{r['record_per_s']:,.0f}",
            f"{r['plain_sqlite_per_s']:,.0f}",
        )
    console.print(table)
    big = results[-1]
    verdicts = [
        ("recall p50 < 10 ms at 100k", big["engram_p50_ms"] < 10),
        ("recall p99 < 30 ms at 100k", big["engram_p99_ms"] < 30),
        ("record >= 2,000/s", min(r["record_per_s"] for r in results) >= 2000),
    ]
    for label, ok in verdicts:
        console.print(f"{'met' if ok else 'MISSED'}: {label}")
    return results


if __name__ == "__main__":
    main()
