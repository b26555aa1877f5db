"""A fast yes for the PAM memory schema: the ``MemoryObject`` schema compiled once into plain
Python predicates, so that a valid memory is not walked by jsonschema (about half of a
streaming import's time went to ``descend``, its ``$ref`` lookups and validator copies).

Only a yes is trusted: a memory the predicate does not accept goes to jsonschema, which decides
and words the refusal. So the predicate must never accept what jsonschema refuses; it may
refuse what jsonschema accepts (that only costs time). It follows jsonschema's own rules for
the keywords the PAM 1.0 schema uses (types with ``bool`` apart from numbers and whole floats
as integers, ``equal`` for ``enum``/``const``, ``re.search`` for ``pattern``, ``format`` an
annotation since the validator has no format checker); ``uniqueItems`` is checked only for
lists of strings (anything else is sent to jsonschema). A schema with any other keyword is not
compiled at all (:func:`compile_memory` returns None and every memory goes to jsonschema).
``tests/pam/test_pam_stream.py`` checks the yes against jsonschema on generated memories.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

Check = Callable[[Any], bool]
_ANNOTATIONS = frozenset({"description", "default", "examples", "title", "$comment", "format"})


class _Unsupported(Exception):
    pass


def _equal(one: Any, two: Any) -> bool:
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


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


_TYPES: dict[str, Check] = {
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


class _Compiler:
    def __init__(self, root: Mapping[str, Any]) -> None:
        self._root = root
        self._refs: dict[str, Check] = {}

    def ref(self, target: str) -> Check:
        if not target.startswith("#/$defs/"):
            raise _Unsupported(target)
        if target not in self._refs:
            holder: list[Check] = []
            self._refs[target] = lambda v: holder[0](v)  # a placeholder while it compiles
            holder.append(self.compile(self._root["$defs"][target.removeprefix("#/$defs/")]))
        return self._refs[target]

    def compile(self, schema: Any) -> Check:
        if schema is True:
            return _always
        if not isinstance(schema, dict):
            raise _Unsupported(repr(schema))
        checks = [
            self._keyword(keyword, arg, schema)
            for keyword, arg in schema.items()
            if keyword not in _ANNOTATIONS and keyword not in ("then", "else")
        ]
        return lambda v: all(check(v) for check in checks)

    def _keyword(self, keyword: str, arg: Any, schema: Mapping[str, Any]) -> Check:
        if keyword == "$ref":
            return self.ref(arg)
        if keyword == "properties":
            return _properties({name: self.compile(sub) for name, sub in arg.items()})
        if keyword == "additionalProperties":
            return self._additional(arg, schema.get("properties", {}))
        if keyword == "items":
            return _items(self.compile(arg))
        if keyword == "if":
            return self._conditional(schema)
        if keyword == "uniqueItems":
            return _unique_strings if arg is True else _always
        if keyword in _SIMPLE:
            return _SIMPLE[keyword](arg)
        raise _Unsupported(keyword)

    def _additional(self, arg: Any, properties: Mapping[str, Any]) -> Check:
        known = frozenset(properties)
        if arg is True:
            return _always
        if arg is False:
            return lambda v: not isinstance(v, dict) or known.issuperset(v)
        extra = self.compile(arg)
        return lambda v: (
            not isinstance(v, dict)
            or all(extra(value) for key, value in v.items() if key not in known)
        )

    def _conditional(self, schema: Mapping[str, Any]) -> Check:
        # The condition must be exact both ways (it picks then or else): it may use only
        # keywords compiled exactly, which all of the above are but uniqueItems.
        if "uniqueItems" in str(schema["if"]):
            raise _Unsupported("uniqueItems in if")
        condition = self.compile(schema["if"])
        then = self.compile(schema.get("then", True))
        otherwise = self.compile(schema.get("else", True))
        return lambda v: then(v) if condition(v) else otherwise(v)


def _always(_value: Any) -> bool:
    return True


def _properties(props: Mapping[str, Check]) -> Check:
    def check(value: Any) -> bool:
        if not isinstance(value, dict):
            return True
        return all(name not in value or ok(value[name]) for name, ok in props.items())

    return check


def _items(item: Check) -> Check:
    return lambda v: not isinstance(v, list) or all(map(item, v))


def _type(arg: Any) -> Check:
    kinds = [_TYPES[t] for t in ([arg] if isinstance(arg, str) else arg)]
    return lambda v: any(k(v) for k in kinds)


def _required(arg: Any) -> Check:
    names = tuple(arg)
    return lambda v: not isinstance(v, dict) or all(n in v for n in names)


def _one_of(options: tuple[Any, ...]) -> Check:
    return lambda v: any(_equal(v, o) for o in options)


def _pattern(arg: Any) -> Check:
    rx = re.compile(arg)
    return lambda v: not isinstance(v, str) or rx.search(v) is not None


def _bound(kind: Check, measure: Callable[[Any], Any], low: Any, high: Any) -> Check:
    def check(value: Any) -> bool:
        if not kind(value):
            return True
        size = measure(value)
        return (low is None or size >= low) and (high is None or size <= high)

    return check


def _identity(value: Any) -> Any:
    return value


_SIMPLE: dict[str, Callable[[Any], Check]] = {
    "type": _type,
    "required": _required,
    "enum": lambda arg: _one_of(tuple(arg)),
    "const": lambda arg: _one_of((arg,)),
    "pattern": _pattern,
    "minLength": lambda n: _bound(_TYPES["string"], len, n, None),
    "maxLength": lambda n: _bound(_TYPES["string"], len, None, n),
    "minItems": lambda n: _bound(_TYPES["array"], len, n, None),
    "minimum": lambda n: _bound(_is_number, _identity, n, None),
    "maximum": lambda n: _bound(_is_number, _identity, None, n),
}


def _unique_strings(value: Any) -> bool:
    if not isinstance(value, list):
        return True
    # Strings only: for them distinct is plain set semantics; anything else, jsonschema decides.
    return all(isinstance(v, str) for v in value) and len(set(value)) == len(value)


def compile_memory(root: Mapping[str, Any]) -> Check | None:
    """The predicate for ``#/$defs/MemoryObject`` of ``root``, or None when the schema uses a
    keyword this module does not compile."""
    try:
        return _Compiler(root).ref("#/$defs/MemoryObject")
    except (_Unsupported, KeyError):
        return None


__all__ = ["Check", "compile_memory"]
