"""The provider runner: probe a live Engram provider over HTTP and judge each requirement.

Spec: Engram v0.1 Conformance §"Conformance Tiers" (provider rows p1.*, p2.*, p3.*),
§"Self-Certification Checklist" and §"Error Code Reference"; dispositions follow
OpenWOP v2 Conformance §"Requirement ids". The runner witnesses behaviour, not shapes alone: it
posts a correction and reads the next export; it verifies signatures with engram's own
canonicaliser; it deletes a belief (only through the operator's means) and looks for the
tombstone. The probes of each tier are in ``_probe_reader`` (Reader), ``_probe_writer``
(Writer) and ``_probe_full`` (Full); they run in a fixed order over one :class:`ProbeRun`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import httpx

from engram.conformance import _probe_full as full
from engram.conformance import _probe_reader as reader
from engram.conformance import _probe_writer as writer
from engram.conformance._http import Exchange, ProbeClient
from engram.conformance._ledger import Ledger, Requirement
from engram.conformance._probe import (
    PROVIDER_WITNESSED,
    RUNTIME_ID,
    ProbeRun,
    ProviderRunOptions,
)
from engram.conformance._results import Row, badge, tier_passes, tiers_of
from engram.core.canonical import Json
from engram.core.clock import Clock, SystemClock


@dataclass
class ProviderReport:
    """The outcome of one provider run. ``notes`` are facts for the operator that are no
    requirement's disposition (a missing injection, probe corrections left pending)."""

    url: str
    claimed_tier: int
    rows: list[Row]
    badge: str
    discovery: Json
    requirements: tuple[Requirement, ...]
    exchanges: list[Exchange] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def claim_holds(self) -> bool:
        return tier_passes(self.rows, tiers_of(self.requirements), self.claimed_tier)


async def run_provider(
    options: ProviderRunOptions,
    ledger: Ledger,
    *,
    transport: httpx.AsyncBaseTransport | None = None,
    clock: Clock | None = None,
) -> ProviderReport:
    """Probe the provider at ``options.url`` and judge every provider requirement of the ledger.

    ``transport`` lets tests run the probe against an in-process ASGI app; the CLI leaves it unset.
    """
    requirements = ledger.select(party="provider")
    async with httpx.AsyncClient(transport=transport, timeout=options.timeout) as http:
        probe = ProbeClient(http, options.url, deadline=options.deadline)
        run = ProbeRun(probe, options, clock or SystemClock())
        await reader.discovery(run)
        await full.keys(run)
        export = await reader.export(run)
        full.signed(run, export, "export")
        await reader.unauthenticated(run)
        await full.scopes(run)
        await writer.corrections(run)
        await writer.diff(run)
        reader.error_shapes(run)
        reader.checklist(run)
    rows = run.recorder.rows(requirements)
    return ProviderReport(
        url=options.url,
        claimed_tier=options.tier,
        rows=rows,
        badge=badge(rows, tiers_of(requirements)),
        discovery=run.observed.discovery,
        requirements=requirements,
        exchanges=run.client.log,
        notes=run.notes,
    )


__all__ = [
    "PROVIDER_WITNESSED",
    "RUNTIME_ID",
    "ProviderReport",
    "ProviderRunOptions",
    "run_provider",
]
