"""The PAM reader's building blocks, named for benchmarks and tests: not public API.

The tests prove that the streaming reader judges every document as the whole-document reader
does, which needs the reader's chunk made tiny (so that every value straddles a chunk boundary),
the shape walk compared with ``check_shape``, the compiled memory check compared with
jsonschema, and the normal form (of a memory, of an instant) an export writes. They import
them from here rather than from the private modules. Nothing here is a stable API for
applications: use ``engram.transfer``.
"""

from __future__ import annotations

from datetime import datetime

from engram.core.canonical import JsonObject
from engram.transfer import _pam_format, _pam_read
from engram.transfer._pam_check import Shape, fast_memory_check, shape_of


def set_read_chunk(chars: int) -> int:
    """Read ``chars`` at a time from now on; returns the size it replaces."""
    before = _pam_read.CHUNK
    _pam_read.CHUNK = chars
    return before


def normal_memory(memory: JsonObject) -> JsonObject:
    """A memory in the form the PAM SDK serialises (what engram's export writes)."""
    return _pam_format.normal_memory(memory)


def normal_instant(text: str) -> str:
    """An instant as the normal form spells it (refused as ``parse_pam_instant`` refuses)."""
    return _pam_format.normal_instant(text, "instant")


def format_instant(moment: datetime) -> str:
    """An instant as the PAM SDK writes it."""
    return _pam_format.format_instant(moment)


def written_instant(text: str) -> str:
    """The same, the long way: parsed, then written by ``format_instant``."""
    return _pam_format.format_instant(_pam_format.parse_instant(text, "instant"))


def memory_schema_valid(memory: object) -> bool:
    """jsonschema's verdict on one memory against ``#/$defs/MemoryObject``."""
    validator = _pam_format.validator()
    return next(validator.descend(memory, {"$ref": "#/$defs/MemoryObject"}), None) is None


__all__ = [
    "Shape",
    "fast_memory_check",
    "format_instant",
    "memory_schema_valid",
    "normal_instant",
    "normal_memory",
    "set_read_chunk",
    "shape_of",
    "written_instant",
]
