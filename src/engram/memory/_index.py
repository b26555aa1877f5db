"""The derived retrieval index: tantivy (BM25 over our terms) plus memory-mapped side arrays.

Spec: engram.ote.v1 & MCP contract (Part V, Plate 03, §3.2) engram_recall ("lexical (FTS5 BM25 +
Corpus IDF) + dense").
The index lives in files beside the store (``<db>.index/``, or a per-host folder for
PostgreSQL), is never signed and is always rebuildable from the database. Decisions and the
measurements behind the engine choice: ``docs/spec/memory-retrieval.md`` "The index".

Layout of one index folder::

    CURRENT                 the name of the live generation folder (replaced atomically)
    lock                    flock: one updater at a time, across processes
    g-<random>/meta.json    version, database instance, rebuilt counter, last n loaded, docs
    g-<random>/text/        tantivy: one document per memory (doc, ring, terms, tags)
    g-<random>/threads/     tantivy: one document per thread (its members' terms)
    g-<random>/*.bin        per-document arrays: n, ring, thread, tokens, prev, next,
                            local-hash-128 vectors, dense vectors per engine id

Documents are numbered 0, 1, ... in the database's ``n`` order. Readers never lock: they read
``meta.json`` and use documents below its ``docs`` only, so an update in progress (or one a
kill -9 cut short) is invisible to them. An updater takes the lock, compares the database's
change sequence with the meta, and appends the delta (rows with a larger ``n``), or rebuilds
into a fresh generation folder when the database is another one, ring ids moved, the version
changed, or the files disagree with the meta (a crash mid-update): a stale index is detected
and rebuilt, never answered from. tantivy merges its segments itself (LogMergePolicy) when a
delta is committed; the merge is atomic in tantivy, so a kill -9 during one loses nothing.
"""

from __future__ import annotations

import contextlib
import fcntl
import secrets
import shutil
import tempfile
import weakref
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import tantivy

from engram.core.canonical import parse_strict
from engram.core.jsonio import dumps_text
from engram.errors import StoreError
from engram.memory import _repo
from engram.memory._models import author_of
from engram.memory._rowfile import RowFile
from engram.memory._text import LOCAL_DIMS, blob_to_vector, local_vectors, terms, words
from engram.store import Store

INDEX_VERSION = 3  # 3: words of every script (_analysis); older indexes are rebuilt once
_LOAD_BATCH = 20_000
_WRITER_HEAP = 64_000_000
_Occur = tantivy.Occur


def matvec(matrix: np.ndarray, vec: np.ndarray) -> np.ndarray:
    """matrix @ vec through numpy's own SIMD loop: a single-row product is memory-bound, and
    BLAS's threads only contend for the two cores (measured: 2.5 ms vs 5-11 ms at 100k rows)."""
    out: np.ndarray = np.einsum("ij,j->i", matrix, vec.astype(np.float32))
    return out


def tag_terms(entities: Sequence[str], author: str) -> list[str]:
    """The index terms of a memory's author and entities (lower-cased, one token each). An
    author is its words joined by spaces, as a query's word runs are ("José García" is named by
    "jose garcia"); entities stay as the seat's patterns matched them."""
    out = []
    if author and words(author):
        out.append("a:" + " ".join(words(author)))
    out += ["e:" + " ".join(e.lower().split()) for e in entities if e.strip()]
    return out


def _entities(text: str) -> list[str]:
    """A row's ``entities`` column, which engram writes as a JSON array of strings."""
    value = parse_strict(text) if text != "[]" else []
    if isinstance(value, list):
        names = [e for e in value if isinstance(e, str)]
        if len(names) == len(value):
            return names
    raise StoreError(f"a memory's entities column is not an array of strings: {text[:80]}")


def _schemas() -> tuple[Any, Any]:
    text = tantivy.SchemaBuilder()
    text.add_unsigned_field("doc", stored=False, indexed=True, fast=True)
    text.add_text_field("ring", tokenizer_name="raw", index_option="basic")
    # Our own terms (stemmed, stop words out), joined by spaces: "whitespace" splits them back
    # exactly, with none of the default tokenizer's 40-character cut.
    text.add_text_field("terms", tokenizer_name="whitespace", index_option="freq")
    text.add_text_field("tags", tokenizer_name="raw", index_option="basic")
    threads = tantivy.SchemaBuilder()
    threads.add_unsigned_field("code", stored=True, indexed=True, fast=True)
    threads.add_text_field("terms", stored=True, tokenizer_name="whitespace", index_option="freq")
    return text.build(), threads.build()


