"""``record_conversation``: OpenAI chat messages in, one memory per turn (and facts) out.

Beyond engram.ote.v1 (issue 29, "conversations in, memories out"). Each user or assistant turn
becomes a memory of ``kind`` (``episode``) in ``ring``, in one thread, with its speaker, role and
time in its provenance (``occurred_at``: when it was said, RFC 3339 UTC, what time-aware recall
reads). A turn already stored (the same content id) or a near-duplicate of one (the same speaker
saying the same words in the same thread and ring, up to case, punctuation and spacing) is not
stored again, so re-sending a conversation adds nothing. With a :class:`FactExtractor` the new
turns also go to a chat model, and each fact it lists is recorded citing the turns it came from.
Everything is checked, and the model asked, before one transaction writes it all.
Rules and figures: docs/spec/memory-conversations.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from engram.core.canonical import JsonObject
from engram.core.clock import format_instant_precise
from engram.errors import InvalidRequest, RemoteError
from engram.memory import _repo
from engram.memory._engine import (
    MAX_TEXT,
    MemoryEngine,
    check_record,
    record_many,
    writable_mount,
)
from engram.memory._engine import memory_id as content_id
from engram.memory._extract import FactExtractor, windows
from engram.memory._models import RecordInput, RecordResult
from engram.memory._turns import Skipped, Turn, dedupe_key, default_thread, read_turns

MAX_THREAD = 200
SOURCE = "conversation"  # provenance "source" of every memory recorded from a conversation
RECORDED, DUPLICATE, NEAR_DUPLICATE, SKIPPED = "recorded", "duplicate", "near_duplicate", "skipped"


@dataclass(frozen=True)
class TurnOutcome:
    """What became of one message: recorded, a duplicate, a near-duplicate, or skipped."""

    index: int
    status: str
    memory_id: str | None = None  # the memory it is (recorded, duplicate) or matches
    speaker: str | None = None
    occurred_at: str | None = None
    reason: str = ""  # why a message was skipped

    def to_wire(self) -> JsonObject:
        out: JsonObject = {"index": self.index, "status": self.status}
        if self.memory_id is not None:
            out["memory_id"] = self.memory_id
        if self.speaker is not None:
            out["speaker"] = self.speaker
        if self.occurred_at is not None:
            out["occurred_at"] = self.occurred_at
        if self.reason:
            out["reason"] = self.reason
        return out


@dataclass(frozen=True)
class ConversationResult:
    thread: str
    ring_id: str
    messages: tuple[TurnOutcome, ...]  # one per message given, in order
    facts: tuple[RecordResult, ...]
    extraction: str  # "disabled" | "ok:<extractor>" | "degraded: <reason>"
    dense: str  # as for record ("stored:<engine>", "disabled", "degraded: ..."); "n/a": none new

    def count(self, status: str) -> int:
        return sum(m.status == status for m in self.messages)

    def counts(self) -> dict[str, int]:
        return {
            "messages": len(self.messages),
            RECORDED: self.count(RECORDED),
            DUPLICATE: self.count(DUPLICATE),
            NEAR_DUPLICATE: self.count(NEAR_DUPLICATE),
            SKIPPED: self.count(SKIPPED),
            "facts": sum(f.created for f in self.facts),
        }

    def to_wire(self) -> JsonObject:
        return {
            "thread": self.thread,
            "ring_id": self.ring_id,
            "counts": dict(self.counts()),
            "messages": [m.to_wire() for m in self.messages],
            "facts": [f.to_wire() for f in self.facts],
            "extraction": self.extraction,
            "dense": self.dense,
        }


def _stored_keys(engine: MemoryEngine, ring_id: str, thread: str) -> dict[str, str]:
    """The dedupe key of each memory this ring already holds in ``thread`` (key -> memory id),
    found through the shared index, which links each thread's memories (no full scan)."""
    with engine.lock:  # the index handle is shared by every thread using this engine
        view = engine.index.sync(engine.store)
    entry = view.meta.threads.get(thread)
    code = view.meta.rings.get(ring_id)
    if entry is None or code is None:
        return {}
    prev_of, ring_of, n_of = view.arrays["prev"], view.arrays["ring"], view.arrays["n"]
    ns: list[int] = []
    doc, steps = entry[2], 0
    while 0 <= doc < view.docs and steps <= view.docs:  # steps: a corrupt chain still ends
        if int(ring_of[doc]) == code:
            ns.append(int(n_of[doc]))
        doc, steps = int(prev_of[doc]), steps + 1
    keys: dict[str, str] = {}
    with engine.store.read() as tx:
        for _, memory in sorted(_repo.memories_by_n(tx, ns).items()):
            key = memory.provenance.get("dedupe_key")
            if isinstance(key, str):
                keys.setdefault(key, memory.id)  # the oldest stands for its near-duplicates
    return keys


def _turn_ids(
    engine: MemoryEngine, ring_id: str, kind: str, prepared: Sequence[tuple[Turn, RecordInput]]
) -> list[str]:
    """Each turn's content id, refused as recording it would refuse it (kind, length) but
    without the entity pass ``record_many`` makes again when it writes (half the cost)."""
    if prepared and kind not in engine.spec.ontology.allowed_kinds:
        check_record(engine, prepared[0][1], f"messages[{prepared[0][0].index}]")  # its error
    ids = []
    for turn, item in prepared:
        if len(item.text) > MAX_TEXT:
            raise InvalidRequest(
                f"messages[{turn.index}]: text is longer than {MAX_TEXT} characters"
            )
        ids.append(content_id(ring_id, kind, item.text))
    return ids


