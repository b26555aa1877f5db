"""The fast canonicaliser writes exactly rfc8785's bytes; parse and canonicalize round-trip.

``rfc8785`` is the oracle: engram.core._jcs exists only for speed (bench: python -m bench
canonical) and must never disagree with it.
"""

from __future__ import annotations

from typing import Any

import pytest
import rfc8785
from hypothesis import example, given, settings
from hypothesis import strategies as st

from engram.core.canonical import canonicalize, parse_strict
from engram.errors import CanonicalJsonError

SAFE = 2**53 - 1

# Characters that stress RFC 8785: controls, quotes, backslash, DEL, U+2028, BMP private use
# (sorts after surrogates in UTF-16), astral planes, and ordinary text. No surrogates: those are
# refused, tested in test_core_canonical.py.
_TRICKY = st.sampled_from(
    [
        *("\x00", "\x08", "\t", "\n", "\x0c", "\r", "\x1f", '"', "\\", "/", "\x7f", "\u2028"),
        *("é", "\ue000", "\uffff", "\U0001f600", "\U00010000", "a", "Z", "_", " ", "€", "\u0080"),
    ]
)
_CHARS = st.one_of(_TRICKY, st.characters(exclude_categories=["Cs"]))
_TEXT = st.text(_CHARS, max_size=12)


def _signable_float(number: float) -> bool:
    return not (number.is_integer() and SAFE < abs(number) < 1e21)


_FLOATS = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0.0, -0.0, 1.0, -1.0, 0.1, 1e-4, 9.999e-5, 1e-6, 1e-7, 5e-324, 1e21]),
    st.sampled_from([1.7976931348623157e308, 2.2250738585072014e-308, 123456789.125, 0.85]),
).filter(_signable_float)

_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-SAFE, max_value=SAFE),
    _FLOATS,
    _TEXT,
)

I_JSON = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5),
        st.dictionaries(_TEXT, inner, max_size=5),
    ),
    max_leaves=30,
)


def _same(left: Any, right: Any) -> bool:
    """Structural equality where a float equals the int JSON writes for it (1.0 -> 1, -0.0 -> 0).

    Unlike ``==`` on the whole value, it keeps True apart from 1 and "1" apart from 1.
    """
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(_same(left[k], right[k]) for k in left)
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(map(_same, left, right))
    if isinstance(left, float) or isinstance(right, float):
        return (
            isinstance(left, int | float)
            and isinstance(right, int | float)
            and not isinstance(left, bool)
            and not isinstance(right, bool)
            and left == right
        )
    return type(left) is type(right) and left == right


@pytest.mark.req("engram.core.jcs-vectors")
@given(I_JSON)
@settings(max_examples=250, deadline=None)
@example({"\ue000": 1, "\U0001f600": 2})
@example([1e-7, 1e-5, 0.0001, 1e21, 1.0, -0.0, 2.0**53 - 1])
@example({"a": [{"b": "\x00\x1f\u2028"}], "A": None})
def test_fast_canonicaliser_writes_exactly_rfc8785_bytes(value: Any) -> None:
    assert canonicalize(value) == rfc8785.dumps(value)


@pytest.mark.req("engram.core.jcs-vectors")
@given(st.dictionaries(st.text(_CHARS, min_size=1, max_size=4), st.integers(0, 9), min_size=2))
@settings(max_examples=300, deadline=None)
def test_member_order_matches_rfc8785_for_mixed_unicode_keys(value: dict[str, int]) -> None:
    assert canonicalize(value) == rfc8785.dumps(value)


@pytest.mark.req("engram.core.jcs-vectors")
@given(_FLOATS)
@settings(max_examples=300, deadline=None)
def test_every_float_is_written_as_rfc8785_writes_it(number: float) -> None:
    assert canonicalize(number) == rfc8785.dumps(number)


@pytest.mark.req("engram.core.ijson-integer-range")
@given(st.floats(allow_nan=False, allow_infinity=False).filter(lambda f: not _signable_float(f)))
def test_floats_written_as_unsafe_integers_are_refused(number: float) -> None:
    with pytest.raises(CanonicalJsonError) as caught:
        canonicalize(number)
    assert caught.value.reason == "integer_out_of_range"


@pytest.mark.req("engram.core.jcs-vectors")
@given(I_JSON)
@settings(max_examples=200, deadline=None)
def test_parse_strict_reads_back_what_canonicalize_wrote(value: Any) -> None:
    assert _same(parse_strict(canonicalize(value)), value)


@pytest.mark.req("engram.core.jcs-vectors")
@given(I_JSON)
@settings(max_examples=200, deadline=None)
def test_canonicalize_is_idempotent_on_its_own_output(value: Any) -> None:
    once = canonicalize(value)
    assert canonicalize(parse_strict(once)) == once
