"""Closed structured conditions: checked when linted, evaluated as data, never as code.

Spec: lboel/acx@85f1358 SPEC.md §14.3 ("Edges carry an optional closed condition:
``{var,op,value}`` | ``{all}`` | ``{any}`` | ``{not}`` | ``{racAvailable}`` | ``{always:true}``. A
condition MUST contain exactly one of these shapes. Hosts MUST NOT accept or evaluate expression
strings"; "A cyclic graph MUST declare a positive ``limits.maxSteps``. Hosts MUST stop before
executing a step beyond this bound"); docs/spec/acx-workflows.md §"Conditions" has our decisions
where SPEC.md is silent:

- the first dotted segment of ``var`` names a declared variable; a scalar-typed variable has no
  members; ``racAvailable`` names a declared RAC item;
- ``lt``/``gt``/``le``/``ge`` compare number with number or string with string (code-point
  order), anything else is false; ``in`` needs an array ``value``; ``eq``/``ne`` are JSON
  equality (``1`` equals ``1.0``, ``true`` does not equal ``1``); when the variable is a typed
  scalar, ``value`` must be of that type;
- a path that does not resolve makes every comparison false, ``ne`` included;
- an exclusive gateway takes its first true branch in document order, an inclusive one every
  true branch, a parallel one every branch.

The evaluator and :class:`StepBudget` are the host-side half: engram's own commands never run a
workflow, but a host embedding engram gets the closed semantics and the step bound from here.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from typing import Any

from engram.core.canonical import Json, JsonObject, canonicalize
from engram.errors import InputError
from engram.workflow._issues import Accepted, Issue, member_path

RULE_CLOSED = "engram.workflow.conditions-closed"
RULE_REFERENCES = "engram.workflow.condition-references"
RULE_TYPES = "engram.workflow.condition-types"

_SHAPES = ("always", "var", "all", "any", "not", "racAvailable")
_ORDERING = frozenset({"lt", "gt", "le", "ge"})
_SCALAR_TYPES = {"string": (str,), "number": (int, float), "integer": (int,), "boolean": (bool,)}


class ConditionError(InputError):
    """A condition is not one of the closed shapes (an expression string, say)."""

    code = "invalid_condition"


class StepLimitReached(InputError):
    """A host asked for a step beyond ``limits.maxSteps``."""

    code = "step_limit"


def condition_issues(
    condition: Json,
    path: str,
    *,
    variables: Mapping[str, str],
    rac_ids: Collection[str],
) -> Iterator[Issue]:
    """What is wrong with one edge condition (the schema has already checked its shape)."""
    if not isinstance(condition, dict) or len(set(condition) & set(_SHAPES)) != 1:
        yield Issue(RULE_CLOSED, path, "a condition is exactly one closed shape, never a string")
        return
    if "all" in condition or "any" in condition:
        key = "all" if "all" in condition else "any"
        parts = condition[key]
        for index, part in enumerate(parts if isinstance(parts, list) else [parts]):
            yield from condition_issues(
                part, member_path(path, key, index), variables=variables, rac_ids=rac_ids
            )
    elif "not" in condition:
        yield from condition_issues(
            condition["not"], member_path(path, "not"), variables=variables, rac_ids=rac_ids
        )
    elif "racAvailable" in condition:
        if condition["racAvailable"] not in rac_ids:
            yield Issue(
                RULE_REFERENCES,
                member_path(path, "racAvailable"),
                f"racAvailable names no declared RAC item: {condition['racAvailable']!r}",
            )
    elif "var" in condition:
        yield from _comparison_issues(condition, path, variables)


def _comparison_issues(
    condition: Accepted, path: str, variables: Mapping[str, str]
) -> Iterator[Issue]:
    name, _, rest = str(condition["var"]).partition(".")
    where = member_path(path, "var")
    if name not in variables:
        yield Issue(RULE_REFERENCES, where, f"var {condition['var']!r} names no declared variable")
        return
    declared = variables[name]
    op, value = condition["op"], condition["value"]
    if rest and declared in _SCALAR_TYPES:
        yield Issue(RULE_TYPES, where, f"variable {name!r} is a {declared}: it has no members")
        return
    if op == "in":
        if not isinstance(value, list):
            yield Issue(RULE_TYPES, member_path(path, "value"), "op 'in' needs an array value")
        return
    if op in _ORDERING and not (_is_number(value) or isinstance(value, str)):
        yield Issue(RULE_TYPES, member_path(path, "value"), f"op {op!r} needs a number or string")
        return
    if not rest and declared in _SCALAR_TYPES and not _has_type(value, declared):
        yield Issue(
            RULE_TYPES,
            member_path(path, "value"),
            f"variable {name!r} is a {declared}; {value!r} can never compare with it",
        )


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _has_type(value: object, declared: str) -> bool:
    if declared == "boolean":
        return isinstance(value, bool)
    if declared == "integer":
        return _is_number(value) and float(value).is_integer()  # type: ignore[arg-type]
    return isinstance(value, _SCALAR_TYPES[declared]) and not isinstance(value, bool)


def _parts(condition: JsonObject, key: str) -> list[Json]:
    parts = condition[key]
    if not isinstance(parts, list):
        raise ConditionError(f"{key} is a list of conditions")
    return parts


def evaluate_condition(
    condition: Json | None,
    variables: Mapping[str, Json],
    rac_available: Collection[str] = (),
) -> bool:
    """The truth of a closed condition; no condition is true. Anything else is refused."""
    if condition is None:
        return True
    if not isinstance(condition, dict) or len(set(condition) & set(_SHAPES)) != 1:
        raise ConditionError("a condition is one closed shape; expression strings are refused")
    if "always" in condition:
        return condition["always"] is True
    if "all" in condition:
        return all(
            evaluate_condition(c, variables, rac_available) for c in _parts(condition, "all")
        )
    if "any" in condition:
        return any(
            evaluate_condition(c, variables, rac_available) for c in _parts(condition, "any")
        )
    if "not" in condition:
        return not evaluate_condition(condition["not"], variables, rac_available)
    if "racAvailable" in condition:
        return condition["racAvailable"] in rac_available
    return _compare(condition, variables)


_MISSING = object()


def _compare(condition: Mapping[str, Json], variables: Mapping[str, Json]) -> bool:
    actual: object = variables
    for part in str(condition["var"]).split("."):
        actual = actual.get(part, _MISSING) if isinstance(actual, Mapping) else _MISSING
        if actual is _MISSING:
            return False
    op, value = condition.get("op"), condition.get("value")
    if op == "eq":
        return _same(actual, value)
    if op == "ne":
        return not _same(actual, value)
    if op == "in":
        return isinstance(value, list) and any(_same(actual, v) for v in value)
    if op in _ORDERING:
        comparable = (_is_number(actual) and _is_number(value)) or (
            isinstance(actual, str) and isinstance(value, str)
        )
        if not comparable:
            return False
        # Any: both are numbers or both strings (checked just above), a pairing mypy cannot
        # express on the two variables, so the comparison is typed loosely here only.
        a: Any = actual
        b: Any = value
        outcome: bool = {"lt": a < b, "gt": a > b, "le": a <= b, "ge": a >= b}[str(op)]
        return outcome
    raise ConditionError(f"unknown comparison op {op!r}")


def _same(a: object, b: object) -> bool:
    if _is_number(a) and _is_number(b):
        return float(a) == float(b)  # type: ignore[arg-type]
    try:
        return canonicalize(a) == canonicalize(b)
    except InputError:
        return False


def next_nodes(
    workflow: Accepted,
    node_id: str,
    variables: Mapping[str, Json],
    rac_available: Collection[str] = (),
) -> list[str]:
    """The nodes a host moves to after ``node_id`` (a linted workflow; docstring above)."""
    nodes = {n["id"]: n for n in workflow["nodes"]}
    node = nodes[node_id]
    edges = [e for e in workflow.get("edges", []) if e["from"] == node_id]
    if node["type"] == "gateway" and node["gateway"] == "parallel":
        return [e["to"] for e in edges]
    taken = [e["to"] for e in edges if evaluate_condition(e.get("when"), variables, rac_available)]
    if node["type"] == "gateway" and node["gateway"] == "exclusive":
        return taken[:1]
    return taken


class StepBudget:
    """Counts executed steps and refuses the one beyond ``limits.maxSteps`` before it runs."""

    def __init__(self, workflow: Accepted) -> None:
        limits = workflow.get("limits") or {}
        self.max_steps: int | None = limits.get("maxSteps")
        self.taken = 0

    def take(self) -> int:
        """Account for one more step, or raise :class:`StepLimitReached` without taking it."""
        if self.max_steps is not None and self.taken >= self.max_steps:
            raise StepLimitReached(f"limits.maxSteps is {self.max_steps}: no step beyond it runs")
        self.taken += 1
        return self.taken


__all__ = [
    "ConditionError",
    "StepBudget",
    "StepLimitReached",
    "condition_issues",
    "evaluate_condition",
    "next_nodes",
]
