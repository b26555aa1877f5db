"""LoCoMo retrieval quality: recall@5/@10 of evidence turns, engram beside bm25s, per split.

Data: the public LoCoMo benchmark (Maharana et al., ACL 2024, ``locomo10.json`` in the
snap-research/locomo repository, CC BY-NC 4.0). It is not in this repository: download it and
pass ``--data PATH`` (a file with any subset of its ten conversations works).

Split (fixed, by conversation): the development half conv-26, conv-41, conv-43, conv-47,
conv-49 is the only data engram's constants were tuned on; the other five (conv-30, conv-42,
conv-44, conv-48, conv-50) are held out for evaluation. Each figure is printed per split.

Task: per conversation, record every turn as one memory (``[session date] Speaker: text``,
provenance ``{"author": speaker}``, thread = session); for each question of categories 1-4
with evidence, recall the top k for the question text; recall@k = share of the question's
evidence turns in the top k, averaged over questions. ``bm25s`` runs on the same texts in the
same run. ``--cli`` also runs the path a user takes: ``engram record --from`` (with
``thread``) and ``engram recall --batch``, in subprocesses, on a SQLite file.

Run: python bench/bench_locomo.py --data locomo10.json [--cli] [--no-dense] [--json]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, NoReturn

import bm25s

from engram.core.canonical import Json, parse_strict
from engram.core.clock import FixedClock
from engram.core.jsonio import dumps_text
from engram.errors import CanonicalJsonError
from engram.memory import RecordInput, Tuning, open_engine, parse_manifest, recall, record_many
from engram.memory.internals import fused_ranking
from engram.store import open_store

KS = (5, 10)
DEV = ("conv-26", "conv-41", "conv-43", "conv-47", "conv-49")
HELD_OUT = ("conv-30", "conv-42", "conv-44", "conv-48", "conv-50")
WHERE = (
    "the public LoCoMo data set: locomo10.json in the snap-research/locomo repository "
    "(CC BY-NC 4.0)"
)
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
[retrieval]
embedding_provider = "{provider}"
"""


def split_of(sample_id: str) -> str:
    return "dev" if sample_id in DEV else "held-out" if sample_id in HELD_OUT else "other"


