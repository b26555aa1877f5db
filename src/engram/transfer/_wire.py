"""Narrowing what a parsed document holds: a member is checked before it is used.

Each helper returns ``value`` as the JSON type its name says, or raises
:class:`~engram.errors.InvalidRequest` naming where in the document the shape was wrong. The PAM
schema has been checked before most reads, so on valid input these never fire; they are what
lets mypy follow the shape, and a clean refusal if a caller skipped the schema.
"""

from __future__ import annotations

from collections.abc import Mapping

from engram.core.canonical import Json, JsonArray, JsonObject
from engram.errors import InvalidRequest


def obj(value: Json, where: str) -> JsonObject:
    if not isinstance(value, dict):
        raise InvalidRequest(f"{where}: expected a JSON object")
    return value


def arr(value: Json, where: str) -> JsonArray:
    if not isinstance(value, list):
        raise InvalidRequest(f"{where}: expected a JSON array")
    return value


def text(value: Json, where: str) -> str:
    if not isinstance(value, str):
        raise InvalidRequest(f"{where}: expected a string")
    return value


def opt_text(value: Json, where: str) -> str | None:
    return None if value is None else text(value, where)


def objects(value: Json, where: str) -> list[JsonObject]:
    """An array of objects; ``null`` (an absent optional member) is the empty list."""
    if value is None:
        return []
    return [obj(item, f"{where}[{i}]") for i, item in enumerate(arr(value, where))]


def texts(value: Json, where: str) -> list[str]:
    if value is None:
        return []
    return [text(item, f"{where}[{i}]") for i, item in enumerate(arr(value, where))]


def block(doc: Mapping[str, Json], name: str, where: str = "") -> JsonObject:
    """``doc[name]`` as an object; absent or ``null`` is the empty object."""
    value = doc.get(name)
    return {} if value is None else obj(value, f"{where}{name}")


__all__ = ["arr", "block", "obj", "objects", "opt_text", "text", "texts"]
