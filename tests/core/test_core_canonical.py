"""Canonical JSON: the RFC 8785 vectors, and every I-JSON refusal with its reason and position.

Vectors: tests/core/vectors/jcs (cyberphone/json-canonicalization testdata, see SOURCE.txt).
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from decimal import Decimal
from enum import IntEnum, StrEnum
from pathlib import Path

import pytest

from engram.core.canonical import MAX_NESTING, canonicalize, digest_hex, parse_strict
from engram.errors import CanonicalJsonError

JCS = Path(__file__).resolve().parent / "vectors" / "jcs"
VECTOR_NAMES = sorted(p.stem for p in (JCS / "input").glob("*.json"))


@pytest.mark.req("engram.core.jcs-vectors")
def test_the_vector_set_is_complete() -> None:
    assert VECTOR_NAMES == ["arrays", "french", "structures", "unicode", "values", "weird"]


@pytest.mark.req("engram.core.jcs-vectors")
@pytest.mark.parametrize("name", VECTOR_NAMES)
def test_every_rfc8785_vector_canonicalises_to_its_expected_bytes(name: str) -> None:
    expected = (JCS / "output" / f"{name}.json").read_bytes()
    outhex = bytes.fromhex((JCS / "outhex" / f"{name}.txt").read_text(encoding="ascii"))
    assert outhex == expected  # the two renderings of the expectation agree

    value = parse_strict((JCS / "input" / f"{name}.json").read_bytes())

    assert canonicalize(value) == expected


@pytest.mark.req("engram.core.jcs-vectors")
@pytest.mark.parametrize("name", VECTOR_NAMES)
def test_canonical_output_is_a_fixed_point(name: str) -> None:
    expected = (JCS / "output" / f"{name}.json").read_bytes()
    assert canonicalize(parse_strict(expected)) == expected


@pytest.mark.req("engram.core.jcs-vectors")
def test_numbers_follow_ecmascript_formatting() -> None:
    assert canonicalize([1.0, -0.0, 0.5, 1e-7, 0.000001, 1e21, 123456789.25, -3, 1.5e300]) == (
        b"[1,0,0.5,1e-7,0.000001,1e+21,123456789.25,-3,1.5e+300]"
    )


@pytest.mark.req("engram.core.ijson-integer-range")
def test_canonicalize_refuses_integral_floats_it_would_write_as_unsafe_integers() -> None:
    # RFC 8785 writes 1e20 as 100000000000000000000, an integer literal I-JSON refuses.
    error = _value_refusal({"n": 1e20})
    assert (error.reason, error.position) == ("integer_out_of_range", "$.n")
    assert _value_refusal([2.0**53]).reason == "integer_out_of_range"


@pytest.mark.req("engram.core.jcs-vectors")
def test_members_sort_by_utf16_code_units_not_code_points() -> None:
    # U+E000 is above the surrogates U+D83D.. that spell U+1F600 in UTF-16, though below it
    # as a code point; RFC 8785 §3.2.3 sorts by UTF-16.
    value = {"\ue000": 1, "\U0001f600": 2, "a": 3}
    assert canonicalize(value) == '{"a":3,"\U0001f600":2,"\ue000":1}'.encode()


@pytest.mark.req("engram.core.jcs-vectors")
def test_control_characters_use_short_escapes_where_rfc8785_has_them() -> None:
    value = '\b\t\n\f\r\x00\x1f"\\/\x7f\u2028'
    assert canonicalize(value) == b'"\\b\\t\\n\\f\\r\\u0000\\u001f\\"\\\\/\x7f\xe2\x80\xa8"'


@pytest.mark.req("engram.core.jcs-vectors")
def test_python_subclasses_canonicalise_as_plain_json() -> None:
    class Colour(StrEnum):
        RED = "red"

    class Level(IntEnum):
        HIGH = 3

    value = OrderedDict([("b", (Colour.RED, Level.HIGH)), (Colour.RED, 1.0)])
    assert canonicalize(value) == b'{"b":["red",3],"red":1}'


@pytest.mark.req("engram.core.jcs-vectors")
def test_digest_hex_is_sha256_of_the_canonical_bytes() -> None:
    expected = hashlib.sha256(b'{"a":[true,null],"b":1}').hexdigest()
    assert digest_hex({"b": 1, "a": [True, None]}) == expected


# --- parse_strict refusals: one test each, reason and character offset --------------------------


def _refusal(text: str | bytes) -> CanonicalJsonError:
    with pytest.raises(CanonicalJsonError) as caught:
        parse_strict(text)
    return caught.value


@pytest.mark.req("engram.core.ijson-duplicate-members")
def test_parse_refuses_duplicate_member_names_at_the_repeated_name() -> None:
    error = _refusal('{"a": 1, "b": {"x": 1, "x": 2}}')
    assert (error.reason, error.position) == ("duplicate_member", 23)
    assert "'x'" in error.message


@pytest.mark.req("engram.core.ijson-duplicate-members")
def test_parse_refuses_duplicates_spelled_with_different_escapes() -> None:
    error = _refusal('{"a": 1, "\\u0061": 2}')
    assert (error.reason, error.position) == ("duplicate_member", 9)


@pytest.mark.req("engram.core.ijson-duplicate-members")
def test_parse_accepts_the_same_name_in_sibling_objects() -> None:
    assert parse_strict('[{"a": 1}, {"a": 2}, {"b": {"a": 3}, "a": 4}]') == [
        {"a": 1},
        {"a": 2},
        {"b": {"a": 3}, "a": 4},
    ]


@pytest.mark.req("engram.core.ijson-lone-surrogate")
def test_parse_refuses_an_escaped_lone_surrogate_in_a_value() -> None:
    error = _refusal('{"k": "ok \\ud800 x"}')
    assert (error.reason, error.position) == ("lone_surrogate", 10)


@pytest.mark.req("engram.core.ijson-lone-surrogate")
def test_parse_refuses_an_escaped_lone_surrogate_in_a_key() -> None:
    error = _refusal('{"fine": 1, "\\udc00": 2}')
    assert (error.reason, error.position) == ("lone_surrogate", 13)


@pytest.mark.req("engram.core.ijson-lone-surrogate")
def test_parse_refuses_a_high_surrogate_followed_by_a_non_low_escape() -> None:
    error = _refusal('["\\ud83d\\u0041"]')
    assert (error.reason, error.position) == ("lone_surrogate", 2)


@pytest.mark.req("engram.core.ijson-lone-surrogate")
def test_parse_refuses_a_raw_lone_surrogate_in_str_input() -> None:
    error = _refusal('{"k\ud800": 1}')
    assert (error.reason, error.position) == ("lone_surrogate", 3)
    value_error = _refusal('["x", "\udfff"]')
    assert (value_error.reason, value_error.position) == ("lone_surrogate", 7)


@pytest.mark.req("engram.core.ijson-lone-surrogate")
def test_parse_accepts_an_escaped_surrogate_pair() -> None:
    assert parse_strict('"\\ud83d\\ude00"') == "\U0001f600"
    # An escaped backslash followed by "ud800" is text, not an escape.
    assert parse_strict('"\\\\ud800"') == "\\ud800"


@pytest.mark.req("engram.core.ijson-invalid-utf8")
def test_parse_refuses_invalid_utf8_at_its_character_offset() -> None:
    error = _refusal('["é", "'.encode() + b"\xff" + b'"]')
    assert (error.reason, error.position) == ("invalid_utf8", 7)
    assert "byte 8" in error.message


@pytest.mark.req("engram.core.ijson-invalid-utf8")
def test_parse_refuses_utf8_encoded_surrogates() -> None:
    error = _refusal(b'["\xed\xa0\x80"]')
    assert (error.reason, error.position) == ("invalid_utf8", 2)


@pytest.mark.req("engram.core.ijson-non-finite")
@pytest.mark.parametrize(
    ("text", "position"),
    [("[1, NaN]", 4), ('{"x": Infinity}', 6), ("[-Infinity]", 1), ("[0, 1e400]", 4)],
)
def test_parse_refuses_non_finite_numbers(text: str, position: int) -> None:
    error = _refusal(text)
    assert (error.reason, error.position) == ("non_finite_number", position)


@pytest.mark.req("engram.core.ijson-integer-range")
@pytest.mark.parametrize(
    ("text", "position"), [("[9007199254740992]", 1), ('{"n": -9007199254740992}', 6)]
)
def test_parse_refuses_integers_beyond_2_53_minus_1(text: str, position: int) -> None:
    error = _refusal(text)
    assert (error.reason, error.position) == ("integer_out_of_range", position)


@pytest.mark.req("engram.core.ijson-integer-range")
def test_parse_accepts_the_largest_safe_integers_and_big_float_literals() -> None:
    assert parse_strict("[9007199254740991, -9007199254740991, 1e300]") == [
        2**53 - 1,
        -(2**53 - 1),
        1e300,
    ]


def test_parse_reports_the_first_fault_in_document_order() -> None:
    error = _refusal('{"a": [1e999], "a": 2}')
    assert (error.reason, error.position) == ("non_finite_number", 7)


def test_parse_refuses_syntax_errors_bom_and_trailing_data() -> None:
    assert _refusal("[1,]").reason == "syntax"
    assert _refusal("\ufeff[]").position == 0
    trailing = _refusal("[] []")
    assert (trailing.reason, trailing.position) == ("syntax", 2)


def test_parse_accepts_surrounding_whitespace() -> None:
    assert parse_strict(b' \n{"a": [true, false, null]}\t') == {"a": [True, False, None]}


# --- canonicalize refusals on Python values: reason and path -------------------------------------


def _value_refusal(value: object) -> CanonicalJsonError:
    with pytest.raises(CanonicalJsonError) as caught:
        canonicalize(value)
    return caught.value


@pytest.mark.req("engram.core.ijson-lone-surrogate")
def test_canonicalize_refuses_a_lone_surrogate_in_a_value() -> None:
    error = _value_refusal({"beliefs": [{"statement": "x\ud800"}]})
    assert (error.reason, error.position) == ("lone_surrogate", "$.beliefs[0].statement")


@pytest.mark.req("engram.core.ijson-lone-surrogate")
def test_canonicalize_refuses_a_lone_surrogate_in_a_key() -> None:
    # rfc8785 alone raises a bare UnicodeEncodeError here, from its UTF-16 key sort.
    error = _value_refusal({"ok": 1, "bad\udc00": 2})
    assert error.reason == "lone_surrogate"
    assert error.position == "$['bad\\udc00']"
    assert str(error).encode("utf-8")  # the message itself is printable


@pytest.mark.req("engram.core.ijson-lone-surrogate")
def test_lone_surrogates_are_refused_on_the_rfc8785_path_too() -> None:
    # A float below 1e-4 routes the document through rfc8785, which would raise its own
    # CanonicalizationError / bare UnicodeEncodeError; callers still see one error type.
    error = _value_refusal({"tiny": 1e-7, "text": "\ud800"})
    assert (error.reason, error.position) == ("lone_surrogate", "$.text")
    error = _value_refusal({"tiny": 1e-7, "\U0001f600": 1, "\ue000\ud800": 2})
    assert error.reason == "lone_surrogate"


@pytest.mark.req("engram.core.ijson-non-finite")
@pytest.mark.parametrize("number", [float("nan"), float("inf"), float("-inf")])
def test_canonicalize_refuses_non_finite_floats(number: float) -> None:
    error = _value_refusal({"confidence": [0.5, number]})
    assert (error.reason, error.position) == ("non_finite_number", "$.confidence[1]")


@pytest.mark.req("engram.core.ijson-integer-range")
def test_canonicalize_refuses_integers_beyond_2_53_minus_1() -> None:
    assert canonicalize([2**53 - 1]) == b"[9007199254740991]"
    error = _value_refusal({"n": -(2**53)})
    assert (error.reason, error.position) == ("integer_out_of_range", "$.n")


@pytest.mark.req("engram.core.ijson-non-json-values")
@pytest.mark.parametrize(
    ("value", "position", "named"),
    [
        ({"tags": {"a", "b"}}, "$.tags", "set"),
        ({"blob": b"\x00"}, "$.blob", "bytes"),
        ({"amount": Decimal("1.5")}, "$.amount", "Decimal"),
        ([object()], "$[0]", "object"),
        ({1: "one"}, "$", "member name 1"),
        ({("a",): 1}, "$", "member name"),
    ],
)
def test_canonicalize_refuses_non_json_python_values(
    value: object, position: str, named: str
) -> None:
    error = _value_refusal(value)
    assert (error.reason, error.position) == ("not_json", position)
    assert named in error.message


@pytest.mark.req("engram.core.ijson-non-json-values")
def test_canonicalize_refuses_cycles_and_excessive_nesting() -> None:
    cycle: list[object] = []
    cycle.append(cycle)
    assert _value_refusal(cycle).reason == "nesting_too_deep"

    deep: list[object] = []
    innermost = deep
    for _ in range(MAX_NESTING - 1):
        nested: list[object] = []
        innermost.append(nested)
        innermost = nested
    assert canonicalize(deep) == b"[" * MAX_NESTING + b"]" * MAX_NESTING
    innermost.append([])
    assert _value_refusal(deep).reason == "nesting_too_deep"


def test_refusals_are_input_errors_with_the_spec_error_shape() -> None:
    error = _value_refusal({"x": float("nan")})
    assert error.to_wire() == {
        "error": {"code": "invalid_request", "message": error.message, "status": 400}
    }