def turns(sample: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """(dia_id, session key, speaker, memory text) for every turn of one conversation."""
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
            out.append((turn["dia_id"], key, turn["speaker"], text))
    return out


def evidence_ids(qa: dict[str, Any]) -> list[str]:
    ids: list[str] = []
    for item in qa.get("evidence", []):
        ids += re.findall(r"D\d+:\d+", str(item))
    return ids


def questions(sample: dict[str, Any]) -> list[tuple[str, list[str], int]]:
    out = []
    for qa in sample["qa"]:
        gold = evidence_ids(qa)
        if qa.get("category") in (1, 2, 3, 4) and gold:
            out.append((qa["question"], gold, int(qa["category"])))
    return out


def score(ranked: Sequence[str], gold: Sequence[str], k: int) -> float:
    top = set(ranked[:k])
    return sum(1 for g in set(gold) if g in top) / len(set(gold))


def _inputs(sample: dict[str, Any]) -> list[RecordInput]:
    return [
        RecordInput(
            text=t, kind="episode", thread=f"{sample['sample_id']}/{s}", provenance={"author": a}
        )
        for _, s, a, t in turns(sample)
    ]


Results = dict[str, dict[str, dict[str, list[float]]]]  # split -> system -> key -> scores


def _add(
    results: Results, split: str, name: str, ranked: list[str], gold: list[str], cat: int
) -> None:
    for k in KS:
        results[split][name][f"@{k}"].append(score(ranked, gold, k))
        results[split][name][f"@{k}/cat{cat}"].append(score(ranked, gold, k))


def _conversation(
    sample: dict[str, Any], tunings: dict[str, Tuning], dense: bool, results: Results
) -> None:
    """Record one conversation in process, then score every system on its questions."""
    ts = turns(sample)
    split = split_of(sample["sample_id"])
    store = open_store("memory://")
    embedder = None
    if dense:
        from engram.memory.internals import MiniLMEmbedder

        embedder = MiniLMEmbedder()
    provider = "minilm-l6-v2" if dense else "local-hash-128"
    spec = parse_manifest(SEAT.replace("{provider}", provider), "locomo-seat")
    engine = open_engine(store, spec, FixedClock(), embedder=embedder)
    recorded = record_many(engine, _inputs(sample))
    dia_of = {r.memory.id: ts[i][0] for i, r in enumerate(recorded)}
    view = engine.index.sync(store)
    dia_of_doc = {d: ts[d][0] for d in range(view.docs)}  # documents follow recording order
    bm = bm25s.BM25()
    bm.index(
        bm25s.tokenize([t for *_, t in ts], stopwords="en", show_progress=False),
        show_progress=False,
    )

    def bm25s_ranked(q: str) -> list[str]:
        docs, _ = bm.retrieve(
            bm25s.tokenize([q], stopwords="en", show_progress=False),
            k=min(10, len(ts)),
            show_progress=False,
        )
        return [ts[int(d)][0] for d in docs[0]]

    systems: dict[str, Callable[[str], list[str]]] = {"bm25s (baseline)": bm25s_ranked}

    def with_tuning(tuning: Tuning) -> Callable[[str], list[str]]:
        def ranked(q: str) -> list[str]:
            return [dia_of[h.memory.id] for h in recall(engine, q, k=10, tuning=tuning).hits]

        return ranked

    for name, tuning in tunings.items():
        systems[name] = with_tuning(tuning)

    def stage(use: tuple[str, ...]) -> Callable[[str], list[str]]:
        def ranked(q: str) -> list[str]:
            r = fused_ranking(
                engine, q, ["seat:locomo-implementer"], Tuning(w_author=0, w_entity=0), use=use
            )
            return [dia_of_doc[d] for d in r.order[:10]]

        return ranked

    systems["engram lexical only"] = stage(("lexical",))
    for q, gold, cat in questions(sample):
        for name, system in systems.items():
            _add(results, split, name, system(q), gold, cat)
    store.close()


def _cli_conversation(sample: dict[str, Any], dense: bool, results: Results, work: Path) -> None:
    """The user's path: record --from (with thread and author) and recall --batch."""
    ts = turns(sample)
    split = split_of(sample["sample_id"])
    folder = work / sample["sample_id"]
    folder.mkdir()
    seat = folder / "ote.toml"
    seat.write_text(SEAT.replace("{provider}", "minilm-l6-v2" if dense else "local-hash-128"))
    lines = [
        dumps_text(
            {
                "text": t,
                "kind": "episode",
                "thread": f"{sample['sample_id']}/{s}",
                "provenance": {"author": a},
            }
        )
        for _, s, a, t in ts
    ]
    (folder / "turns.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    qs = questions(sample)
    (folder / "queries.jsonl").write_text(
        "\n".join(dumps_text({"query": q, "k": 10}) for q, _, _ in qs) + "\n", encoding="utf-8"
    )
    env = {**os.environ, "ENGRAM_HOME": str(folder)}
    base = [str(Path(sys.executable).parent / "engram")]  # the console script of this venv
    db = ["--database", f"sqlite://{folder / 'engram.db'}", "--ote", str(seat)]
    subprocess.run(
        [*base, "record", "--from", str(folder / "turns.jsonl"), "--json", *db],
        check=True,
        env=env,
        stdout=subprocess.DEVNULL,
    )
    done = subprocess.run(
        [*base, "recall", "--batch", str(folder / "queries.jsonl"), *db],
        check=True,
        env=env,
        capture_output=True,
        text=True,
    )
    by_text = {t: dia for dia, _, _, t in ts}
    for line, (_, gold, cat) in zip(done.stdout.splitlines(), qs, strict=True):
        answer = parse_strict(line)
        hits = answer.get("hits") if isinstance(answer, dict) else None
        if not isinstance(hits, list):
            raise SystemExit(f"recall --batch wrote a line without hits: {line[:200]}")
        _add(
            results,
            split,
            "engram CLI (record --from, recall --batch)",
            [by_text[_hit_text(h)] for h in hits],
            gold,
            cat,
        )


def _hit_text(hit: Json) -> str:
    memory = hit.get("memory") if isinstance(hit, dict) else None
    text = memory.get("text") if isinstance(memory, dict) else None
    if not isinstance(text, str):
        raise SystemExit(f"recall --batch wrote a hit without memory.text: {hit!r}"[:300])
    return text


def _refuse(message: str) -> NoReturn:
    """One line on stderr and exit 2: what a user without the data needs to know."""
    print(message, file=sys.stderr)
    raise SystemExit(2)


def load(data: Path) -> list[dict[str, Any]]:
    """The samples, or one line saying where to get them and exit 2 (no traceback)."""
    try:
        samples = parse_strict(data.read_bytes())
    except OSError as e:
        _refuse(
            f"error: no LoCoMo data at {data} ({e.strerror}); download {WHERE}, pass --data PATH"
        )
    except CanonicalJsonError as e:
        _refuse(f"error: {data} is not the LoCoMo JSON file ({e.message}); get {WHERE}")
    if not isinstance(samples, list) or not all(isinstance(s, dict) and "qa" in s for s in samples):
        _refuse(f"error: {data} is not the LoCoMo JSON file (a list of samples); get {WHERE}")
    return [s for s in samples if isinstance(s, dict)]


def run(
    samples: list[dict[str, Any]], dense: bool, cli: bool, tunings: dict[str, Tuning]
) -> dict[str, Any]:
    results: Results = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for sample in samples:
        _conversation(sample, tunings, dense, results)
    if cli:
        with tempfile.TemporaryDirectory() as tmp:
            for sample in samples:
                _cli_conversation(sample, dense, results, Path(tmp))
    return {
        split: {
            name: {key: round(statistics.fmean(v), 4) for key, v in sorted(r.items())}
            for name, r in systems.items()
        }
        | {"questions": len(next(iter(systems.values()))["@5"])}
        for split, systems in sorted(results.items())
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--data", type=Path, default=None, help=f"LoCoMo JSON ({WHERE})")
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--cli", action="store_true", help="also run record --from / recall --batch"
    )
    parser.add_argument("--no-dense", action="store_true", help="without the bundled MiniLM model")
    parser.add_argument("--tune", action="store_true", help="try fusion weights (dev split only)")
    args = parser.parse_args()
    if args.data is None:
        _refuse(f"error: the LoCoMo data is not in this repository: download {WHERE}, --data PATH")
    samples = load(args.data)
    dense = not args.no_dense
    tunings = {"engram recall()": Tuning()}
    if args.tune:
        samples = [s for s in samples if split_of(s["sample_id"]) == "dev"]  # never the held-out
        tunings |= {
            f"a={a} e={e} d={d}": replace(Tuning(), w_author=a, w_entity=e, w_dense=d)
            for a in (0.0, 0.15, 0.3, 0.5)
            for e in (0.2,)
            for d in ((0.5, 1.0, 1.5) if dense else (1.0,))
        }
    started = time.perf_counter()
    report = run(samples, dense, args.cli, tunings)
    seconds = round(time.perf_counter() - started, 1)
    if args.json:
        print(dumps_text(report | {"seconds": seconds, "dense": dense}, indent=2))
        return
    print(
        f"dense stage: {'all-MiniLM-L6-v2 int8 (bundled, offline)' if dense else 'off'}; "
        f"{seconds} s"
    )
    for split, systems in report.items():
        base = systems["bm25s (baseline)"]
        print(f"\n{split}: {systems['questions']} questions (categories 1-4 with evidence)")
        print(f"{'system':44} {'R@5':>7} {'R@10':>7}  @10 × bm25s   @10 by category 1/2/3/4")
        for name, r in systems.items():
            if not isinstance(r, dict):
                continue
            cats = " / ".join(f"{r.get(f'@10/cat{c}', 0):.3f}" for c in (1, 2, 3, 4))
            print(
                f"{name:44} {r['@5']:7.3f} {r['@10']:7.3f}  {r['@10'] / base['@10']:8.2f}x   {cats}"
            )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
