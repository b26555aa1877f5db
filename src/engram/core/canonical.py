"""Canonical JSON: RFC 8785 (JCS) bytes, and a strict I-JSON (RFC 7493) parser.

Every signature and digest in engram is computed over bytes from :func:`canonicalize`; nothing
else may produce signed bytes (a ruff banned-api rule keeps ``json.dumps`` out of signing code).

Serialisation runs through a fast path (``_jcs``) that writes exactly the bytes of the ``rfc8785``
package, which stays the reference: documents the fast path cannot vouch for are handed to
``rfc8785`` itself. Every refusal is one error type, :class:`~engram.errors.CanonicalJsonError`,
naming the ``reason`` and the ``position``: a path such as ``$.beliefs[3].confidence`` into a
Python value, or a character offset into parsed text. docs/spec/canonical-json.md lists them.

Spec: RFC 8785; RFC 7493 §2.1-2.3; OpenWOP v2 Conformance §"Canonical JSON" (a signer MUST
refuse, not coerce, duplicate member names, lone surrogates, non-finite numbers, integer literals
beyond 2^53-1 and non-JSON values; a verifier that meets one MUST fail verification).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Sequence
from typing import Any, NoReturn, TypeAlias

from engram.core import _jcs, _locate
from engram.errors import CanonicalJsonError, EngramError

JsonScalar: TypeAlias = bool | int | float | str | None
Json: TypeAlias = JsonScalar | list["Json"] | dict[str, "Json"]
"""A JSON value as Python sees it, all the way down: dict, list, str, int, float, bool or None.

