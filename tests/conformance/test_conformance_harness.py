"""The runtime harness judges runtimes from its own request logs (Engram v0.1 Conformance runtime
requirements; docs/spec/conformance-bundle.md §"Runtime harness")."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from engram.conformance import Ledger, RuntimeReport, load_ledger, run_runtime

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
ENGRAM_CHAT = [sys.executable, "-c", "from engram.cli import main; main()", "chat"]
BROKEN = [sys.executable, str(HERE / "broken_runtime.py")]


@pytest.fixture(scope="module")
def ledger() -> Ledger:
    return load_ledger()


@pytest.fixture(scope="module")
def chat_report(ledger: Ledger) -> RuntimeReport:
    return run_runtime(ENGRAM_CHAT, ledger, docs=REPO / "README.md")


@pytest.fixture(scope="module")
def broken_report(ledger: Ledger) -> RuntimeReport:
    return run_runtime(BROKEN, ledger)


def _results(report: RuntimeReport) -> dict[str, str]:
    return {row.id: row.result for row in report.rows}


@pytest.mark.req(
    "engram.context.r1.fetch-at-start",
    "engram.context.r1.inject",
    "engram.context.r1.reject-expired",
    "engram.context.r1.docs-link",
    "engram.context.r2.propose-correction",
    "engram.context.r2.correction-not-authoritative",
    "engram.context.r2.incremental-sync",
    "engram.context.r3.fetch-keys",
    "engram.context.r3.select-kid",
    "engram.context.r3.verify-every-export",
    "engram.context.r3.reject-bad-signature",
    "engram.context.r3.scoped-requests",
    "engram.conformance.harness.judged-from-logs",
)
def test_engram_chat_passes_every_runtime_requirement(chat_report: RuntimeReport) -> None:
    failing = {r.id: r.detail for r in chat_report.rows if r.result != "executed-pass"}
    assert not failing
    assert len(chat_report.rows) == 12


@pytest.mark.req("engram.conformance.harness.judged-from-logs")
def test_engram_chat_refuses_to_start_on_a_bad_export(chat_report: RuntimeReport) -> None:
    refused = {run.scenario.name for run in chat_report.runs if run.exit_code not in (0, None)}
    assert {"expired-export", "tampered-signature", "unknown-kid"} <= refused
    valid = next(run for run in chat_report.runs if run.scenario.name == "valid-export")
    assert valid.script.marker in valid.prompts()[0]


@pytest.mark.req(
    "engram.conformance.harness.judged-from-logs",
    "engram.context.r1.reject-expired",
    "engram.context.r3.verify-every-export",
    "engram.context.r3.reject-bad-signature",
)
def test_a_runtime_that_injects_without_verifying_fails_the_expected_requirements(
    broken_report: RuntimeReport,
) -> None:
    results = _results(broken_report)
    failed = {rid for rid, result in results.items() if result == "executed-fail"}
    assert failed == {
        "engram.context.r1.reject-expired",
        "engram.context.r2.propose-correction",
        "engram.context.r2.incremental-sync",
        "engram.context.r3.fetch-keys",
        "engram.context.r3.select-kid",
        "engram.context.r3.verify-every-export",
        "engram.context.r3.reject-bad-signature",
    }
    # What it does do is credited; what could not be observed is skipped, never passed.
    assert results["engram.context.r1.inject"] == "executed-pass"
    assert results["engram.context.r1.fetch-at-start"] == "executed-pass"
    assert results["engram.context.r3.scoped-requests"] == "executed-pass"
    assert results["engram.context.r2.correction-not-authoritative"] == "skipped"
    assert results["engram.context.r1.docs-link"] == "skipped"
