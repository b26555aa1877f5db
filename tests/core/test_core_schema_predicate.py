"""The one schema compiler (``engram.core.schema_predicate``) holds its contract against
``jsonschema``'s Draft 2020-12 validator: it never accepts what the validator refuses, and it
refuses only what the validator refuses but for an array under ``uniqueItems`` that holds a
non-string.

Values are generated from the schemas themselves (mostly conforming, then broken: members
dropped, added, retyped) for the two schemas engram checks a record at a time, the ACX memory
record (``memory-partition``) and the PAM ``MemoryObject``; then the hostile edges of each
keyword are checked one by one on small schemas.
"""

from __future__ import annotations

import copy
import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import Phase, find, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from engram.core.schema_predicate import compile_predicate

SRC = Path(__file__).resolve().parents[2] / "src" / "engram"
ACX = json.loads((SRC / "cartridge/schemas/memory-partition.schema.json").read_text("utf-8"))
PAM = json.loads(
    (SRC / "transfer/_pam_schema/portable-ai-memory.schema.json").read_text(encoding="utf-8")
)
MEMORY = {"$ref": "#/$defs/MemoryObject"}
ACX_PREDICATE, ACX_VALIDATOR = compile_predicate(ACX), Draft202012Validator(ACX)

# Any JSON value, floats NaN-free and finite (parse_strict refuses the others).
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=6,
)
EDGES: list[Any] = [True, False, 0, 1, -1, 1.0, -0.0, 0.5, 1e300, 2**70, "", "x", "\n", [], {}]
hostile = st.sampled_from(EDGES) | json_values


def _resolve(schema: Any, root: Any) -> Any:
    while isinstance(schema, dict) and "$ref" in schema:
        schema = root["$defs"][schema["$ref"].removeprefix("#/$defs/")]
    return schema