def _turn_input(turn: Turn, kind: str, ring: str, thread: str, now: str) -> RecordInput:
    said = turn.occurred_at
    provenance: JsonObject = {
        "source": SOURCE,
        "speaker": turn.speaker,
        "role": turn.role,
        "occurred_at": now if said is None else format_instant_precise(said),
        "time_source": "recorded" if turn.occurred_at is None else "message",
        "turn": turn.index,
        "dedupe_key": dedupe_key(turn.speaker, turn.content),
    }
    if turn.message_id is not None:
        provenance["message_id"] = turn.message_id[:200]
    return RecordInput(text=turn.text(), kind=kind, ring=ring, provenance=provenance, thread=thread)


def _facts(
    extractor: FactExtractor,
    new: Sequence[tuple[RecordInput, str]],
    fact_kind: str,
    ring: str,
    thread: str,
) -> list[RecordInput]:
    """The facts the model lists for the new turns, window by window, each citing its window's
    turns; a fact said twice (up to case and punctuation) is kept once."""
    out: list[RecordInput] = []
    seen: set[str] = set()
    lines = [item.text for item, _ in new]
    for span in windows(lines):
        cited = [new[i] for i in span]
        facts = extractor.extract([lines[i] for i in span])
        when = max(str(item.provenance["occurred_at"]) for item, _ in cited)
        for fact in facts:
            key = dedupe_key("", fact)
            if key in seen:
                continue
            seen.add(key)
            provenance: JsonObject = {
                "source": SOURCE,
                "extractor": extractor.name,
                "turns": [memory_id for _, memory_id in cited],
                "occurred_at": when,
                "dedupe_key": key,
            }
            out.append(RecordInput(fact, fact_kind, ring, provenance, thread))
    return out


def record_conversation(
    engine: MemoryEngine,
    messages: Sequence[object],
    *,
    thread: str | None = None,
    ring: str = "M4",
    kind: str = "episode",
    extractor: FactExtractor | None = None,
    fact_kind: str = "fact",
) -> ConversationResult:
    """Record ``messages`` (OpenAI chat format) as one memory per turn in ``thread`` (default:
    derived from the first turn, docs/spec/memory-conversations.md), plus the facts
    ``extractor`` finds in the turns not stored before. Nothing is written when any message is
    refused, or when the model fails and the seat's ``fail_open`` is false."""
    for name, value in (("ring", ring), ("kind", kind), ("fact_kind", fact_kind)):
        if not isinstance(value, str):  # plain data from a route: checked before any work
            raise InvalidRequest(f"{name}: expected a string")
    turns, skipped = read_turns(messages)
    if thread is None:
        thread = default_thread(turns)
    if not isinstance(thread, str) or len(thread) > MAX_THREAD:
        raise InvalidRequest(f"thread: expected a string of at most {MAX_THREAD} characters")
    ring_id = writable_mount(engine.spec, ring).ring_id
    if extractor is not None and fact_kind not in engine.spec.ontology.allowed_kinds:
        raise InvalidRequest(f"fact_kind: {fact_kind!r} is not in this seat's allowed_kinds")
    now = engine.now()
    prepared = [(turn, _turn_input(turn, kind, ring, thread, now)) for turn in turns]
    ids = _turn_ids(engine, ring_id, kind, prepared)
    with engine.store.read() as tx:
        present = _repo.existing_ids(tx, ids)
    # The thread's stored keys matter only for turns not already stored (a re-send skips it).
    fresh = thread and any(turn_id not in present for turn_id in ids)
    first_of_key = _stored_keys(engine, ring_id, thread) if fresh else {}
    known = set(first_of_key)
    outcome: dict[int, TurnOutcome] = {s.index: _skipped(s) for s in skipped}
    new: list[tuple[RecordInput, str]] = []
    new_ids: set[str] = set()
    for (turn, item), memory_id in zip(prepared, ids, strict=True):
        key = str(item.provenance["dedupe_key"])
        status = RECORDED
        if memory_id in present or memory_id in new_ids:
            status = DUPLICATE
        elif key in first_of_key:
            status, memory_id = NEAR_DUPLICATE, first_of_key[key]
        else:
            first_of_key[key] = memory_id
            new_ids.add(memory_id)
            new.append((item, memory_id))
        outcome[turn.index] = TurnOutcome(
            turn.index, status, memory_id, turn.speaker, str(item.provenance["occurred_at"])
        )
    facts: list[RecordInput] = []
    extraction = "disabled"
    if extractor is not None and new:
        try:
            facts = _facts(extractor, new, fact_kind, ring, thread)
            extraction = f"ok:{extractor.name}"
        except RemoteError as e:
            if not engine.spec.retrieval.fail_open:
                raise
            extraction = f"degraded: {e.message}"
    elif extractor is not None:
        extraction = f"ok:{extractor.name}"
    facts = [f for f in facts if f.provenance["dedupe_key"] not in known]
    items = [item for item, _ in new] + facts
    labels = [f"messages[{item.provenance['turn']}]" for item, _ in new]
    labels += [f"facts[{i}]" for i in range(len(facts))]
    results = record_many(engine, items, where=labels) if items else []
    return ConversationResult(
        thread=thread,
        ring_id=ring_id,
        messages=tuple(outcome[i] for i in sorted(outcome)),
        facts=tuple(results[len(new) :]),
        extraction=extraction,
        dense=results[0].dense if results else "n/a",
    )


def _skipped(s: Skipped) -> TurnOutcome:
    return TurnOutcome(s.index, SKIPPED, reason=s.reason)


__all__ = ["ConversationResult", "TurnOutcome", "record_conversation"]
