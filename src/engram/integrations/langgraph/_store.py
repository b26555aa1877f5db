"""``EngramStore``: LangGraph long-term memory (``langgraph.store.base.BaseStore``) on engram.

LangGraph 1.x's store contract (langgraph.store.base): ``batch``/``abatch`` over ``GetOp``,
``SearchOp``, ``PutOp`` and ``ListNamespacesOp``, and the ``get``/``search``/``put``/``delete``/
``list_namespaces`` methods (and their ``a…`` twins) the base class builds on them; TTLs in
minutes, refreshed on read (``supports_ttl``). As LangGraph's own stores do, a batch answers
its reads from the state before its writes, and of several puts to one key the last wins.

Items live in engram's store (SQLite or PostgreSQL, the database every ``engram`` command
uses); each namespace is a ring of its own, so ``search(query=…)`` is engram's hybrid recall
(BM25 with corpus IDF, the local vector, dense embeddings and a cross-encoder when the engine
has them) over exactly the namespaces searched. Reads: ``_read``; writes and TTLs: ``_write``;
the tables: ``_tables``; decisions: docs/integrations.md.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import copy
import dataclasses
import os
import threading
from collections.abc import Iterable
from typing import Self

from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    InvalidNamespaceError,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchOp,
    TTLConfig,
)

from engram.core.clock import Clock, SystemClock
from engram.integrations.langgraph import _read, _write
from engram.integrations.langgraph._context import Context, Namespace, base_manifest, scope_for
from engram.integrations.langgraph._tables import LANGGRAPH_COMPONENT
from engram.memory import MemoryEngine, open_engine
from engram.memory.internals import check_subject
from engram.store import Store, database_url_from_env, open_store

COMPACT_AFTER = 256


def _check_labels(op: Op) -> None:
    """A namespace label is a non-empty string without ``.`` or NUL (langgraph.store.base
    checks this in its methods; ops given to ``batch`` directly are checked here, so that a
    label such as ``"a.b"`` can never address the namespace ``("a", "b")``)."""
    if isinstance(op, GetOp | PutOp):
        labels: tuple[object, ...] = tuple(op.namespace)  # checked below: a caller may pass any
    elif isinstance(op, SearchOp):
        labels = tuple(op.namespace_prefix)
    elif isinstance(op, ListNamespacesOp):
        labels = tuple(label for c in op.match_conditions or () for label in c.path)
    else:
        return
    for label in labels:
        if not isinstance(label, str) or not label or "." in label or "\x00" in label:
            raise InvalidNamespaceError(
                f"Invalid namespace label {label!r} in {labels}: labels are non-empty strings "
                "without '.' or NUL"
            )


class EngramStore(BaseStore):
    """LangGraph's ``BaseStore`` on engram: items in engram's store, search by engram's recall.

    ``store``: an open engram store (``engram.store.open_store``); :meth:`open` opens one from a
    URL (default: ``$ENGRAM_DATABASE_URL``, else ``$ENGRAM_HOME/engram.db``, as the ``engram``
    commands do) and closes it with the store. ``engine``: a memory engine on the same store
    whose retrieval settings (a dense embedder, a cross-encoder) search should use; by default
    one with engram's local stages. ``index``: LangGraph's ``IndexConfig``, of which ``fields``
    is read (default ``["$"]``, the whole value); engram always indexes, so
    ``put(..., index=False)`` is how an item stays out of ``search(query=…)``. ``ttl``:
    LangGraph's ``TTLConfig``. ``compact_after``: how many stale memories a namespace's ring
    may hold before the namespace moves to a fresh one. ``subject``: whose namespaces these
    are (an end user's id); a store opened for one subject never reads, lists or searches
    another's, nor the unscoped ones (:meth:`for_subject` gives one per caller).
    """

    supports_ttl: bool = True

    def __init__(
        self,
        store: Store,
        *,
        engine: MemoryEngine | None = None,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        clock: Clock | None = None,
        compact_after: int = COMPACT_AFTER,
        owns_store: bool = False,
        subject: str | None = None,
    ) -> None:
        config: IndexConfig = index or {}
        unknown = set(config) - {"fields"}
        if unknown:
            raise ValueError(
                f"index: {', '.join(sorted(unknown))} is not read by EngramStore: search is "
                "engram's recall, whose dense embeddings and cross-encoder come from the "
                "engine's seat manifest ([retrieval]); pass engine=open_engine(...)"
            )
        if engine is not None and engine.store is not store:
            raise ValueError("engine must be an engine on the same engram store")
        clock = clock or (engine.clock if engine is not None else SystemClock())
        store.migrate(LANGGRAPH_COMPONENT)
        self._ctx = Context(
            store=store,
            engine=engine or open_engine(store, base_manifest(), clock),
            clock=clock,
            fields=list(config.get("fields") or ["$"]),
            compact_after=compact_after,
            scope=scope_for(None if subject is None else check_subject(subject)),
        )
        self.subject = subject
        self.ttl_config = ttl
        self._owns_store = owns_store
        self._sweeper: threading.Thread | None = None
        self._stop = threading.Event()

    @classmethod
    def open(
        cls,
        url: str | None = None,
        *,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        clock: Clock | None = None,
        compact_after: int = COMPACT_AFTER,
        subject: str | None = None,
    ) -> EngramStore:
        """A store on the database at ``url`` (default: engram's, from the environment); the
        other arguments are the constructor's (an ``engine`` must be on a store already open)."""
        store = open_store(url or database_url_from_env(os.environ))
        try:
            return cls(
                store,
                subject=subject,
                index=index,
                ttl=ttl,
                clock=clock,
                compact_after=compact_after,
                owns_store=True,
            )
        except BaseException:
            store.close()
            raise

    @property
    def store(self) -> Store:
        return self._ctx.store

    @property
    def engine(self) -> MemoryEngine:
        return self._ctx.engine

    def for_subject(self, subject: str) -> EngramStore:
        """The same database and engine, seeing only ``subject``'s namespaces: what a server
        that serves many end users hands each one's agent (docs/integrations.md "Whose
        memory"). Closing it does not close this store."""
        view = copy.copy(self)
        view._ctx = dataclasses.replace(self._ctx, scope=scope_for(check_subject(subject)))
        view.subject = subject
        view._owns_store = False
        view._sweeper = None
        view._stop = threading.Event()
        return view

    def close(self) -> None:
        self.stop_ttl_sweeper()
        if self._owns_store:
            self._ctx.store.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order; reads see the state before this batch's puts."""
        ops = list(ops)
        for op in ops:
            _check_labels(op)
        now = self._ctx.now()
        results: list[Result] = []
        puts: dict[tuple[Namespace, str], PutOp] = {}
        refresh: set[tuple[str, str]] = set()
        for op in ops:
            if isinstance(op, GetOp):
                item = _read.get(self._ctx, op.namespace, op.key, now)
                if item is not None and op.refresh_ttl:
                    refresh.add((self._ctx.stored(item.namespace), item.key))
                results.append(item)
            elif isinstance(op, SearchOp):
                found = _read.search(self._ctx, op, now)
                if op.refresh_ttl:
                    refresh.update((self._ctx.stored(i.namespace), i.key) for i in found)
                results.append(found)
            elif isinstance(op, ListNamespacesOp):
                results.append(_read.list_namespaces(self._ctx, op, now))
            elif isinstance(op, PutOp):
                puts[(tuple(op.namespace), str(op.key))] = op
                results.append(None)
            else:
                raise ValueError(f"Unknown operation type: {type(op)}")
        if refresh:
            _write.refresh_ttl(self._ctx, refresh, now)
        if puts:
            _write.put(self._ctx, list(puts.values()), now)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """``batch`` on a worker thread: engram's store is synchronous."""
        listed = list(ops)
        return await asyncio.get_running_loop().run_in_executor(None, self.batch, listed)

    def sweep_ttl(self) -> int:
        """Delete the items whose TTL has passed (every read already hides them)."""
        return _write.sweep(self._ctx, self._ctx.now())

    def start_ttl_sweeper(
        self, sweep_interval_minutes: float | None = None
    ) -> concurrent.futures.Future[None]:
        """Sweep expired items periodically on a daemon thread until :meth:`stop_ttl_sweeper`
        (default interval: ``ttl.sweep_interval_minutes``, else 5 minutes)."""
        configured = (self.ttl_config or {}).get("sweep_interval_minutes")
        minutes = float(sweep_interval_minutes or configured or 5)
        done: concurrent.futures.Future[None] = concurrent.futures.Future()
        if self._sweeper is not None:
            done.set_result(None)
            return done
        self._stop.clear()

        def run() -> None:
            try:
                while not self._stop.wait(minutes * 60):
                    self.sweep_ttl()
            finally:
                done.set_result(None)

        self._sweeper = threading.Thread(target=run, name="engram-ttl-sweeper", daemon=True)
        self._sweeper.start()
        return done

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper; True once it has stopped (or when none ran)."""
        sweeper, self._sweeper = self._sweeper, None
        if sweeper is None:
            return True
        self._stop.set()
        sweeper.join(timeout)
        return not sweeper.is_alive()


__all__ = ["COMPACT_AFTER", "EngramStore"]