TEXT_SCHEMA, THREAD_SCHEMA = _schemas()

# name -> (dtype, row width); one little-endian file each, one row per document.
_ARRAYS: dict[str, tuple[str, int]] = {
    "n": ("<i8", 1),
    "ring": ("<i4", 1),
    "thread": ("<i4", 1),
    "tokens": ("<i4", 1),
    "prev": ("<i4", 1),
    "next": ("<i4", 1),
    "local": ("<f4", LOCAL_DIMS),
}


@dataclass
class Meta:
    version: int
    instance: str
    rebuilt: int
    last_n: int
    docs: int
    rings: dict[str, int]
    threads: dict[str, list[int]]  # thread -> [code, first doc, last doc]
    dense: dict[str, int]  # engine id -> dims

    def to_wire(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "instance": self.instance,
            "rebuilt": self.rebuilt,
            "last_n": self.last_n,
            "docs": self.docs,
            "rings": self.rings,
            "threads": self.threads,
            "dense": self.dense,
        }

    @staticmethod
    def from_wire(value: Any) -> Meta:
        return Meta(
            int(value["version"]),
            str(value["instance"]),
            int(value["rebuilt"]),
            int(value["last_n"]),
            int(value["docs"]),
            {str(k): int(v) for k, v in value["rings"].items()},
            {str(k): [int(x) for x in v] for k, v in value["threads"].items()},
            {str(k): int(v) for k, v in value["dense"].items()},
        )


class _Stale(Exception):
    """The generation on disk disagrees with its meta or the database: rebuild it."""


def _dense_file(engine: str) -> str:
    import hashlib

    return "dense-" + hashlib.sha256(engine.encode()).hexdigest()[:16] + ".bin"


class View:
    """A consistent read-only view of one generation: meta, searchers and mapped arrays."""

    def __init__(self, folder: Path, meta: Meta, dense_engine: str | None) -> None:
        self.folder = folder
        self.meta = meta
        self.docs = meta.docs
        self.text = tantivy.Index(TEXT_SCHEMA, path=str(folder / "text"), reuse=True)
        self.threads = tantivy.Index(THREAD_SCHEMA, path=str(folder / "threads"), reuse=True)
        self.text_searcher = self.text.searcher()
        self.thread_searcher = self.threads.searcher()
        self.arrays = {
            name: self._map(name, dtype, width)
            for name, (dtype, width) in _ARRAYS.items()
            if width == 1
        }
        self.local = RowFile(folder / "local.bin", self.docs, LOCAL_DIMS)
        self.ring_names = {code: ring for ring, code in meta.rings.items()}
        self.dense: RowFile | None = None
        if dense_engine and meta.dense.get(dense_engine):
            self.dense = RowFile(
                folder / _dense_file(dense_engine), self.docs, meta.dense[dense_engine]
            )
        self._first_of: dict[int, int] | None = None
        self._centroids: np.ndarray | None = None
        self._has_tags: bool | None = None

    def has_tags(self) -> bool:
        """Whether any document carries an author or entity tag, asked once per view: on a
        store without tags every recall's tag look-ups (one ``doc_freq`` per word run, about
        30 us a recall on the bench stores) can only find nothing. Documents never gain tags,
        so "none" stays true for this view's documents."""
        if self._has_tags is None:
            self._has_tags = bool(self.text_searcher.terms_with_prefix("tags", "", limit=1))
        return self._has_tags

    def first_in_thread(self, code: int) -> int:
        """The first document of a thread (by its code)."""
        if self._first_of is None:
            self._first_of = {entry[0]: entry[1] for entry in self.meta.threads.values()}
        return self._first_of.get(code, -1)

    def _map(self, name: str, dtype: str, width: int) -> np.ndarray:
        path = self.folder / (name if name.endswith(".bin") else name + ".bin")
        shape = (self.docs, width) if width > 1 else (self.docs,)
        if self.docs == 0:
            return np.zeros(shape, dtype=dtype)
        # A plain ndarray over the mapping: np.memmap's Python-level __getitem__ cost 0.3 us a
        # lookup, and a thread-heavy recall makes thousands (issue 16, the MCP bench).
        return np.asarray(np.memmap(path, dtype=dtype, mode="r", shape=shape))

    def thread_centroids(self) -> np.ndarray:
        """Unit mean dense vector of each thread (by code); computed once per view."""
        if self._centroids is None:
            assert self.dense is not None
            codes = np.asarray(self.arrays["thread"])
            out = np.zeros((len(self.meta.threads), self.dense.dims), dtype=np.float32)
            keep = codes >= 0
            np.add.at(out, codes[keep], self.dense.all()[keep])
            norms = np.sqrt(np.einsum("ij,ij->i", out, out))[:, None]
            self._centroids = out / np.maximum(norms, 1e-12)
        return self._centroids

    def doc_of(self, n: int) -> int | None:
        """The document of the memory with row number ``n`` (None when not indexed)."""
        ns = self.arrays["n"]
        at = int(np.searchsorted(ns, n))
        return at if at < self.docs and int(ns[at]) == n else None

    def refresh(self) -> None:
        """Searchers at tantivy's latest commit (at least as new as this view's meta)."""
        self.text.reload()
        self.threads.reload()
        self.text_searcher = self.text.searcher()
        self.thread_searcher = self.threads.searcher()


