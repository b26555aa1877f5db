"""The pure evaluator: (policy, limits, state, event) -> decision (SPEC §9.1-§9.5)."""

from __future__ import annotations

import builtins
import socket
import subprocess
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from policy_kit import docs_v1, edited, reference, to_bytes

from engram.policy import (
    CommandRequested,
    Completed,
    Decision,
    Event,
    GuardrailSignal,
    HostLimits,
    LoopContextPolicy,
    LoopState,
    NeedsInput,
    PhaseDone,
    PrReady,
    ReturnWindowReached,
    TurnEnded,
    decide,
    load_host_limits,
    load_policy,
)
from engram.policy.internals import EffectiveLimits, VerificationResult, effective_limits

# The §9.4 outcome contract written out independently of engram's dataclass.
REPORT_SCHEMA = {
    "type": "object",
    "required": [
        "outcome",
        "quality",
        "confidence",
        "artifacts",
        "learnings",
        "blockers",
        "nextAction",
        "recommendedFollowUp",
        "userAttentionRequired",
    ],
    "properties": {
        "outcome": {"enum": ["progressed", "completed", "blocked", "handoff", "needs-input"]},
        "artifacts": {"type": "array"},
        "learnings": {"type": "array"},
        "blockers": {"type": "array"},
        "userAttentionRequired": {"type": "boolean"},
    },
}


def _policy(document: dict[str, Any] | None = None) -> LoopContextPolicy:
    return load_policy(to_bytes(document if document is not None else reference()))


NO_LIMITS = effective_limits(None, None)


def run(
    policy: LoopContextPolicy, events: Sequence[Event], limits: EffectiveLimits = NO_LIMITS
) -> list[Decision]:
    state = LoopState()
    out = []
    for event in events:
        decision = decide(policy, limits, state, event)
        out.append(decision)
        state = decision.state
    return out


def _reports(decisions: list[Decision]) -> list[dict[str, Any]]:
    return [d.report.to_wire() for d in decisions if d.report is not None]


@pytest.mark.req("engram.policy.max-turns")
def test_turns_are_counted_to_the_hard_ceiling() -> None:
    policy = _policy(edited(reference(), "loop.maxTurns", 3))
    decisions = run(policy, [TurnEnded(), TurnEnded(), TurnEnded(), TurnEnded()])
    assert [d.kind for d in decisions] == ["continue", "continue", "terminate", "refuse"]
    end = decisions[2]
    # the reference says max_turns -> report_continue, but a hard ceiling cannot continue
    assert (end.condition, end.action) == ("max_turns", "report_continue")
    assert end.report is not None
    assert end.report.outcome == "progressed"
    assert len(_reports(decisions)) == 1


@pytest.mark.req("engram.policy.verification-attempts")
def test_a_failed_verification_goes_back_to_act_until_max_attempts_then_blocks() -> None:
    policy = _policy()  # cycle plan, gather_context, act, verify, reflect; maxAttempts 3
    to_verify: list[Event] = [PhaseDone(), PhaseDone(), PhaseDone()]
    decisions = run(policy, [*to_verify, VerificationResult(False)])
    assert decisions[-1].kind == "retry"
    assert decisions[-1].phase == "act"
    failing: list[Event] = [*to_verify]
    for _ in range(3):
        failing += [VerificationResult(False), PhaseDone()]
    decisions = run(policy, failing[:-1])
    last = decisions[-1]
    assert (last.kind, last.condition, last.action) == ("terminate", "blocked", "await_human")
    assert last.report is not None
    assert last.report.outcome == "blocked"
    assert last.report.quality == "failed-verification"


@pytest.mark.req("engram.policy.verification-attempts")
def test_a_passed_verification_moves_on_and_a_misplaced_result_is_refused() -> None:
    policy = _policy()
    decisions = run(policy, [PhaseDone(), PhaseDone(), PhaseDone(), VerificationResult(True)])
    assert decisions[-1].phase == "reflect"
    assert run(policy, [VerificationResult(True)])[0].kind == "refuse"
    assert run(policy, [PhaseDone(), PhaseDone(), PhaseDone(), PhaseDone()])[-1].kind == "refuse"


@pytest.mark.req("engram.policy.stop-conditions")
@pytest.mark.parametrize(
    ("event", "condition", "action", "outcome"),
    [
        (Completed(), "completed", "stop", "completed"),
        (PrReady(), "pr_ready", "handoff", "handoff"),
        (GuardrailSignal("blocked"), "blocked", "await_human", "blocked"),
        (GuardrailSignal("stop"), "guardrail_stop", "await_human", "blocked"),
        (NeedsInput(), "needs_input", "await_human", "needs-input"),
    ],
)
def test_stop_conditions_map_to_the_policys_actions(
    event: Event, condition: str, action: str, outcome: str
) -> None:
    decision = run(_policy(), [event])[0]
    assert (decision.kind, decision.condition, decision.action) == ("terminate", condition, action)
    assert decision.report is not None
    assert decision.report.outcome == outcome
    assert decision.state.finished


@pytest.mark.req("engram.policy.stop-conditions")
def test_milestones_and_questions_do_not_stop_the_loop() -> None:
    for kind in ("milestone", "checkpoint", "question"):
        assert run(_policy(), [GuardrailSignal(kind)])[0].kind == "continue"


