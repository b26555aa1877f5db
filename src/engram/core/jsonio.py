"""JSON text for people and for wire bodies that nobody signs.

Signed or hashed bytes come only from :func:`engram.core.canonical.canonicalize`. Everything
else that writes JSON - CLI ``--json`` output, HTTP response bodies, config files - comes through
:func:`dumps_text`, so the one ``json.dumps`` call outside the canonicaliser lives here where a
reviewer can see it, and the project-wide ruff ban (TID251) keeps it from spreading.
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring
from typing import Any

from engram.errors import CanonicalJsonError

_INFINITY = float("inf")
_MAX_DEPTH = 100  # deeper (or a cycle): json.dumps writes it, or says why it cannot


_COMPACT_SORTED = json.JSONEncoder(
    separators=(",", ":"), sort_keys=True, ensure_ascii=False, allow_nan=False
)
_COMPACT = json.JSONEncoder(
    separators=(",", ":"), sort_keys=False, ensure_ascii=False, allow_nan=False
)


class _Fallback(Exception):
    """A value the indented writer leaves to ``json.dumps`` (which writes it or refuses it)."""


def dumps_text(value: object, *, indent: int | None = None, sort_keys: bool = True) -> str:
    """JSON text of ``value``: compact when ``indent`` is None, else pretty with that indent.

    Non-ASCII characters are written as themselves (the text is meant to be UTF-8 encoded).
    ``NaN``/``Infinity`` and non-JSON Python values raise
    :class:`~engram.errors.CanonicalJsonError` instead of producing text other parsers refuse.
    Never sign or hash the result: use ``canonicalize`` for that.
    """
    if indent is not None:
        fast = _indented(value, indent, sort_keys)
        if fast is not None:
            return fast
    separators = (",", ":") if indent is None else (",", ": ")
    try:
        if indent is None:
            # json.dumps' own text: with these arguments it builds this encoder on every call
            # (a microsecond: a PAM import writes a few such texts per memory).
            return (_COMPACT_SORTED if sort_keys else _COMPACT).encode(value)
        # The one sanctioned json.dumps: output is for humans and unsigned wire bodies only.
        return json.dumps(  # noqa: TID251
            value,
            indent=indent,
            sort_keys=sort_keys,
            separators=separators,
            ensure_ascii=False,
            allow_nan=False,
        )
    except ValueError as e:
        # json says "Out of range float values ..." for NaN/Infinity, "Circular reference ..."
        reason = "non_finite_number" if "float" in str(e) else "not_json"
        raise CanonicalJsonError(reason, "$", str(e)) from e
    except TypeError as e:
        raise CanonicalJsonError("not_json", "$", str(e)) from e


# --- the indented text without json's pure-Python encoder -----------------------------------
#
# json has a C encoder only for compact text (before Python 3.13); with an indent it walks the
# value with generators, a few microseconds per value: most of writing a PAM export (issue 33).
# This writer emits exactly json.dumps(value, indent=n, separators=(",", ": "), sort_keys=...,
# ensure_ascii=False, allow_nan=False) for dicts with str keys, lists, str, int, float, bool and
# None of those exact types (strings through json's own C escaper, numbers through the same
# reprs), and hands anything else (subclasses, tuples, other keys, NaN, deep nesting or a
# cycle) to json.dumps, which writes or refuses it as before (tests/core/test_core_jsonio.py).


def _indented(value: object, indent: int, sort_keys: bool) -> str | None:
    parts: list[str] = []
    try:
        _write(value, parts, "\n", " " * indent, sort_keys, 0)
    except (_Fallback, TypeError):  # TypeError: sorting keys that are not all str
        return None
    return "".join(parts)


def _scalar(value: Any, kind: type) -> str:
    if kind is str:
        return encode_basestring(value)
    if value is None:
        return "null"
    if kind is bool:
        return "true" if value else "false"
    if kind is int:
        return int.__repr__(value)
    if kind is float and value == value and value not in (_INFINITY, -_INFINITY):
        return float.__repr__(value)
    raise _Fallback


def _write(
    value: Any, parts: list[str], newline: str, step: str, sort_keys: bool, depth: int
) -> None:
    kind = type(value)
    if kind is dict:
        if not value:
            parts.append("{}")
            return
        if depth >= _MAX_DEPTH:
            raise _Fallback
        inner = newline + step
        lead = "{" + inner
        for key, member in sorted(value.items()) if sort_keys else value.items():
            if type(key) is not str:
                raise _Fallback
            head = lead + encode_basestring(key) + ": "
            lead = "," + inner
            member_kind = type(member)
            if member_kind is str:
                parts.append(head + encode_basestring(member))
            elif member_kind is dict or member_kind is list:
                parts.append(head)
                _write(member, parts, inner, step, sort_keys, depth + 1)
            else:
                parts.append(head + _scalar(member, member_kind))
        parts.append(newline + "}")
    elif kind is list:
        if not value:
            parts.append("[]")
            return
        if depth >= _MAX_DEPTH:
            raise _Fallback
        inner = newline + step
        lead = "[" + inner
        for member in value:
            member_kind = type(member)
            if member_kind is str:
                parts.append(lead + encode_basestring(member))
            elif member_kind is dict or member_kind is list:
                parts.append(lead)
                _write(member, parts, inner, step, sort_keys, depth + 1)
            else:
                parts.append(lead + _scalar(member, member_kind))
            lead = "," + inner
        parts.append(newline + "]")
    else:
        parts.append(_scalar(value, kind))


__all__ = ["dumps_text"]
