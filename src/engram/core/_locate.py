"""Find where in JSON text the first I-JSON fault stands (for parse_strict's error position).

Python's C JSON parser reports syntax errors with an offset, but the hooks that catch I-JSON
faults (duplicate names, big integers, non-finite numbers) are handed values, not positions,
and escaped lone surrogates only show up in the decoded strings. When any of those fires,
:func:`first_fault` rescans the text with a small tokenizer and names the first fault in
document order with its character offset. It runs only on failure (and on text that contains
surrogate escapes), so the common path keeps the C parser's speed.

Spec: RFC 7493 §2.1 (UTF-8 without lone surrogates), §2.2 (integers within ±(2^53-1)),
§2.3 (unique member names); RFC 8259 §6 (no NaN/Infinity).
"""

from __future__ import annotations

import json.decoder
import math
import re
from collections.abc import Callable
from typing import NamedTuple, cast

MAX_SAFE_INTEGER = 2**53 - 1
SAFE_INTEGER_DIGITS = len(str(MAX_SAFE_INTEGER))  # 16

# json.decoder.scanstring is the C string scanner the parser itself uses (so escapes decode
# identically); typeshed does not declare it.
_scanstring = cast(
    "Callable[[str, int, bool], tuple[str, int]]",
    json.decoder.scanstring,  # type: ignore[attr-defined]
)

_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_CONSTANTS = (("NaN", "NaN"), ("Infinity", "Infinity"), ("-Infinity", "-Infinity"))
_LITERALS = ("true", "false", "null")
# Triggers a rescan for escaped surrogates; false positives ("\\\\ud800" text) only cost a scan.
SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


class Fault(NamedTuple):
    reason: str
    position: int
    detail: str


def first_fault(text: str) -> Fault | None:
    """The first I-JSON fault in ``text``, scanning up to the first syntax error.

    Returns None when the text up to its end (or its first syntax error) is I-JSON.
    """
    # One entry per open container: the member names seen so far (object) or None (array).
    stack: list[set[str] | None] = []
    expect_key = False
    index = 0
    end = len(text)
    while index < end:
        char = text[index]
        if char in " \t\n\r:":
            index += 1
        elif char == "{":
            stack.append(set())
            expect_key = True
            index += 1
        elif char == "[":
            stack.append(None)
            expect_key = False
            index += 1
        elif char in "}]":
            if stack:
                stack.pop()
            expect_key = False
            index += 1
        elif char == ",":
            expect_key = bool(stack) and stack[-1] is not None
            index += 1
        elif char == '"':
            try:
                value, after = _scanstring(text, index + 1, True)
            except ValueError:
                return None  # a syntax error: the parser's own message is better
            surrogate = _lone_surrogate(text, index, after)
            if surrogate is not None:
                return Fault("lone_surrogate", surrogate, "unpaired UTF-16 surrogate")
            names = stack[-1] if stack else None
            if expect_key and names is not None:
                if value in names:
                    return Fault("duplicate_member", index, f"member name {value!r} repeats")
                names.add(value)
                expect_key = False
            index = after
        else:
            fault, next_index = _scalar(text, index)
            if fault is not None or next_index is None:
                return fault
            index = next_index
    return None


def _scalar(text: str, index: int) -> tuple[Fault | None, int | None]:
    for literal, shown in _CONSTANTS:
        if text.startswith(literal, index):
            return Fault("non_finite_number", index, f"{shown} is not a JSON number"), None
    for literal in _LITERALS:
        if text.startswith(literal, index):
            return None, index + len(literal)
    match = _NUMBER.match(text, index)
    if match is None:
        return None, None  # a syntax error
    literal = match.group()
    if match.group(1) is None and match.group(2) is None:
        digits = len(literal) - literal.startswith("-")
        # By length before int(): int() refuses more than 4,300 digits with a bare ValueError.
        if digits > SAFE_INTEGER_DIGITS or abs(int(literal)) > MAX_SAFE_INTEGER:
            return Fault("integer_out_of_range", index, f"{_shown(literal)} exceeds 2^53-1"), None
    elif not math.isfinite(float(literal)):
        return Fault("non_finite_number", index, f"{_shown(literal)} overflows a double"), None
    return None, match.end()


def _shown(literal: str) -> str:
    """A number literal as an error message may quote it: one short line, however long."""
    if len(literal) <= 40:
        return literal
    return f"a number literal of {len(literal)} characters ({literal[:12]}...)"


def _lone_surrogate(text: str, start: int, after: int) -> int | None:
    """Offset of the first unpaired surrogate in the string literal text[start:after], or None.

    Only an escaped high surrogate directly followed by an escaped low one forms a pair (that is
    what the decoder joins into one code point); raw surrogate characters, which can only occur
    in a Python ``str`` input, are always lone.
    """
    index = start + 1
    stop = after - 1
    while index < stop:
        char = text[index]
        if char != "\\":
            if "\ud800" <= char <= "\udfff":
                return index
            index += 1
            continue
        if text[index + 1] != "u":
            index += 2
            continue
        unit = int(text[index + 2 : index + 6], 16)
        if 0xD800 <= unit <= 0xDBFF:
            if text.startswith("\\u", index + 6) and 0xDC00 <= _unit(text, index + 8) <= 0xDFFF:
                index += 12
                continue
            return index
        if 0xDC00 <= unit <= 0xDFFF:
            return index
        index += 6
    return None


def _unit(text: str, index: int) -> int:
    try:
        return int(text[index : index + 4], 16)
    except ValueError:  # pragma: no cover - scanstring validated every escape already
        return -1
