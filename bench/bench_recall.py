"""Memory engine at scale: record rate, database size, warm and cold recall, RSS, beside baselines.

Run: ``python -m bench recall [--n 10000,100000] [--cache DIR] [--rounds N] [--dense]``;
``python -m bench recall --n 1000000 --cache ~/engram-bench`` builds the 1M store once and
reuses it on later runs (a folder per size, with every baseline's files). Targets (issue 16):
warm recall p50 <= 2x bm25s at every size (<= 5 ms at 1M), p99 <= 20 ms at 1M; cold
``engram recall`` from the CLI <= 1.5x bm25s's cold memory-mapped load + query at 1M and
<= 150 ms at 100k; peak RSS of a cold CLI recall <= 400 MB and of a long-running engine
<= 600 MB at 1M; record >= 20k memories/s sustained at 1M; database <= 2x the plain table.

Every figure is printed beside its baseline measured in the same run, quiet and then with
one busy-looping process per core ("under load", as on a shared machine). Baselines, on the
same texts: ``bm25s`` (index built once and saved; warm ``retrieve`` k=10 with tokenisation,
cold = a fresh process loading it memory-mapped and answering one query), SQLite FTS5 (cold =
a fresh process, ``MATCH ... ORDER BY rank LIMIT 10``), and a plain SQLite table
``(id TEXT PRIMARY KEY, kind TEXT, text TEXT)`` for the insert rate and the size.

The corpus is synthetic but shaped like prose: sentences of 8-30 words drawn from a Zipf
distribution over a 30,000-word vocabulary. Queries are 3-6 words of a random memory.
``--dense`` (= ``--embedding minilm-l6-v2``) also embeds every memory with the bundled
all-MiniLM-L6-v2 (slow to build: about 100 memories per CPU second on this corpus) and measures
every figure with the dense stage on; ``--embedding minilm-l6-v2-static`` does so with the
static table distilled from it. The dense stage is built from the seat as the CLI builds it.
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import hashlib
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import bm25s
import numpy as np
from rich.console import Console
from rich.table import Table

import engram
from bench._recall_build import (
    BATCH,
    HASH_ONLY,
    build,
    corpus,
    db_bytes,
    read_queries,
    seat_embedder,
)
from engram.core.clock import FixedClock
from engram.memory import RecordInput, open_engine, parse_manifest, recall, record_many
from engram.store import open_store

__all__ = ["corpus", "main", "read_queries"]


def _record_at_scale(folder: Path, n: int, extra: int) -> dict[str, float]:
    """Record ``extra`` more memories into a copy of the built store (``n`` memories), batch by
    batch, interleaved with a plain SQLite insert of the same rows into a copy of the plain
    table: the rate *at* N, wall and process CPU (CPU does not depend on how busy the shared
    machine is; wall does)."""
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        work = Path(tmp)
        for name in ("engram.db", "plain.db"):
            db_bytes(folder / name)  # checkpointed, so the copy is the whole database
            shutil.copyfile(folder / name, work / name)
            (work / name).chmod(0o600)
        texts = [f"{t} extra{i}" for i, t in enumerate(corpus(extra, seed=n % 1000 + 1))]
        store = open_store(f"sqlite://{work / 'engram.db'}")
        spec = parse_manifest((folder / "ote.toml").read_text(), "bench-seat")
        engine = open_engine(store, spec, FixedClock(), embedder=seat_embedder(folder))
        plain = sqlite3.connect(work / "plain.db")
        items = [RecordInput(t, "fact", "M2" if i % 2 else "M4") for i, t in enumerate(texts)]
        wall = cpu = plain_wall = 0.0
        for at in range(0, extra, BATCH):
            t, c = time.perf_counter(), time.process_time()
            record_many(engine, items[at : at + BATCH], refresh=False)
            wall += time.perf_counter() - t
            cpu += time.process_time() - c
            rows = [
                (f"mem:{hashlib.sha256(x.encode()).hexdigest()}", "fact", x)
                for x in texts[at : at + BATCH]
            ]
            t = time.perf_counter()
            plain.executemany("INSERT INTO m VALUES (?, ?, ?)", rows)
            plain.commit()
            plain_wall += time.perf_counter() - t
        store.close()
        plain.close()
    return {
        "at_n_record_per_s": extra / wall,
        "at_n_record_cpu_per_s": extra / cpu,
        "at_n_plain_insert_per_s": extra / plain_wall,
    }


@contextlib.contextmanager
def load(active: bool) -> Iterator[None]:
    """One busy-looping process per core while the block runs (when ``active``)."""
    spinners = []
    if active:
        for _ in range(os.cpu_count() or 2):
            spinners.append(subprocess.Popen([sys.executable, "-c", "while True: pass"]))
    try:
        yield
    finally:
        for p in spinners:
            p.kill()
            p.wait()


def _pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q)) * 1e3


def _warm(folder: Path, n_queries: int, loaded: bool) -> dict[str, float]:
    qs = read_queries(folder)[:n_queries]
    embedder = seat_embedder(folder)
    store = open_store(f"sqlite://{folder / 'engram.db'}")
    engine = open_engine(
        store,
        parse_manifest((folder / "ote.toml").read_text(), "s"),
        FixedClock(),
        embedder=embedder,
    )
    baseline = _warm_baseline(folder)
    recall(engine, qs[0])
    baseline(qs[0])
    engram_t: list[float] = []
    bm25_t: list[float] = []
    engram_cpu: list[float] = []
    bm25_cpu: list[float] = []
    with load(loaded):
        for q in qs:  # interleaved, so background load hits both alike
            t, c = time.perf_counter(), time.thread_time()
            recall(engine, q, k=10)
            engram_t.append(time.perf_counter() - t)
            engram_cpu.append(time.thread_time() - c)
            t, c = time.perf_counter(), time.thread_time()
            baseline(q)
            bm25_t.append(time.perf_counter() - t)
            bm25_cpu.append(time.thread_time() - c)
    store.close()
    return {
        "engram_p50_ms": _pct(engram_t, 50),
        "engram_p99_ms": _pct(engram_t, 99),
        "bm25s_p50_ms": _pct(bm25_t, 50),
        "bm25s_p99_ms": _pct(bm25_t, 99),
        # CPU time of the calling thread: what a query costs whatever else the cores run.
        "engram_cpu_p50_ms": _pct(engram_cpu, 50),
        "bm25s_cpu_p50_ms": _pct(bm25_cpu, 50),
    }


def _warm_baseline(folder: Path) -> Callable[[str], object]:
    """One warm baseline query: bm25s memory-mapped, or FTS5 where bm25s could not be built
    (the ``bm25s`` figures then hold FTS5's, and the table says so)."""
    if (folder / "bm25s").is_dir():
        retriever = bm25s.BM25.load(str(folder / "bm25s"), mmap=True)
        return lambda q: retriever.retrieve(
            bm25s.tokenize([q], stopwords="en", show_progress=False), k=10, show_progress=False
        )
    fts = sqlite3.connect(folder / "fts5.db")
    return lambda q: fts.execute(
        "SELECT rowid FROM m WHERE m MATCH ? ORDER BY rank LIMIT 10",
        (" OR ".join('"' + w + '"' for w in q.split()),),
    ).fetchall()


BM25S_COLD = """
import sys, bm25s
r = bm25s.BM25.load(sys.argv[1], mmap=True)
tokens = bm25s.tokenize([sys.argv[2]], stopwords="en", show_progress=False)
r.retrieve(tokens, k=10, show_progress=False)
"""
FTS5_COLD = """
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
words = " OR ".join('"' + w + '"' for w in sys.argv[2].split())
c.execute("SELECT rowid FROM m WHERE m MATCH ? ORDER BY rank LIMIT 10", (words,)).fetchall()
"""
ENGINE_LOOP = """
import sys
from pathlib import Path
from engram.core.canonical import parse_strict
from engram.core.clock import FixedClock
from engram.memory import open_engine, parse_manifest, recall, remote_stages
from engram.store import open_store
folder = Path(sys.argv[1])
store = open_store(f"sqlite://{folder / 'engram.db'}")
spec = parse_manifest((folder / 'ote.toml').read_text(), 's')
engine = open_engine(store, spec, FixedClock(), embedder=remote_stages(spec, None)[0])
for q in parse_strict((folder / 'queries.json').read_bytes())[:int(sys.argv[2])]:
    recall(engine, q)
# VmHWM, not ru_maxrss: the latter keeps the forking parent's peak across exec.
print(Path("/proc/self/status").read_text().split("VmHWM:")[1].split()[0])
"""


def _timed(argv: list[str]) -> tuple[float, int]:
    """Wall time and peak RSS (KiB) of one fresh process.

    The peak comes from GNU time run as the parent (``%M``): a child forked straight from this
    big process would report this process's RSS as its own peak (Linux keeps the high-water
    mark across exec).
    """
    started = time.perf_counter()
    done = subprocess.run(
        ["/usr/bin/time", "-f", "%M", *argv], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{argv[:4]} failed: {done.stderr.decode()}")
    return elapsed, int(done.stderr.decode().strip().splitlines()[-1])


def _compile_engram() -> None:
    """Write engram's bytecode, as ``pip install`` does for a wheel and as a user's first run of
    an editable install does. With ``PYTHONDONTWRITEBYTECODE`` set (some CI machines set it) and
    no ``__pycache__``, every cold process would compile engram's ~45 modules from source (about
    55 ms here), while bm25s, installed from a wheel, starts from bytecode."""
    compileall.compile_dir(Path(engram.__file__).parent, quiet=1)


def _cold(folder: Path, rounds: int, loaded: bool) -> dict[str, float]:
    _compile_engram()
    qs = read_queries(folder)
    engram = str(Path(sys.executable).parent / "engram")
    db = f"sqlite://{folder / 'engram.db'}"
    times: dict[str, list[float]] = {"engram": [], "status": [], "bm25s": [], "fts5": []}
    rss: list[int] = []
    status_rss: list[int] = []
    seat = ["--database", db, "--ote", str(folder / "ote.toml")]
    has_bm25s = (folder / "bm25s").is_dir()
    with load(loaded):
        for i in range(rounds):
            q = qs[100 + i]
            t, peak = _timed([engram, "recall", q, "--json", *seat])
            times["engram"].append(t)
            rss.append(peak)
            t, peak = _timed([engram, "status", "--json", *seat])
            times["status"].append(t)
            status_rss.append(peak)
            if has_bm25s:
                times["bm25s"].append(
                    _timed([sys.executable, "-c", BM25S_COLD, str(folder / "bm25s"), q])[0]
                )
            times["fts5"].append(
                _timed([sys.executable, "-c", FTS5_COLD, str(folder / "fts5.db"), q])[0]
            )
    fts5_ms = statistics.median(times["fts5"]) * 1e3
    return {
        "cold_engram_ms": statistics.median(times["engram"]) * 1e3,
        "cold_status_ms": statistics.median(times["status"]) * 1e3,
        # FTS5 stands in where bm25s could not be built (the table names the baseline).
        "cold_bm25s_ms": statistics.median(times["bm25s"]) * 1e3 if has_bm25s else fts5_ms,
        "cold_fts5_ms": fts5_ms,
        "cold_engram_rss_mb": max(rss) / 1024,
        "cold_status_rss_mb": max(status_rss) / 1024,
    }


def _long_running_rss(folder: Path, n_queries: int) -> float:
    done = subprocess.run(
        [sys.executable, "-c", ENGINE_LOOP, str(folder), str(n_queries)],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(done.stdout.strip().splitlines()[-1]) / 1024


def folder_name(n: int, provider: str) -> str:
    """The cache folder of one size and seat (``n-N`` for the model-free seat, as before)."""
    suffix = {HASH_ONLY: "", "minilm-l6-v2": "-dense"}.get(provider, f"-{provider}")
    return f"n-{n}{suffix}"


def main(*, rounds: int = 7, argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(prog="python -m bench recall")
    parser.add_argument("--n", default="10000,100000", help="sizes, comma-separated")
    parser.add_argument("--cache", type=Path, default=None, help="keep the built stores here")
    parser.add_argument(
        "--embedding",
        default=HASH_ONLY,
        choices=(HASH_ONLY, "minilm-l6-v2-static", "minilm-l6-v2"),
        help="the seat's embedding_provider (default: none, the model-free seat)",
    )
    parser.add_argument("--dense", action="store_true", help="= --embedding minilm-l6-v2")
    parser.add_argument("--quiet-only", action="store_true", help="skip the under-load pass")
    parser.add_argument(
        "--record-extra",
        type=int,
        default=50_000,
        help="memories recorded into a copy of each built store, for the rate at N (0: skip)",
    )
    parser.add_argument("--no-cold", action="store_true", help="skip the cold CLI figures")
    parser.add_argument("--build-only", action="store_true", help="build the cache and stop")
    args = parser.parse_args(argv or [])
    provider = "minilm-l6-v2" if args.dense else args.embedding
    console = Console(width=None if Console().is_terminal else 120)
    sizes = [int(x.replace("_", "")) for x in args.n.split(",")]
    n_queries = max(100, rounds * 60)
    results = []
    with contextlib.ExitStack() as stack:
        root = args.cache or Path(stack.enter_context(tempfile.TemporaryDirectory()))
        for n in sizes:
            folder = root / folder_name(n, provider)
            figures: dict[str, Any] = dict(build(folder, n, provider, console))
            if args.build_only:
                results.append(figures)
                continue
            for loaded in (False, True) if not args.quiet_only else (False,):
                tag = "load" if loaded else "quiet"
                for key, value in _warm(folder, n_queries, loaded).items():
                    figures[f"{tag}_{key}"] = value
                if not args.no_cold:
                    for key, value in _cold(folder, max(3, rounds), loaded).items():
                        figures[f"{tag}_{key}"] = value
            figures["long_running_rss_mb"] = _long_running_rss(folder, n_queries)
            if args.record_extra > 0:
                figures |= _record_at_scale(folder, n, args.record_extra)
            results.append(figures)
            _print(console, figures)
    return results


def _print(console: Console, f: dict[str, Any]) -> None:
    n = int(f["n"])
    base = "bm25s" if f.get("bm25s", True) else "FTS5"
    table = Table(
        title=f"{n:,} memories ({f.get('embedding', 'minilm-l6-v2' if f['dense'] else HASH_ONLY)})",
        title_justify="left",
    )
    for column in ("figure", "engram", "baseline", "× baseline", "target"):
        table.add_column(column, justify="right" if column != "figure" else "left")
    for tag in ("quiet", "load"):
        if f"{tag}_engram_p50_ms" not in f:
            continue
        p50, b50 = f[f"{tag}_engram_p50_ms"], f[f"{tag}_bm25s_p50_ms"]
        table.add_row(
            f"warm p50 ({tag})",
            f"{p50:.2f} ms",
            f"{base} {b50:.2f} ms",
            f"{p50 / b50:.2f}",
            "≤ 2×" + (", ≤ 5 ms" if n >= 1_000_000 else ""),
        )
        if f"{tag}_engram_cpu_p50_ms" in f:
            c50, bc50 = f[f"{tag}_engram_cpu_p50_ms"], f[f"{tag}_bm25s_cpu_p50_ms"]
            table.add_row(
                f"warm CPU p50 ({tag})",
                f"{c50:.2f} ms",
                f"{base} {bc50:.2f} ms",
                f"{c50 / bc50:.2f}",
                "",
            )
        p99, b99 = f[f"{tag}_engram_p99_ms"], f[f"{tag}_bm25s_p99_ms"]
        table.add_row(
            f"warm p99 ({tag})",
            f"{p99:.2f} ms",
            f"{base} {b99:.2f} ms",
            f"{p99 / b99:.2f}",
            "≤ 20 ms" if n >= 1_000_000 else "",
        )
        if f"{tag}_cold_engram_ms" not in f:
            continue
        c, cb, cf = f[f"{tag}_cold_engram_ms"], f[f"{tag}_cold_bm25s_ms"], f[f"{tag}_cold_fts5_ms"]
        table.add_row(
            f"cold CLI recall ({tag})",
            f"{c:.0f} ms",
            f"{base} {cb:.0f} / FTS5 {cf:.0f} ms",
            f"{c / cb:.2f}",
            "≤ 1.5× bm25s" if n >= 1_000_000 else ("≤ 150 ms" if n == 100_000 else ""),
        )
        if f"{tag}_cold_status_ms" in f:
            st = f[f"{tag}_cold_status_ms"]
            table.add_row(
                f"cold engram status ({tag})",
                f"{st:.0f} ms, {f[f'{tag}_cold_status_rss_mb']:.0f} MB",
                f"{base} cold {cb:.0f} ms",
                f"{st / cb:.2f}",
                "",
            )
        table.add_row(
            f"cold CLI peak RSS ({tag})",
            f"{f[f'{tag}_cold_engram_rss_mb']:.0f} MB",
            "",
            "",
            "≤ 400 MB at 1M, ≤ 150 MB at 10M",
        )
    table.add_row(
        "long-running engine RSS", f"{f['long_running_rss_mb']:.0f} MB", "", "", "≤ 600 MB at 1M"
    )
    table.add_row(
        "record /s (whole run)",
        f"{f['record_per_s']:,.0f}",
        f"plain {f['plain_insert_per_s']:,.0f} / FTS5 {f['fts5_insert_per_s']:,.0f}",
        f"{f['record_per_s'] / f['plain_insert_per_s']:.2f}",
        "≥ 20k/s at 1M",
    )
    table.add_row(
        "record /s first / last 10 %",
        f"{f['record_first_batches_per_s']:,.0f} / {f['record_last_batches_per_s']:,.0f}",
        "",
        "",
        "no decay",
    )
    if "at_n_record_per_s" in f:
        table.add_row(
            f"record /s at {n:,} (wall / CPU)",
            f"{f['at_n_record_per_s']:,.0f} / {f['at_n_record_cpu_per_s']:,.0f}",
            f"plain {f['at_n_plain_insert_per_s']:,.0f}",
            f"{f['at_n_record_per_s'] / f['at_n_plain_insert_per_s']:.2f}",
            "≥ 20k/s at 1M",
        )
    table.add_row("index build /s", f"{f['index_build_per_s']:,.0f}", "", "", "")
    if "build_s" in f:
        table.add_row(
            "build (record + index + baselines)",
            f"{f['build_s'] / 60:,.1f} min",
            f"bm25s {f['bm25s_build_s'] / 60:,.1f} min" + ("" if f["bm25s"] else " (failed)"),
            "",
            "",
        )
    table.add_row(
        "database size",
        f"{f['db_bytes'] / 1e6:,.0f} MB",
        f"plain {f['plain_bytes'] / 1e6:,.0f} MB",
        f"{f['db_bytes'] / f['plain_bytes']:.2f}",
        "≤ 2×",
    )
    table.add_row("derived index files", f"{f['index_bytes'] / 1e6:,.0f} MB", "", "", "")
    console.print(table)


if __name__ == "__main__":
    main(argv=sys.argv[1:])