Recursive, so mypy checks what crosses a boundary: a member is narrowed (``isinstance``) before
it is used. What :func:`parse_strict` returns (:func:`parse_object` when it must be an object)
and what a ``to_wire`` method builds."""
JsonObject: TypeAlias = dict[str, Json]
"""A JSON object; the usual return type of ``to_wire``."""
JsonArray: TypeAlias = list[Json]
JsonValue: TypeAlias = Any
"""Unchecked JSON (:data:`typing.Any`), kept only for compatibility: nothing in engram uses it
and it is no longer exported (not in ``__all__``, nor in :mod:`engram.core`); write
:data:`Json` or :data:`JsonObject`. :func:`canonicalize`, :func:`check_i_json` and
:func:`digest_hex` take ``object`` on purpose: they are the run-time check and refuse whatever
is not I-JSON."""

MAX_SAFE_INTEGER = 2**53 - 1
MAX_NESTING = _jcs.MAX_NESTING
# 2^53-1 has 16 digits: a longer integer literal is out of range whatever its digits say.
_SAFE_INTEGER_DIGITS = _locate.SAFE_INTEGER_DIGITS

_EXPONENT_FORM_MIN = 1e21  # from here ECMAScript writes numbers in exponent form
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def canonicalize(value: object) -> bytes:
    """Return the RFC 8785 bytes of ``value`` after checking it is I-JSON.

    Raises :class:`CanonicalJsonError` for anything that is not I-JSON (non-string member names,
    lone surrogates, non-finite floats, integers beyond 2^53-1, sets, bytes, nesting deeper than
    :data:`MAX_NESTING`, ...), naming the path of the first offending value.
    """
    try:
        return _jcs.dumps(value)
    except (_jcs.RefusedError, UnicodeEncodeError, RecursionError):
        # RecursionError: only when the caller's own stack is already deep; the walk below
        # reports the nesting in the same terms.
        pass
    # Only on failure: walk again, this time keeping paths, to say what is wrong and where.
    check_i_json(value)
    raise CanonicalJsonError("not_json", "$", "value cannot be canonicalised")  # pragma: no cover


def canonicalize_rows(names: Sequence[str], rows: Sequence[Sequence[object]]) -> bytes:
    """:func:`canonicalize` of ``[dict(zip(names, row)) for row in rows]``, the same bytes and
    the same refusals, without building the objects when they are flat rows of strings and
    integers (``_jcs.dumps_rows``); any other row sends them all through :func:`canonicalize`.
    """
    fast = _jcs.dumps_rows(names, rows)
    if fast is not None:
        return fast
    return canonicalize([dict(zip(names, row, strict=True)) for row in rows])


def canonicalize_row(names: tuple[str, ...], row: Sequence[object]) -> bytes:
    """:func:`canonicalize` of ``dict(zip(names, row))``, the same bytes and the same refusals,
    without building or walking the object when its values are strings, safe integers, nulls
    and lists of strings (``_jcs.dumps_row``)."""
    fast = _jcs.dumps_row(names, row)
    if fast is not None:
        return fast
    return canonicalize(dict(zip(names, row, strict=True)))


def check_i_json(value: object, path: str = "$") -> None:
    """Raise :class:`CanonicalJsonError` unless ``value`` is an I-JSON value.

    Members are visited in document order, so the error names the first offending value.
    """
    _check(value, path, 0)


def _check(item: object, where: str, depth: int) -> None:
    if item is None or isinstance(item, bool):
        return
    if isinstance(item, str):
        _check_string(item, where)
    elif isinstance(item, int):
        if abs(item) > MAX_SAFE_INTEGER:
            raise CanonicalJsonError("integer_out_of_range", where, _big_int_detail(item))
    elif isinstance(item, float):
        if not math.isfinite(item):
            raise CanonicalJsonError("non_finite_number", where, f"{item!r} is not a JSON number")
        if item.is_integer() and MAX_SAFE_INTEGER < abs(item) < _EXPONENT_FORM_MIN:
            # RFC 8785 writes it as an integer literal beyond 2^53-1: no verifier could parse it.
            raise CanonicalJsonError(
                "integer_out_of_range", where, f"{item!r} would be written as an integer > 2^53-1"
            )
    elif isinstance(item, dict | list | tuple):
        if depth >= MAX_NESTING:
            raise CanonicalJsonError(
                "nesting_too_deep", where, f"more than {MAX_NESTING} levels (or a cycle)"
            )
        if isinstance(item, dict):
            for key, member in item.items():
                if not isinstance(key, str):
                    raise CanonicalJsonError(
                        "not_json", where, f"member name {key!r} is not a string"
                    )
                inner = _member_path(where, key)
                _check_string(key, inner)
                _check(member, inner, depth + 1)
        else:
            for index, member in enumerate(item):
                _check(member, f"{where}[{index}]", depth + 1)
    else:
        raise CanonicalJsonError("not_json", where, f"{type(item).__name__} is not a JSON value")


def _big_int_detail(number: int) -> str:
    # str() of an int of more than 4,300 digits raises ValueError (Python's own limit), and a
    # message must stay one short line anyway: name the size, not the digits.
    if number.bit_length() > 64:
        return f"an integer of {number.bit_length()} bits exceeds 2^53-1"
    return f"{number} exceeds 2^53-1"


def _member_path(where: str, key: str) -> str:
    if _IDENTIFIER.match(key):
        return f"{where}.{key}"
    # repr escapes quotes, controls and surrogates, so the path itself is always printable.
    return f"{where}[{key!r}]"


def _check_string(text: str, where: str) -> None:
    # A surrogate code point in a Python str is always unpaired: json joins an escaped pair
    # into one astral code point, and UTF-8 cannot encode a lone one.
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise CanonicalJsonError(
            "lone_surrogate", where, f"U+{ord(text[e.start]):04X} at index {e.start} of the string"
        ) from e


def parse_strict(data: bytes | str) -> Json:
    """Parse JSON text and refuse anything that is not I-JSON (RFC 7493).

    Refused, each with its own ``reason``: invalid UTF-8, a byte-order mark, duplicate member
    names, lone surrogates (escaped or raw), ``NaN``/``Infinity`` and numbers that overflow a
    double, integer literals beyond 2^53-1, and syntax errors. ``position`` is always the
    character offset (into the decoded text) where the first fault in document order begins.
    """
    if isinstance(data, bytes | bytearray | memoryview):
        raw = bytes(data)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            offset = len(raw[: e.start].decode("utf-8"))
            raise CanonicalJsonError("invalid_utf8", offset, f"{e.reason} at byte {e.start}") from e
    elif isinstance(data, str):
        text = data
    else:
        raise CanonicalJsonError("not_json", "$", f"cannot parse {type(data).__name__}")
    if text.startswith("\ufeff"):
        raise CanonicalJsonError("syntax", 0, "byte-order mark is not allowed")
    # The decoder's hooks build only dicts, lists, str, int, float, bool and None: a Json.
    value: Json
    try:
        value, end = _DECODER.raw_decode(text, _skip_ws(text, 0))
    except _HookFaultError as e:
        _raise_located(text, e)
    except json.JSONDecodeError as e:
        raise CanonicalJsonError("syntax", e.pos, e.msg) from e
    except RecursionError as e:
        raise CanonicalJsonError("nesting_too_deep", 0, "nesting too deep to parse") from e
    if _skip_ws(text, end) != len(text):
        raise CanonicalJsonError("syntax", end, "extra data after the JSON value")
    # Lone surrogates: raw ones make a str input unencodable; escaped ones need a "\uD8.." text.
    if (isinstance(data, str) and not _encodes(text)) or _locate.SURROGATE_ESCAPE.search(text):
        fault = _locate.first_fault(text)
        if fault is not None:
            raise CanonicalJsonError(fault.reason, fault.position, fault.detail)
    return value


def parse_strict_at(text: str, start: int) -> tuple[Json, int] | None:
    """The value that begins at ``text[start]`` (not whitespace) and where it ends, when it is
    plainly I-JSON: ``(value, end)``, the value exactly as ``parse_strict(text[start:end])``
    would return it. None whenever ``parse_strict`` of that slice might refuse it (no value
    parses, one of its hooks fires, the nesting is too deep, or it may hold a lone surrogate);
    the caller then finds the slice's end and asks :func:`parse_strict`, which words the
    refusal. A value that ends where ``text`` does may go on past it (a number): a caller
    reading text a chunk at a time judges that.

    Why: a reader that walks a large document a value at a time (the PAM import) found each
    value's end with the plain C scanner, then parsed the slice again strictly; one strict
    parse in place does both when nothing is wrong, which is what the reader meets almost always.
    """
    try:
        value, end = _DECODER.raw_decode(text, start)
    except (_HookFaultError, json.JSONDecodeError, RecursionError):
        return None
    # parse_strict's own last checks, on the slice: escaped and raw lone surrogates.
    if _locate.SURROGATE_ESCAPE.search(text, start, end) or not _encodes(text[start:end]):
        return None
    return value, end


def parse_object(data: bytes | str, *, what: str, error: type[EngramError]) -> JsonObject:
    """:func:`parse_strict` for a document that must be a JSON object.

    Each seam reports faults in its own error class (a malformed request body is bad input, a
    malformed export from a provider is a verification failure), so the caller names the class
    and what the document is; the message says which rule it broke.
    """
    try:
        value = parse_strict(data)
    except CanonicalJsonError as e:
        raise error(f"{what} is not I-JSON: {e.message}") from e
    if not isinstance(value, dict):
        raise error(f"{what} is not a JSON object")
    return value


class _HookFaultError(Exception):
    """Raised inside the C parser's hooks; located by a rescan of the text."""

    def __init__(self, reason: str, literal: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.literal = literal


def _raise_located(text: str, hook: _HookFaultError) -> NoReturn:
    fault = _locate.first_fault(text)
    if fault is None:  # pragma: no cover - the scanner sees every fault a hook sees
        raise CanonicalJsonError(hook.reason, max(text.find(hook.literal), 0), hook.literal)
    raise CanonicalJsonError(fault.reason, fault.position, fault.detail) from None


def _reject_constant(name: str) -> float:
    raise _HookFaultError("non_finite_number", name)


def _parse_int(literal: str) -> int:
    # Decided by length first: int() of a literal of more than 4,300 digits raises a bare
    # ValueError (Python's limit on int-from-str conversion), which must never escape a parser
    # that every JSON entry point relies on. JSON has no leading zeros, so more than 16 digits
    # is always beyond 2^53-1 (issue 15, point 2).
    if len(literal) - literal.startswith("-") > _SAFE_INTEGER_DIGITS:
        raise _HookFaultError("integer_out_of_range", literal)
    number = int(literal)
    if abs(number) > MAX_SAFE_INTEGER:
        raise _HookFaultError("integer_out_of_range", literal)
    return number


def _parse_float(literal: str) -> float:
    number = float(literal)
    if not math.isfinite(number):
        raise _HookFaultError("non_finite_number", literal)
    return number


def _pairs(pairs: list[tuple[str, Json]]) -> JsonObject:
    result = dict(pairs)
    if len(result) != len(pairs):
        raise _HookFaultError("duplicate_member", next(k for k, _ in pairs if k in result))
    return result


_DECODER = json.JSONDecoder(
    object_pairs_hook=_pairs,
    parse_int=_parse_int,
    parse_float=_parse_float,
    parse_constant=_reject_constant,
)

_WS = " \t\n\r"


def _skip_ws(text: str, index: int) -> int:
    while index < len(text) and text[index] in _WS:
        index += 1
    return index


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def digest_hex(value: object) -> str:
    """Hex SHA-256 of the canonical bytes of ``value`` (the project's one JSON digest)."""
    return hashlib.sha256(canonicalize(value)).hexdigest()


__all__ = [
    "MAX_NESTING",
    "MAX_SAFE_INTEGER",
    "Json",
    "JsonArray",
    "JsonObject",
    "JsonScalar",
    "canonicalize",
    "check_i_json",
    "digest_hex",
    "parse_object",
    "parse_strict",
    "parse_strict_at",
]
