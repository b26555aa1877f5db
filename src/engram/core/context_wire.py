"""What the Engram v0.1 page leaves open on the wire, written down once for every reader.

The conformance page fixes the export *envelope* (Test Fixtures, "Minimal valid export") but not
the belief object, and it says only that a diff "returns incremental changes with tombstones for
deleted beliefs". Providers written from the same page differ there, so the runtime SDK
(``engram.runtime``) and the conformance runner (``engram.conformance``) must read the same open
parts the same way; neither may import the other, so the one list lives here in ``core``.
docs/spec/runtime.md ("Beliefs", "Diff shapes") is the documented form of these tables.

- A belief is any JSON object. Its id is the first of :data:`ID_MEMBERS` that holds a non-empty
  string (or an integer, read as its decimal text); a belief without one is still a belief, it
  just cannot be the target of a correction. Its categories are the strings in
  :data:`CATEGORY_MEMBERS` and the string arrays in :data:`CATEGORY_LIST_MEMBERS`.
- A diff lists what changed in one or more of three forms (:func:`read_diff`): change lists of
  belief objects (an object carrying ``deleted_at`` or ``deleted: true`` is a deletion),
  tombstone lists of ``{id, deleted_at}`` objects or bare id strings, and operation logs of
  ``{op: upsert|delete, ...}`` entries. Anything else is a shape not understood, never a guess.
- A correction the conformance runner sends is labelled as a probe (:data:`PROBE_RUNTIME_ID`,
  :data:`PROBE_LABEL`) so that a provider's review screen can show it apart from real ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

ID_MEMBERS: tuple[str, ...] = ("id", "belief_id", "beliefId", "uuid", "@id")
"""Where a belief's id may stand, in the order they are tried."""

CATEGORY_MEMBERS: tuple[str, ...] = ("category", "domain")
"""String members naming a belief's category (compared case-insensitively)."""

CATEGORY_LIST_MEMBERS: tuple[str, ...] = ("categories", "tags")
"""Array members whose strings name a belief's categories."""

SENSITIVE_CATEGORIES: frozenset[str] = frozenset({"financial", "health"})
"""Engram v0.1, Tier 3: ``scope=professional`` "excludes health and financial beliefs"."""

CHANGE_MEMBERS: tuple[str, ...] = ("changes", "changed", "updated", "upserts", "beliefs")
"""Diff members listing belief objects as they now are."""

TOMBSTONE_MEMBERS: tuple[str, ...] = ("tombstones", "deleted", "deletions", "removed")
"""Diff members listing deletions: ``{id, deleted_at}`` objects or bare id strings."""

OPERATION_MEMBERS: tuple[str, ...] = ("operations", "ops", "log")
"""Diff members holding an operation log, applied in order."""

OP_NAME_MEMBERS: tuple[str, ...] = ("op", "action", "type")
UPSERT_OPS: frozenset[str] = frozenset(
    {"add", "create", "insert", "put", "replace", "set", "update", "upsert"}
)
DELETE_OPS: frozenset[str] = frozenset({"delete", "remove", "tombstone"})
OP_BELIEF_MEMBERS: tuple[str, ...] = ("belief", "value", "data")
"""Where an upsert operation carries its belief (else the operation object itself, less ``op``)."""

PROBE_RUNTIME_ID = "engram-conformance"
"""The ``runtime_id`` of every correction the conformance runner sends."""

PROBE_LABEL = "engram conformance probe"
"""Opens the ``new_value`` of every probe correction: an automated test, not a real proposal."""


def belief_id(belief: Mapping[str, Any]) -> str | None:
    """The belief's id by the first member of :data:`ID_MEMBERS` that holds one, else None."""
    for name in ID_MEMBERS:
        value = belief.get(name)
        if isinstance(value, str) and value:
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
    return None


def belief_categories(belief: Mapping[str, Any]) -> frozenset[str]:
    """Every category the belief names, lower-cased."""
    found: set[str] = set()
    for name in CATEGORY_MEMBERS:
        value = belief.get(name)
        if isinstance(value, str):
            found.add(value.strip().lower())
    for name in CATEGORY_LIST_MEMBERS:
        value = belief.get(name)
        if isinstance(value, list):
            found.update(v.strip().lower() for v in value if isinstance(v, str))
    return frozenset(found)


def is_sensitive(belief: Mapping[str, Any]) -> bool:
    """Whether the belief names a category that ``scope=professional`` must leave out."""
    return not belief_categories(belief).isdisjoint(SENSITIVE_CATEGORIES)


def is_deletion(entry: Mapping[str, Any]) -> bool:
    """A belief object that marks itself deleted (``deleted: true`` or a ``deleted_at``)."""
    return entry.get("deleted") is True or entry.get("deleted_at") not in (None, False, "")


class DiffShapeError(ValueError):
    """A diff whose form is not one of the documented shapes: it is never applied by guess."""


