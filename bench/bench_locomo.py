"""LoCoMo retrieval quality: recall@5/@10 of evidence turns, engram beside bm25s, per split.

Data: the public LoCoMo benchmark (Maharana et al., ACL 2024, ``locomo10.json`` in the
snap-research/locomo repository, CC BY-NC 4.0). It is not in this repository: download it and
pass ``--data PATH`` (a file with any subset of its ten conversations works).

Split (fixed, by conversation): the development half conv-26, conv-41, conv-43, conv-47,
conv-49 is the only data engram's constants were tuned on; the other five (conv-30, conv-42,
conv-44, conv-48, conv-50) are held out for evaluation. Each figure is printed per split.
Folds (``--folds``): each development conversation is a fold; conv-26, conv-41 and conv-43 are
the tuning folds, conv-47 and conv-49 the check folds. ``--tune`` scores its configurations on
every fold and prints both groups: a change that helps the tuning folds and hurts the check
folds is not kept (bench/README.md).

Task: per conversation, record every turn as one memory (``[session date] Speaker: text``,
provenance ``{"author": speaker, "occurred_at": session time + turn index seconds}`` as
conversation ingestion records a turn's time (``--no-occurred``: without it), thread =
session); for each question of categories 1-4
with evidence, recall the top k for the question text; recall@k = share of the question's
evidence turns in the top k, averaged over questions. ``bm25s`` runs on the same texts in the
same run. ``--cli`` also runs the path a user takes: ``engram record --from`` (with
``thread``) and ``engram recall --batch``, in subprocesses, on a SQLite file.

Run: python bench/bench_locomo.py --data locomo10.json [--cli] [--no-dense | --embedding P]
[--folds] [--tune] [--no-occurred] [--json] (the dense stage is the default seat's,
minilm-l6-v2, unless --embedding minilm-l6-v2-static)
"""

from __future__ import annotations

import argparse
import contextlib
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
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, NoReturn

import bm25s

from engram.core.canonical import Json, parse_strict
from engram.core.clock import FixedClock
from engram.core.jsonio import dumps_text
from engram.errors import CanonicalJsonError
from engram.memory import (
    RecordInput,
    Tuning,
    open_engine,
    parse_manifest,
    recall,
    record_many,
    remote_stages,
)
from engram.memory.internals import fused_ranking
from engram.store import open_store

KS = (5, 10)
DEV = ("conv-26", "conv-41", "conv-43", "conv-47", "conv-49")
TUNING_FOLDS = ("conv-26", "conv-41", "conv-43")
CHECK_FOLDS = ("conv-47", "conv-49")
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


# The seat's dense stage unless --no-dense (``--embedding``): the bundled model (what
# ``engram init`` writes) or the static table distilled from it.
DENSE_PROVIDER = ["minilm-l6-v2"]


def split_of(sample_id: str) -> str:
    return "dev" if sample_id in DEV else "held-out" if sample_id in HELD_OUT else "other"


def fold_of(sample_id: str) -> str:
    role = "tuning" if sample_id in TUNING_FOLDS else "check" if sample_id in CHECK_FOLDS else ""
    return f"{role} folds" if role else ""


def session_times(sample: dict[str, Any]) -> dict[str, datetime]:
    """When each session happened ("1:56 pm on 8 May, 2023"), read as UTC."""
    conv = sample["conversation"]
    out = {}
    for key, value in conv.items():
        found = re.fullmatch(r"(session_\d+)_date_time", key)
        if found and isinstance(value, str):
            with contextlib.suppress(ValueError):
                moment = datetime.strptime(value.strip(), "%I:%M %p on %d %B, %Y")
                out[found[1]] = moment.replace(tzinfo=UTC)
    return out


def provenance(sample: dict[str, Any], occurred: bool) -> list[dict[str, Json]]:
    """Each turn's provenance: its speaker, and (``occurred``) when it happened (the session's
    time plus the turn's index in seconds, so turns keep their order)."""
    times = session_times(sample)
    out = []
    at: dict[str, int] = defaultdict(int)
    for _, key, speaker, _ in turns(sample):
        entry: dict[str, Json] = {"author": speaker}
        if occurred and key in times:
            moment = times[key] + timedelta(seconds=at[key])
            entry["occurred_at"] = moment.strftime("%Y-%m-%dT%H:%M:%SZ")
        at[key] += 1
        out.append(entry)
    return out


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


def inputs(sample: dict[str, Any], occurred: bool = True) -> list[RecordInput]:
    return [
        RecordInput(text=t, kind="episode", thread=f"{sample['sample_id']}/{s}", provenance=p)
        for (_, s, _, t), p in zip(turns(sample), provenance(sample, occurred), strict=True)
    ]


Results = dict[str, dict[str, dict[str, list[float]]]]  # split -> system -> key -> scores


def _add(
    results: Results, split: str, name: str, ranked: list[str], gold: list[str], cat: int
) -> None:
    for k in KS:
        results[split][name][f"@{k}"].append(score(ranked, gold, k))
        results[split][name][f"@{k}/cat{cat}"].append(score(ranked, gold, k))


