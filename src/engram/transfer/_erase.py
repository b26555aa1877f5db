"""Erasure across the memory engine and what this package keeps beside it.

A PAM import keeps each PAM memory object (its content among its fields) in ``pam_memories``
next to the engine memory that serves it (``_pam_tables``); the provider keeps the answers of
``Idempotency-Key`` requests (``engram_idempotency``), and the memory REST API's answer to a
record holds the memory's words. Erasing a memory must take both too, in the same transaction,
or the words would survive the erase (or a retried request would replay them); so every adapter
erases through these functions, never ``engram.memory.erase`` alone
(docs/spec/memory-ownership.md "Erase").
"""

# ruff: noqa: S608 - SQL text interpolates only "?" placeholder lists

from __future__ import annotations

import re
from collections.abc import Sequence

from engram.core.canonical import canonicalize
from engram.errors import ResourceNotFound
from engram.memory import LifecycleResult, MemoryEngine, erase, subject_ring_id
from engram.memory.internals import erase_rings
from engram.store import Tx, in_chunks
from engram.store.idempotency import seal_answers_naming
from engram.store.internals import is_migrated
from engram.transfer._pam_tables import PAM_COMPONENT


def _drop_pam_objects(tx: Tx, memory_ids: Sequence[str]) -> None:
    if not is_migrated(tx, PAM_COMPONENT):
        return
    for marks, chunk in in_chunks(memory_ids):
        tx.execute(f"DELETE FROM pam_memories WHERE memory_id IN ({marks})", chunk)


def _erased_answer(memory_id: str) -> tuple[int, bytes]:
    """What a retry of a request whose stored answer named an erased memory gets instead."""
    gone = ResourceNotFound(f"memory {memory_id!r} was erased")
    return gone.http_status, canonicalize(gone.to_wire())


_MEMORY_ID = re.compile(rb"mem:[0-9a-f]{64}")  # engram.memory.memory_id's form


def _seal_idempotent_answers(tx: Tx, memory_ids: Sequence[str]) -> None:
    seal_answers_naming(tx, memory_ids, _erased_answer, token=_MEMORY_ID)


ERASE_DEPENDENTS = (_drop_pam_objects, _seal_idempotent_answers)


def erase_memories(
    engine: MemoryEngine, memory_ids: Sequence[str], *, actor: str
) -> list[LifecycleResult]:
    """:func:`engram.memory.erase`, with the PAM objects that held the same words."""
    return erase(engine, memory_ids, actor=actor, dependents=ERASE_DEPENDENTS)


def erase_subject_memories(engine: MemoryEngine, subject_id: str, *, actor: str) -> int:
    """Erase every memory of ``subject_id``'s own ring (``engram subject delete``)."""
    return erase_rings(
        engine, [subject_ring_id(subject_id)], actor=actor, dependents=ERASE_DEPENDENTS
    )


__all__ = ["erase_memories", "erase_subject_memories"]
