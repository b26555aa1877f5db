"""The provider runner against the real provider: clean at Full on every backend, and each
injected fault failing exactly the requirements it breaks (Engram v0.1 Conformance §"Conformance
Tiers"; OpenWOP v2 Conformance §"Requirement ids")."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from conformance_faults import BASE_URL, FAULTS, FaultyProvider

from engram.conformance import Ledger, ProviderReport, ProviderRunOptions, load_ledger
from engram.conformance import run_provider as run
from engram.conformance.internals import Recorder
from engram.context import create_subject, issue_token
from engram.core.clock import FixedClock
from engram.store import Store, open_store

ALL_PROVIDER = "engram.context."


@pytest.fixture(scope="module")
def ledger() -> Ledger:
    return load_ledger()


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock(datetime(2026, 3, 1, 9, 0, tzinfo=UTC))


async def _probe(
    provider: FaultyProvider,
    ledger: Ledger,
    *,
    admin: bool = True,
    delete_hook: tuple[str, ...] | None = None,
) -> ProviderReport:
    admin_token = provider.token if admin else None
    opts = ProviderRunOptions(
        BASE_URL, provider.token, admin_token=admin_token, delete_hook=delete_hook
    )
    return await run(opts, ledger, transport=provider.transport(), clock=provider.clock)


def _failed(report: ProviderReport) -> set[str]:
    return {r.id for r in report.rows if r.result != "executed-pass"}


@pytest.mark.req(
    "engram.context.p1.export-200",
    "engram.context.p1.expires-at-present",
    "engram.context.p1.expires-within-24h",
    "engram.context.p1.version-present",
    "engram.context.p1.identity-fields",
    "engram.context.p1.discovery",
    "engram.context.p1.unauthenticated-401",
    "engram.context.p2.correct-pending",
    "engram.context.p2.correction-not-applied",
    "engram.context.p2.diff-tombstones",
    "engram.context.p2.runtime-id-required",
    "engram.context.p3.keys-endpoint",
    "engram.context.p3.key-fields",
    "engram.context.p3.kid-published",
    "engram.context.p3.signature-verifies",
    "engram.context.p3.scope-professional",
    "engram.context.p3.invalid-scope-400",
    "engram.context.error-shape",
    "engram.context.checklist",
    "engram.conformance.runner.claimed-tier-exit",
)
async def test_the_clean_provider_passes_every_requirement_at_full(
    any_store: Store, clock: FixedClock, ledger: Ledger
) -> None:
    report = await _probe(FaultyProvider(any_store, clock), ledger)
    assert {r.id: r.detail for r in report.rows if r.result != "executed-pass"} == {}
    assert len(report.rows) == len(ledger.select(party="provider")) == 19
    assert report.badge == "Full"
    assert report.claim_holds


@pytest.mark.req(
    "engram.conformance.runner.catches-faults", "engram.conformance.runner.claimed-tier-exit"
)
@pytest.mark.parametrize("fault", sorted(FAULTS))
async def test_each_fault_fails_exactly_its_requirements_and_lowers_the_badge(
    fault: str, memory_store: Store, clock: FixedClock, ledger: Ledger
) -> None:
    report = await _probe(FaultyProvider(memory_store, clock, frozenset({fault})), ledger)
    assert _failed(report) == FAULTS[fault]
    assert all(r.result == "executed-fail" for r in report.rows if r.id in FAULTS[fault])
    assert all(r.detail for r in report.rows if r.id in FAULTS[fault])
    lowest = min(ledger.get(rid).tier or 3 for rid in FAULTS[fault])
    assert report.badge == {1: "none", 2: "Reader", 3: "Writer"}[lowest]
    assert not report.claim_holds


@pytest.mark.req(
    "engram.conformance.runner.skip-never-pass",
    "engram.conformance.runner.skip-reason-host-fact",
)
async def test_without_a_way_to_delete_tombstones_are_skipped_never_passed(
    memory_store: Store, clock: FixedClock, ledger: Ledger
) -> None:
    report = await _probe(FaultyProvider(memory_store, clock), ledger, admin=False)
    rows = {r.id: r for r in report.rows}
    tombstones = rows[ALL_PROVIDER + "p2.diff-tombstones"]
    assert tombstones.result == "skipped"
    assert tombstones.detail is not None
    assert "--admin-token or --delete-hook" in tombstones.detail
    assert report.badge == "Reader"
    assert not report.claim_holds


@pytest.mark.req("engram.conformance.runner.skip-reason-host-fact")
async def test_a_subject_without_sensitive_beliefs_cannot_witness_professional_scope(
    memory_store: Store, clock: FixedClock, ledger: Ledger
) -> None:
    provider = FaultyProvider(memory_store, clock)
    subject = create_subject(memory_store, clock, "Plain User", "UTC")
    token = issue_token(memory_store, clock, subject.id, ["read", "correct"])
    opts = ProviderRunOptions(BASE_URL, token)
    report = await run(opts, ledger, transport=provider.transport(), clock=clock)
    rows = {r.id: r for r in report.rows}
    scope = rows[ALL_PROVIDER + "p3.scope-professional"]
    assert scope.result == "skipped"
    assert scope.detail is not None
    assert "no health or financial beliefs" in scope.detail
    # No beliefs at all: the correction requirements cannot be observed either.
    assert rows[ALL_PROVIDER + "p2.correct-pending"].result == "skipped"


HOOK = """
import sys
from engram.context import delete_belief
from engram.core.clock import SystemClock
from engram.store import open_store
delete_belief(open_store(sys.argv[1]), SystemClock(), sys.argv[2], sys.argv[3])
"""


@pytest.mark.req("engram.context.p2.diff-tombstones")
async def test_a_delete_hook_provokes_the_tombstone(
    tmp_path: Path, clock: FixedClock, ledger: Ledger
) -> None:
    url = f"sqlite:///{tmp_path / 'engram.db'}"
    store = open_store(url)
    provider = FaultyProvider(store, clock)
    hook = (sys.executable, "-c", HOOK, url, provider.demo.subject.id)
    report = await _probe(provider, ledger, admin=False, delete_hook=hook)
    assert {r.id: r.result for r in report.rows}[ALL_PROVIDER + "p2.diff-tombstones"] == (
        "executed-pass"
    )
    assert report.badge == "Full"


@pytest.mark.req("engram.conformance.runner.skip-reason-host-fact")
async def test_a_failing_delete_hook_blocks_rather_than_blames_the_host(
    memory_store: Store, clock: FixedClock, ledger: Ledger
) -> None:
    hook = (sys.executable, "-c", "raise SystemExit(3)")
    report = await _probe(
        FaultyProvider(memory_store, clock), ledger, admin=False, delete_hook=hook
    )
    row = next(r for r in report.rows if r.id == ALL_PROVIDER + "p2.diff-tombstones")
    assert row.result == "blocked"
    assert row.detail == "the delete hook exited with status 3"


@pytest.mark.req("engram.conformance.runner.unobserved-blocked")
def test_a_requirement_no_probe_observed_is_blocked(ledger: Ledger) -> None:
    recorder = Recorder()
    recorder.check("engram.context.p1.export-200", "export", True, "")
    rows = {r.id: r for r in recorder.rows(ledger.select(party="provider", max_tier=1))}
    assert rows["engram.context.p1.export-200"].result == "executed-pass"
    assert rows["engram.context.p1.discovery"].result == "blocked"
    assert rows["engram.context.p1.discovery"].detail == "not observed by any probe"


@pytest.mark.req("engram.conformance.runner.skip-never-pass")
def test_a_skipped_leg_keeps_a_requirement_from_passing() -> None:
    recorder = Recorder()
    rid = "engram.context.p3.scope-professional"
    recorder.check(rid, "scope", True, "")
    recorder.skip(rid, "scope", "the subject holds no health or financial beliefs")
    recorder.check(rid, "scope", True, "")
    (row,) = recorder.rows([load_ledger().get(rid)])
    assert (row.result, row.assertions) == ("skipped", 3)


@pytest.mark.req("engram.conformance.runner.probe-labelled")
async def test_with_an_admin_token_the_probe_corrections_are_rejected_again(
    memory_store: Store, clock: FixedClock, ledger: Ledger
) -> None:
    from engram.context import CorrectionStatus, list_corrections

    provider = FaultyProvider(memory_store, clock)
    report = await _probe(provider, ledger)
    probes = list_corrections(memory_store, provider.demo.subject.id)
    assert probes
    assert all(c.runtime_id == "engram-conformance" for c in probes)
    assert all(c.new_value.startswith("engram conformance probe ecp-") for c in probes)
    assert {c.status for c in probes} == {CorrectionStatus.REJECTED}
    assert not any("stay pending" in note for note in report.notes)
