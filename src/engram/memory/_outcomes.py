"""``outcome`` and ``complete``: Beta evidence events and attested graduation.

Spec: engram.ote.v1 & MCP contract (Part V, Plate 03, §3.2) engram_outcome and engram_complete, §3.1
``[epistemology]`` and ``[attestation]``. M4 evidence is scoped to the seat whose id equals the ring
id (§3.1, "Ring ids cns init writes"). sealed_* / human_* events need an OpenSSH attestation
verified against the trust anchor and are refused on the ``mcp`` channel. Decisions:
``docs/spec/memory-epistemology.md``.
"""

from __future__ import annotations

from typing import Any, Literal

from engram.core.clock import format_instant_precise
from engram.errors import (
    ConflictError,
    Forbidden,
    InvalidRequest,
    ResourceNotFound,
    SignatureInvalid,
)
from engram.memory import _repo
from engram.memory._attestation import (
    Anchor,
    attestation_message,
    verify_attestation,
)
from engram.memory._engine import MemoryEngine, hidden_from
from engram.memory._epistemology import (
    ATTESTED_ORACLES,
    BLOCKED,
    MCP_REFUSAL,
    Evidence,
    deltas,
    judge,
    reverify_tag,
    signal_named,
)
from engram.memory._models import (
    CompleteResult,
    Memory,
    MemoryStatus,
    OutcomeEvent,
    OutcomeResult,
    Verdict,
)
from engram.memory._owner import owner_of
from engram.store import Tx

Channel = Literal["cli", "mcp", "api"]


def _mounted(engine: MemoryEngine, memory: Memory) -> None:
    if hidden_from(engine, memory):
        raise ResourceNotFound(f"no memory {memory.id!r}")
    if engine.spec.mount_for(memory.ring_id) is None:
        raise Forbidden(
            f"memory {memory.id} is in ring {memory.ring_id}, which "
            f"{engine.spec.seat.seat_id} does not mount"
        )
    if (
        memory.ring == "M4"
        and memory.ring_id != engine.spec.seat.seat_id
        and owner_of(memory.ring_id) is None  # a subject's ring: its owner's evidence counts
    ):
        raise Forbidden(
            f"M4 evidence is scoped to {memory.ring_id}; "
            f"{engine.spec.seat.seat_id} cannot record outcomes there"
        )


def _result(e: OutcomeEvent, memory: Memory, duplicate: bool) -> OutcomeResult:
    return OutcomeResult(
        memory_id=e.memory_id,
        decision_id=e.decision_id,
        signal=e.signal,
        oracle=e.oracle,
        delta_alpha=e.delta_alpha,
        delta_beta=e.delta_beta,
        alpha=memory.alpha,
        beta=memory.beta,
        attested=e.attested,
        principal=e.principal,
        reverify=e.reverify,
        duplicate=duplicate,
    )


def outcome(
    engine: MemoryEngine,
    memory_id: str,
    signal: str,
    decision_id: str,
    *,
    weight: float | None = None,
    attestation: str | None = None,
    principal: str | None = None,
    channel: Channel = "api",
) -> OutcomeResult:
    """Apply one evidence event to a memory's Beta posterior; a repeated decision_id is one event.

    ``attestation`` is an armored ``ssh-keygen -Y sign`` signature over
    :func:`~engram.memory.internals.attestation_message` (required for sealed_* / human_* signals,
    which the ``mcp`` channel refuses outright).
    """
    sig = signal_named(signal)
    if sig.attested and channel == "mcp":
        # Before anything is looked up: the refusal never depends on the memory id.
        raise Forbidden(MCP_REFUSAL.format(signal=signal))
    if not isinstance(decision_id, str) or not 1 <= len(decision_id) <= 200:
        raise InvalidRequest("decision_id: expected a string of 1 to 200 characters")
    d_alpha, d_beta = deltas(sig, weight)
    with engine.store.read() as tx:
        memory = _repo.get_memory(tx, memory_id)
    if memory is None:
        raise ResourceNotFound(f"no memory {memory_id!r}")
    _mounted(engine, memory)
    attestor = None
    if sig.attested:
        if attestation is None:
            raise Forbidden(
                f"{signal} needs an attestation: an OpenSSH signature checked "
                "against [attestation].allowed_signers"
            )
        anchor = engine.anchor()
        if anchor is None:
            raise Forbidden(
                f"{signal} cannot be verified: this seat has no attestation anchor "
                "(graduation: blocked (no attested evidence))"
            )
        message = attestation_message(memory_id, decision_id, signal, d_alpha or d_beta)
        attestor = verify_attestation(anchor, message, attestation, engine.clock.now(), principal)
    elif attestation is not None:
        raise InvalidRequest(f"{signal} is not an attested signal; drop --attestation")
    now = engine.now()
    with engine.store.transaction() as tx:
        # Lock the memory's row first: two writers with one decision_id (threads, processes,
        # PostgreSQL's READ COMMITTED) then queue here and the second finds the first's event.
        _repo.lock_memory(tx, memory_id)
        existing = _repo.event(tx, memory_id, decision_id)
        if existing is not None:
            same = (
                existing.signal == signal
                and existing.delta_alpha == d_alpha
                and existing.delta_beta == d_beta
            )
            if not same:
                raise ConflictError(
                    f"decision_id {decision_id!r} already recorded {existing.signal} on {memory_id}"
                )
            current = _repo.get_memory(tx, memory_id)
            assert current is not None
            return _result(existing, current, duplicate=True)
        reverify = False
        if signal == "rubric_accept" and engine.spec.attestation is not None:
            first_try = not any(e.oracle == "rubric" for e in _repo.events_for(tx, memory_id))
            reverify = first_try and reverify_tag(
                memory_id, decision_id, engine.spec.attestation.reverify_fraction
            )
        event = OutcomeEvent(
            memory_id=memory_id,
            decision_id=decision_id,
            seat_id=engine.spec.seat.seat_id,
            signal=signal,
            oracle=sig.oracle,
            delta_alpha=d_alpha,
            delta_beta=d_beta,
            attested=sig.attested,
            verified=attestor is not None,
            principal=attestor.principal if attestor else None,
            key_fingerprint=attestor.fingerprint if attestor else None,
            signature=attestation if attestor else None,
            reverify=reverify,
            origin="local",
            created_at=now,
        )
        _repo.add_event(tx, event, memory.ring_id, now)
        updated = _repo.get_memory(tx, memory_id)
    assert updated is not None
    return _result(event, updated, duplicate=False)


