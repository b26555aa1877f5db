"""``SearchOp.filter``: LangGraph's filter language over an item's value.

The semantics of langgraph.store.base (``SearchOp.filter``) as its own stores apply them: a
member is an exact match (nested objects match member by member, arrays element by element) or
an operator object with ``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte``; every member must
hold. Where LangGraph's in-memory store raises on a comparison that cannot be made (``$gt`` on
a missing member or a string that is not a number), this one says the item does not match.

An item's value is JSON (:data:`Json`, as read back from the store); a filter is whatever Python
the caller built (LangGraph types it ``dict[str, Any]``: tuples, numbers, nested dicts), so it
is ``object`` here and every use narrows it.
"""

from __future__ import annotations

from collections.abc import Mapping

from engram.core.bounds import check_shape
from engram.core.canonical import Json
from engram.errors import InvalidRequest

OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")


def _number(value: object) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _operator(value: Json, operator: str, operand: object) -> bool:
    if operator == "$eq":
        return bool(value == operand)
    if operator == "$ne":
        return bool(value != operand)
    if operator not in OPERATORS:
        raise ValueError(f"Unsupported operator: {operator}")
    left, right = _number(value), _number(operand)
    if left is None or right is None:
        return False
    if operator == "$gt":
        return left > right
    if operator == "$gte":
        return left >= right
    if operator == "$lt":
        return left < right
    return left <= right


def _matches(value: Json, wanted: object) -> bool:
    if isinstance(wanted, Mapping):
        if any(str(k).startswith("$") for k in wanted):
            return all(_operator(value, str(k), v) for k, v in wanted.items())
        if not isinstance(value, dict):
            return False
        return all(_matches(value.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, list | tuple):
        return (
            isinstance(value, list | tuple)
            and len(value) == len(wanted)
            and all(_matches(a, b) for a, b in zip(value, wanted, strict=True))
        )
    return bool(value == wanted)


def check_filter(wanted: Mapping[str, object] | None) -> None:
    """Refuse an unknown operator, or a filter over the document limits (docs/spec/limits.md),
    before any item is read; LangGraph raises ValueError for a bad filter, and so does this."""
    try:
        check_shape(wanted or {}, "the filter")
    except InvalidRequest as e:
        raise ValueError(e.message) from e

    def walk(value: object) -> None:
        if isinstance(value, Mapping):
            for k, v in value.items():
                if str(k).startswith("$") and k not in OPERATORS:
                    raise ValueError(f"Unsupported operator: {k}")
                walk(v)
        elif isinstance(value, list | tuple):
            for v in value:
                walk(v)

    walk(wanted or {})


def matches(value: Mapping[str, Json], wanted: Mapping[str, object] | None) -> bool:
    """Whether an item's ``value`` satisfies ``filter`` (None or empty: every item does)."""
    return not wanted or all(_matches(value.get(k), v) for k, v in wanted.items())


__all__ = ["OPERATORS", "check_filter", "matches"]