@dataclass(frozen=True, slots=True)
class DiffStep:
    """One thing a diff says happened: ``upsert`` (``belief`` is its current value) or
    ``delete`` (``belief`` is None)."""

    kind: Literal["upsert", "delete"]
    belief_id: str
    belief: Mapping[str, Any] | None = None


def read_diff(document: Mapping[str, Any]) -> tuple[DiffStep, ...]:
    """The steps of a diff in the order to apply them: change lists, then tombstone lists, then
    operation logs (each in document order). Raises :class:`DiffShapeError` naming the first
    entry that fits no documented form, or when the diff has none of the members at all."""
    present = [
        n for n in (*CHANGE_MEMBERS, *TOMBSTONE_MEMBERS, *OPERATION_MEMBERS) if n in document
    ]
    if not present:
        known = ", ".join((*CHANGE_MEMBERS, *TOMBSTONE_MEMBERS, *OPERATION_MEMBERS))
        raise DiffShapeError(f"the diff has none of the members {known}")
    steps: list[DiffStep] = []
    for name in CHANGE_MEMBERS:
        for index, entry in enumerate(_entries(document, name)):
            steps.append(_change(entry, f"{name}[{index}]"))
    for name in TOMBSTONE_MEMBERS:
        for index, entry in enumerate(_entries(document, name)):
            steps.append(_tombstone(entry, f"{name}[{index}]"))
    for name in OPERATION_MEMBERS:
        for index, entry in enumerate(_entries(document, name)):
            steps.append(_operation(entry, f"{name}[{index}]"))
    return tuple(steps)


def deleted_ids(document: Mapping[str, Any]) -> frozenset[str]:
    """The ids a diff deletes (raises :class:`DiffShapeError` like :func:`read_diff`)."""
    return frozenset(s.belief_id for s in read_diff(document) if s.kind == "delete")


def _entries(document: Mapping[str, Any], name: str) -> list[Any]:
    value = document.get(name)
    if value is None:
        return []
    if not isinstance(value, list):
        raise DiffShapeError(f"the diff member {name} is not an array")
    return value


def _required_id(entry: Mapping[str, Any], where: str) -> str:
    ident = belief_id(entry)
    if ident is None:
        raise DiffShapeError(f"{where} names no belief id (one of {', '.join(ID_MEMBERS)})")
    return ident


def _change(entry: Any, where: str) -> DiffStep:
    if not isinstance(entry, dict):
        raise DiffShapeError(f"{where} is not a belief object")
    ident = _required_id(entry, where)
    if is_deletion(entry):
        return DiffStep("delete", ident)
    return DiffStep("upsert", ident, entry)


def _tombstone(entry: Any, where: str) -> DiffStep:
    if isinstance(entry, str) and entry:
        return DiffStep("delete", entry)
    if isinstance(entry, dict):
        return DiffStep("delete", _required_id(entry, where))
    raise DiffShapeError(f"{where} is neither a belief id string nor an object with an id")


def _operation(entry: Any, where: str) -> DiffStep:
    if not isinstance(entry, dict):
        raise DiffShapeError(f"{where} is not an operation object")
    named_by = next((n for n in OP_NAME_MEMBERS if isinstance(entry.get(n), str)), None)
    name = entry[named_by] if named_by is not None else None
    op = name.strip().lower() if name is not None else None
    inner = next((entry[n] for n in OP_BELIEF_MEMBERS if isinstance(entry.get(n), dict)), None)
    if op in DELETE_OPS:
        ident = belief_id(entry) or (belief_id(inner) if inner is not None else None)
        if ident is None:
            raise DiffShapeError(f"{where} deletes without naming a belief id")
        return DiffStep("delete", ident)
    if op in UPSERT_OPS:
        # Without a nested belief the operation object is the belief, less the member
        # that named the operation (a belief may have a "type" of its own).
        belief = inner if inner is not None else {k: v for k, v in entry.items() if k != named_by}
        return DiffStep("upsert", _required_id(belief, where), belief)
    raise DiffShapeError(f"{where} has operation {name!r}, which is not a documented one")


__all__ = [
    "CATEGORY_LIST_MEMBERS",
    "CATEGORY_MEMBERS",
    "CHANGE_MEMBERS",
    "DELETE_OPS",
    "ID_MEMBERS",
    "OPERATION_MEMBERS",
    "OP_BELIEF_MEMBERS",
    "OP_NAME_MEMBERS",
    "PROBE_LABEL",
    "PROBE_RUNTIME_ID",
    "SENSITIVE_CATEGORIES",
    "TOMBSTONE_MEMBERS",
    "UPSERT_OPS",
    "DiffShapeError",
    "DiffStep",
    "belief_categories",
    "belief_id",
    "deleted_ids",
    "is_deletion",
    "is_sensitive",
    "read_diff",
]
