"""The tamper suite for the context protocol's signed artifacts (issue 15, "Tests"): thousands
of mutations of a real export, diff and certification bundle, with the rule "accepted => the
meaning is identical". Bounded for CI (a few seconds each); ``python -m bench tamper`` is the
long mode.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from json_tamper import mutations, run_tamper
from tamper_artifacts import Artifacts, make_artifacts

EXPORT_MUTATIONS = 1500
DIFF_MUTATIONS = 1500
BUNDLE_MUTATIONS = 800
TIME_BUDGET = 10.0  # seconds per artifact, a safety stop on a loaded machine


@pytest.fixture(scope="module")
def artifacts() -> Artifacts:
    return make_artifacts()


def _show(summary: str, record: Callable[[str, object], None]) -> None:
    print(summary)  # with -s; also kept in the JUnit XML as a property
    record("tamper", summary)


@pytest.mark.req("engram.runtime.tamper-export")
def test_a_tampered_export_is_refused_unless_it_means_the_same(
    artifacts: Artifacts, record_property: Callable[[str, object], None]
) -> None:
    report = run_tamper(
        "export",
        artifacts.export,
        artifacts.accept_export,
        mutations(artifacts.export, seed=12, count=EXPORT_MUTATIONS),
        time_budget=TIME_BUDGET,
    )
    _show(report.summary(), record_property)
    report.assert_sound()
    assert report.tried >= 200
    assert report.refused > report.tried // 2
    assert report.accepted_same > 0  # reorderings, whitespace, escapes, re-spelled numbers


@pytest.mark.req("engram.runtime.tamper-diff")
def test_a_tampered_diff_is_refused_unless_it_means_the_same(
    artifacts: Artifacts, record_property: Callable[[str, object], None]
) -> None:
    report = run_tamper(
        "diff",
        artifacts.diff,
        artifacts.accept_diff,
        mutations(artifacts.diff, seed=15, count=DIFF_MUTATIONS),
        time_budget=TIME_BUDGET,
    )
    _show(report.summary(), record_property)
    report.assert_sound()
    assert report.tried >= 200
    assert report.accepted_same > 0


@pytest.mark.req(
    "engram.conformance.bundle.tamper-detected", "engram.conformance.bundle.members-covered"
)
def test_a_hand_edited_bundle_never_certifies_unless_only_an_unsigned_member_changed(
    artifacts: Artifacts, record_property: Callable[[str, object], None]
) -> None:
    report = run_tamper(
        "bundle",
        artifacts.bundle,
        artifacts.accept_bundle,
        mutations(artifacts.bundle, seed=7, count=BUNDLE_MUTATIONS),
        time_budget=TIME_BUDGET,
    )
    edits = len(artifacts.unsigned_edits)
    _show(
        report.summary() + f"; accepted edits in unsigned members (shown): {edits}",
        record_property,
    )
    report.assert_sound()
    assert report.tried >= 100
    assert report.accepted_same > 0