def _evidence(tx: Tx, memory: Memory, anchor: Anchor | None, now: Any, write: bool) -> Evidence:
    """The memory's evidence; unverified attested events (imports) are checked against anchor
    (and marked verified when ``write``)."""
    alpha = beta = 1.0
    strong_a = strong_b = 0.0
    verifications = 0
    for e in _repo.events_for(tx, memory.id):
        if memory.ring == "M4" and e.seat_id != memory.ring_id and owner_of(memory.ring_id) is None:
            continue  # M4 evidence counts only from the seat that owns the ring
        da, db = e.delta_alpha, e.delta_beta
        alpha, beta = alpha + da, beta + db
        if e.oracle not in ATTESTED_ORACLES:
            continue
        verified = e.verified
        if not verified and anchor is not None and e.signature:
            try:
                attestor = verify_attestation(
                    anchor,
                    attestation_message(memory.id, e.decision_id, e.signal, da or db),
                    e.signature,
                    now,
                )
            except SignatureInvalid:
                continue  # an unverifiable import simply stays unverified
            if write:
                _repo.mark_verified(
                    tx, memory.id, e.decision_id, attestor.principal, attestor.fingerprint
                )
            verified = True
        if verified:
            strong_a, strong_b = strong_a + da, strong_b + db
            verifications += 1 if da > 0 else 0
    return Evidence(alpha, beta, strong_a, strong_b, verifications)


def complete(
    engine: MemoryEngine,
    memory_id: str | None = None,
    *,
    apply: bool = True,
    graduated_only: bool = False,
) -> CompleteResult:
    """Apply the graduation rule to one memory or every memory in the mounted rings.

    With ``apply`` false nothing is written and the preview runs in a read transaction, so it
    never holds the write lock; ``graduated_only`` limits it to graduated memories (what
    ``status`` needs for grandfathered_until_apply).
    """
    anchor = engine.anchor()
    now_dt = engine.clock.now()
    now = format_instant_precise(now_dt)
    verdicts: list[Verdict] = []
    with engine.store.transaction() if apply else engine.store.read() as tx:
        if memory_id is not None:
            one = _repo.get_memory(tx, memory_id)
            if one is None or hidden_from(engine, one):
                raise ResourceNotFound(f"no memory {memory_id!r}")
            if engine.spec.mount_for(one.ring_id) is None:
                raise Forbidden(
                    f"memory {one.id} is in ring {one.ring_id}, which "
                    f"{engine.spec.seat.seat_id} does not mount"
                )
            memories = [one]
        elif graduated_only:
            memories = _repo.graduated_in_rings(tx, engine.spec.ring_ids)
        else:
            memories = _repo.memories_in_rings(tx, engine.spec.ring_ids)
        for memory in memories:
            ev = _evidence(tx, memory, anchor, now_dt, apply)
            j = judge(ev, memory.status, engine.spec.epistemology, anchor is not None)
            if apply and j.status != memory.status:
                graduated_at = now if j.status == MemoryStatus.GRADUATED else None
                _repo.set_status(tx, memory, j.status, graduated_at, now)
            verdicts.append(
                Verdict(
                    memory.id,
                    memory.status,
                    j.status,
                    j.full_lcb,
                    j.full_samples,
                    j.strong_lcb,
                    j.strong_samples,
                    j.nominated,
                    j.reason,
                )
            )
    return CompleteResult("open" if anchor is not None else BLOCKED, apply, tuple(verdicts))


__all__ = ["MCP_REFUSAL", "Channel", "complete", "outcome"]
