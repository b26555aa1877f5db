"""A JSON Schema compiled once into a plain-Python yes/no, for the documents that conform.

``jsonschema`` builds a validator object and an error generator per keyword per value, and
resolves every ``$ref`` as it goes: for a cartridge of 100,000 memory records, or a PAM file of
as many memories, that was most of export and import (issue 33). The documents almost always
conform, and a conforming document needs no message, so :func:`compile_predicate` turns a schema
into one predicate over plain JSON values (what ``json.loads`` or ``parse_strict`` return:
``dict``, ``list``, ``str``, ``int``, ``float``, ``bool``, ``None``). A caller trusts its yes
and sends every no to ``jsonschema``, which decides and words the refusal, so what is accepted,
what is refused and every message stay the validator's. Both the cartridge's published ACX
schemas (``engram.cartridge``) and the PAM memory schema (``engram.transfer``) are checked this
way; this module is the one compiler for both (issue 28).

The contract, against ``Draft202012Validator(root).is_valid`` built without a format checker
(``format`` is an annotation there too), ``root`` being the document ``$ref`` resolves in:

- **The predicate never accepts what jsonschema refuses.** A yes is jsonschema's yes.
- **It refuses only what jsonschema refuses, with one exception: ``uniqueItems``.** An array
  under ``uniqueItems: true`` is judged exactly when every item is a string (set semantics are
  jsonschema's ``equal`` for strings); an array holding anything else is refused, whatever
  jsonschema would say, and is left to jsonschema. A schema without ``uniqueItems: true`` on the
  way is therefore judged exactly, both ways.
- A schema the compiler does not model compiles to ``None`` (every document goes to
  jsonschema): any keyword outside the list below (``oneOf``, ``not``, ``minContains``,
  ``patternProperties``, ``prefixItems``, ``$anchor``...), a keyword argument of a shape it does
  not model (a ``minimum`` that is not a number, an ``items`` array...), a ``$ref`` that is not
  ``#/$defs/<name>`` or ``#/definitions/<name>`` of ``root`` (or that sits inside a subschema
  with its own ``$id``, where it would resolve elsewhere), and a ``uniqueItems: true`` that an
  ``if`` condition reaches (the condition picks ``then`` or ``else``, so it must be exact).

Keywords modelled, with jsonschema 4's semantics (``bool`` is not a number and ``1.0`` is an
integer; ``pattern`` is ``re.search``; ``enum`` and ``const`` use jsonschema's ``equal``, so
``True`` is not ``1``): ``type``, ``enum``, ``const``, ``properties``, ``required``,
``additionalProperties`` (a boolean or a schema), ``items`` (a schema), ``contains`` (without
``minContains``/``maxContains``), ``minItems``,
``maxItems``, ``uniqueItems``, ``minLength``, ``maxLength``, ``pattern``, ``minimum``,
``maximum``, ``allOf``, ``if``/``then``/``else``, ``$ref``; ``$defs`` and ``definitions`` only
hold what ``$ref`` names; the annotations ``$schema``, ``$id``, ``$comment``, ``title``,
``description``, ``default``, ``examples``, ``format`` change nothing.

tests/core/test_core_schema_predicate.py holds the predicate to ``jsonschema`` on generated
values for the ACX memory-record and PAM memory schemas and on hostile edge cases
(``engram.core.schema-predicate``); tests/cartridge/test_cartridge_shape.py and
tests/pam/test_pam_stream.py hold each caller to it on its own artifacts.
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Callable, Mapping, Sequence

Predicate = Callable[[object], bool]

# Keywords that never change whether a value is valid (``format`` included: the validators are
# built without a format checker; ``then``/``else`` count only beside an ``if``; ``$defs`` and
# ``definitions`` are read only through ``$ref``).
_INERT = frozenset(
    {
        "$schema",
        "$id",
        "$comment",
        "title",
        "description",
        "default",
        "examples",
        "format",
        "then",
        "else",
        "$defs",
        "definitions",
    }
)
_KNOWN = _INERT | {
    "type",
    "enum",
    "const",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "contains",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minLength",
    "maxLength",
    "pattern",
    "minimum",
    "maximum",
    "allOf",
    "if",
    "$ref",
}
_REF_HOMES = ("#/$defs/", "#/definitions/")


class _Unsupported(Exception):
    """The schema uses something this compiler does not model: leave it to jsonschema."""


def _is_number(value: object) -> bool:
    # int and float first: the common case without the ABC check (bool is an int, hence type).
    return (
        type(value) is float
        or type(value) is int
        or (isinstance(value, numbers.Number) and not isinstance(value, bool))
    )


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


def _equal(one: object, two: object) -> bool:
    """jsonschema's ``equal``: ``bool`` apart from numbers, sequences and mappings item-wise."""
    if one is two:
        return True
    if isinstance(one, str) or isinstance(two, str):
        return bool(one == two)
    if isinstance(one, Sequence) and isinstance(two, Sequence):
        return len(one) == len(two) and all(_equal(a, b) for a, b in zip(one, two, strict=True))
    if isinstance(one, Mapping) and isinstance(two, Mapping):
        return one.keys() == two.keys() and all(_equal(one[k], two[k]) for k in one)
    if isinstance(one, bool) or isinstance(two, bool):
        return type(one) is type(two) and one == two
    return bool(one == two)


