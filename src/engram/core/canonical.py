"""Canonical JSON: RFC 8785 (JCS) bytes, and a strict I-JSON (RFC 7493) parser.

Every signature and digest in engram is computed over bytes from :func:`canonicalize`; nothing
else may produce signed bytes (a ruff banned-api rule keeps ``json.dumps`` out of signing code).

``rfc8785`` does the serialisation. It sees Python objects, so what it cannot see - duplicate
member names in the *text* - is caught here at parse time; and what it reports as foreign
exceptions (a lone surrogate in a key surfaces as a bare ``UnicodeEncodeError``) is wrapped into
one error type, :class:`~engram.errors.CanonicalJsonError`, that names the reason and the position.

Spec: openwop-conformance-v2 §"Canonical JSON" (a signer MUST refuse, not coerce, duplicate member
names, lone surrogates, non-finite numbers, integer literals beyond 2^53-1, non-JSON values).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias

import rfc8785

from engram.errors import CanonicalJsonError

JsonValue: TypeAlias = Any
"""A JSON value as Python sees it: dict, list, str, int, float, bool or None."""

MAX_SAFE_INTEGER = 2**53 - 1


def canonicalize(value: JsonValue) -> bytes:
    """Return the RFC 8785 bytes of ``value`` after checking it is I-JSON.

    Raises :class:`CanonicalJsonError` for anything that is not I-JSON (non-string keys, lone
    surrogates, non-finite floats, integers beyond 2^53-1, sets, bytes, ...).
    """
    check_i_json(value)
    try:
        return rfc8785.dumps(value)
    except rfc8785.CanonicalizationError as e:  # pragma: no cover - check_i_json found it first
        raise CanonicalJsonError("not_json", "$", str(e)) from e
    except UnicodeEncodeError as e:  # pragma: no cover - check_i_json found it first
        raise CanonicalJsonError("lone_surrogate", "$", str(e)) from e


def check_i_json(value: JsonValue, path: str = "$") -> None:
    """Raise :class:`CanonicalJsonError` unless ``value`` is an I-JSON value.

    Iterative rather than recursive so that a hostile, deeply nested document cannot exhaust
    the interpreter stack.
    """
    stack: list[tuple[JsonValue, str]] = [(value, path)]
    while stack:
        item, where = stack.pop()
        if item is None or isinstance(item, bool):
            continue
        if isinstance(item, str):
            _check_string(item, where)
        elif isinstance(item, int):
            if abs(item) > MAX_SAFE_INTEGER:
                raise CanonicalJsonError("integer_out_of_range", where, f"{item} exceeds 2^53-1")
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise CanonicalJsonError("non_finite_number", where, repr(item))
        elif isinstance(item, Mapping):
            for key, member in item.items():
                if not isinstance(key, str):
                    raise CanonicalJsonError(
                        "not_json", where, f"member name {key!r} is not a string"
                    )
                _check_string(key, f"{where}.{key!r}")
                stack.append((member, f"{where}[{key!r}]"))
        elif isinstance(item, Sequence) and not isinstance(item, bytes | bytearray):
            for index, member in enumerate(item):
                stack.append((member, f"{where}[{index}]"))
        else:
            raise CanonicalJsonError(
                "not_json", where, f"{type(item).__name__} is not a JSON value"
            )


def _check_string(text: str, where: str | int) -> None:
    if _has_lone_surrogate(text):
        raise CanonicalJsonError("lone_surrogate", where)


def _has_lone_surrogate(text: str) -> bool:
    # Python str holds code points; a surrogate code point in a str is always unpaired here,
    # because json decodes a valid \\ud83d\\ude02 pair into one astral code point.
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _reject_constant(name: str) -> float:
    raise CanonicalJsonError("non_finite_number", "?", name)


def _parse_int(literal: str) -> int:
    number = int(literal)
    if abs(number) > MAX_SAFE_INTEGER:
        raise CanonicalJsonError("integer_out_of_range", "?", literal)
    return number


def _parse_float(literal: str) -> float:
    number = float(literal)
    if not math.isfinite(number):
        raise CanonicalJsonError("non_finite_number", "?", literal)
    return number


def _pairs(pairs: list[tuple[str, JsonValue]]) -> dict[str, JsonValue]:
    result: dict[str, JsonValue] = {}
    for key, member in pairs:
        if key in result:
            raise CanonicalJsonError("duplicate_member", "?", f"member name {key!r} repeats")
        result[key] = member
    return result


def parse_strict(data: bytes | str) -> JsonValue:
    """Parse JSON text and refuse anything that is not I-JSON (RFC 7493).

    Refused, each with its own ``reason``: invalid UTF-8, a byte-order mark, duplicate member
    names, lone surrogates (escaped or not), ``NaN``/``Infinity`` and overflowing numbers,
    integer literals beyond 2^53-1, and syntax errors. ``position`` is a character offset where
    the parser knows it; for hook-detected faults the offset of the enclosing value.
    """
    if isinstance(data, bytes | bytearray | memoryview):
        raw = bytes(data)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise CanonicalJsonError("invalid_utf8", e.start, e.reason) from e
    else:
        text = data
    if text.startswith("\ufeff"):
        raise CanonicalJsonError("syntax", 0, "byte-order mark is not allowed")
    decoder = json.JSONDecoder(
        object_pairs_hook=_pairs,
        parse_int=_parse_int,
        parse_float=_parse_float,
        parse_constant=_reject_constant,
    )
    try:
        value, end = decoder.raw_decode(text, _skip_ws(text, 0))
    except json.JSONDecodeError as e:
        raise CanonicalJsonError("syntax", e.pos, e.msg) from e
    except RecursionError as e:
        raise CanonicalJsonError("syntax", 0, "nesting too deep") from e
    if _skip_ws(text, end) != len(text):
        raise CanonicalJsonError("syntax", end, "extra data after the JSON value")
    # Escaped lone surrogates ("\\ud800") decode into surrogate code points: one scan finds them
    # in keys and values alike, and names where the first one stands.
    check_i_json(value)
    return value


_WS = " \t\n\r"


def _skip_ws(text: str, index: int) -> int:
    while index < len(text) and text[index] in _WS:
        index += 1
    return index


def digest_hex(value: JsonValue) -> str:
    """Hex SHA-256 of the canonical bytes of ``value`` (the project's one JSON digest)."""
    import hashlib

    return hashlib.sha256(canonicalize(value)).hexdigest()


__all__ = [
    "MAX_SAFE_INTEGER",
    "JsonValue",
    "canonicalize",
    "check_i_json",
    "digest_hex",
    "parse_strict",
]
