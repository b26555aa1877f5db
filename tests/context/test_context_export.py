"""The unsigned export and the injection text: fixture shape, determinism, size budget."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from engram.context import Issuer, add_belief, build_export, create_subject
from engram.context.internals import render_injection, resolve_scope
from engram.core.clock import FixedClock
from engram.errors import ExpiryTooLong
from engram.store import Store

REPO = Path(__file__).resolve().parents[2]
ISSUER = Issuer("Test Provider", "https://example.com")


@pytest.mark.req("engram.provider.injection-format")
def test_an_empty_subject_renders_exactly_the_fixture_injection(any_store: Store) -> None:
    clock = FixedClock()
    subject = create_subject(any_store, clock, "Test User", "UTC")

    export = build_export(
        any_store,
        subject.id,
        resolve_scope("full"),
        ISSUER,
        clock.now(),
        clock.now() + timedelta(hours=12),
        "test-key-001",
    )

    assert export["system_prompt_injection"] == "User: Test User (UTC)."
    assert export["issued_at"] == "2026-01-01T10:00:00Z"
    assert export["expires_at"] == "2026-01-01T22:00:00Z"
    assert export["beliefs"] == []
    assert export["corrections"] == []
    assert export["evolution"] == []
    with pytest.raises(ExpiryTooLong):
        build_export(
            any_store,
            subject.id,
            resolve_scope("full"),
            ISSUER,
            clock.now(),
            clock.now() + timedelta(hours=24, seconds=1),
            "k",
        )


@pytest.mark.req("engram.provider.injection-format")
def test_the_injection_lists_beliefs_by_confidence_in_the_documented_format(
    any_store: Store,
) -> None:
    clock = FixedClock()
    subject = create_subject(any_store, clock, "Ada", "Europe/London")
    add_belief(any_store, clock, subject.id, "goal", "Run a marathon.", 0.4)
    add_belief(any_store, clock, subject.id, "professional", "Writes Python.", 0.9)
    full = resolve_scope("full")
    window = (clock.now(), clock.now() + timedelta(hours=1))

    text = build_export(any_store, subject.id, full, ISSUER, *window, "k")[
        "system_prompt_injection"
    ]
    again = build_export(any_store, subject.id, full, ISSUER, *window, "k")

    assert text == (
        "User: Ada (Europe/London).\n"
        "Known about the user (scope full):\n"
        "- [professional] Writes Python. (confidence 0.90)\n"
        "- [goal] Run a marathon. (confidence 0.40)"
    )
    assert again["system_prompt_injection"] == text


@pytest.mark.req("engram.provider.injection-format")
@pytest.mark.parametrize("budget", [600, 1000, 4000])
def test_the_injection_never_exceeds_its_budget_and_counts_what_it_left_out(
    any_store: Store, budget: int
) -> None:
    clock = FixedClock()
    subject = create_subject(any_store, clock, "Ada", "UTC")
    beliefs = [
        add_belief(any_store, clock, subject.id, "general", f"Fact number {i}: " + "x" * 150)
        for i in range(60)
    ]

    text = render_injection("Ada", "UTC", "full", beliefs, budget)

    assert len(text) <= budget
    kept = text.count("\n- [general]") + text.startswith("- [")
    assert text.endswith(f"({60 - kept} more beliefs omitted to fit the size budget.)")


@pytest.mark.req("engram.provider.retention-documented")
def test_retention_is_documented() -> None:
    model = (REPO / "docs/spec/context-model.md").read_text(encoding="utf-8")
    retention = model.split("## Retention", 1)[1]

    for subject in ("Tombstones", "Idempotency-Key", "24 hours", "erases the subject", "log"):
        assert subject in retention