def _always(_value: object) -> bool:
    return True


def _never(_value: object) -> bool:
    return False


def _literal(value: object) -> Predicate:
    """``equal(instance, value)``, with the common literals (strings, null, booleans) direct."""
    if isinstance(value, str):
        return lambda v: isinstance(v, str) and v == value
    if value is None or isinstance(value, bool):
        return lambda v: v is value
    return lambda v: _equal(v, value)


def _enum(values: object) -> Predicate:
    if not isinstance(values, list):
        raise _Unsupported("enum")
    if all(isinstance(v, str) for v in values):
        strings = frozenset(values)
        return lambda v: isinstance(v, str) and v in strings
    each = [_literal(v) for v in values]
    return lambda v: any(p(v) for p in each)


def _number_bound(bound: object, below: bool) -> Predicate:
    if type(bound) is not int and type(bound) is not float:
        raise _Unsupported("bound")
    limit: float = bound
    if below:
        return lambda v: not _is_number(v) or not v < limit  # type: ignore[operator]
    return lambda v: not _is_number(v) or not v > limit  # type: ignore[operator]


def _count(bound: object) -> int:
    if type(bound) is not int:
        raise _Unsupported("count")
    return bound


def _unique_strings(value: object) -> bool:
    # Exact for strings (jsonschema's equal is ==, so set semantics); an array holding anything
    # else is refused here and judged by jsonschema (the one place a no is not exact).
    if not isinstance(value, list):
        return True
    for item in value:
        if not isinstance(item, str):
            return False
    return len(set(value)) == len(value)


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


def _some_item(item: Predicate) -> Predicate:
    # ``contains`` (``minContains`` 1, the only one modelled): an array needs an item that
    # passes; an item's yes is jsonschema's yes, so the array's is too.
    def some(value: object) -> bool:
        if not isinstance(value, list):
            return True
        for x in value:  # noqa: SIM110 - the loop the other item checks use
            if item(x):
                return True
        return False

    return some