@pytest.mark.req("engram.policy.handoff-report")
def test_every_handoff_or_await_human_emits_exactly_one_conforming_report() -> None:
    for events in (
        [PrReady()],
        [GuardrailSignal("blocked")],
        [NeedsInput()],
        [ReturnWindowReached("blocker")],
    ):
        decisions = run(_policy(), [*events, Completed(), PrReady(), TurnEnded()])
        reports = _reports(decisions)
        assert len(reports) == 1
        assert not list(Draft202012Validator(REPORT_SCHEMA).iter_errors(reports[0]))
        assert reports[0]["userAttentionRequired"] is True


@pytest.mark.req("engram.policy.handoff-report")
def test_handoff_windows_hand_off_only_when_listed() -> None:
    decision = run(_policy(), [ReturnWindowReached("destructive_change")])[0]
    assert (decision.kind, decision.action) == ("terminate", "handoff")
    assert run(_policy(), [ReturnWindowReached("ambiguity")])[0].kind == "continue"


@pytest.mark.req("engram.policy.budget-exhausted")
def test_token_spend_against_the_host_ceiling_exhausts_the_budget() -> None:
    policy = _policy(docs_v1())  # budget dailyPerAgent 1,000,000; budget_exhausted -> handoff
    host = load_host_limits(b"tokenSpend: {dailyPerAgent: 1000}\n")
    limits = effective_limits(host, policy.get("budget"))
    decisions = run(policy, [TurnEnded(tokens=600), TurnEnded(tokens=600)], limits)
    assert decisions[0].kind == "continue"
    end = decisions[1]
    assert (end.condition, end.action) == ("budget_exhausted", "handoff")
    assert "host" in end.reason
    # the cartridge's own, higher default would not have stopped it
    assert (
        run(policy, [TurnEnded(600), TurnEnded(600)], effective_limits(None, policy.get("budget")))[
            1
        ].kind
        == "continue"
    )


@pytest.mark.req("engram.policy.host-precedence")
def test_the_host_kill_switch_and_command_ceiling_apply() -> None:
    policy = _policy(docs_v1())
    halted = effective_limits(
        load_host_limits(b"killSwitch: {enabled: true, reason: audit}\n"), policy.get("budget")
    )
    decision = run(policy, [PhaseDone()], halted)[0]
    assert decision.kind == "terminate"
    assert "audit" in decision.reason
    capped = effective_limits(
        load_host_limits(b"timeouts: {maxCommandSec: 60}\n"), policy.get("budget")
    )
    assert run(policy, [CommandRequested(3600)], capped)[0].timeout_sec == 60
    assert run(policy, [CommandRequested()], capped)[0].timeout_sec == 60  # default 900 > 60
    assert run(policy, [CommandRequested(30)], capped)[0].timeout_sec == 30


@pytest.mark.req("engram.policy.stop-conditions")
def test_an_unlisted_condition_takes_engrams_documented_default() -> None:
    decision = run(_policy(), [NeedsInput()])[0]  # the reference lists no needs_input
    assert decision.action == "await_human"
    assert decision.notes
    assert "engram default" in decision.notes[0]


EVENTS = st.lists(
    st.one_of(
        st.builds(TurnEnded, st.integers(0, 500)),
        st.just(PhaseDone()),
        st.builds(VerificationResult, st.booleans()),
        st.builds(
            GuardrailSignal,
            st.sampled_from(["milestone", "checkpoint", "question", "blocked", "stop"]),
        ),
        st.just(Completed()),
        st.just(PrReady()),
        st.just(NeedsInput()),
        st.builds(
            ReturnWindowReached,
            st.sampled_from(
                ["phase_exit", "blocker", "pr_ready", "ambiguity", "destructive_change"]
            ),
        ),
        st.builds(CommandRequested, st.one_of(st.none(), st.integers(1, 10_000))),
    ),
    max_size=40,
)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=10,
)
SAFE_HINT_KEYS = st.text(min_size=1, max_size=10).filter(
    lambda k: (
        k
        not in {
            "outcomeReport",
            "outcome",
            "guardrailContract",
            "stopConditions",
            "handoff",
            "verifyOmitted",
        }
    )
)


@pytest.mark.req("engram.policy.hints-ignorable")
@settings(max_examples=60, deadline=None)
@given(events=EVENTS, hints=st.dictionaries(SAFE_HINT_KEYS, JSON, max_size=4))
def test_decisions_are_the_same_with_every_hint_removed_or_replaced(
    events: list[Event], hints: dict[str, Any]
) -> None:
    limits = effective_limits(HostLimits({("tokenSpend", "dailyGlobal"): 2000}), None)
    with_hints = _policy(edited(reference(), "hints", hints))
    without = reference()
    del without["hints"]
    assert run(with_hints, events, limits) == run(_policy(without), events, limits)


@pytest.fixture
def no_io(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the evaluator did I/O")

    monkeypatch.setattr(builtins, "open", refuse)
    monkeypatch.setattr(socket, "socket", refuse)
    monkeypatch.setattr(subprocess, "Popen", refuse)


@pytest.mark.req("engram.policy.evaluated-as-data")
def test_the_evaluator_is_a_pure_function_of_its_inputs(no_io: None) -> None:
    policy = _policy(docs_v1())
    limits = effective_limits(None, policy.get("budget"))
    events: list[Event] = [
        PhaseDone(),
        PhaseDone(),
        VerificationResult(False),
        PhaseDone(),
        VerificationResult(True),
        TurnEnded(10),
        PrReady(),
    ]
    first, second = run(policy, events, limits), run(policy, events, limits)
    assert first == second
    assert first[-1].action == "handoff"
