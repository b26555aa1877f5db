"""Rows of a vector file of the retrieval index (``engram.memory._index``), read cheaply.

Split from ``_index`` (which keeps generations, views and updates) so each module has one
purpose: this one only reads float32 rows, memory-mapped or with ``pread``.
"""

from __future__ import annotations

import contextlib
import mmap
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

# Vector files up to this size are memory-mapped; larger ones are read row by row.
MAP_MAX_BYTES = 64 * 2**20


class RowFile:
    """Rows of a vector file: memory-mapped up to ``MAP_MAX_BYTES``, else read with ``pread``.

    A mapping serves 200 scattered rows in about 20 us against 240 us for 200 preads (1M bench
    file), but every page it touches stays in the process's RSS: over a long run the whole file
    (512 MB at 1M memories, beside a 600 MB target), and each first touch faults in 64 KB around
    it. So small files (64 MB: about 130k memories of local-128 vectors) are mapped, with
    ``MADV_RANDOM`` so no read-ahead is added, and larger ones are read with ``pread``, which
    costs no RSS."""

    def __init__(self, path: Path, docs: int, dims: int, map_max: int = MAP_MAX_BYTES) -> None:
        self.path, self.docs, self.dims = path, docs, dims
        self._width = 4 * dims
        self._fd = os.open(path, os.O_RDONLY) if docs else -1
        self._all: np.ndarray | None = None
        self._mapped: np.ndarray | None = None
        size = docs * self._width
        # A file shorter than the meta says (a crash mid-append) is never mapped: reading past
        # its end would be SIGBUS, where pread returns short rows (read as zeros).
        if docs and size <= map_max and os.fstat(self._fd).st_size >= size:
            mapping = mmap.mmap(self._fd, size, prot=mmap.PROT_READ)
            mapping.madvise(mmap.MADV_RANDOM)
            self._mapped = np.frombuffer(mapping, dtype="<f4").reshape(docs, dims)

    @property
    def mapped(self) -> bool:
        return self._mapped is not None

    @property
    def shape(self) -> tuple[int, int]:
        return (self.docs, self.dims)

    def rows(self, docs: Sequence[int] | np.ndarray) -> np.ndarray:
        whole = self._all if self._all is not None else self._mapped
        if whole is not None:
            return np.asarray(whole[np.asarray(docs, dtype=np.int64)], dtype=np.float32)
        width, fd, pread = self._width, self._fd, os.pread
        bufs = [pread(fd, width, int(d) * width) for d in docs]
        if all(len(b) == width for b in bufs):  # one copy into the array, not one per row
            joined = np.frombuffer(b"".join(bufs), dtype="<f4").reshape(len(bufs), self.dims)
            return joined.astype(np.float32)
        out = np.zeros((len(docs), self.dims), dtype=np.float32)
        for i, buf in enumerate(bufs):
            if len(buf) == width:
                out[i] = np.frombuffer(buf, dtype="<f4")
        return out

    def all(self) -> np.ndarray:
        """Every row (for the exact scans below SCAN_LIMIT memories): the mapping when there is
        one, else read once."""
        if self._mapped is not None:
            return self._mapped
        if self._all is None:
            if not self.docs:
                return np.zeros((0, self.dims), dtype=np.float32)
            raw = np.fromfile(self.path, dtype="<f4", count=self.docs * self.dims)
            self._all = raw.reshape(self.docs, self.dims)
        return self._all

    def __del__(self) -> None:
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._fd)


__all__ = ["MAP_MAX_BYTES", "RowFile"]
