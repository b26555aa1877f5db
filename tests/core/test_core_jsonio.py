"""dumps_text: JSON for people and unsigned wire bodies."""

from __future__ import annotations

import enum
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engram.core.jsonio import dumps_text
from engram.errors import CanonicalJsonError


def test_compact_by_default_and_pretty_with_an_indent() -> None:
    value = {"b": [1, 2], "a": "é"}
    assert dumps_text(value) == '{"a":"é","b":[1,2]}'
    assert dumps_text(value, indent=2) == '{\n  "a": "é",\n  "b": [\n    1,\n    2\n  ]\n}'
    assert dumps_text(value, sort_keys=False) == '{"b":[1,2],"a":"é"}'


def test_values_other_parsers_refuse_are_not_written() -> None:
    with pytest.raises(CanonicalJsonError) as caught:
        dumps_text({"x": float("nan")})
    assert caught.value.reason == "non_finite_number"
    with pytest.raises(CanonicalJsonError) as caught:
        dumps_text({"x": {1, 2}})
    assert caught.value.reason == "not_json"


# --- the indented writer: json.dumps' text exactly, or json.dumps itself ----------------------


def _json_dumps(value: object, indent: int, sort_keys: bool) -> str:
    # json's own pure-Python indented encoder: what dumps_text wrote before it had a writer
    return json.JSONEncoder(
        indent=indent,
        sort_keys=sort_keys,
        separators=(",", ": "),
        ensure_ascii=False,
        allow_nan=False,
    ).encode(value)


_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=30,
)


@given(_VALUES, st.sampled_from([0, 1, 2, 4]), st.booleans())
@settings(max_examples=400, deadline=None)
def test_the_indented_text_is_json_dumps_text(value: object, indent: int, sort_keys: bool) -> None:
    assert dumps_text(value, indent=indent, sort_keys=sort_keys) == _json_dumps(
        value, indent, sort_keys
    )


class _Kind(enum.StrEnum):
    A = "a"


class _Number(enum.IntEnum):
    ONE = 1


@pytest.mark.parametrize(
    "value",
    [
        {"t": (1, "x")},
        {_Kind.A: 1, "b": [_Kind.A, _Number.ONE, True, 1.5, -0.0, 1e300, 5e-324]},
        {1: "int key", 2.5: None, False: 3},
        [{}, [], "", {"x": {}}, [[]]],
        '\u2028\x00"\\ é 𝄞',
        -0.0,
    ],
)
def test_values_it_leaves_to_json_dumps_read_the_same(value: object) -> None:
    for sort_keys in (True, False):
        assert dumps_text(value, indent=2, sort_keys=sort_keys) == _json_dumps(value, 2, sort_keys)


def test_what_json_dumps_refuses_is_refused_the_same_way() -> None:
    cyclic: list[object] = []
    cyclic.append(cyclic)
    for value, reason in (
        ({"x": [float("inf")]}, "non_finite_number"),
        ({"x": [{1, 2}]}, "not_json"),
        (cyclic, "not_json"),
        ({1: "a", "b": 2}, "not_json"),  # keys json cannot sort
    ):
        with pytest.raises(CanonicalJsonError) as caught:
            dumps_text(value, indent=2)
        assert caught.value.reason == reason
    deep: object = "leaf"
    for _ in range(150):
        deep = {"k": [deep]}
    assert dumps_text(deep, indent=1) == _json_dumps(deep, 1, True)


@given(_VALUES, st.booleans())
@settings(max_examples=200, deadline=None)
def test_the_compact_text_is_json_dumps_text(value: object, sort_keys: bool) -> None:
    compact = json.JSONEncoder(
        separators=(",", ":"), sort_keys=sort_keys, ensure_ascii=False, allow_nan=False
    )
    assert dumps_text(value, sort_keys=sort_keys) == compact.encode(value)
