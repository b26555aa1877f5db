"""The memory engine handle and ``record``: content-addressed memories in the seat's rings.

Spec: engram.ote.v1 & MCP contract (Part V, Plate 03, §3.2) engram_record ("Mints a
content-addressed memory into an authorized ring (M2–M4) with dual-table vector storage
(memory_vectors 128-dim local baseline + memory_dense_vectors neural vector)"). A memory's id is
``mem:`` + the sha256 of the RFC 8785 bytes of ``{kind, ring_id, text}``: the same text in two rings
is two memories, so two repositories under one HOME never share an M2 memory.
"""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from engram.core.canonical import canonicalize_row, check_i_json
from engram.core.clock import Clock, format_instant_precise
from engram.errors import Busy, Forbidden, InvalidRequest, RemoteError, StoreError
from engram.memory import _repo
from engram.memory._attestation import Anchor, load_anchor
from engram.memory._dense_context import thread_contexts
from engram.memory._index import RetrievalIndex
from engram.memory._manifest import Mount, OteSpec
from engram.memory._models import Memory, MemoryStatus, RecordInput, RecordResult
from engram.memory._owner import owner_of
from engram.memory._remote import CrossEncoder, Embedder
from engram.memory._schema import migrate_memory
from engram.memory._text import extract_entities, token_cost, vector_to_blob
from engram.store import Store, Tx

MAX_TEXT = 100_000
BUSY_RETRY_SECONDS = 1
# The members of a memory's content address, in RFC 8785 order (sorted).
_ID_NAMES = ("kind", "ring_id", "text")
REFRESH_AT = 500
BULK_CACHE_KIB = 262_144  # 256 MiB at most, for a bulk writer's connection only
# A bulk writer's connection checkpoints its WAL every 16,384 pages (64 MB at 4 KB pages)
# instead of SQLite's 1,000: random content ids dirty pages all over the id index, so at 1M
# memories every batch overran 1,000 pages and each commit checkpointed (and fsynced) the same
# index pages again. Measured at 1M, 50,000 more memories, the final checkpoint included:
# batches of 1,000 18.0k -> 26.6k records/s, of 10,000 25.7k -> 29.2k.
BULK_WAL_PAGES = 16_384


def _is_busy(error: BaseException) -> bool:
    cause = error.__cause__
    if isinstance(cause, sqlite3.OperationalError):
        code = getattr(cause, "sqlite_errorcode", None)
        return code in (5, 6) or "locked" in str(cause) or "busy" in str(cause)
    name = type(cause).__name__ if cause is not None else ""
    return name in ("LockNotAvailable", "SerializationFailure", "DeadlockDetected")


@contextlib.contextmanager
def writing(store: Store) -> Iterator[Tx]:
    """A write transaction; another writer holding the lock past the busy timeout is a
    retryable ``busy`` error (503, ``retry_after``), never ``server_error``."""
    try:
        with store.transaction() as tx:
            yield tx
    except StoreError as e:
        if _is_busy(e):
            raise Busy(
                "the store is busy: another writer held its lock longer than the busy timeout; "
                "nothing was written, retry",
                BUSY_RETRY_SECONDS,
            ) from e
        raise


def default_index_folder(store: Store) -> Path | None:
    """``<database file>.index`` beside a SQLite file; None (a private folder) otherwise."""
    path = getattr(store, "path", None)
    if isinstance(path, Path):
        return path.with_name(path.name + ".index")
    return None


