"""``parse_strict_at`` answers only what ``parse_strict`` of the same slice answers.

It parses the value at an offset of a longer text in place (the PAM reader's one strict parse
of each memory); whenever it answers, the value and its end are what the C scanner and
``parse_strict`` of the slice give; whenever ``parse_strict`` would refuse the slice (hostile
texts: duplicate names, NaN, huge integers, escaped and raw lone surrogates, deep nesting,
truncations), it answers None and leaves the refusal to ``parse_strict``.
"""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engram.core.canonical import parse_strict, parse_strict_at
from engram.errors import CanonicalJsonError

_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53 - 1), max_value=2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)
_ENCODER = json.JSONEncoder(ensure_ascii=False)
_ASCII = json.JSONEncoder(ensure_ascii=True)
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _slice_verdict(text: str, start: int) -> tuple[object, int] | str:
    end = json.JSONDecoder().raw_decode(text, start)[1]
    try:
        return parse_strict(text[start:end]), end
    except CanonicalJsonError as e:
        return e.reason


def _check(text: str, start: int) -> None:
    answer = parse_strict_at(text, start)
    try:
        verdict = _slice_verdict(text, start)
    except (json.JSONDecodeError, RecursionError):
        assert answer is None  # no value there: parse_strict of any slice refuses it
        return
    if answer is None:
        return  # left to parse_strict: always allowed
    assert not isinstance(verdict, str), f"answered what parse_strict refuses: {verdict}"
    value, end = answer
    assert end == verdict[1]
    assert _ENCODER.encode(value) == _ENCODER.encode(verdict[0])


@pytest.mark.req("engram.pam.streaming")
@given(_VALUES, st.booleans(), st.text(" \\n", max_size=3), st.sampled_from([",", "]", " {", ""]))
@settings(max_examples=400, deadline=None)
def test_a_value_inside_a_longer_text_reads_as_its_slice(
    value: object, ascii_only: bool, before: str, after: str
) -> None:
    encoded = (_ASCII if ascii_only else _ENCODER).encode(value)
    text = "[" + before + encoded + after
    answer = parse_strict_at(text, 1 + len(before))
    _check(text, 1 + len(before))
    if _SURROGATE_ESCAPE.search(encoded):
        return  # an escaped surrogate (an astral character, written ASCII): left to parse_strict
    assert answer is not None
    assert answer[1] == 1 + len(before) + len(encoded)
    assert _ENCODER.encode(answer[0]) == _ENCODER.encode(value)


@pytest.mark.req(
    "engram.pam.streaming",
    "engram.core.ijson-duplicate-members",
    "engram.core.ijson-lone-surrogate",
    "engram.core.ijson-non-finite",
    "engram.core.ijson-huge-integer",
)
@pytest.mark.parametrize(
    "hostile",
    [
        '{"a": 1, "a": 2}',
        '{"x": NaN}',
        "[Infinity]",
        "[-Infinity]",
        "123456789012345678901",
        "[1e400]",
        '"\\ud800"',
        '{"k\\udc00": 1}',
        '"\\ud83d\\ude00"',  # a pair: fine
        '"\ud800"',
        "[" * 5000 + "]" * 5000,
        '{"a": [1, 2',
        '"unterminated',
        "tru",
        "-",
        "\ufeff{}",
        "{}",
        "[]",
        "1.5e3",
        '{"a": "\\u00e9"}',
    ],
)
def test_what_parse_strict_refuses_is_never_answered(hostile: str) -> None:
    for text, start in ((hostile, 0), ("[ " + hostile + " ,", 2), ("x" + hostile, 1)):
        _check(text, start)
