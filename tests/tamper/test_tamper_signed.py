"""The tamper suite for the context protocol's signed artifacts (issue 15, "Tests"): thousands
of mutations of a real export, diff and certification bundle, with the rule "accepted => the
meaning is identical". Bounded for CI (a few seconds each); ``python -m bench tamper`` is the
long mode.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from json_tamper import TamperReport, mutations, run_tamper
from tamper_artifacts import Accept, Artifacts, make_artifacts

EXPORT_MUTATIONS = 1500
DIFF_MUTATIONS = 1500
BUNDLE_MUTATIONS = 800
TIME_BUDGET = 10.0  # seconds per artifact, a safety stop on a loaded machine


@pytest.fixture(scope="module")
def artifacts() -> Artifacts:
    return make_artifacts()


def _judged(
    name: str,
    original: bytes,
    accept: Accept,
    seed: int,
    count: int,
    record: Callable[[str, object], None],
) -> TamperReport:
    report = run_tamper(
        name, original, accept, mutations(original, seed=seed, count=count), time_budget=TIME_BUDGET
    )
    summary = report.summary()
    print(summary)  # with -s; also kept in the JUnit XML as a property
    record("tamper", summary)
    report.assert_sound()
    return report


@pytest.mark.req("engram.runtime.tamper-export")
def test_a_tampered_export_is_refused_unless_it_means_the_same(
    artifacts: Artifacts, record_property: Callable[[str, object], None]
) -> None:
    report = _judged(
        "export", artifacts.export, artifacts.accept_export, 12, EXPORT_MUTATIONS, record_property
    )
    assert report.tried >= 200
    assert report.refused > report.tried // 2
    assert report.accepted_same > 0  # reorderings, whitespace, escapes, re-spelled numbers


@pytest.mark.req("engram.runtime.tamper-diff")
def test_a_tampered_diff_is_refused_unless_it_means_the_same(
    artifacts: Artifacts, record_property: Callable[[str, object], None]
) -> None:
    report = _judged(
        "diff", artifacts.diff, artifacts.accept_diff, 15, DIFF_MUTATIONS, record_property
    )
    assert report.tried >= 200
    assert report.accepted_same > 0


@pytest.mark.req(
    "engram.conformance.bundle.tamper-detected", "engram.conformance.bundle.members-covered"
)
def test_a_hand_edited_bundle_never_certifies_unless_only_an_unsigned_member_changed(
    artifacts: Artifacts, record_property: Callable[[str, object], None]
) -> None:
    report = _judged(
        "bundle", artifacts.bundle, artifacts.accept_bundle, 7, BUNDLE_MUTATIONS, record_property
    )
    # Bundles accepted with an edit in host.name, host.version or discovery.url: verify showed
    # the edited value as unsigned (accept_bundle's meaning includes that check).
    record_property("unsigned_edits", len(artifacts.unsigned_edits))
    assert report.tried >= 100
    assert report.accepted_same > 0