@dataclass
class MemoryEngine:
    """A seat's view of one store: its manifest, clock, optional remote stages and index.

    Build one with :func:`open_engine`. The retrieval index is files beside the store, shared
    by every process (``index_folder``; None = a private folder, rebuilt per process, for
    ``memory://`` and for PostgreSQL when the caller names no per-host folder). One engine may
    be shared by threads (the MCP server runs tools on worker threads, ``engram serve``
    answers /mcp from many): ``lock`` guards the index handle; writes go through store
    transactions and need no lock here.
    """

    store: Store
    spec: OteSpec
    clock: Clock
    embedder: Embedder | None = None
    reranker: CrossEncoder | None = None
    index_folder: Path | None = None
    index: RetrievalIndex = field(init=False)
    lock: threading.RLock = field(init=False, repr=False, compare=False)
    # Whose memories this engine acts on: None for the seat, else a subject id
    # (``engram.memory.subject_view``); ``seat_spec`` is the manifest as written.
    subject: str | None = field(default=None, init=False)
    seat_spec: OteSpec = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.seat_spec = self.spec
        migrate_memory(self.store)
        self.index = RetrievalIndex(
            self.index_folder, self.embedder.engine if self.embedder else None
        )
        self.lock = threading.RLock()

    def refresh_index(self) -> None:
        """Bring the shared index up to date after a write (best effort: a reader catches up)."""
        with self.lock, contextlib.suppress(StoreError, OSError):
            self.index.sync(self.store)

    def anchor(self) -> Anchor | None:
        """The trust anchor, or None when none is configured or the file is absent/empty."""
        att = self.spec.attestation
        if att is None or not att.allowed_signers.is_file():
            return None
        anchor = load_anchor(att.allowed_signers)
        return anchor if anchor.signers else None

    def now(self) -> str:
        return format_instant_precise(self.clock.now())


def open_engine(
    store: Store,
    spec: OteSpec,
    clock: Clock,
    *,
    embedder: Embedder | None = None,
    reranker: CrossEncoder | None = None,
    index_folder: Path | None = None,
) -> MemoryEngine:
    """Migrate the memory tables if needed and return an engine for this seat.

    ``index_folder`` defaults to ``<database file>.index`` for a SQLite file; PostgreSQL
    deployments pass a per-host folder (the CLI uses ``$ENGRAM_HOME/index/<database>``).
    """
    folder = index_folder if index_folder is not None else default_index_folder(store)
    return MemoryEngine(store, spec, clock, embedder, reranker, folder)


def memory_id(ring_id: str, kind: str, text: str) -> str:
    """The content address of a memory: sha256 of the RFC 8785 bytes of {kind, ring_id, text}.

    The bytes come from ``engram.core.canonical`` like every other hashed byte in engram
    (``canonicalize_row`` writes three strings without building the object; a lone surrogate
    gets ``canonicalize``'s refusal). tests/memory/test_memory_ids.py holds the address to the
    independent ``rfc8785`` package.
    """
    data = canonicalize_row(_ID_NAMES, (kind, ring_id, text))
    return "mem:" + hashlib.sha256(data).hexdigest()


def writable_mount(spec: OteSpec, ring: str) -> Mount:
    mount = spec.mount_for(ring)
    if mount is None:
        raise Forbidden(f"ring {ring!r} is not mounted by {spec.seat.seat_id}")
    if not mount.writable and any(owner_of(m.ring_id) for m in spec.mounts):
        raise Forbidden(
            f"ring {mount.ring} ({mount.ring_id}) is shared knowledge, read-only for a caller "
            "acting for a subject: a subject's memories are recorded only in their own ring "
            "(M4, the default)"
        )
    if not mount.writable:
        raise Forbidden(
            f"ring {mount.ring} ({mount.ring_id}) is read-only for "
            f"{spec.seat.seat_id}: memories are recorded only into M2-M4 mounts with "
            "access = read_write"
        )
    return mount


@dataclass(frozen=True)
class _Prepared:
    id: str
    mount: Mount
    item: RecordInput
    entities: list[str]


def _prepare(engine: MemoryEngine, item: RecordInput, where: str) -> _Prepared:
    spec = engine.spec
    if not item.text.strip():
        raise InvalidRequest(f"{where}: text must not be empty")
    if len(item.text) > MAX_TEXT:
        raise InvalidRequest(f"{where}: text is longer than {MAX_TEXT} characters")
    if item.kind not in spec.ontology.allowed_kinds:
        raise InvalidRequest(
            f"{where}: kind {item.kind!r} is not in this seat's allowed_kinds "
            f"({', '.join(spec.ontology.allowed_kinds)})"
        )
    check_i_json(item.provenance)
    mount = writable_mount(spec, item.ring)
    entities = extract_entities(item.text, spec.ontology.compiled_patterns())
    return _Prepared(memory_id(mount.ring_id, item.kind, item.text), mount, item, entities)


