"""Record a conversation of N turns (default 1,000 and 10,000) beside record_many of its turns.

Run: ``python -m bench conversation [--n 1000 --n 10000] [--rounds N]``. Each round starts from
a fresh SQLite store. The baseline is ``record_many`` of the very memories a conversation
becomes (the same texts, kinds, threads and provenance, built beforehand): what a caller who
wrote one memory per turn itself would pay. ``record_conversation`` adds reading the messages,
the near-duplicate keys and the lookup of the thread's stored keys through the index
(docs/spec/memory-conversations.md); "re-send" records the same conversation again into the
store that already holds it (everything a duplicate: nothing written).
"""

from __future__ import annotations

import argparse
import functools
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench._harness import Case, Contender, report
from engram.core.canonical import JsonObject, parse_strict
from engram.core.clock import SystemClock
from engram.memory import (
    MemoryEngine,
    RecordInput,
    default_manifest_text,
    open_engine,
    parse_manifest,
    record_conversation,
    record_many,
)
from engram.store import open_store

THREAD = "bench-chat"


def _messages(n: int) -> list[dict[str, object]]:
    speakers = ("Ada", "Ben", "Chiara")
    out: list[dict[str, object]] = []
    for i in range(n):
        user = i % 2 == 0
        out.append(
            {
                "role": "user" if user else "assistant",
                **({"name": speakers[i % 3]} if user else {}),
                "content": f"Turn {i}: the deploy of service {i % 97} on day {i % 31} "
                f"needed {i % 7} retries before the {('tea', 'coffee', 'water')[i % 3]} break.",
                "timestamp": 1_773_480_600 + 30 * i,
            }
        )
    return out


def _engine(folder: Path) -> MemoryEngine:
    store = open_store(f"sqlite:///{folder / 'engram.db'}")
    text = default_manifest_text().replace(
        'embedding_provider = "minilm-l6-v2"', 'embedding_provider = "local-hash-128"'
    )
    return open_engine(store, parse_manifest(text, "<bench>"), SystemClock())


def _fresh(work: Path, run: Callable[[MemoryEngine], object], rounds: int) -> list[float]:
    out = []
    for r in range(rounds):
        folder = work / f"{time.monotonic_ns()}-{r}"
        folder.mkdir()
        engine = _engine(folder)
        start = time.perf_counter()
        run(engine)
        out.append(time.perf_counter() - start)
        engine.store.close()
        shutil.rmtree(folder, ignore_errors=True)
    return out


def main(*, rounds: int = 5, argv: list[str] | None = None) -> list[Case]:
    parser = argparse.ArgumentParser(prog="python -m bench conversation")
    parser.add_argument("--n", type=int, action="append", help="turns in the conversation")
    sizes = parser.parse_args(argv or []).n or [1_000, 10_000]
    work = Path(tempfile.mkdtemp(prefix="bench-conversation-"))
    cases = []
    try:
        for n in sizes:
            messages = _messages(n)
            # The memories the conversation becomes, built by the function itself once, so the
            # baseline writes exactly the same rows.
            probe_dir = work / f"probe-{n}"
            probe_dir.mkdir()
            probe = _engine(probe_dir)
            result = record_conversation(probe, messages, thread=THREAD)
            with probe.store.read() as tx:
                rows = tx.execute("SELECT text, kind, provenance, thread FROM memory_items")
            items = [
                RecordInput(r["text"], r["kind"], "M4", _provenance(r["provenance"]), r["thread"])
                for r in rows
            ]
            assert len(items) == result.counts()["recorded"] == n

            def resend(
                engine: MemoryEngine = probe, chat: list[dict[str, object]] = messages, n: int = n
            ) -> None:
                again = record_conversation(engine, chat, thread=THREAD)
                assert again.counts()["duplicate"] == n

            case = Case(
                f"{n:,} turns",
                [
                    Contender("record_many of the same memories", lambda: None),
                    Contender("record_conversation", lambda: None),
                    Contender("re-send (all duplicates)", resend),
                ],
                note="fresh SQLite store per round; local-hash-128 only",
            )
            by_hand = _fresh(work, functools.partial(_by_hand, items=items), rounds)
            chat = _fresh(work, functools.partial(_chat, messages=messages), rounds)
            case.samples = {
                case.contenders[0].name: by_hand,
                case.contenders[1].name: chat,
                case.contenders[2].name: [_once(resend) for _ in range(rounds)],
            }
            probe.store.close()
            cases.append(case)
        report("recording a conversation (SQLite)", cases)
        return cases
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _by_hand(engine: MemoryEngine, *, items: list[RecordInput]) -> object:
    return record_many(engine, items)


def _chat(engine: MemoryEngine, *, messages: list[dict[str, object]]) -> object:
    return record_conversation(engine, messages, thread=THREAD)


def _provenance(text: str) -> JsonObject:
    value = parse_strict(text)
    assert isinstance(value, dict)
    return value


def _once(run: Callable[[], object]) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