def _scalar(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    kinds = schema.get("type", [])
    kinds = kinds if isinstance(kinds, list) else [kinds]
    options: list[st.SearchStrategy[Any]] = []
    for kind in kinds:
        if kind == "string" and "pattern" in schema:
            options.append(st.from_regex(schema["pattern"]))
        elif kind == "string":
            shortest = schema.get("minLength", 0)
            options.append(st.text(min_size=shortest, max_size=max(8, shortest)))
        elif kind == "integer":
            options.append(st.integers(schema.get("minimum"), schema.get("maximum")))
        elif kind == "number":
            low, high = schema.get("minimum"), schema.get("maximum")
            options.append(st.floats(low, high, allow_nan=False, allow_infinity=False))
            options.append(st.integers(math.ceil(low or -9), math.floor(high or 9)))
        elif kind == "boolean":
            options.append(st.booleans())
        elif kind == "null":
            options.append(st.none())
    return st.one_of(options) if options else json_values


def conforming(schema: Any, root: Any, depth: int = 0) -> st.SearchStrategy[Any]:
    """Values that mostly conform to ``schema``: what a record of it looks like."""
    schema = _resolve(schema, root)
    if not isinstance(schema, dict) or depth > 4:
        return json_values
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if "const" in schema:
        return st.just(schema["const"])
    kinds = schema.get("type")
    if kinds == "object" or "properties" in schema:
        properties = schema.get("properties", {})
        required = set(schema.get("required", []))
        return st.fixed_dictionaries(
            {k: conforming(v, root, depth + 1) for k, v in properties.items() if k in required},
            optional={
                k: conforming(v, root, depth + 1)
                for k, v in properties.items()
                if k not in required
            },
        )
    if kinds == "array":
        items = conforming(schema.get("items", True), root, depth + 1)
        least = schema.get("minItems", 0)
        return st.lists(items, min_size=least, max_size=max(3, least))
    return _scalar(schema)


@st.composite
def broken(draw: st.DrawFn, schema: Any, root: Any) -> Any:
    """A conforming value, then up to three of its members dropped, added or replaced."""
    # Copies throughout: the strategies hand out shared objects (EDGES, enum members).
    value = copy.deepcopy(draw(conforming(schema, root)))
    for _ in range(draw(st.integers(0, 3))):
        holders = list(_containers(value))
        if not holders:
            return copy.deepcopy(draw(hostile)) if draw(st.booleans()) else value
        holder = draw(st.sampled_from(holders))
        if isinstance(holder, dict):
            key = draw(st.sampled_from([*holder, "extra", ""]))
            if key in holder and draw(st.booleans()):
                del holder[key]
            else:
                holder[key] = copy.deepcopy(draw(hostile))
        elif holder and draw(st.booleans()):
            holder[draw(st.integers(0, len(holder) - 1))] = copy.deepcopy(draw(hostile))
        else:  # now and then a twin, for uniqueItems
            holder.append(copy.deepcopy(draw(hostile | st.sampled_from(holder or [""]))))
    return value


def _containers(value: Any) -> Any:
    if isinstance(value, dict | list):
        yield value
        for member in value.values() if isinstance(value, dict) else value:
            yield from _containers(member)


def _without_unique_items(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _without_unique_items(v) for k, v in schema.items() if k != "uniqueItems"}
    if isinstance(schema, list):
        return [_without_unique_items(v) for v in schema]
    return schema


def holds_the_contract(schema: Any, value: Any, root: Any = None) -> bool:
    """Assert the contract for one value (``root``: where ``$ref`` resolves, ``schema`` when
    None); returns jsonschema's verdict."""
    home = schema if root is None else root
    fast = compile_predicate(schema, root=root)
    assert fast is not None
    valid = Draft202012Validator(home).evolve(schema=schema).is_valid(value)
    said = fast(value)
    assert valid or not said, f"accepted what jsonschema refuses: {value!r}"
    if valid and not said:
        # The one refusal allowed: uniqueItems over an array with a non-string. Without that
        # keyword the same value is accepted, so nothing else refused it.
        plain_home = _without_unique_items(home)
        plain = plain_home if root is None else _without_unique_items(schema)
        again = compile_predicate(plain, root=None if root is None else plain_home)
        assert again is not None
        assert again(value), f"refused what jsonschema accepts: {value!r}"
    return valid


@pytest.mark.req("engram.core.schema-predicate")
@settings(max_examples=800, deadline=None)
@given(broken(ACX, ACX))
def test_the_acx_memory_record_predicate_is_jsonschema_exactly(record: Any) -> None:
    assert ACX_PREDICATE is not None
    assert ACX_PREDICATE(record) is ACX_VALIDATOR.is_valid(record)  # no uniqueItems: exact


@pytest.mark.req("engram.core.schema-predicate")
@settings(max_examples=600, deadline=None)
@given(broken(MEMORY, PAM))
def test_the_pam_memory_predicate_keeps_the_contract(memory: Any) -> None:
    holds_the_contract(MEMORY, memory, root=PAM)


# The other published ACX schemas the compiler models (the rest use oneOf or propertyNames
# and stay with jsonschema): cartridge._schemas checks documents with them too.
OTHER_ACX = (
    "cal-skillset",
    "capability-sellable-claim",
    "harness-requirements",
    "loop-policy-context-policy",
)


def _acx(name: str) -> Any:
    return json.loads((SRC / f"cartridge/schemas/{name}.schema.json").read_text("utf-8"))


@pytest.mark.req("engram.core.schema-predicate", "engram.cartridge.schema-shape")
@pytest.mark.parametrize("name", OTHER_ACX)
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_the_other_compiled_acx_schemas_keep_the_contract(name: str, data: st.DataObject) -> None:
    schema = _acx(name)
    holds_the_contract(schema, data.draw(broken(schema, schema)))


@pytest.mark.req("engram.core.schema-predicate", "engram.cartridge.schema-shape")
def test_which_published_acx_schemas_compile() -> None:
    compiled = {
        p.name.removesuffix(".schema.json")
        for p in (SRC / "cartridge/schemas").glob("*.json")
        if compile_predicate(_acx(p.name.removesuffix(".schema.json"))) is not None
    }
    assert compiled == {"memory-partition", "lance-memory", *OTHER_ACX}  # docs/spec/acx.md §8.5


@pytest.mark.req("engram.core.schema-predicate")
@pytest.mark.parametrize("verdict", [True, False])
@pytest.mark.parametrize("which", ["acx", "pam", *OTHER_ACX])
def test_the_generated_values_reach_both_verdicts(which: str, verdict: bool) -> None:
    # Without conforming and refused values alike, the tests above would prove little.
    schema, root = {"acx": (ACX, ACX), "pam": (MEMORY, PAM)}.get(which) or (_acx(which),) * 2
    validator = Draft202012Validator(root).evolve(schema=schema)
    found = find(
        broken(schema, root),
        lambda v: validator.is_valid(v) is verdict,
        settings=settings(max_examples=300, database=None, phases=[Phase.generate]),
    )
    assert validator.is_valid(found) is verdict


def _values(*values: Any) -> tuple[Any, ...]:
    return values


INTEGER = {"type": "integer"}
NUMBER = {"type": "number", "minimum": 0, "maximum": 1}
WORD = {"type": "string", "pattern": "^\\w+$", "minLength": 2, "maxLength": 3}
DIGITS = {"type": "string", "pattern": "^\\d{3}$"}
CLOSED = {
    "type": "object",
    "required": ["id"],
    "additionalProperties": False,
    "properties": {"id": {"type": "string"}, "n": {"type": ["integer", "null"]}},
}
TYPED_EXTRAS = {"properties": {"id": {"const": "a"}}, "additionalProperties": {"type": "integer"}}
LITERALS = {"enum": [1, "a", None, [1, {"k": False}], {"k": [True]}]}
TREE = {
    "$ref": "#/definitions/node",
    "definitions": {
        "node": {
            "type": "object",
            "required": ["v"],
            "properties": {
                "v": INTEGER,
                "kids": {"type": "array", "items": {"$ref": "#/definitions/node"}},
            },
        }
    },
}
BRANCH = {
    "if": {"properties": {"kind": {"const": "custom"}}},
    "then": {"required": ["custom"]},
    "else": {"properties": {"custom": {"const": None}}},
}
TAGS = {"type": "array", "uniqueItems": True, "items": {"type": "string"}}
ANY_UNIQUE = {"type": "array", "uniqueItems": True}
CONTAINS = {"contains": {"properties": {"kind": {"const": "level-attestation"}}}}
CASES: list[tuple[Any, Any]] = [
    # bool is not a number, an integer, or equal to 1 or 0; 1.0 is an integer.
    *((INTEGER, v) for v in _values(True, False, 1, 0, 1.0, -0.0, 1.5, 2**80, 1e300, "1", None)),
    *(
        (NUMBER, v)
        for v in _values(True, False, 0, 1, 1.0, -0.0, 0.5, 1.0000001, -1e-300, "0.5", 2**70)
    ),
    *(
        (LITERALS, v)
        for v in _values(
            1,
            1.0,
            True,
            "a",
            "A",
            None,
            False,
            [1, {"k": False}],
            [True, {"k": 0}],
            [1.0, {"k": False}],
            {"k": [True]},
            {"k": [1]},
        )
    ),
    *(({"const": 0}, v) for v in _values(0, -0.0, False, None, [0])),
    *(({"const": True}, v) for v in _values(True, 1, 1.0, "true")),
    *(({"const": [1, "a"]}, v) for v in _values([1, "a"], [True, "a"], [1.0, "a"], ["a", 1])),
    # Unicode: \w and \d match beyond ASCII in Python's re, lengths are code points, and $
    # matches before a final newline (re.search, as jsonschema does).
    *(
        (WORD, v)
        for v in _values("ab", "é", "éé", "日本語", "ab\n", "a b", "ab!", "𝔘𝔫", "a\u0301", "")
    ),
    *((DIGITS, v) for v in _values("123", "١٢٣", "१२३", "123\n", "12", "1234", "12a")),
    *(({"pattern": "é", "maxLength": 1}, v) for v in _values("é", "e\u0301", "É", 5)),
    # Members: missing required, extra members, wrong member types, not an object at all.
    *(
        (CLOSED, v)
        for v in _values(
            {"id": "a"},
            {},
            {"n": 1},
            {"id": "a", "n": None},
            {"id": "a", "n": True},
            {"id": "a", "n": 1.0},
            {"id": "a", "x": 1},
            {"id": 1},
            {"id": "a", "": None},
            [],
            "id",
            None,
        )
    ),
    *(
        (TYPED_EXTRAS, v)
        for v in _values(
            {"id": "a"},
            {"id": "b"},
            {"x": 1},
            {"x": True},
            {"x": 1.0},
            {"id": "a", "x": "1"},
            [],
        )
    ),
    # $ref to local definitions, recursively; if/then/else.
    *(
        (TREE, v)
        for v in _values(
            {"v": 1},
            {"v": 1, "kids": [{"v": 2, "kids": []}]},
            {"v": 1, "kids": [{"v": True}]},
            {"v": 1, "kids": [{}]},
            {"kids": []},
            {"v": 1, "kids": {}},
        )
    ),
    *(
        (BRANCH, v)
        for v in _values(
            {"kind": "custom", "custom": "x"},
            {"kind": "custom"},
            {"kind": "other"},
            {"kind": "other", "custom": None},
            {"kind": "other", "custom": "x"},
            {},
        )
    ),
    # uniqueItems: exact for strings, refused (left to jsonschema) for anything else.
    *(
        (TAGS, v)
        for v in _values(
            [], ["a"], ["a", "b"], ["a", "a"], ["a", "A"], ["é", "e\u0301"], ["a", 1], "aa"
        )
    ),
    *(
        (ANY_UNIQUE, v)
        for v in _values([1, True], [1, 1.0], [0, False], [{"a": 1}, {"a": 1}], [[1], [True]])
    ),
    # The boolean schemas, and an empty type list.
    (True, {"x": math.pi}),
    (False, None),
    ({"type": []}, None),
    ({"items": False}, []),
    ({"items": False}, [1]),
    # contains: an array needs one passing item; anything else passes (a capability's level
    # attestation evidence is checked with it).
    (CONTAINS, []),
    (CONTAINS, [{"kind": "other"}]),
    (CONTAINS, [{"kind": "other"}, {"kind": "level-attestation"}]),
    (CONTAINS, [1, "x", None]),
    (CONTAINS, {"kind": "level-attestation"}),
    (CONTAINS, "x"),
    ({"contains": True}, []),
    ({"contains": False}, [1]),
    ({"if": {"contains": {"const": 1}}, "then": {"minItems": 2}}, [1]),
    ({"if": {"contains": {"const": 1}}, "then": {"minItems": 2}}, [True, 2]),
    ({"contains": {"const": 1}}, [True, 1.0]),
    ({"contains": {"const": 1}}, [True, False]),
]


@pytest.mark.req("engram.core.schema-predicate")
@pytest.mark.parametrize(("schema", "value"), CASES)
def test_each_hostile_edge_is_judged_within_the_contract(schema: Any, value: Any) -> None:
    fast = compile_predicate(schema)
    assert fast is not None
    valid = holds_the_contract(schema, value)
    if not ("uniqueItems" in repr(schema) and isinstance(value, list)):
        assert fast(value) is valid  # exact wherever uniqueItems is not in play
    elif all(isinstance(v, str) for v in value):
        assert fast(value) is valid  # exact for arrays of strings


@pytest.mark.req("engram.core.schema-predicate")
@pytest.mark.parametrize("value", [[1, True], [0, False], [[1], [True]], ["a", 1]])
def test_unique_items_over_non_strings_is_refused_and_left_to_jsonschema(value: Any) -> None:
    # jsonschema accepts each (True is not 1 there); the predicate's no sends it to jsonschema.
    fast = compile_predicate(ANY_UNIQUE)
    assert fast is not None
    assert Draft202012Validator(ANY_UNIQUE).is_valid(value)
    assert fast(value) is False


@pytest.mark.req("engram.core.schema-predicate")
@pytest.mark.parametrize(
    "schema",
    [
        {"oneOf": [{}, {}]},
        {"not": {}},
        {"type": "array", "contains": {}, "minContains": 0},
        {"type": "array", "prefixItems": [{}]},
        {"patternProperties": {"^a": {}}},
        {"$anchor": "a"},
        {"type": "strnig"},
        {"minimum": "1"},
        {"minLength": 1.5},
        {"items": [{}]},
        {"required": [1]},
        {"$ref": "#/$defs/missing", "$defs": {}},
        {"$ref": "#/$defs/a~1b", "$defs": {"a/b": {}}},
        {"$ref": "#/$defs/a%25b", "$defs": {"a%b": {}}},
        {"$ref": "#/properties/a", "properties": {"a": {}}},
        {"$ref": "other.json#/$defs/a"},
        # A $ref under a nested $id resolves against that resource, not the root.
        {"$defs": {"a": {}}, "items": {"$id": "https://x.test/n", "$ref": "#/$defs/a"}},
        # An if condition must be exact both ways, directly or through a $ref.
        {"if": {"uniqueItems": True}, "then": {"minItems": 2}},
        {"if": {"$ref": "#/$defs/u"}, "$defs": {"u": {"uniqueItems": True}}},
    ],
)
def test_a_schema_with_what_it_does_not_model_compiles_to_none(schema: Any) -> None:
    assert compile_predicate(schema) is None


@pytest.mark.req("engram.core.schema-predicate")
def test_ref_resolves_in_the_root_given() -> None:
    # What engram.transfer does: one definition of a larger document, its refs in that document.
    fast = compile_predicate({"$ref": "#/definitions/node"}, root=TREE)
    assert fast is not None
    assert fast({"v": 1, "kids": [{"v": 2}]}) is True
    assert fast({"v": 1, "kids": [{"v": "2"}]}) is False
    assert compile_predicate({"$ref": "#/definitions/node"}) is None  # no definitions there


@pytest.mark.req("engram.core.schema-predicate")
def test_importing_the_module_does_not_import_jsonschema() -> None:
    code = "import sys, engram.core.schema_predicate; print('jsonschema' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