def check_record(engine: MemoryEngine, item: RecordInput, where: str) -> str:
    """Refuse ``item`` exactly as recording it would, without writing anything; else return
    the content id it would be recorded under."""
    return _prepare(engine, item, where).id


def record_many(
    engine: MemoryEngine,
    items: Sequence[RecordInput],
    progress: Callable[[int], None] | None = None,
    *,
    where: Sequence[str] | None = None,
    refresh: bool | None = None,
) -> list[RecordResult]:
    """Record memories in one transaction; a memory already present is returned, not duplicated.

    ``progress(n)`` is called as each item is prepared (for progress bars); ``where`` names
    each item in error messages (default ``record[i]``). Any invalid item fails the whole batch
    before anything is written. ``refresh`` brings the shared index up to date afterwards
    (default: for batches of REFRESH_AT or more; a smaller delta is loaded by the next recall,
    which costs that recall about one tantivy commit).
    """
    prepared: list[_Prepared] = []
    for i, item in enumerate(items):
        label = where[i] if where is not None else (f"record[{i}]" if len(items) > 1 else "record")
        prepared.append(_prepare(engine, item, label))
        if progress is not None:
            progress(i + 1)
    dense_note, dense_rows = _dense(engine, prepared)
    now = engine.now()
    seat = engine.spec.seat.seat_id
    results = _write(engine, prepared, dense_note, dense_rows, now, seat)
    if refresh or (refresh is None and len(items) >= REFRESH_AT):
        engine.refresh_index()
    return results


def _write(
    engine: MemoryEngine,
    prepared: Sequence[_Prepared],
    dense_note: str,
    dense_rows: Sequence[tuple[str, str, int, bytes]],
    now: str,
    seat: str,
) -> list[RecordResult]:
    with writing(engine.store) as tx:
        if len(prepared) >= REFRESH_AT and tx.dialect.is_sqlite:
            # Content ids are random keys: at 1M memories their index outgrows SQLite's default
            # 2 MB page cache and every insert misses it (record/s fell 28k -> 18k by 100k).
            tx.execute(f"PRAGMA cache_size = -{BULK_CACHE_KIB}")
            tx.execute(f"PRAGMA wal_autocheckpoint = {BULK_WAL_PAGES}")
        _repo.bump(tx)
        unique: dict[str, _Prepared] = {}
        for p in prepared:
            unique.setdefault(p.id, p)
        rows = [
            (
                p.id,
                p.mount.ring,
                p.mount.ring_id,
                p.item.kind,
                p.item.text,
                _repo.json_text(p.entities),
                _repo.json_text(p.item.provenance),
                p.item.thread,
                seat,
                token_cost(p.item.text),
                1.0,
                1.0,
                MemoryStatus.CANDIDATE.value,
                None,
                "local",
                now,
            )
            for p in unique.values()
        ]
        inserted = _repo.insert_new_memories(tx, rows)
        fresh = {pid: p for pid, p in unique.items() if pid in inserted}
        present = [pid for pid in unique if pid not in inserted]
        rows = [r for r in rows if r[0] in inserted]
        _repo.insert_dense(
            tx,
            [r for r in dense_rows if r[0] in fresh],
            {pid: p.mount.ring_id for pid, p in fresh.items()},
        )
        # Rows just written are known; only memories that were already present are read back.
        stored = _repo.get_memories(tx, sorted(present))
        for r, p in zip(rows, fresh.values(), strict=True):
            # Built from what was prepared: re-parsing the JSON columns cost a third of the batch.
            stored[p.id] = Memory(
                id=p.id,
                ring=p.mount.ring,
                ring_id=p.mount.ring_id,
                kind=p.item.kind,
                text=p.item.text,
                entities=tuple(p.entities),
                provenance=dict(p.item.provenance),
                thread=p.item.thread,
                seat_id=seat,
                tokens=int(r[9]),
                alpha=1.0,
                beta=1.0,
                status=MemoryStatus.CANDIDATE,
                graduated_at=None,
                origin="local",
                created_at=now,
            )
    results: list[RecordResult] = []
    first_seen: set[str] = set()
    for p in prepared:
        created = p.id in fresh and p.id not in first_seen
        first_seen.add(p.id)
        results.append(RecordResult(stored[p.id], created, dense_note))
    return results


