"""Beta-posterior epistemology: signals, oracles, capped deltas, credible bounds, graduation.

Spec: engram.ote.v1 & MCP contract (Part V, Plate 03, §3.2) engram_outcome ("conjugate Beta(α, β)
likelihood deltas (Δα, Δβ ≤ 0.30 cap for model-judged signals; uncapped for structural gate
signals). Every event records its oracle, derived from the signal") and engram_complete (graduation
needs both the full posterior and B_strong - attested sealed_test / human evidence only, prior
Beta(1, 1) - at or above graduation_lcb_threshold with graduation_min_samples). Pure functions, no
I/O. Decisions (signal names, default weights, the lower bound, nomination):
``docs/spec/memory-epistemology.md``.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

from engram.errors import InvalidRequest
from engram.memory._manifest import Epistemology
from engram.memory._models import MemoryStatus

MODEL_CAP = 0.30
PRIOR = 1.0  # Beta(1, 1) for the full posterior and for B_strong
ATTESTED_ORACLES = frozenset({"sealed_test", "human"})
BLOCKED = "blocked (no attested evidence)"


@dataclass(frozen=True)
class Signal:
    name: str
    oracle: str  # structural | lint | rubric | model | sealed_test | human
    positive: bool
    capped: bool  # model-judged: |Δ| <= MODEL_CAP
    default_weight: float

    @property
    def attested(self) -> bool:
        return self.oracle in ATTESTED_ORACLES


def _signals() -> dict[str, Signal]:
    table: list[tuple[str, str, bool, bool, float]] = []
    for gate in ("tests", "build", "typecheck"):
        table += [
            (f"{gate}_pass", "structural", True, False, 1.0),
            (f"{gate}_fail", "structural", False, False, 1.0),
        ]
    table += [("lint_pass", "lint", True, False, 1.0), ("lint_fail", "lint", False, False, 1.0)]
    table += [
        ("rubric_accept", "rubric", True, True, MODEL_CAP),
        ("rubric_reject", "rubric", False, True, MODEL_CAP),
        ("model_accept", "model", True, True, MODEL_CAP),
        ("model_reject", "model", False, True, MODEL_CAP),
    ]
    table += [
        ("sealed_test_pass", "sealed_test", True, False, 1.0),
        ("sealed_test_fail", "sealed_test", False, False, 1.0),
        ("human_accept", "human", True, False, 1.0),
        ("human_reject", "human", False, False, 1.0),
    ]
    return {name: Signal(name, oracle, pos, cap, w) for name, oracle, pos, cap, w in table}


SIGNALS: dict[str, Signal] = _signals()
MCP_REFUSAL = (
    "{signal} outcomes are refused over MCP: sealed_* and human_* evidence is recorded only by "
    "`engram outcome --attestation <ssh-signature>` against the seat's trust anchor"
)
"""The refusal of an attested signal on the mcp channel (here, beside the signals, so the MCP
server can state it without importing the engine)."""


def signal_named(name: str) -> Signal:
    try:
        return SIGNALS[name]
    except KeyError:
        raise InvalidRequest(
            f"signal: expected one of {', '.join(sorted(SIGNALS))}, got {name!r}"
        ) from None


def deltas(signal: Signal, weight: float | None) -> tuple[float, float]:
    """(Δα, Δβ) for one event; model-judged weights are capped at 0.30, gate weights are not."""
    w = signal.default_weight if weight is None else weight
    if isinstance(w, bool) or not isinstance(w, int | float) or not math.isfinite(w) or w <= 0:
        raise InvalidRequest(f"weight: expected a positive finite number, got {weight!r}")
    if w > 1000:
        raise InvalidRequest(f"weight: expected at most 1000, got {weight!r}")
    if signal.capped:
        w = min(float(w), MODEL_CAP)
    return (float(w), 0.0) if signal.positive else (0.0, float(w))


def signal_weight(name: str, weight: float | None) -> float:
    """The Δ an event of this signal applies (what an attestation signs as ``weight``)."""
    d_alpha, d_beta = deltas(signal_named(name), weight)
    return d_alpha or d_beta


def lower_bound(alpha: float, beta: float, z: float) -> float:
    """Lower credible bound of Beta(α, β): mean - z·sd (normal approximation), clipped to [0, 1]."""
    total = alpha + beta
    mean = alpha / total
    sd = math.sqrt(alpha * beta / (total * total * (total + 1.0)))
    return min(1.0, max(0.0, mean - z * sd))


def reverify_tag(memory_id: str, decision_id: str, fraction: float) -> bool:
    """Deterministically tag ``fraction`` of first-try rubric accepts for a sealed re-run."""
    if fraction <= 0:
        return False
    digest = hashlib.sha256(f"{memory_id}\n{decision_id}".encode()).digest()
    return int.from_bytes(digest[:4], "big") < fraction * 2**32


@dataclass(frozen=True)
class Evidence:
    """What the rule looks at: the full posterior and the verified attested part of it."""

    alpha: float
    beta: float
    strong_alpha: float  # Σ Δα of verified sealed_test / human events
    strong_beta: float
    verifications: int  # verified attested events that passed


@dataclass(frozen=True)
class Judgement:
    status: MemoryStatus
    reason: str
    nominated: bool
    full_lcb: float
    full_samples: float
    strong_lcb: float
    strong_samples: float


def judge(ev: Evidence, status: MemoryStatus, epi: Epistemology, anchored: bool) -> Judgement:
    """Apply the graduation rule to one memory whose current status is ``status``."""
    full_samples = ev.alpha + ev.beta - 2 * PRIOR
    full_lcb = lower_bound(ev.alpha, ev.beta, epi.credible_z)
    sa, sb = PRIOR + ev.strong_alpha, PRIOR + ev.strong_beta
    strong_samples = ev.strong_alpha + ev.strong_beta
    strong_lcb = lower_bound(sa, sb, epi.credible_z)
    full_ok = (
        full_lcb >= epi.graduation_lcb_threshold and full_samples >= epi.graduation_min_samples
    )
    strong_ok = (
        strong_lcb >= epi.graduation_lcb_threshold and strong_samples >= epi.graduation_min_samples
    )
    nominated = (
        full_lcb >= epi.nomination_lcb_threshold
        and ev.verifications >= epi.nomination_min_verifications
    )

    def verdict(new: MemoryStatus, reason: str) -> Judgement:
        return Judgement(
            new,
            reason,
            nominated and new == "graduated",
            full_lcb,
            full_samples,
            strong_lcb,
            strong_samples,
        )

    graduated, candidate = MemoryStatus.GRADUATED, MemoryStatus.CANDIDATE
    if not anchored:
        if status == graduated:
            if full_ok:
                return verdict(graduated, "held on the full posterior (no attested evidence)")
            return verdict(candidate, "full posterior fell below the threshold")
        return verdict(status, BLOCKED)
    if full_ok and strong_ok:
        return verdict(graduated, "full posterior and B_strong meet the threshold")
    if status == MemoryStatus.HELD_IMPORT:
        return verdict(
            MemoryStatus.HELD_IMPORT,
            "imported graduation held: attested evidence not verified here"
            if not strong_ok
            else "imported graduation held: full posterior below the threshold",
        )
    if not strong_ok:
        return verdict(
            candidate,
            "B_strong (attested sealed_test/human evidence) below the threshold or sample minimum",
        )
    return verdict(candidate, "full posterior below the threshold or sample minimum")


__all__ = [
    "ATTESTED_ORACLES",
    "BLOCKED",
    "MCP_REFUSAL",
    "MODEL_CAP",
    "SIGNALS",
    "Evidence",
    "Judgement",
    "Signal",
    "deltas",
    "judge",
    "lower_bound",
    "reverify_tag",
    "signal_named",
    "signal_weight",
]
