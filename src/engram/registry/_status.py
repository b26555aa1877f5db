"""The lifecycle ledger ``status.json`` (``acx.registry-status/1``), kept apart from the artifacts.

Spec: lboel/acx@85f1358 SPEC.md §17.5 and ``registry-status.schema.json``; docs/spec/acx-registry.md
§5. Each entry is keyed by the complete coordinate and marks it ``deprecated``, ``withdrawn`` or
``superseded`` with a reason (10-1000 characters) and an RFC 3339 recording time; ``superseded``
names a successor coordinate of the same artifact type and another ``(publisher, id, version)``;
an advisory is an absolute HTTPS URL without credentials. Duplicate identities are refused. The
index builder then requires every target and successor to be present in the registry with the
exact digest (:func:`unresolved`). Nothing here touches an artifact: status is advice, not
revocation.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import jsonschema

from engram.core.bounds import check_shape
from engram.core.canonical import Json, JsonObject, parse_strict
from engram.core.clock import parse_instant
from engram.errors import CanonicalJsonError, InvalidRequest
from engram.registry._layout import STATUS_FILE, Coordinate, https_url
from engram.registry._problems import Problem, problem
from engram.workflow.internals import packaged_schema

SCHEMA_VERSION = "acx.registry-status/1"
EPOCH = "1970-01-01T00:00:00.000Z"
RULE = "registry.status-ledger"


def active() -> JsonObject:
    return {
        "status": "active",
        "reason": None,
        "recordedAt": None,
        "successor": None,
        "advisory": None,
    }


def coordinate_of(identity: Mapping[str, Json]) -> Coordinate:
    return Coordinate(
        str(identity.get("artifactType")),
        str(identity.get("publisherId")),
        str(identity.get("id")),
        str(identity.get("version")),
        str(identity.get("digest")),
    )


@dataclass(frozen=True)
class Ledger:
    updated_at: str
    entries: tuple[dict[str, Any], ...]
    problems: tuple[Problem, ...] = field(default=())
    present: bool = True

    def lifecycle(self, coordinate: Coordinate) -> JsonObject:
        """The resolved status of ``coordinate`` for its index entry (active when not listed)."""
        for entry in self.entries:
            if coordinate_of(entry["artifact"]) == coordinate:
                return {
                    "status": entry["status"],
                    "reason": entry["reason"],
                    "recordedAt": entry["recordedAt"],
                    "successor": entry.get("successor"),
                    "advisory": entry.get("advisory"),
                }
        return active()

    def unresolved(self, accepted: Collection[Coordinate]) -> list[Problem]:
        """Entries whose target or successor is not an accepted coordinate with that digest."""
        problems = []
        for index, entry in enumerate(self.entries):
            target = coordinate_of(entry["artifact"])
            if target not in accepted:
                problems.append(
                    problem(
                        STATUS_FILE,
                        RULE,
                        f"entries[{index}] targets {_show(target)}, which "
                        "is not in the registry with that exact digest",
                    )
                )
            successor = entry.get("successor")
            if isinstance(successor, Mapping) and coordinate_of(successor) not in accepted:
                problems.append(
                    problem(
                        STATUS_FILE,
                        RULE,
                        f"entries[{index}].successor "
                        f"{_show(coordinate_of(successor))} is not in the registry with that "
                        "exact digest",
                    )
                )
        return problems


def _show(c: Coordinate) -> str:
    return f"{c.artifact_type} {c.publisher_id}/{c.id}@{c.version} ({c.digest})"


@cache
def _validator() -> jsonschema.Draft202012Validator:
    schema = packaged_schema("engram.registry", "registry-status.schema.json")
    return jsonschema.Draft202012Validator(schema)


def _instant(value: object) -> bool:
    try:
        parse_instant(str(value))
    except InvalidRequest:
        return False
    return isinstance(value, str)


def load_ledger(data: bytes | None) -> Ledger:
    """Parse and validate ``status.json``; an absent file is an empty ledger."""
    if data is None:
        return Ledger(EPOCH, (), present=False)
    try:
        # Any: status.json is read member by member only after its schema holds (below).
        document: Any = parse_strict(data)
    except CanonicalJsonError as e:
        return Ledger(EPOCH, (), (problem(STATUS_FILE, RULE, f"not strict JSON: {e.message}"),))
    check_shape(document, STATUS_FILE)
    problems = [
        problem(
            STATUS_FILE, RULE, f"{'/'.join(str(p) for p in e.absolute_path) or '$'}: {e.message}"
        )
        for e in sorted(
            _validator().iter_errors(document), key=lambda e: list(map(str, e.absolute_path))
        )
    ][:50]
    if problems or not isinstance(document, dict):
        return Ledger(EPOCH, (), tuple(problems) or (problem(STATUS_FILE, RULE, "not an object"),))
    if not _instant(document["updatedAt"]):
        problems.append(problem(STATUS_FILE, RULE, "updatedAt is not an RFC 3339 date-time"))
    seen: set[Coordinate] = set()
    entries: list[dict[str, Any]] = []
    for index, entry in enumerate(document["entries"]):
        where = f"entries[{index}]"
        target = coordinate_of(entry["artifact"])
        if target in seen:
            problems.append(
                problem(STATUS_FILE, RULE, f"{where}.artifact repeats an earlier status identity")
            )
        seen.add(target)
        if len(entry["reason"].strip()) < 10:
            problems.append(
                problem(
                    STATUS_FILE, RULE, f"{where}.reason says too little (10 characters at least)"
                )
            )
        if not _instant(entry["recordedAt"]):
            problems.append(
                problem(STATUS_FILE, RULE, f"{where}.recordedAt is not an RFC 3339 date-time")
            )
        if "advisory" in entry and not https_url(entry["advisory"]):
            problems.append(
                problem(
                    STATUS_FILE,
                    RULE,
                    f"{where}.advisory must be an absolute https URL without credentials",
                )
            )
        successor = entry.get("successor")
        if successor is not None:
            after = coordinate_of(successor)
            if after.artifact_type != target.artifact_type:
                problems.append(
                    problem(STATUS_FILE, RULE, f"{where}.successor is of another artifact type")
                )
            if (after.publisher_id, after.id, after.version) == (
                target.publisher_id,
                target.id,
                target.version,
            ):
                problems.append(
                    problem(STATUS_FILE, RULE, f"{where}.successor must be another coordinate")
                )
        entries.append(entry)
    return Ledger(document["updatedAt"], tuple(entries), tuple(problems))


__all__ = ["EPOCH", "SCHEMA_VERSION", "Ledger", "active", "coordinate_of", "load_ledger"]
