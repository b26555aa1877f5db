"""The loop policy evaluated as data: ``decide(policy, limits, state, event) -> Decision``.

SPEC §9.1 (lboel/acx@85f1358): hosts "MUST evaluate it as data without recompilation". This is
that evaluation as one pure function: no I/O, no clock, no randomness, nothing read from
``hints`` (§9.5: a host must run a conformant loop with every hint ignored), so the same four
inputs always give the same decision and a test can drive a whole run. What it covers:

- turns: every :class:`TurnEnded` counts one turn; reaching ``loop.maxTurns`` (a hard ceiling,
  §9.2) ends the run through the ``max_turns`` stop condition;
- the cycle: :class:`PhaseDone` moves to the next phase of ``loop.cycle``; ``verify`` ends with a
  :class:`VerificationResult`;
- verification attempts: a failed check goes back to ``act`` until ``verification.maxAttempts``
  is used up, then ``blockOnFailure`` (default true) raises ``blocked``;
- stop conditions (§9.2): ``completed``, ``pr_ready``, ``blocked`` and ``guardrail_stop`` (from a
  guardrail signal of kind ``blocked`` / ``stop``), ``max_turns``, ``budget_exhausted`` (token
  spend against the effective ceilings, host first), ``needs_input``; each maps to the policy's
  action or, when the policy does not list it, to engram's default (docs/spec/acx-policy.md §4);
- handoff windows: reaching a window listed in ``loop.handoff.returnWindows`` hands off;
- the host's kill switch and command timeouts from the effective limits.

A terminating decision carries exactly one ``OperatorCommandReport`` in the §9.4 shape, and a
finished run accepts no further event, so a run can never emit a second one.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

from engram.core.canonical import Json, JsonObject
from engram.policy._document import LoopContextPolicy
from engram.policy._limits import EffectiveLimits
from engram.policy._lint import Accepted

Condition = Literal[
    "completed",
    "pr_ready",
    "blocked",
    "max_turns",
    "guardrail_stop",
    "budget_exhausted",
    "needs_input",
]
Action = Literal["stop", "handoff", "await_human", "report_continue"]
Outcome = Literal["progressed", "completed", "blocked", "handoff", "needs-input"]
SignalKind = Literal["milestone", "checkpoint", "question", "blocked", "stop"]

DEFAULT_ACTIONS: dict[str, Action] = {
    "completed": "stop",
    "pr_ready": "handoff",
    "blocked": "await_human",
    "max_turns": "stop",
    "guardrail_stop": "stop",
    "budget_exhausted": "stop",
    "needs_input": "await_human",
}
"""What a condition the policy does not list does (engram's choice, docs/spec/acx-policy.md §4)."""

_CEILINGS = (  # only these ceilings force an end even when the action is report_continue
    "max_turns",
    "budget_exhausted",
)
_TROUBLE = frozenset({"blocked", "guardrail_stop", "budget_exhausted"})


@dataclass(frozen=True)
class LoopState:
    """Where a run is. Start with ``LoopState()``; each decision hands back the next one."""

    turn: int = 0
    phase_index: int = 0
    verification_attempts: int = 0
    last_verification: Literal["none", "passed", "failed"] = "none"
    tokens_agent: float = 0
    tokens_project: float = 0
    tokens_global: float = 0
    finished: bool = False
    reports_emitted: int = 0


@dataclass(frozen=True)
class TurnEnded:
    """One agent turn is over; ``tokens`` it spent count against every token ceiling."""

    tokens: float = 0


@dataclass(frozen=True)
class PhaseDone:
    """The current phase (not ``verify``) has finished."""


@dataclass(frozen=True)
class VerificationResult:
    passed: bool


@dataclass(frozen=True)
class GuardrailSignal:
    """A ``MissionGuardrailSignal``; ``stop`` and ``blocked`` fire stop conditions (§9.2)."""

    kind: SignalKind


@dataclass(frozen=True)
class Completed:
    """The task is done."""


@dataclass(frozen=True)
class PrReady:
    """A pull request is ready for review."""


@dataclass(frozen=True)
class NeedsInput:
    """The agent cannot go on without an answer."""


@dataclass(frozen=True)
class ReturnWindowReached:
    window: Literal["phase_exit", "blocker", "pr_ready", "ambiguity", "destructive_change"]


@dataclass(frozen=True)
class CommandRequested:
    """The agent wants to run a command, asking for ``seconds`` (None: the default)."""

    seconds: int | None = None


Event = (
    TurnEnded
    | PhaseDone
    | VerificationResult
    | GuardrailSignal
    | Completed
    | PrReady
    | NeedsInput
    | ReturnWindowReached
    | CommandRequested
)


@dataclass(frozen=True)
class OperatorCommandReport:
    """The terminal outcome, member for member as SPEC §9.4 lists it."""

    outcome: Outcome
    quality: Literal["verified", "unverified", "failed-verification"]
    confidence: Literal["high", "medium", "low"]
    next_action: str
    user_attention_required: bool
    recommended_follow_up: str | None = None
    artifacts: tuple[str, ...] = ()
    learnings: tuple[str, ...] = ()
    blockers: tuple[str, ...] = ()

    def to_wire(self) -> JsonObject:
        return {
            "type": "OperatorCommandReport",
            "outcome": self.outcome,
            "quality": self.quality,
            "confidence": self.confidence,
            "artifacts": list(self.artifacts),
            "learnings": list(self.learnings),
            "blockers": list(self.blockers),
            "nextAction": self.next_action,
            "recommendedFollowUp": self.recommended_follow_up,
            "userAttentionRequired": self.user_attention_required,
        }


@dataclass(frozen=True)
class Decision:
    """What the host does next.

    ``kind``: ``continue`` (run ``phase``), ``retry`` (verification failed; back to ``phase``),
    ``terminate`` (the run is over; ``report`` is its one OperatorCommandReport),
    ``report_continue`` (emit ``report`` and keep going), or ``refuse`` (the event does not fit
    the state; nothing changes).
    """

    kind: Literal["continue", "retry", "terminate", "report_continue", "refuse"]
    state: LoopState
    reason: str
    phase: str | None = None
    condition: Condition | None = None
    action: Action | None = None
    report: OperatorCommandReport | None = None
    timeout_sec: int | None = None
    notes: tuple[str, ...] = field(default=())


def decide(
    policy: LoopContextPolicy, limits: EffectiveLimits, state: LoopState, event: Event
) -> Decision:
    """The next decision of a run; pure (see the module docstring)."""
    loop: Accepted = policy.get("loop")
    cycle: list[str] = loop["cycle"]
    if state.finished:
        return Decision("refuse", state, "the run has ended: no event is taken after the report")
    if limits.value("killSwitch", "enabled"):
        reason = limits.value("killSwitch", "reason")
        why = reason if isinstance(reason, str) and reason else "the host kill switch is on"
        return _end(state, None, "stop", f"kill switch: {why}", blockers=(why,))
    match event:
        case TurnEnded(tokens=tokens):
            return _turn(loop, limits, state, tokens)
        case PhaseDone():
            if cycle[state.phase_index] == "verify":
                return Decision("refuse", state, "verify ends with a VerificationResult")
            return _advance(cycle, state, "phase done")
        case VerificationResult(passed=passed):
            return _verification(loop, cycle, state, passed)
        case GuardrailSignal(kind="stop"):
            return _condition(loop, state, "guardrail_stop", "guardrail signal: stop")
        case GuardrailSignal(kind="blocked"):
            return _condition(loop, state, "blocked", "guardrail signal: blocked")
        case GuardrailSignal(kind=kind):
            return Decision(
                "continue", state, f"guardrail signal {kind} recorded", _phase(cycle, state)
            )
        case Completed():
            return _condition(loop, state, "completed", "task completed")
        case PrReady():
            return _condition(loop, state, "pr_ready", "pull request ready")
        case NeedsInput():
            return _condition(loop, state, "needs_input", "input needed")
        case ReturnWindowReached(window=window):
            windows = (loop.get("handoff") or {}).get("returnWindows") or []
            if window in windows:
                return _end(state, None, "handoff", f"return window {window}")
            return Decision(
                "continue", state, f"{window} is not a return window", _phase(cycle, state)
            )
        case CommandRequested(seconds=seconds):
            return _command(limits, state, cycle, seconds)
    raise TypeError(f"not a loop event: {event!r}")  # pragma: no cover - closed union


def _phase(cycle: list[str], state: LoopState) -> str:
    return cycle[state.phase_index]


def _advance(cycle: list[str], state: LoopState, reason: str) -> Decision:
    index = (state.phase_index + 1) % len(cycle)
    return Decision("continue", replace(state, phase_index=index), reason, cycle[index])


def _turn(loop: Accepted, limits: EffectiveLimits, state: LoopState, tokens: float) -> Decision:
    state = replace(
        state,
        turn=state.turn + 1,
        tokens_agent=state.tokens_agent + tokens,
        tokens_project=state.tokens_project + tokens,
        tokens_global=state.tokens_global + tokens,
    )
    spent = {
        "dailyPerAgent": state.tokens_agent,
        "dailyPerProject": state.tokens_project,
        "dailyGlobal": state.tokens_global,
    }
    for name, used in spent.items():
        ceiling = limits.leaves[("tokenSpend", name)]
        bound = _number(ceiling.value)
        if bound is not None and used >= bound:
            return _condition(
                loop,
                state,
                "budget_exhausted",
                f"token spend {used:g} reached tokenSpend.{name} {bound:g} ({ceiling.source})",
            )
    if state.turn >= loop["maxTurns"]:
        return _condition(loop, state, "max_turns", f"turn {state.turn} of {loop['maxTurns']}")
    return Decision("continue", state, f"turn {state.turn} ended", _phase(loop["cycle"], state))


def _verification(loop: Accepted, cycle: list[str], state: LoopState, passed: bool) -> Decision:
    if cycle[state.phase_index] != "verify":
        return Decision(
            "refuse", state, f"no verification runs in phase {cycle[state.phase_index]}"
        )
    if passed:
        done = replace(state, verification_attempts=0, last_verification="passed")
        return _advance(cycle, done, "verification passed")
    verification = loop.get("verification") or {}
    attempts = state.verification_attempts + 1
    maximum = verification.get("maxAttempts", 1)
    failed = replace(state, verification_attempts=attempts, last_verification="failed")
    if attempts < maximum:
        back = cycle.index("act") if "act" in cycle else state.phase_index
        return Decision(
            "retry",
            replace(failed, phase_index=back),
            f"verification failed (attempt {attempts} of {maximum})",
            cycle[back],
        )
    if verification.get("blockOnFailure", True):
        return _condition(
            loop, failed, "blocked", f"verification failed {attempts} times (maxAttempts)"
        )
    return _advance(
        cycle, replace(failed, verification_attempts=0), "verification failed; not blocking"
    )


def _command(
    limits: EffectiveLimits, state: LoopState, cycle: list[str], seconds: int | None
) -> Decision:
    ceiling = _seconds(limits.value("timeouts", "maxCommandSec"))
    default = _seconds(limits.value("timeouts", "defaultCommandSec"))
    timeout = seconds if seconds is not None else default
    if ceiling is not None:
        timeout = ceiling if timeout is None else min(timeout, ceiling)
    return Decision(
        "continue",
        state,
        "command timeout from the effective limits",
        _phase(cycle, state),
        timeout_sec=timeout,
    )


def _number(value: Json) -> int | float | None:
    """A numeric limit leaf (load_host_limits and the schema made it a number) or unset."""
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def _seconds(value: Json) -> int | None:
    """A timeout leaf: a whole number of seconds or unset."""
    number = _number(value)
    return None if number is None else int(number)


def _condition(loop: Accepted, state: LoopState, condition: Condition, reason: str) -> Decision:
    listed = {c["when"]: c["action"] for c in loop["stopConditions"]}
    action: Action = listed.get(condition, DEFAULT_ACTIONS[condition])
    note = () if condition in listed else (f"{condition} is not listed: engram default {action}",)
    if action == "report_continue" and condition not in _CEILINGS:
        report = _report(state, condition, action, reason)
        after = replace(state, reports_emitted=state.reports_emitted + 1)
        return Decision(
            "report_continue",
            after,
            reason,
            _phase(loop["cycle"], after),
            condition,
            action,
            report,
            notes=note,
        )
    decision = _end(state, condition, action, reason)
    return replace(decision, notes=note)


def _end(
    state: LoopState,
    condition: Condition | None,
    action: Action,
    reason: str,
    *,
    blockers: tuple[str, ...] = (),
) -> Decision:
    report = _report(state, condition, action, reason, blockers)
    after = replace(state, finished=True, reports_emitted=state.reports_emitted + 1)
    return Decision("terminate", after, reason, None, condition, action, report)


def _report(
    state: LoopState,
    condition: Condition | None,
    action: Action,
    reason: str,
    blockers: tuple[str, ...] = (),
) -> OperatorCommandReport:
    outcome: Outcome
    if action == "handoff":
        outcome = "handoff"
    elif action == "report_continue" or condition == "max_turns":
        outcome = "progressed"
    elif condition in _TROUBLE or (condition is None and blockers):
        outcome = "blocked"
    elif condition == "needs_input" or action == "await_human":
        outcome = "needs-input"
    else:
        outcome = "completed"
    quality = {"none": "unverified", "passed": "verified", "failed": "failed-verification"}[
        state.last_verification
    ]
    confidence = {"verified": "high", "unverified": "medium", "failed-verification": "low"}[quality]
    if outcome == "blocked" and not blockers:
        blockers = (reason,)
    attention = action in ("handoff", "await_human") or outcome in ("blocked", "needs-input")
    next_action = {
        "stop": "none: the run is over",
        "handoff": "hand the work to the operator",
        "await_human": "wait for a human decision",
        "report_continue": "continue the run",
    }[action]
    return OperatorCommandReport(
        outcome=outcome,
        quality=quality,  # type: ignore[arg-type]
        confidence=confidence,  # type: ignore[arg-type]
        next_action=next_action,
        user_attention_required=attention,
        recommended_follow_up=reason if attention else None,
        blockers=blockers,
    )


__all__ = [
    "DEFAULT_ACTIONS",
    "Action",
    "CommandRequested",
    "Completed",
    "Condition",
    "Decision",
    "Event",
    "GuardrailSignal",
    "LoopState",
    "NeedsInput",
    "OperatorCommandReport",
    "Outcome",
    "PhaseDone",
    "PrReady",
    "ReturnWindowReached",
    "TurnEnded",
    "VerificationResult",
    "decide",
]
