"""Importing memory from a cartridge: verify, apply the trust decision, partition, merge.

Spec: acx-cartridge-conformance §12 items 8 and 10 (§7.3 merge, "never re-project foreign
field-learned memory"); docs/spec/acx.md §6.4. :func:`plan_import` is the store-independent
half of ``engram cartridge import``: it decides which ROM records a store should receive. The
caller writes them through the memory engine in one transaction, so an import is all or nothing.

- The cartridge must verify to an accepted state (``tampered`` never is).
- Field-learned records are quarantined in the cartridge; one whose ``codebaseFingerprint`` is
  not the importer's own codebase is foreign and is never projected into the store.
- The rest merge idempotently: skipped when the store already knows the ``id``, then when it
  knows the ``artifactFingerprint``. Importing the same cartridge twice adds nothing the second
  time. Vectors in the cartridge are never read: the store re-indexes text with its own engine.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from engram.cartridge._activation import DEFAULT_ACCEPT, require_state
from engram.cartridge._container import Cartridge
from engram.cartridge._records import FIELD_LEARNED, merge_records
from engram.cartridge._trust import TrustRegistry, TrustState
from engram.cartridge._verify import TrustReport, verify_rom
from engram.core.canonical import JsonValue


@dataclass(frozen=True)
class ImportPlan:
    report: TrustReport
    records: tuple[dict[str, Any], ...]
    """Records to project into the store, in id order."""
    duplicate_id: tuple[str, ...]
    duplicate_fingerprint: tuple[str, ...]
    quarantined: tuple[str, ...]
    """Foreign field-learned record ids that were not projected."""

    def to_json(self) -> dict[str, JsonValue]:
        return {
            "trust": self.report.to_json(),
            "imported": len(self.records),
            "duplicateId": len(self.duplicate_id),
            "duplicateFingerprint": len(self.duplicate_fingerprint),
            "quarantined": len(self.quarantined),
        }


def plan_import(
    cartridge: Cartridge,
    *,
    existing: Iterable[Mapping[str, Any]],
    codebase_fingerprint: str | None = None,
    registry: TrustRegistry | None = None,
    own_keyids: frozenset[str] = frozenset(),
    accept: Collection[TrustState] = DEFAULT_ACCEPT,
) -> ImportPlan:
    """Which of ``cartridge``'s records a store holding ``existing`` should receive.

    ``existing`` yields the store's records as ``{"id", "artifactFingerprint"}`` mappings.
    """
    report, rom = verify_rom(cartridge, registry=registry, own_keyids=own_keyids)
    require_state(report, accept)
    projectable: list[dict[str, Any]] = []
    quarantined: list[str] = []
    for record in rom.records:
        foreign = record["codebaseFingerprint"] != codebase_fingerprint
        if record["tier"] == FIELD_LEARNED and (codebase_fingerprint is None or foreign):
            quarantined.append(record["id"])
        else:
            projectable.append(record)
    merged = merge_records(existing, projectable)
    return ImportPlan(
        report=report,
        records=tuple(merged.added),
        duplicate_id=tuple(merged.duplicate_id),
        duplicate_fingerprint=tuple(merged.duplicate_fingerprint),
        quarantined=tuple(quarantined),
    )


__all__ = ["ImportPlan", "plan_import"]
