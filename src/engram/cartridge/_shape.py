"""A yes/no conformance check compiled once from a closed JSON Schema, for the common case.

``jsonschema`` builds a validator object and an error generator per keyword per value: for a
cartridge of 100,000 memory records that was most of export and import (issue 33). The records
almost always conform, and a conforming record needs no message, so :func:`compile_shape` turns
a schema into one predicate over plain Python values that answers exactly what
``Draft202012Validator(schema).is_valid`` answers (no format checker: ``format`` is an
annotation there too). Only a record it refuses goes to ``jsonschema`` for the messages, so
what is accepted, what is refused and every message stay the validator's.

The compiler knows the keywords the published ACX schemas' closed shapes use, with
``jsonschema`` 4's semantics (``bool`` is not a number, ``pattern`` is ``re.search``, ``enum``
and ``const`` tell ``True`` from ``1``); a schema with any other keyword (``$ref``, ``oneOf``,
``contains``...) or a literal it does not model compiles to ``None`` and is always left to
``jsonschema``. tests/cartridge/test_cartridge_shape.py proves the equivalence on the reference
artifacts and on generated hostile values.
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Callable, Mapping

Predicate = Callable[[object], bool]

# Keywords that never change whether a value is valid (``format`` included: the validators are
# built without a format checker).
_ANNOTATIONS = frozenset(
    {"$schema", "$id", "$comment", "title", "description", "default", "examples", "format"}
)
_KNOWN = _ANNOTATIONS | {
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
    "pattern",
    "enum",
    "const",
    "minimum",
    "maximum",
    "allOf",
    "if",
    "then",
    "else",
}


class _Unsupported(Exception):
    """The schema uses something this compiler does not model: leave it to jsonschema."""


def _is_number(value: object) -> bool:
    return isinstance(value, numbers.Number) and not isinstance(value, bool)


_TYPES: dict[str, Predicate] = {
    "string": lambda v: isinstance(v, str),
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "number": _is_number,
    "integer": lambda v: (
        (isinstance(v, int) and not isinstance(v, bool))
        or (isinstance(v, float) and v.is_integer())
    ),
}


def _always(_value: object) -> bool:
    return True


def _never(_value: object) -> bool:
    return False


def _literal(value: object) -> Predicate:
    """``jsonschema``'s ``equal(instance, value)`` for the literals modelled: strings, null and
    booleans (``True`` is not ``1``)."""
    if isinstance(value, str):
        return lambda v: isinstance(v, str) and v == value
    if value is None or isinstance(value, bool):
        return lambda v: v is value
    raise _Unsupported(f"literal {value!r}")


def _enum(values: object) -> Predicate:
    if not isinstance(values, list):
        raise _Unsupported("enum")
    if all(isinstance(v, str) for v in values):
        strings = frozenset(values)
        return lambda v: isinstance(v, str) and v in strings
    each = [_literal(v) for v in values]
    return lambda v: any(p(v) for p in each)


def _number_bound(bound: object, below: bool) -> Predicate:
    if not _is_number(bound):
        raise _Unsupported("bound")
    limit: float = bound  # type: ignore[assignment]  # a real number, checked above
    if below:
        return lambda v: not _is_number(v) or not v < limit  # type: ignore[operator]
    return lambda v: not _is_number(v) or not v > limit  # type: ignore[operator]


def _count(bound: object) -> int:
    if not isinstance(bound, int) or isinstance(bound, bool):
        raise _Unsupported("count")
    return bound


def _object(schema: Mapping[str, object]) -> Predicate | None:
    """``properties`` + ``required`` + ``additionalProperties``: one pass over the members."""
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    extra = schema.get("additionalProperties", True)
    if not isinstance(properties, dict) or not isinstance(required, list):
        raise _Unsupported("properties")
    if not isinstance(extra, bool):
        raise _Unsupported("additionalProperties")
    if not properties and not required and extra:
        return None
    members = {str(k): _compile(v) for k, v in properties.items()}
    needed = frozenset(str(r) for r in required)
    closed = not extra

    def closed_check(value: object) -> bool:
        if not isinstance(value, dict):
            return True
        if not needed <= value.keys():
            return False
        for key, member in value.items():
            rule = members.get(key)
            if rule is None or not rule(member):
                return False
        return True

    def open_check(value: object) -> bool:
        if not isinstance(value, dict):
            return True
        if not needed <= value.keys():
            return False
        return all(key not in value or rule(value[key]) for key, rule in members.items())

    return closed_check if closed else open_check


def _compile(schema: object) -> Predicate:
    if schema is True:
        return _always
    if schema is False:
        return _never
    if not isinstance(schema, dict):
        raise _Unsupported("schema")
    unknown = set(schema) - _KNOWN
    if unknown:
        raise _Unsupported(", ".join(sorted(unknown)))
    checks: list[Predicate] = []
    if "type" in schema:
        names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not all(isinstance(n, str) and n in _TYPES for n in names):
            raise _Unsupported("type")
        kinds = [_TYPES[n] for n in names]
        checks.append(kinds[0] if len(kinds) == 1 else lambda v: any(k(v) for k in kinds))
    if "enum" in schema:
        checks.append(_enum(schema["enum"]))
    if "const" in schema:
        checks.append(_literal(schema["const"]))
    shape = _object(schema)
    if shape is not None:
        checks.append(shape)
    if "items" in schema:
        item = _compile(schema["items"])
        checks.append(_each_item(item))
    if "minItems" in schema:
        least = _count(schema["minItems"])
        checks.append(lambda v: not isinstance(v, list) or len(v) >= least)
    if "maxItems" in schema:
        most = _count(schema["maxItems"])
        checks.append(lambda v: not isinstance(v, list) or len(v) <= most)
    if "minLength" in schema:
        shortest = _count(schema["minLength"])
        checks.append(lambda v: not isinstance(v, str) or len(v) >= shortest)
    if "maxLength" in schema:
        longest = _count(schema["maxLength"])
        checks.append(lambda v: not isinstance(v, str) or len(v) <= longest)
    if "pattern" in schema:
        if not isinstance(schema["pattern"], str):
            raise _Unsupported("pattern")
        search = re.compile(schema["pattern"]).search
        checks.append(lambda v: not isinstance(v, str) or search(v) is not None)
    if "minimum" in schema:
        checks.append(_number_bound(schema["minimum"], below=True))
    if "maximum" in schema:
        checks.append(_number_bound(schema["maximum"], below=False))
    if "allOf" in schema:
        if not isinstance(schema["allOf"], list):
            raise _Unsupported("allOf")
        checks.extend(_compile(s) for s in schema["allOf"])
    if "if" in schema:
        condition = _compile(schema["if"])
        then = _compile(schema.get("then", True))
        otherwise = _compile(schema.get("else", True))
        checks.append(lambda v: then(v) if condition(v) else otherwise(v))
    if len(checks) == 1:
        return checks[0]
    return _every(checks)


def _every(checks: list[Predicate]) -> Predicate:
    # A loop, not all() over a generator: this runs for every member of 100,000 records.
    def every(value: object) -> bool:
        for check in checks:  # noqa: SIM110 - measured faster than all() over a generator
            if not check(value):
                return False
        return True

    return every


def _each_item(item: Predicate) -> Predicate:
    def each(value: object) -> bool:
        if isinstance(value, list):
            for x in value:
                if not item(x):
                    return False
        return True

    return each


def compile_shape(schema: object) -> Predicate | None:
    """A predicate equal to ``Draft202012Validator(schema).is_valid``, or ``None`` when the
    schema uses a keyword or literal this compiler does not model."""
    try:
        return _compile(schema)
    except _Unsupported:
        return None


__all__ = ["Predicate", "compile_shape"]
