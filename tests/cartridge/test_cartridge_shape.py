"""The compiled predicates answer exactly what the published schemas' validator answers.

``engram.core.schema_predicate.compile_predicate`` replaces ``jsonschema`` on the path every
memory record takes (issue 33: it was most of export and import); a record it refuses still goes to
``jsonschema`` for the messages. These tests compare it with ``Draft202012Validator.is_valid``,
which they build themselves from the schema files, on every record of the reference artifacts
(the built and published cartridges and the reference's example packages) and on hostile records
hypothesis derives from them: members dropped, added, or replaced by values of every JSON type
and by the edge cases of each keyword (``True`` against ``1``, ``-0.0``, NaN, a pattern match
followed by a newline, which ``re.search`` with ``$`` accepts).
"""

from __future__ import annotations

import json
import math
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from cartridge_kit import RECORDS
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from engram.cartridge.internals import export_record, record_problems, schema_issues
from engram.core.schema_predicate import compile_predicate

VECTORS = Path(__file__).resolve().parents[1] / "vectors"
SCHEMAS = Path(__file__).resolve().parents[2] / "src" / "engram" / "cartridge" / "schemas"
COMPILED = ("memory-partition", "lance-memory")
CBF = "cbf1_" + "0123456789abcdef" * 2 + "01234567"


def _schema(name: str) -> Any:
    return json.loads((SCHEMAS / f"{name}.schema.json").read_text(encoding="utf-8"))


def _reference_records() -> list[dict[str, Any]]:
    """Every memory record of the reference cartridges and example packages, and engram's
    export of the cartridge tests' records in both tiers."""
    found: list[dict[str, Any]] = []
    for acx in sorted(VECTORS.rglob("*.acx")):
        with sqlite3.connect(f"file:{acx}?mode=ro", uri=True) as conn:
            found += [json.loads(p) for (p,) in conn.execute("SELECT payload FROM memory")]
    for path in sorted((VECTORS / "acx-reference").rglob("memory-records.json")):
        value = json.loads(path.read_text(encoding="utf-8"))
        found += value if isinstance(value, list) else value.get("records", [])
    found += [export_record(r) for r in RECORDS if "repoId" not in r]
    found += [export_record(r, codebase=CBF) for r in RECORDS]
    return [r for r in found if isinstance(r, dict)]


REFERENCE = _reference_records()
VALID = [r for r in REFERENCE if Draft202012Validator(_schema("memory-partition")).is_valid(r)]
MEMBERS = [*sorted(_schema("memory-partition")["properties"]), "unknown", "Id", ""]

# Values chosen to sit on each keyword's edge, plus whatever hypothesis draws.
EDGES: list[Any] = [
    None,
    True,
    False,
    0,
    1,
    -1,
    0.0,
    -0.0,
    1.5,
    -1e-300,
    math.nan,
    math.inf,
    -math.inf,
    "",
    "x",
    "\n",
    "rom",
    "save",
    "ROM",
    "native",
    "imported",
    "positive",
    "negative",
    "neutral",
    "neutral ",
    CBF,
    CBF + "\n",
    CBF.upper(),
    CBF[:-1],
    "0123456789",
    "0123456789\n",
    "012345678g",
    [],
    [""],
    ["a", 1],
    [None],
    {},
    {"a": 1},
]
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=6,
)
hostile_value = st.sampled_from(EDGES) | json_values


@st.composite
def hostile_records(draw: st.DrawFn) -> Any:
    if draw(st.integers(0, 30)) == 0:  # now and then not an object at all
        return draw(hostile_value)
    record = dict(draw(st.sampled_from(VALID)))
    for _ in range(draw(st.integers(0, 4))):
        key = draw(st.sampled_from(MEMBERS))
        if draw(st.booleans()) and key in record:
            del record[key]
        else:
            record[key] = draw(hostile_value)
    return record


@pytest.mark.req("engram.cartridge.schema-shape")
def test_the_reference_artifacts_hold_records_of_both_tiers() -> None:
    # Without both tiers the if/then branches would go unexercised below.
    assert {r.get("portable") for r in VALID} == {True, False}
    assert len(REFERENCE) >= 10
    assert len(VALID) >= 8


@pytest.mark.req("engram.cartridge.schema-shape")
@pytest.mark.parametrize("name", COMPILED)
def test_the_closed_shape_judges_every_reference_record_as_the_validator_does(name: str) -> None:
    fast, slow = compile_predicate(_schema(name)), Draft202012Validator(_schema(name))
    assert fast is not None
    for record in REFERENCE:
        assert fast(record) is slow.is_valid(record), record


@pytest.mark.req("engram.cartridge.schema-shape")
@settings(max_examples=2000, deadline=None)
@given(hostile_records())
def test_the_closed_shape_judges_hostile_records_as_the_validator_does(record: Any) -> None:
    fast = compile_predicate(_schema("memory-partition"))
    assert fast is not None
    slow = Draft202012Validator(_schema("memory-partition"))
    expected = slow.is_valid(record)
    assert fast(record) is expected
    # What a caller sees is jsonschema's own verdict and messages.
    found = schema_issues("memory-partition", record, "r")
    assert (found == []) is expected
    if not expected:
        messages = [e.message[:200] for e in slow.iter_errors(record)]
        assert all(any(m in line for m in messages) for line in found)


@pytest.mark.req("engram.cartridge.schema-shape")
@settings(max_examples=1500, deadline=None)
@given(
    st.sampled_from(EDGES) | json_values,
    st.sampled_from(sorted(_schema("lance-memory")["properties"])),
)
def test_the_lance_shape_judges_hostile_members_as_the_validator_does(value: Any, key: str) -> None:
    schema = _schema("lance-memory")
    fast = compile_predicate(schema)
    assert fast is not None
    record = {key: value}
    assert fast(record) is Draft202012Validator(schema).is_valid(record)


@pytest.mark.req("engram.cartridge.schema-shape")
@pytest.mark.parametrize(
    "schema",
    [
        {"$ref": "https://acx.dev/schema/x", "$defs": {"x": {}}},
        {"$ref": "#/$defs/a~1b", "$defs": {"a/b": {}}},
        {"oneOf": [{}, {}]},
        {"type": "array", "contains": {"type": "string"}, "minContains": 2},
        {"type": "array", "prefixItems": [{"type": "string"}]},
        {"not": {"type": "string"}},
        {"minimum": "1"},
        {"if": {"type": "array", "uniqueItems": True}, "then": {"minItems": 2}},
    ],
)
def test_a_schema_with_a_keyword_it_does_not_model_is_left_to_jsonschema(schema: Any) -> None:
    assert compile_predicate(schema) is None


@pytest.mark.req("engram.cartridge.schema-shape", "engram.cartridge.memory-partition")
def test_a_malformed_record_still_gets_the_validators_messages() -> None:
    record = dict(next(r for r in VALID if r["portable"] is True))
    record["xpAwarded"] = True
    record["zone"] = "save"
    found = record_problems(record, "memory:x")
    assert found == [
        "memory:x['xpAwarded']: True is not of type 'number'",
        "memory:x['zone']: 'rom' was expected",
        "memory:x: zone must be 'rom' for portable=true",
    ]
