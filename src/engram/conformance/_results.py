"""Dispositions, per-requirement rows and tier badges of one conformance run.

Spec: OpenWOP v2 Conformance §"Requirement ids" (a soft-skip records ``skipped``, never ``pass``;
the reason is a fact about the host; a suite-side failure is ``blocked``) and §"Certification"
(a requirement the run did not observe records ``blocked``); Engram v0.1 Conformance §"Conformance
Tiers" and §"Claiming a Tier Badge" for the badges.

Several probes may assert the same requirement. A row's result is the worst of its legs, in the
order blocked > executed-fail > skipped > executed-pass: one failing leg fails the requirement and
one leg that could not run keeps it from counting as a pass.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from engram.conformance import _wire
from engram.conformance._ledger import Requirement
from engram.core.canonical import JsonObject
from engram.errors import InvalidRequest

Result = Literal["executed-pass", "executed-fail", "skipped", "blocked"]
RESULTS: tuple[Result, ...] = ("executed-pass", "executed-fail", "skipped", "blocked")
_SEVERITY: dict[Result, int] = {
    "executed-pass": 0,
    "skipped": 1,
    "executed-fail": 2,
    "blocked": 3,
}
BADGES: dict[int, str] = {1: "Reader", 2: "Writer", 3: "Full"}
TOTAL_KEYS: dict[Result, str] = {
    "executed-pass": "executedPass",
    "executed-fail": "executedFail",
    "skipped": "skipped",
    "blocked": "blocked",
}


@dataclass(frozen=True)
class Row:
    """One requirement's outcome: the bundle's ``results.requirements[]`` entry."""

    id: str
    scenario: str
    result: Result
    assertions: int
    detail: str | None = None

    def to_wire(self) -> JsonObject:
        """``id``, ``scenario``, ``result`` and, only when present, ``assertions``, ``detail``."""
        wire: JsonObject = {"id": self.id, "scenario": self.scenario, "result": self.result}
        if self.assertions:
            wire["assertions"] = self.assertions
        if self.detail is not None:
            wire["detail"] = self.detail
        return wire

    @classmethod
    def from_wire(cls, wire: JsonObject) -> Row:
        """A bundle's row (schema-checked by the verifier); a wrong shape raises InvalidRequest."""
        rid = _wire.text(wire.get("id"), "results.requirements[].id")
        where = f"results.requirements[] {rid}"
        result = wire.get("result")
        if result not in RESULTS:
            raise InvalidRequest(f"{where}: result {result!r} is not one of {', '.join(RESULTS)}")
        return cls(
            id=rid,
            scenario=_wire.text(wire.get("scenario"), f"{where}: scenario"),
            result=next(r for r in RESULTS if r == result),
            assertions=_wire.integer(wire.get("assertions", 0), f"{where}: assertions"),
            detail=_wire.opt_text(wire.get("detail"), f"{where}: detail"),
        )


@dataclass
class _Legs:
    scenario: str
    result: Result = "executed-pass"
    assertions: int = 0
    details: list[str] = field(default_factory=list)


class Recorder:
    """Collects assertion legs per requirement id while probes run."""

    def __init__(self) -> None:
        self._legs: dict[str, _Legs] = {}

    def record(self, rid: str, scenario: str, result: Result, detail: str | None = None) -> None:
        legs = self._legs.setdefault(rid, _Legs(scenario=scenario))
        if legs.assertions == 0 or _SEVERITY[result] > _SEVERITY[legs.result]:
            legs.result = result
            legs.scenario = scenario
        legs.assertions += 1
        if detail and result != "executed-pass":
            legs.details.append(detail)

    def check(self, rid: str, scenario: str, ok: bool, failure: str) -> bool:
        """Record a pass when ``ok``, else a failure with ``failure`` as the detail."""
        self.record(rid, scenario, "executed-pass" if ok else "executed-fail", failure)
        return ok

    def skip(self, rid: str, scenario: str, reason: str) -> None:
        self.record(rid, scenario, "skipped", reason)

    def block(self, rid: str, scenario: str, reason: str) -> None:
        self.record(rid, scenario, "blocked", reason)

    def rows(self, requirements: Iterable[Requirement]) -> list[Row]:
        """One row per requirement; a requirement no probe observed is ``blocked``."""
        rows: list[Row] = []
        for req in requirements:
            legs = self._legs.get(req.id)
            if legs is None:
                rows.append(Row(req.id, "none", "blocked", 0, "not observed by any probe"))
                continue
            # A passing row counts its assertions; a skipped leg never contributes a pass.
            detail = "; ".join(dict.fromkeys(legs.details)) or None
            rows.append(Row(req.id, legs.scenario, legs.result, legs.assertions, detail))
        return rows


def totals(rows: Iterable[Row]) -> dict[str, int]:
    counts = dict.fromkeys(TOTAL_KEYS.values(), 0)
    for row in rows:
        counts[TOTAL_KEYS[row.result]] += 1
    return counts


def assertion_count(rows: Iterable[Row]) -> int:
    return sum(row.assertions for row in rows)


def non_pass(rows: Iterable[Row]) -> list[JsonObject]:
    """``detail.nonPass[]``: every row that is not ``executed-pass``, sorted by id."""
    failing = sorted(
        (r for r in rows if r.result != "executed-pass"), key=lambda r: utf16_key(r.id)
    )
    return [{"id": r.id, "result": r.result, "detail": r.detail or ""} for r in failing]


def utf16_key(text: str) -> bytes:
    """Sort key giving UTF-16 code-unit order (OpenWOP §"Canonical JSON"), not code-point order."""
    return text.encode("utf-16-be")


def tiers_of(requirements: Iterable[Requirement]) -> dict[str, int]:
    """Requirement id -> tier, for the rows that carry a tier."""
    return {r.id: r.tier for r in requirements if r.tier is not None}


def tier_passes(rows: Iterable[Row], tiers: Mapping[str, int], tier: int) -> bool:
    """Every requirement of tier <= ``tier`` is present and ``executed-pass`` (skipped is not)."""
    by_id = {row.id: row for row in rows}
    wanted = [rid for rid, t in tiers.items() if t <= tier]
    return bool(wanted) and all(
        rid in by_id and by_id[rid].result == "executed-pass" for rid in wanted
    )


def badge(rows: Iterable[Row], tiers: Mapping[str, int]) -> str:
    """The highest tier whose requirements all pass: Reader, Writer, Full, or ``none``."""
    rows = list(rows)
    earned = "none"
    for tier in (1, 2, 3):
        if not tier_passes(rows, tiers, tier):
            break
        earned = BADGES[tier]
    return earned


def certifies(rows: Iterable[Row], tiers: Mapping[str, int], claimed: int) -> bool:
    """Certification rules: no blocked row at all, and every row up to the claimed tier passes."""
    rows = list(rows)
    return not any(r.result == "blocked" for r in rows) and tier_passes(rows, tiers, claimed)


__all__ = [
    "BADGES",
    "RESULTS",
    "TOTAL_KEYS",
    "Recorder",
    "Result",
    "Row",
    "assertion_count",
    "badge",
    "certifies",
    "non_pass",
    "tier_passes",
    "tiers_of",
    "totals",
    "utf16_key",
]