# Below this many documents the vector stages scan every row (exact, a few ms at most); above
# it they score the lexical candidates only, so recall's cost does not grow with N.
SCAN_LIMIT = 20_000


class RetrievalIndex:
    """The index of one store, shared by every process that opens it (see the module doc)."""

    def __init__(self, folder: Path | None, dense_engine: str | None = None) -> None:
        if folder is None:
            # A store with no folder of its own (memory://) gets a private index folder that
            # goes with this object. weakref.finalize rather than TemporaryDirectory: the latter
            # warns (ResourceWarning) whenever the garbage collector is what cleans it up, which
            # is this object's normal end.
            folder = Path(tempfile.mkdtemp(prefix="engram-index-"))
            weakref.finalize(self, shutil.rmtree, folder, ignore_errors=True)
        self.folder = folder
        self.dense_engine = dense_engine
        self.view: View | None = None
        self.rebuilds = 0  # how many times this process rebuilt the index (tests, status)

    # ---- reading -------------------------------------------------------------------------

    def __len__(self) -> int:
        return 0 if self.view is None else self.view.docs

    def sync(self, store: Store) -> View:
        """A view current with the database's change sequence (updating the files if behind)."""
        with store.read() as tx:
            seq = _repo.change_sequence(tx)
        view = self.view
        if view is not None and self._current(view.meta, seq):
            return view
        on_disk = self._read_current()
        if on_disk is not None and self._current(on_disk[1], seq):
            self.view = self._open(on_disk)
            return self.view
        self._update(store)
        found = self._read_current()
        assert found is not None
        self.view = self._open(found)
        return self.view

    def _current(self, meta: Meta, seq: tuple[str, int, int, int]) -> bool:
        instance, rebuilt, _appended, top_n = seq
        return (
            meta.version == INDEX_VERSION
            and meta.instance == instance
            and meta.rebuilt == rebuilt
            and meta.last_n == top_n
            and (self.dense_engine is None or self.dense_engine in meta.dense)
        )

    def _open(self, found: tuple[Path, Meta]) -> View:
        if (
            self.view is not None
            and self.view.folder == found[0]
            and self.view.docs == found[1].docs
        ):
            self.view.meta = found[1]
            return self.view
        return View(found[0], found[1], self.dense_engine)

    def _read_current(self) -> tuple[Path, Meta] | None:
        try:
            name = (self.folder / "CURRENT").read_text(encoding="ascii").strip()
            folder = self.folder / name
            meta = Meta.from_wire(parse_strict((folder / "meta.json").read_bytes()))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None
        except Exception:
            return None
        return folder, meta

    # ---- updating ------------------------------------------------------------------------

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        with (self.folder / "lock").open("a+") as handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

    def _update(self, store: Store) -> None:
        with self._locked():
            with store.read() as tx:
                seq = _repo.change_sequence(tx)
            found = self._read_current()
            if found is not None and self._current(found[1], seq):
                return  # another process brought it up to date while we waited
            if found is not None and self._compatible(found[1], seq):
                try:
                    _Updater(found[0], found[1], self.dense_engine).load(store)
                    return
                except _Stale:
                    pass
            self._rebuild(store, seq)

    def _compatible(self, meta: Meta, seq: tuple[str, int, int, int]) -> bool:
        """The delta can be appended: same database, no ring move, nothing lost."""
        instance, rebuilt, _appended, top_n = seq
        return (
            meta.version == INDEX_VERSION
            and meta.instance == instance
            and meta.rebuilt == rebuilt
            and meta.last_n <= top_n
        )

    def _rebuild(self, store: Store, seq: tuple[str, int, int, int]) -> None:
        self.rebuilds += 1
        name = "g-" + secrets.token_hex(8)
        folder = self.folder / name
        folder.mkdir(mode=0o700)
        meta = Meta(INDEX_VERSION, seq[0], seq[1], 0, 0, {}, {}, {})
        if self.dense_engine:
            meta.dense[self.dense_engine] = 0  # dims fixed by the first vector
        for sub in ("text", "threads"):
            (folder / sub).mkdir()
        for array in _ARRAYS:
            (folder / f"{array}.bin").touch()
        _write_meta(folder, meta)
        _Updater(folder, meta, self.dense_engine).load(store)
        tmp = self.folder / f"CURRENT.{name}"
        tmp.write_text(name, encoding="ascii")
        tmp.replace(self.folder / "CURRENT")
        for old in self.folder.glob("g-*"):
            if old.name != name:
                shutil.rmtree(old, ignore_errors=True)  # open mmaps elsewhere stay valid


