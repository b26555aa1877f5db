"""Recall snapshot: every recall output of a fixed workload, to show a change left it identical.

Writes one JSON line per recall (memory ids, the scores' and components' float ``repr``, order,
stages, tokens used) or lexical-only ranking (documents and fused scores), on: the bench prose
corpus (``bench_recall.corpus``) at 3k memories in two rings (k 5/10/80, one-ring recalls,
lexical-only rankings) and, with ``--big``, at 60k (the common-terms rewrite and the path past
``SCAN_LIMIT``); a LoCoMo-like synthetic corpus (four two-speaker conversations, twelve dated
sessions, supersedes, forgets, ``as_of``, a second tuning, k 60); and, with ``--locomo PATH``,
the LoCoMo conversations in that file (``--dense``: two of them also with the bundled MiniLM).

Run before and after a change, then compare: ``python -m bench.recall_snapshot --out A.jsonl``,
change, ``... --out B.jsonl``, ``python -m bench.recall_snapshot --compare A.jsonl B.jsonl``
(outputs of queries with a time intent are counted apart: the time stage changes those).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import bench.bench_locomo as locomo_bench
from bench._recall_build import SEAT as BENCH_SEAT
from bench._recall_build import corpus, queries
from engram.core.canonical import Json
from engram.core.clock import FixedClock
from engram.core.jsonio import dumps_text
from engram.memory import (
    MemoryEngine,
    RecallResult,
    RecordInput,
    Tuning,
    open_engine,
    parse_manifest,
    recall,
    record_many,
    supersede,
    withdraw,
)
from engram.memory.internals import Ranking, fused_ranking
from engram.store import open_store

NAMES = ["Caroline", "Melanie", "Jon", "Gina", "Tim", "John", "Audrey", "Andrew"]
TOPICS = [
    "painting", "the adoption agency", "a pottery class", "hiking in the mountains",
    "my new job at the bakery", "the charity race", "moving to Leeds", "our dog Max",
    "the concert last night", "a book about dragons", "camping by the lake",
    "the support group", "a violin lesson", "the family reunion", "Paris trip",
]  # fmt: skip
VERBS = [
    "I loved", "We talked about", "I'm thinking about", "Yesterday I tried",
    "Guess what, I finished", "I can't stop thinking about", "My sister mentioned",
]  # fmt: skip


class Snapshot:
    def __init__(self, out: Any) -> None:
        self.out = out

    def recall(self, tag: str, r: RecallResult) -> None:
        hits = [
            [h.memory.id, repr(h.score), sorted((k, repr(v)) for k, v in h.components.items())]
            for h in r.hits
        ]
        line = {"tag": tag, "q": r.query, "stages": r.stages, "degraded": r.degraded}
        self.out.write(dumps_text(line | {"used": r.used_tokens, "hits": hits}) + "\n")

    def ranking(self, tag: str, query: str, ranking: Ranking) -> None:
        head = ranking.order[:50]
        fused = [repr(ranking.parts[d]["fused"]) for d in head]
        line = {"tag": tag, "q": query, "order": head, "fused": fused, "exact": ranking.exact}
        self.out.write(dumps_text(line) + "\n")


def prose(snap: Snapshot, n: int, n_queries: int, ks: tuple[int, ...], tag: str) -> None:
    texts = corpus(n)
    store = open_store("memory://")
    spec = parse_manifest(BENCH_SEAT.replace("{provider}", "local-hash-128"), "snapshot")
    engine = open_engine(store, spec, FixedClock())
    items = [
        RecordInput(
            text=t, kind="fact", ring="M2" if i % 3 else "M4", thread=f"t{i // 7}" if i % 2 else ""
        )
        for i, t in enumerate(texts)
    ]
    for start in range(0, len(items), 10_000):
        record_many(engine, items[start : start + 10_000])
    for q in queries(texts, n_queries):
        for k in ks:
            snap.recall(f"{tag}/k{k}", recall(engine, q, k=k))
        snap.recall(f"{tag}/M2", recall(engine, q, k=10, rings=["M2"]))
        lexical = fused_ranking(engine, q, ["repo:00000000000bench"], use=("lexical",))
        snap.ranking(f"{tag}/lex", q, lexical)
    store.close()


def locomo_like(snap: Snapshot, tag: str, seed: int = 3) -> None:
    rng = random.Random(seed)
    store = open_store("memory://")
    spec = parse_manifest(locomo_bench.SEAT.replace("{provider}", "local-hash-128"), "snapshot")
    engine = open_engine(store, spec, FixedClock())
    items = []
    start = datetime(2023, 1, 5, 14, 0, tzinfo=UTC)
    for conv in range(4):
        a, b = rng.sample(NAMES, 2)
        for session in range(12):
            when = start + timedelta(days=11 * session + conv)
            date = when.strftime("%-I:%M %p on %-d %B, %Y")
            for turn in range(rng.randint(10, 25)):
                speaker = a if turn % 2 == 0 else b
                text = (
                    f"[{date}] {speaker}: {rng.choice(VERBS)} {rng.choice(TOPICS)}, "
                    f"{rng.choice(TOPICS)} too."
                )
                occurred = when.isoformat().replace("+00:00", "Z")
                provenance: dict[str, Json] = {"author": speaker, "occurred_at": occurred}
                items.append(RecordInput(text, "episode", "M4", provenance, f"c{conv}/s{session}"))
    ids = [r.memory.id for r in record_many(engine, items)]
    for i in range(0, 60, 6):
        update = RecordInput(f"Update: {items[i].text} (corrected {i})", "episode", "M4")
        supersede(engine, ids[i], update, actor="snapshot")
    withdraw(engine, ids[100:110], "forgotten")
    qs = []
    for _ in range(150):
        qs.append(f"When did {rng.choice(NAMES)} talk about {rng.choice(TOPICS)}?")
        qs.append(f"What does {rng.choice(NAMES)} think of {rng.choice(TOPICS).split()[-1]}")
    qs += ["what is the latest news", "what did Caroline do last week", "first time painting"]
    qs += ["what was the job before", "Paris", "dog", "zzz nothing matches"]
    plain = Tuning(w_author=0, context=0, thread=0)
    later = datetime(2030, 1, 1, tzinfo=UTC)
    for q in qs:
        snap.recall(f"{tag}/k10", recall(engine, q, k=10))
        snap.recall(f"{tag}/k60", recall(engine, q, k=60))
        snap.recall(f"{tag}/asof", recall(engine, q, k=10, as_of=later))
        snap.recall(f"{tag}/tuned", recall(engine, q, k=10, tuning=plain))
    store.close()


def locomo(snap: Snapshot, data: Path, tag: str, dense: bool, only: tuple[str, ...] = ()) -> None:
    provider = "minilm-l6-v2" if dense else "local-hash-128"
    for sample in locomo_bench.load(data):
        if only and sample["sample_id"] not in only:
            continue
        store = open_store("memory://")
        embedder = None
        if dense:
            from engram.memory.internals import MiniLMEmbedder

            embedder = MiniLMEmbedder()
        spec = parse_manifest(locomo_bench.SEAT.replace("{provider}", provider), "snapshot")
        engine: MemoryEngine = open_engine(store, spec, FixedClock(), embedder=embedder)
        record_many(engine, locomo_bench.inputs(sample))
        where = f"{tag}/{sample['sample_id']}"
        for q, _, _ in locomo_bench.questions(sample):
            snap.recall(where, recall(engine, q, k=10))
            if not dense:
                snap.recall(f"{where}/k70", recall(engine, q, k=70))
                plain = Tuning(w_author=0, w_entity=0)
                ranking = fused_ranking(
                    engine, q, ["seat:locomo-implementer"], plain, use=("lexical",)
                )
                snap.ranking(f"{where}/lex", q, ranking)
        store.close()


def compare(before: Path, after: Path) -> int:
    """Count identical and changed outputs, apart for queries with a time intent."""
    from engram.memory.internals import time_intent

    now = FixedClock().now()
    a = [json.loads(line) for line in before.read_text().splitlines()]
    b = [json.loads(line) for line in after.read_text().splitlines()]
    if len(a) != len(b) or any(x["q"] != y["q"] for x, y in zip(a, b, strict=False)):
        print("the two snapshots are not of the same workload", file=sys.stderr)
        return 2
    counts = {(timed, same): 0 for timed in (False, True) for same in (False, True)}
    for x, y in zip(a, b, strict=True):
        counts[(time_intent(x["q"], now) is not None, x == y)] += 1
    print(
        f"no time intent: {counts[(False, True)]} identical, {counts[(False, False)]} changed; "
        f"with a time intent: {counts[(True, True)]} identical, {counts[(True, False)]} changed"
    )
    return 1 if counts[(False, False)] else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.recall_snapshot", description=__doc__)
    parser.add_argument("--out", type=Path, help="write the snapshot here (JSON lines)")
    parser.add_argument("--locomo", type=Path, help="also the LoCoMo conversations in this file")
    parser.add_argument("--dense", action="store_true", help="two LoCoMo ones with MiniLM too")
    parser.add_argument("--big", action="store_true", help="also the prose corpus at 60k")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    args = parser.parse_args(argv)
    if args.compare:
        return compare(*args.compare)
    if args.out is None:
        parser.error("--out or --compare is required")
    with args.out.open("w", encoding="utf-8") as out:
        snap = Snapshot(out)
        prose(snap, 3000, 120, (5, 10, 80), "prose3k")
        locomo_like(snap, "llike")
        if args.locomo is not None:
            locomo(snap, args.locomo, "locomo", False)
            if args.dense:
                locomo(snap, args.locomo, "locomo-dense", True, ("conv-26", "conv-41"))
        if args.big:
            prose(snap, 60_000, 100, (10,), "prose60k")
    return 0


if __name__ == "__main__":
    sys.exit(main())
