"""The default seat's cost (issue 30, "Semantic by default"): the four target figures beside bm25s.

Run: ``python -m bench default-seat [--n 10000,100000] [--cache DIR] [--embedding P]``
(``--n 1000000`` builds a 1M store once into ``--cache``; ``--quiet-only`` skips the pass under
load). The seat is what ``engram init`` writes (``embedding_provider = "minilm-l6-v2"``, the
bundled model: about 100 memories per CPU second to build, so 100k takes a quarter of an hour);
``--embedding minilm-l6-v2-static`` measures the static table distilled from it instead. On
the recall bench's corpus and stores (``bench/bench_recall.py``, whose folders this shares),
each figure beside its baseline from the same run, quiet and with one busy-looping process per
core:

- warm ``recall`` p50 (wall and the calling thread's CPU) × bm25s's warm retrieve, interleaved
  query by query: target ≤ 3× at 10k, ≤ 1.5× at 1M;
- a cold ``engram recall`` process × a cold bm25s memory-mapped load + query: ≤ 1.5× at 100k;
- record rate at N, memories per CPU second (and per wall second), recording ``--record-extra``
  more memories into a copy of the store with the seat's dense stage: ≥ 1,000 at 100k;
- the cold ``engram recall``'s peak RSS: ≤ 300 MB.
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bench._recall_build import build as _build
from bench.bench_recall import _cold, _record_at_scale, _warm, folder_name

DEFAULT = "minilm-l6-v2"  # what `engram init` writes


def _targets(n: int) -> dict[str, float | None]:
    return {
        "warm": 3.0 if n <= 10_000 else 1.5 if n >= 1_000_000 else None,
        "cold": 1.5 if n == 100_000 else None,
        "record": 1_000.0 if n >= 100_000 else None,
        "rss": 300.0,
    }


def measure(folder: Path, n: int, *, rounds: int, loads: tuple[bool, ...], extra: int) -> Any:
    figures: dict[str, Any] = {"n": n}
    n_queries = max(100, rounds * 60)
    for loaded in loads:
        tag = "load" if loaded else "quiet"
        figures |= {f"{tag}_{k}": v for k, v in _warm(folder, n_queries, loaded).items()}
        figures |= {f"{tag}_{k}": v for k, v in _cold(folder, max(3, rounds), loaded).items()}
    if extra > 0:
        figures |= _record_at_scale(folder, n, extra)
    return figures


def _verdict(value: float, target: float | None, *, at_most: bool = True) -> str:
    if target is None:
        return "(no target at this size)"
    met = value <= target if at_most else value >= target
    return f"{'met' if met else 'MISSED'} ({'≤' if at_most else '≥'} {target:g})"


def report(console: Console, built: dict[str, Any], f: dict[str, Any], provider: str) -> None:
    n = int(f["n"])
    goal = _targets(n)
    table = Table(title=f"{n:,} memories, seat {provider}", title_justify="left")
    for column in ("figure", "engram", "bm25s (same run)", "× bm25s", "target (issue 30)"):
        table.add_column(column, justify="left" if column == "figure" else "right")
    for tag in ("quiet", "load"):
        if f"{tag}_engram_p50_ms" not in f:
            continue
        for what, e, b in (
            ("warm p50 wall", f[f"{tag}_engram_p50_ms"], f[f"{tag}_bm25s_p50_ms"]),
            ("warm p50 CPU", f[f"{tag}_engram_cpu_p50_ms"], f[f"{tag}_bm25s_cpu_p50_ms"]),
        ):
            table.add_row(
                f"{what} ({tag})", f"{e:.2f} ms", f"{b:.2f} ms", f"{e / b:.2f}",
                _verdict(e / b, goal["warm"]),
            )  # fmt: skip
        c, cb = f[f"{tag}_cold_engram_ms"], f[f"{tag}_cold_bm25s_ms"]
        table.add_row(
            f"cold CLI recall ({tag})", f"{c:.0f} ms", f"{cb:.0f} ms", f"{c / cb:.2f}",
            _verdict(c / cb, goal["cold"]),
        )  # fmt: skip
        rss = f[f"{tag}_cold_engram_rss_mb"]
        table.add_row(
            f"cold CLI peak RSS ({tag})", f"{rss:.0f} MB", "", "", _verdict(rss, goal["rss"])
        )
    if "at_n_record_cpu_per_s" in f:
        cpu, wall = f["at_n_record_cpu_per_s"], f["at_n_record_per_s"]
        table.add_row(
            f"record /s at {n:,}, CPU (wall)", f"{cpu:,.0f} ({wall:,.0f})",
            f"plain insert {f['at_n_plain_insert_per_s']:,.0f}", "",
            _verdict(cpu, goal["record"], at_most=False),
        )  # fmt: skip
    if "record_cpu_per_s" in built:
        table.add_row(
            "record /s building the store, CPU (wall)",
            f"{built['record_cpu_per_s']:,.0f} ({built['record_per_s']:,.0f})",
            f"plain insert {built['plain_insert_per_s']:,.0f}",
            "",
            "",
        )
    console.print(table)


def main(*, rounds: int = 7, argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(prog="python -m bench default-seat")
    parser.add_argument("--n", default="10000,100000", help="sizes, comma-separated")
    parser.add_argument("--cache", type=Path, default=None, help="keep the built stores here")
    parser.add_argument("--embedding", default=DEFAULT, choices=(DEFAULT, "minilm-l6-v2-static"))
    parser.add_argument("--quiet-only", action="store_true", help="skip the under-load pass")
    parser.add_argument("--record-extra", type=int, default=20_000, help="0: skip")
    args = parser.parse_args(argv or [])
    console = Console(width=None if Console().is_terminal else 120)
    loads = (False,) if args.quiet_only else (False, True)
    out = []
    with contextlib.ExitStack() as stack:
        root = args.cache or Path(stack.enter_context(tempfile.TemporaryDirectory()))
        for n in (int(x.replace("_", "")) for x in args.n.split(",")):
            folder = root / folder_name(n, args.embedding)
            built = _build(folder, n, args.embedding, console)
            figures = measure(folder, n, rounds=rounds, loads=loads, extra=args.record_extra)
            report(console, built, figures, args.embedding)
            out.append(built | figures)
    return out


if __name__ == "__main__":
    import sys

    main(argv=sys.argv[1:])
