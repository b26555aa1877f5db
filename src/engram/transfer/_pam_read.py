"""Reading a PAM document a member at a time: never the whole text, never the whole value.

A PAM memory store is one JSON object whose bulk is ``$.memories``. This reader walks the two
outer levels itself (the root object and the memories array) and hands every other value, each
memory included, to :func:`engram.core.canonical.parse_strict` as its own slice of text. So
what is refused, and the words that refuse it, are the whole-document parser's by construction:
each fault is reported at its offset in the whole text (the slice's offset added), faults
``parse_strict`` finds only after a full parse (escaped lone surrogates) are held until the
document is known to parse, and the first I-JSON fault in document order wins as it does there.

Why not an incremental parser such as ijson: its events would have to be re-checked against
every I-JSON rule (duplicate names, lone surrogates, integers beyond 2^53-1, overflowing
floats) and its errors re-worded, two implementations of one rule; the C scanner that
``parse_strict`` uses finds where a slice ends (:data:`_LENIENT`) at the same speed.

Memory: the text buffer holds the value being read and at most one chunk beyond it, so the
reader's peak is proportional to the largest single memory (or other member), not the document.
Spec: RFC 8259, RFC 7493 (I-JSON); docs/spec/pam.md "Import".
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, BinaryIO, NoReturn, Protocol

from engram.core.bounds import MAX_ELEMENTS
from engram.core.canonical import Json, parse_strict, parse_strict_at
from engram.errors import CanonicalJsonError, InvalidRequest
from engram.transfer._pam_format import error_detail

MAX_DOCUMENT_BYTES = 256 * 1024 * 1024
"""Bytes of one PAM document (about 220,000 memories as engram writes them, ~1.2 KB each)."""
MAX_STREAMED_MEMORIES = 1_000_000
"""Memories of one document read a memory at a time (the ids are what the reader keeps of each;
the bytes cap alone would allow ~1.5 million of the smallest valid memory)."""


@dataclass(frozen=True)
class PamLimits:
    """The bounds on a PAM document read a memory at a time, and so on what an export writes
    (docs/spec/limits.md §2). PAM 1.0 sets none (its schema gives ``memories`` no ``maxItems``):
    these are engram's, and an application may lower them (tests do, to cross them cheaply).

    ``max_member_values`` bounds each memory on its own and the root's other members together
    (``engram.core.bounds.MAX_ELEMENTS``, what a whole parsed document may hold): the reader
    holds one memory at a time and the other members whole."""

    max_bytes: int = MAX_DOCUMENT_BYTES
    max_memories: int = MAX_STREAMED_MEMORIES
    max_member_values: int = MAX_ELEMENTS


DEFAULT_LIMITS = PamLimits()
CHUNK = 1 << 20  # characters read at a time
_WS = " \t\n\r"
_LENIENT = json.JSONDecoder()  # only says where a value ends; parse_strict says what it is
# What parse_strict's hooks refuse while the C scanner runs (located by a rescan), as opposed
# to escaped lone surrogates, which it finds only once the whole text has parsed.
_HOOKED = frozenset({"duplicate_member", "non_finite_number", "integer_out_of_range"})
# The escapes that may start a lone surrogate (core/_locate.py scans for the same): replaced by
# an escape of the same length to ask whether a slice has any other fault.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
# How close to the end of the buffer a syntax error may be and still be only the end of what
# has been read so far ("tru", "1e", "\u12": at most a few characters of one token).
_TRUNCATION_WINDOW = 16


def spool(
    source: BinaryIO, into: IO[bytes], name: str, max_bytes: int = MAX_DOCUMENT_BYTES
) -> None:
    """Copy ``source`` into ``into`` (a private file the passes read again), refusing what the
    whole-document reader refused before it parsed: more than ``max_bytes``, then invalid
    UTF-8 (first bad byte, its character offset), then a byte-order mark."""
    total = chars = 0
    pending = b""
    fault: CanonicalJsonError | None = None
    first = True
    bom = False
    while True:
        chunk = source.read(CHUNK)
        total += len(chunk)
        if total > max_bytes:
            raise InvalidRequest(f"{name}: larger than {max_bytes} bytes")
        if fault is None:
            data = pending + chunk
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as e:
                if chunk and e.reason == "unexpected end of data" and e.end == len(data):
                    text, pending = data[: e.start].decode("utf-8"), data[e.start :]
                else:
                    offset = chars + len(data[: e.start].decode("utf-8"))
                    at = total - len(data) + e.start
                    fault = CanonicalJsonError("invalid_utf8", offset, f"{e.reason} at byte {at}")
                    text = ""
            else:
                pending = b""
            if first and text:
                first = False
                bom = text.startswith("\ufeff")
            chars += len(text)
        if not chunk:
            break
        into.write(chunk)
    if fault is not None:
        raise fault
    if bom:
        raise CanonicalJsonError("syntax", 0, "byte-order mark is not allowed")


class Handler(Protocol):
    """What a pass does with the document: the root's members but the memories array, the
    start of that array, and each of its items."""

    def member(self, name: str, value: Json) -> None: ...

    def memories_begin(self) -> None: ...

    def memory(self, index: int, value: Json) -> None: ...


class Reader:
    """One pass over the text of a document (``strict``: every value through parse_strict;
    otherwise, for a second pass over text already checked, the plain C parser)."""

    def __init__(self, stream: IO[str], *, strict: bool = True) -> None:
        self._stream = stream
        self._strict = strict
        self._buf = ""
        self._base = 0  # offset in the whole text of _buf[0]
        self._pos = 0
        self._eof = False
        # The first I-JSON fault held back: an escaped lone surrogate (reported only when the
        # whole text parses, as parse_strict does) or a duplicate name of the root object
        # (whose hook fires only when the root closes).
        self._pending: CanonicalJsonError | None = None
        self.is_object = False

    # --- the buffer ---------------------------------------------------------------------

    def _fill(self, keep: int) -> bool:
        """Read more text, dropping what lies before ``keep``; False at the end."""
        if self._eof:
            return False
        chunk = self._stream.read(max(CHUNK, len(self._buf) - keep))  # grows geometrically
        if not chunk:
            self._eof = True
            return False
        self._buf = self._buf[keep:] + chunk
        self._base += keep
        self._pos -= keep
        return True

    def _skip_ws(self) -> str:
        """Skip whitespace; the next character, or "" at the end of the text."""
        while True:
            buf, pos = self._buf, self._pos
            while pos < len(buf) and buf[pos] in _WS:
                pos += 1
            self._pos = pos
            if pos < len(buf):
                return buf[pos]
            if not self._fill(pos):
                return ""

    def _syntax(self, message: str) -> CanonicalJsonError:
        return CanonicalJsonError("syntax", self._base + self._pos, message)

    # --- values -------------------------------------------------------------------------

    def _value(self) -> tuple[Json, bool]:
        """The value at the cursor, parsed alone; (value, True), or (None, False) when it holds
        only a fault held back (a lone surrogate) and so the document is refused anyway."""
        start = self._pos
        if self._strict:
            # The common case in one strict parse in place; anything else (a fault, a value
            # that may go on past what has been read) takes the two steps below, which word it.
            fast = parse_strict_at(self._buf, start)
            if fast is not None and fast[1] < len(self._buf):
                self._pos = fast[1]
                return fast[0], True
        while True:
            try:
                value, end = _LENIENT.raw_decode(self._buf, start)
            except json.JSONDecodeError as e:
                near_end = e.pos >= len(self._buf) - _TRUNCATION_WINDOW
                if (near_end or e.msg.startswith("Unterminated string")) and self._fill(start):
                    start = self._pos
                    continue
                self._fault(self._buf[start:], self._base + start)
            except RecursionError:
                self._fault(self._buf[start:], self._base + start)
            if end == len(self._buf) and self._fill(start):  # a number may go on
                start = self._pos
                continue
            break
        self._pos = end
        if not self._strict:
            return value, True
        return self._checked(self._buf[start:end], self._base + start)

    def _checked(self, text: str, offset: int) -> tuple[Json, bool]:
        try:
            return parse_strict(text), True
        except CanonicalJsonError as e:
            if e.reason == "lone_surrogate" and not self._hooked(text):
                self._hold(CanonicalJsonError(e.reason, offset + int(e.position), error_detail(e)))
                return None, False
            self._raise_moved(e, offset)

    @staticmethod
    def _hooked(text: str) -> bool:
        """Whether ``text`` has a fault parse_strict's hooks catch besides its surrogates."""
        try:
            parse_strict(_SURROGATE_ESCAPE.sub(r"\\u00", text))
        except CanonicalJsonError as e:
            return e.reason in _HOOKED
        return False

    def _fault(self, text: str, offset: int) -> NoReturn:
        """The slice at ``offset`` does not parse: raise what parse_strict says of it."""
        try:
            parse_strict(text)
        except CanonicalJsonError as e:
            self._raise_moved(e, offset)
        raise AssertionError("a slice the scanner refused parsed")  # pragma: no cover

    def _raise_moved(self, error: CanonicalJsonError, offset: int) -> NoReturn:
        if error.reason == "nesting_too_deep":
            raise error
        if error.reason == "syntax":
            raise CanonicalJsonError("syntax", offset + int(error.position), error_detail(error))
        if self._pending is not None:  # an earlier fault: the rescan names it first
            raise self._pending
        raise CanonicalJsonError(error.reason, offset + int(error.position), error_detail(error))

    def _hold(self, fault: CanonicalJsonError) -> None:
        if self._pending is None:
            self._pending = fault

    # --- the two outer levels -----------------------------------------------------------

    def read(self, handler: Handler) -> bool:
        """Walk the document into ``handler``. True when the root is an object; False when it
        is not (its value is read, checked and dropped). Raises the document's first fault."""
        for _ in self.steps(handler):
            pass
        return self.is_object

    def steps(self, handler: Handler) -> Iterator[None]:
        """:meth:`read`, pausing after each memory (so a consumer can take them one by one)."""
        first = self._skip_ws()
        self.is_object = first == "{"
        if self.is_object:
            yield from self._object(handler)
        elif first == "[":
            yield from self._array(lambda _i, _v: None)
        else:
            self._value()
        end = self._base + self._pos
        if self._skip_ws() != "":
            raise CanonicalJsonError("syntax", end, "extra data after the JSON value")
        if self._pending is not None:
            raise self._pending

    def _object(self, handler: Handler) -> Iterator[None]:
        self._pos += 1  # {
        names: set[str] = set()
        char = self._skip_ws()
        if char == "}":
            self._pos += 1
            return
        while True:
            if char != '"':
                raise self._syntax("Expecting property name enclosed in double quotes")
            at = self._base + self._pos
            name, ok = self._value()
            if ok and isinstance(name, str):
                if name in names:
                    self._hold(
                        CanonicalJsonError("duplicate_member", at, f"member name {name!r} repeats")
                    )
                names.add(name)
            if self._skip_ws() != ":":
                raise self._syntax("Expecting ':' delimiter")
            self._pos += 1
            char = self._skip_ws()
            if name == "memories" and char == "[":
                handler.memories_begin()
                yield from self._array(handler.memory)
            else:
                value, ok = self._value()
                if ok and isinstance(name, str):
                    handler.member(name, value)
            char = self._skip_ws()
            if char == "}":
                self._pos += 1
                return
            if char != ",":
                raise self._syntax("Expecting ',' delimiter")
            self._pos += 1
            char = self._skip_ws()

    def _array(self, on_item: Callable[[int, Json], None]) -> Iterator[None]:
        self._pos += 1  # [
        if self._skip_ws() == "]":
            self._pos += 1
            return
        index = 0
        while True:
            if self._skip_ws() == "":
                raise self._syntax("Expecting value")
            value, ok = self._value()
            if ok and self._pending is None:
                on_item(index, value)
                yield
            index += 1
            char = self._skip_ws()
            if char == "]":
                self._pos += 1
                return
            if char != ",":
                raise self._syntax("Expecting ',' delimiter")
            self._pos += 1


__all__ = [
    "CHUNK",
    "DEFAULT_LIMITS",
    "MAX_DOCUMENT_BYTES",
    "MAX_STREAMED_MEMORIES",
    "Handler",
    "PamLimits",
    "Reader",
    "spool",
]