def record(
    engine: MemoryEngine,
    text: str,
    kind: str,
    ring: str = "M4",
    provenance: dict[str, Any] | None = None,
    thread: str = "",
) -> RecordResult:
    """Record one memory into ``ring`` (a level such as "M4" or a mounted ring id)."""
    item = RecordInput(text=text, kind=kind, ring=ring, provenance=provenance or {}, thread=thread)
    return record_many(engine, [item])[0]


def _dense(
    engine: MemoryEngine, prepared: Sequence[_Prepared]
) -> tuple[str, list[tuple[str, str, int, bytes]]]:
    """Dense vectors for the batch, or why there are none (fail_open decides errors)."""
    if engine.embedder is None:
        return "disabled", []
    texts = [p.item.text for p in prepared]
    depth = engine.spec.retrieval.dense_context
    try:
        # Memories always go through embed_in_context (no context: empty ones): ``embed`` is the
        # query side, which an embedder may compute differently (minilm's int8 query graph).
        if depth and any(p.item.thread for p in prepared):
            contexts = thread_contexts(
                engine, [(p.mount.ring_id, p.item.thread, p.item.text) for p in prepared], depth
            )
        else:
            contexts = [()] * len(texts)
        vectors = engine.embedder.embed_in_context(texts, contexts)
    except RemoteError as e:
        if not engine.spec.retrieval.fail_open:
            raise
        return f"degraded: {e.message}", []
    engine_id = engine.embedder.engine
    return f"stored:{engine_id}", [
        (p.id, engine_id, int(v.shape[0]), vector_to_blob(v))
        for p, v in zip(prepared, vectors, strict=True)
    ]


def indexed_local_vector(engine: MemoryEngine, memory_id: str) -> np.ndarray | None:
    """The ``local-hash-128`` vector the shared index holds for a memory (None: unknown)."""
    with engine.store.read() as tx:
        n = tx.scalar("SELECT n FROM memory_items WHERE id = ?", (memory_id,))
    if n is None:
        return None
    with engine.lock:
        view = engine.index.sync(engine.store)
    doc = view.doc_of(int(n))
    return None if doc is None else view.local.rows([doc])[0]


def hidden_from(engine: MemoryEngine, memory: Memory) -> bool:
    """True when this caller must not learn that ``memory`` exists: it is a subject's and not
    in a ring the caller mounts, or the caller acts for a subject and does not mount its ring
    (docs/spec/memory-ownership.md: "no such memory", never "forbidden")."""
    if engine.spec.mount_for(memory.ring_id) is not None:
        return False
    return engine.subject is not None or owner_of(memory.ring_id) is not None


def get_memory(engine: MemoryEngine, memory_id: str) -> Memory | None:
    """The memory, or None when there is none this caller may learn of (``hidden_from``)."""
    with engine.store.read() as tx:
        memory = _repo.get_memory(tx, memory_id)
    return None if memory is None or hidden_from(engine, memory) else memory


def get_memories(engine: MemoryEngine, memory_ids: Sequence[str]) -> dict[str, Memory]:
    """:func:`get_memory` of many ids, 500 to a query: the ones found, by id."""
    with engine.store.read() as tx:
        found = _repo.get_memories(tx, memory_ids)
    return {i: m for i, m in found.items() if not hidden_from(engine, m)}


__all__ = [
    "BUSY_RETRY_SECONDS",
    "MemoryEngine",
    "check_record",
    "default_index_folder",
    "get_memories",
    "get_memory",
    "hidden_from",
    "indexed_local_vector",
    "memory_id",
    "open_engine",
    "record",
    "record_many",
    "writable_mount",
    "writing",
]