class _Compiler:
    """One compilation: ``$ref`` targets compiled once each, recursion through a trampoline."""

    def __init__(self, root: object) -> None:
        self._root = root
        self._refs: dict[tuple[str, bool], Predicate] = {}
        self._nested_ids = 0  # > 0 inside a subschema with its own $id (refs resolve elsewhere)

    def compile(self, schema: object, exact: bool) -> Predicate:
        """``schema``'s predicate; ``exact``: it decides an ``if``, so no one-sided keyword."""
        if schema is True:
            return _always
        if schema is False:
            return _never
        if not isinstance(schema, dict):
            raise _Unsupported("schema")
        unknown = set(schema) - _KNOWN
        if unknown:
            raise _Unsupported(", ".join(sorted(unknown)))
        nested = "$id" in schema and schema is not self._root
        self._nested_ids += nested
        try:
            checks = self._checks(schema, exact)
        finally:
            self._nested_ids -= nested
        if not checks:
            return _always
        if len(checks) == 1:
            return checks[0]
        return _every(checks)

    def _checks(self, schema: Mapping[str, object], exact: bool) -> list[Predicate]:
        # The cheap, most often failing checks first (a predicate's order changes only speed).
        checks: list[Predicate] = []
        if "type" in schema:
            checks.append(_type(schema["type"]))
        if "enum" in schema:
            checks.append(_enum(schema["enum"]))
        if "const" in schema:
            checks.append(_literal(schema["const"]))
        shape = self._object(schema, exact)
        if shape is not None:
            checks.append(shape)
        if "items" in schema:
            checks.append(_each_item(self.compile(schema["items"], exact)))
        if "contains" in schema:
            checks.append(_some_item(self.compile(schema["contains"], exact)))
        checks.extend(_sizes(schema))
        if "uniqueItems" in schema:
            unique = schema["uniqueItems"]
            if not isinstance(unique, bool) or (unique and exact):
                raise _Unsupported("uniqueItems")
            if unique:
                checks.append(_unique_strings)
        if "pattern" in schema:
            if not isinstance(schema["pattern"], str):
                raise _Unsupported("pattern")
            search = re.compile(schema["pattern"]).search
            checks.append(lambda v: not isinstance(v, str) or search(v) is not None)
        if "minimum" in schema:
            checks.append(_number_bound(schema["minimum"], below=True))
        if "maximum" in schema:
            checks.append(_number_bound(schema["maximum"], below=False))
        if "$ref" in schema:
            checks.append(self._ref(schema["$ref"], exact))
        if "allOf" in schema:
            if not isinstance(schema["allOf"], list):
                raise _Unsupported("allOf")
            checks.extend(self.compile(s, exact) for s in schema["allOf"])
        if "if" in schema:
            condition = self.compile(schema["if"], exact=True)
            then = self.compile(schema.get("then", True), exact)
            otherwise = self.compile(schema.get("else", True), exact)
            checks.append(lambda v: then(v) if condition(v) else otherwise(v))
        return checks

    def _ref(self, target: object, exact: bool) -> Predicate:
        if not isinstance(target, str) or self._nested_ids:
            raise _Unsupported("$ref")
        key = (target, exact)
        if key in self._refs:
            return self._refs[key]
        home = next((h for h in _REF_HOMES if target.startswith(h)), None)
        name = target.removeprefix(home) if home is not None else ""
        # A plain name only: a JSON pointer escape (~0, ~1), a %-escape or a deeper path would
        # need resolving as jsonschema does.
        if home is None or not name or any(c in name for c in "/~%"):
            raise _Unsupported(target)
        holder = self._root.get(home[2:-1]) if isinstance(self._root, dict) else None
        if not isinstance(holder, dict) or name not in holder:
            raise _Unsupported(target)
        later: list[Predicate] = []
        self._refs[key] = lambda v: later[0](v)  # what a recursive $ref calls while it compiles
        compiled = self.compile(holder[name], exact)
        later.append(compiled)
        self._refs[key] = compiled
        return compiled

    def _object(self, schema: Mapping[str, object], exact: bool) -> Predicate | None:
        """``properties`` + ``required`` + ``additionalProperties``: one pass over the members."""
        properties = schema.get("properties", {})
        required = schema.get("required", [])
        extra_schema = schema.get("additionalProperties", True)
        if not isinstance(properties, dict) or not isinstance(required, list):
            raise _Unsupported("properties")
        if not all(isinstance(r, str) for r in required):
            raise _Unsupported("required")
        if not properties and not required and extra_schema is True:
            return None
        members = {str(k): self.compile(v, exact) for k, v in properties.items()}
        needed = frozenset(required)
        if extra_schema is True:

            def open_check(value: object) -> bool:
                if not isinstance(value, dict):
                    return True
                if not needed <= value.keys():
                    return False
                for key, rule in members.items():
                    if key in value and not rule(value[key]):
                        return False
                return True

            return open_check
        extra = self.compile(extra_schema, exact)

        def closed_check(value: object) -> bool:
            if not isinstance(value, dict):
                return True
            if not needed <= value.keys():
                return False
            for key, member in value.items():  # noqa: SIM110 - faster than all() here too
                if not members.get(key, extra)(member):
                    return False
            return True

        return closed_check


def _type(names: object) -> Predicate:
    listed = names if isinstance(names, list) else [names]
    if not all(isinstance(n, str) and n in _TYPES for n in listed):
        raise _Unsupported("type")
    kinds = [_TYPES[n] for n in listed]  # type: ignore[index]  # strings, checked above
    if len(kinds) == 1:
        return kinds[0]
    return lambda v: any(k(v) for k in kinds)


def _sizes(schema: Mapping[str, object]) -> list[Predicate]:
    checks: list[Predicate] = []
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
    return checks


def compile_predicate(schema: object, *, root: object = None) -> Predicate | None:
    """``schema``'s predicate (the module's contract: a yes is ``jsonschema``'s yes, a no is
    exact but under ``uniqueItems``), its ``$ref`` resolved in ``root`` (``schema`` itself when
    None); ``None`` when the schema uses something this compiler does not model."""
    try:
        return _Compiler(schema if root is None else root).compile(schema, exact=False)
    except _Unsupported:
        return None


__all__ = ["Predicate", "compile_predicate"]