def _write_meta(folder: Path, meta: Meta) -> None:
    tmp = folder / "meta.json.tmp"
    with tmp.open("w", encoding="utf-8") as f:
        f.write(dumps_text(meta.to_wire()))
    tmp.replace(folder / "meta.json")  # readers see the old meta or the new, never half


class _Updater:
    """Appends the database's new rows to one generation (under the index lock)."""

    def __init__(self, folder: Path, meta: Meta, dense_engine: str | None) -> None:
        self.folder, self.meta, self.dense_engine = folder, meta, dense_engine
        self.text = tantivy.Index(TEXT_SCHEMA, path=str(folder / "text"), reuse=True)
        self.threads = tantivy.Index(THREAD_SCHEMA, path=str(folder / "threads"), reuse=True)
        self._check()
        if dense_engine and dense_engine not in meta.dense:
            meta.dense[dense_engine] = 0  # a new engine: its vectors load from the first row

    def _check(self) -> None:
        """Files that disagree with the meta are what a crash mid-update leaves: stale."""
        docs = self.meta.docs
        for name, (dtype, width) in _ARRAYS.items():
            size = (self.folder / f"{name}.bin").stat().st_size
            if size != docs * np.dtype(dtype).itemsize * width:
                raise _Stale(name)
        self.text.reload()
        if self.text.searcher().num_docs != docs:
            raise _Stale("text")
        self.threads.reload()
        if self.threads.searcher().num_docs != len(self.meta.threads):
            raise _Stale("threads")

    def load(self, store: Store) -> None:
        meta = self.meta
        writer = self.text.writer(_WRITER_HEAP, 1)
        files = {name: (self.folder / f"{name}.bin").open("ab") for name in _ARRAYS}
        touched: dict[str, list[str]] = {}
        next_fixes: list[tuple[int, int]] = []
        try:
            while True:
                with store.read() as tx:
                    rows = _repo.index_rows_after(tx, meta.last_n, _LOAD_BATCH)
                if not rows:
                    break
                self._add_rows(rows, writer, files, touched, next_fixes)
                if len(rows) < _LOAD_BATCH:
                    break
        finally:
            for f in files.values():
                f.close()  # no fsync: a short file after a power loss fails _check: rebuilt
        if touched:
            thread_writer = self.threads.writer(15_000_000, 1)
            self._threads(thread_writer, touched)
            thread_writer.commit()
            thread_writer.wait_merging_threads()
        self._fix_next(next_fixes)
        self._load_dense(store)
        writer.commit()
        writer.wait_merging_threads()
        _write_meta(self.folder, meta)

    def _add_rows(
        self,
        rows: Sequence[Any],
        writer: Any,
        files: dict[str, Any],
        touched: dict[str, list[str]],
        next_fixes: list[tuple[int, int]],
    ) -> None:
        meta = self.meta
        count = len(rows)
        first = meta.docs
        cols: dict[str, list[int]] = {
            name: [] for name in ("n", "ring", "thread", "tokens", "prev", "next")
        }
        for offset, row in enumerate(rows):
            doc = first + offset
            ring = meta.rings.setdefault(row["ring_id"], len(meta.rings))
            row_terms = terms(row["text"])
            document = tantivy.Document()
            document.add_unsigned("doc", doc)
            document.add_text("ring", row["ring_id"])
            document.add_text("terms", " ".join(row_terms))
            provenance = parse_strict(row["provenance"]) if row["provenance"] != "{}" else {}
            for tag in tag_terms(
                _entities(row["entities"]),
                author_of(provenance) if isinstance(provenance, dict) else "",
            ):
                document.add_text("tags", tag)
            writer.add_document(document)
            thread = row["thread"]
            code, prev = -1, -1
            if thread:
                entry = meta.threads.get(thread)
                if entry is None:
                    entry = meta.threads[thread] = [len(meta.threads), doc, doc]
                else:
                    prev = entry[2]
                    entry[2] = doc
                    if prev < first:
                        next_fixes.append((prev, doc))
                    else:
                        cols["next"][prev - first] = doc
                code = entry[0]
                touched.setdefault(thread, []).extend(row_terms)
            cols["n"].append(int(row["n"]))
            cols["ring"].append(ring)
            cols["thread"].append(code)
            cols["tokens"].append(int(row["tokens"]))
            cols["prev"].append(prev)
            cols["next"].append(-1)
        for name, values in cols.items():
            files[name].write(np.asarray(values, dtype=_ARRAYS[name][0]).tobytes())
        vectors = local_vectors([row["text"] for row in rows])
        files["local"].write(np.ascontiguousarray(vectors, dtype="<f4").tobytes())
        meta.docs += count
        meta.last_n = int(rows[-1]["n"])

    def _fix_next(self, fixes: Sequence[tuple[int, int]]) -> None:
        """Link the previous last memory of a thread to its new successor (in place)."""
        if not fixes:
            return
        with (self.folder / "next.bin").open("r+b") as f:
            for prev, doc in fixes:
                f.seek(prev * 4)
                f.write(np.asarray([doc], dtype="<i4").tobytes())

    def _threads(self, writer: Any, touched: dict[str, list[str]]) -> None:
        """Replace each touched thread's document with its terms so far plus the new ones."""
        if not touched:
            return
        self.threads.reload()
        searcher = self.threads.searcher()
        for thread, new_terms in touched.items():
            code = self.meta.threads[thread][0]
            old: list[str] = []
            hits = searcher.search(tantivy.Query.term_query(THREAD_SCHEMA, "code", code), 1).hits
            if hits:
                old = [searcher.doc(hits[0][1]).get_first("terms") or ""]
                writer.delete_documents_by_term("code", code)
            document = tantivy.Document()
            document.add_unsigned("code", code)
            document.add_text("terms", " ".join([*old, *new_terms]).strip())
            writer.add_document(document)

    def _load_dense(self, store: Store) -> None:
        """Dense vectors of the engine in use, by document (zeros where a memory has none)."""
        engine = self.dense_engine
        if not engine:
            return
        meta = self.meta
        path = self.folder / _dense_file(engine)
        dims = meta.dense.get(engine, 0)
        filled = path.stat().st_size // (4 * dims) if dims and path.exists() else 0
        if filled > meta.docs:
            raise _Stale("dense")
        if filled == meta.docs:
            return
        n_of = np.fromfile(self.folder / "n.bin", dtype="<i8")
        after = int(n_of[filled - 1]) if filled else 0
        with store.read() as tx:
            rows = _repo.dense_rows_after(tx, engine, after, meta.last_n)
        if rows and not dims:
            dims = meta.dense[engine] = int(rows[0]["dims"])
        if not dims:
            return  # no vector yet: the stage stays off until the first one arrives
        block = np.zeros((meta.docs - filled, dims), dtype="<f4")
        positions = np.searchsorted(n_of, [int(r["n"]) for r in rows])
        for pos, row in zip(positions, rows, strict=True):
            if int(row["dims"]) == dims and filled <= pos < meta.docs:
                block[pos - filled] = blob_to_vector(row["vector"], dims)
        with path.open("ab") as f:
            f.write(block.tobytes())


__all__ = [
    "INDEX_VERSION",
    "SCAN_LIMIT",
    "TEXT_SCHEMA",
    "THREAD_SCHEMA",
    "RetrievalIndex",
    "View",
    "matvec",
    "tag_terms",
]
