"""Narrowing parsed JSON: each helper returns ``value`` as the type its name says or raises
:class:`~engram.errors.InvalidRequest` naming ``where`` (a JSON path) and what it found.

A bundle, a ledger or a provider answer is checked against its schema before it is read, so on
valid input these never fire; they let mypy follow the shape, and turn a shape the schema let
through into a refusal that says where, never a ``KeyError`` or ``TypeError``.
"""

from __future__ import annotations

from engram.core.canonical import Json, JsonArray, JsonObject
from engram.errors import InvalidRequest


def _wrong(value: Json, where: str, wanted: str) -> InvalidRequest:
    return InvalidRequest(f"{where}: expected {wanted}, got {type(value).__name__}")


def obj(value: Json, where: str) -> JsonObject:
    if not isinstance(value, dict):
        raise _wrong(value, where, "an object")
    return value


def arr(value: Json, where: str) -> JsonArray:
    if not isinstance(value, list):
        raise _wrong(value, where, "an array")
    return value


def objects(value: Json, where: str) -> list[JsonObject]:
    return [obj(item, f"{where}[{i}]") for i, item in enumerate(arr(value, where))]


def text(value: Json, where: str) -> str:
    if not isinstance(value, str):
        raise _wrong(value, where, "a string")
    return value


def opt_text(value: Json, where: str) -> str | None:
    return None if value is None else text(value, where)


def integer(value: Json, where: str) -> int:
    """An integer; ``2.0`` is one too (JSON Schema's ``integer`` and ``enum`` accept it)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise _wrong(value, where, "an integer")
    return value


def at(value: Json, dotted: str) -> Json:
    """The member at a dotted path (``"host.build"``), or None where the path leaves objects."""
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def path(value: Json, dotted: str) -> Json:
    """:func:`at` for a member that must be there: a missing step raises, naming the path."""
    where = "$"
    for part in dotted.split("."):
        node = obj(value, where)
        where = f"{where}.{part}"
        if part not in node:
            raise InvalidRequest(f"{where} is missing")
        value = node[part]
    return value


__all__ = ["arr", "at", "integer", "obj", "objects", "opt_text", "path", "text"]
