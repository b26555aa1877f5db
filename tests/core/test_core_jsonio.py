"""dumps_text: JSON for people and unsigned wire bodies."""

from __future__ import annotations

import pytest

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
