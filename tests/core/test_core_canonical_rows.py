"""``canonicalize_rows`` writes exactly rfc8785's bytes for the objects its rows stand for.

Its fast path (``engram.core._jcs.dumps_rows``: what hashes a ROM manifest of 100,000
entries) writes the bytes itself for flat rows of strings and integers; any other row goes to
``canonicalize``. ``rfc8785`` is the oracle, on generated names (non-BMP ones included, which
sort differently by UTF-16 code units) and values (floats, big integers, booleans, null, text
with controls and astral characters), and lone surrogates are refused as ``canonicalize``
refuses them.
"""

from __future__ import annotations

from typing import Any

import pytest
import rfc8785
from hypothesis import example, given, settings
from hypothesis import strategies as st

from engram.core import canonical
from engram.core.canonical import canonicalize, canonicalize_rows
from engram.errors import CanonicalJsonError

SAFE = 2**53 - 1

_TRICKY = st.sampled_from(
    [
        *("\x00", "\x08", "\t", "\n", "\x0c", "\r", "\x1f", '"', "\\", "/", "\x7f", "\u2028"),
        *("é", "\ue000", "\uffff", "\U0001f600", "\U00010000", "a", "Z", "_", " ", "€", "\u0080"),
    ]
)
_TEXT = st.text(st.one_of(_TRICKY, st.characters(exclude_categories=["Cs"])), max_size=10)
_NAMES = st.lists(
    st.one_of(_TEXT, st.sampled_from(["sourceRef", "oid", "canon", "sz"])), max_size=5
)
_VALUES = st.one_of(
    _TEXT,
    st.integers(min_value=-SAFE, max_value=SAFE),
    st.sampled_from([SAFE, -SAFE, 0, 1, -1]),
    st.none(),
    st.booleans(),
    st.floats(allow_nan=False, allow_infinity=False).filter(
        lambda f: not (f.is_integer() and SAFE < abs(f) < 1e21)
    ),
)


def _objects(names: list[str], rows: list[list[object]]) -> list[dict[str, Any]]:
    return [dict(zip(names, row, strict=True)) for row in rows]


@st.composite
def _table(
    draw: st.DrawFn, values: st.SearchStrategy[object] = _VALUES
) -> tuple[list[str], list[list[object]]]:
    names = draw(_NAMES)
    rows = draw(st.lists(st.lists(values, min_size=len(names), max_size=len(names)), max_size=6))
    return names, rows


@pytest.mark.req("engram.core.jcs-vectors")
@given(_table())
# No deadline: a timing is not what this checks, and a loaded machine's first example can take
# longer than hypothesis's default 200 ms (it failed a run that way once).
@settings(max_examples=400, deadline=None)
@example((["sourceRef", "oid", "canon", "sz"], [["memory:a", "sha256:00", "jcs-rfc8785", 7]]))
@example((["\U0001f600", "\ue000"], [["x", 1]]))  # the two orders of member names differ
@example((["a", "a"], [[1, 2]]))  # a repeated name: the object keeps one member
@example(
    (
        ["sz"],
        [[2**53]],
    )
)  # beyond I-JSON: refused
@example((["sz"], [[1.5]]))
@example((["sz"], [[True]]))
@example(([], [[], []]))
def test_rows_are_written_exactly_as_rfc8785_writes_their_objects(
    table: tuple[list[str], list[list[object]]],
) -> None:
    names, rows = table
    objects = _objects(names, rows)
    try:
        expected = rfc8785.dumps(objects)
    except (rfc8785.CanonicalizationError, UnicodeEncodeError, ValueError):
        with pytest.raises(CanonicalJsonError):
            canonicalize_rows(names, rows)
        return
    assert canonicalize_rows(names, rows) == expected == canonicalize(objects)


@pytest.mark.req("engram.core.jcs-vectors")
@given(_table(st.one_of(_TEXT, st.integers(min_value=-SAFE, max_value=SAFE))))
def test_the_fast_path_takes_flat_ascii_named_rows(
    table: tuple[list[str], list[list[object]]],
) -> None:
    """The rows a manifest has (distinct ASCII names; strings and safe integers) are written
    without building the objects: canonicalize, the fallback, is never called for them."""
    names, rows = table
    if len(set(names)) != len(names) or not all(n.isascii() for n in names):
        return
    expected = rfc8785.dumps(_objects(names, rows))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(canonical, "canonicalize", _no_fallback)
        assert canonicalize_rows(names, rows) == expected


def _no_fallback(value: object) -> bytes:
    raise AssertionError("the fast path fell back to canonicalize")


@pytest.mark.req("engram.core.ijson-lone-surrogate")
@pytest.mark.parametrize("text", ["\ud800", "a\udfff", "\udc00\ud800"])
def test_a_lone_surrogate_is_refused_as_canonicalize_refuses_it(text: str) -> None:
    with pytest.raises(CanonicalJsonError) as fast:
        canonicalize_rows(["sourceRef", "sz"], [["ok", 1], [text, 2]])
    with pytest.raises(CanonicalJsonError) as slow:
        canonicalize([{"sourceRef": "ok", "sz": 1}, {"sourceRef": text, "sz": 2}])
    assert (fast.value.reason, fast.value.position) == (slow.value.reason, slow.value.position)
    assert fast.value.reason == "lone_surrogate"


@pytest.mark.req("engram.core.ijson-integer-range")
def test_an_integer_beyond_2_53_is_refused_with_the_same_path() -> None:
    with pytest.raises(CanonicalJsonError) as refused:
        canonicalize_rows(["sz"], [[1], [2**53]])
    assert (refused.value.reason, refused.value.position) == ("integer_out_of_range", "$[1].sz")
