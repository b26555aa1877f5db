"""Multilingual recall: recall@5 per language for engram and bm25s on text in 14 languages.

Data: ``bench/data/multilingual.json`` (written for this benchmark, CC0: see
``bench/data/SOURCE-multilingual.md``): in each of 14 languages (English, German, French,
Spanish, Vietnamese, Russian, Greek, Arabic, Hebrew, Hindi, Chinese, Japanese, Korean, Thai) ten
memories about one made-up family and ten questions that share words with their memory but not
its sentence: one written without the diacritics where the script has them, one with a typo,
and one mixing two scripts (a Latin brand name inside the language's own script). Ten memories
alone would leave a question few rivals, so each language also gets 90 distractors that share
words with its memories without repeating any: each is four spans of two words (three
characters in scripts without spaces) drawn from random memories of the language (seeded, so
every run has the same corpus). All 1,400 texts go into one store, so every question competes
with every language's memories and with texts holding some of its own memory's words.

Systems, in the same run: ``bm25s`` with its own tokenizer (Latin-minded: ``\\w\\w+`` words,
English stop words), ``bm25s`` over engram's words (the same analysis, bm25s's ranking),
engram's ``recall()`` on the default seat (no model) and its lexical stage alone, engram with the
analysis before issue 30 (``[a-z0-9]+`` words), and, where the packages are installed, engram
with a dictionary segmenter for Chinese (jieba) and Thai (pythainlp) instead of letter bigrams.
The analysis's speed is timed beside bm25s's tokenizer on the same texts.

Run: python -m bench multilingual [--json] [--no-model]; ``--cost`` times record and recall of
the model-free seat against the default (bundled MiniLM) seat on the same 1,400 texts.
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import re
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import bm25s

from engram.core.canonical import parse_strict
from engram.core.clock import FixedClock
from engram.core.jsonio import dumps_text
from engram.memory import (
    RecordInput,
    default_manifest_text,
    open_engine,
    parse_manifest,
    recall,
    record_many,
)
from engram.memory.internals import analysed_with, fold, fused_ranking, script_of, terms, words
from engram.store import open_store

DATA = Path(__file__).resolve().parent / "data" / "multilingual.json"
K = 5
DISTRACTORS = 90  # per language
Ranker = Callable[[str], list[int]]


def load(path: Path = DATA) -> dict[str, Any]:
    data = parse_strict(path.read_bytes())
    assert isinstance(data, dict)
    languages = data["languages"]
    assert isinstance(languages, dict)
    return languages


def _spans(text: str) -> list[str]:
    """Two-word spans of a text, or three-character spans where it has no spaces."""
    parts = text.split()
    if len(parts) > 2:
        return [" ".join(parts[i : i + 2]) for i in range(0, len(parts) - 1, 2)]
    return [text[i : i + 3] for i in range(0, len(text) - 2, 3)]


def corpus(languages: dict[str, Any]) -> tuple[list[str], list[tuple[str, str, int, str]]]:
    """All memories and distractors (one list) and the questions as (language, question, memory
    index, kind)."""
    rng = random.Random(30)
    texts: list[str] = []
    questions: list[tuple[str, str, int, str]] = []
    for code, lang in languages.items():
        base = len(texts)
        memories = lang["memories"]
        texts.extend(memories)
        questions.extend((code, q["q"], base + q["answer"], q["kind"]) for q in lang["questions"])
        spans = [_spans(m) for m in memories]
        glue = " " if " " in memories[0].strip() else ""
        for _ in range(DISTRACTORS):
            texts.append(glue.join(rng.choice(rng.choice(spans)) for _ in range(4)))
    return texts, questions


def _old_words(text: str) -> list[str]:
    """The analysis before issue 30: unaccented Latin letters and digits only."""
    return re.findall(r"[a-z0-9]+", text.lower().replace("'", ""))


def _dictionary_words() -> Callable[[str], list[str]] | None:
    """engram's analysis with jieba for runs of Han letters (Chinese) and pythainlp for Thai
    runs, letter bigrams elsewhere, if both packages are installed."""
    if not importlib.util.find_spec("jieba") or not importlib.util.find_spec("pythainlp"):
        return None
    import jieba  # type: ignore[import-not-found,unused-ignore]
    from pythainlp.tokenize import (  # type: ignore[import-not-found,unused-ignore]
        word_tokenize,
    )

    jieba.setLogLevel(60)

    def segmented(text: str) -> list[str]:
        out: list[str] = []
        for run in fold(text).split():
            if all("\u4e00" <= c <= "\u9fff" for c in run):  # Han only: Chinese
                out += [w for w in jieba.lcut(run) if w.strip()]
            elif script_of(run) == "THAI":
                out += [w for w in word_tokenize(run, engine="newmm") if w.strip()]
            else:
                out += words(run)
        return out

    return segmented


def engram_rankers(texts: Sequence[str], *, dense: bool = False) -> dict[str, Ranker]:
    """recall() on the default seat (no model, or the bundled MiniLM with ``dense``) and its
    lexical stage, over a fresh store."""
    manifest = default_manifest_text()
    embedder = None
    if dense:
        from engram.memory.internals import MiniLMEmbedder

        manifest = re.sub(
            r'embedding_provider = "[^"]*"', 'embedding_provider = "minilm-l6-v2"', manifest
        )
        embedder = MiniLMEmbedder()
    seat = parse_manifest(manifest, "multilingual-seat")
    engine = open_engine(open_store("memory://"), seat, FixedClock(), embedder=embedder)
    recorded = record_many(engine, [RecordInput(t, "fact", "M2") for t in texts])
    index_of = {r.memory.id: i for i, r in enumerate(recorded)}
    ring = [m.ring_id for m in seat.mounts]

    def recalled(q: str) -> list[int]:
        return [index_of[h.memory.id] for h in recall(engine, q, k=K).hits]

    def lexical(q: str) -> list[int]:
        order = fused_ranking(engine, q, ring, use=("lexical",)).order
        return [int(d) for d in order[:K]]

    return {"recall()": recalled, "lexical only": lexical}


def bm25s_ranker(texts: Sequence[str], analyse: Callable[[str], list[str]] | None) -> Ranker:
    """bm25s with its own tokenizer, or over the given words."""
    bm = bm25s.BM25()
    if analyse is None:
        bm.index(
            bm25s.tokenize(list(texts), stopwords="en", show_progress=False), show_progress=False
        )
    else:
        bm.index([analyse(t) or ["\x00"] for t in texts], show_progress=False)

    def ranked(q: str) -> list[int]:
        if analyse is None:
            tokens: Any = bm25s.tokenize([q], stopwords="en", show_progress=False)
            if not tokens.vocab:
                return []
        else:
            tokens = [analyse(q) or ["\x00"]]
        docs, scores = bm.retrieve(tokens, k=K, show_progress=False)
        return [int(d) for d, s in zip(docs[0], scores[0], strict=True) if s > 0]

    return ranked


def evaluate(
    systems: dict[str, Ranker], questions: Sequence[tuple[str, str, int, str]]
) -> dict[str, dict[str, float]]:
    """recall@K per system and language (a question scores 1 when its memory is in the top K)."""
    out: dict[str, dict[str, float]] = {}
    for name, ranked in systems.items():
        hits: dict[str, list[int]] = {}
        for lang, q, answer, _kind in questions:
            hits.setdefault(lang, []).append(int(answer in ranked(q)[:K]))
        out[name] = {lang: sum(v) / len(v) for lang, v in hits.items()}
    return out


def timed_analysis(
    texts: Sequence[str], rounds: int, dictionary: Callable[[str], list[str]] | None
) -> dict[str, float]:
    """Microseconds per text for engram's terms() and bm25s's tokenizer over every text, and for
    letter bigrams and the dictionary segmenters over the CJK and Thai texts, best of
    ``rounds``."""
    many = list(texts) * 20
    spaceless = [t for t in texts if script_of(t[0]) in ("CJK", "THAI")] * 20
    contenders: list[tuple[str, Callable[[], object], int]] = [
        ("bm25s.tokenize", lambda: bm25s.tokenize(many, stopwords="en", show_progress=False), 0),
        ("engram terms()", lambda: [terms(t) for t in many], 0),
        ("zh/ja/ko/th: letter bigrams", lambda: [words(t) for t in spaceless], 1),
    ]
    if dictionary is not None:
        contenders.append(
            ("zh/ja/ko/th: jieba + pythainlp", lambda: [dictionary(t) for t in spaceless], 1)
        )
    out: dict[str, float] = {}
    for name, fn, subset in contenders:
        best = float("inf")
        for _ in range(rounds):
            start = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - start)
        out[name] = best / len(spaceless if subset else many) * 1e6
    return out


def seat_cost(texts: Sequence[str], questions: Sequence[str]) -> dict[str, dict[str, float]]:
    """Record and recall cost of the model-free seat and of the default (MiniLM) seat on this
    corpus: records per CPU second and per wall second (the whole ``record_many``, index
    included) and recall p50 in ms (wall and CPU), in this process on one thread."""
    out: dict[str, dict[str, float]] = {}
    for name, dense in (("local-hash-128", False), ("minilm-l6-v2 (default seat)", True)):
        manifest = default_manifest_text()
        embedder = None
        if dense:
            from engram.memory.internals import MiniLMEmbedder

            embedder = MiniLMEmbedder()
            embedder.embed(["warm up"])  # the session's load is not a record's cost
        else:
            manifest = manifest.replace('"minilm-l6-v2"', '"local-hash-128"')
        seat = parse_manifest(manifest, "cost-seat")
        engine = open_engine(open_store("memory://"), seat, FixedClock(), embedder=embedder)
        wall, cpu = time.perf_counter(), time.process_time()
        record_many(engine, [RecordInput(t, "fact", "M2") for t in texts])
        engine.refresh_index()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        recall(engine, questions[0])
        walls, cpus = [], []
        for q in questions:
            w, c = time.perf_counter(), time.process_time()
            recall(engine, q, k=K)
            walls.append(time.perf_counter() - w)
            cpus.append(time.process_time() - c)
        out[name] = {
            "records_per_cpu_s": len(texts) / cpu,
            "records_per_wall_s": len(texts) / wall,
            "recall_p50_ms": statistics.median(walls) * 1e3,
            "recall_p50_cpu_ms": statistics.median(cpus) * 1e3,
        }
    return out


def main(*, rounds: int = 7, argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench multilingual", description=__doc__)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--no-model", action="store_true", help="skip the bundled MiniLM row")
    parser.add_argument(
        "--cost", action="store_true", help="only time record and recall, model-free vs default"
    )
    args = parser.parse_args(list(argv or []))
    languages = load()
    texts, questions = corpus(languages)
    if args.cost:
        cost = seat_cost(texts, [q for _, q, _, _ in questions])
        if args.json:
            print(dumps_text(cost))
            return 0
        for name, figures in cost.items():
            print(f"{name:30} " + ", ".join(f"{k} {v:,.1f}" for k, v in figures.items()))
        return 0
    systems: dict[str, Ranker] = {
        "bm25s (baseline)": bm25s_ranker(texts, None),
        "bm25s over engram's words": bm25s_ranker(texts, words),
    }
    systems |= {f"engram {n}": r for n, r in engram_rankers(texts).items()}
    if not args.no_model:
        systems["engram recall(), bundled MiniLM"] = engram_rankers(texts, dense=True)["recall()"]
    variants: dict[str, Callable[[str], list[str]] | None] = {
        "before issue 30 ([a-z0-9]+)": _old_words,
        "jieba + pythainlp for zh/th": _dictionary_words(),
    }
    results = evaluate(systems, questions)
    for label, variant in variants.items():
        if variant is None:
            continue
        with analysed_with(variant):
            results[f"engram recall(), {label}"] = evaluate(
                {"x": engram_rankers(texts)["recall()"]}, questions
            )["x"]
    speed = timed_analysis(texts, rounds, variants["jieba + pythainlp for zh/th"])
    if args.json:
        print(dumps_text({"recall_at_5": results, "us_per_text": speed}))
        return 0
    codes = list(languages)
    print(f"recall@{K} per language ({len(questions)} questions, {len(texts)} memories)")
    print(f"{'system':44}" + "".join(f"{c:>6}" for c in codes) + "   min/en")
    for name, per in results.items():
        en = per["en"] or 1.0
        worst = min(per.values()) / en
        print(f"{name:44}" + "".join(f"{per[c]:6.2f}" for c in codes) + f"   {worst:6.2f}")
    print("analysis speed (us per memory, best of rounds): ", end="")
    print(", ".join(f"{k} {v:.1f}" for k, v in speed.items()))
    if importlib.util.find_spec("jieba") is None:
        print("(jieba / pythainlp not installed: the dictionary-segmenter row is skipped)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
