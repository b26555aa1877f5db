"""Issuance: a level only after an independent, held-out re-execution (SPEC §10.2, §10.3).

:func:`prove_level` is the whole protocol as one domain call; its inputs are plain values (the
ROM ``manifest_hash``, the publisher id and keys, a benchmark, a solver, the verifier's key),
so reading them from an ``.acx`` file is the caller's single step. In order:

1. refuse self-issuance: the verifier key is one of the publisher's keys, or the verifier's
   did:web is in the publisher's namespace (§10.1, §10.3);
2. refuse a resubmission inside the cooldown for this ROM digest and benchmark (§10.3);
3. draw the held-out subset keyed by the ROM digest and run the solver on each task;
4. sign each trajectory as DSSE/in-toto evidence (§10.2 step 2);
5. rate with TrueSkill; issue only when σ < σ_max and games ≥ N_min and acxLevel ≥ 1 (the
   published schema's minimum); R = μ − 3σ gives the level and tier (§10.2 steps 3-4);
6. log the attempt, issued or not, in the ledger; on issue, take a status-list index and sign.

A level played by :class:`ReferenceSolver` (the built-in simulated solver: nothing from the
cartridge runs) is issued only as a demo, and the signed credential says so
(``acx:simulatedSolver``; docs/spec/acx-levels.md §3).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from engram.core.canonical import JsonObject
from engram.core.clock import format_instant
from engram.core.keys import PrivateKey
from engram.level._benchmark import Benchmark
from engram.level._credential import level_credential
from engram.level._defaults import DEFAULT_COOLDOWN, DEFAULT_DRAW, MIN_ENTRIES
from engram.level._errors import LevelRefused
from engram.level._evidence import Evidence, sign_trajectory
from engram.level._ledger import Ledger
from engram.level._proof import add_proof
from engram.level._rating import Game, Gate, Rating, career_tier, level_for, rate
from engram.level._solver import ReferenceSolver, Solver
from engram.level._trust import self_issued

ROM_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
PUBLISHER_ID = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)+$")


@dataclass(frozen=True)
class Verifier:
    """The independent verifier: its did:web, signing key and verification method."""

    did: str
    key: PrivateKey = field(repr=False)
    name: str = "ACX level verifier"
    key_fragment: str = "key-1"

    @property
    def verification_method(self) -> str:
        return f"{self.did}#{self.key_fragment}"


@dataclass(frozen=True)
class Issuance:
    issued: bool
    rating: Rating
    level: int
    tier: str
    failures: tuple[str, ...]
    evidence: tuple[Evidence, ...]
    credential: JsonObject | None
    simulated: bool = False
    """Played by the built-in simulated solver: a demo level, which the credential says."""


def prove_level(
    *,
    rom_digest: str,
    publisher_id: str,
    subject_id: str,
    publisher_keyids: Collection[str],
    benchmark: Benchmark,
    solver: Solver,
    verifier: Verifier,
    ledger: Ledger,
    now: datetime,
    status_list_url: str,
    status_list_length: int = MIN_ENTRIES,
    draw_count: int = DEFAULT_DRAW,
    gate: Gate = Gate(),  # noqa: B008 - a frozen value
    cooldown: timedelta = DEFAULT_COOLDOWN,
    evidence_base: str | None = None,
) -> Issuance:
    """Run the issuance protocol (module docstring); refusals raise :class:`LevelRefused`."""
    if not ROM_DIGEST.match(rom_digest):
        raise LevelRefused(f"ROM digest {rom_digest!r} is not sha256:<64 hex>")
    if not PUBLISHER_ID.match(publisher_id):
        raise LevelRefused(f"publisher id {publisher_id!r} is not a reverse-DNS label")
    reasons = self_issued(
        issuer_id=verifier.did,
        subject_id=subject_id,
        issuer_key=verifier.key.public_key(),
        publisher_id=publisher_id,
        publisher_keyids=publisher_keyids,
    )
    if reasons:
        raise LevelRefused("; ".join(reasons))
    ledger.check_cooldown(rom_digest, benchmark.coordinate, now, cooldown)
    simulated = isinstance(solver, ReferenceSolver)
    tasks = benchmark.draw(rom_digest, draw_count)
    evidence = []
    for task in tasks:
        attempt = solver.solve(rom_digest, task)
        evidence.append(
            sign_trajectory(
                attempt,
                benchmark=benchmark,
                rom_digest=rom_digest,
                solver=solver.name,
                key=verifier.key,
            )
        )
    rating = rate(_games(evidence))
    level = level_for(rating.conservative)
    tier = career_tier(level)
    failures = gate.failures(rating.sigma, rating.games)
    if not failures and level < 1:
        failures.append(f"acxLevel {level} < 1 (R={rating.conservative:.2f})")
    if failures:
        ledger.record(
            rom_digest=rom_digest,
            benchmark=benchmark.coordinate,
            at=now,
            issued=False,
            reason="gating failed: " + "; ".join(failures),
            mu=rating.mu,
            sigma=rating.sigma,
            games=rating.games,
            level=level,
        )
        return Issuance(
            False, rating, level, tier, tuple(failures), tuple(evidence), None, simulated
        )
    credential_id = f"urn:uuid:{uuid.uuid4()}"
    index = ledger.allocate_status_index(status_list_url, status_list_length, credential_id)
    created = format_instant(now)
    unsigned = level_credential(
        credential_id=credential_id,
        issuer_id=verifier.did,
        issuer_name=verifier.name,
        subject_id=subject_id,
        valid_from=created,
        benchmark=benchmark,
        rating=rating,
        level=level,
        tier=tier,
        rom_digest=rom_digest,
        evidence=[e.entry(evidence_base, benchmark) for e in evidence],
        status_list_url=status_list_url,
        status_index=index,
        simulated=simulated,
    )
    credential = add_proof(
        unsigned, verifier.key, verification_method=verifier.verification_method, created=created
    )
    ledger.record(
        rom_digest=rom_digest,
        benchmark=benchmark.coordinate,
        at=now,
        issued=True,
        reason="issued (demo: simulated solver)" if simulated else "issued",
        mu=rating.mu,
        sigma=rating.sigma,
        games=rating.games,
        level=level,
        credential_id=credential_id,
    )
    return Issuance(True, rating, level, tier, (), tuple(evidence), credential, simulated)


def _games(evidence: list[Evidence]) -> list[Game]:
    return [Game(e.difficulty, e.passed) for e in evidence]


__all__ = ["DEFAULT_COOLDOWN", "DEFAULT_DRAW", "Issuance", "Verifier", "prove_level"]
