"""Dense context: the earlier memories of its thread that the dense model reads before a memory.

A conversation turn such as "It cut our p99 in half" means little alone; read after the turn
before it ("We moved billing to Rust") its vector lands near questions about billing and Rust.
So a memory recorded with a ``thread`` is embedded after up to ``[retrieval] dense_context``
memories just before it in the same thread and ring: the batch's own earlier items first, then
the newest ones the store already holds (found through the shared index, which links each
thread's memories). The query is embedded alone. Decisions and figures:
docs/spec/memory-retrieval.md "Dense context".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from engram.memory import _repo

if TYPE_CHECKING:
    from engram.memory._engine import MemoryEngine

# How far back one thread is walked for memories of the right ring: a thread shared by several
# rings is skipped past the other rings' memories, but never walked to its start.
_MAX_STEPS = 64


def thread_contexts(
    engine: MemoryEngine, items: Sequence[tuple[str, str, str]], depth: int
) -> list[tuple[str, ...]]:
    """For each ``(ring_id, thread, text)`` of a batch, in order, the texts of the up to
    ``depth`` memories recorded just before it in that ring's thread, oldest first."""
    if depth <= 0 or not any(thread for _, thread, _ in items):
        return [()] * len(items)
    keys = list(dict.fromkeys((ring, thread) for ring, thread, _ in items if thread))
    recent = _stored_tails(engine, keys, depth)
    out: list[tuple[str, ...]] = []
    for ring, thread, text in items:
        if not thread:
            out.append(())
            continue
        tail = recent[(ring, thread)]
        out.append(tuple(tail[-depth:]))
        tail.append(text)
    return out


def _stored_tails(
    engine: MemoryEngine, keys: Sequence[tuple[str, str]], depth: int
) -> dict[tuple[str, str], list[str]]:
    """The newest ``depth`` stored texts of each (ring id, thread), oldest first."""
    with engine.lock:  # the index handle is shared by every thread using this engine
        view = engine.index.sync(engine.store)
    prev_of, ring_of, n_of = view.arrays["prev"], view.arrays["ring"], view.arrays["n"]
    found: dict[tuple[str, str], list[int]] = {}
    for ring, thread in keys:
        ns: list[int] = []
        entry = view.meta.threads.get(thread)
        code = view.meta.rings.get(ring)
        doc = entry[2] if entry is not None and code is not None else -1
        for _ in range(_MAX_STEPS):
            if not 0 <= doc < view.docs or len(ns) == depth:
                break
            if int(ring_of[doc]) == code:
                ns.append(int(n_of[doc]))
            doc = int(prev_of[doc])
        found[(ring, thread)] = ns[::-1]
    wanted = [n for ns in found.values() for n in ns]
    texts: dict[int, str] = {}
    if wanted:
        with engine.store.read() as tx:
            texts = _repo.texts_by_n(tx, wanted)
    return {key: [texts[n] for n in ns if n in texts] for key, ns in found.items()}


__all__ = ["thread_contexts"]
