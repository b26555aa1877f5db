"""One discipline for every document engram parses (docs/spec/limits.md §2).

Recursive and super-linear steps (jsonschema's validators, PyYAML's composer and ``int()``,
base58 decoding, the LangGraph filter matcher) are only ever given input that passed a linear,
non-recursive pre-check here, so a hostile document is refused by its shape, in one line
(``invalid_request``), before any of them runs. The limits are declared here, once; the table
in docs/spec/limits.md names each with the entry points that apply it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from engram.errors import InvalidRequest

MAX_DEPTH = 64
"""Nesting levels (objects and arrays) of a document handed to a recursive step."""
MAX_ELEMENTS = 1_000_000
"""Values (containers, members, items, scalars) in one document."""
MAX_STRING_CHARS = 1 << 20
"""Characters of one string (member names included)."""
MAX_NUMBER_CHARS = 64
"""Characters of one number literal (an integer's decimal digits). 2^53 has 16 digits."""
MAX_TEXT_CHARS = 1 << 20
"""Characters of a YAML configuration file (``--host-limits``)."""
MAX_INDENT = 128
"""Columns of indentation of a YAML line: block nesting is bounded by it."""
MAX_BASE58_CHARS = 256
"""Characters of a base58-btc value (a key, a multihash, an Ed25519 proof is ~88)."""

_INT_BITS = int(MAX_NUMBER_CHARS * 3.33) + 1  # log2(10) bits per decimal digit, rounded up
_CONTAINERS = (dict, list, tuple)


def check_shape(
    value: object,
    what: str,
    *,
    max_depth: int = MAX_DEPTH,
    max_elements: int = MAX_ELEMENTS,
    max_string: int = MAX_STRING_CHARS,
) -> None:
    """Refuse ``value`` (parsed JSON/YAML: dicts, lists, scalars) over any limit; iterative.

    Exact ``str`` members and items are counted and measured in place rather than pushed (a
    memory record is mostly strings, and a cartridge has 100,000 of them): the same limits,
    refused with the same messages."""
    stack: list[tuple[object, int]] = [(value, 0)]
    seen = 0
    while stack:
        item, depth = stack.pop()
        seen += 1
        if seen > max_elements:
            raise InvalidRequest(f"{what} has more than {max_elements} values")
        kind = type(item)
        if kind is str:
            _check_scalar(item, what, max_string)
            continue
        if (
            kind is dict
            or kind is list
            or kind is tuple
            or isinstance(item, Mapping | list | tuple)
        ):
            if depth >= max_depth:
                raise InvalidRequest(f"{what} nests deeper than {max_depth} levels")
            members: Iterable[object]
            if isinstance(item, Mapping):
                for key in item:
                    if type(key) is not str or len(key) > max_string:
                        _check_scalar(key, what, max_string)
                members = item.values()
            else:
                members = item  # type: ignore[assignment]  # a list or tuple, checked above
            for member in members:
                if type(member) is str:
                    seen += 1
                    if seen > max_elements:
                        raise InvalidRequest(f"{what} has more than {max_elements} values")
                    if len(member) > max_string:
                        _check_scalar(member, what, max_string)
                else:
                    stack.append((member, depth + 1))
        else:
            _check_scalar(item, what, max_string)


def _check_scalar(item: object, what: str, max_string: int) -> None:
    if isinstance(item, str) and len(item) > max_string:
        raise InvalidRequest(f"{what} has a string longer than {max_string} characters")
    if isinstance(item, int) and not isinstance(item, bool) and item.bit_length() > _INT_BITS:
        raise InvalidRequest(f"{what} has a number longer than {MAX_NUMBER_CHARS} digits")


def check_yaml_text(text: str, what: str) -> None:
    """The shape of YAML text before PyYAML composes it (its composer recurses per level and
    its integer constructor calls ``int()``): size, flow nesting, indentation, number length.

    One linear pass: ``[``/``{`` outside quotes and comments count flow levels; leading spaces
    bound block levels; a run of digits (and ``_``) outside quotes is a number literal."""
    if len(text) > MAX_TEXT_CHARS:
        raise InvalidRequest(f"{what} is longer than {MAX_TEXT_CHARS} characters")
    depth = 0
    quote = ""
    digits = 0
    line_start = True
    indent = 0
    i, end = 0, len(text)
    while i < end:
        c = text[i]
        i += 1
        if c == "\n":
            line_start, indent, digits = True, 0, 0
            continue
        if line_start:
            if c == " ":
                indent += 1
                if indent > MAX_INDENT:
                    raise InvalidRequest(f"{what} is indented more than {MAX_INDENT} columns")
                continue
            line_start = False
        if quote:
            if c == "\\" and quote == '"':
                i += 1
            elif c == quote:
                quote = ""
            continue
        if c in "0123456789_":
            digits += 1
            if digits > MAX_NUMBER_CHARS:
                raise InvalidRequest(f"{what} has a number longer than {MAX_NUMBER_CHARS} digits")
            continue
        digits = 0
        if c in "\"'":
            quote = c
        elif c == "#" and (i == 1 or text[i - 2] in " \t\n"):
            newline = text.find("\n", i)
            i = end if newline < 0 else newline
        elif c in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                raise InvalidRequest(f"{what} nests deeper than {MAX_DEPTH} levels")
        elif c in "]}":
            depth = max(depth - 1, 0)


def check_length(text: str, limit: int, what: str) -> None:
    """A string's length, checked before a step that is super-linear in it."""
    if len(text) > limit:
        raise InvalidRequest(f"{what} is longer than {limit} characters")


__all__ = [
    "MAX_BASE58_CHARS",
    "MAX_DEPTH",
    "MAX_ELEMENTS",
    "MAX_INDENT",
    "MAX_NUMBER_CHARS",
    "MAX_STRING_CHARS",
    "MAX_TEXT_CHARS",
    "check_length",
    "check_shape",
    "check_yaml_text",
]
