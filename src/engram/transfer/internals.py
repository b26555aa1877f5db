"""The PAM reader's building blocks, named for benchmarks and tests.

The tests prove that the streaming reader judges every document as the whole-document reader
does, which needs the reader's chunk made tiny (so that every value straddles a chunk boundary)
and the shape walk compared with ``check_shape``. They import them from here rather than from
the private modules. Nothing here is a stable API for applications: use ``engram.transfer``.
"""

from __future__ import annotations

from engram.transfer import _pam_read
from engram.transfer._pam_check import Shape, shape_of, shape_verdict


def set_read_chunk(chars: int) -> int:
    """Read ``chars`` at a time from now on; returns the size it replaces."""
    before = _pam_read.CHUNK
    _pam_read.CHUNK = chars
    return before


__all__ = ["Shape", "set_read_chunk", "shape_of", "shape_verdict"]