def _groups(sample_id: str, folds: bool) -> list[str]:
    """Where a question's scores go: its split, and with ``folds`` its fold and fold group."""
    out = [split_of(sample_id)]
    if folds and fold_of(sample_id):
        out += [f"fold {sample_id}", fold_of(sample_id)]
    return out


def _conversation(
    sample: dict[str, Any],
    tunings: dict[str, Tuning],
    dense: bool,
    results: Results,
    occurred: bool = True,
    folds: bool = False,
) -> None:
    """Record one conversation in process, then score every system on its questions."""
    ts = turns(sample)
    groups = _groups(sample["sample_id"], folds)
    store = open_store("memory://")
    provider = DENSE_PROVIDER[0] if dense else "local-hash-128"
    spec = parse_manifest(SEAT.replace("{provider}", provider), "locomo-seat")
    embedder = remote_stages(spec, None)[0]  # as the CLI builds it
    engine = open_engine(store, spec, FixedClock(), embedder=embedder)
    recorded = record_many(engine, inputs(sample, occurred))
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
            ranked = system(q)
            for group in groups:
                _add(results, group, name, ranked, gold, cat)
    store.close()


def _cli_conversation(
    sample: dict[str, Any],
    dense: bool,
    results: Results,
    work: Path,
    occurred: bool = True,
    folds: bool = False,
) -> None:
    """The user's path: record --from (with thread, author and time) and recall --batch."""
    ts = turns(sample)
    groups = _groups(sample["sample_id"], folds)
    folder = work / sample["sample_id"]
    folder.mkdir()
    seat = folder / "ote.toml"
    seat.write_text(SEAT.replace("{provider}", DENSE_PROVIDER[0] if dense else "local-hash-128"))
    lines = [
        dumps_text(
            {
                "text": t,
                "kind": "episode",
                "thread": f"{sample['sample_id']}/{s}",
                "provenance": p,
            }
        )
        for (_, s, _, t), p in zip(ts, provenance(sample, occurred), strict=True)
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
        ranked = [by_text[_hit_text(h)] for h in hits]
        for group in groups:
            _add(results, group, "engram CLI (record --from, recall --batch)", ranked, gold, cat)


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
    samples: list[dict[str, Any]],
    dense: bool,
    cli: bool,
    tunings: dict[str, Tuning],
    occurred: bool = True,
    folds: bool = False,
) -> dict[str, Any]:
    results: Results = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for sample in samples:
        _conversation(sample, tunings, dense, results, occurred, folds)
    if cli:
        with tempfile.TemporaryDirectory() as tmp:
            for sample in samples:
                _cli_conversation(sample, dense, results, Path(tmp), occurred, folds)
    return {
        split: {
            name: {key: round(statistics.fmean(v), 4) for key, v in sorted(r.items())}
            for name, r in systems.items()
        }
        | {"questions": len(next(iter(systems.values()))["@5"])}
        for split, systems in sorted(results.items())
    }


# The time stage's weights tried with --tune (the first: the stage off).
TIME_GRID = [(0.0, 0.0, 0.0), (0.5, 0.25, 1.0), (0.5, 0.5, 1.0), (1.0, 0.25, 1.0), (1.0, 1.0, 1.0)]
TIME_GRID += [(2.0, 0.5, 1.0), (2.0, 0.25, 1.0), (3.0, 0.5, 1.0)]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--data", type=Path, default=None, help=f"LoCoMo JSON ({WHERE})")
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--cli", action="store_true", help="also run record --from / recall --batch"
    )
    parser.add_argument("--no-dense", action="store_true", help="without a dense stage")
    parser.add_argument(
        "--embedding",
        choices=("minilm-l6-v2", "minilm-l6-v2-static"),
        default="minilm-l6-v2",
        help="the dense stage: the default seat's model, or the static table distilled from it",
    )
    parser.add_argument(
        "--tune", action="store_true", help="try the time weights, reported on every fold"
    )
    parser.add_argument("--folds", action="store_true", help="also per fold and fold group")
    parser.add_argument(
        "--no-occurred", action="store_true", help="record turns without provenance occurred_at"
    )
    args = parser.parse_args()
    DENSE_PROVIDER[0] = args.embedding
    if args.data is None:
        _refuse(f"error: the LoCoMo data is not in this repository: download {WHERE}, --data PATH")
    samples = load(args.data)
    dense = not args.no_dense
    tunings = {"engram recall()": Tuning()}
    if args.tune:
        samples = [s for s in samples if split_of(s["sample_id"]) == "dev"]  # never the held-out
        # Chosen on the tuning folds only; the check folds say whether it holds.
        tunings |= {
            f"time window={w} order={o} superseded={p}": replace(
                Tuning(), w_time_window=w, w_time_order=o, w_superseded=p
            )
            for w, o, p in TIME_GRID
        }
    started = time.perf_counter()
    folds = args.folds or args.tune
    report = run(samples, dense, args.cli, tunings, not args.no_occurred, folds)
    seconds = round(time.perf_counter() - started, 1)
    if args.json:
        print(dumps_text(report | {"seconds": seconds, "dense": dense}, indent=2))
        return
    print(f"dense stage: {args.embedding if dense else 'off'}; {seconds} s")
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
